/* The sandbox's root as one ordered list of steps, made by the outer
 * process once everything is checked: the mounts and directories of the
 * sandbox's own (/, /proc with its hidepid choice, /dev and its nodes,
 * /tmp), the binds of host paths (--tmp-in-workspace's first, then argv
 * order), the resolver of a transparent broker, the deny-write binds, the
 * command's HOME and the final read-only remounts. pid 1 executes exactly
 * this list (root.c) and --dry-run prints exactly this list (plan.c):
 * nothing of the root is made that the plan does not show. Pure: it reads
 * the run and allocates, nothing else. */
#include "ns.h"

#include "die.h"
#include "exitcodes.h"
#include "grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

static struct ns_step *push(struct ns_plan *p, enum step_kind kind, const char *dest)
{
	struct ns_step *s;

	if (sbx_grow((void **)&p->steps, &p->capsteps, p->nsteps, sizeof *p->steps, 32) < 0)
		sbx_need(NULL);
	s = &p->steps[p->nsteps++];
	memset(s, 0, sizeof *s);
	s->kind = kind;
	s->dest = dest;
	return s;
}

static void dir(struct ns_plan *p, const char *dest, mode_t mode, const char *what)
{
	struct ns_step *s = push(p, STEP_DIR, dest);

	s->mode = mode;
	s->what = what;
}

static void fs(struct ns_plan *p, enum step_kind kind, const char *dest, unsigned long flags,
	       const char *data, int own)
{
	struct ns_step *s = push(p, kind, dest);

	s->flags = flags;
	s->data[0] = data;
	s->ndata = 1;
	s->own = own;
}

static void node(struct ns_plan *p, enum step_kind kind, const char *src, const char *dest)
{
	struct ns_step *s = push(p, kind, dest);

	s->src = src;
	if (kind == STEP_DEVICE)
		s->flags = MS_BIND;
}

void ns_plan_root(const struct ns_args *a, struct ns_plan *p)
{
	static const char *const nodes[][2] = {
		{ "/dev/null", "/dev/null" }, { "/dev/zero", "/dev/zero" }, { "/dev/full", "/dev/full" },
		{ "/dev/random", "/dev/random" }, { "/dev/urandom", "/dev/urandom" }, { "/dev/tty", "/dev/tty" },
	};
	static const char *const links[][2] = {
		{ "pts/ptmx", "/dev/ptmx" }, { "/proc/self/fd", "/dev/fd" },
		{ "/proc/self/fd/0", "/dev/stdin" }, { "/proc/self/fd/1", "/dev/stdout" },
		{ "/proc/self/fd/2", "/dev/stderr" },
	};
	struct ns_step *s;

	p->nsteps = 0;
	/* A tmpfs made the root by pivot_root at the end. */
	fs(p, STEP_ROOT, "/", MS_NOSUID | MS_NODEV, "mode=0755", 1);
	dir(p, "/proc", 0555, "the directories of the new root");
	dir(p, "/dev", 0755, "the directories of the new root");
	dir(p, "/tmp", 01777, "the directories of the new root");
	/* A fresh proc that hides other users' processes where the kernel
	 * can (the first option it takes), else a plain one. */
	s = push(p, STEP_PROC, "/proc");
	s->flags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
	s->data[0] = "hidepid=invisible";
	s->data[1] = "hidepid=2";
	s->data[2] = NULL;
	s->ndata = 3;
	fs(p, STEP_TMPFS, "/dev", MS_NOSUID | MS_NOEXEC, "mode=0755", 1);
	for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++)
		node(p, STEP_DEVICE, nodes[i][0], nodes[i][1]);
	dir(p, "/dev/pts", 0755, "/dev/pts and /dev/shm");
	dir(p, "/dev/shm", 01777, "/dev/pts and /dev/shm");
	fs(p, STEP_DEVPTS, "/dev/pts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620", 0);
	for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
		node(p, STEP_LINK, links[i][0], links[i][1]);
	if (!a->tmp_in_ws) {
		fs(p, STEP_TMPFS, "/dev/shm", MS_NOSUID | MS_NODEV, "mode=1777", 0);
		fs(p, STEP_TMPFS, "/tmp", MS_NOSUID | MS_NODEV, "mode=1777", 1);
	}
	/* /tmp and /dev/shm from the workspace first (--tmp-in-workspace),
	 * then the binds in argv order. */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < p->nops; i++)
			if ((p->ops[i].kind == MNT_SCRATCH) == (pass == 0)) {
				s = push(p, STEP_BIND, p->ops[i].dest);
				s->idx = i;
			}
	if (p->transparent) {
		/* or where /etc/resolv.conf links to, taken lexically */
		s = push(p, STEP_RESOLV, "/etc/resolv.conf");
		s->flags = MS_RDONLY | MS_NOSUID | MS_NODEV;
	}
	/* Deny-write, in path order (ancestors before what lies below). */
	for (size_t i = 0; i < p->ndops; i++) {
		const char *rel = p->dops[i].rel;
		char *dest = sbx_needf("%s%s%s", p->ops[p->ws].dest, strcmp(rel, ".") ? "/" : "",
				       strcmp(rel, ".") ? rel : "");

		s = push(p, STEP_DENY, dest);
		s->idx = i;
		if (p->dops[i].kind == DENY_PROTECT)
			s->flags = MS_RDONLY | MS_NOSUID | MS_NODEV;
	}
	if (!a->home) {
		s = push(p, STEP_HOME, NS_HOME);
		s->mode = 0700;
	}
	/* Nothing more is created: /dev and the root itself read-only. */
	s = push(p, STEP_READONLY, "/dev");
	s->flags = MS_RDONLY;
	s = push(p, STEP_READONLY, "/");
	s->flags = MS_RDONLY;
}

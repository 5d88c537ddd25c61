/* The program of a plan (a grant binds it; --dry-run shows it), from the
 * lookup to the exec:
 *
 *   found and read as the command will find and read it: argv[0] searched
 *     with the command's PATH from its directory, in the sandbox's view
 *     (view.c: a living sandbox's own root, or the root a one-shot plan
 *     will build), by a child of the outer that has taken the command's
 *     identity (uid, gid, no supplementary groups, no capability), so no
 *     name the sandbox controls is ever followed on the host and nothing
 *     is read that the command could not read; a program the sandbox
 *     cannot see is not found, as at exec;
 *   hashed (SHA-256) and its identity kept (device, inode, size, times),
 *     and whether it is still: owned by root and writable by no one else;
 *   in the command's process, before it starts: the name looked up in the
 *     sandbox must lead to that same file, and exactly the opened file is
 *     executed (execveat), never the name again. A file that is not still
 *     is held first (a read lease: refused while anyone has it open for
 *     writing, and no writer can open it until the exec, which then keeps
 *     writers out itself), then hashed again, so that a rewrite within
 *     one tick of the file's clock, which leaves its times as they were,
 *     cannot run in place of what was granted. */
#include "ns.h"

#include "die.h"
#include "digest.h"
#include "exec.h"
#include "exitcodes.h"
#include "fd.h"
#include "json.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif

static int same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* The file as hashed: any change of it after the hash shows here (but
 * one within a tick of the file's clock: see hold). */
static int same_file(const struct ns_program *g, const struct stat *st)
{
	return st->st_dev == g->dev && st->st_ino == g->ino && st->st_size == g->size &&
	       same_time(&st->st_mtim, &g->mtime) && same_time(&st->st_ctim, &g->ctime);
}

/* What the lookup child answers, in one piece. */
struct found {
	int code;                 /* 0, or the exit code with why */
	int found;
	struct ns_program g;      /* without path */
	char path[PATH_MAX];      /* the name exec will take, inside */
	char why[PATH_MAX + 160];
};

#define FAIL(code_, ...) do { f->code = (code_); snprintf(f->why, sizeof f->why, __VA_ARGS__); } while (0)

static void lookup(struct found *f, const struct ns_view *v, const char *name, const char *search, const char *cwd)
{
	struct stat st, at, after;
	char self[64];
	int fd, rfd;

	fd = ns_view_find(v, name, search, cwd, f->path, sizeof f->path);
	if (fd < 0) {
		if (errno == EXDEV)
			FAIL(SBX_EXIT_POLICY, "unable to plan the program %s: a one-shot run with --changes shows the "
			     "workspace as an overlay, whose files exist only once it runs (run it in a living "
			     "sandbox: --serve with --changes)", name);
		else if (errno == ENAMETOOLONG)
			FAIL(SBX_EXIT_EXEC, "unable to exec %s: name too long", name);
		return;   /* not found, as at exec */
	}
	/* Read through the very file found, as the command's identity. */
	snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
	rfd = open(self, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (rfd < 0) {
		FAIL(SBX_EXIT_EXEC, "unable to read the program %s to hash it for the plan: %s", f->path,
		     strerror(errno));
	} else if (fstat(fd, &at) < 0 || fstat(rfd, &st) < 0) {
		FAIL(SBX_EXIT_SYS, "unable to stat the program %s: %s", f->path, strerror(errno));
	} else if (st.st_dev != at.st_dev || st.st_ino != at.st_ino || !S_ISREG(st.st_mode)) {
		FAIL(SBX_EXIT_POLICY, "refusing to start: the program %s changed while it was looked up", f->path);
	} else if (sbx_sha256_fd(rfd, f->g.sha) < 0) {
		FAIL(SBX_EXIT_SYS, "unable to read the program %s to hash it for the plan: %s", f->path,
		     strerror(errno));
	} else if (fstat(rfd, &after) < 0) {
		FAIL(SBX_EXIT_SYS, "unable to stat the program %s: %s", f->path, strerror(errno));
	} else {
		f->g.dev = st.st_dev;
		f->g.ino = st.st_ino;
		f->g.size = st.st_size;
		f->g.mtime = st.st_mtim;
		f->g.ctime = st.st_ctim;
		f->g.still = st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH));
		if (!same_file(&f->g, &after))
			FAIL(SBX_EXIT_POLICY, "refusing to start: the program %s changed while it was hashed", f->path);
		else
			f->found = 1;
	}
	if (rfd >= 0)
		close(rfd);
	close(fd);
}

int ns_find_program(const struct ns_plan *p, const struct ns_view *v, const char *name, const char *search,
		    const char *cwd, const struct sbx_allowexec *allow, struct ns_program *g, char *why, size_t n)
{
	struct found *f = sbx_need(calloc(1, sizeof *f));
	int fds[2], st = 0, code;
	pid_t pid;
	long got;

	memset(g, 0, sizeof *g);
	if (pipe2(fds, O_CLOEXEC) < 0 || (pid = fork()) < 0) {
		code = SBX_EXIT_SYS;
		snprintf(why, n, "unable to start the program's lookup: %s", strerror(errno));
		free(f);
		return code;
	}
	if (pid == 0) {
		close(fds[0]);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
			_exit(SBX_EXIT_SYS);
		if (p->root && (setgroups(0, NULL) < 0 || setresgid(p->gid, p->gid, p->gid) < 0 ||
				setresuid(p->uid, p->uid, p->uid) < 0))
			FAIL(SBX_EXIT_SYS, "unable to take uid %u to look up the program: %s", (unsigned)p->uid,
			     strerror(errno));
		else
			lookup(f, v, name, search, cwd);
		_exit(sbx_write_all(fds[1], f, sizeof *f) < 0 ? SBX_EXIT_SYS : 0);
	}
	close(fds[1]);
	got = sbx_read_full(fds[0], f, sizeof *f);
	close(fds[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (got != (long)sizeof *f || !WIFEXITED(st) || WEXITSTATUS(st)) {
		snprintf(why, n, "unable to look up the program %s: its lookup ended without an answer", name);
		free(f);
		return SBX_EXIT_SYS;
	}
	code = f->code;
	if (code) {
		snprintf(why, n, "%s", f->why);
	} else if (f->found) {
		*g = f->g;
		g->found = 1;
		g->path = sbx_need(strdup(f->path));
		for (size_t i = 0; i < allow->n; i++)
			if (allow->v[i].dev == g->dev && allow->v[i].ino == g->ino)
				g->allow = allow->v[i].path;
	}
	free(f);
	return code;
}
#undef FAIL

/* A one-shot run's program (or a living sandbox's first one, for
 * --dry-run), in the root its plan will build. */
void ns_plan_program(const struct ns_args *a, struct ns_plan *p)
{
	char why[PATH_MAX + 160];
	struct ns_view v;
	int code;

	if (!a->cmd || !a->cmd[0] || (a->serve && !a->dry_run))
		return;
	p->have_prog = 1;
	code = ns_view_oneshot(p, &v, why, sizeof why);
	if (!code)
		code = ns_find_program(p, &v, a->cmd[0], p->search, p->ops[p->ws].dest, &a->allow, &p->prog, why,
				       sizeof why);
	ns_view_free(&v);
	if (code)
		sbx_die(code, "%s", why);
}

/* The program as the plan document shows it. */
void ns_program_json(struct sbx_json *j, const struct ns_plan *p)
{
	char hex[SBX_SHA256_HEX];

	if (!p->have_prog)
		return;
	sbx_json_open_obj(j, "program");
	if (!p->prog.found) {
		sbx_json_null(j, "path");
		sbx_json_close_obj(j);
		return;
	}
	sbx_json_str(j, "path", p->prog.path);
	sbx_json_uint(j, "dev", (uint64_t)p->prog.dev);
	sbx_json_uint(j, "ino", (uint64_t)p->prog.ino);
	sbx_json_uint(j, "size", (uint64_t)p->prog.size);
	sbx_digest_hex(p->prog.sha, SBX_SHA256_LEN, hex);
	sbx_json_str(j, "sha256", hex);
	if (p->prog.allow)
		sbx_json_str(j, "allow_exec", p->prog.allow);
	sbx_json_close_obj(j);
}

/* A file that is not still, held until the exec and hashed again: the
 * read lease is refused while any writer has it open, and makes every
 * new writer wait (the kernel's lease break) until the exec has closed
 * it, by when the exec itself refuses writers. Where no lease can be had
 * (another owner's file; a filesystem without leases), only a file the
 * command cannot write is run. Returns the fd to execute. */
static struct sigaction sigio_was;   /* the command's own, restored for the exec */

static int hold(const struct ns_program *g, int fd, const char *path)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };
	unsigned char sha[SBX_SHA256_LEN];
	char self[64];
	struct stat st;
	int rfd;

	snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
	rfd = open(self, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (rfd < 0 || fstat(rfd, &st) < 0)
		sbx_die_errno(SBX_EXIT_EXEC, "unable to read %s to check it against the grant", path);
	/* A lease break is signalled (SIGIO, which would end this process). */
	if (sigaction(SIGIO, &ign, &sigio_was) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to ignore SIGIO");
	if (fcntl(rfd, F_SETLEASE, F_RDLCK) < 0) {
		if (errno == EAGAIN)
			sbx_die(SBX_EXIT_POLICY, "grant refused: the program %s is open for writing (a granted "
				"program runs only while nothing can change it)", path);
		if (st.st_mode & (S_IWGRP | S_IWOTH))
			sbx_die(SBX_EXIT_POLICY, "grant refused: the program %s is writable by group or others and "
				"cannot be held still (%s): chmod go-w %s", path, strerror(errno), path);
		if (st.st_uid == geteuid())
			sbx_die(SBX_EXIT_POLICY, "grant refused: unable to hold the program %s still (%s), and the "
				"command could rewrite it", path, strerror(errno));
	}
	if (sbx_sha256_fd(rfd, sha) < 0 || fstat(rfd, &st) < 0)
		sbx_die_errno(SBX_EXIT_EXEC, "unable to read %s to check it against the grant", path);
	if (!sbx_digest_equal(sha, g->sha, sizeof sha) || !same_file(g, &st))
		sbx_die(SBX_EXIT_POLICY, "grant refused: program differs from the grant (%s was rewritten since "
			"it was hashed)", path);
	close(fd);
	return rfd;
}

/* In the command's process, before it reports "started": the lookup the
 * sandbox makes must lead to the file the plan hashed. Returns an fd on
 * it, or -1 when no plan grant is in force. */
int ns_grant_open(const struct ns_run *r, const struct ns_cmd *c)
{
	const struct ns_program *g = c->prog;
	char *const *argv = c->argv;
	char path[PATH_MAX];
	struct stat st;
	int fd;

	if (!g)
		return -1;
	if (!g->found || sbx_exec_find(argv[0], c->search, path, sizeof path) < 0)
		sbx_die(SBX_EXIT_NOTFOUND, "unable to find %s", argv[0]);
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		sbx_die(SBX_EXIT_NOTFOUND, "unable to find %s", argv[0]);
	if (fd < 0 || fstat(fd, &st) < 0)
		sbx_die_errno(SBX_EXIT_EXEC, "unable to exec %s", argv[0]);
	if (!same_file(g, &st))
		sbx_die(SBX_EXIT_POLICY, "grant refused: program differs from the grant (%s in the sandbox "
			"is not the file %s that was hashed, or it changed since)", path, g->path);
	if (r->a->allow.n && !sbx_allowexec_has(&r->a->allow, st.st_dev, st.st_ino))
		sbx_die(SBX_EXIT_POLICY, "refusing to run %s: not one of the --allow-exec files", argv[0]);
	return g->still ? fd : hold(g, fd, path);
}

/* Last: exactly the checked file runs, never the name again. */
void ns_grant_exec(const struct ns_cmd *c, int fd)
{
	char *const *argv = c->argv;

	if (fd < 0)
		return;
	if (!c->prog->still && sigaction(SIGIO, &sigio_was, NULL) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to restore SIGIO");
	syscall(SYS_execveat, fd, "", argv, c->env, AT_EMPTY_PATH);
	/* A script's interpreter is handed /dev/fd/N: keep it open then. */
	if (errno == ENOENT && fcntl(fd, F_SETFD, 0) == 0)
		syscall(SYS_execveat, fd, "", argv, c->env, AT_EMPTY_PATH);
	if (errno == ENOENT)
		sbx_die_errno(SBX_EXIT_NOTFOUND, "unable to exec %s", argv[0]);
	sbx_die_errno(SBX_EXIT_EXEC, "unable to exec %s", argv[0]);
}

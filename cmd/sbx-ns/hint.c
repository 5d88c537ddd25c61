/* Saying what is wrong before the command fails in confusing ways: a
 * workspace the command's uid cannot write (root callers), a program the
 * host has but the sandbox does not show, a dynamic program whose loader
 * the sandbox lacks (a custom --runtime). */
#include "ns.h"

#include "die.h"
#include "exec.h"
#include "exitcodes.h"
#include "json.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Root dropping to --uid N on a workspace N cannot write: the command
 * would fail on its first write; say so now (stderr and status). */
void ns_check_ws_writable(const struct ns_args *a, const struct ns_plan *p)
{
	const struct mount_op *ws = &p->ops[p->ws];
	char msg[PATH_MAX + 256];
	struct sbx_json j;
	struct stat st;
	mode_t bit;
	int n;

	if (!p->root || (ws->fd >= 0 ? fstat(ws->fd, &st) : stat(ws->src, &st)) < 0)
		return;
	bit = st.st_uid == p->uid ? S_IWUSR : st.st_gid == p->gid ? S_IWGRP : S_IWOTH;
	if (st.st_mode & bit)
		return;
	n = snprintf(msg, sizeof msg, "uid %u cannot write to the workspace %s (owner uid %u, group %u, "
		     "mode %04o): chown -R %u:%u %s", (unsigned)p->uid, ws->src, (unsigned)st.st_uid,
		     (unsigned)st.st_gid, (unsigned)(st.st_mode & 07777), (unsigned)p->uid,
		     (unsigned)p->gid, ws->src);
	if (st.st_uid != 0 && n > 0 && (size_t)n < sizeof msg)
		snprintf(msg + n, sizeof msg - (size_t)n, ", or run it as --uid %u --gid %u",
			 (unsigned)st.st_uid, (unsigned)st.st_gid);
	sbx_warn("%s", msg);
	if (a->status_fd < 0)
		return;
	sbx_json_begin(&j, NS_PROG, "warning");
	sbx_json_str(&j, "option", "--uid");
	sbx_json_str(&j, "path", ws->src);
	sbx_json_str(&j, "reason", msg);
	sbx_json_write(&j, a->status_fd);
}

/* Where a hint looks: the sandbox as its plan will build it, and the
 * host outside the sandbox's roots (view.c). A name inside a root is
 * looked up only as the sandbox will see it, never followed on the host,
 * so that no hint tells of a file a planted symlink names. */
struct hint_views {
	struct ns_view in, host;
};

/* One candidate of a search: on the host outside the roots, else (a name
 * inside a root) in the sandbox; where says which (1, 2). */
struct either {
	const struct hint_views *hv;
	struct stat st;
	int where;
};

static int either_ok(const char *path, void *arg)
{
	struct either *e = arg;
	int fd;

	if (path[0] != '/')
		return errno = ENOENT, -1;
	e->where = 1;
	fd = ns_view_exec(&e->hv->host, path);
	if (fd < 0 && errno == EPERM) {
		e->where = 2;
		fd = ns_view_exec(&e->hv->in, path);
	}
	if (fd < 0)
		return -1;
	if (fstat(fd, &e->st) < 0) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* The first executable file name names on search, as either_ok finds it;
 * only_host: the host's places outside the roots alone. */
static int find_in(const struct hint_views *hv, const char *name, const char *search, int only_host,
		   char *out, size_t cap, struct either *e)
{
	e->hv = hv;
	if (sbx_exec_find_by(name, search, out, (unsigned)cap, either_ok, e) < 0)
		return 0;
	if (strchr(name, '/') && either_ok(out, e) < 0)
		return 0;
	return !only_host || e->where == 1;
}

/* Is dir one of search's entries? */
static int on_search(const char *search, const char *dir)
{
	size_t n = strlen(dir);

	for (const char *s = search, *end; *s; s = *end ? end + 1 : end) {
		end = s + strcspn(s, ":");
		if ((size_t)(end - s) == n && !strncmp(s, dir, n))
			return 1;
	}
	return 0;
}

/* The directory of file into dir, canonical when it can be and may be
 * (--ro takes canonical paths only: /bin may be a link to usr/bin): a
 * file found on the host outside every root (where 1) only. */
static void canon_dir(const char *file, int where, char *dir, size_t cap)
{
	char real[PATH_MAX], *slash;

	snprintf(dir, cap, "%s", file);
	slash = strrchr(dir, '/');
	if (slash && slash != dir)
		*slash = '\0';
	if (where == 1 && realpath(dir, real))
		snprintf(dir, cap, "%s", real);
}

/* The options that make the sandbox run file (a path on the caller's
 * PATH) for its bare name: --ro of the toolchain's root unless the sandbox
 * shows it (a hidden directory such as ~/.pyenv or ~/.nvm is taken as the
 * root, for its shims and libraries live beside the bin directory), and a
 * --command-path that puts the file's directory first. */
static void bring_in(const struct ns_plan *p, const char *file, int where, char *out, size_t cap)
{
	char dir[PATH_MAX], root[PATH_MAX], *slash, *dot;
	int n = 0;

	canon_dir(file, where, dir, sizeof dir);
	snprintf(root, sizeof root, "%s", dir);
	dot = strstr(root, "/.");
	if (dot && dot[2] && dot[2] != '/' && dot[2] != '.') {
		slash = strchr(dot + 1, '/');
		if (slash)
			*slash = '\0';
	}
	out[0] = '\0';
	if (where == 1)
		n = snprintf(out, cap, "--ro %s", root);
	if (n < 0 || (size_t)n >= cap || (on_search(p->search, dir) && where == 1))
		return;
	n += snprintf(out + n, cap - (size_t)n, "%s--command-path %s", n ? " " : "", dir);
	/* the rest of the sandbox's command path, less dir itself */
	for (const char *s = p->search, *end; *s && (size_t)n < cap; s = *end ? end + 1 : end) {
		end = s + strcspn(s, ":");
		if (end != s && ((size_t)(end - s) != strlen(dir) || strncmp(s, dir, (size_t)(end - s))))
			n += snprintf(out + n, cap - (size_t)n, ":%.*s", (int)(end - s), s);
	}
}

/* A bare name the caller's PATH resolves to another file than the
 * sandbox's command path does: the sandbox would run something else
 * (pyenv's python3 on the host, /usr/bin/python3 inside). */
static void warn_other(const struct ns_args *a, const struct ns_plan *p, const char *inner, const char *outer,
		       int where)
{
	char fix[3 * PATH_MAX], *msg;
	struct sbx_json j;

	bring_in(p, outer, where, fix, sizeof fix);
	if (asprintf(&msg, "%s is %s in the sandbox but %s on the caller's PATH (for that one: %s)",
		     a->cmd[0], inner, outer, fix) < 0)
		return;
	sbx_warn("%s", msg);
	if (a->status_fd >= 0) {
		sbx_json_begin(&j, NS_PROG, "warning");
		sbx_json_str(&j, "option", "--command-path");
		sbx_json_str(&j, "path", outer);
		sbx_json_str(&j, "reason", msg);
		sbx_json_write(&j, a->status_fd);
	}
	free(msg);
}

/* Where the host would find the program, if no root of the sandbox shows
 * that place; for a bare name, also where the caller's own PATH finds it.
 * Made once the root's steps are known (the sandbox's view). */
void ns_plan_hint(const struct ns_args *a, struct ns_plan *p)
{
	char inner[PATH_MAX], outer[PATH_MAX], path[PATH_MAX], dir[PATH_MAX], fix[3 * PATH_MAX], why[PATH_MAX + 160];
	const char *caller = getenv("PATH");
	struct hint_views hv;
	struct either out, host;
	struct stat in;
	int bare, have_outer, fd;

	if (!a->cmd || !a->cmd[0] || !a->cmd[0][0])
		return;
	if (ns_view_oneshot(p, &hv.in, why, sizeof why))
		return;   /* a root changed: the run says so itself */
	if (ns_view_host(p, &hv.host) < 0) {
		ns_view_free(&hv.in);
		return;
	}
	bare = !strchr(a->cmd[0], '/');
	have_outer = bare && caller && strlen(a->cmd[0]) < NAME_MAX &&
		     find_in(&hv, a->cmd[0], caller, 0, outer, sizeof outer, &out);
	fd = ns_view_find(&hv.in, a->cmd[0], p->search, p->ops[p->ws].dest, inner, sizeof inner);
	if (fd >= 0 || errno == EXDEV) {
		if (fd >= 0 && fstat(fd, &in) == 0 && have_outer &&
		    (in.st_dev != out.st.st_dev || in.st_ino != out.st.st_ino))
			warn_other(a, p, inner, outer, out.where);
		if (fd >= 0)
			close(fd);
	} else if ((bare || a->cmd[0][0] == '/') &&
		   find_in(&hv, a->cmd[0], p->search, 1, path, sizeof path, &host)) {
		canon_dir(path, 1, dir, sizeof dir);
		if (asprintf(&p->hint, "%s exists on the host but is not visible in the sandbox "
			     "(show it with --ro %s)", path, dir) < 0)
			p->hint = NULL;
	} else if (have_outer) {
		/* Found nowhere the sandbox looks: the caller's PATH knows it. */
		bring_in(p, outer, out.where, fix, sizeof fix);
		if (asprintf(&p->hint, "%s is on the caller's PATH but not %s (bring it in with %s)", outer,
			     out.where == 2 ? "on the sandbox's command path" : "in the sandbox", fix) < 0)
			p->hint = NULL;
	}
	ns_view_free(&hv.host);
	ns_view_free(&hv.in);
}

/* The ELF interpreter of path into out, or 0 if it has none. */
static int interp_of(const char *path, char *out, size_t cap)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int fd = open(path, O_RDONLY | O_CLOEXEC), found = 0;

	if (fd < 0)
		return 0;
	if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	    eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof ph && eh.e_phnum < 256) {
		for (unsigned i = 0; i < eh.e_phnum && !found; i++) {
			if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != (ssize_t)sizeof ph)
				break;
			if (ph.p_type != PT_INTERP || ph.p_filesz == 0 || ph.p_filesz >= cap)
				continue;
			if (pread(fd, out, ph.p_filesz, (off_t)ph.p_offset) == (ssize_t)ph.p_filesz &&
			    out[ph.p_filesz - 1] == '\0')
				found = 1;
		}
	}
	close(fd);
	return found;
}

/* In the command's process, just before exec: the two failures that
 * ENOENT alone would leave unexplained. */
void ns_explain_exec(const struct ns_args *a, const struct ns_plan *p)
{
	char path[PATH_MAX], interp[PATH_MAX];

	if (sbx_exec_find(a->cmd[0], p->search, path, sizeof path) < 0 || access(path, F_OK) < 0) {
		if (errno == ENOENT && p->hint)
			sbx_die(SBX_EXIT_NOTFOUND, "unable to find %s: %s", a->cmd[0], p->hint);
		return;
	}
	if (access(path, X_OK) == 0 && interp_of(path, interp, sizeof interp) && access(interp, F_OK) < 0)
		sbx_die(SBX_EXIT_NOTFOUND, "unable to exec %s: its program loader %s is not in the sandbox "
			"(%s)", path, interp, a->runtime ? "add it to --runtime" : "it is missing on the host");
}

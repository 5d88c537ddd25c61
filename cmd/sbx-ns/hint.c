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

/* Is path, or its canonical form, inside one of the sandbox's roots? */
static int visible(const struct ns_plan *p, const char *path)
{
	char real[PATH_MAX];
	int canon = realpath(path, real) != NULL;

	for (size_t i = 0; i < p->nops; i++)
		if (sbx_path_within(path, p->ops[i].dest) || (canon && sbx_path_within(real, p->ops[i].dest)))
			return 1;
	return 0;
}

/* The first executable regular file name names in search (host view),
 * counting only places the sandbox shows when shown is set. */
static int find_in(const struct ns_plan *p, const char *name, const char *search, int shown, char *out, size_t cap)
{
	struct stat st;

	for (const char *s = search, *end; *s; s = *end ? end + 1 : end) {
		end = s + strcspn(s, ":");
		if (end == s || *s != '/' || snprintf(out, cap, "%.*s/%s", (int)(end - s), s, name) >= (int)cap)
			continue;
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0 &&
		    (!shown || visible(p, out)))
			return 1;
	}
	return 0;
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

/* The directory of file into dir, canonical when it can be (--ro takes
 * canonical paths only: /bin may be a link to usr/bin). */
static void canon_dir(const char *file, char *dir, size_t cap)
{
	char real[PATH_MAX], *slash;

	snprintf(dir, cap, "%s", file);
	slash = strrchr(dir, '/');
	if (slash && slash != dir)
		*slash = '\0';
	if (realpath(dir, real))
		snprintf(dir, cap, "%s", real);
}

/* The options that make the sandbox run file (a path on the caller's
 * PATH) for its bare name: --ro of the toolchain's root unless the sandbox
 * shows it (a hidden directory such as ~/.pyenv or ~/.nvm is taken as the
 * root, for its shims and libraries live beside the bin directory), and a
 * --command-path that puts the file's directory first. */
static void bring_in(const struct ns_plan *p, const char *file, char *out, size_t cap)
{
	char dir[PATH_MAX], root[PATH_MAX], *slash, *dot;
	int n = 0;

	canon_dir(file, dir, sizeof dir);
	snprintf(root, sizeof root, "%s", dir);
	dot = strstr(root, "/.");
	if (dot && dot[2] && dot[2] != '/' && dot[2] != '.') {
		slash = strchr(dot + 1, '/');
		if (slash)
			*slash = '\0';
	}
	out[0] = '\0';
	if (!visible(p, dir))
		n = snprintf(out, cap, "--ro %s", root);
	if (n < 0 || (size_t)n >= cap || (on_search(p->search, dir) && !visible(p, dir)))
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
static void warn_other(const struct ns_args *a, const struct ns_plan *p, const char *inner, const char *outer)
{
	char fix[3 * PATH_MAX], *msg;
	struct sbx_json j;

	bring_in(p, outer, fix, sizeof fix);
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

/* In the outer, with the host's view: where the host would find the
 * program, if no root of the sandbox shows that place; for a bare name,
 * also where the caller's own PATH finds it. */
void ns_plan_hint(const struct ns_args *a, struct ns_plan *p)
{
	char path[PATH_MAX], inner[PATH_MAX], outer[PATH_MAX], dir[PATH_MAX], fix[3 * PATH_MAX];
	const char *caller = getenv("PATH");
	struct stat in, out;
	int bare, have_outer;

	if (!a->cmd[0] || !a->cmd[0][0])
		return;
	bare = !strchr(a->cmd[0], '/');
	have_outer = bare && caller && strlen(a->cmd[0]) < NAME_MAX &&
		     find_in(p, a->cmd[0], caller, 0, outer, sizeof outer);
	if (bare && find_in(p, a->cmd[0], p->search, 1, inner, sizeof inner)) {
		if (have_outer && stat(inner, &in) == 0 && stat(outer, &out) == 0 &&
		    (in.st_dev != out.st_dev || in.st_ino != out.st_ino))
			warn_other(a, p, inner, outer);
		return;
	}
	if (sbx_exec_find(a->cmd[0], p->search, path, sizeof path) < 0 || access(path, X_OK) < 0 || visible(p, path)) {
		/* Found nowhere the sandbox looks: the caller's PATH may know it. */
		if (!have_outer)
			return;
		bring_in(p, outer, fix, sizeof fix);
		if (asprintf(&p->hint, "%s is on the caller's PATH but not %s (bring it in with %s)", outer,
			     visible(p, outer) ? "on the sandbox's command path" : "in the sandbox", fix) < 0)
			p->hint = NULL;
		return;
	}
	canon_dir(path, dir, sizeof dir);
	if (asprintf(&p->hint, "%s exists on the host but is not visible in the sandbox "
		     "(show it with --ro %s)", path, dir) < 0)
		p->hint = NULL;
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

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

/* In the outer, with the host's view: where the host would find the
 * program, if no root of the sandbox shows that place. */
void ns_plan_hint(const struct ns_args *a, struct ns_plan *p)
{
	char path[PATH_MAX], dir[PATH_MAX], real[PATH_MAX], *slash;

	if (!a->cmd[0] || sbx_exec_find(a->cmd[0], p->search, path, sizeof path) < 0 ||
	    access(path, X_OK) < 0)
		return;
	for (size_t i = 0; i < p->nops; i++)
		if (sbx_path_within(path, p->ops[i].dest))
			return;
	snprintf(dir, sizeof dir, "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir)
		*slash = '\0';
	/* --ro takes canonical paths only (/bin may be a link to usr/bin). */
	if (realpath(dir, real))
		snprintf(dir, sizeof dir, "%s", real);
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

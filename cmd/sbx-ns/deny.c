/* Deny-write for one run: paths of the workspace the command may read
 * but never change, as lib/deny's rule finds them (the globs' matches and
 * git's rule; default globs: sbx_deny_default_globs; --deny-write replaces
 * the defaults, as the spec's denyWrite does).
 *
 * At the start the outer process finds the matches with the caller's
 * identity and the sandbox binds each one read-only onto itself; every
 * directory between the workspace and a match is bound onto itself, so it
 * cannot be renamed or removed (EBUSY) and what lies below stays protected.
 * Nothing is created in the workspace: a protected path that is missing
 * stays missing. If the command creates one, the same walk finds it again
 * at the end (denyinert.c), and it is moved aside before the run is
 * reported finished. */
#include "ns.h"

#include "die.h"
#include "exitcodes.h"
#include "policy.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void ns_check_glob(const char *glob)
{
	const char *why = sbx_policy_glob_invalid(glob);

	if (why)
		sbx_die_usage("--deny-write: invalid glob '%s': %s", glob, why);
}

const char *const *ns_deny_globs(const struct ns_plan *p, size_t *n)
{
	if (p->deny) {
		*n = p->ndeny;
		return p->deny;
	}
	return sbx_deny_default_globs(n);
}

static int cmp_dop(const void *a, const void *b)
{
	const struct deny_op *x = a, *y = b;
	int c = strcmp(x->rel, y->rel);
	return c ? c : (int)x->kind - (int)y->kind;
}

int ns_workspace_fd(struct ns_plan *p)
{
	const struct mount_op *ws = &p->ops[p->ws];
	struct stat st;
	int fd;

	if (p->wsfd >= 0)
		return p->wsfd;
	fd = ws->fd >= 0 ? fcntl(ws->fd, F_DUPFD_CLOEXEC, 3) :
			   open(ws->src, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && (errno == ENOENT || errno == ENOTDIR || errno == ELOOP))
		sbx_die(SBX_EXIT_POLICY, "unable to open workspace %s: it was replaced (race)", ws->src);
	if (fd < 0 || fstat(fd, &st) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open workspace %s", ws->src);
	if (st.st_dev != ws->dev || st.st_ino != ws->ino)
		sbx_die(SBX_EXIT_POLICY, "unable to open workspace %s: it was replaced (race)", ws->src);
	p->wsfd = fd;
	return fd;
}

/* The start set: every match, then every directory leading to one. */
void ns_plan_deny(struct ns_plan *p, const struct deny_tree *prev)
{
	struct deny_walk w = { .check = 0, .ws_path = p->ops[p->ws].src, .tree_in = prev };
	size_t n, nprot;
	const char *const *globs = ns_deny_globs(p, &n);
	int wsfd = ns_workspace_fd(p);

	sbx_deny_walk(&w, wsfd, globs, n);
	sbx_deny_restore(&w);
	nprot = w.found.n;
	for (size_t i = 0; i < nprot; i++) {
		char anc[PATH_MAX], *s;
		snprintf(anc, sizeof anc, "%s", w.found.v[i].rel);
		for (s = strchr(anc, '/'); s; s = strchr(s + 1, '/')) {
			struct stat st;
			*s = '\0';
			if (fstatat(wsfd, anc, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
				sbx_die(SBX_EXIT_POLICY, "unable to protect %s in the workspace: it was replaced (race)", anc);
			sbx_deny_push(&w.found, DENY_ANCESTOR, anc, st.st_dev, st.st_ino);
			*s = '/';
		}
	}
	qsort(w.found.v, w.found.n, sizeof *w.found.v, cmp_dop);
	p->dops = w.found.v;
	p->ndops = w.found.n;
	p->dtree = w.tree_out;
}

/* --tmp-in-workspace: /tmp and /dev/shm are directories of the workspace's
 * filesystem (so its project quota covers them): .sbx-tmp/tmp and
 * .sbx-tmp/shm, created on first use, kept between runs. */
static int scratch_dir(const struct ns_args *a, const struct ns_plan *p, int dirfd, const char *name,
		       const char *path, struct stat *st)
{
	/* --dry-run creates nothing: a missing directory is one to make. */
	if (a->dry_run) {
		if (dirfd < 0 || (fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT))
			return 1;
	} else if (mkdirat(dirfd, name, 0700) == 0) {
		if (p->root && fchownat(dirfd, name, p->uid, p->gid, AT_SYMLINK_NOFOLLOW) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to chown %s", path);
	} else if (errno != EEXIST) {
		sbx_die_errno(SBX_EXIT_SYS, "unable to create %s", path);
	}
	if (fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to stat %s", path);
	if (!S_ISDIR(st->st_mode))
		sbx_die(SBX_EXIT_POLICY, "unable to use %s for /tmp: not a directory", path);
	if (st->st_uid != p->uid)
		sbx_die(SBX_EXIT_POLICY, "unable to use %s for /tmp: owned by uid %u, not %u",
			path, (unsigned)st->st_uid, (unsigned)p->uid);
	return 0;
}

void ns_plan_scratch(const struct ns_args *a, struct ns_plan *p)
{
	static const char *const sub[] = { "tmp", "shm" };
	static const char *const dest[] = { "/tmp", "/dev/shm" };
	char path[PATH_MAX];
	struct stat st;
	int wsfd, base, made;

	if (!a->tmp_in_ws)
		return;
	wsfd = ns_workspace_fd(p);
	snprintf(path, sizeof path, "%s/.sbx-tmp", p->ops[p->ws].src);
	made = scratch_dir(a, p, wsfd, ".sbx-tmp", path, &st);
	base = made ? -1 : openat(wsfd, ".sbx-tmp", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (!made && base < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open %s", path);
	for (int i = 0; i < 2; i++) {
		struct mount_op *op;
		snprintf(path, sizeof path, "%s/.sbx-tmp/%s", p->ops[p->ws].src, sub[i]);
		int create = scratch_dir(a, p, base, sub[i], path, &st);
		op = ns_push_op(p);
		op->create = create;
		op->kind = MNT_SCRATCH;
		op->opt = "--tmp-in-workspace";
		op->src = sbx_need(strdup(path));
		op->dest = (char *)dest[i];
		op->dev = st.st_dev;
		op->ino = st.st_ino;
		op->isdir = 1;
	}
	if (base >= 0)
		close(base);
}

/* The roots of the sandbox: which host paths appear in it, checked once
 * here with the caller's view and identity. Every path is taken only in its
 * canonical form (no symlink, '.', '..' or repeated slash), so what was
 * checked is what the sandbox shows; the device and inode found here are
 * compared again when the sandbox mounts it. */
#include "ns.h"

#include "cmdpath.h"
#include "parse.h"
#include "die.h"
#include "exitcodes.h"
#include "fd.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const never[] = { "/proc", "/sys", "/dev", NULL };
/* The workspace would collide with the runtime mounts or the private /tmp. */
static const char *const never_ws[] = { "/usr", "/bin", "/sbin", "/lib", "/lib64", "/dev",
					"/proc", "/sys", "/tmp", NULL };
static const char *const default_runtime[] = { "/usr", "/bin", "/sbin", "/lib", "/lib64",
					       "/etc", NULL };

struct mount_op *ns_push_op(struct ns_plan *p)
{
	struct mount_op *op;

	if (p->nops == p->capops) {
		size_t cap = p->capops ? p->capops * 2 : 16;
		op = sbx_need(realloc(p->ops, cap * sizeof *op));
		p->ops = op;
		p->capops = cap;
	}
	op = &p->ops[p->nops++];
	memset(op, 0, sizeof *op);
	op->fd = -1;
	return op;
}

/* The plan's writable entries: every mount the command can write through,
 * whatever option made it (--workspace, --workspace-fd, --rw, --rw-fd,
 * --home, --bind, --bind-fd, a policy's writable roots,
 * --tmp-in-workspace's directories): each one pid 1 binds without
 * read-only (root.c). Every check that concerns writable things (the
 * workspace's second views, protected paths, the launcher, the broker's
 * socket, the deny-write records) iterates them through this one call,
 * so an option that makes a writable mount cannot pass one by:
 *
 *	for (size_t it = 0; (op = ns_next_writable(p, &it)); )
 */
const struct mount_op *ns_next_writable(const struct ns_plan *p, size_t *it)
{
	while (*it < p->nops) {
		const struct mount_op *op = &p->ops[(*it)++];

		if (!op->ro && op->kind != MNT_SYMLINK)
			return op;
	}
	return NULL;
}

/* NULL when path is canonical and every component exists and none is a
 * symlink (the last one too, unless last_link_ok); else why not. */
const char *ns_canonical(const char *path, int last_link_ok, struct stat *st)
{
	char buf[PATH_MAX], real[PATH_MAX];
	size_t len = strlen(path), i;

	if (len >= sizeof buf)
		return "too long";
	/* '.' and '..' lexically first: a last component that is a
	 * symlink is not resolved below. */
	if (sbx_path_shape(path, len))
		return "not canonical";
	memcpy(buf, path, len + 1);
	for (i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (lstat(buf, st) < 0)
			return errno == ENOENT ? "does not exist" : strerror(errno);
		if (S_ISLNK(st->st_mode) && !(i == len && last_link_ok))
			return i == len ? "a symlink" : "has a symlink in its path";
		buf[i] = path[i];
	}
	if (S_ISLNK(st->st_mode))
		return NULL;
	if (!realpath(path, real))
		return strerror(errno);
	if (strcmp(real, path))
		return "not canonical";
	return NULL;
}

/* Usage checks shared by every path option. */
static void check_place(const char *opt, const char *arg, const char *path, enum mount_kind kind)
{
	const char *const *d;

	if (!strcmp(path, "/"))
		sbx_die_usage("%s: invalid path '%s': the root", opt, arg);
	for (d = kind == MNT_WORKSPACE ? never_ws : never; *d; d++)
		if (sbx_path_within(path, *d) && kind == MNT_WORKSPACE && !strcmp(*d, "/tmp"))
			sbx_die_usage("%s: invalid path '%s': under /tmp, where the sandbox mounts its "
				      "own /tmp (use a directory under /var/tmp)", opt, arg);
		else if (sbx_path_within(path, *d))
			sbx_die_usage("%s: invalid path '%s': under %s", opt, arg, *d);
}

static void fill(struct mount_op *op, enum mount_kind kind, int ro, const char *opt,
		 const char *path, const struct stat *st)
{
	op->kind = kind;
	op->ro = ro;
	op->opt = opt;
	op->src = sbx_need(strdup(path));
	op->dest = op->src;
	op->dev = st->st_dev;
	op->ino = st->st_ino;
	op->isdir = S_ISDIR(st->st_mode);
}

static void check_type(const char *opt, const char *arg, enum mount_kind kind, const struct stat *st)
{
	if (kind == MNT_WORKSPACE && !S_ISDIR(st->st_mode))
		sbx_die_usage("%s: invalid path '%s': not a directory", opt, arg);
	if (!S_ISDIR(st->st_mode) && !S_ISREG(st->st_mode))
		sbx_die_usage("%s: invalid path '%s': not a file or directory", opt, arg);
}

void ns_add_path(struct ns_plan *p, enum mount_kind kind, int ro, const char *opt, const char *arg)
{
	struct stat st;
	const char *why;

	sbx_opt_abspath(opt, arg);
	check_place(opt, arg, arg, kind);
	why = ns_canonical(arg, 0, &st);
	if (why)
		sbx_die_usage("%s: invalid path '%s': %s", opt, arg, why);
	check_type(opt, arg, kind, &st);
	fill(ns_push_op(p), kind, ro, opt, arg, &st);
}

/* An fd the caller opened: bound at the path it resolves to, and only if
 * that path still names the very object (else someone replaced it). */
void ns_add_fd(struct ns_plan *p, enum mount_kind kind, int ro, const char *opt, const char *arg)
{
	char link[64], path[PATH_MAX];
	struct stat fst, st;
	struct mount_op *op;
	const char *why;
	ssize_t n;
	int fd = sbx_opt_fd(opt, arg);

	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof path - 1);
	if (n < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read %s", link);
	path[n] = '\0';
	if (fstat(fd, &fst) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to stat fd %d", fd);
	if (path[0] != '/' || (!S_ISDIR(fst.st_mode) && !S_ISREG(fst.st_mode)))
		sbx_die_usage("%s: invalid fd '%s': not a file or directory", opt, arg);
	if (kind == MNT_WORKSPACE && !S_ISDIR(fst.st_mode))
		sbx_die_usage("%s: invalid fd '%s': not a directory", opt, arg);
	check_place(opt, path, path, kind);
	why = ns_canonical(path, 0, &st);
	if (why || st.st_dev != fst.st_dev || st.st_ino != fst.st_ino)
		sbx_die(SBX_EXIT_POLICY, "unable to bind fd %d: %s no longer names the object "
			"the fd was opened on (race)", fd, path);
	op = ns_push_op(p);
	fill(op, kind, ro, opt, path, &fst);
	op->fd = fd;
}

/* The default runtime set holds path: it is one of the set's entries or
 * lies below one ("/usr/lib", "/etc/ssl"), by name, component-wise
 * ("/usr2" is not within "/usr"). */
int ns_runtime_default_holds(const char *path)
{
	/* "/usr/../opt" begins with /usr but is not within it */
	if (sbx_path_shape(path, strlen(path)))
		return 0;
	for (const char *const *d = default_runtime; *d; d++)
		if (sbx_path_within(path, *d))
			return 1;
	return 0;
}

/* The system paths every command needs, read-only, before the caller's
 * own binds. A path that is a symlink (/bin -> usr/bin on merged-/usr
 * systems) is recreated as the same symlink. */
void ns_add_runtime(const struct ns_args *a, struct ns_plan *p)
{
	size_t first = p->nops, i, n;
	struct mount_op *op, tmp[64];
	char list[4096], *save = NULL, *e;
	const char *const *d;
	struct stat st;
	int given = a->runtime != NULL;

	if (given && !strcmp(a->runtime, "none"))
		return;
	if (given) {
		if (strlen(a->runtime) >= sizeof list)
			sbx_die_usage("--runtime: too long");
		if (strstr(a->runtime, "::") || a->runtime[0] == ':' ||
		    a->runtime[strlen(a->runtime) - 1] == ':')
			sbx_die_usage("--runtime: invalid list '%s': empty entry", a->runtime);
		strcpy(list, a->runtime);
		for (e = strtok_r(list, ":", &save); e; e = strtok_r(NULL, ":", &save)) {
			const char *why;
			sbx_opt_abspath("--runtime", e);
			why = ns_canonical(e, 1, &st);
			if (why)
				sbx_die_usage("--runtime: invalid path '%s': %s", e, why);
			check_place("--runtime", e, e, MNT_RO);
			if (!S_ISLNK(st.st_mode))
				check_type("--runtime", e, MNT_RO, &st);
			fill(ns_push_op(p), MNT_RUNTIME, 1, "--runtime", e, &st);
		}
	} else {
		for (d = default_runtime; *d; d++) {
			if (ns_canonical(*d, 1, &st))
				continue;
			if (!S_ISLNK(st.st_mode) && !S_ISDIR(st.st_mode))
				continue;
			fill(ns_push_op(p), MNT_RUNTIME, 1, "--runtime", *d, &st);
		}
	}
	for (i = first; i < p->nops; i++) {
		op = &p->ops[i];
		if (lstat(op->src, &st) == 0 && S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t len = readlink(op->src, target, sizeof target - 1);
			if (len <= 0)
				sbx_die_errno(SBX_EXIT_SYS, "unable to read symlink %s", op->src);
			target[len] = '\0';
			op->kind = MNT_SYMLINK;
			op->src = sbx_need(strdup(target));
			op->dest = sbx_need(strdup(op->dest));
		}
	}
	/* Move them in front of the caller's binds. */
	n = p->nops - first;
	if (n > sizeof tmp / sizeof tmp[0])
		sbx_die_usage("--runtime: too many paths");
	memcpy(tmp, p->ops + first, n * sizeof *tmp);
	memmove(p->ops + n, p->ops, first * sizeof *tmp);
	memcpy(p->ops, tmp, n * sizeof *tmp);
	p->ws += n;
}

/* Binds apply in argv order, so two at one place, or one inside a later
 * one, would be silently hidden: refused instead. */
void ns_check_ops(const struct ns_plan *p)
{
	for (size_t i = 0; i < p->nops; i++)
		for (size_t j = 0; j < i; j++) {
			if (!strcmp(p->ops[i].dest, p->ops[j].dest))
				sbx_die_usage("%s: %s is already bound (by %s)", p->ops[i].opt,
					      p->ops[i].dest, p->ops[j].opt);
			if (sbx_path_within(p->ops[j].dest, p->ops[i].dest))
				sbx_die_usage("%s: %s would hide %s (bound earlier by %s; give it later)",
					      p->ops[i].opt, p->ops[i].dest, p->ops[j].dest, p->ops[j].opt);
		}
}

/* The root (a writable one, or any) that holds the host path, canonical:
 * by name, and by the identity of each existing directory above it, so
 * that a second name of a root (a bind mount, a hard-linked directory's
 * other name) is found too. The broker's socket may lie in no writable
 * root (the command could replace it); the living sandbox's control
 * socket in no root at all (the command could connect to it). */
const struct mount_op *ns_root_holding(const struct ns_plan *p, const char *path, int writable_only)
{
	char dir[PATH_MAX], *slash;
	struct stat ds;
	const struct mount_op *op;

	if (strlen(path) >= sizeof dir)
		return NULL;
	strcpy(dir, path);
	for (;;) {
		slash = strrchr(dir, '/');
		if (!slash)
			break;
		*(slash == dir ? slash + 1 : slash) = '\0';
		int have = stat(dir, &ds) == 0;
		for (size_t i = 0, it = 0; i < p->nops; i++) {
			/* writable: the one definition; any: every bind */
			if (writable_only) {
				if (!(op = ns_next_writable(p, &it)))
					break;
			} else if ((op = &p->ops[i])->kind == MNT_SYMLINK) {
				continue;
			}
			if ((have && ds.st_dev == op->dev && ds.st_ino == op->ino) || sbx_path_within(path, op->src))
				return op;
		}
		if (!strcmp(dir, "/"))
			break;
	}
	return NULL;
}

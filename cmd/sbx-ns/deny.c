/* Deny-write: paths of the workspace the command may read but never
 * change, given as globs relative to the workspace (default: .env, .env.*,
 * .git/config, .git/hooks/ and all below; --deny-write replaces the defaults, as the
 * spec's denyWrite does).
 *
 * The outer process finds the matches now, with the caller's identity; the
 * sandbox binds each match read-only onto itself. A literal path that does
 * not exist gets an empty read-only placeholder at its first missing
 * component (so it cannot be created), removed again when the run ends.
 * Every directory between the workspace and a protected path is bound onto
 * itself: a mount point cannot be renamed or removed (EBUSY), so moving an
 * ancestor away cannot unprotect what lies below it. Matches of a glob
 * created while the command runs are not protected (a documented limit). */
#include "ns.h"

#include "die.h"
#include "exitcodes.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *const default_deny[] = { ".env", ".env.*", ".git/config", ".git/hooks/**", NULL };

#define MAX_COMPS 32

void ns_check_glob(const char *glob)
{
	const char *p = glob, *end;
	size_t len;

	if (!*glob)
		sbx_die_usage("--deny-write: invalid glob '': empty");
	if (glob[0] == '/')
		sbx_die_usage("--deny-write: invalid glob '%s': absolute (globs are relative to the workspace)", glob);
	if (strlen(glob) >= PATH_MAX)
		sbx_die_usage("--deny-write: invalid glob '%s': too long", glob);
	for (;;) {
		end = strchrnul(p, '/');
		len = (size_t)(end - p);
		if (!len)
			sbx_die_usage("--deny-write: invalid glob '%s': empty component", glob);
		if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
			sbx_die_usage("--deny-write: invalid glob '%s': '.' and '..' are not allowed", glob);
		if (len == 2 && p[0] == '*' && p[1] == '*' && *end)
			sbx_die_usage("--deny-write: invalid glob '%s': '**' only as the last component", glob);
		if (!*end)
			break;
		p = end + 1;
	}
}

static int is_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* A shared lock on a protected object for as long as the run lasts: a
 * placeholder is removed at the end only by the run that made it and only
 * if it can take the lock exclusively, so a concurrent run on the same
 * workspace never loses its protection (the placeholder then stays). */
static int lock_shared(int dirfd, const char *name, const struct stat *st)
{
	struct stat now;
	int fd;

	if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode))
		return -1;
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &now) < 0 || now.st_dev != st->st_dev || now.st_ino != st->st_ino ||
	    flock(fd, LOCK_SH) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void add(struct ns_run *r, enum deny_kind kind, const char *rel, const struct stat *st,
		int created, int lockfd)
{
	struct deny_op *d;

	for (size_t i = 0; i < r->ndops; i++)
		if (r->dops[i].kind == kind && !strcmp(r->dops[i].rel, rel))
			return;
	if (r->ndops == r->capdops) {
		size_t cap = r->capdops ? r->capdops * 2 : 16;
		d = realloc(r->dops, cap * sizeof *d);
		if (!d)
			sbx_die_errno(SBX_EXIT_SYS, "unable to allocate memory");
		r->dops = d;
		r->capdops = cap;
	}
	d = &r->dops[r->ndops++];
	d->kind = kind;
	d->rel = strdup(rel);
	if (!d->rel)
		sbx_die_errno(SBX_EXIT_SYS, "unable to allocate memory");
	d->dev = st->st_dev;
	d->ino = st->st_ino;
	d->created = created;
	d->isdir = S_ISDIR(st->st_mode);
	d->lockfd = lockfd;
}

static void join(char *out, const char *prefix, const char *name)
{
	if (*prefix)
		snprintf(out, PATH_MAX, "%s/%s", prefix, name);
	else
		snprintf(out, PATH_MAX, "%s", name);
}

/* A placeholder where a literal denied path is missing: an empty file for
 * the last component, else an empty directory, owned by the command's
 * identity, never following a symlink. */
static void placeholder(struct ns_run *r, int dirfd, const char *prefix, const char *rel,
			const char *name, int dir)
{
	struct stat st;
	int fd = -1, rc;

	if (dir)
		rc = mkdirat(dirfd, name, 0555);
	else
		rc = fd = openat(dirfd, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0444);
	if (rc < 0) {
		/* Inside a directory we may not write to (another run's
		 * placeholder): protect that directory itself instead. */
		if ((errno == EACCES || errno == EROFS) && *prefix && fstatat(dirfd, ".", &st, 0) == 0) {
			add(r, DENY_PROTECT, prefix, &st, 0, lock_shared(dirfd, ".", &st));
			return;
		}
		sbx_die_errno(SBX_EXIT_SYS, "unable to create placeholder %s", rel);
	}
	if (fd >= 0)
		close(fd);
	if (r->root && fchownat(dirfd, name, r->uid, r->gid, AT_SYMLINK_NOFOLLOW) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to chown placeholder %s", rel);
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to stat placeholder %s", rel);
	add(r, DENY_PROTECT, rel, &st, 1, lock_shared(dirfd, name, &st));
}

static void match(struct ns_run *r, int dirfd, const char *prefix, char **comps, int i, int n, int literal);

/* Below a read-only protected path there is nothing left to do. */
static int covered(const struct ns_run *r, const char *rel)
{
	for (size_t i = 0; i < r->ndops; i++) {
		const char *p = r->dops[i].rel;
		size_t n = strlen(p);
		if (r->dops[i].kind == DENY_PROTECT &&
		    (!strcmp(p, ".") || (!strncmp(rel, p, n) && (rel[n] == '/' || rel[n] == '\0'))))
			return 1;
	}
	return 0;
}

/* One existing entry name of dirfd matched component i. */
static void step(struct ns_run *r, int dirfd, const char *prefix, const char *name,
		 char **comps, int i, int n, int literal)
{
	char rel[PATH_MAX];
	struct stat st;
	int last = i == n - 1, sub;

	join(rel, prefix, name);
	if (covered(r, rel))
		return;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to stat %s in the workspace", rel);
	if (S_ISLNK(st.st_mode))
		sbx_die(SBX_EXIT_POLICY, "unable to protect %s in the workspace: it is a symlink", rel);
	if (last || (i == n - 2 && !strcmp(comps[n - 1], "**"))) {
		if (S_ISREG(st.st_mode) && st.st_nlink > 1)
			sbx_die(SBX_EXIT_POLICY, "unable to protect %s in the workspace: it has %lu hard links",
				rel, (unsigned long)st.st_nlink);
		add(r, DENY_PROTECT, rel, &st, 0, lock_shared(dirfd, name, &st));
		return;
	}
	add(r, DENY_ANCESTOR, rel, &st, 0, -1);
	if (!S_ISDIR(st.st_mode))
		return;
	sub = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open %s in the workspace", rel);
	match(r, sub, rel, comps, i + 1, n, literal);
	close(sub);
}

static void match(struct ns_run *r, int dirfd, const char *prefix, char **comps, int i, int n, int literal)
{
	const char *c = comps[i];
	struct stat st;

	if (!strcmp(c, "**")) {
		/* Everything below prefix: the directory itself read-only. */
		if (fstatat(dirfd, ".", &st, 0) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to stat %s in the workspace", prefix);
		add(r, DENY_PROTECT, *prefix ? prefix : ".", &st, 0, lock_shared(dirfd, ".", &st));
		return;
	}
	if (!is_glob(c)) {
		if (fstatat(dirfd, c, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			step(r, dirfd, prefix, c, comps, i, n, literal);
		} else if (errno == ENOENT && literal) {
			char rel[PATH_MAX];
			join(rel, prefix, c);
			if (!covered(r, rel))
				placeholder(r, dirfd, prefix, rel, c, i < n - 1);
		} else if (errno != ENOENT && errno != ENOTDIR) {
			sbx_die_errno(SBX_EXIT_SYS, "unable to stat %s/%s in the workspace", prefix, c);
		}
		return;
	}
	int rfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	struct dirent *e;

	if (rfd < 0 || !(d = fdopendir(rfd)))
		sbx_die_errno(SBX_EXIT_SYS, "unable to read directory %s of the workspace", *prefix ? prefix : ".");
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fnmatch(c, e->d_name, 0) == 0)
			step(r, dirfd, prefix, e->d_name, comps, i, n, 0);
	}
	closedir(d);
}

static int cmp_dop(const void *a, const void *b)
{
	const struct deny_op *x = a, *y = b;
	int c = strcmp(x->rel, y->rel);
	return c ? c : (int)x->kind - (int)y->kind;
}

static int workspace_fd(struct ns_run *r)
{
	const struct mount_op *ws = &r->ops[r->ws];
	struct stat st;
	int fd;

	if (r->wsfd >= 0)
		return r->wsfd;
	fd = ws->fd >= 0 ? fcntl(ws->fd, F_DUPFD_CLOEXEC, 3) :
			   open(ws->src, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && (errno == ENOENT || errno == ENOTDIR || errno == ELOOP))
		sbx_die(SBX_EXIT_POLICY, "unable to open workspace %s: it was replaced (race)", ws->src);
	if (fd < 0 || fstat(fd, &st) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open workspace %s", ws->src);
	if (st.st_dev != ws->dev || st.st_ino != ws->ino)
		sbx_die(SBX_EXIT_POLICY, "unable to open workspace %s: it was replaced (race)", ws->src);
	r->wsfd = fd;
	return fd;
}

void ns_plan_deny(struct ns_run *r)
{
	const char *const *globs = r->deny ? r->deny : default_deny;
	size_t n = r->deny ? r->ndeny : 4;
	int wsfd = workspace_fd(r);

	for (size_t g = 0; g < n; g++) {
		char buf[PATH_MAX], *comps[MAX_COMPS], *save = NULL, *p;
		int nc = 0;
		snprintf(buf, sizeof buf, "%s", globs[g]);
		for (p = strtok_r(buf, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
			if (nc == MAX_COMPS)
				sbx_die_usage("--deny-write: invalid glob '%s': too deep", globs[g]);
			comps[nc++] = p;
		}
		match(r, wsfd, "", comps, 0, nc, 1);
	}
	qsort(r->dops, r->ndops, sizeof *r->dops, cmp_dop);
}

/* --tmp-in-workspace: /tmp and /dev/shm are directories of the workspace's
 * filesystem (so its project quota covers them): .sbx-tmp/tmp and
 * .sbx-tmp/shm, created on first use, kept between runs. */
static void scratch_dir(struct ns_run *r, int dirfd, const char *name, const char *path, struct stat *st)
{
	if (mkdirat(dirfd, name, 0700) == 0) {
		if (r->root && fchownat(dirfd, name, r->uid, r->gid, AT_SYMLINK_NOFOLLOW) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to chown %s", path);
	} else if (errno != EEXIST) {
		sbx_die_errno(SBX_EXIT_SYS, "unable to create %s", path);
	}
	if (fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to stat %s", path);
	if (!S_ISDIR(st->st_mode))
		sbx_die(SBX_EXIT_POLICY, "unable to use %s for /tmp: not a directory", path);
	if (st->st_uid != r->uid)
		sbx_die(SBX_EXIT_POLICY, "unable to use %s for /tmp: owned by uid %u, not %u",
			path, (unsigned)st->st_uid, (unsigned)r->uid);
}

void ns_plan_scratch(struct ns_run *r)
{
	static const char *const sub[] = { "tmp", "shm" };
	static const char *const dest[] = { "/tmp", "/dev/shm" };
	char path[PATH_MAX];
	struct stat st;
	int wsfd, base;

	if (!r->tmp_in_ws)
		return;
	wsfd = workspace_fd(r);
	snprintf(path, sizeof path, "%s/.sbx-tmp", r->ops[r->ws].src);
	scratch_dir(r, wsfd, ".sbx-tmp", path, &st);
	base = openat(wsfd, ".sbx-tmp", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (base < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open %s", path);
	for (int i = 0; i < 2; i++) {
		struct mount_op *op;
		snprintf(path, sizeof path, "%s/.sbx-tmp/%s", r->ops[r->ws].src, sub[i]);
		scratch_dir(r, base, sub[i], path, &st);
		op = ns_push_op(r);
		op->kind = MNT_SCRATCH;
		op->opt = "--tmp-in-workspace";
		op->src = strdup(path);
		op->dest = (char *)dest[i];
		op->dev = st.st_dev;
		op->ino = st.st_ino;
		op->isdir = 1;
		if (!op->src)
			sbx_die_errno(SBX_EXIT_SYS, "unable to allocate memory");
	}
	close(base);
}

/* Remove the placeholders again, if they are still the empty objects made
 * at the start (the sandbox, now gone, could not change them). */
void ns_cleanup_deny(struct ns_run *r)
{
	for (size_t i = r->ndops; i-- > 0;) {
		const struct deny_op *d = &r->dops[i];
		struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
					.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
		char parent[PATH_MAX], *slash, *name;
		struct stat st;
		int pfd;

		if (!d->created || d->lockfd < 0 || flock(d->lockfd, LOCK_EX | LOCK_NB) < 0)
			continue;
		snprintf(parent, sizeof parent, "%s", d->rel);
		slash = strrchr(parent, '/');
		if (slash) {
			*slash = '\0';
			name = slash + 1;
			pfd = (int)syscall(SYS_openat2, r->wsfd, parent, &how, sizeof how);
		} else {
			name = (char *)d->rel;
			pfd = dup(r->wsfd);
		}
		if (pfd < 0)
			continue;
		if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    st.st_dev == d->dev && st.st_ino == d->ino &&
		    (S_ISDIR(st.st_mode) || (S_ISREG(st.st_mode) && st.st_size == 0)))
			unlinkat(pfd, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
		close(pfd);
	}
}

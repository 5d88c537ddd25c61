/* The walk of the whole workspace that finds every git directory for
 * deny-write's git rule (denygit.c).
 *
 * Iterative, never recursive: each directory is read with getdents64 into
 * a buffer kept per depth, an entry's type comes from d_type (no stat per
 * entry), and each directory is opened below its parent with
 * RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS, so the walk never follows a link
 * and never leaves the workspace's mount. Bounds: SBX_DENY_MAX_DEPTH directories
 * deep and GIT_MAX_ENTRIES entries; at the start a bound hit or another
 * mount refuses the run, at the end a directory at the depth bound is
 * moved aside whole and anything else that stops the walk fails the run.
 * Inside a .git, objects/ and lfs/ are left out: object storage, never a
 * repository to git, and as big as the tree.
 *
 * The end walk reads again only what changed: the start walk keeps every
 * directory it read with the ctime it had before it was read (ctime: no
 * call can set it back). At the end a directory whose ctime is still that
 * one, and older than the start by more than the coarsest timestamp
 * granularity (2 s), holds the same names as then, so only its git names
 * are looked at; every other one is read again, and a directory new since
 * is walked whole. Only on local filesystems (a network filesystem's
 * cached attributes may lag): elsewhere the end walk reads everything.
 * The end walk's list is kept for the next run's start (sbx-ns: denykeep.c).
 *
 * A leaf is not read at all: where a directory's link count is 2 plus its
 * subdirectories (ext4, xfs, tmpfs), one with a count of 2 holds no
 * directory to walk into, so all the rule needs of it is whether git
 * could take it for a git directory or it holds a gitfile. Without a
 * ".git" and a "HEAD" (two failed lookups) it is neither, whatever else
 * it holds; with either, or named ".git", or one the start set had as a
 * git directory, or one the walk would have to open up, it is read as any
 * other. A checkout's directories of source files are such leaves. */
#include "deny.h"

#include "die.h"
#include "exitcodes.h"
#include "sys.h"
#include "walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define GIT_MAX_ENTRIES (1U << 22) /* entries read by one walk */
#define GRAIN_NS 2000000000LL      /* the coarsest timestamps (FAT: 2 s) */
#define TREE_DIRS_MAX (1U << 20)   /* directories a tree keeps (memory) */

struct lvl {
	int fd;
	char *buf;
	size_t pos, len, plen;
	size_t idx;             /* its entry in tree_out */
	unsigned flags;
};

struct tw {
	struct deny_walk *w;
	int wsfd;
	struct lvl *lv;
	unsigned nlv;
	size_t entries;
	int stop;               /* the entry bound was hit */
	char **known;           /* tree_in's paths, sorted */
	size_t nknown;
	int leaves;             /* link counts say which directories are leaves */
	uid_t euid;
	char path[PATH_MAX];
};

static int64_t ts(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000LL + t->tv_nsec;
}

static void cannot(struct deny_walk *w, const char *rel, const char *why)
{
	sbx_deny_failed(w, *rel ? rel : ".", why);
}

size_t sbx_deny_tree_add(struct deny_tree *t, const char *rel, const struct stat *st, unsigned flags,
		       unsigned depth)
{
	struct deny_dir *d;

	if (t->overflow || t->n >= TREE_DIRS_MAX) {
		t->overflow = 1;
		return 0;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		t->v = sbx_need(realloc(t->v, cap * sizeof *t->v));
		t->cap = cap;
	}
	d = &t->v[t->n];
	d->rel = sbx_need(strdup(rel));
	d->dev = st->st_dev;
	d->ino = st->st_ino;
	d->ctime = ts(&st->st_ctim);
	d->flags = flags;
	d->depth = depth;
	return t->n++;
}

void sbx_deny_tree_free(struct deny_tree *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].rel);
	free(t->v);
	t->v = NULL;
	t->n = t->cap = 0;
}

static void push(struct tw *t, unsigned depth, int fd, size_t plen, unsigned flags, unsigned tdepth)
{
	struct stat st;

	if (depth >= t->nlv) {
		t->lv = sbx_need(realloc(t->lv, (depth + 1) * sizeof *t->lv));
		t->lv[depth].buf = sbx_need(malloc(SBX_DIRBUF));
		t->nlv = depth + 1;
	}
	t->lv[depth].fd = fd;
	t->lv[depth].pos = t->lv[depth].len = 0;
	t->lv[depth].plen = plen;
	t->lv[depth].flags = flags;
	t->path[plen] = '\0';
	/* The ctime before the names are read: a change while they are read
	 * leaves a newer one, so the next walk reads them again. */
	if (fstat(fd, &st) < 0)
		memset(&st, 0, sizeof st);
	t->lv[depth].idx = sbx_deny_tree_add(&t->w->tree_out, t->path, &st, flags, tdepth);
}

/* A directory below its parent as an O_PATH fd, never through a link or
 * onto another mount; -1 if it is not to be walked (said, at the end). */
static int open_path(struct tw *t, int pfd, const char *name, const char *rel)
{
	struct deny_walk *w = t->w;
	int fd = sbx_openat2(pfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
			     RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH);

	if (fd >= 0)
		return fd;
	if (errno == EXDEV) {
		if (!w->check)
			sbx_die(SBX_EXIT_POLICY, "unable to check %s in the workspace for git directories: it is "
				"another mount (deny-write does not cross mounts; unmount it, or give --deny-write "
				"without .git/config)", rel);
		cannot(w, rel, "another mount");
		return -1;
	}
	/* Gone or replaced since it was listed (by the host: at the end the
	 * command is gone); what is there then is the end check's. */
	if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP)
		return -1;
	if (!w->check)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open %s in the workspace", rel);
	cannot(w, rel, strerror(errno));
	return -1;
}

/* The same directory open for reading (opened up first if the command
 * made it unreadable to its owner: sbx_deny_open_up). */
static int read_fd(struct tw *t, int pathfd, const char *rel)
{
	int fd;

	sbx_deny_open_up(t->w, pathfd);
	fd = openat(pathfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		if (!t->w->check)
			sbx_die_errno(SBX_EXIT_SYS, "unable to read directory %s of the workspace", rel);
		cannot(t->w, rel, strerror(errno));
	}
	return fd;
}

/* 1 if dir/name is there (any type), 0 if not, -1 if unknown: dir (a name
 * in pfd) replaced by a link or a mount since it was looked at included. */
static int has(int pfd, const char *dir, const char *name)
{
	char p[NAME_MAX + 8];
	int fd;

	snprintf(p, sizeof p, "%s/%s", dir, name);
	fd = sbx_openat2(pfd, p, O_PATH | O_NOFOLLOW | O_CLOEXEC,
			 RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH);
	if (fd >= 0) {
		close(fd);
		return 1;
	}
	return errno == ENOENT ? 0 : -1;
}

/* A leaf (see the top) that needs no reading, looked at from its parent
 * pfd without opening it: kept in tree_out as read, with the ctime it had
 * before its names were looked up. */
static int plain_leaf(struct tw *t, int pfd, const char *name, const char *rel, unsigned flags, unsigned tdepth)
{
	struct stat st;

	if (!t->leaves || !strcmp(name, ".git") || fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISDIR(st.st_mode) || st.st_nlink != 2)
		return 0;
	/* readable as it is: sbx_deny_open_up would change nothing */
	if (t->euid && (st.st_uid == t->euid ? (st.st_mode & 0700) != 0700 : (st.st_mode & 0055) != 0055))
		return 0;
	if ((t->w->check && sbx_git_was_dir(t->w->start, rel)) || has(pfd, name, ".git") || has(pfd, name, "HEAD"))
		return 0;
	sbx_deny_tree_add(&t->w->tree_out, rel, &st, flags, tdepth);
	return 1;
}

/* The subdirectory name of pfd open for reading, or -1: not to be walked,
 * or a leaf that needed no reading. */
static int open_sub(struct tw *t, int pfd, const char *name, const char *rel, unsigned flags, unsigned tdepth)
{
	int pathfd, fd;

	if (plain_leaf(t, pfd, name, rel, flags, tdepth))
		return -1;
	pathfd = open_path(t, pfd, name, rel);
	if (pathfd < 0)
		return -1;
	fd = read_fd(t, pathfd, rel);
	close(pathfd);
	return fd;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_known(const struct tw *t, const char *rel)
{
	const char *key = rel;

	return t->nknown && bsearch(&key, t->known, t->nknown, sizeof *t->known, cmp_str) != NULL;
}

/* Read every directory below fd (the directory rel, tdepth below the
 * workspace), fd included, and close it. With skip_known, a subdirectory
 * of fd that the last walk read is left to revisit(). */
static void walk_from(struct tw *t, int fd, const char *rel, unsigned tdepth, unsigned flags, int skip_known)
{
	struct deny_walk *w = t->w;
	unsigned depth = 0;

	snprintf(t->path, sizeof t->path, "%s", rel);
	push(t, 0, fd, strlen(t->path), flags, tdepth);
	for (;;) {
		struct lvl *L = &t->lv[depth];
		const struct sbx_dirent64 *d;
		size_t nl, plen;
		int type, sub;
		unsigned sflags;

		if (t->stop) {
			for (;; depth--) {
				close(t->lv[depth].fd);
				if (!depth)
					return;
			}
		}
		errno = 0;
		d = sbx_dirent_next(L->fd, L->buf, &L->len, &L->pos);
		if (!d) {
			t->path[L->plen] = '\0';
			if (errno) {
				if (!w->check)
					sbx_die_errno(SBX_EXIT_SYS, "unable to read directory %s of the workspace",
						      L->plen ? t->path : ".");
				cannot(w, t->path, strerror(errno));
			} else if (sbx_git_shaped(L->flags) || (w->check && sbx_git_was_dir(w->start, t->path))) {
				sbx_git_dir(w, t->wsfd, L->fd, t->path);
			}
			if (!w->tree_out.overflow)
				w->tree_out.v[L->idx].flags = L->flags;
			close(L->fd);
			if (depth == 0)
				return;
			depth--;
			continue;
		}
		if (++t->entries > GIT_MAX_ENTRIES) {
			if (!w->check)
				sbx_die(SBX_EXIT_POLICY, "unable to check the workspace for git directories: more than %u "
					"entries (give --deny-write without .git/config to drop git's rule)",
					GIT_MAX_ENTRIES);
			cannot(w, "", "more entries than the walk's bound");
			t->stop = 1;
			continue;
		}
		L->flags |= sbx_git_name_flag(d->d_name);
		nl = strlen(d->d_name);
		if (L->plen + nl + 2 >= sizeof t->path - NAME_MAX - 2) {
			t->path[L->plen] = '\0';
			if (!w->check)
				sbx_die(SBX_EXIT_POLICY, "unable to check below %s in the workspace: its path is too long",
					t->path);
			cannot(w, t->path, "a path too long");
			continue;
		}
		plen = L->plen;
		if (plen)
			t->path[plen++] = '/';
		memcpy(t->path + plen, d->d_name, nl + 1);
		plen += nl;
		type = d->d_type;
		if (type == DT_UNKNOWN) {
			struct stat st;
			if (fstatat(L->fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
		}
		if (!strcmp(d->d_name, ".git") && type != DT_DIR) {
			sbx_git_dotgit(w, L->fd, t->path);
			continue;
		}
		if (type != DT_DIR)
			continue;
		/* Object storage inside a .git is never a repository to git:
		 * it finds one from the user's working directory up, or
		 * through a commondir or gitfile (protected). */
		if ((L->flags & SBX_GIT_INGIT) && (!strcmp(d->d_name, "objects") || !strcmp(d->d_name, "lfs")))
			continue;
		if (!w->check && sbx_deny_covered(&w->found, t->path))
			continue;
		if (skip_known && depth == 0 && is_known(t, t->path))
			continue;
		if (tdepth + depth + 1 > SBX_DENY_MAX_DEPTH) {
			if (!w->check)
				sbx_die(SBX_EXIT_POLICY, "unable to check below %s in the workspace for git directories: "
					"deeper than %d directories", t->path, SBX_DENY_MAX_DEPTH);
			sbx_deny_candidate(w, t->path); /* moved aside whole */
			continue;
		}
		sflags = (L->flags & SBX_GIT_INGIT) |
			 (strcmp(d->d_name, ".git") ? 0 : SBX_GIT_DOTGIT | SBX_GIT_INGIT);
		sub = open_sub(t, L->fd, d->d_name, t->path, sflags, tdepth + depth + 1);
		if (sub < 0)
			continue;
		push(t, depth + 1, sub, plen, sflags, tdepth + depth + 1);
		depth++;
	}
}

static int unchanged(const struct deny_tree *in, const struct deny_dir *e, const struct stat *st)
{
	return S_ISDIR(st->st_mode) && st->st_dev == e->dev && st->st_ino == e->ino &&
	       ts(&st->st_ctim) == e->ctime && e->ctime < in->read_ns - GRAIN_NS;
}

/* The last walk's directories, again: those unchanged only for their git
 * names (a leaf: one fstatat), the others read again, what is new walked
 * whole. */
static void revisit(struct tw *t)
{
	const struct deny_tree *in = t->w->tree_in;
	struct deny_walk *w = t->w;
	int fds[SBX_DENY_MAX_DEPTH + 1];
	long skip_below = -1;

	for (int i = 0; i <= SBX_DENY_MAX_DEPTH; i++)
		fds[i] = -1;
	t->known = sbx_need(malloc(in->n * sizeof *t->known));
	for (size_t i = 0; i < in->n; i++)
		t->known[i] = in->v[i].rel;
	t->nknown = in->n;
	qsort(t->known, t->nknown, sizeof *t->known, cmp_str);
	for (size_t i = 0; i < in->n && !t->stop; i++) {
		const struct deny_dir *e = &in->v[i];
		const char *base = strrchr(e->rel, '/');
		unsigned d = e->depth, flags;
		int git = sbx_git_shaped(e->flags) || (w->check && sbx_git_was_dir(w->start, e->rel));
		struct stat st;
		int pathfd, rd;

		if (d > SBX_DENY_MAX_DEPTH || (skip_below >= 0 && d > (unsigned long)skip_below))
			continue;
		skip_below = -1;
		for (unsigned k = d; k <= SBX_DENY_MAX_DEPTH; k++) {
			if (fds[k] >= 0)
				close(fds[k]);
			fds[k] = -1;
		}
		base = base ? base + 1 : e->rel;
		if (d > 0 && fds[d - 1] < 0)
			continue; /* its parent is gone */
		/* A leaf directory that did not change: nothing to open. */
		if (d > 0 && !git && (i + 1 == in->n || in->v[i + 1].depth <= d) &&
		    fstatat(fds[d - 1], base, &st, AT_SYMLINK_NOFOLLOW) == 0 && unchanged(in, e, &st)) {
			sbx_deny_tree_add(&w->tree_out, e->rel, &st, e->flags, d);
			continue;
		}
		pathfd = d == 0 ? openat(t->wsfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC) :
				  open_path(t, fds[d - 1], base, e->rel);
		if (pathfd < 0)
			continue;
		if (fstat(pathfd, &st) < 0) {
			cannot(w, e->rel, strerror(errno));
			close(pathfd);
			continue;
		}
		if (unchanged(in, e, &st)) {
			sbx_deny_tree_add(&w->tree_out, e->rel, &st, e->flags, d);
			if ((st.st_mode & 0500) != 0500)
				sbx_deny_open_up(w, pathfd);
			if (git)
				sbx_git_dir(w, t->wsfd, pathfd, e->rel);
			fds[d] = pathfd;
			continue;
		}
		flags = !strcmp(base, ".git") ? SBX_GIT_DOTGIT | SBX_GIT_INGIT : e->flags & SBX_GIT_INGIT;
		rd = read_fd(t, pathfd, e->rel);
		if (rd < 0) {
			close(pathfd);
			continue;
		}
		if (!S_ISDIR(st.st_mode) || st.st_dev != e->dev || st.st_ino != e->ino) {
			/* Another directory at that name: all of it is new. */
			close(pathfd);
			walk_from(t, rd, e->rel, d, flags, 0);
			skip_below = d;
			continue;
		}
		fds[d] = pathfd;
		walk_from(t, rd, e->rel, d, flags, 1);
	}
	for (int i = 0; i <= SBX_DENY_MAX_DEPTH; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(t->known);
}

/* 1 if fd's filesystem is one of the n magic numbers in ok. */
static int fs_in(int fd, const long *ok, size_t n)
{
	struct statfs sf;

	if (fstatfs(fd, &sf) < 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((long)sf.f_type == ok[i])
			return 1;
	return 0;
}

/* Filesystems whose directories count 2 links plus one per subdirectory. */
static int counts_subdirs(int fd)
{
	static const long ok[] = { EXT4_SUPER_MAGIC, XFS_SUPER_MAGIC, TMPFS_MAGIC };

	return fs_in(fd, ok, sizeof ok / sizeof *ok);
}

/* Filesystems whose ctime the walk may trust to say a directory changed. */
static int local_fs(int fd)
{
	static const long ok[] = { EXT4_SUPER_MAGIC, XFS_SUPER_MAGIC, BTRFS_SUPER_MAGIC, TMPFS_MAGIC,
				   OVERLAYFS_SUPER_MAGIC, F2FS_SUPER_MAGIC, 0x2fc12fc1 /* zfs */ };

	return fs_in(fd, ok, sizeof ok / sizeof *ok);
}

void sbx_deny_git_walk(struct deny_walk *w, int wsfd)
{
	struct tw t = { .w = w, .wsfd = wsfd, .leaves = counts_subdirs(wsfd), .euid = geteuid() };
	struct timespec now;
	int fd;

	clock_gettime(CLOCK_REALTIME_COARSE, &now);
	w->tree_out.read_ns = ts(&now);
	if (w->tree_in && w->tree_in->n && !w->tree_in->overflow && local_fs(wsfd)) {
		revisit(&t);
	} else {
		fd = openat(wsfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			if (!w->check)
				sbx_die_errno(SBX_EXIT_SYS, "unable to read the workspace");
			cannot(w, "", strerror(errno));
		} else {
			walk_from(&t, fd, "", 0, 0, 0);
		}
	}
	for (unsigned i = 0; i < t.nlv; i++)
		free(t.lv[i].buf);
	free(t.lv);
}

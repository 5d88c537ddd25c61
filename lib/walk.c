#include "walk.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int sbx_statx(int dirfd, const char *path, int flags, unsigned mask, struct sbx_statx *st)
{
	return (int)syscall(SYS_statx, dirfd, path, flags, mask, st);
}

/* One open directory: its fd, the getdents64 buffer (kept and reused by
 * the next directory at the same depth) and the length of its path. */
struct level {
	int fd;
	char *buf;
	size_t pos, len;
	size_t pathlen;
};

struct walk {
	struct level *lv;
	unsigned nlv;           /* levels with a buffer */
	char *path;
	size_t pathcap;
	struct sbx_walk_err *err;
};

static int fail(struct walk *w, const char *step, size_t pathlen)
{
	int e = errno;
	size_t n = pathlen < sizeof w->err->path - 1 ? pathlen : sizeof w->err->path - 1;

	w->err->err = e;
	w->err->step = step;
	memcpy(w->err->path, w->path ? w->path : "", w->path ? n : 0);
	w->err->path[w->path ? n : 0] = '\0';
	w->err->pathlen = w->path ? n : 0;
	return SBX_WALK_ESYS;
}

static int path_append(struct walk *w, size_t at, const char *name, size_t *newlen)
{
	size_t nl = strlen(name), need = at + (at ? 1 : 0) + nl + 1;

	if (need > w->pathcap) {
		size_t cap = w->pathcap ? w->pathcap : 256;
		char *p;
		while (cap < need)
			cap *= 2;
		p = realloc(w->path, cap);
		if (!p)
			return -1;
		w->path = p;
		w->pathcap = cap;
	}
	if (at)
		w->path[at++] = '/';
	memcpy(w->path + at, name, nl + 1);
	*newlen = at + nl;
	return 0;
}

static int push(struct walk *w, unsigned depth, int fd, size_t pathlen)
{
	if (depth >= w->nlv) {
		struct level *n = realloc(w->lv, (depth + 1) * sizeof *n);
		if (!n)
			return -1;
		w->lv = n;
		n[depth].buf = malloc(SBX_DIRBUF);
		if (!n[depth].buf)
			return -1;
		w->nlv = depth + 1;
	}
	w->lv[depth].fd = fd;
	w->lv[depth].pos = w->lv[depth].len = 0;
	w->lv[depth].pathlen = pathlen;
	return 0;
}

static int stat_fd(int fd, unsigned mask, struct sbx_statx *st)
{
	return sbx_statx(fd, "", AT_EMPTY_PATH, mask, st);
}

const struct sbx_dirent64 *sbx_dirent_next(int fd, char *buf, size_t *len, size_t *pos)
{
	for (;;) {
		const struct sbx_dirent64 *d;
		if (*pos >= *len) {
			long n = syscall(SYS_getdents64, fd, buf, SBX_DIRBUF);
			if (n <= 0) {
				if (n == 0)
					errno = 0;
				return NULL;
			}
			*len = (size_t)n;
			*pos = 0;
		}
		d = (const struct sbx_dirent64 *)(const void *)(buf + *pos);
		*pos += d->d_reclen;
		if (d->d_name[0] != '.' || (d->d_name[1] != '\0' && (d->d_name[1] != '.' || d->d_name[2] != '\0')))
			return d;
	}
}

static int run(struct walk *w, int rootfd, unsigned mask, sbx_walk_fn fn, void *ctx)
{
	unsigned depth = 0;
	int fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return fail(w, "open", 0);
	if (push(w, 0, fd, 0) < 0) {
		close(fd);
		return fail(w, "open", 0);
	}
	for (;;) {
		struct level *L = &w->lv[depth];
		const struct sbx_dirent64 *d;
		struct sbx_walk_entry e;
		struct sbx_statx st;
		size_t plen;
		int type, r, cfd = -1;

		errno = 0;
		d = sbx_dirent_next(L->fd, L->buf, &L->len, &L->pos);
		if (!d && errno)
			return fail(w, "read directory", L->pathlen);
		if (!d) {
			close(L->fd);
			L->fd = -1;
			if (depth == 0)
				return 0;
			depth--;
			continue;
		}
		if (path_append(w, L->pathlen, d->d_name, &plen) < 0)
			return fail(w, "open", L->pathlen);

		type = d->d_type;
		if (type == DT_UNKNOWN) {
			struct stat sb;
			if (fstatat(L->fd, d->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
				return fail(w, "stat", plen);
			type = S_ISDIR(sb.st_mode) ? DT_DIR : S_ISREG(sb.st_mode) ? DT_REG : DT_UNKNOWN;
		}
		if (type == DT_DIR)
			cfd = openat(L->fd, d->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		else if (type == DT_REG)
			cfd = openat(L->fd, d->d_name,
				     O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (cfd >= 0) {
			if (stat_fd(cfd, mask, &st) < 0) {
				close(cfd);
				return fail(w, "stat", plen);
			}
		} else {
			/* Not opened, or replaced since it was listed (now a
			 * link: ELOOP, no longer a directory: ENOTDIR): show
			 * what the name is now, never following it. */
			if ((type == DT_DIR || type == DT_REG) && errno != ELOOP &&
			    errno != ENOTDIR)
				return fail(w, "open", plen);
			if (sbx_statx(L->fd, d->d_name, AT_SYMLINK_NOFOLLOW, mask, &st) < 0)
				return fail(w, "stat", plen);
			if (S_ISDIR(st.stx_mode) || S_ISREG(st.stx_mode)) {
				errno = EAGAIN; /* it keeps changing under us */
				return fail(w, "open", plen);
			}
		}
		e.path = w->path;
		e.pathlen = plen;
		e.name = d->d_name;
		e.dirfd = L->fd;
		e.fd = cfd;
		e.st = &st;
		e.depth = depth + 1;
		r = fn(ctx, &e);
		if (r != 0 && r != SBX_WALK_PRUNE) {
			if (cfd >= 0)
				close(cfd);
			return r;
		}
		if (cfd >= 0 && S_ISDIR(st.stx_mode) && r == 0) {
			if (depth + 1 > SBX_WALK_MAX_DEPTH) {
				close(cfd);
				memcpy(w->err->path, w->path, plen < 4095 ? plen : 4095);
				w->err->path[plen < 4095 ? plen : 4095] = '\0';
				w->err->pathlen = plen < 4095 ? plen : 4095;
				w->err->err = 0;
				w->err->step = "descend into";
				return SBX_WALK_ETOODEEP;
			}
			if (push(w, depth + 1, cfd, plen) < 0) {
				close(cfd);
				return fail(w, "open", plen);
			}
			depth++;
			continue;
		}
		if (cfd >= 0)
			close(cfd);
	}
}

int sbx_walk(int rootfd, unsigned mask, sbx_walk_fn fn, void *ctx,
	     struct sbx_walk_err *err)
{
	struct walk w = { .err = err };
	int r;

	memset(err, 0, sizeof *err);
	mask |= SBX_STATX_TYPE | SBX_STATX_MODE | SBX_STATX_NLINK | SBX_STATX_MNT_ID;
	r = run(&w, rootfd, mask, fn, ctx);
	for (unsigned i = 0; i < w.nlv; i++) {
		/* A walk that stopped early leaves its directories open. */
		if (w.lv[i].fd >= 0)
			close(w.lv[i].fd);
		free(w.lv[i].buf);
	}
	free(w.lv);
	free(w.path);
	return r;
}

/* What a change set changes: its upper directory read without following a
 * link (each name opened relative to its parent, O_NOFOLLOW), against the
 * workspace (the lower layer). Overlay's internals become what they mean:
 * a whiteout (a 0/0 character device, or a file with the
 * user.overlay.whiteout xattr) a deletion, an opaque directory
 * (user.overlay.opaque=y) the deletion of everything of the workspace's
 * directory that the upper one does not hold. Then the checks apply makes
 * before anything is written (cs_check). */
#include "changes.h"

#include "die.h"
#include "digest.h"
#include "exitcodes.h"
#include "sys.h"
#include "walk.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#define RESOLVE (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

const char *cs_kind(enum kind k)
{
	static const char *const n[] = { "added", "modified", "deleted", "type-changed", "mode-changed", "symlink" };
	return n[k];
}

static const struct base *find_base(const struct cs *c, const char *path)
{
	size_t lo = 0, hi = c->nbase;

	while (lo < hi) {
		size_t m = (lo + hi) / 2;
		int r = strcmp(path, c->base[m].path);
		if (!r)
			return &c->base[m];
		if (r < 0)
			hi = m;
		else
			lo = m + 1;
	}
	return NULL;
}

static struct change *push(struct cs *c, const char *path, enum kind k)
{
	struct change *e;

	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 1024;
		c->v = sbx_need(realloc(c->v, c->cap * sizeof *c->v));
	}
	e = &c->v[c->n++];
	memset(e, 0, sizeof *e);
	e->path = sbx_need(strdup(path));
	e->kind = k;
	e->base = find_base(c, path);
	return e;
}

static char *join(const char *prefix, const char *name)
{
	return *prefix ? sbx_needf("%s/%s", prefix, name) : sbx_need(strdup(name));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of a directory, sorted, "." and ".." left out. */
static char **names(int fd, size_t *n, const char *path)
{
	char *buf = sbx_need(malloc(SBX_DIRBUF));
	size_t len = 0, pos = 0, cap = 0;
	const struct sbx_dirent64 *d;
	char **v = NULL;

	*n = 0;
	errno = 0;
	while ((d = sbx_dirent_next(fd, buf, &len, &pos))) {
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			v = sbx_need(realloc(v, cap * sizeof *v));
		}
		v[(*n)++] = sbx_need(strdup(d->d_name));
	}
	if (errno)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read directory %s", cs_q(path));
	free(buf);
	if (*n)
		qsort(v, *n, sizeof *v, cmp_str);
	return v;
}

static int has_xattr(int fd, const char *name, int want_y)
{
	char v[4];
	ssize_t n = fgetxattr(fd, name, v, sizeof v);

	if (n < 0)
		return 0;
	return !want_y || (n == 1 && v[0] == 'y');
}

static void hash_fd(int fd, char *out, const char *path)
{
	unsigned char d[SBX_SHA256_LEN];

	if (sbx_sha256_fd(fd, d))
		sbx_die_errno(SBX_EXIT_SYS, "unable to read %s", cs_q(path));
	sbx_digest_hex(d, sizeof d, out);
}

static void hash_str(const char *s, char *out)
{
	unsigned char d[SBX_SHA256_LEN];
	struct sbx_sha256 h;

	sbx_sha256_init(&h);
	sbx_sha256_update(&h, s, strlen(s));
	sbx_sha256_final(&h, d);
	sbx_digest_hex(d, sizeof d, out);
}

static char *read_link(int dirfd, const char *name, const char *path)
{
	char buf[4096];
	ssize_t n = readlinkat(dirfd, name, buf, sizeof buf - 1);

	if (n < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read symlink %s", cs_q(path));
	buf[n] = '\0';
	return sbx_need(strdup(buf));
}

/* The two files hold the same bytes. */
static int same_bytes(int a, int b)
{
	static char x[65536], y[65536];
	for (;;) {
		ssize_t n = read(a, x, sizeof x), m;
		if (n < 0)
			return 0;
		m = n ? read(b, y, n) : read(b, y, 1);
		if (m != n || memcmp(x, y, n))
			return 0;
		if (!n)
			return 1;
	}
}

static void scan_dir(struct cs *c, int up, int low, const char *prefix, int opaque);

/* What e becomes: the upper object's type, bits and owner. */
static void become(struct change *e, const struct stat *st)
{
	e->mode = st->st_mode;
	e->uid = st->st_uid;
	e->gid = st->st_gid;
}

/* Everything of the workspace's directory low that the upper one (its sorted
 * names) does not hold: deleted, for an opaque directory. */
static void opaque_deletes(struct cs *c, int low, const char *prefix, char **un, size_t nu,
			   const struct base *dirbase)
{
	size_t nl, j = 0;
	char **ln = names(low, &nl, prefix);

	for (size_t i = 0; i < nl; i++) {
		while (j < nu && strcmp(un[j], ln[i]) < 0)
			j++;
		if (j == nu || strcmp(un[j], ln[i])) {
			char *p = join(prefix, ln[i]);
			struct stat st;
			struct change *e = push(c, p, K_DELETED);
			if (!e->base) {
				e->base = dirbase;
				e->opaque_child = 1;
			}
			if (!fstatat(low, ln[i], &st, AT_SYMLINK_NOFOLLOW))
				e->size = 0;
			free(p);
		}
		free(ln[i]);
	}
	free(ln);
}

static void scan_entry(struct cs *c, int up, int low, const char *prefix, const char *name, int opaque)
{
	char *path = join(prefix, name);
	struct stat st, ls;
	int have_low = low >= 0 && !fstatat(low, name, &ls, AT_SYMLINK_NOFOLLOW);
	struct change *e;
	int fd;

	if (fstatat(up, name, &st, AT_SYMLINK_NOFOLLOW))
		sbx_die_errno(SBX_EXIT_SYS, "unable to stat %s in the change set", cs_q(path));
	if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) {
		if (have_low)
			push(c, path, K_DELETED);
		goto out;
	}
	if (S_ISREG(st.st_mode)) {
		int same_size = have_low && S_ISREG(ls.st_mode) && ls.st_size == st.st_size;
		/* apply needs the bytes only to tell a whiteout or a copy-up
		 * without a change; its sha256 comes when it is asked for */
		if (c->lazy_sha && st.st_size > 0 && !same_size) {
			e = push(c, path, !have_low ? K_ADDED : S_ISREG(ls.st_mode) ? K_MODIFIED : K_TYPE);
			become(e, &st);
			e->size = st.st_size;
			if (st.st_nlink > 1)
				e->refused = "a hard link";
			goto out;
		}
		fd = openat(up, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to open %s in the change set", cs_q(path));
		if (st.st_size == 0 && (has_xattr(fd, "user.overlay.whiteout", 0) ||
					has_xattr(fd, "trusted.overlay.whiteout", 0))) {
			close(fd);
			if (have_low)
				push(c, path, K_DELETED);
			goto out;
		}
		if (same_size) {
			int lf = openat(low, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
			int same = lf >= 0 && same_bytes(fd, lf);
			if (lf >= 0)
				close(lf);
			lseek(fd, 0, SEEK_SET);
			if (same && (ls.st_mode & 07777) == (st.st_mode & 07777)) {
				close(fd);
				goto out;
			}
			e = push(c, path, same ? K_MODE : K_MODIFIED);
		} else {
			e = push(c, path, !have_low ? K_ADDED : S_ISREG(ls.st_mode) ? K_MODIFIED : K_TYPE);
		}
		become(e, &st);
		e->size = st.st_size;
		hash_fd(fd, e->sha, path);
		close(fd);
		if (st.st_nlink > 1)
			e->refused = "a hard link";
		goto out;
	}
	if (S_ISLNK(st.st_mode)) {
		char *t = read_link(up, name, path);
		if (have_low && S_ISLNK(ls.st_mode)) {
			char *lt = read_link(low, name, path);
			int same = !strcmp(t, lt);
			free(lt);
			if (same) {
				free(t);
				goto out;
			}
		}
		e = push(c, path, have_low && !S_ISLNK(ls.st_mode) ? K_TYPE : K_SYMLINK);
		become(e, &st);
		e->size = strlen(t);
		e->target = t;
		hash_str(t, e->sha);
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		int lowdir = have_low && S_ISDIR(ls.st_mode), sub = -1, op;
		fd = openat(up, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to open %s in the change set", cs_q(path));
		op = opaque || has_xattr(fd, "user.overlay.opaque", 1) || has_xattr(fd, "trusted.overlay.opaque", 1);
		if (!lowdir || (ls.st_mode & 07777) != (st.st_mode & 07777)) {
			e = push(c, path, !have_low ? K_ADDED : lowdir ? K_MODE : K_TYPE);
			become(e, &st);
		}
		if (lowdir)
			sub = openat(low, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		scan_dir(c, fd, sub, path, op);
		if (sub >= 0)
			close(sub);
		close(fd);
		goto out;
	}
	e = push(c, path, have_low ? K_TYPE : K_ADDED);
	become(e, &st);
	e->refused = S_ISFIFO(st.st_mode) ? "a fifo" : S_ISSOCK(st.st_mode) ? "a socket" : "a device node";
out:
	free(path);
}

static void scan_dir(struct cs *c, int up, int low, const char *prefix, int opaque)
{
	size_t n;
	char **v = names(up, &n, *prefix ? prefix : "upper");

	if (opaque && low >= 0)
		opaque_deletes(c, low, prefix, v, n, find_base(c, prefix));
	for (size_t i = 0; i < n; i++) {
		scan_entry(c, up, low, prefix, v[i], opaque);
		free(v[i]);
	}
	free(v);
}

static int cmp_change(const void *a, const void *b)
{
	return strcmp(((const struct change *)a)->path, ((const struct change *)b)->path);
}

void cs_scan(struct cs *c)
{
	scan_dir(c, c->upfd, c->wsfd, "", 0);
	/* one order for every listing: a directory before what it holds */
	qsort(c->v, c->n, sizeof *c->v, cmp_change);
}

/* The workspace's directory that holds path, opened without following a
 * link (RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS, a long
 * path a part at a time); *name its last part. -1 with errno. */
int cs_ws_parent(struct cs *c, const char *path, const char **name)
{
	return cs_parent(c->wsfd, path, name);
}

int cs_parent(int root, const char *path, const char **name)
{
	const char *s = strrchr(path, '/');
	char part[4096];
	int fd = -1, cur = root;

	*name = s ? s + 1 : path;
	if (!s)
		return fcntl(root, F_DUPFD_CLOEXEC, 0);
	for (const char *p = path; p < s; ) {
		size_t l = s - p;
		int nfd;
		if (l >= sizeof part) {
			l = sizeof part - 1;
			while (l && p[l] != '/')
				l--;
			if (!l) {
				errno = ENAMETOOLONG;
				return -1;
			}
		}
		memcpy(part, p, l);
		part[l] = '\0';
		nfd = sbx_openat2(cur, part, O_PATH | O_DIRECTORY | O_CLOEXEC, RESOLVE);
		if (fd >= 0)
			close(fd);
		if (nfd < 0)
			return -1;
		fd = cur = nfd;
		p += l;
		if (*p == '/')
			p++;
	}
	return fd;
}

static int same_new(struct cs *c, struct change *e, int pfd, const char *name, const struct stat *ws)
{
	if (e->kind == K_DELETED)
		return 0;
	if ((ws->st_mode & S_IFMT) != (e->mode & S_IFMT) || (ws->st_mode & 07777) != (e->mode & 07777))
		return 0;
	if (S_ISDIR(ws->st_mode))
		return 1;
	if (S_ISLNK(ws->st_mode)) {
		char *t = read_link(pfd, name, e->path);
		int same = !strcmp(t, e->target);
		free(t);
		return same;
	}
	if (S_ISREG(ws->st_mode) && (uint64_t)ws->st_size == e->size) {
		char sha[65];
		int fd;
		if (!e->sha[0]) {
			fd = cs_open_below(c->upfd, e->path, O_RDONLY | O_NONBLOCK);
			if (fd < 0)
				sbx_die_errno(SBX_EXIT_SYS, "unable to open %s in the change set", cs_q(e->path));
			hash_fd(fd, e->sha, e->path);
			close(fd);
		}
		fd = openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			return 0;
		hash_fd(fd, sha, e->path);
		close(fd);
		return !strcmp(sha, e->sha);
	}
	return 0;
}

static int base_matches(const struct base *b, const struct stat *st)
{
	int t = S_ISREG(st->st_mode) ? B_FILE : S_ISDIR(st->st_mode) ? B_DIR : S_ISLNK(st->st_mode) ? B_SYMLINK : B_OTHER;

	if ((int)b->type != t || b->dev != (uint64_t)st->st_dev || b->ino != (uint64_t)st->st_ino)
		return 0;
	/* a directory's size and times move with what it holds: what it is, is
	 * its identity */
	if (t == B_DIR)
		return 1;
	return b->size == (uint64_t)st->st_size &&
	       b->mtime_ns == (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec &&
	       b->ctime_ns == (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

/* The workspace directory of the last path checked, kept while paths of
 * one directory come in a row. */
static struct {
	char *path;
	int fd;
} pc = { NULL, -1 };

static int check_parent(struct cs *c, const char *path, const char **name)
{
	const char *slash = strrchr(path, '/');
	size_t plen = slash ? (size_t)(slash - path) : 0;

	*name = slash ? slash + 1 : path;
	if (pc.fd >= 0 && strlen(pc.path) == plen && !strncmp(pc.path, path, plen))
		return pc.fd;
	if (pc.fd >= 0)
		close(pc.fd);
	free(pc.path);
	pc.path = NULL;
	pc.fd = cs_ws_parent(c, path, name);
	if (pc.fd >= 0)
		pc.path = sbx_need(strndup(path, plen));
	return pc.fd;
}

/* Why apply refuses e, or NULL; sets e->done. */
static const char *check(struct cs *c, struct change *e)
{
	const char *name, *g = NULL;
	struct stat st;
	int pfd, have;

	if ((e->prot = cs_protected(e->path, &e->prot_after)))
		return "deny-write";
	name = strrchr(e->path, '/') ? strrchr(e->path, '/') + 1 : e->path;
	if (!strncmp(name, CS_TMP, strlen(CS_TMP)))
		return "a name apply writes through (.sbx-changes.*)";
	if (e->refused)
		return e->refused;
	if (e->mode & 07000)
		return "a setuid, setgid or sticky bit";
	pfd = check_parent(c, e->path, &name);
	if (pfd < 0) {
		if (errno == ELOOP || errno == EXDEV)
			return "a symlink in the workspace on its path";
		if (errno != ENOENT && errno != ENOTDIR)
			sbx_die_errno(SBX_EXIT_SYS, "unable to open the directory of %s in the workspace", cs_q(e->path));
		have = 0;
	} else {
		have = !fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW);
	}
	if (!have && e->kind == K_DELETED) {
		e->done = 1;
		goto out;
	}
	if (have && same_new(c, e, pfd, name, &st)) {
		e->done = 1;
		goto out;
	}
	g = NULL;
	if (!e->base)
		g = "conflict: no base line for it in base.jsonl";
	else if (e->base->type == B_CHANGED)
		g = "conflict: the workspace changed it while the sandbox ran";
	else if (e->base->type == B_NONE && have)
		g = "conflict: the workspace has it now, it had none";
	else if (e->base->type != B_NONE && !have && e->kind != K_TYPE)
		g = "conflict: the workspace no longer has it";
	else if (e->base->type != B_NONE && have && !e->opaque_child && !base_matches(e->base, &st))
		g = "conflict: the workspace changed it since the change set was based on it";
out:
	return g;
}

void cs_check(struct cs *c)
{
	const char *dir_refused = NULL;

	if (c->n)
		cs_protect_scan(c);
	for (size_t i = 0; i < c->n; i++) {
		struct change *e = &c->v[i];
		/* what lies in a refused directory goes nowhere either */
		if (dir_refused && !strncmp(e->path, dir_refused, strlen(dir_refused)) &&
		    e->path[strlen(dir_refused)] == '/') {
			e->refused = "inside a refused directory";
			continue;
		}
		e->refused = check(c, e);
		if (e->refused && S_ISDIR(e->mode) && e->kind != K_MODE)
			dir_refused = e->path;
	}
	if (pc.fd >= 0)
		close(pc.fd);
	free(pc.path);
	pc.path = NULL;
	pc.fd = -1;
}

int cs_open_below(int root, const char *path, int flags)
{
	const char *name;
	int pfd = cs_parent(root, path, &name), fd;

	if (pfd < 0)
		return -1;
	fd = openat(pfd, name, flags | O_NOFOLLOW | O_CLOEXEC);
	close(pfd);
	return fd;
}

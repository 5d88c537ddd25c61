/* Apply: the reviewed bytes of a change set into the workspace. Every
 * workspace directory is opened beneath the workspace without following a
 * link (cs_ws_parent). In a first pass directories are made (a parent
 * before its children) and every new file and symlink is written under a
 * temporary name (CS_TMP and a number) in its directory; one syncfs makes
 * them durable; a second pass renames each over its name, in path order;
 * deletions come last, the deepest first; a last syncfs. So a kill leaves
 * each path old or new, the next apply removes the temporary names a
 * killed one left and finds what is new already "done"; a write that fails
 * (a full disk) removes every temporary file and replaces nothing. Nothing
 * is written when anything is refused, unless --skip-refused, nor when
 * the change set a whole apply ends by removing could not be removed
 * (asked first, discard.c); a removal that still fails is its own exit
 * code, apart from a failed write's. Root's apply gives each object the
 * owner it has in the change set (the sandbox's uid), so that a workspace
 * holds what the kernel's merge showed. */
#include "changes.h"

#include "die.h"
#include "exitcodes.h"
#include "fd.h"
#include "json.h"
#include "walk.h"

#include <errno.h>
#include <stdnoreturn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *ws_name;  /* the workspace, named in a failure's message */
static struct cs *cur;

static void drop_tmps(void);

static noreturn void fail_msg(int eno, const char *step, const char *path, const char *state)
{
	drop_tmps();
	errno = eno;
	sbx_die_errno(SBX_EXIT_SYS, "unable to %s %s in %s; %s; to fix: clear the cause and run apply again",
		      step, cs_q(path), cs_q2(ws_name), state);
}

static noreturn void fail(int eno, const char *step, const char *path)
{
	fail_msg(eno, step, path, "what came before it is done, the rest not");
}

/* Remove name below dirfd in the workspace, or fail. */
static void rm_tree(int dirfd, const char *name, const char *path)
{
	const char *step = cs_rm_tree(dirfd, name);

	if (step)
		fail(errno, step, path);
}

static void tmpname(char *b, size_t sz, long k)
{
	snprintf(b, sz, CS_TMP "%ld", k);
}

/* The directory of e, kept open while its entries come in a row. */
struct dirc {
	char *path;
	int fd;
};

static long next_tmp;  /* temporary names are numbered across the apply */

/* The directories cleaned of a killed apply's leftovers (a set of paths). */
static struct {
	char **v;
	size_t cap, n;
} cleaned;

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

/* 1 the first time path is seen. */
static int first_time(const char *path)
{
	size_t i;

	if (2 * (cleaned.n + 1) > cleaned.cap) {
		size_t cap = cleaned.cap ? 2 * cleaned.cap : 1024;
		char **v = sbx_need(calloc(cap, sizeof *v));
		for (size_t k = 0; k < cleaned.cap; k++) {
			if (!cleaned.v[k])
				continue;
			for (i = hash(cleaned.v[k]) & (cap - 1); v[i]; i = (i + 1) & (cap - 1))
				;
			v[i] = cleaned.v[k];
		}
		free(cleaned.v);
		cleaned.v = v;
		cleaned.cap = cap;
	}
	for (i = hash(path) & (cleaned.cap - 1); cleaned.v[i]; i = (i + 1) & (cleaned.cap - 1))
		if (!strcmp(cleaned.v[i], path))
			return 0;
	cleaned.v[i] = sbx_need(strdup(path));
	cleaned.n++;
	return 1;
}

static int dir_of(struct cs *c, struct dirc *d, const struct change *e, const char **name, int clean)
{
	const char *slash = strrchr(e->path, '/');
	size_t plen = slash ? (size_t)(slash - e->path) : 0;

	*name = slash ? slash + 1 : e->path;
	if (d->fd >= 0 && strlen(d->path) == plen && !strncmp(d->path, e->path, plen))
		return d->fd;
	if (d->fd >= 0)
		close(d->fd);
	free(d->path);
	d->path = sbx_need(strndup(e->path, plen));
	d->fd = cs_ws_parent(c, e->path, name);
	if (d->fd < 0)
		fail(errno, "open the directory of", e->path);
	if (clean && first_time(d->path)) {
		/* what a killed apply left here */
		char *buf = sbx_need(malloc(SBX_DIRBUF));
		size_t len = 0, pos = 0;
		const struct sbx_dirent64 *de;
		int rfd = openat(d->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		while (rfd >= 0 && (de = sbx_dirent_next(rfd, buf, &len, &pos)))
			if (!strncmp(de->d_name, CS_TMP, strlen(CS_TMP)))
				unlinkat(d->fd, de->d_name, 0);
		if (rfd >= 0)
			close(rfd);
		free(buf);
	}
	return d->fd;
}

static void dir_done(struct dirc *d)
{
	if (d->fd >= 0)
		close(d->fd);
	free(d->path);
	d->path = NULL;
	d->fd = -1;
}

/* Every temporary file written so far, removed (a failed first pass). */
static void drop_tmps(void)
{
	struct dirc d = { NULL, -1 };
	char t[64];

	if (!cur)
		return;
	for (size_t i = 0; i < cur->n; i++) {
		struct change *e = &cur->v[i];
		const char *name;
		if (e->tmp < 0)
			continue;
		tmpname(t, sizeof t, e->tmp);
		if (dir_of(cur, &d, e, &name, 0) >= 0)
			unlinkat(d.fd, t, 0);
		e->tmp = -1;
	}
	dir_done(&d);
	cur = NULL;
}

/* The upper object of e, opened beneath upper without following a link
 * (its directory kept open while its entries come in a row), and its stat. */
static int open_upper(struct cs *c, struct dirc *u, const struct change *e, struct stat *st)
{
	const char *slash = strrchr(e->path, '/'), *name = slash ? slash + 1 : e->path;
	size_t plen = slash ? (size_t)(slash - e->path) : 0;
	int fd = -1;

	if (u->fd < 0 || strlen(u->path) != plen || strncmp(u->path, e->path, plen)) {
		dir_done(u);
		u->fd = cs_parent(c->upfd, e->path, &name);
		if (u->fd >= 0)
			u->path = sbx_need(strndup(e->path, plen));
	}
	if (u->fd >= 0)
		fd = openat(u->fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	/* the change set may have been edited since the check: what is read
	 * must still be the regular file the check saw */
	if (fd < 0 || fstat(fd, st) || !S_ISREG(st->st_mode) || (uint64_t)st->st_size != e->size ||
	    st->st_nlink > 1) {
		drop_tmps();
		sbx_die(SBX_EXIT_POLICY, "%s changed in change set %s while it was applied; no file was "
			"replaced; to fix: review it again and rerun apply", cs_q(e->path), cs_q2(c->dir));
	}
	return fd;
}

static int copy(int in, int out, uint64_t left)
{
	static char buf[1 << 16];

	while (left) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, left, 0);
		if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) {
			n = read(in, buf, left < sizeof buf ? left : sizeof buf);
			if (n > 0 && sbx_write_all(out, buf, n))
				n = -1;
		}
		if (n < 0)
			return -1;
		if (!n)
			break;
		left -= n;
	}
	return 0;
}

/* First pass: e's new content under a temporary name. */
static void write_tmp(struct cs *c, struct dirc *d, struct dirc *u, struct change *e)
{
	const char *name;
	int pfd = dir_of(c, d, e, &name, 1), in, out;
	struct stat st;
	char t[64];

	tmpname(t, sizeof t, next_tmp);
	if (S_ISLNK(e->mode)) {
		if (symlinkat(e->target, pfd, t))
			fail_msg(errno, "write", e->path, "no file was replaced");
		e->tmp = next_tmp++;
		if (getuid() == 0 && fchownat(pfd, t, e->uid, e->gid, AT_SYMLINK_NOFOLLOW))
			fail_msg(errno, "write", e->path, "no file was replaced");
		return;
	}
	in = open_upper(c, u, e, &st);
	out = openat(pfd, t, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		fail_msg(errno, "write", e->path, "no file was replaced");
	e->tmp = next_tmp++;
	if (copy(in, out, e->size) || (getuid() == 0 && fchown(out, e->uid, e->gid)) || fchmod(out, e->mode & 0777))
		fail_msg(errno, "write", e->path, "no file was replaced");
	{
		struct timespec ts[2] = { st.st_atim, st.st_mtim };
		futimens(out, ts);
	}
	if (close(out))
		fail_msg(errno, "write", e->path, "no file was replaced");
	close(in);
}

static void put_dir(struct cs *c, struct dirc *d, const struct change *e)
{
	const char *name;
	int pfd = dir_of(c, d, e, &name, 1), fd;
	struct stat st;

	if (!fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) && !S_ISDIR(st.st_mode) && unlinkat(pfd, name, 0))
		fail(errno, "remove", e->path);
	if (mkdirat(pfd, name, 0700) && errno != EEXIST)
		fail(errno, "create directory", e->path);
	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || (getuid() == 0 && fchown(fd, e->uid, e->gid)) || fchmod(fd, e->mode & 0777))
		fail(errno, "set the mode of", e->path);
	close(fd);
}

/* Second pass: the temporary name over e's. */
static void put(struct cs *c, struct dirc *d, struct change *e)
{
	const char *name;
	int pfd = dir_of(c, d, e, &name, 0);
	struct stat st;
	char t[64];

	tmpname(t, sizeof t, e->tmp);
	/* a directory the file replaces goes first (rename cannot) */
	if (e->kind == K_TYPE && !fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode))
		rm_tree(pfd, name, e->path);
	if (renameat(pfd, t, pfd, name))
		fail(errno, "rename into place", e->path);
	e->tmp = -1;
}

static void report(struct cs *c, int skip)
{
	size_t n = 0;

	for (size_t i = 0; i < c->n; i++) {
		if (!c->v[i].refused)
			continue;
		n++;
		if (c->v[i].prot)
			sbx_msg(SBX_MSG_WARNING, 0, 0, "%s %s: deny-write: %s %s", skip ? "skipped" : "refused",
				cs_q(c->v[i].path), cs_q2(c->v[i].prot),
				c->v[i].prot_after ? "would be protected after apply" : "is protected");
		else
			sbx_msg(SBX_MSG_WARNING, 0, 0, "%s %s: %s", skip ? "skipped" : "refused",
				cs_q(c->v[i].path), c->v[i].refused);
	}
	if (n && !skip)
		sbx_die(SBX_EXIT_POLICY, "nothing applied from %s: %zu path%s refused; to fix: review them "
			"(sbx-changes list), discard the change set, or apply the rest with --skip-refused",
			cs_q(c->dir), n, n == 1 ? "" : "s");
}

static int todo(const struct change *e)
{
	return !e->refused && !e->done;
}

int cs_apply(struct cs *c, int skip)
{
	size_t applied = 0, done = 0, refused = 0;
	struct dirc d = { NULL, -1 }, u = { NULL, -1 };
	int kept, eno;

	ws_name = c->ws;
	report(c, skip);
	for (size_t i = 0; i < c->n; i++) {
		c->v[i].tmp = -1;
		refused += c->v[i].refused != NULL;
		done += !c->v[i].refused && c->v[i].done;
	}
	/* a whole apply ends by removing the change set: one that could not
	 * be removed is refused before anything is written */
	if (!refused)
		cs_consumable(c);
	cur = c;
	for (size_t i = 0; i < c->n; i++) {
		struct change *e = &c->v[i];
		if (!todo(e) || e->kind == K_DELETED)
			continue;
		if (S_ISDIR(e->mode))
			put_dir(c, &d, e);
		else
			write_tmp(c, &d, &u, e);
	}
	dir_done(&d);
	dir_done(&u);
	if (syncfs(c->wsfd))
		fail_msg(errno, "sync", c->ws, "no file was replaced");
	for (size_t i = 0; i < c->n; i++) {
		struct change *e = &c->v[i];
		if (!todo(e) || e->kind == K_DELETED)
			continue;
		if (e->tmp >= 0)
			put(c, &d, e);
		applied++;
	}
	dir_done(&d);
	cur = NULL;
	for (size_t i = c->n; i-- > 0; ) {
		struct change *e = &c->v[i];
		const char *name;
		int fd;

		if (!todo(e) || e->kind != K_DELETED)
			continue;
		fd = cs_ws_parent(c, e->path, &name);
		if (fd < 0) {
			if (errno == ENOENT)
				continue;
			fail(errno, "open the directory of", e->path);
		}
		rm_tree(fd, name, e->path);
		close(fd);
		applied++;
	}
	if (syncfs(c->wsfd))
		fail(errno, "sync", c->ws);
	/* a whole apply consumes the change set: what it held is the workspace's now */
	kept = refused || cs_consume(c);
	eno = errno;
	{
		struct sbx_json j;
		sbx_json_begin(&j, NULL, NULL);
		sbx_json_str(&j, "applied", c->dir);
		sbx_json_str(&j, "workspace", c->ws);
		sbx_json_uint(&j, "written", applied);
		sbx_json_uint(&j, "already", done);
		sbx_json_uint(&j, "skipped", refused);
		sbx_json_bool(&j, "kept", kept);
		sbx_json_write(&j, 1);
	}
	if (refused)
		sbx_die(SBX_EXIT_POLICY, "applied %s except %zu refused path%s, kept in it; to fix: review "
			"them, then discard the change set", cs_q(c->dir), refused, refused == 1 ? "" : "s");
	if (kept) {
		errno = eno;
		sbx_die_errno(SBX_EXIT_NOT_REMOVED, "applied %s whole to %s, but unable to remove the change set; "
			      "to fix: clear the cause and run sbx-changes discard %s", cs_q(c->dir), cs_q2(c->ws),
			      cs_q(c->dir));
	}
	return 0;
}

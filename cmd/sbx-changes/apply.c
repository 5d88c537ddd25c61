/* Apply: the reviewed bytes of a change set into the workspace. Every
 * workspace directory is opened beneath the workspace without following a
 * link (cs_ws_parent); each file and symlink is written under CS_TMP in its
 * directory, synced, and renamed over its name, so a kill leaves each path
 * old or new, and a rerun finds what is new already "done". Directories
 * are made first (a parent before its children), deletions come last, the
 * deepest first. Nothing is written when anything is refused, unless
 * --skip-refused. */
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
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *cs_where = "the change set";

static noreturn void fail(int eno, const char *step, const char *path)
{
	errno = eno;
	sbx_die_errno(SBX_EXIT_SYS, "unable to %s %s in %s; what came before it is done, "
		      "the rest not; to fix: clear the cause and run apply again", step, cs_q(path),
		      cs_q2(cs_where));
}

/* Remove name below dirfd, a directory with all it holds, no link followed. */
void cs_rm_tree(int dirfd, const char *name, const char *what)
{
	int fd;

	if (!unlinkat(dirfd, name, 0) || errno == ENOENT)
		return;
	if (errno != EISDIR && errno != EPERM)
		fail(errno, "remove", what);
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == EACCES && !fchmodat(dirfd, name, 0700, 0))
		fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		fail(errno, "open", what);
	for (;;) {
		char *buf = sbx_need(malloc(SBX_DIRBUF));
		size_t len = 0, pos = 0, n = 0;
		const struct sbx_dirent64 *d;
		errno = 0;
		while ((d = sbx_dirent_next(fd, buf, &len, &pos))) {
			cs_rm_tree(fd, d->d_name, what);
			n++;
		}
		if (errno)
			fail(errno, "read directory", what);
		free(buf);
		if (!n)
			break;
		lseek(fd, 0, SEEK_SET);
	}
	close(fd);
	if (unlinkat(dirfd, name, AT_REMOVEDIR) && errno != ENOENT)
		fail(errno, "remove", what);
}

/* The upper object of e, opened beneath upper without following a link. */
static int open_upper(struct cs *c, const struct change *e)
{
	int fd = cs_open_below(c->upfd, e->path, O_RDONLY | O_NONBLOCK);
	struct stat st;

	/* the change set may have been edited since the check: what is read
	 * must still be the regular file the check saw */
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != e->size || st.st_nlink > 1)
		sbx_die(SBX_EXIT_POLICY, "%s changed in change set %s while it was applied; nothing more is "
			"applied; to fix: review it again and rerun apply", cs_q(e->path), cs_q2(c->dir));
	return fd;
}

static void copy(int in, int out, int pfd, const struct change *e)
{
	static char buf[1 << 16];
	uint64_t left = e->size;

	while (left) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, left, 0);
		if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) {
			n = read(in, buf, left < sizeof buf ? left : sizeof buf);
			if (n > 0 && sbx_write_all(out, buf, n))
				n = -1;
		}
		if (n < 0) {
			int eno = errno;
			/* no half-written file is left behind */
			unlinkat(pfd, CS_TMP, 0);
			fail(eno, "write", e->path);
		}
		if (!n)
			break;
		left -= n;
	}
}

static void put_file(struct cs *c, int pfd, const char *name, const struct change *e)
{
	int in = open_upper(c, e), out;
	struct stat st;

	out = openat(pfd, CS_TMP, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0 && errno == EEXIST) {
		/* a killed apply's: replaced */
		unlinkat(pfd, CS_TMP, 0);
		out = openat(pfd, CS_TMP, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	}
	if (out < 0)
		fail(errno, "create a file for", e->path);
	copy(in, out, pfd, e);
	if (fstat(in, &st) == 0) {
		struct timespec t[2] = { st.st_atim, st.st_mtim };
		futimens(out, t);
	}
	if (fchmod(out, e->mode & 0777) || fsync(out)) {
		int eno = errno;
		unlinkat(pfd, CS_TMP, 0);
		fail(eno, "write", e->path);
	}
	if (close(out)) {
		int eno = errno;
		unlinkat(pfd, CS_TMP, 0);
		fail(eno, "write", e->path);
	}
	close(in);
	if (!fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode))
		cs_rm_tree(pfd, name, e->path);
	if (renameat(pfd, CS_TMP, pfd, name)) {
		int eno = errno;
		unlinkat(pfd, CS_TMP, 0);
		fail(eno, "rename into place", e->path);
	}
}

static void put_link(int pfd, const char *name, const struct change *e)
{
	struct stat st;

	unlinkat(pfd, CS_TMP, 0);
	if (symlinkat(e->target, pfd, CS_TMP))
		fail(errno, "create a symlink for", e->path);
	if (!fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode))
		cs_rm_tree(pfd, name, e->path);
	if (renameat(pfd, CS_TMP, pfd, name)) {
		int eno = errno;
		unlinkat(pfd, CS_TMP, 0);
		fail(eno, "rename into place", e->path);
	}
}

static void put_dir(int pfd, const char *name, const struct change *e)
{
	struct stat st;
	int fd;

	if (!fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) && !S_ISDIR(st.st_mode) && unlinkat(pfd, name, 0))
		fail(errno, "remove", e->path);
	if (mkdirat(pfd, name, 0700) && errno != EEXIST)
		fail(errno, "create directory", e->path);
	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchmod(fd, e->mode & 0777))
		fail(errno, "set the mode of", e->path);
	close(fd);
}

static void report(struct cs *c, int skip)
{
	size_t n = 0;

	for (size_t i = 0; i < c->n; i++) {
		if (!c->v[i].refused)
			continue;
		n++;
		sbx_msg(SBX_MSG_WARNING, 0, 0, "%s %s: %s", skip ? "skipped" : "refused",
			cs_q(c->v[i].path), c->v[i].refused);
	}
	if (n && !skip)
		sbx_die(SBX_EXIT_POLICY, "nothing applied from %s: %zu path%s refused; to fix: review them "
			"(sbx-changes list), discard the change set, or apply the rest with --skip-refused",
			cs_q(c->dir), n, n == 1 ? "" : "s");
}

int cs_apply(struct cs *c, int skip)
{
	size_t applied = 0, done = 0, refused = 0;
	char *ppath = NULL;
	int pfd = -1;

	cs_where = c->ws;
	report(c, skip);
	for (size_t i = 0; i <= c->n; i++) {
		struct change *e = i < c->n ? &c->v[i] : NULL;
		const char *name;
		const char *slash;
		size_t plen;

		if (e && e->refused) {
			refused++;
			continue;
		}
		if (e && (e->done || e->kind == K_DELETED)) {
			done += e->done;
			continue;
		}
		slash = e ? strrchr(e->path, '/') : NULL;
		plen = slash ? (size_t)(slash - e->path) : 0;
		/* one open directory while its entries come in a row; synced when left */
		if (!e || pfd < 0 || strlen(ppath) != plen || strncmp(ppath, e->path, plen)) {
			if (pfd >= 0) {
				int dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
				if (dfd >= 0) {
					fsync(dfd);
					close(dfd);
				}
				close(pfd);
				pfd = -1;
			}
			free(ppath);
			ppath = NULL;
			if (!e)
				break;
			pfd = cs_ws_parent(c, e->path, &name);
			if (pfd < 0)
				fail(errno, "open the directory of", e->path);
			ppath = sbx_need(strndup(e->path, plen));
		}
		name = slash ? slash + 1 : e->path;
		if (S_ISDIR(e->mode))
			put_dir(pfd, name, e);
		else if (S_ISLNK(e->mode))
			put_link(pfd, name, e);
		else
			put_file(c, pfd, name, e);
		applied++;
	}
	for (size_t i = c->n; i-- > 0; ) {
		struct change *e = &c->v[i];
		const char *name;
		int fd;

		if (e->refused || e->done || e->kind != K_DELETED)
			continue;
		fd = cs_ws_parent(c, e->path, &name);
		if (fd < 0) {
			if (errno == ENOENT)
				continue;
			fail(errno, "open the directory of", e->path);
		}
		cs_rm_tree(fd, name, e->path);
		fsync(fd);
		close(fd);
		applied++;
	}
	{
		struct sbx_json j;
		sbx_json_begin(&j, NULL, NULL);
		sbx_json_str(&j, "applied", c->dir);
		sbx_json_str(&j, "workspace", c->ws);
		sbx_json_uint(&j, "written", applied);
		sbx_json_uint(&j, "already", done);
		sbx_json_uint(&j, "skipped", refused);
		sbx_json_bool(&j, "kept", refused > 0);
		sbx_json_write(&j, 1);
	}
	if (refused)
		sbx_die(SBX_EXIT_POLICY, "applied %s except %zu refused path%s, kept in it; to fix: review "
			"them, then discard the change set", cs_q(c->dir), refused, refused == 1 ? "" : "s");
	/* a whole apply consumes the change set: what it held is the workspace's now */
	close(c->lockfd);
	return cs_discard(c->dir);
}

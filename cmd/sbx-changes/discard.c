/* Removal: a change set (discard, and the end of a whole apply) and a
 * tree of the workspace (apply's deletions), no link followed (each name
 * removed relative to its parent's fd, O_NOFOLLOW). What the removal of a
 * change set needs is asked first, changing nothing, so that a discard
 * removes nothing and an apply writes nothing when it could not finish;
 * the changeset file goes last, so a removal that was killed or failed
 * can be run again. */
#include "changes.h"

#include "die.h"
#include "exitcodes.h"
#include "sys.h"
#include "walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATX_ATTR_MOUNT_ROOT_ 0x2000U

/* Everything directory fd holds (but a change set's changeset and lock
 * when keep), until a whole read finds nothing more (fd may have been
 * read before). NULL when done, else the step that failed, errno set. */
static const char *empty(int fd, int keep)
{
	const char *step = NULL;
	char *buf = sbx_need(malloc(SBX_DIRBUF));

	for (;;) {
		size_t len = 0, pos = 0, n = 0;
		const struct sbx_dirent64 *d;
		lseek(fd, 0, SEEK_SET);
		errno = 0;
		while (!step && (d = sbx_dirent_next(fd, buf, &len, &pos))) {
			if (keep && (!strcmp(d->d_name, "changeset") || !strcmp(d->d_name, "lock")))
				continue;
			step = cs_rm_tree(fd, d->d_name);
			n++;
		}
		if (!step && errno)
			step = "read directory";
		if (step || !n)
			break;
	}
	free(buf);
	return step;
}

/* Remove name below dirfd, a directory with all it holds. A directory its
 * owner cannot read, write or search is made so first. NULL when done,
 * else the step that failed, errno set. */
const char *cs_rm_tree(int dirfd, const char *name)
{
	const char *step;
	struct stat st;
	int fd, eno;

	if (!unlinkat(dirfd, name, 0) || errno == ENOENT)
		return NULL;
	if (errno != EISDIR && errno != EPERM)
		return "remove";
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == EACCES && !fchmodat(dirfd, name, 0700, 0))
		fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return "open";
	/* a directory its owner cannot write keeps what it holds */
	if (!fstat(fd, &st) && (st.st_mode & 0700) != 0700)
		(void)fchmod(fd, 0700);
	step = empty(fd, 0);
	eno = errno;
	close(fd);
	errno = eno;
	if (!step && unlinkat(dirfd, name, AT_REMOVEDIR) && errno != ENOENT)
		step = "remove";
	return step;
}

static int mnt_of(int fd, uint64_t *id, int *root)
{
	struct sbx_statx st;

	if (sbx_statx(fd, "", AT_EMPTY_PATH, SBX_STATX_MNT_ID, &st) < 0)
		return -1;
	*id = st.stx_mask & SBX_STATX_MNT_ID ? st.stx_mnt_id : 0;
	*root = (st.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT_) && (st.stx_attributes & STATX_ATTR_MOUNT_ROOT_);
	return 0;
}

/* Why cs_rm_tree could not remove what the directory fd holds and then
 * the directory, asked without changing anything: a directory must be
 * the caller's (cs_rm_tree makes it writable) or readable, writable and
 * searchable by the caller, and on the change set's mount. 0, or the
 * errno (EBUSY: a mount point) with in *bad the path below the change set
 * of the directory that is not so. */
static int removable(int fd, uint64_t mnt, const char *path, char **bad)
{
	struct stat st;
	char *buf;
	size_t len = 0, pos = 0;
	const struct sbx_dirent64 *d;
	uint64_t id;
	int root, r = 0;

	if (mnt_of(fd, &id, &root) || fstat(fd, &st))
		r = errno;
	else if (id != mnt || root)
		r = EBUSY;
	else if (faccessat(fd, ".", R_OK | W_OK | X_OK, AT_EACCESS) && (errno != EACCES || st.st_uid != geteuid()))
		r = errno;
	if (r) {
		*bad = sbx_need(strdup(path));
		return r;
	}
	buf = sbx_need(malloc(SBX_DIRBUF));
	lseek(fd, 0, SEEK_SET);
	while (!r && (errno = 0, d = sbx_dirent_next(fd, buf, &len, &pos))) {
		struct stat cs;
		char *sub;
		int c;
		if (d->d_type != DT_DIR && (d->d_type != DT_UNKNOWN ||
		    fstatat(fd, d->d_name, &cs, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(cs.st_mode)))
			continue;
		sub = sbx_needf("%s/%s", path, d->d_name);
		c = openat(fd, d->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (c >= 0) {
			r = removable(c, mnt, sub, bad);
			close(c);
			free(sub);
		} else if (errno == EACCES && !fstatat(fd, d->d_name, &cs, AT_SYMLINK_NOFOLLOW) &&
			   cs.st_uid == geteuid()) {
			/* one the caller owns and cannot read is its to remove */
			free(sub);
		} else {
			r = errno;
			*bad = sub;
		}
	}
	if (!r && errno) {
		r = errno;
		*bad = sbx_need(strdup(path));
	}
	free(buf);
	return r;
}

/* Dies when the change set dir (fd, its parent pfd, named parent) could
 * not be removed as a whole by this caller, naming the directory that
 * prevents it, what it means for verb ("discard", "apply") and the fix. */
static void check_removable(const char *dir, const char *parent, int pfd, int fd, const char *verb)
{
	const char *once = strcmp(verb, "apply") ? "" : " once applied";
	const char *state = strcmp(verb, "apply") ? "nothing removed" : "nothing applied";
	struct stat ps, ds;
	uint64_t mnt;
	char *bad = NULL, *p;
	int root, eno = 0;

	/* the directory itself goes from its parent (sticky: the owner's) */
	if (faccessat(pfd, ".", W_OK | X_OK, AT_EACCESS))
		eno = errno;
	else if (!fstat(pfd, &ps) && !fstat(fd, &ds) && (ps.st_mode & S_ISVTX) && geteuid() &&
		 ps.st_uid != geteuid() && ds.st_uid != geteuid())
		sbx_die(SBX_EXIT_POLICY, "unable to remove change set %s%s: %s is sticky and the change set "
			"another user's; %s; to fix: %s it as its owner", cs_q(dir), once, cs_q2(parent), state, verb);
	if (eno) {
		p = sbx_need(strdup(parent));
	} else {
		if (mnt_of(pfd, &mnt, &root))
			eno = errno, bad = sbx_need(strdup(""));
		else
			eno = removable(fd, mnt, "", &bad);
		if (!eno)
			return;
		p = sbx_needf("%s%s", dir, bad);
	}
	errno = eno;
	if (errno == EBUSY)
		sbx_die(SBX_EXIT_POLICY, "unable to remove change set %s%s: %s is a mount point; %s; to fix: "
			"unmount %s", cs_q(dir), once, cs_q2(p), state, cs_q2(p));
	if (errno == EROFS)
		sbx_die_errno(SBX_EXIT_POLICY, "unable to remove change set %s%s: %s is not writable; %s; "
			      "to fix: remount %s read-write", cs_q(dir), once, cs_q2(p), state, cs_q2(p));
	if (errno != EACCES && errno != EPERM)
		sbx_die_errno(SBX_EXIT_SYS, "unable to check that change set %s can be removed, at %s; %s; "
			      "to fix: clear the cause and run %s again", cs_q(dir), cs_q2(p), state, verb);
	sbx_die_errno(SBX_EXIT_POLICY, "unable to remove change set %s%s: %s is not writable; %s; to fix: "
		      "%s it as a user who may write %s", cs_q(dir), once, cs_q2(p), state, verb, cs_q2(p));
}

/* The change set dir, opened beneath its parent without following a link. */
static void open_set(const char *dir, char **parent, int *pfd, int *fd)
{
	const char *slash = strrchr(dir, '/');
	struct stat st;

	*parent = sbx_need(strndup(dir, slash == dir ? 1 : (size_t)(slash - dir)));
	*pfd = sbx_openat2(AT_FDCWD, *parent, O_PATH | O_DIRECTORY | O_CLOEXEC,
			   RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	*fd = *pfd < 0 ? -1 : openat(*pfd, slash + 1, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*fd < 0 && errno == ENOTDIR && !fstatat(*pfd, slash + 1, &st, AT_SYMLINK_NOFOLLOW) && S_ISLNK(st.st_mode))
		errno = ELOOP;
	if (*fd < 0)
		cs_die_open("change set", dir);
}

/* What dir holds, then lock and changeset, then dir. NULL when done, else
 * the step that failed, errno set. */
static const char *remove_set(const char *dir, int pfd, int fd)
{
	const char *step = empty(fd, 1);

	if (step)
		return step;
	if (unlinkat(fd, "lock", 0) || unlinkat(fd, "changeset", 0) ||
	    unlinkat(pfd, strrchr(dir, '/') + 1, AT_REMOVEDIR))
		return "remove";
	return NULL;
}

int cs_discard(const char *dir)
{
	char *parent;
	int pfd, fd, lock;
	struct stat st;

	open_set(dir, &parent, &pfd, &fd);
	if (fstatat(fd, "changeset", &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
		sbx_die(SBX_EXIT_POLICY, "%s is not a change set (no changeset file); nothing removed; "
			"to fix: name a directory sbx-ns --changes wrote", cs_q(dir));
	/* a change set that could be emptied but not removed is no change set
	 * any more: what the removal needs is asked first */
	check_removable(dir, parent, pfd, fd, "discard");
	lock = openat(fd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lock < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open %s", cs_qf(dir, "lock"));
	if (flock(lock, LOCK_EX | LOCK_NB))
		sbx_die(SBX_EXIT_POLICY, "%s is in use by a running sandbox; to fix: wait for it to end",
			cs_q(dir));
	if (remove_set(dir, pfd, fd))
		sbx_die_errno(SBX_EXIT_SYS, "unable to remove change set %s", cs_q(dir));
	close(lock);
	close(fd);
	close(pfd);
	free(parent);
	return 0;
}

/* apply: the change set c holds (its lock held) can be removed once it
 * is applied whole; it dies otherwise, before anything is written. */
void cs_consumable(struct cs *c)
{
	struct stat a, b;

	open_set(c->dir, &c->parent, &c->pfd, &c->setfd);
	if (fstat(c->setfd, &a) || fstat(c->dirfd, &b) || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		sbx_die(SBX_EXIT_POLICY, "change set %s was replaced while it was read; nothing applied; "
			"to fix: run apply again", cs_q(c->dir));
	check_removable(c->dir, c->parent, c->pfd, c->setfd, "apply");
}

/* apply, after the last write: the change set c removed (its lock still
 * held, so no sandbox takes it meanwhile). 0, or -1 with errno set. */
int cs_consume(struct cs *c)
{
	return remove_set(c->dir, c->pfd, c->setfd) ? -1 : 0;
}

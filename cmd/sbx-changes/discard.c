/* Discard: remove a change set, no link followed (each name removed
 * relative to its parent's fd, O_NOFOLLOW). DIR must be a change set (its
 * changeset file) and not in use (its lock); the changeset file goes last,
 * so a discard that was killed can be run again. */
#include "changes.h"

#include "die.h"
#include "exitcodes.h"
#include "sys.h"
#include "walk.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int cs_discard(const char *dir)
{
	const char *slash = strrchr(dir, '/');
	char *parent = sbx_need(strndup(dir, slash == dir ? 1 : (size_t)(slash - dir)));
	int pfd, fd, lock;
	struct stat st;
	char *buf;
	size_t len = 0, pos = 0;
	const struct sbx_dirent64 *d;

	pfd = sbx_openat2(AT_FDCWD, parent, O_PATH | O_DIRECTORY | O_CLOEXEC,
			  RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	fd = pfd < 0 ? -1 : openat(pfd, slash + 1, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOTDIR && !fstatat(pfd, slash + 1, &st, AT_SYMLINK_NOFOLLOW) && S_ISLNK(st.st_mode))
		errno = ELOOP;
	if (fd < 0)
		cs_die_open("change set", dir);
	if (fstatat(fd, "changeset", &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
		sbx_die(SBX_EXIT_POLICY, "%s is not a change set (no changeset file); nothing removed; "
			"to fix: name a directory sbx-ns --changes wrote", cs_q(dir));
	/* a change set that could be emptied but not removed is no change set
	 * any more: its directory is asked first */
	if (faccessat(AT_FDCWD, parent, W_OK | X_OK, AT_EACCESS))
		sbx_die_errno(SBX_EXIT_SYS, "unable to remove change set %s from %s; nothing removed; to fix: "
			      "discard it as a user who may write %s", cs_q(dir), cs_q2(parent), cs_q3(parent));
	lock = openat(fd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lock < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open %s", cs_qf(dir, "lock"));
	if (flock(lock, LOCK_EX | LOCK_NB))
		sbx_die(SBX_EXIT_POLICY, "%s is in use by a running sandbox; to fix: wait for it to end",
			cs_q(dir));
	buf = sbx_need(malloc(SBX_DIRBUF));
	errno = 0;
	while ((d = sbx_dirent_next(fd, buf, &len, &pos)))
		if (strcmp(d->d_name, "changeset") && strcmp(d->d_name, "lock"))
			cs_rm_tree(fd, d->d_name, dir);
	if (errno)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read change set %s", cs_q(dir));
	if (unlinkat(fd, "lock", 0) || unlinkat(fd, "changeset", 0) ||
	    unlinkat(pfd, slash + 1, AT_REMOVEDIR))
		sbx_die_errno(SBX_EXIT_SYS, "unable to remove change set %s", cs_q(dir));
	close(lock);
	close(fd);
	close(pfd);
	free(buf);
	free(parent);
	return 0;
}

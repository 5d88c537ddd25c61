/* The broker's own socket: one passed in (--listen-fd, socket activation)
 * or one it makes at --listen PATH, with the mode and group the
 * administrator gives it.
 *
 * A file already at PATH is replaced only when it is a stale socket: a
 * socket nobody listens on (a killed broker's). Anything else (a socket
 * that answers, a regular file, a symlink, a directory) is refused with
 * what it is. The check and the removal are one step against a
 * concurrent broker (both hold an exclusive lock on the directory from
 * the check until listen(2)), and the removal is of the very file that
 * was checked: it is first renamed aside, and removed only if the file
 * under the new name is still the one that refused the connection; if
 * it is not, it is renamed back and nothing is removed. */
#include "broker.h"
#include "die.h"
#include "exitcodes.h"
#include "parse.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif

int broker_listening_unix_stream(int fd)
{
	int v = 0;
	socklen_t l = sizeof v;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &l) < 0 || v != SOCK_STREAM)
		return 0;
	l = sizeof v;
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &l) < 0 || !v)
		return 0;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0 || ss.ss_family != AF_UNIX)
		return 0;
	return 1;
}

/* systemd socket activation: exactly one socket, fd 3, meant for us. */
int broker_activation_fd(void)
{
	const char *fds = getenv("LISTEN_FDS"), *pid = getenv("LISTEN_PID");
	uint64_t n, p;

	if (!fds)
		return -1;
	if (!pid || sbx_parse_u64(pid, 1, UINT32_MAX, &p) || p != (uint64_t)getpid())
		return -1;
	if (sbx_parse_u64(fds, 0, 1U << 20, &n) || n != 1)
		sbx_die_usage("LISTEN_FDS: socket activation must pass exactly one socket");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDNAMES");
	if (!broker_listening_unix_stream(3))
		sbx_die_usage("LISTEN_FDS: fd 3 is not a listening Unix stream socket");
	return 3;
}

int broker_parse_mode(const char *s)
{
	unsigned v = 0;

	if (!*s)
		sbx_die_usage("--socket-mode: invalid mode '': empty");
	if (strlen(s) > 4)
		sbx_die_usage("--socket-mode: invalid mode '%s': more than 4 octal digits", s);
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '7')
			sbx_die_usage("--socket-mode: invalid mode '%s': not an octal number like 0660", s);
		v = v * 8 + (unsigned)(*p - '0');
	}
	if (v > 0777)
		sbx_die_usage("--socket-mode: invalid mode '%s': permission bits only (at most 0777)", s);
	return (int)v;
}

gid_t broker_parse_group(const char *s)
{
	struct group *g;
	uint64_t n;

	if (!*s)
		sbx_die_usage("--socket-group: invalid group '': empty");
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == ':')
			sbx_die_usage("--socket-group: invalid group: control character or ':' in the name");
	if (s[0] >= '0' && s[0] <= '9') {
		if (sbx_parse_u64(s, 0, UINT32_MAX - 1, &n))
			sbx_die_usage("--socket-group: invalid group '%s': not a number or a name", s);
		return (gid_t)n;
	}
	errno = 0;
	g = getgrnam(s);
	if (!g)
		sbx_die_usage("--socket-group: unknown group '%s'", s);
	return g->gr_gid;
}

static const char *file_kind(mode_t m)
{
	if (S_ISREG(m)) return "a regular file";
	if (S_ISDIR(m)) return "a directory";
	if (S_ISLNK(m)) return "a symlink";
	if (S_ISFIFO(m)) return "a fifo";
	return "a device";
}

/* Returns when nothing listens on the socket at path (it is stale), else
 * dies saying why it cannot be replaced. */
static void check_stale(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create a socket");
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (connect(s, (struct sockaddr *)&sa, sizeof sa) == 0)
		sbx_die(SBX_EXIT_SYS, "unable to listen on %s: a process listens there already (another "
			"broker?); stop it or choose another path", path);
	if (errno != ECONNREFUSED)
		sbx_die_errno(SBX_EXIT_SYS, "unable to listen on %s: a socket is there and could not be "
			      "checked for a listener", path);
	close(s);
}

/* Rename the checked socket aside, remove it if it is still the same
 * file, else put it back. */
static void remove_stale(int dfd, const char *base, const char *path, const struct stat *checked)
{
	char tmp[NAME_MAX + 1];
	struct stat st;

	if (snprintf(tmp, sizeof tmp, ".%.200s.stale.%d", base, (int)getpid()) >= (int)sizeof tmp)
		sbx_die(SBX_EXIT_SYS, "unable to name %s aside", path);
	if (syscall(SYS_renameat2, dfd, base, dfd, tmp, RENAME_NOREPLACE) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to remove the stale socket %s", path);
	if (fstatat(dfd, tmp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode) &&
	    st.st_dev == checked->st_dev && st.st_ino == checked->st_ino) {
		if (unlinkat(dfd, tmp, 0) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to remove the stale socket %s", path);
		return;
	}
	if (syscall(SYS_renameat2, dfd, tmp, dfd, base, RENAME_NOREPLACE) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to listen on %s: it changed while it was checked, and "
			      "could not be put back from %s", path, tmp);
	sbx_die(SBX_EXIT_SYS, "unable to listen on %s: it changed while it was checked; nothing was removed",
		path);
}

int broker_listen_path(const char *path, int mode, gid_t gid, struct stat *made)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof sa.sun_path];
	const char *base = strrchr(path, '/') + 1;
	struct stat st;
	mode_t old = 0;
	int fd, dfd, pfd;

	if (!*base)
		sbx_die_usage("--listen: '%s' names a directory", path);
	snprintf(dir, sizeof dir, "%.*s", (int)(base - path > 1 ? base - path - 1 : 1), path);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 && errno == ENOENT)
		sbx_die(SBX_EXIT_SYS, "unable to bind %s: %s does not exist; create it first (mkdir -p %s)",
			path, dir, dir);
	if (dfd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to bind %s", path);
	if (flock(dfd, LOCK_EX) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to lock %s", dir);
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISSOCK(st.st_mode))
			sbx_die(SBX_EXIT_SYS, "unable to listen on %s: it exists and is %s, not a socket; "
				"remove it or choose another path", path, file_kind(st.st_mode));
		check_stale(path);
		remove_stale(dfd, base, path, &st);
		sbx_warn("replaced the stale socket %s (nothing listened on it)", path);
	} else if (errno != ENOENT) {
		sbx_die_errno(SBX_EXIT_SYS, "unable to bind %s", path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create a socket");
	memcpy(sa.sun_path, path, strlen(path) + 1);
	/* With a mode to set, nobody may connect before it is set: the
	 * socket is made with no permission at all. */
	if (mode >= 0)
		old = umask(0777);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		if (errno == EACCES)
			sbx_die(SBX_EXIT_SYS, "unable to bind %s: %s; choose a directory the broker's user "
				"may write", path, strerror(EACCES));
		sbx_die_errno(SBX_EXIT_SYS, "unable to bind %s", path);
	}
	if (mode >= 0)
		umask(old);
	pfd = openat(dfd, base, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0 || fstat(pfd, made) < 0 || !S_ISSOCK(made->st_mode))
		sbx_die(SBX_EXIT_SYS, "unable to listen on %s: it was replaced right after bind", path);
	if (gid != (gid_t)-1 && fchownat(pfd, "", (uid_t)-1, gid, AT_EMPTY_PATH) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to give %s to group %u (--socket-group: the broker's "
			      "user must be a member)", path, (unsigned)gid);
	if (mode >= 0) {
		char proc[40];
		snprintf(proc, sizeof proc, "/proc/self/fd/%d", pfd);
		if (chmod(proc, (mode_t)mode) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to set the mode of %s", path);
	}
	close(pfd);
	if (listen(fd, 1024) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to listen on %s", path);
	close(dfd); /* and with it the lock */
	return fd;
}

/* At exit: remove the socket only if it is still the one made here. */
void broker_unlink_path(const char *path, const struct stat *made)
{
	struct stat st;

	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == made->st_dev &&
	    st.st_ino == made->st_ino)
		unlink(path);
}

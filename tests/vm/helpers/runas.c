/* runas UID GID PROG [ARGS...]
 *
 * Drops every supplementary group, then the gid, then the uid, and execs PROG. The VM's
 * init uses it to start the unprivileged run of the suite; busybox has no setpriv --reuid. */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned id(const char *s)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || !*s || *end || *s == '-' || v >= 0xffffffffUL) {
		fprintf(stderr, "runas: fatal: invalid id: %s\n", s);
		exit(100);
	}
	return (unsigned)v;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: runas UID GID PROG [ARGS...]\n");
		return 100;
	}
	uid_t uid = id(argv[1]);
	gid_t gid = id(argv[2]);
	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0) {
		fprintf(stderr, "runas: fatal: unable to switch to %u:%u: %s\n", uid, gid, strerror(errno));
		return 111;
	}
	execvp(argv[3], argv + 3);
	fprintf(stderr, "runas: fatal: unable to exec %s: %s\n", argv[3], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}

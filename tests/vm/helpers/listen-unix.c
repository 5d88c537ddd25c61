/* listen-unix PATH FD PROG [ARGS...]
 *
 * Creates a Unix stream socket listening at PATH on fd FD and execs PROG, which keeps
 * it for as long as it lives: what a systemd socket unit does for the service it
 * starts. The soak (tests/soak) restarts the broker under it as systemd would: each
 * broker gets the same socket, and a connection made while none runs waits in the
 * backlog. busybox has no such tool. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char *end;
	long fd;
	int s;

	if (argc < 4) {
		fprintf(stderr, "usage: listen-unix PATH FD PROG [ARGS...]\n");
		return 100;
	}
	errno = 0;
	fd = strtol(argv[2], &end, 10);
	if (errno || !*argv[2] || *end || fd < 3 || fd > 1000 || strlen(argv[1]) >= sizeof a.sun_path) {
		fprintf(stderr, "listen-unix: fatal: invalid PATH or FD: %s %s\n", argv[1], argv[2]);
		return 100;
	}
	strcpy(a.sun_path, argv[1]);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 1024) < 0 ||
	    (s != fd && dup2(s, (int)fd) < 0)) {
		fprintf(stderr, "listen-unix: fatal: unable to listen on %s: %s\n", argv[1], strerror(errno));
		return 111;
	}
	if (s != fd)
		close(s);
	execvp(argv[3], argv + 3);
	fprintf(stderr, "listen-unix: fatal: unable to exec %s: %s\n", argv[3], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}

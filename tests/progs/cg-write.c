/* cg-write VALUE FILE...: tries to write VALUE to each FILE (as a command
 * inside a sandbox trying to raise its limits or leave its cgroup) and
 * prints "FILE: written" or "FILE: errno text" for each. Exits 0 when
 * every write failed, 1 when any succeeded. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int any = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: cg-write VALUE FILE...\n");
		return 100;
	}
	for (int i = 2; i < argc; i++) {
		int fd = open(argv[i], O_WRONLY | O_CLOEXEC);
		size_t len = strlen(argv[1]);
		if (fd >= 0 && write(fd, argv[1], len) == (ssize_t)len) {
			printf("%s: written\n", argv[i]);
			any = 1;
		} else {
			printf("%s: %s\n", argv[i], strerror(errno));
		}
		if (fd >= 0)
			close(fd);
	}
	return any;
}

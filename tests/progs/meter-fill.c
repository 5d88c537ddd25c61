/* meter-fill FILE MIB: appends MIB MiB to FILE, one MiB every 10 ms,
 * then prints "wrote MIB MiB". */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static char mib_buf[1 << 20];
	struct timespec pause = { 0, 10000000 };
	long mib;
	int fd;

	if (argc != 3 || (mib = atol(argv[2])) <= 0) {
		fprintf(stderr, "usage: meter-fill FILE MIB\n");
		return 100;
	}
	memset(mib_buf, 'x', sizeof mib_buf);
	if ((fd = open(argv[1], O_WRONLY | O_CREAT | O_APPEND, 0644)) < 0)
		return 111;
	for (long i = 0; i < mib; i++) {
		if (write(fd, mib_buf, sizeof mib_buf) != (ssize_t)sizeof mib_buf)
			return 111;
		nanosleep(&pause, NULL);
	}
	close(fd);
	printf("wrote %ld MiB\n", mib);
	return 0;
}

/* cg-forkbomb: forks children that sleep forever until fork fails, prints
 * "forked N children, then fork failed: ERROR" and exits 1, leaving every
 * child behind: sbx-cgroup must stop the bomb at pids.max and then kill
 * the leftovers. "forked N children" and exit 0 if MAX (default 100000)
 * is reached first. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long max = argc > 1 ? atol(argv[1]) : 100000, n;
	int err = 0;

	for (n = 0; n < max; n++) {
		pid_t p = fork();
		if (p < 0) {
			err = errno;
			break;
		}
		if (p == 0)
			for (;;)
				pause();
	}
	if (err) {
		printf("forked %ld children, then fork failed: %s\n", n, strerror(err));
		return 1;
	}
	printf("forked %ld children\n", n);
	return 0;
}

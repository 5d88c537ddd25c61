/* forkbomb MAX
 *
 * Forks children that wait for their parent to die until fork fails or MAX children
 * exist. Prints "forked N children" or "forked N children, then fork failed: ENAME"
 * (exit 1), then kills and reaps every child so the cgroup empties. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "errname.h"

int main(int argc, char **argv)
{
	char *end;
	if (argc != 2) {
		fprintf(stderr, "usage: forkbomb MAX\n");
		return 100;
	}
	long max = strtol(argv[1], &end, 10);
	if (!*argv[1] || *end || max <= 0 || max > 100000) {
		fprintf(stderr, "forkbomb: fatal: invalid number: %s\n", argv[1]);
		return 100;
	}
	pid_t *kids = calloc((size_t)max, sizeof *kids);
	if (!kids) {
		perror("forkbomb: fatal: unable to allocate");
		return 111;
	}
	long n;
	int err = 0;
	for (n = 0; n < max; n++) {
		pid_t p = fork();
		if (p < 0) {
			err = errno;
			break;
		}
		if (p == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;)
				pause();
		}
		kids[n] = p;
	}
	if (err)
		printf("forked %ld children, then fork failed: %s\n", n, errname(err));
	else
		printf("forked %ld children\n", n);
	fflush(stdout);
	for (long i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	for (long i = 0; i < n; i++)
		waitpid(kids[i], NULL, 0);
	return err ? 1 : 0;
}

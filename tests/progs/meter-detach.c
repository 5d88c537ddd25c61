/* meter-detach DELAY_MS MIB HOLD_MS WAIT_MS: a detached descendant.
 * After DELAY_MS, forks a child that starts a new session, forks the
 * grandchild and exits at once (the classic double fork), so the
 * grandchild is an orphan. The grandchild prints "grandchild PID",
 * touches MIB MiB, prints "touched MIB MiB", holds the memory for HOLD_MS
 * and exits. The original process waits WAIT_MS after the fork and exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	long delay, mib, hold, wait_ms;
	pid_t pid;

	if (argc != 5 || (delay = atol(argv[1])) < 0 || (mib = atol(argv[2])) < 0 ||
	    (hold = atol(argv[3])) < 0 || (wait_ms = atol(argv[4])) < 0) {
		fprintf(stderr, "usage: meter-detach DELAY_MS MIB HOLD_MS WAIT_MS\n");
		return 100;
	}
	sleep_ms(delay);
	if ((pid = fork()) < 0)
		return 111;
	if (pid == 0) {
		setsid();
		if ((pid = fork()) < 0)
			_exit(111);
		if (pid > 0)
			_exit(0);
		printf("grandchild %d\n", (int)getpid());
		fflush(stdout);
		/* volatile: the stores must happen, or the compiler may drop
		 * an allocation nobody reads. */
		volatile char *m = malloc((size_t)mib << 20 | 1);
		if (!m)
			_exit(111);
		for (size_t i = 0; i < ((size_t)mib << 20); i += 4096)
			m[i] = 1;
		printf("touched %ld MiB\n", mib);
		fflush(stdout);
		sleep_ms(hold);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	sleep_ms(wait_ms);
	return 0;
}

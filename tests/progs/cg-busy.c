/* cg-busy SECONDS: spins on one CPU for SECONDS of wall-clock time, then
 * exits 0. Under cpu.max it gets only its quota of that time. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0, end;
	volatile unsigned long spin = 0;

	if (secs <= 0) {
		fprintf(stderr, "usage: cg-busy SECONDS\n");
		return 100;
	}
	end = now() + secs;
	while (now() < end)
		for (int i = 0; i < 10000; i++)
			spin++;
	return 0;
}

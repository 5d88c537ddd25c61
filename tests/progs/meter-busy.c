/* meter-busy SECONDS: spins for SECONDS of wall time, then prints the
 * share of one core it got, from its own /proc/self/stat (user + system
 * ticks against elapsed wall time), as "cpu N%". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	unsigned long long ut, stime;
	double t0, secs;
	char buf[1024], *s;
	volatile unsigned long spin = 0;
	FILE *f;
	size_t n;

	if (argc != 2 || (secs = atof(argv[1])) <= 0) {
		fprintf(stderr, "usage: meter-busy SECONDS\n");
		return 100;
	}
	t0 = now();
	while (now() - t0 < secs)
		for (int i = 0; i < 10000; i++)
			spin++;
	if (!(f = fopen("/proc/self/stat", "r")))
		return 111;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	if (!(s = strrchr(buf, ')')) ||
	    sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &stime) != 2)
		return 111;
	printf("cpu %d%%\n", (int)(100.0 * (ut + stime) / sysconf(_SC_CLK_TCK) / (now() - t0) + 0.5));
	return 0;
}

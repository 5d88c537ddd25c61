/* meter-hog MIB SECONDS: touches MIB MiB one MiB at a time, says so on
 * stdout, then holds the memory for SECONDS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long mib, secs;

	if (argc != 3 || (mib = atol(argv[1])) <= 0 || (secs = atol(argv[2])) < 0) {
		fprintf(stderr, "usage: meter-hog MIB SECONDS\n");
		return 100;
	}
	for (long i = 0; i < mib; i++) {
		/* volatile: the stores must happen, or the compiler may
		 * drop an allocation nobody reads. */
		volatile char *p = malloc(1 << 20);
		if (!p)
			return 111;
		for (size_t k = 0; k < (1 << 20); k += 4096)
			p[k] = 1;
	}
	printf("touched %ld MiB\n", mib);
	fflush(stdout);
	sleep((unsigned)secs);
	return 0;
}

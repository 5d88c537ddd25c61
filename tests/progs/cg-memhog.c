/* cg-memhog MIB [HOLD_SECONDS]: allocates MIB MiB, writes every page so it
 * is charged, prints "touched MIB MiB", then holds it for HOLD_SECONDS
 * (default 0) and exits 0. Under a smaller memory.max with no swap it is
 * OOM-killed before it prints. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long mib = argc > 1 ? atol(argv[1]) : 0;
	unsigned hold = argc > 2 ? (unsigned)atoi(argv[2]) : 0;
	size_t len, off, page = (size_t)sysconf(_SC_PAGESIZE);
	char *p;

	if (mib <= 0 || mib > 65536) {
		fprintf(stderr, "usage: cg-memhog MIB [HOLD_SECONDS]\n");
		return 100;
	}
	len = (size_t)mib << 20;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("cg-memhog: fatal: unable to mmap");
		return 111;
	}
	for (off = 0; off < len; off += page)
		p[off] = 1;
	printf("touched %ld MiB\n", mib);
	fflush(stdout);
	while (hold)
		hold = sleep(hold);
	return 0;
}

/* memhog MIB
 *
 * Allocates MIB MiB and writes to every page so that it is really charged, then prints
 * "touched MIB MiB". Under a smaller memory.max with no swap it is expected to be
 * OOM-killed before it prints anything. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char *end;
	if (argc != 2) {
		fprintf(stderr, "usage: memhog MIB\n");
		return 100;
	}
	long mib = strtol(argv[1], &end, 10);
	if (!*argv[1] || *end || mib <= 0 || mib > 65536) {
		fprintf(stderr, "memhog: fatal: invalid number: %s\n", argv[1]);
		return 100;
	}
	size_t len = (size_t)mib << 20;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("memhog: fatal: unable to mmap");
		return 111;
	}
	long page = sysconf(_SC_PAGESIZE);
	for (size_t off = 0; off < len; off += (size_t)page)
		p[off] = 1;
	printf("touched %ld MiB\n", mib);
	return 0;
}

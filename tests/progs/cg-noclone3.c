/* cg-noclone3 PROG [ARGS...]: runs PROG with clone3(2) failing with ENOSYS,
 * as on kernels before 5.3 and under container seccomp profiles that hide
 * it, so that sbx-cgroup's fork-and-place fallback is exercised. */
#include "filter-one.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: cg-noclone3 PROG [ARGS...]\n");
		return 100;
	}
	if (filter_one(SYS_clone3, SECCOMP_RET_ERRNO | ENOSYS) < 0) {
		fprintf(stderr, "cg-noclone3: fatal: unable to load the filter: %s\n", strerror(errno));
		return 111;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "cg-noclone3: fatal: unable to exec %s: %s\n", argv[1], strerror(errno));
	return 127;
}

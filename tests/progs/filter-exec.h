/* For the test programs that run PROG under a seccomp filter imitating a
 * host that lacks something (a kernel call, a namespace): load the rules
 * add() adds to an allow-everything filter, then exec PROG. Exit 100 on
 * bad usage, 111 when the filter cannot be loaded, 127 when PROG cannot be
 * executed. */
#ifndef SBX_TEST_FILTER_EXEC_H
#define SBX_TEST_FILTER_EXEC_H

#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int filter_exec(const char *name, int argc, char **argv, int (*add)(scmp_filter_ctx))
{
	scmp_filter_ctx ctx;

	if (argc < 2) {
		fprintf(stderr, "usage: %s PROG [ARGS...]\n", name);
		return 100;
	}
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx || add(ctx) < 0 || seccomp_load(ctx) < 0) {
		fprintf(stderr, "%s: fatal: unable to load the filter\n", name);
		return 111;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "%s: fatal: unable to exec %s: %s\n", name, argv[1], strerror(errno));
	return 127;
}

#endif

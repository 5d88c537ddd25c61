/* ns-nomountapi [--deny-mount] PROG [ARGS]: run PROG as on a kernel older than 5.12, where
 * the new mount API is missing: a seccomp filter answers ENOSYS to
 * open_tree, move_mount, fsopen, fsconfig, fsmount, fspick and
 * mount_setattr, so sbx-ns must build its root with the classic calls.
 * The answer is SECCOMP_RET_TRACE with no tracer, which fails with ENOSYS
 * and, unlike RET_ERRNO, yields to any filter installed later: the
 * sandbox's own filter still decides for the command, as it would on such
 * a kernel. It may wrap a whole test run. --deny-mount also fails mount(2)
 * with EPERM, as a container's seccomp profile may. */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	/* x86_64 numbers: libseccomp 2.5 may not name the newest ones. */
	static const int nr[] = { 428, 429, 430, 431, 432, 433, 442 };
	scmp_filter_ctx ctx;
	int deny_mount = argc > 1 && !strcmp(argv[1], "--deny-mount");

	argv += deny_mount;
	argc -= deny_mount;
	if (argc < 2) {
		fprintf(stderr, "usage: ns-nomountapi [--deny-mount] PROG [ARGS]\n");
		return 100;
	}
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		goto fail;
	if (deny_mount && seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mount), 0) < 0)
		goto fail;
	for (size_t i = 0; i < sizeof nr / sizeof nr[0]; i++)
		if (seccomp_rule_add(ctx, SCMP_ACT_TRACE(0), nr[i], 0) < 0)
			goto fail;
	if (seccomp_load(ctx) < 0)
		goto fail;
	execvp(argv[1], argv + 1);
	fprintf(stderr, "ns-nomountapi: fatal: unable to exec %s: %s\n", argv[1], strerror(errno));
	return 127;
fail:
	fprintf(stderr, "ns-nomountapi: fatal: unable to load the filter\n");
	return 111;
}

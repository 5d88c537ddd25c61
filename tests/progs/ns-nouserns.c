/* ns-nouserns PROG [ARGS]: run PROG where user namespaces cannot be created,
 * as in a container whose seccomp profile refuses them: clone and unshare
 * with CLONE_NEWUSER fail with EPERM (clone3, whose flags a filter cannot
 * read, with ENOSYS). sbx-ns must refuse (106) or take the fallback its
 * baseline allows. */
#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	scmp_filter_ctx ctx;

	if (argc < 2) {
		fprintf(stderr, "usage: ns-nouserns PROG [ARGS]\n");
		return 100;
	}
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
			     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
			     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) < 0 ||
	    seccomp_load(ctx) < 0) {
		fprintf(stderr, "ns-nouserns: fatal: unable to load the filter\n");
		return 111;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "ns-nouserns: fatal: unable to exec %s: %s\n", argv[1], strerror(errno));
	return 127;
}

/* quota-nofd PROG [ARGS...]: run PROG as on a kernel older than 5.14, where
 * quotactl_fd(2) does not exist: a seccomp filter answers ENOSYS to it, so
 * sbx-quota must take its fallback (quotactl on the block device named in
 * /proc/self/mountinfo). */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NR_QUOTACTL_FD 443 /* x86_64; libseccomp 2.5 has no name for it */

int main(int argc, char **argv)
{
	scmp_filter_ctx ctx;

	if (argc < 2) {
		fprintf(stderr, "usage: quota-nofd PROG [ARGS...]\n");
		return 100;
	}
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), NR_QUOTACTL_FD, 0) < 0 ||
	    seccomp_load(ctx) < 0) {
		fprintf(stderr, "quota-nofd: fatal: unable to load the filter\n");
		return 111;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "quota-nofd: fatal: unable to exec %s: %s\n", argv[1], strerror(errno));
	return 127;
}

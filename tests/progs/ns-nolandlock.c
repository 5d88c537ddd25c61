/* ns-nolandlock PROG [ARGS]: run PROG as on a kernel without Landlock
 * (landlock_create_ruleset fails with ENOSYS, through a seccomp filter),
 * so the tests can see how sbx-ns behaves there. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_landlock_create_ruleset, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof f / sizeof f[0], f };

	if (argc < 2) {
		fprintf(stderr, "usage: ns-nolandlock PROG [ARGS]\n");
		return 100;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0) {
		perror("ns-nolandlock: seccomp");
		return 111;
	}
	execv(argv[1], argv + 1);
	perror("ns-nolandlock: exec");
	return 127;
}

/* cg-noclone3 PROG [ARGS...]: runs PROG with clone3(2) failing with ENOSYS,
 * as on kernels before 5.3 and under container seccomp profiles that hide
 * it, so that sbx-cgroup's fork-and-place fallback is exercised. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof f / sizeof f[0], .filter = f };

	if (argc < 2) {
		fprintf(stderr, "usage: cg-noclone3 PROG [ARGS...]\n");
		return 100;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
		fprintf(stderr, "cg-noclone3: fatal: unable to load the filter: %s\n", strerror(errno));
		return 111;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "cg-noclone3: fatal: unable to exec %s: %s\n", argv[1], strerror(errno));
	return 127;
}

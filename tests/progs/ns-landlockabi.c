/* ns-landlockabi N PROG [ARGS]: run PROG as on a kernel whose Landlock ABI
 * is N: the version query (landlock_create_ruleset with
 * LANDLOCK_CREATE_RULESET_VERSION) answers N, through a seccomp user
 * notification this process answers; every other call reaches the real
 * kernel, which then enforces what a ruleset of that ABI asks for. The
 * tests use it to see what sbx-ns gives up, and says it gives up, on older
 * kernels. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define VERSION_FLAG 1 /* LANDLOCK_CREATE_RULESET_VERSION */

int main(int argc, char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_landlock_create_ruleset, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, VERSION_FLAG, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof f / sizeof f[0], f };
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	int lfd, pfd, st;
	long abi;
	pid_t pid;

	if (argc < 3 || (abi = strtol(argv[1], NULL, 10)) < 1 || abi > 100) {
		fprintf(stderr, "usage: ns-landlockabi N PROG [ARGS]\n");
		return 100;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    (lfd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog)) < 0) {
		perror("ns-landlockabi: seccomp");
		return 111;
	}
	pid = fork();
	if (pid < 0) {
		perror("ns-landlockabi: fork");
		return 111;
	}
	if (pid == 0) {
		close(lfd);
		execvp(argv[2], argv + 2);
		fprintf(stderr, "ns-landlockabi: fatal: unable to exec %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd < 0) {
		perror("ns-landlockabi: pidfd_open");
		kill(pid, SIGKILL);
		return 111;
	}
	for (;;) {
		struct pollfd p[2] = { { .fd = lfd, .events = POLLIN }, { .fd = pfd, .events = POLLIN } };
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		if (!p[0].revents)
			continue;
		memset(&req, 0, sizeof req);
		if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
			continue;   /* the caller was killed meanwhile */
		memset(&resp, 0, sizeof resp);
		resp.id = req.id;
		resp.val = abi;
		(void)ioctl(lfd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
	if (waitpid(pid, &st, 0) < 0)
		return 111;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ns-notify-gone DIR: what a denied call returns when the process that
 * supervised it (held the seccomp listener) was killed. This process loads
 * a filter that sends mount(2) to a listener, as sbx-ns does, hands the
 * listener to a child (the supervisor), closes its own copy, kills the
 * child with SIGKILL, then calls mount(tmpfs on DIR). Prints
 * "mount: ERRNO", or "mount: ok" (then unmounts) if the call went through.
 * Exit 0 unless a step fails (2). Run it as root in a private mount
 * namespace: it shows that the call fails even where mount would work. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int fail(const char *what)
{
	fprintf(stderr, "ns-notify-gone: %s: %s\n", what, strerror(errno));
	return 2;
}

int main(int argc, char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mount, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof f / sizeof f[0], .filter = f };
	char cbuf[CMSG_SPACE(sizeof(int))], b = 'L';
	struct iovec iov = { .iov_base = &b, .iov_len = 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof cbuf };
	struct cmsghdr *c;
	int sp[2], lfd, st;
	pid_t sup;

	if (argc != 2)
		return 2;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp) < 0)
		return fail("socketpair");
	sup = fork();
	if (sup < 0)
		return fail("fork");
	if (sup == 0) {
		/* The supervisor: take the listener, say so, wait to be killed. */
		close(sp[0]);
		if (recvmsg(sp[1], &mh, 0) != 1 || write(sp[1], "k", 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	close(sp[1]);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return fail("no_new_privs");
	lfd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (lfd < 0)
		return fail("seccomp");
	memset(cbuf, 0, sizeof cbuf);
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &lfd, sizeof lfd);
	if (sendmsg(sp[0], &mh, 0) != 1)
		return fail("sendmsg");
	close(lfd);
	if (read(sp[0], &b, 1) != 1)
		return fail("read");
	kill(sup, SIGKILL);
	if (waitpid(sup, &st, 0) != sup || !WIFSIGNALED(st))
		return fail("waitpid");
	if (mount("none", argv[1], "tmpfs", 0, NULL) == 0) {
		umount2(argv[1], MNT_DETACH);
		printf("mount: ok\n");
	} else {
		printf("mount: %s\n", errno == ENOSYS ? "ENOSYS" : errno == EPERM ? "EPERM" : strerror(errno));
	}
	return 0;
}

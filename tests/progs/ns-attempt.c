/* ns-attempt NAME [ARGS]: one escape attempt from inside an sbx-ns sandbox
 * (or one harmless action the tests need), printed as "NAME: RESULT" where
 * RESULT is "ok", the errno name, or the signal that killed a child that
 * tried it. Exit 0 unless the arguments are wrong (2). */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *ename(int e)
{
	static const struct { int e; const char *n; } t[] = {
		{ EPERM, "EPERM" }, { ENOENT, "ENOENT" }, { ESRCH, "ESRCH" }, { EIO, "EIO" },
		{ EBADF, "EBADF" }, { EACCES, "EACCES" }, { EBUSY, "EBUSY" }, { EEXIST, "EEXIST" },
		{ EXDEV, "EXDEV" }, { ENOTDIR, "ENOTDIR" }, { EISDIR, "EISDIR" }, { EINVAL, "EINVAL" },
		{ ENOSPC, "ENOSPC" }, { EROFS, "EROFS" }, { ENOSYS, "ENOSYS" }, { ENOTTY, "ENOTTY" },
		{ EAFNOSUPPORT, "EAFNOSUPPORT" }, { ELOOP, "ELOOP" }, { EOPNOTSUPP, "EOPNOTSUPP" },
		{ ENXIO, "ENXIO" }, { ECONNREFUSED, "ECONNREFUSED" }, { ENOTEMPTY, "ENOTEMPTY" },
		{ EUSERS, "EUSERS" }, { EFAULT, "EFAULT" }, { ENOMEM, "ENOMEM" }, { ENETUNREACH, "ENETUNREACH" },
	};
	static char buf[32];
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (t[i].e == e)
			return t[i].n;
	snprintf(buf, sizeof buf, "errno%d", e);
	return buf;
}

static int report(const char *name, long rc)
{
	if (rc < 0)
		printf("%s: %s\n", name, ename(errno));
	else
		printf("%s: ok\n", name);
	return 0;
}

/* Run fn in a child: the filter may kill it, and that is the result. */
static int in_child(const char *name, void (*fn)(void))
{
	int st;
	pid_t p = fork();

	if (p == 0) {
		fn();
		_exit(0);
	}
	waitpid(p, &st, 0);
	if (WIFSIGNALED(st))
		printf("%s: %s\n", name, WTERMSIG(st) == SIGSYS ? "SIGSYS" : strsignal(WTERMSIG(st)));
	else
		printf("%s: exit %d\n", name, WEXITSTATUS(st));
	return 0;
}

static void x32(void)
{
	syscall(0x40000000 | SYS_getpid);
}

static void int80(void)
{
	long ret;
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
	(void)ret;
}

static int ioctl_attempt(const char *name, const char *file, unsigned long cmd, int high)
{
	struct fsxattr fx;
	int flags = FS_IMMUTABLE_FL, fd = file ? open(file, O_RDONLY) : 0;
	char c = 'x';
	void *arg = &c;
	unsigned long full = cmd | (high ? 0x100000000UL : 0);

	if (fd < 0)
		return report(name, -1);
	if (cmd == FS_IOC_FSSETXATTR) {
		memset(&fx, 0, sizeof fx);
		ioctl(fd, FS_IOC_FSGETXATTR, &fx);
		fx.fsx_projid = 4242;
		fx.fsx_xflags |= FS_XFLAG_PROJINHERIT;
		arg = &fx;
	} else if (cmd == FS_IOC_SETFLAGS) {
		arg = &flags;
	}
	return report(name, syscall(SYS_ioctl, fd, full, arg));
}

static int pids(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int any = 0;

	if (!d)
		return report("pids", -1);
	printf("pids:");
	while ((e = readdir(d))) {
		int p = atoi(e->d_name);
		if (p > 0 && p != getpid()) {
			printf(" %d", p);
			any = 1;
		}
	}
	printf(any ? "\n" : " none\n");
	closedir(d);
	return 0;
}

int main(int argc, char **argv)
{
	const char *a = argc > 1 ? argv[1] : "";
	const char *x = argc > 2 ? argv[2] : NULL, *y = argc > 3 ? argv[3] : NULL;
	char buf[64];

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(a, "true"))
		return 0;
	if (!strcmp(a, "exit") && x)
		return atoi(x);
	if (!strcmp(a, "kill-self") && x)
		return kill(getpid(), atoi(x)), 0;
	if (!strcmp(a, "sleep") && x)
		return sleep((unsigned)atoi(x)), 0;
	if (!strcmp(a, "write") && x) {
		int fd = open(x, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		return report("write", fd < 0 ? -1 : write(fd, "pwned\n", 6));
	}
	if (!strcmp(a, "append") && x) {
		int fd = open(x, O_WRONLY | O_APPEND);
		return report("append", fd < 0 ? -1 : write(fd, "pwned\n", 6));
	}
	if (!strcmp(a, "read") && x) {
		int fd = open(x, O_RDONLY);
		return report("read", fd < 0 ? -1 : read(fd, buf, sizeof buf));
	}
	if (!strcmp(a, "list") && x) {
		DIR *d = opendir(x);
		return report("list", d ? closedir(d) : -1);
	}
	if (!strcmp(a, "mkdir") && x)
		return report("mkdir", mkdir(x, 0755));
	if (!strcmp(a, "rename") && x && y)
		return report("rename", rename(x, y));
	if (!strcmp(a, "exchange") && x && y)
		return report("exchange", syscall(SYS_renameat2, AT_FDCWD, x, AT_FDCWD, y, 2 /* RENAME_EXCHANGE */));
	if (!strcmp(a, "renameat") && x && y && argc > 4) {
		/* renameat X Y DIR: both names relative to an fd on DIR */
		int d = open(argv[4], O_PATH | O_DIRECTORY);
		return report("renameat", d < 0 ? -1 : renameat(d, x, d, y));
	}
	if (!strcmp(a, "unlink") && x)
		return report("unlink", unlink(x));
	if (!strcmp(a, "rmdir") && x)
		return report("rmdir", rmdir(x));
	if (!strcmp(a, "link") && x && y)
		return report("link", link(x, y));
	if (!strcmp(a, "mount-tmpfs"))
		return report(a, mount("tmpfs", "/tmp", "tmpfs", 0, NULL));
	if (!strcmp(a, "remount") && x)
		return report("remount", mount(NULL, x, NULL, MS_REMOUNT | MS_BIND, NULL));
	if (!strcmp(a, "fsopen"))
		return report(a, syscall(SYS_fsopen, "tmpfs", 0));
	if (!strcmp(a, "unshare-user"))
		return report(a, unshare(CLONE_NEWUSER));
	if (!strcmp(a, "unshare-net"))
		return report(a, unshare(CLONE_NEWNET));
	if (!strcmp(a, "unshare-files"))
		return report(a, unshare(CLONE_FILES));
	if (!strcmp(a, "clone-newuser")) {
		long p = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
		if (p == 0)
			_exit(0);
		return report(a, p);
	}
	if (!strcmp(a, "clone3")) {
		uint64_t args[11] = { 0 };
		args[4] = SIGCHLD;
		long p = syscall(SYS_clone3, args, sizeof args);
		if (p == 0)
			_exit(0);
		return report(a, p);
	}
	if (!strcmp(a, "fork")) {
		pid_t p = fork();
		if (p == 0)
			_exit(0);
		if (p > 0)
			waitpid(p, NULL, 0);
		return report(a, p);
	}
	if (!strcmp(a, "ptrace") && x)
		return report("ptrace", syscall(SYS_ptrace, 16 /* PTRACE_ATTACH */, atoi(x), 0, 0));
	if (!strcmp(a, "vm-read") && x) {
		struct iovec l = { buf, 8 }, r = { (void *)0x400000, 8 };
		return report("vm-read", syscall(SYS_process_vm_readv, atoi(x), &l, 1, &r, 1, 0));
	}
	if (!strcmp(a, "pidfd-getfd") && x && y) {
		/* another process's fd y, through a pidfd of x */
		long pfd = syscall(SYS_pidfd_open, atoi(x), 0);
		if (pfd < 0)
			return report(a, -1);
		return report(a, syscall(SYS_pidfd_getfd, (int)pfd, atoi(y), 0));
	}
	if (!strcmp(a, "signal") && x && y)
		return report(a, kill(atoi(x), atoi(y)));
	if (!strcmp(a, "mem") && x) {
		/* a process's memory through /proc/PID/mem */
		char path[64];
		snprintf(path, sizeof path, "/proc/%s/mem", x);
		int fd = open(path, O_RDONLY);
		return report(a, fd < 0 ? -1 : pread(fd, buf, 8, 0x400000));
	}
	if (!strcmp(a, "tiocsti"))
		return ioctl_attempt(a, NULL, TIOCSTI, 0);
	if (!strcmp(a, "tiocsti-high"))
		return ioctl_attempt(a, NULL, TIOCSTI, 1);
	if (!strcmp(a, "fssetxattr") && x)
		return ioctl_attempt(a, x, FS_IOC_FSSETXATTR, 0);
	if (!strcmp(a, "fssetxattr-high") && x)
		return ioctl_attempt(a, x, FS_IOC_FSSETXATTR, 1);
	if (!strcmp(a, "setflags") && x)
		return ioctl_attempt(a, x, FS_IOC_SETFLAGS, 0);
	if (!strcmp(a, "keyctl"))
		return report(a, syscall(SYS_keyctl, 0 /* GET_KEYRING_ID */, -3 /* session */, 0));
	if (!strcmp(a, "bpf")) {
		char attr[128] = { 0 };
		return report(a, syscall(SYS_bpf, 0 /* MAP_CREATE */, attr, sizeof attr));
	}
	if (!strcmp(a, "perf")) {
		struct perf_event_attr pa;
		memset(&pa, 0, sizeof pa);
		pa.size = sizeof pa;
		pa.type = PERF_TYPE_SOFTWARE;
		pa.config = PERF_COUNT_SW_CPU_CLOCK;
		pa.exclude_kernel = 1;
		return report(a, syscall(SYS_perf_event_open, &pa, 0, -1, -1, 0));
	}
	if (!strcmp(a, "io-uring")) {
		char params[120] = { 0 };
		return report(a, syscall(SYS_io_uring_setup, 1, params));
	}
	if (!strcmp(a, "userfaultfd"))
		return report(a, syscall(SYS_userfaultfd, 0));
	if (!strcmp(a, "open-by-handle")) {
		struct { unsigned bytes; int type; unsigned char h[16]; } fh = { 8, 1, { 0 } };
		return report(a, syscall(SYS_open_by_handle_at, AT_FDCWD, &fh, O_RDONLY));
	}
	if (!strcmp(a, "setns"))
		return report(a, syscall(SYS_setns, 0, 0));
	if (!strcmp(a, "personality"))
		return report(a, personality(PER_LINUX32));
	if (!strcmp(a, "x32"))
		return in_child(a, x32);
	if (!strcmp(a, "int80"))
		return in_child(a, int80);
	if (!strcmp(a, "socket-inet"))
		return report(a, socket(AF_INET, SOCK_STREAM, 0));
	if (!strcmp(a, "socket-unix"))
		return report(a, socket(AF_UNIX, SOCK_STREAM, 0));
	if (!strcmp(a, "socket-netlink"))
		return report(a, socket(AF_NETLINK, SOCK_RAW, 0));
	if (!strcmp(a, "socketpair")) {
		int sv[2];
		return report(a, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	}
	if (!strcmp(a, "connect-abstract") && x) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		int s = socket(AF_UNIX, SOCK_STREAM, 0);
		size_t n = strlen(x);
		if (s < 0)
			return report(a, -1);
		memcpy(sa.sun_path + 1, x, n);
		return report(a, connect(s, (struct sockaddr *)&sa, (socklen_t)(sizeof(sa_family_t) + 1 + n)));
	}
	/* SysV IPC and POSIX message queues: what is made is removed again at
	 * once (the attempt is the making); the *-rm ones name another's id. */
	if (!strcmp(a, "msgget")) {
		long id = syscall(SYS_msgget, IPC_PRIVATE, 0600);
		if (id >= 0)
			syscall(SYS_msgctl, id, IPC_RMID, 0);
		return report(a, id);
	}
	if (!strcmp(a, "shmget")) {
		long id = syscall(SYS_shmget, IPC_PRIVATE, 4096, 0600);
		if (id >= 0)
			syscall(SYS_shmctl, id, IPC_RMID, 0);
		return report(a, id);
	}
	if (!strcmp(a, "semget")) {
		long id = syscall(SYS_semget, IPC_PRIVATE, 1, 0600);
		if (id >= 0)
			syscall(SYS_semctl, id, 0, IPC_RMID, 0);
		return report(a, id);
	}
	if (!strcmp(a, "msgsnd") && x) {
		struct { long type; char text[4]; } m = { 1, "hi" };
		return report(a, syscall(SYS_msgsnd, atoi(x), &m, sizeof m.text, IPC_NOWAIT));
	}
	if (!strcmp(a, "shmat") && x)
		return report(a, syscall(SYS_shmat, atoi(x), 0, SHM_RDONLY));
	if (!strcmp(a, "semop") && x) {
		struct sembuf op = { 0, 1, IPC_NOWAIT };
		return report(a, syscall(SYS_semop, atoi(x), &op, 1));
	}
	if (!strcmp(a, "msgctl-rm") && x)
		return report(a, syscall(SYS_msgctl, atoi(x), IPC_RMID, 0));
	if (!strcmp(a, "shmctl-rm") && x)
		return report(a, syscall(SYS_shmctl, atoi(x), IPC_RMID, 0));
	if (!strcmp(a, "semctl-rm") && x)
		return report(a, syscall(SYS_semctl, atoi(x), 0, IPC_RMID, 0));
	if (!strcmp(a, "mq-open") && x) { /* NAME without the slash; left in place */
		long fd = syscall(SYS_mq_open, x, O_RDWR | O_CREAT | O_CLOEXEC, 0600, NULL);
		return report(a, fd);
	}
	if (!strcmp(a, "mq-unlink") && x)
		return report(a, syscall(SYS_mq_unlink, x));
	if (!strcmp(a, "read-fd") && x)
		return report(a, read(atoi(x), buf, sizeof buf));
	if (!strcmp(a, "kill") && x)
		return report(a, kill(atoi(x), SIGTERM));
	if (!strcmp(a, "pids"))
		return pids();
	if (!strcmp(a, "euid"))
		return printf("euid: %u\n", (unsigned)geteuid()), 0;
	if (!strcmp(a, "cwd"))
		return printf("cwd: %s\n", getcwd(buf, sizeof buf) ? buf : "?"), 0;
	if (!strcmp(a, "env")) {
		extern char **environ;
		for (char **e = environ; *e; e++)
			printf("%s\n", *e);
		return 0;
	}
	fprintf(stderr, "ns-attempt: unknown attempt '%s'\n", a);
	return 2;
}

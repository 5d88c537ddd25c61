/* Kernel feature probes: see probe.h. Raw syscall numbers are used because
 * the libc headers (musl's especially) may predate the feature. */
#include "probe.h"

#include "fd.h"
#include "mount.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef __NR_quotactl_fd
#define __NR_quotactl_fd 443
#endif
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#define PROBE_CLONE_INTO_CGROUP 0x200000000ULL
#define PROBE_LANDLOCK_VERSION (1U << 0)
#define PROBE_RESOLVE_NO_MAGICLINKS 0x02
#define PROBE_RESOLVE_NO_SYMLINKS 0x04
#define PROBE_RESOLVE_BENEATH 0x08

int sbx_probe_kernel(unsigned *major, unsigned *minor, char *rel, size_t relsz)
{
	struct utsname u;
	char *end;
	unsigned long ma, mi;

	if (uname(&u) < 0)
		return errno;
	snprintf(rel, relsz, "%s", u.release);
	errno = 0;
	ma = strtoul(u.release, &end, 10);
	if (end == u.release || *end != '.' || errno)
		return EINVAL;
	mi = strtoul(end + 1, &end, 10);
	if (errno || ma > 1000 || mi > 1000)
		return EINVAL;
	*major = (unsigned)ma;
	*minor = (unsigned)mi;
	return 0;
}

int sbx_probe_sysctl(const char *path, long *val)
{
	char buf[64], *end;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return errno;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? errno : EINVAL;
	buf[n] = '\0';
	errno = 0;
	*val = strtol(buf, &end, 10);
	if (end == buf || errno || (*end && *end != '\n'))
		return EINVAL;
	return 0;
}

void sbx_probe_ns_limit(const char *const *kinds, char *name, size_t n, long *val)
{
	char path[64];
	long v;

	*val = -1;
	snprintf(name, n, "user.max_%s_namespaces", kinds[0]);
	for (const char *const *k = kinds; *k; k++) {
		snprintf(path, sizeof path, "/proc/sys/user/max_%s_namespaces", *k);
		if (sbx_probe_sysctl(path, &v))
			continue;
		if (k == kinds || v == 0) {
			snprintf(name, n, "user.max_%s_namespaces", *k);
			*val = v;
		}
		if (v == 0)
			return;
	}
}

/* Runs fn(wfd, arg) in a child. A failing child writes one message of sz
 * bytes to wfd: then SBX_CHILD_MSG with it in msg. Nothing written and a
 * clean exit: 0. Otherwise an errno (ECHILD: killed before reporting, which
 * proves nothing either way). */
#define SBX_CHILD_MSG (-1)
static int child_run(void (*fn)(int wfd, const void *arg), const void *arg, void *msg, size_t sz)
{
	int p[2], st;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return errno;
	pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return e;
	}
	if (pid == 0) {
		close(p[0]);
		fn(p[1], arg);
		_exit(0);
	}
	close(p[1]);
	do
		n = read(p[0], msg, sz);
	while (n < 0 && errno == EINTR);
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (n == (ssize_t)sz)
		return SBX_CHILD_MSG;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return ECHILD;
	return 0;
}

/* The probes' protocol: the child writes two ints (step, errno). */
static int in_child(void (*fn)(int wfd, const void *arg), int *step)
{
	int r[2] = { 0, 0 }, rc = child_run(fn, NULL, r, sizeof r);

	if (rc != SBX_CHILD_MSG)
		return rc;
	if (step)
		*step = r[0];
	return r[1] ? r[1] : EIO;
}

static void report(int wfd, int step, int err)
{
	int r[2] = { step, err };
	(void)!write(wfd, r, sizeof r);
	_exit(1);
}

int sbx_userns_enter(int *step)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();

	*step = SBX_USERNS_UNSHARE;
	if (unshare(CLONE_NEWUSER) < 0)
		return errno;
	*step = SBX_USERNS_MAP;
	snprintf(map, sizeof map, "0 %u 1\n", (unsigned)uid);
	if (sbx_write_file("/proc/self/setgroups", "deny") < 0 && errno != ENOENT)
		return errno;
	if (sbx_write_file("/proc/self/uid_map", map) < 0)
		return errno;
	snprintf(map, sizeof map, "0 %u 1\n", (unsigned)gid);
	if (sbx_write_file("/proc/self/gid_map", map) < 0)
		return errno;
	*step = SBX_USERNS_MOUNTNS;
	if (unshare(CLONE_NEWNS) < 0)
		return errno;
	return 0;
}

static void userns_child(int wfd, const void *arg)
{
	int step, e = sbx_userns_enter(&step);

	if (e)
		report(wfd, step, e);
}

int sbx_probe_userns(enum sbx_userns_step *step)
{
	int s = 0, e = in_child(userns_child, &s);

	*step = (enum sbx_userns_step)s;
	return e;
}

static void seccomp_child(int wfd, const void *arg)
{
	struct sock_filter allow[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	struct sock_fprog prog = { .len = 1, .filter = allow };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		report(wfd, 1, errno);
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
		report(wfd, 2, errno);
}

int sbx_probe_seccomp(void)
{
	return in_child(seccomp_child, NULL);
}

int sbx_probe_landlock(int *abi)
{
	long r = syscall(__NR_landlock_create_ruleset, NULL, 0, PROBE_LANDLOCK_VERSION);

	if (r < 0)
		return errno;
	*abi = (int)r;
	return 0;
}

int sbx_probe_clone3_cgroup(void)
{
	/* struct clone_args up to and including .cgroup (CLONE_ARGS_SIZE_VER2). */
	uint64_t args[11];
	long r;

	memset(args, 0, sizeof args);
	args[0] = PROBE_CLONE_INTO_CGROUP;  /* flags */
	args[4] = SIGCHLD;                  /* exit_signal */
	args[10] = 0x7fffffff;              /* cgroup: above any RLIMIT_NOFILE, never open */
	r = sbx_clone3(args, sizeof args);
	if (r == 0)
		_exit(0);  /* cannot happen with fd -1; never run the caller twice */
	if (r > 0) {
		waitpid((pid_t)r, NULL, 0);
		return EINVAL;
	}
	return errno == EBADF ? 0 : errno;
}

int sbx_probe_pidfd(void)
{
	long fd = sbx_pidfd_open(getpid());

	if (fd < 0)
		return errno;
	close((int)fd);
	return 0;
}

int sbx_probe_openat2(void)
{
	long fd = sbx_openat2(AT_FDCWD, ".", O_PATH | O_DIRECTORY | O_CLOEXEC,
			      PROBE_RESOLVE_BENEATH | PROBE_RESOLVE_NO_SYMLINKS | PROBE_RESOLVE_NO_MAGICLINKS);

	if (fd < 0)
		return errno;
	close((int)fd);
	return 0;
}

int sbx_probe_quotactl_fd(void)
{
	long r = syscall(__NR_quotactl_fd, -1, 0, 0, NULL);

	if (r == 0 || errno == EBADF)
		return 0;
	return errno;
}

/* sbx_probe_mounts: the child writes (errno, step text) on failure. */
struct mount_msg {
	int err;
	char step[124];
};

static void mount_fail(int wfd, int err, const char *step, const char *what)
{
	struct mount_msg m = { err ? err : EIO, "" };

	snprintf(m.step, sizeof m.step, "%s %s", step, what);
	(void)!write(wfd, &m, sizeof m);
	_exit(1);
}

struct mounts_arg {
	int api;
	const char *src;
};

static void mounts_child(int wfd, const void *varg)
{
	const struct mounts_arg *ma = varg;
	int api = ma->api;
	const char *src = ma->src;
	const char *step = "";
	struct stat a, b;
	struct statfs sf;
	int st, e, srcfd, target, rc;

	e = sbx_userns_enter(&st);
	if (e)
		mount_fail(wfd, e, "create", "a user and mount namespace");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		mount_fail(wfd, errno, "make", "every mount private");
	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
		mount_fail(wfd, errno, "mount a tmpfs on", "/tmp");
	if (chdir("/tmp") < 0 || mkdir("t", 0755) < 0)
		mount_fail(wfd, errno, "create", "/tmp/t");
	srcfd = open(src, O_PATH | O_CLOEXEC);
	target = open("t", O_PATH | O_CLOEXEC);
	if (srcfd < 0 || target < 0)
		mount_fail(wfd, errno, "open", srcfd < 0 ? src : "/tmp/t");
	rc = sbx_mnt_bind((enum sbx_mnt_api)api, srcfd, target, AT_FDCWD, "t",
			  SBX_MNT_RDONLY | SBX_MNT_NOSUID | SBX_MNT_NODEV, 1, &step);
	if (rc == SBX_MNT_RACE)
		mount_fail(wfd, ESTALE, "find the new mount of", src);
	if (rc)
		mount_fail(wfd, errno, step, src);
	if (stat("t", &a) < 0 || fstat(srcfd, &b) < 0 || statfs("t", &sf) < 0)
		mount_fail(wfd, errno, "stat the bind of", src);
	if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		mount_fail(wfd, ESTALE, "find the object bound at", src);
	if ((sf.f_flags & 0x7) != 0x7)  /* ST_RDONLY | ST_NOSUID | ST_NODEV */
		mount_fail(wfd, EPERM, "make read-only, nosuid and nodev the bind of", src);
	rc = sbx_mnt_set((enum sbx_mnt_api)api, AT_FDCWD, ".", SBX_MNT_RDONLY, &step);
	if (rc)
		mount_fail(wfd, rc == SBX_MNT_RACE ? ESTALE : errno, rc == SBX_MNT_RACE ? "find" : step,
			   "the tmpfs");
	if (mkdir("u", 0755) == 0 || errno != EROFS)
		mount_fail(wfd, EPERM, "make read-only", "the tmpfs");
}

int sbx_probe_mounts(int api, const char *src, char *step, size_t n)
{
	struct mount_msg m;
	struct mounts_arg a = { api, src };
	int rc = child_run(mounts_child, &a, &m, sizeof m);

	step[0] = '\0';
	if (rc != SBX_CHILD_MSG)
		return rc;
	m.step[sizeof m.step - 1] = '\0';
	snprintf(step, n, "%s", m.step);
	return m.err;
}

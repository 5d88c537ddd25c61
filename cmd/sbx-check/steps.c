/* `sbx-check host`, the isolation items: the steps sbx-ns takes to build a
 * sandbox, tried in the same order in throw-away processes (a new user
 * namespace and its maps; mount, pid, ipc, uts, network and cgroup
 * namespaces; a tmpfs root; a fresh proc; pivot_root; the user namespace
 * limit spent and proven spent; a seccomp filter; a Landlock ruleset), one
 * item each. Inside a container, a refusal is named as the container's and
 * its fix is the container's setting (lib/container.h), never a host boot
 * parameter. */
#include "check.h"
#include "container.h"
#include "fd.h"
#include "probe.h"

#include <errno.h>
#include <stdnoreturn.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef __NR_landlock_restrict_self
#define __NR_landlock_restrict_self 446
#endif

enum step { ST_USERNS = 1, ST_NS, ST_TMPFS, ST_PROC, ST_PIVOT, ST_LIMIT, ST_SECCOMP, ST_LANDLOCK,
	    ST_END };

/* One record per step tried: 0 or an errno, and a value (the Landlock ABI,
 * 1 when the limit did not hold, 1 when proc took no hidepid). */
struct rec {
	int step, err, val;
};

static void put(int wfd, int step, int err, int val)
{
	struct rec r = { step, err, val };
	(void)!write(wfd, &r, sizeof r);
}

noreturn static void fail(int wfd, int step, int err)
{
	put(wfd, step, err, 0);
	_exit(1);
}

/* Map uid and gid to 0 in the namespace just created (as sbx-ns's outer
 * process does for the sandbox); -1 with errno on failure. */
static int map_self(uid_t uid, gid_t gid)
{
	char map[64];

	if (sbx_write_file("/proc/self/setgroups", "deny") < 0 && errno != ENOENT)
		return -1;
	snprintf(map, sizeof map, "0 %u 1\n", (unsigned)uid);
	if (sbx_write_file("/proc/self/uid_map", map) < 0)
		return -1;
	snprintf(map, sizeof map, "0 %u 1\n", (unsigned)gid);
	return sbx_write_file("/proc/self/gid_map", map);
}

/* After the limit is set: one nested user namespace is allowed (the
 * command's own), a second one must be refused. 0 when it was. */
static int limit_holds(void)
{
	pid_t p = fork();
	int st;

	if (p < 0)
		return -1;
	if (p == 0) {
		if (unshare(CLONE_NEWUSER) < 0 || map_self(0, 0) < 0)
			_exit(2);
		_exit(unshare(CLONE_NEWUSER) == 0 ? 1 : 0);
	}
	while (waitpid(p, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static int landlock_loads(int *abi)
{
	struct { unsigned long long fs, net, scoped; } attr = { .fs = 1ULL << 0 };
	long fd = syscall(__NR_landlock_create_ruleset, NULL, 0, 1U);

	if (fd < 0)
		return errno;
	*abi = (int)fd;
	fd = syscall(__NR_landlock_create_ruleset, &attr, sizeof attr.fs, 0U);
	if (fd < 0)
		return errno;
	if (syscall(__NR_landlock_restrict_self, (int)fd, 0U) < 0)
		return errno;
	close((int)fd);
	return 0;
}

/* Pid 1 of the new pid namespace: the root, proc, pivot_root, the limit,
 * then the two filters, each reported. */
noreturn static void init_steps(int wfd)
{
	static const char *const hide[] = { "hidepid=invisible", "hidepid=2", NULL };
	struct sock_filter allow[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	struct sock_fprog prog = { .len = 1, .filter = allow };
	int i, abi = 0, e;

	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0 || chdir("/tmp") < 0)
		fail(wfd, ST_TMPFS, errno);
	put(wfd, ST_TMPFS, 0, 0);
	if (mkdir("proc", 0555) < 0)
		fail(wfd, ST_PROC, errno);
	for (i = 0; i < 3; i++)
		if (mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, hide[i]) == 0)
			break;
	if (i == 3)
		fail(wfd, ST_PROC, errno);
	put(wfd, ST_PROC, 0, i == 2);
	if (syscall(SYS_pivot_root, ".", ".") < 0 || umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		fail(wfd, ST_PIVOT, errno);
	put(wfd, ST_PIVOT, 0, 0);
	if (sbx_write_file("/proc/sys/user/max_user_namespaces", "1") < 0)
		fail(wfd, ST_LIMIT, errno);
	put(wfd, ST_LIMIT, 0, limit_holds() < 0);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
		put(wfd, ST_SECCOMP, errno, 0);
	else
		put(wfd, ST_SECCOMP, 0, 0);
	e = landlock_loads(&abi);
	put(wfd, ST_LANDLOCK, e, abi);
	_exit(0);
}

noreturn static void outer_steps(int wfd, uid_t uid, gid_t gid)
{
	pid_t p;
	int st;

	if (unshare(CLONE_NEWUSER) < 0)
		fail(wfd, ST_USERNS, errno);
	if (map_self(uid, gid) < 0)
		fail(wfd, ST_USERNS, errno);
	put(wfd, ST_USERNS, 0, 0);
	if (unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET |
		    CLONE_NEWCGROUP) < 0)
		fail(wfd, ST_NS, errno);
	put(wfd, ST_NS, 0, 0);
	p = fork();
	if (p < 0)
		fail(wfd, ST_NS, errno);
	if (p == 0)
		init_steps(wfd);
	close(wfd);
	while (waitpid(p, &st, 0) < 0 && errno == EINTR)
		;
	_exit(0);
}

/* Runs the steps; recs[step] is filled for every step that was tried. */
static void try_steps(struct rec *recs, int *tried)
{
	int p[2], st;
	pid_t pid;
	struct rec r;
	uid_t uid = getuid();
	gid_t gid = getgid();

	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return;
	}
	if (pid == 0) {
		close(p[0]);
		outer_steps(p[1], uid, gid);
	}
	close(p[1]);
	for (;;) {
		ssize_t n = read(p[0], &r, sizeof r);
		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof r)
			break;
		if (r.step > 0 && r.step < ST_END) {
			recs[r.step] = r;
			tried[r.step] = 1;
		}
	}
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
}

/* 1 when errno e from a probed call is a seccomp filter's answer. */
static int chk_filtered(int e)
{
	return (e == ENOSYS || e == EPERM) && sbx_seccomp_filtered() == 1;
}

void chk_refused(struct chk_report *r, enum chk_class cls, const char *name, int e,
		 const char *what, const char *kernel_fix)
{
	char ctr[320];
	struct chk_item *it;

	if (chk_filtered(e)) {
		int in = sbx_container(ctr, sizeof ctr) != SBX_CTR_NONE;
		it = chk_add(r, cls, name, CHK_MISSING,
			     "%s: %s, from the seccomp filter this process runs under%s%s%s, not "
			     "necessarily the kernel", what, strerror(e), in ? " (" : "", in ? ctr : "",
			     in ? ")" : "");
		chk_fix(it, "%s", in ? sbx_fix_ctr_seccomp
				     : "run sbx outside the seccomp filter that refuses it (systemd "
				       "SystemCallFilter=, a container runtime's profile)");
		return;
	}
	it = chk_add(r, cls, name, e == ENOSYS || e == EINVAL ? CHK_UNSUPPORTED : CHK_MISSING,
		     "%s: %s", what, strerror(e));
	chk_fix(it, "%s", kernel_fix);
}

/* The fix for the user namespace: the container's setting inside one,
 * otherwise the sysctl or LSM setting that blocks it on this host. ENOSPC
 * is a count: user.max_user_namespaces of this user namespace or of one
 * above it is reached (0 allows none). A sysctl is named only when this
 * kernel has it (clone and aa are -1 when the file is absent). */
static void userns_fix(struct chk_item *it, int e, int in_ctr, long max, long clone, long aa)
{
	char now[48] = "";

	if (max >= 0)
		snprintf(now, sizeof now, " (%ld now)", max);
	if (e == EPERM && sbx_chrooted())
		chk_fix(it, "%s", sbx_fix_chroot);
	else if (in_ctr && (e == EPERM || e == ENOSYS))
		chk_fix(it, "%s", sbx_fix_ctr_userns);
	else if (e == ENOSPC || max == 0)
		chk_fix(it, in_ctr ? "raise the user namespace count limit user.max_user_namespaces%s: in the "
			"container's user namespace (Kubernetes hostUsers: false gives it one of its own) "
			"or on the host"
			: "raise the user namespace count limit: sysctl -w user.max_user_namespaces=15000%s", now);
	else if (clone == 0)
		chk_fix(it, "sysctl -w kernel.unprivileged_userns_clone=1");
	else if (aa == 1)
		chk_fix(it, "load sbx-ns's AppArmor profile (see apparmor-userns), or sysctl -w "
			"kernel.apparmor_restrict_unprivileged_userns=0");
	else
		chk_fix(it, "allow unshare(CLONE_NEWUSER) for this user (a container runtime's "
			"seccomp profile or an LSM is refusing it)");
}

static const struct {
	const char *name, *ok, *what;
} stepinfo[ST_END] = {
	[ST_USERNS] = { "userns", NULL, "unshare(CLONE_NEWUSER) or its uid/gid maps failed" },
	[ST_NS] = { "namespaces", "new mount, pid, ipc, uts, network and cgroup namespaces",
		    "unshare of the mount, pid, ipc, uts, network and cgroup namespaces failed" },
	[ST_TMPFS] = { "root-tmpfs", "a tmpfs mounts on /tmp as the new root",
		       "mounting a tmpfs on /tmp for the new root failed" },
	[ST_PROC] = { "proc", "a fresh proc mounts in the new pid namespace",
		      "mounting a fresh proc in the new pid namespace failed" },
	[ST_PIVOT] = { "pivot_root", "pivot_root onto the new root works",
		       "pivot_root onto the new root failed" },
	[ST_LIMIT] = { "userns-limit", "the sandbox's user namespace limit is spent: a second "
		       "nested user namespace is refused",
		       "writing 1 to the sandbox's /proc/sys/user/max_user_namespaces failed" },
	[ST_SECCOMP] = { "seccomp", "a seccomp filter loads", "loading a seccomp filter failed" },
	[ST_LANDLOCK] = { "landlock", NULL, "creating or applying a Landlock ruleset failed" },
};

static void step_failed(struct chk_report *r, int s, int e, const char *ctr, int in_ctr,
			const char *sys, long max, long clone, long aa)
{
	struct chk_item *it;
	char masked[256];

	if (s == ST_USERNS) {
		it = chk_add(r, CLS_ISOLATION, "userns", CHK_MISSING, "%s: %s%s (%s%s%s)",
			     stepinfo[s].what, strerror(e),
			     e == ENOSPC ? ", a user namespace count limit (user.max_user_namespaces) is reached" : "",
			     sys, in_ctr ? "; " : "", in_ctr ? ctr : "");
		userns_fix(it, e, in_ctr, max, clone, aa);
		return;
	}
	if (s == ST_NS && e == ENOSPC) {
		/* A count: the limit at 0 of the kinds this step makes. */
		static const char *const kinds[] = { "mnt", "pid", "ipc", "uts", "net", "cgroup", NULL };
		char name[64], now[32] = "";
		long v;

		sbx_probe_ns_limit(kinds, name, sizeof name, &v);
		if (v >= 0)
			snprintf(now, sizeof now, "=%ld", v);
		it = chk_add(r, CLS_ISOLATION, stepinfo[s].name, CHK_MISSING, "%s: %s, a namespace count "
			     "limit is reached (%s%s%s%s)", stepinfo[s].what, strerror(e), name, now,
			     in_ctr ? "; " : "", in_ctr ? ctr : "");
		if (in_ctr)
			chk_fix(it, "raise the namespace count limit %s: in the container's user namespace "
				"(Kubernetes hostUsers: false gives it one of its own) or on the host", name);
		else
			chk_fix(it, "raise the namespace count limit: sysctl -w %s=15000", name);
		return;
	}
	it = chk_add(r, CLS_ISOLATION, stepinfo[s].name, CHK_MISSING, "%s: %s%s%s%s",
		     stepinfo[s].what, strerror(e), in_ctr ? " (" : "", in_ctr ? ctr : "",
		     in_ctr ? ")" : "");
	if (s == ST_PROC && e == EPERM && in_ctr)
		chk_fix(it, "%s", sbx_fix_ctr_proc);
	else if (s == ST_PROC && e == EPERM && sbx_proc_masked(masked, sizeof masked))
		chk_fix(it, "unmount %s (a mount covering part of /proc forbids a fresh one)", masked);
	else if (s == ST_PIVOT && e == EINVAL)
		chk_fix(it, "/ must be a real mount, not the initramfs rootfs");
	else if (in_ctr && (e == EPERM || e == ENOSYS))
		chk_fix(it, "%s", sbx_fix_ctr_seccomp);
	else
		chk_fix(it, "allow this step for the user running sbx-ns (an LSM or a seccomp "
			"filter is refusing it)");
}

void chk_steps(struct chk_report *r)
{
	struct rec recs[ST_END];
	int tried[ST_END] = { 0 }, failed = 0, abi = 0, e, in_ctr;
	long max = -1, clone = -1, aa = -1;
	char sys[160], ctr[320], masked[256];
	struct chk_item *it;

	memset(recs, 0, sizeof recs);
	in_ctr = sbx_container(ctr, sizeof ctr) != SBX_CTR_NONE;
	if (in_ctr)
		chk_add(r, CLS_EXTRA, "container", CHK_OK, "running in a container (%s): the fixes "
			"below are its settings", ctr);
	snprintf(sys, sizeof sys, "for uid %u", (unsigned)getuid());
	if (!sbx_probe_sysctl("/proc/sys/user/max_user_namespaces", &max))
		chk_appendf(sys, sizeof sys, ", user.max_user_namespaces=%ld", max);
	if (!sbx_probe_sysctl("/proc/sys/kernel/unprivileged_userns_clone", &clone))
		chk_appendf(sys, sizeof sys, ", kernel.unprivileged_userns_clone=%ld", clone);
	if (!sbx_probe_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", &aa))
		chk_appendf(sys, sizeof sys, ", kernel.apparmor_restrict_unprivileged_userns=%ld", aa);

	try_steps(recs, tried);
	for (int s = ST_USERNS; s <= ST_LIMIT; s++) {
		if (failed) {
			it = chk_add(r, CLS_ISOLATION, stepinfo[s].name, CHK_MISSING,
				     "not tried: %s failed first", stepinfo[failed].name);
			/* docker's default refuses both: name the second fix now. */
			if (s == ST_PROC && in_ctr && sbx_proc_masked(masked, sizeof masked)) {
				chk_appendf(it->detail, sizeof it->detail, "; it would fail too: %s "
					    "is masked", masked);
				chk_fix(it, "%s", sbx_fix_ctr_proc);
			}
			continue;
		}
		if (!tried[s]) {
			it = chk_add(r, CLS_ISOLATION, stepinfo[s].name, CHK_MISSING,
				     "the probe ended before this step (killed?)");
			failed = s;
			continue;
		}
		if (recs[s].err) {
			step_failed(r, s, recs[s].err, ctr, in_ctr, sys, max, clone, aa);
			failed = s;
			continue;
		}
		if (s == ST_USERNS)
			chk_add(r, CLS_ISOLATION, "userns", CHK_OK, "user namespaces work %s", sys);
		else if (s == ST_LIMIT && recs[s].val)
			chk_add(r, CLS_ISOLATION, "userns-limit", CHK_FAIL, "the limit was set to 1 but "
				"a second nested user namespace could still be created");
		else if (s == ST_PROC)
			chk_add(r, CLS_ISOLATION, "proc", CHK_OK, "%s%s", stepinfo[s].ok,
				recs[s].val ? " (without hidepid)" : " (hidepid)");
		else
			chk_add(r, CLS_ISOLATION, stepinfo[s].name, CHK_OK, "%s", stepinfo[s].ok);
	}

	/* The filters: inside the sandbox when it could be built, else here. */
	if (tried[ST_SECCOMP])
		e = recs[ST_SECCOMP].err;
	else
		e = sbx_probe_seccomp();
	if (!e)
		chk_add(r, CLS_ISOLATION, "seccomp", CHK_OK, "a seccomp filter loads");
	else
		chk_refused(r, CLS_ISOLATION, "seccomp", e, "loading a seccomp filter failed",
			    "build the kernel with CONFIG_SECCOMP_FILTER");
	if (tried[ST_LANDLOCK]) {
		e = recs[ST_LANDLOCK].err;
		abi = recs[ST_LANDLOCK].val;
	} else {
		e = sbx_probe_landlock(&abi);
	}
	if (!e) {
		/* What this ABI adds, as sbx-ns uses it. */
		chk_add(r, CLS_EXTRA, "landlock", CHK_OK, "ABI %d: file access rules%s%s", abi,
			abi >= 4 ? ", TCP bind and connect rules (ABI 4)" : "",
			abi >= 6 ? ", signals and abstract Unix sockets scoped to the sandbox (ABI 6)" :
			"; signals and abstract Unix sockets not scoped before ABI 6");
	} else if (chk_filtered(e)) {
		chk_refused(r, CLS_EXTRA, "landlock", e, stepinfo[ST_LANDLOCK].what, sbx_fix_ctr_seccomp);
	} else {
		it = chk_add(r, CLS_EXTRA, "landlock", CHK_MISSING,
			     "landlock: %s; sbx-ns confines by mounts alone and --require-landlock "
			     "refuses", strerror(e));
		chk_fix(it, "%s", in_ctr ? "the host's kernel must enable Landlock; a container "
			"cannot change that" : "boot with landlock in lsm= (CONFIG_SECURITY_LANDLOCK)");
	}
}

/* Inside a container, a fix that changes the host's boot or sysctls is one
 * its user cannot act on: name the container's setting instead. */
void chk_container_fixes(struct chk_report *r)
{
	char ctr[320];

	if (sbx_container(ctr, sizeof ctr) == SBX_CTR_NONE)
		return;
	for (size_t i = 0; i < r->n; i++) {
		struct chk_item *it = &r->items[i];
		if (!strstr(it->fix, "boot ") && !strstr(it->fix, "sysctl ") &&
		    !strstr(it->fix, "(boot with"))
			continue;
		if (!strncmp(it->name, "cgroup", 6))
			chk_fix(it, "%s", sbx_fix_ctr_cgroup);
		else
			chk_fix(it, "the host's kernel or boot settings decide this; a container "
				"cannot change them: run it on a host that offers it");
	}
}

/* `sbx-check host`: what this kernel and this administrator's setup offer,
 * one item per capability, each missing one with what to do about it. */
#include "cgroup.h"
#include "check.h"
#include "die.h"
#include "exitcodes.h"
#include "policy.h"
#include "probe.h"
#include "quota.h"
#include "walk.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/dqblk_xfs.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef XFS_SUPER_MAGIC
#define XFS_SUPER_MAGIC 0x58465342
#endif

static void kernel(struct chk_report *r)
{
	unsigned ma = 0, mi = 0;
	char rel[128] = "";
	int e = sbx_probe_kernel(&ma, &mi, rel, sizeof rel);

	if (e) {
		chk_add(r, CLS_LIMITS, "kernel", CHK_UNSUPPORTED,
			"cannot read the kernel release '%s': %s", rel, strerror(e));
		return;
	}
	if (ma > 5 || (ma == 5 && mi >= 14)) {
		chk_add(r, CLS_LIMITS, "kernel", CHK_OK, "Linux %s", rel);
		return;
	}
	/* Before 5.14 there is no quotactl_fd: sbx-quota and the quota item
	 * below ask the filesystem's block device instead (lib/quota/quota.c). */
	chk_add(r, CLS_LIMITS, "kernel", CHK_OK,
		"Linux %s (older than 5.14: quotas are set through the block device, no quotactl_fd)", rel);
}

static void simple(struct chk_report *r, enum chk_class cls, const char *name, int e,
		   const char *okmsg, const char *what, const char *fix)
{
	if (!e)
		chk_add(r, cls, name, CHK_OK, "%s", okmsg);
	else
		chk_refused(r, cls, name, e, what, fix);
}

static void kernel_features(struct chk_report *r)
{
	simple(r, CLS_EXTRA, "clone3-cgroup", sbx_probe_clone3_cgroup(),
	       "clone3 knows CLONE_INTO_CGROUP",
	       "clone3(CLONE_INTO_CGROUP) refused; sbx-cgroup falls back to fork and cgroup.procs",
	       "Linux 5.7 or newer");
	simple(r, CLS_EXTRA, "pidfd", sbx_probe_pidfd(), "pidfd_open works",
	       "pidfd_open failed", "Linux 5.3 or newer");
	simple(r, CLS_EXTRA, "openat2", sbx_probe_openat2(),
	       "openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS works",
	       "openat2 failed", "Linux 5.6 or newer");
	simple(r, CLS_EXTRA, "quotactl_fd", sbx_probe_quotactl_fd(), "quotactl_fd exists",
	       "quotactl_fd failed; sbx-quota uses quotactl on the filesystem's block device",
	       "Linux 5.14 or newer");
}

/* The cgroup2 mount point from /proc/self/mountinfo, and whether cgroup v1
 * hierarchies are mounted beside it (the hybrid layout). */
static int cgroup2_mount(char *mnt, size_t n, char *v1, size_t v1n)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int found = 0;

	v1[0] = '\0';
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f)) {
		char *sep = strstr(line, " - "), path[1024], fstype[64], src[256], opts[1024];
		if (!sep || sscanf(line, "%*s %*s %*s %*s %1023s", path) != 1 ||
		    sscanf(sep + 3, "%63s %255s %1023s", fstype, src, opts) != 3)
			continue;
		if (!strcmp(fstype, "cgroup2") && !found) {
			snprintf(mnt, n, "%s", path);
			found = 1;
		} else if (!strcmp(fstype, "cgroup")) {
			static const char *const ctl[] = { "cpu", "memory", "pids" };
			for (size_t i = 0; i < 3; i++) {
				char *o = opts;
				size_t l = strlen(ctl[i]);
				while ((o = strstr(o, ctl[i]))) {
					if ((o == opts || o[-1] == ',') && (o[l] == ',' || !o[l]) &&
					    !strstr(v1, ctl[i]))
						chk_appendf(v1, v1n, "%s%s", v1[0] ? " " : "", ctl[i]);
					o += l;
				}
			}
		}
	}
	fclose(f);
	return found;
}

static int read_small(const char *dir, const char *file, char *buf, size_t n)
{
	char p[4096];
	int fd;
	ssize_t k;

	snprintf(p, sizeof p, "%s/%s", dir, file);
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	k = read(fd, buf, n - 1);
	close(fd);
	if (k < 0)
		return -1;
	buf[k] = '\0';
	if (k && buf[k - 1] == '\n')
		buf[k - 1] = '\0';
	return 0;
}

static int has_word(const char *list, const char *w)
{
	size_t l = strlen(w);
	const char *p = list;

	while ((p = strstr(p, w))) {
		if ((p == list || p[-1] == ' ') && (p[l] == ' ' || !p[l]))
			return 1;
		p += l;
	}
	return 0;
}

/* The words of need that are absent from list, space-separated. */
static void lacking(const char *list, char *out, size_t n)
{
	static const char *const need[] = { "cpu", "memory", "pids" };

	out[0] = '\0';
	for (size_t i = 0; i < 3; i++)
		if (!has_word(list, need[i]))
			chk_appendf(out, n, "%s%s", out[0] ? " " : "", need[i]);
}

static void cgroup(struct chk_report *r, const struct chk_opts *o)
{
	char mnt[1024], v1[64], ctl[512], miss[64];
	const char *dir;
	struct chk_item *it;
	struct statfs sf;
	struct stat st;
	uid_t me = getuid();

	if (!cgroup2_mount(mnt, sizeof mnt, v1, sizeof v1)) {
		it = chk_add(r, CLS_LIMITS, "cgroup2", CHK_MISSING, "no cgroup2 filesystem is mounted");
		chk_fix(it, "mount -t cgroup2 none /sys/fs/cgroup (boot with cgroup_no_v1=all)");
		return;
	}
	chk_add(r, CLS_LIMITS, "cgroup2", CHK_OK, "mounted at %s%s", mnt,
		v1[0] ? " (hybrid: cgroup v1 hierarchies mounted too)" : "");

	dir = o->cgroup_root ? o->cgroup_root : mnt;
	if (read_small(dir, "cgroup.controllers", ctl, sizeof ctl) < 0) {
		it = chk_add(r, CLS_LIMITS, "cgroup-controllers", CHK_MISSING,
			     "cannot read %s/cgroup.controllers: %s", dir, strerror(errno));
		chk_fix(it, "give --cgroup-root a directory of the cgroup2 filesystem");
	} else {
		lacking(ctl, miss, sizeof miss);
		if (!miss[0]) {
			chk_add(r, CLS_LIMITS, "cgroup-controllers", CHK_OK,
				"%s offers cpu, memory and pids", dir);
		} else {
			it = chk_add(r, CLS_LIMITS, "cgroup-controllers", CHK_UNSUPPORTED,
				     "%s offers only '%s', not %s%s%s: no hard limits on this host", dir,
				     ctl[0] ? ctl : "(none)", miss, v1[0] ? "; the cgroup v1 hierarchies hold " : "", v1);
			chk_fix(it, "boot with cgroup_no_v1=all (or systemd.unified_cgroup_hierarchy=1) "
				"so cpu, memory and pids move to cgroup v2");
		}
	}

	if (!o->cgroup_root) {
		it = chk_add(r, CLS_LIMITS, "cgroup-root", CHK_NOTCONF,
			     "delegation and swap control not checked");
		chk_fix(it, "pass --cgroup-root DIR (the cgroup v2 directory sbx-cgroup will use)");
		return;
	}
	if (statfs(dir, &sf) < 0 || sf.f_type != CGROUP2_SUPER_MAGIC) {
		it = chk_add(r, CLS_LIMITS, "cgroup-root", CHK_MISSING, "%s is not on cgroup2", dir);
		chk_fix(it, "give a directory of the cgroup2 mount %s", mnt);
		return;
	}
	if (read_small(dir, "cgroup.subtree_control", ctl, sizeof ctl) == 0) {
		lacking(ctl, miss, sizeof miss);
		if (miss[0]) {
			it = chk_add(r, CLS_LIMITS, "cgroup-subtree", CHK_MISSING,
				     "%s enables '%s' for children, not %s", dir, ctl[0] ? ctl : "(none)",
				     miss);
			chk_fix(it, "echo '+cpu +memory +pids' > %s/cgroup.subtree_control", dir);
		} else {
			chk_add(r, CLS_LIMITS, "cgroup-subtree", CHK_OK,
				"%s enables cpu, memory and pids for children", dir);
		}
	}
	/* Delegation: the caller must own the directory and the files that
	 * move processes and enable controllers (root needs nothing). */
	{
		static const char *const own[] = { "", "/cgroup.procs", "/cgroup.subtree_control",
						   "/cgroup.threads" };
		char p[4096], bad[512] = "";
		for (size_t i = 0; i < 4; i++) {
			snprintf(p, sizeof p, "%s%s", dir, own[i]);
			if (lstat(p, &st) < 0 || (me != 0 && st.st_uid != me))
				chk_appendf(bad, sizeof bad, "%s%s", bad[0] ? " " : "", p);
		}
		if (!bad[0]) {
			chk_add(r, CLS_LIMITS, "cgroup-delegation", CHK_OK, "uid %u may manage %s",
				(unsigned)me, dir);
		} else {
			it = chk_add(r, CLS_LIMITS, "cgroup-delegation", CHK_MISSING,
				     "not owned by uid %u: %s", (unsigned)me, bad);
			chk_fix(it, "chown %u %s (or sbx-cgroup --delegate %s --user %u)", (unsigned)me, bad,
				dir, (unsigned)me);
		}
	}
	/* Placement: owning the subtree is not enough, the caller's own
	 * process must sit inside it (sbx_cg_placement). */
	{
		char own[4200], anc[4200];
		int pl = sbx_cg_placement(dir, own, sizeof own, anc, sizeof anc);
		if (pl == 0) {
			chk_add(r, CLS_LIMITS, "cgroup-placement", CHK_OK,
				"this process's cgroup %s may place commands below %s", own, dir);
		} else if (pl == 1) {
			it = chk_add(r, CLS_LIMITS, "cgroup-placement", CHK_MISSING,
				     "this process's cgroup %s is outside the subtree uid %u may manage: "
				     "placing a command below %s needs write access to %s/cgroup.procs",
				     own, (unsigned)geteuid(), dir, anc);
			chk_fix(it, "run sbx-cgroup from inside %s (systemd-run --user --scope -p Delegate=yes "
				"sbx-cgroup ..., or first write the shell's pid into a leaf cgroup of it that "
				"uid %u owns)", dir, (unsigned)geteuid());
		} else {
			it = chk_add(r, CLS_LIMITS, "cgroup-placement", CHK_NOTCONF,
				     "cannot tell whether this process may place commands below %s: %s", dir,
				     strerror(errno));
			chk_fix(it, "check that /proc is mounted");
		}
	}
	if (read_small(dir, "memory.swap.max", ctl, sizeof ctl) == 0) {
		chk_add(r, CLS_LIMITS, "cgroup-swap", CHK_OK, "%s/memory.swap.max exists", dir);
	} else if (read_small(dir, "memory.max", ctl, sizeof ctl) < 0) {
		/* A root cgroup (or one whose parent does not enable memory) has
		 * no memory files at all: nothing to conclude about swap here. */
		it = chk_add(r, CLS_LIMITS, "cgroup-swap", CHK_NOTCONF,
			     "%s has no memory files (a root cgroup, or memory not enabled above it): "
			     "swap control not checked", dir);
		chk_fix(it, "give a non-root --cgroup-root whose parent enables memory");
	} else {
		it = chk_add(r, CLS_LIMITS, "cgroup-swap", CHK_MISSING,
			     "%s/memory.swap.max is absent: swap accounting is off", dir);
		chk_fix(it, "boot with swapaccount=1 (CONFIG_MEMCG_SWAP)");
	}
}

static void quota(struct chk_report *r, const struct chk_opts *o)
{
	struct fs_quota_statv qs;
	struct fs_disk_quota dq;
	struct fsxattr fx;
	struct statfs sf;
	struct sbx_statx sx;
	struct stat st;
	struct chk_item *it;
	const char *fs, *how = "";
	unsigned long long limit = 0;
	int fd;

	if (!o->quota_ws) {
		it = chk_add(r, CLS_LIMITS, "quota", CHK_NOTCONF,
			     "project quota on a workspace filesystem not checked");
		chk_fix(it, "pass --quota-workspace DIR (a directory under a project quota)");
		return;
	}
	fd = open(o->quota_ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstatfs(fd, &sf) < 0) {
		it = chk_add(r, CLS_LIMITS, "quota", CHK_MISSING, "cannot open %s: %s", o->quota_ws,
			     strerror(errno));
		chk_fix(it, "give an existing directory (not a symlink)");
		if (fd >= 0)
			close(fd);
		return;
	}
	if (sf.f_type == XFS_SUPER_MAGIC)
		fs = "xfs";
	else if (sf.f_type == EXT4_SUPER_MAGIC)
		fs = "ext4";
	else {
		it = chk_add(r, CLS_LIMITS, "quota", CHK_UNSUPPORTED,
			     "%s is on a filesystem (magic 0x%lx) without project quotas", o->quota_ws,
			     (unsigned long)sf.f_type);
		chk_fix(it, "put workspaces on XFS or ext4 mounted with prjquota");
		close(fd);
		return;
	}
	memset(&qs, 0, sizeof qs);
	qs.qs_version = FS_QSTATV_VERSION1;
	if (sbx_statx(fd, "", AT_EMPTY_PATH, SBX_STATX_MNT_ID, &sx) < 0 || fstat(fd, &st) < 0)
		sx.stx_mnt_id = 0, st.st_dev = 0;
	if (sbx_quotactl(fd, Q_XGETQSTATV, 0, &qs, sx.stx_mnt_id, st.st_dev, NULL) < 0) {
		int e = errno;
		it = chk_add(r, CLS_LIMITS, "quota", e == ENOSYS || e == EOPNOTSUPP || e == EINVAL ? CHK_UNSUPPORTED
										: CHK_MISSING,
			     "project quota state of %s (%s): %s", o->quota_ws, fs, strerror(e));
		chk_fix(it, "%s", e == ENOSYS || e == EOPNOTSUPP || e == EINVAL
			     ? "a kernel with project quota support (CONFIG_XFS_QUOTA / CONFIG_QUOTA)"
			     : "mount the filesystem with prjquota");
		close(fd);
		return;
	}
	if (!(qs.qs_flags & FS_QUOTA_PDQ_ACCT) || !(qs.qs_flags & FS_QUOTA_PDQ_ENFD)) {
		it = chk_add(r, CLS_LIMITS, "quota", CHK_MISSING,
			     "project quota accounting %s, enforcement %s on %s (%s)",
			     qs.qs_flags & FS_QUOTA_PDQ_ACCT ? "on" : "off",
			     qs.qs_flags & FS_QUOTA_PDQ_ENFD ? "on" : "off", o->quota_ws, fs);
		chk_fix(it, "mount with prjquota (ext4: tune2fs -O quota,project -Q prjquota first)");
		close(fd);
		return;
	}
	if (ioctl(fd, FS_IOC_FSGETXATTR, &fx) < 0 || fx.fsx_projid == 0) {
		it = chk_add(r, CLS_LIMITS, "quota", CHK_MISSING, "%s has no project id", o->quota_ws);
		chk_fix(it, "assign one, e.g. xfs_quota -x -c 'project -s -p %s ID' MOUNTPOINT",
			o->quota_ws);
		close(fd);
		return;
	}
	memset(&dq, 0, sizeof dq);
	if (sbx_quotactl(fd, Q_XGETQUOTA, fx.fsx_projid, &dq, sx.stx_mnt_id, st.st_dev, NULL) == 0) {
		limit = (unsigned long long)dq.d_blk_hardlimit * 512;
		how = "hard limit";
	} else if ((errno == EPERM || errno == EACCES) && fstatfs(fd, &sf) == 0) {
		/* Only CAP_SYS_ADMIN may read a project's limits; XFS and ext4
		 * report them through statfs on a PROJINHERIT directory. */
		limit = (unsigned long long)sf.f_blocks * (unsigned long long)sf.f_bsize;
		how = "limit (statfs)";
	}
	if (!limit) {
		it = chk_add(r, CLS_LIMITS, "quota", CHK_MISSING,
			     "project %u of %s has no block hard limit", fx.fsx_projid, o->quota_ws);
		chk_fix(it, "xfs_quota -x -c 'limit -p bhard=SIZE %u' MOUNTPOINT", fx.fsx_projid);
		close(fd);
		return;
	}
	it = chk_add(r, CLS_LIMITS, "quota", CHK_OK,
		     "%s (%s) project %u, %s %llu bytes, accounting and enforcement on%s",
		     o->quota_ws, fs, fx.fsx_projid, how, limit,
		     fx.fsx_xflags & FS_XFLAG_PROJINHERIT ? "" : " (PROJINHERIT not set: new "
								  "subdirectories escape)");
	if (!(fx.fsx_xflags & FS_XFLAG_PROJINHERIT))
		it->st = CHK_MISSING;
	close(fd);
}

/* The baseline the tools are given: trusted and valid, and what it lets a
 * command do where user namespaces are unavailable: run unconfined, run in
 * the landlock tier, or nothing. */
static void baseline(struct chk_report *r, const struct chk_opts *o)
{
	struct sbx_policy p;
	struct sbx_err e;
	struct chk_item *it;
	char label[64];

	if (!o->baseline) {
		chk_add(r, CLS_EXTRA, "baseline", CHK_NOTCONF, "no --baseline given");
		return;
	}
	snprintf(label, sizeof label, "--baseline");
	sbx_policy_init(&p, label);
	if (sbx_policy_load_file(&p, o->baseline, &e) < 0) {
			/* A file that is no policy at all is the caller's mistake. */
		if (e.code == SBX_EXIT_USAGE)
			sbx_die_usage("%s", e.msg);
		it = chk_add(r, CLS_ISOLATION, "baseline", e.code == SBX_EXIT_POLICY ? CHK_UNSAFE : CHK_MISSING,
			     "%s", e.msg);
		chk_fix(it, "a regular file owned by root, not writable by group or others, "
			"on a path only root can change, holding a valid policy");
	} else if (sbx_policy_unsafe_fallback(&p)) {
		it = chk_add(r, CLS_EXTRA, "baseline", CHK_OK,
			     "%s: the unsafe host-process fallback is active: where user namespaces "
			     "are unavailable, a request that also asks for it runs unconfined", o->baseline);
		chk_field(it, "unsafe_fallback", 0, "true");
	} else if (p.fallback.set && p.fallback.v == SBX_PFB_LANDLOCK) {
		it = chk_add(r, CLS_EXTRA, "baseline", CHK_OK,
			     "%s: the landlock tier: where user namespaces are unavailable, commands "
			     "run without namespaces under Landlock and seccomp, with a WARNING (see "
			     "tiers; prove it with `sbx-check proof --tier landlock`)", o->baseline);
		chk_field(it, "unsafe_fallback", 0, "false");
		chk_field(it, "fallback", 0, "landlock");
	} else {
		it = chk_add(r, CLS_EXTRA, "baseline", CHK_OK, "%s: fail-closed", o->baseline);
		chk_field(it, "unsafe_fallback", 0, "false");
	}
	sbx_policy_free(&p);
}

void chk_host(struct chk_report *r, const struct chk_opts *o)
{
	kernel(r);
	chk_steps(r);
	chk_host_apparmor(r);
	chk_host_mounts(r);
	kernel_features(r);
	chk_host_tiers(r);
	chk_host_changes(r);
	cgroup(r, o);
	quota(r, o);
	baseline(r, o);
	chk_container_fixes(r);
}

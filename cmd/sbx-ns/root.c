/* The sandbox's root, built by its pid 1 (full capabilities in the new user
 * namespace, nothing outside it): a tmpfs holding only what the plan names,
 * then pivot_root and the old root detached.
 *
 * Sources are opened first, before anything is mounted, and checked against
 * the device and inode the outer process saw; each bind is of that very
 * object (by its fd), made read-only, nosuid and nodev with all its
 * submounts, and attached to a mount point this process created on its own
 * tmpfs (by its fd): with the new mount API where the kernel has it, else
 * with the classic calls, the new mount proven to be that object again
 * (lib/mount.h). The outer process chose the interface once (p->mnt_api).
 *
 * What is made, and in which order, is the plan's list of steps (steps.c):
 * ns_build_root only executes it, and writes nothing but execution state. */
#include "ns.h"

#include "container.h"
#include "die.h"
#include "exitcodes.h"
#include "mark.h"
#include "mount.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <sys/syscall.h>
#include <unistd.h>

static int openat2_(int dfd, const char *p, uint64_t flags, uint64_t resolve)
{
	return sbx_openat2(dfd, p, flags, resolve);
}

/* Our own tmpfs instances: the only places where mount points may be made. */
struct owned {
	dev_t dev[4];
	int n;
};

static int is_owned(const struct owned *o, dev_t d)
{
	for (int i = 0; i < o->n; i++)
		if (o->dev[i] == d)
			return 1;
	return 0;
}

static void own(struct owned *o, const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to stat %s", path);
	o->dev[o->n++] = st.st_dev;
}

/* The mount point for dest (absolute, in the sandbox) relative to the new
 * root (the cwd): missing components are created, only on our tmpfs;
 * symlinks are never followed. Returns an O_PATH fd on it. */
static int mount_point(const struct owned *o, const char *dest, int isdir)
{
	char buf[PATH_MAX], *p, *slash;
	struct stat st;
	int fd, next;

	snprintf(buf, sizeof buf, "%s", dest + 1);
	fd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open the new root");
	for (p = buf; *p; p = slash + 1) {
		int last;
		slash = strchrnul(p, '/');
		last = *slash == '\0';
		*slash = '\0';
		next = openat(fd, p, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT) {
			if (fstat(fd, &st) < 0 || !is_owned(o, st.st_dev))
				sbx_die(SBX_EXIT_SYS, "unable to create mount point %s: %s is not on the "
					"sandbox's own tmpfs", dest, buf);
			if (!last || isdir) {
				if (mkdirat(fd, p, 0755) < 0 && errno != EEXIST)
					sbx_die_errno(SBX_EXIT_SYS, "unable to create mount point %s", dest);
			} else {
				int f = openat(fd, p, O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
				if (f < 0)
					sbx_die_errno(SBX_EXIT_SYS, "unable to create mount point %s", dest);
				close(f);
			}
			next = openat(fd, p, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		}
		if (next < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to open mount point %s", dest);
		if (fstat(next, &st) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to stat mount point %s", dest);
		if (S_ISLNK(st.st_mode) || (!last && !S_ISDIR(st.st_mode)) ||
		    (last && !!S_ISDIR(st.st_mode) != !!isdir))
			sbx_die(SBX_EXIT_SYS, "unable to use mount point %s: %s has the wrong type", dest, buf);
		close(fd);
		fd = next;
		if (last)
			break;
		*slash = '/';
	}
	return fd;
}

/* Bind the object at srcfd onto the mount point target (rel: its path from
 * the new root), by the interface this run probed once. */
static void bind_fd(const struct ns_plan *p, int srcfd, int target, const char *rel,
		    unsigned attr, int recursive, const char *what)
{
	const char *step = "mount";
	int rc = sbx_mnt_bind(p->mnt_api, srcfd, target, AT_FDCWD, rel, attr, recursive, &step);

	struct stat st;
	int e = errno;

	if (rc == SBX_MNT_RACE)
		sbx_die(SBX_EXIT_POLICY, "unable to bind %s: the mounted object is not the one checked (race)", what);
	/* The kernel binds no unlinked file: the checked one was renamed
	 * over or removed since it was opened. */
	if (rc && e == ENOENT && fstat(srcfd, &st) == 0 && st.st_nlink == 0)
		sbx_die(SBX_EXIT_POLICY, "unable to bind %s: it was replaced (race)", what);
	errno = e;
	if (rc)
		sbx_die_errno(SBX_EXIT_SYS, "unable to %s %s", step, what);
}

/* Add attr to one of the sandbox's own mounts (rel from the new root). */
static void set_flags(const struct ns_plan *p, const char *rel, unsigned attr, const char *what)
{
	const char *step = "set mount flags of";
	int rc = sbx_mnt_set(p->mnt_api, AT_FDCWD, rel, attr, &step);

	if (rc == SBX_MNT_RACE)
		sbx_die(SBX_EXIT_SYS, "unable to make %s read-only: it is not a mount", what);
	if (rc)
		sbx_die_errno(SBX_EXIT_SYS, "unable to make %s read-only", what);
}

static void verify(const char *rel, const char *shown, dev_t dev, ino_t ino)
{
	struct stat st;

	if (lstat(rel, &st) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to stat mounted %s", shown);
	if (st.st_dev != dev || st.st_ino != ino)
		sbx_die(SBX_EXIT_POLICY, "unable to bind %s: the mounted object is not the one checked (race)", shown);
}

static void mount_or_die(const char *src, const char *target, const char *type,
			 unsigned long flags, const char *data)
{
	if (mount(src, target, type, flags, data) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to mount %s on /%s", type ? type : src, target);
}

/* The attributes of the new mount API for the MS_* flags of a step. */
static unsigned attr_of(unsigned long flags)
{
	return (flags & MS_RDONLY ? SBX_MNT_RDONLY : 0) | (flags & MS_NOSUID ? SBX_MNT_NOSUID : 0) |
	       (flags & MS_NODEV ? SBX_MNT_NODEV : 0);
}

/* A host device node, bound onto a file made for it on /dev's tmpfs. */
static void device(const struct ns_step *s)
{
	int f = open(s->dest + 1, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

	if (f < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create %s", s->dest);
	close(f);
	if (mount(s->src, s->dest + 1, NULL, s->flags, NULL) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to bind %s on %s", s->src, s->dest);
}

static void build_proc(const struct ns_plan *p, const struct ns_exec *x, const struct ns_step *s,
		       int *hidepid)
{
	char ctr[320];

	/* The options tried first hide other users' processes. */
	*hidepid = 1;
	for (size_t i = 0; i < s->ndata; i++) {
		if (!s->data[i])
			*hidepid = 0;
		if (mount("proc", s->dest + 1, "proc", s->flags, s->data[i]) == 0)
			return;
	}
	*hidepid = 0;
	/* The kernel refuses a fresh proc while parts of the visible one are
	 * covered: a container runtime's masked paths. */
	if (errno == EPERM && sbx_container(ctr, sizeof ctr) != SBX_CTR_NONE) {
		/* Where the baseline allows the Landlock tier, the outer takes
		 * it: nothing of the sandbox exists outside this mount namespace
		 * yet, and the command has not run. */
		if (ns_tier_allowed(p)) {
			struct ns_report rep = { 'F', EPERM, 0 };
			if (write(x->report_fd, &rep, sizeof rep) == (ssize_t)sizeof rep)
				_exit(SBX_EXIT_NOISOLATION);
		}
		sbx_die(SBX_EXIT_NOISOLATION, "unable to mount proc on /proc: %s (%s); %s",
			strerror(EPERM), ctr, sbx_fix_ctr_proc);
	}
	sbx_die_errno(SBX_EXIT_SYS, "unable to mount proc on /proc");
}

/* With --changes: the device the workspace's overlay reports (all its
 * layers on one filesystem, it keeps the real inode numbers). */
static dev_t ovl_dev;
static ino_t ovl_root;

/* A deny-write path of the workspace bound onto itself, if it is still
 * the object the outer found (in a change set: that inode on the overlay). */
static void build_deny(const struct ns_plan *p, const struct ns_step *s)
{
	const struct deny_op *d = &p->dops[s->idx];
	const char *rel = s->dest + 1;
	struct stat st;
	int fd;

	fd = openat2_(AT_FDCWD, rel, O_PATH | O_NOFOLLOW | O_CLOEXEC,
		      RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	if (fd < 0 || fstat(fd, &st) < 0)
		sbx_die_errno(SBX_EXIT_POLICY, "unable to protect %s (race)", s->dest);
	if (st.st_dev != (p->chg ? ovl_dev : d->dev) ||
	    st.st_ino != (p->chg && !strcmp(d->rel, ".") ? ovl_root : d->ino))
		sbx_die(SBX_EXIT_POLICY, "unable to protect %s: it was replaced (race)", s->dest);
	bind_fd(p, fd, fd, rel, attr_of(s->flags), S_ISDIR(st.st_mode), s->dest);
	close(fd);
}

/* Where the sandbox's resolv.conf goes: /etc/resolv.conf, or, when that
 * is a symlink (as systemd-resolved makes it), the path the link names,
 * taken lexically from /etc (the link is never followed by a mount). */
static void resolv_dest(char *dest, size_t sz)
{
	char to[PATH_MAX], path[2 * PATH_MAX], *save = NULL, *c;
	size_t len = 0;
	ssize_t n = readlink("etc/resolv.conf", to, sizeof to - 1);

	if (n < 0) {
		snprintf(dest, sz, "/etc/resolv.conf");
		return;
	}
	to[n] = '\0';
	snprintf(path, sizeof path, "%s%s", to[0] == '/' ? "" : "/etc/", to);
	dest[0] = '\0';
	for (c = strtok_r(path, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, "."))
			continue;
		if (!strcmp(c, "..")) {
			while (len && dest[--len] != '/')
				;
			dest[len] = '\0';
			continue;
		}
		if (len + 1 + strlen(c) >= sz)
			sbx_die(SBX_EXIT_POLICY, "refusing to run: /etc/resolv.conf links to a path too long (%s)", to);
		len += (size_t)snprintf(dest + len, sz - len, "/%s", c);
	}
	if (!len)
		sbx_die(SBX_EXIT_POLICY, "refusing to run: /etc/resolv.conf links to the root (%s)", to);
}

/* Transparent broker mode: the resolver is the broker, on the sandbox's
 * own 127.0.0.1:53. The file is made on the root's tmpfs, bound over
 * /etc/resolv.conf or over what that symlink names (made on the tmpfs
 * when no bind brings it; a symlink on the way is refused by mount_point)
 * and its name removed: only the bound copy remains. */
static void build_resolv(const struct ns_plan *p, struct ns_exec *x, const struct ns_step *s,
			 const struct owned *o)
{
	static const char conf[] = "nameserver 127.0.0.1\n";
	const char *tmp = ".sbx-resolv.conf";
	char dest[PATH_MAX];
	int fd, target;

	resolv_dest(dest, sizeof dest);
	fd = open(tmp, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, conf, sizeof conf - 1) != (ssize_t)(sizeof conf - 1) || close(fd) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to write the sandbox's resolv.conf");
	fd = open(tmp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open the sandbox's resolv.conf");
	target = mount_point(o, dest, 0);
	bind_fd(p, fd, target, dest + 1, attr_of(s->flags), 0, "the sandbox's resolv.conf");
	close(target);
	close(fd);
	if (unlink(tmp) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to remove %s from the new root", tmp);
	x->resolv = sbx_need(strdup(dest)); /* Landlock lets the command read it */
}

/* Without --home: the command's HOME, a directory of the sandbox's /tmp
 * (with --tmp-in-workspace, of the workspace's .sbx-tmp/tmp, kept between
 * runs: then it must already be a directory of the command's, never a
 * link). */
static void build_home(const struct ns_plan *p, const struct ns_step *s)
{
	const char *rel = s->dest + 1;
	struct stat st;

	if (mkdir(rel, s->mode) == 0) {
		if (chown(rel, p->uid, p->gid) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to chown %s", s->dest);
	} else if (errno != EEXIST) {
		sbx_die_errno(SBX_EXIT_SYS, "unable to create %s", s->dest);
	}
	if (lstat(rel, &st) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to stat %s", s->dest);
	if (!S_ISDIR(st.st_mode) || st.st_uid != p->uid)
		sbx_die(SBX_EXIT_POLICY, "unable to use %s as HOME: not a directory of uid %u "
			"(it is kept in the workspace's .sbx-tmp/tmp with --tmp-in-workspace)",
			s->dest, (unsigned)p->uid);
}

/* One bind of the plan's roots: the source opened at the start, mounted
 * and proven to be the object checked; a runtime symlink made again. */
static void build_bind(const struct ns_plan *p, const struct mount_op *op, int src,
		       const struct owned *o)
{
	char rel[PATH_MAX];
	int target;

	if (op->kind == MNT_SYMLINK) {
		if (symlink(op->src, op->dest + 1) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to create symlink %s", op->dest);
		return;
	}
	target = mount_point(o, op->dest, op->isdir);
	snprintf(rel, sizeof rel, "%s", op->dest + 1);
	if (p->chg && op == &p->ops[p->ws]) {
		/* its root is the upper's inode, on the overlay's own device */
		struct stat st;
		struct statfs sf;
		ns_changes_mount(p, src, rel);
		close(target);
		close(src);
		if (lstat(rel, &st) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to stat mounted %s", op->src);
		if (statfs(rel, &sf) < 0 || sf.f_type != OVERLAYFS_SUPER_MAGIC || st.st_dev == op->dev)
			sbx_die(SBX_EXIT_POLICY, "unable to bind %s: the mounted object is not the change set's overlay", op->src);
		ovl_dev = st.st_dev;
		ovl_root = st.st_ino;
		return;
	}
	bind_fd(p, src, target, rel, (op->ro ? SBX_MNT_RDONLY : 0) | SBX_MNT_NOSUID |
		SBX_MNT_NODEV, 1, op->src);
	close(target);
	close(src);
	verify(rel, op->src, op->dev, op->ino);
}

/* The steps of the plan (steps.c), in order. */
void ns_build_root(const struct ns_plan *p, struct ns_exec *x, int *hidepid)
{
	struct owned o = { .n = 0 };
	int *src = sbx_need(calloc(p->nops ? p->nops : 1, sizeof *src));
	/* The root's own directories and files get exactly the modes the
	 * steps name (0755 mount points the command must pass through, a
	 * resolver file it must read), whatever the caller's umask; the
	 * command gets that umask back. */
	mode_t umask_caller = umask(0);

	/* Sources first, while the host tree is whole, each checked. */
	for (size_t i = 0; i < p->nops; i++) {
		const struct mount_op *op = &p->ops[i];
		int code;

		src[i] = -1;
		if (op->kind == MNT_SYMLINK)
			continue;
		src[i] = ns_op_open(op, &code);
		if (src[i] < 0 && errno == ESTALE)
			sbx_die(SBX_EXIT_POLICY, "unable to bind %s: it was replaced (race)", op->src);
		if (src[i] < 0)
			sbx_die_errno(code, "unable to open %s", op->src);
	}
	SBX_MARK("p1-sources");

	for (size_t i = 0; i < p->nsteps; i++) {
		const struct ns_step *s = &p->steps[i];

		switch (s->kind) {
		case STEP_ROOT:
			/* A tmpfs over the old /tmp (private to this mount
			 * namespace), made the root by pivot_root at the end. */
			mount_or_die("tmpfs", "/tmp", "tmpfs", s->flags, s->data[0]);
			if (chdir("/tmp") < 0)
				sbx_die_errno(SBX_EXIT_SYS, "unable to enter the new root");
			own(&o, ".");
			break;
		case STEP_DIR:
			if (mkdir(s->dest + 1, s->mode) < 0)
				sbx_die_errno(SBX_EXIT_SYS, "unable to create %s", s->what);
			break;
		case STEP_TMPFS:
		case STEP_DEVPTS:
			mount_or_die(s->kind == STEP_TMPFS ? "tmpfs" : "devpts", s->dest + 1,
				     s->kind == STEP_TMPFS ? "tmpfs" : "devpts", s->flags, s->data[0]);
			if (s->own)
				own(&o, s->dest + 1);
			break;
		case STEP_PROC:
			build_proc(p, x, s, hidepid);
			break;
		case STEP_DEVICE:
			device(s);
			break;
		case STEP_LINK:
			if (symlink(s->src, s->dest + 1) < 0)
				sbx_die_errno(SBX_EXIT_SYS, "unable to create %s", s->dest);
			break;
		case STEP_BIND:
			build_bind(p, &p->ops[s->idx], src[s->idx], &o);
			break;
		case STEP_RESOLV:
			build_resolv(p, x, s, &o);
			break;
		case STEP_DENY:
			build_deny(p, s);
			break;
		case STEP_HOME:
			build_home(p, s);
			break;
		case STEP_READONLY:
			set_flags(p, strcmp(s->dest, "/") ? s->dest + 1 : ".", attr_of(s->flags), s->dest);
			break;
		}
#ifdef SBX_MARKS
		/* where a run of steps of one kind ends */
		static const char *const kinds[] = {
			[STEP_ROOT] = "p1-root", [STEP_DIR] = "p1-dirs", [STEP_TMPFS] = "p1-tmpfs",
			[STEP_PROC] = "p1-proc", [STEP_DEVPTS] = "p1-devpts", [STEP_DEVICE] = "p1-devices",
			[STEP_LINK] = "p1-links", [STEP_BIND] = "p1-binds", [STEP_RESOLV] = "p1-resolv",
			[STEP_DENY] = "p1-deny-binds", [STEP_HOME] = "p1-home", [STEP_READONLY] = "p1-readonly",
		};
		if (i + 1 == p->nsteps || p->steps[i + 1].kind != s->kind)
			SBX_MARK(kinds[s->kind]);
#endif
	}
	free(src);

	if (syscall(SYS_pivot_root, ".", ".") < 0) {
		/* The initramfs rootfs can never be pivoted away from. */
		if (errno == EINVAL)
			sbx_die_errno(SBX_EXIT_NOISOLATION, "unable to pivot_root to the new root "
				      "(is / the initramfs rootfs? it must be a real mount)");
		sbx_die_errno(SBX_EXIT_SYS, "unable to pivot_root to the new root");
	}
	if (umount2(".", MNT_DETACH) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to detach the old root");
	if (chdir("/") < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to enter /");
	umask(umask_caller);
}

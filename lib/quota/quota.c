#include "quota.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/fs.h>
#include <linux/quota.h>
#include <linux/dqblk_xfs.h>

#ifndef SYS_quotactl_fd
#define SYS_quotactl_fd 443
#endif

enum sbx_qfs sbx_quota_fs_kind(unsigned long magic)
{
	if (magic == SBX_MAGIC_XFS)
		return SBX_QFS_XFS;
	if (magic == SBX_MAGIC_EXT4)
		return SBX_QFS_EXT4;
	return SBX_QFS_OTHER;
}

const char *sbx_quota_fs_name(unsigned long magic)
{
	static const struct { unsigned long magic; const char *name; } names[] = {
		{ SBX_MAGIC_XFS, "xfs" }, { SBX_MAGIC_EXT4, "ext4" },
		{ 0x01021994UL, "tmpfs" }, { 0x9123683EUL, "btrfs" },
		{ 0x794C7630UL, "overlayfs" }, { 0x6969UL, "nfs" },
		{ 0x858458F6UL, "ramfs" }, { 0x2FC12FC1UL, "zfs" },
		{ 0xF2F52010UL, "f2fs" }, { 0x65735546UL, "fuse" },
		{ 0x9FA0UL, "proc" }, { 0x62656572UL, "sysfs" },
		{ 0x4D44UL, "vfat" }, { 0x5346544EUL, "ntfs" },
		{ 0xFF534D42UL, "cifs" }, { 0x01021997UL, "9p" },
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (names[i].magic == magic)
			return names[i].name;
	return NULL;
}

static int read_mountinfo(char **text)
{
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap);
	int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (!buf || fd < 0) {
		int e = fd < 0 ? errno : ENOMEM;
		free(buf);
		if (fd >= 0)
			close(fd);
		errno = e;
		return -1;
	}
	for (;;) {
		if (len + 1 >= cap) {
			char *n = realloc(buf, cap * 2);
			if (!n) {
				free(buf);
				close(fd);
				errno = ENOMEM;
				return -1;
			}
			buf = n;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(buf);
			close(fd);
			errno = e;
			return -1;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	buf[len] = '\0';
	*text = buf;
	return 0;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static int unescape_field(const char *s, size_t n, char *out, size_t outsz)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '\\' && i + 3 < n &&
		    s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
		    s[i + 3] >= '0' && s[i + 3] <= '7') {
			c = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
			i += 3;
		}
		if (o + 1 >= outsz) {
			errno = ENAMETOOLONG;
			return -1;
		}
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

int sbx_mountinfo_source(const char *text, uint64_t mnt_id, unsigned long dev,
			 char *out, size_t outsz)
{
	const char *line = text;

	while (*line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		const char *f[12];
		size_t fl[12];
		int nf = 0, sep = -1;
		const char *p = line, *stop = line + len;

		/* Split on spaces: id parent maj:min root mountpoint opts
		 * [optional...] - fstype source superopts */
		while (p < stop && nf < 12) {
			const char *q = memchr(p, ' ', (size_t)(stop - p));
			if (!q)
				q = stop;
			f[nf] = p;
			fl[nf] = (size_t)(q - p);
			if (fl[nf] == 1 && *p == '-' && sep < 0 && nf >= 6)
				sep = nf;
			nf++;
			p = q + 1;
		}
		if (sep >= 0 && sep + 2 < nf) {
			int match = 0;
			if (mnt_id) {
				char *e;
				unsigned long long v = strtoull(f[0], &e, 10);
				match = e == f[0] + fl[0] && v == mnt_id;
			} else {
				char want[64];
				int wl = snprintf(want, sizeof want, "%u:%u",
						  major(dev), minor(dev));
				match = wl > 0 && (size_t)wl == fl[2] && !memcmp(want, f[2], fl[2]);
			}
			if (match)
				return unescape_field(f[sep + 2], fl[sep + 2], out, outsz);
		}
		line = end ? end + 1 : line + len;
	}
	errno = ENOENT;
	return -1;
}

static int quotactl_device(unsigned cmd, uint32_t id, void *addr,
			   uint64_t mnt_id, unsigned long dev)
{
	char *text = NULL, src[4096];
	int r;

	if (read_mountinfo(&text) < 0)
		return -1;
	r = sbx_mountinfo_source(text, mnt_id, dev, src, sizeof src);
	free(text);
	if (r < 0) {
		/* No block device to ask: the filesystem offers no quota
		 * control to this caller. */
		if (errno == ENOENT)
			errno = ENOSYS;
		return -1;
	}
	return (int)syscall(SYS_quotactl, QCMD(cmd, PRJQUOTA), src, (int)id, addr);
}

int sbx_quotactl(int fd, unsigned cmd, uint32_t id, void *addr,
		 uint64_t mnt_id, unsigned long dev, int *via_device)
{
	long r = syscall(SYS_quotactl_fd, fd, QCMD(cmd, PRJQUOTA), (int)id, addr);

	if (via_device)
		*via_device = 0;
	if (r == 0 || errno != ENOSYS)
		return r == 0 ? 0 : -1;
	/* ENOSYS is either "no quotactl_fd in this kernel" or "no quota
	 * operations on this filesystem": the device path tells them apart,
	 * as it answers ENOSYS again only in the second case. */
	if (via_device)
		*via_device = 1;
	r = quotactl_device(cmd, id, addr, mnt_id, dev);
	return r == 0 ? 0 : -1;
}

int sbx_quota_state(int fd, uint64_t mnt_id, unsigned long dev, struct sbx_qstate *st)
{
	struct fs_quota_statv sv;

	memset(&sv, 0, sizeof sv);
	sv.qs_version = FS_QSTATV_VERSION1;
	memset(st, 0, sizeof *st);
	if (sbx_quotactl(fd, Q_XGETQSTATV, 0, &sv, mnt_id, dev, &st->via_device) < 0)
		return -1;
	st->accounting = !!(sv.qs_flags & FS_QUOTA_PDQ_ACCT);
	st->enforcing = !!(sv.qs_flags & FS_QUOTA_PDQ_ENFD);
	return 0;
}

int sbx_quota_get(int fd, uint64_t mnt_id, unsigned long dev, uint32_t id,
		  struct sbx_qlimits *q)
{
	struct fs_disk_quota d;

	memset(&d, 0, sizeof d);
	memset(q, 0, sizeof *q);
	if (sbx_quotactl(fd, Q_XGETQUOTA, id, &d, mnt_id, dev, NULL) < 0)
		return errno == ENOENT ? 0 : -1;
	q->bhard = (uint64_t)d.d_blk_hardlimit * 512;
	q->bsoft = (uint64_t)d.d_blk_softlimit * 512;
	q->ihard = d.d_ino_hardlimit;
	q->isoft = d.d_ino_softlimit;
	q->bused = (uint64_t)d.d_bcount * 512;
	q->iused = d.d_icount;
	return 0;
}

int sbx_quota_set(int fd, uint64_t mnt_id, unsigned long dev, uint32_t id,
		  const struct sbx_qlimits *l)
{
	struct fs_disk_quota d;

	memset(&d, 0, sizeof d);
	d.d_version = FS_DQUOT_VERSION;
	d.d_flags = FS_PROJ_QUOTA;
	d.d_id = id;
	d.d_fieldmask = FS_DQ_BHARD | FS_DQ_BSOFT | FS_DQ_IHARD | FS_DQ_ISOFT;
	d.d_blk_hardlimit = l->bhard / 512;
	d.d_blk_softlimit = l->bsoft / 512;
	d.d_ino_hardlimit = l->ihard;
	d.d_ino_softlimit = l->isoft;
	return sbx_quotactl(fd, Q_XSETQLIM, id, &d, mnt_id, dev, NULL);
}

int sbx_quota_statfs(int fd, struct sbx_qlimits *q)
{
	struct statfs s;

	memset(q, 0, sizeof *q);
	if (fstatfs(fd, &s) < 0)
		return -1;
	q->bhard = (uint64_t)s.f_blocks * (uint64_t)s.f_bsize;
	q->ihard = (uint64_t)s.f_files;
	q->bused = s.f_blocks >= s.f_bfree ?
		(uint64_t)(s.f_blocks - s.f_bfree) * (uint64_t)s.f_bsize : 0;
	q->iused = s.f_files >= s.f_ffree ? (uint64_t)(s.f_files - s.f_ffree) : 0;
	return 0;
}

int sbx_quota_getattr(int fd, uint32_t *projid, int *inherit)
{
	struct fsxattr x;

	if (ioctl(fd, FS_IOC_FSGETXATTR, &x) < 0)
		return -1;
	*projid = x.fsx_projid;
	*inherit = !!(x.fsx_xflags & FS_XFLAG_PROJINHERIT);
	return 0;
}

int sbx_quota_setattr(int fd, uint32_t projid, int inherit)
{
	struct fsxattr x;

	if (ioctl(fd, FS_IOC_FSGETXATTR, &x) < 0)
		return -1;
	if (x.fsx_projid == projid &&
	    (!inherit || (x.fsx_xflags & FS_XFLAG_PROJINHERIT)))
		return 0;
	x.fsx_projid = projid;
	if (inherit)
		x.fsx_xflags |= FS_XFLAG_PROJINHERIT;
	return ioctl(fd, FS_IOC_FSSETXATTR, &x) < 0 ? -1 : 0;
}

int sbx_quota_follows(int ws, int dir, uint32_t *want, uint32_t *got, int *inherit)
{
	int winh;

	*want = *got = 0;
	*inherit = 0;
	if (sbx_quota_getattr(ws, want, &winh) < 0) {
		if (errno == ENOTTY || errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL)
			return *want = 0, 0;
		return -1;
	}
	if (!*want)
		return 0;
	if (sbx_quota_getattr(dir, got, inherit) < 0)
		return -1;
	return *got == *want && *inherit ? 0 : 1;
}

static int record_text(const struct sbx_qrecord *r, char *buf, size_t sz)
{
	return snprintf(buf, sz, "sbx-quota 1 project=%u ino=%llu born=%lld.%09u block_hard=%llu "
			"block_soft=%llu inode_hard=%llu inode_soft=%llu\n", r->projid,
			(unsigned long long)r->ino, (long long)r->born_sec, r->born_nsec,
			(unsigned long long)r->bhard, (unsigned long long)r->bsoft,
			(unsigned long long)r->ihard, (unsigned long long)r->isoft);
}

void sbx_quota_record_path(char *buf, size_t sz, unsigned major, unsigned minor, uint64_t ino)
{
	snprintf(buf, sz, "%s/%u:%u:%llu", SBX_QUOTA_RECORD_DIR, major, minor,
		 (unsigned long long)ino);
}

/* Only root may have written st: owned by root, no group or other write. */
static const char *untrusted(const struct stat *st, char *why, size_t sz)
{
	if (st->st_uid != 0)
		snprintf(why, sz, "owned by uid %u, not root", (unsigned)st->st_uid);
	else if (st->st_mode & (S_IWGRP | S_IWOTH))
		snprintf(why, sz, "writable by group or others (mode %04o)",
			 (unsigned)(st->st_mode & 07777));
	else
		return NULL;
	return why;
}

/* An O_PATH fd of SBX_QUOTA_RECORD_DIR, walked from / without following a
 * link, each directory trusted (or made, with mk). -1: errno, or EPERM with
 * why filled for an untrusted directory. */
static int record_dir(int mk, char *why, size_t sz)
{
	char buf[sizeof SBX_QUOTA_RECORD_DIR], *comp = buf + 1, *next;
	int dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC), fd;
	struct stat st;

	memcpy(buf, SBX_QUOTA_RECORD_DIR, sizeof buf);
	for (;;) {
		if (dfd < 0)
			return -1;
		if (fstat(dfd, &st) < 0)
			goto fail;
		if (untrusted(&st, why, sz)) {
			close(dfd);
			errno = EPERM;
			return -1;
		}
		if (!*comp)
			return dfd;
		next = strchr(comp, '/');
		if (next)
			*next = '\0';
		fd = openat(dfd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT && mk) {
			/* 0755 whatever the umask: callers of verify must read it. */
			if ((mkdirat(dfd, comp, 0755) < 0 && errno != EEXIST) ||
			    fchmodat(dfd, comp, 0755, 0) < 0)
				goto fail;
			fd = openat(dfd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (fd < 0 && (errno == ELOOP || errno == ENOTDIR)) {
			snprintf(why, sz, "'%s' on its way is not a directory (a symbolic link?)", comp);
			close(dfd);
			errno = EPERM;
			return -1;
		}
		close(dfd);
		dfd = fd;
		comp = next ? next + 1 : comp + strlen(comp);
	}
fail:
	{
		int e = errno;
		close(dfd);
		errno = e;
		return -1;
	}
}

int sbx_quota_record_write(unsigned major, unsigned minor, const struct sbx_qrecord *r,
			   const char **step)
{
	char name[80], tmp[96], text[240], why[120];
	int dfd, fd, n = record_text(r, text, sizeof text), e;

	*step = "open the record directory " SBX_QUOTA_RECORD_DIR;
	dfd = record_dir(1, why, sizeof why);
	if (dfd < 0)
		return -1;
	snprintf(name, sizeof name, "%u:%u:%llu", major, minor, (unsigned long long)r->ino);
	snprintf(tmp, sizeof tmp, ".%s.new", name);
	*step = "write the record";
	unlinkat(dfd, tmp, 0);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		goto fail;
	if (fchmod(fd, 0644) < 0 || write(fd, text, (size_t)n) != n || fsync(fd) < 0) {
		e = errno ? errno : EIO;
		close(fd);
		unlinkat(dfd, tmp, 0);
		errno = e;
		goto fail;
	}
	close(fd);
	*step = "rename the record into place";
	if (renameat(dfd, tmp, dfd, name) < 0) {
		e = errno;
		unlinkat(dfd, tmp, 0);
		errno = e;
		goto fail;
	}
	close(dfd);
	return 0;
fail:
	e = errno;
	close(dfd);
	errno = e;
	return -1;
}

int sbx_quota_record_remove(unsigned major, unsigned minor, uint64_t ino)
{
	char name[80], why[120];
	int dfd = record_dir(0, why, sizeof why), r, e;

	if (dfd < 0)
		return errno == ENOENT ? 0 : -1;
	snprintf(name, sizeof name, "%u:%u:%llu", major, minor, (unsigned long long)ino);
	r = unlinkat(dfd, name, 0);
	e = errno;
	close(dfd);
	errno = e;
	return r < 0 && e != ENOENT ? -1 : 0;
}

int sbx_quota_record_read(unsigned major, unsigned minor, uint64_t ino, struct sbx_qrecord *r,
			  char *why, size_t sz)
{
	char name[80], buf[241], again[241], dwhy[120];
	unsigned long long rino, bh, bs, ih, is;
	long long bsec;
	unsigned projid, bnsec;
	struct stat st;
	ssize_t n;
	int dfd = record_dir(0, dwhy, sizeof dwhy), fd;

	if (dfd < 0 && errno == ENOENT)
		return 0;
	if (dfd < 0 && errno == EPERM) {
		snprintf(why, sz, "the directory of its record, " SBX_QUOTA_RECORD_DIR ", is not trusted: %s",
			 dwhy);
		return -1;
	}
	if (dfd < 0) {
		snprintf(why, sz, "the directory of its record, " SBX_QUOTA_RECORD_DIR ", is unreadable: %s",
			 strerror(errno));
		return -1;
	}
	snprintf(name, sizeof name, "%u:%u:%llu", major, minor, (unsigned long long)ino);
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	close(dfd);
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0) {
		snprintf(why, sz, "its record " SBX_QUOTA_RECORD_DIR "/%s is unreadable: %s", name,
			 errno == ELOOP ? "a symbolic link" : strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || untrusted(&st, dwhy, sizeof dwhy)) {
		if (!S_ISREG(st.st_mode))
			snprintf(dwhy, sizeof dwhy, "not a regular file");
		snprintf(why, sz, "its record " SBX_QUOTA_RECORD_DIR "/%s is %s", name, dwhy);
		close(fd);
		return -1;
	}
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < 0) {
		snprintf(why, sz, "its record " SBX_QUOTA_RECORD_DIR "/%s is unreadable: %s", name,
			 strerror(errno));
		return -1;
	}
	buf[n] = 0;
	/* Strict: the numbers read back must print as the very same text. */
	if (sscanf(buf, "sbx-quota 1 project=%u ino=%llu born=%lld.%u block_hard=%llu block_soft=%llu "
		   "inode_hard=%llu inode_soft=%llu", &projid, &rino, &bsec, &bnsec, &bh, &bs, &ih,
		   &is) != 8)
		goto bad;
	r->projid = projid;
	r->ino = rino;
	r->born_sec = bsec;
	r->born_nsec = bnsec;
	r->bhard = bh;
	r->bsoft = bs;
	r->ihard = ih;
	r->isoft = is;
	if (record_text(r, again, sizeof again) != n || memcmp(again, buf, (size_t)n) || rino != ino)
		goto bad;
	return 1;
bad:
	snprintf(why, sz, "its record " SBX_QUOTA_RECORD_DIR "/%s is not one of sbx-quota prepare", name);
	return -1;
}

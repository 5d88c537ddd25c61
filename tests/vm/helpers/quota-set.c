/* quota-set DIR PROJID BLOCK_HARD_BYTES INODE_HARD [BLOCK_SOFT_BYTES]
 *
 * Gives DIR a project id with PROJINHERIT and sets hard (and equal soft) block and
 * inode limits for that project, the way an administrator prepares a workspace; with
 * BLOCK_SOFT_BYTES the block soft limit is that instead (a soft limit below the hard
 * one is what statfs then shows). The VM
 * tests need this before sbx-quota can do it; it uses only FS_IOC_FSSETXATTR and
 * quotactl_fd so that it works the same on XFS and ext4. On a kernel without
 * quotactl_fd (before 5.14) it names the block device from /proc/self/mountinfo
 * to quotactl instead. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/fs.h>
#include <linux/quota.h>
#include <linux/dqblk_xfs.h>

#ifndef SYS_quotactl_fd
#define SYS_quotactl_fd 443
#endif

static void fatal(const char *step, const char *path)
{
	fprintf(stderr, "quota-set: fatal: unable to %s %s: %s\n", step, path, strerror(errno));
	exit(111);
}

static uint64_t number(const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || !*s || *end || *s == '-') {
		fprintf(stderr, "quota-set: fatal: invalid number: %s\n", s);
		exit(100);
	}
	return v;
}

/* The source device of the mount holding fd, from mountinfo (maj:min match). */
static int device_of(int fd, char *dev, size_t n)
{
	struct stat st;
	char line[4096], want[32];
	FILE *f;

	if (fstat(fd, &st) < 0 || !(f = fopen("/proc/self/mountinfo", "re")))
		return -1;
	snprintf(want, sizeof want, "%u:%u", major(st.st_dev), minor(st.st_dev));
	while (fgets(line, sizeof line, f)) {
		char mm[32], *sep = strstr(line, " - ");
		char src[256];
		if (sep && sscanf(line, "%*s %*s %31s", mm) == 1 && !strcmp(mm, want) &&
		    sscanf(sep + 3, "%*s %255s", src) == 1) {
			snprintf(dev, n, "%s", src);
			fclose(f);
			return 0;
		}
	}
	fclose(f);
	errno = ENODEV;
	return -1;
}

int main(int argc, char **argv)
{
	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: quota-set DIR PROJID BLOCK_HARD_BYTES INODE_HARD [BLOCK_SOFT_BYTES]\n");
		return 100;
	}
	const char *dir = argv[1];
	uint64_t projid = number(argv[2]), bytes = number(argv[3]), inodes = number(argv[4]);
	uint64_t soft = argc == 6 ? number(argv[5]) : bytes;
	if (projid == 0 || projid > UINT32_MAX) {
		fprintf(stderr, "quota-set: fatal: invalid project id: %s\n", argv[2]);
		return 100;
	}

	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		fatal("open", dir);

	struct fsxattr fsx;
	if (ioctl(fd, FS_IOC_FSGETXATTR, &fsx) < 0)
		fatal("get attributes of", dir);
	fsx.fsx_projid = (uint32_t)projid;
	fsx.fsx_xflags |= FS_XFLAG_PROJINHERIT;
	if (ioctl(fd, FS_IOC_FSSETXATTR, &fsx) < 0)
		fatal("set project id on", dir);

	/* XFS quota limits count 512-byte basic blocks. */
	struct fs_disk_quota q;
	memset(&q, 0, sizeof q);
	q.d_version = FS_DQUOT_VERSION;
	q.d_flags = FS_PROJ_QUOTA;
	q.d_id = (uint32_t)projid;
	q.d_fieldmask = FS_DQ_BHARD | FS_DQ_BSOFT | FS_DQ_IHARD | FS_DQ_ISOFT;
	q.d_blk_hardlimit = bytes / 512;
	q.d_blk_softlimit = soft / 512;
	q.d_ino_hardlimit = q.d_ino_softlimit = inodes;
	if (syscall(SYS_quotactl_fd, fd, QCMD(Q_XSETQLIM, PRJQUOTA), (unsigned)projid, &q) < 0) {
		char dev[256];
		if (errno != ENOSYS)
			fatal("set project quota limits for", dir);
		if (device_of(fd, dev, sizeof dev) < 0)
			fatal("find the block device of", dir);
		if (syscall(SYS_quotactl, QCMD(Q_XSETQLIM, PRJQUOTA), dev, (unsigned)projid, &q) < 0)
			fatal("set project quota limits (quotactl on the device) for", dir);
	}
	return 0;
}

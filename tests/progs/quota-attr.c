/* quota-attr PATH                      print "PROJID inherit|noinherit"
 * quota-attr PATH PROJID [inherit|noinherit]
 *                                      set the project id (and PROJINHERIT)
 * quota-attr --enforce on|off DIR      turn project quota enforcement of
 *                                      DIR's filesystem on or off
 *
 * What the sbx-quota tests need to damage a prepared workspace on purpose
 * (one deep inode with another id, a directory without PROJINHERIT) or the
 * filesystem's enforcement, without xfs_quota or chattr. PATH is opened
 * without following a final symbolic link. */
#include "quota.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/fs.h>
#include <linux/quota.h>
#include <linux/dqblk_xfs.h>

static int die(const char *step, const char *path)
{
	fprintf(stderr, "quota-attr: fatal: unable to %s %s: %s\n", step, path, strerror(errno));
	return 111;
}

int main(int argc, char **argv)
{
	int fd;

	if (argc == 4 && !strcmp(argv[1], "--enforce")) {
		unsigned flags = FS_QUOTA_PDQ_ENFD;
		int on = !strcmp(argv[2], "on");
		fd = open(argv[3], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return die("open", argv[3]);
		if (syscall(443, fd, QCMD(on ? Q_XQUOTAON : Q_XQUOTAOFF, PRJQUOTA), 0, &flags) < 0)
			return die(on ? "enforce quotas on" : "stop enforcing quotas on", argv[3]);
		return 0;
	}
	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: quota-attr PATH [PROJID [inherit|noinherit]]\n");
		return 100;
	}
	fd = open(argv[1], O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return die("open", argv[1]);
	struct fsxattr x;
	if (ioctl(fd, FS_IOC_FSGETXATTR, &x) < 0)
		return die("get attributes of", argv[1]);
	if (argc == 2) {
		printf("%u %s\n", x.fsx_projid,
		       (x.fsx_xflags & FS_XFLAG_PROJINHERIT) ? "inherit" : "noinherit");
		return 0;
	}
	x.fsx_projid = (unsigned)strtoul(argv[2], NULL, 10);
	if (argc == 4 && !strcmp(argv[3], "inherit"))
		x.fsx_xflags |= FS_XFLAG_PROJINHERIT;
	else if (argc == 4)
		x.fsx_xflags &= ~(unsigned)FS_XFLAG_PROJINHERIT;
	if (ioctl(fd, FS_IOC_FSSETXATTR, &x) < 0)
		return die("set attributes of", argv[1]);
	return 0;
}

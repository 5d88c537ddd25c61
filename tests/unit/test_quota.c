#include "unit.h"
#include "quota.h"

#include <errno.h>
#include <sys/sysmacros.h>

static const char mi[] =
	"22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
	"36 22 7:0 / /mnt/x\\040y rw,relatime shared:20 - xfs /dev/loop\\0400 rw,prjquota\n"
	"40 22 0:33 / /dev/shm rw - tmpfs tmpfs rw\n"
	"41 36 7:0 /ws /mnt/bind rw master:3 shared:4 - xfs /dev/loop0 rw\n";

TEST(mountinfo_source_by_mount_id_unescapes_the_device)
{
	char out[64];
	CHECK(sbx_mountinfo_source(mi, 36, 0, out, sizeof out) == 0);
	CHECK_STR(out, "/dev/loop 0");
	CHECK(sbx_mountinfo_source(mi, 41, 0, out, sizeof out) == 0);
	CHECK_STR(out, "/dev/loop0");
	CHECK(sbx_mountinfo_source(mi, 22, 0, out, sizeof out) == 0);
	CHECK_STR(out, "/dev/vda");
}

TEST(mountinfo_source_by_device_number_and_misses)
{
	char out[16];
	CHECK(sbx_mountinfo_source(mi, 0, makedev(254, 0), out, sizeof out) == 0);
	CHECK_STR(out, "/dev/vda");
	errno = 0;
	CHECK(sbx_mountinfo_source(mi, 99, 0, out, sizeof out) == -1);
	CHECK(errno == ENOENT);
	CHECK(sbx_mountinfo_source(mi, 36, 0, out, 4) == -1);
	CHECK(errno == ENAMETOOLONG);
	CHECK(sbx_mountinfo_source("", 1, 0, out, sizeof out) == -1);
	CHECK(sbx_mountinfo_source("garbage without fields\n1 2 3\n", 1, 0, out, sizeof out) == -1);
}

TEST(filesystem_kinds_and_names)
{
	CHECK(sbx_quota_fs_kind(0x58465342UL) == SBX_QFS_XFS);
	CHECK(sbx_quota_fs_kind(0xEF53UL) == SBX_QFS_EXT4);
	CHECK(sbx_quota_fs_kind(0x01021994UL) == SBX_QFS_OTHER);
	CHECK_STR(sbx_quota_fs_name(0x01021994UL), "tmpfs");
	CHECK(sbx_quota_fs_name(0x12345UL) == NULL);
}

/* Project quotas on XFS and ext4, seen through the interfaces both share:
 * fstatfs magic, FS_IOC_FSGETXATTR/FSSETXATTR for project ids, and the
 * XFS-style quotactl commands (Q_XGETQSTATV, Q_XGETQUOTA, Q_XSETQLIM), which
 * ext4 also answers through the kernel's generic quota layer. Every call
 * goes through an open fd (quotactl_fd); kernels older than 5.14 fall back
 * to quotactl on the block device named in /proc/self/mountinfo. */
#ifndef SBX_QUOTA_H
#define SBX_QUOTA_H

#include <stdint.h>
#include <stddef.h>

#define SBX_MAGIC_XFS  0x58465342UL
#define SBX_MAGIC_EXT4 0xEF53UL

enum sbx_qfs { SBX_QFS_OTHER = 0, SBX_QFS_XFS, SBX_QFS_EXT4 };

/* Which filesystem a statfs magic is; the name of a few common ones for
 * messages ("tmpfs", "btrfs", ...), or NULL when unknown. */
enum sbx_qfs sbx_quota_fs_kind(unsigned long magic);
const char *sbx_quota_fs_name(unsigned long magic);

/* Project quota state of the filesystem holding fd. */
struct sbx_qstate {
	int accounting;   /* FS_QUOTA_PDQ_ACCT */
	int enforcing;    /* FS_QUOTA_PDQ_ENFD */
	int via_device;   /* quotactl_fd was missing: used the block device */
};

/* Project quota record of one project id. Bytes, not 512-byte blocks. */
struct sbx_qlimits {
	uint64_t bhard, bsoft;    /* bytes; 0 = no limit */
	uint64_t ihard, isoft;    /* inodes; 0 = no limit */
	uint64_t bused, iused;    /* what the filesystem charges to the project */
};

/* quotactl(QCMD(cmd, PRJQUOTA)) on the filesystem of fd: quotactl_fd, or on
 * kernels without it (ENOSYS from the syscall itself, told apart from a
 * filesystem without quota operations by the fallback's own answer) the
 * block device of the mount with id mnt_id (0: match dev instead). Returns 0
 * or -1 with errno. */
int sbx_quotactl(int fd, unsigned cmd, uint32_t id, void *addr,
		 uint64_t mnt_id, unsigned long dev, int *via_device);

/* Q_XGETQSTATV for project quotas. 0 or -1 with errno. */
int sbx_quota_state(int fd, uint64_t mnt_id, unsigned long dev, struct sbx_qstate *st);

/* Q_XGETQUOTA for project id. A project the filesystem holds no record of
 * (XFS: ENOENT) reads as all zeros. Needs CAP_SYS_ADMIN: EPERM otherwise. */
int sbx_quota_get(int fd, uint64_t mnt_id, unsigned long dev, uint32_t id,
		  struct sbx_qlimits *q);

/* Q_XSETQLIM: the hard and soft limits of l (bytes rounded down to 512;
 * 0: none). */
int sbx_quota_set(int fd, uint64_t mnt_id, unsigned long dev, uint32_t id,
		  const struct sbx_qlimits *l);

/* The limits an unprivileged caller can see: statfs on a directory with
 * PROJINHERIT reports its project's limit as the filesystem's size (the
 * soft limit when one is set, else the hard one; nothing when the limit is
 * above the filesystem's size) and the project's use as what is taken.
 * Fills bhard/ihard with those figures, bsoft/isoft with 0. */
int sbx_quota_statfs(int fd, struct sbx_qlimits *q);

/* The record `sbx-quota prepare` leaves of what it set: a file in
 * SBX_QUOTA_RECORD_DIR named "MAJOR:MINOR:INODE" after the workspace root,
 * which the record is trusted for only when it and every directory on its
 * path are owned by root and writable by nobody else, and no symbolic link
 * is on the way. It holds the limits prepare set, so that a caller who can
 * only see statfs's figure (the soft limit when one is set, else the hard
 * one) may take the recorded hard limits as true when statfs shows exactly
 * what they imply. The text is "sbx-quota 1 project=P ino=I born=SEC.NSEC
 * block_hard=B block_soft=S inode_hard=N inode_soft=M\n". */
#ifndef SBX_QUOTA_RECORD_DIR
#define SBX_QUOTA_RECORD_DIR "/var/lib/sbx/quota"
#endif
struct sbx_qrecord {
	uint32_t projid;
	uint64_t ino;             /* of the workspace root */
	int64_t born_sec;         /* its birth time (statx btime; 0 when unknown): */
	uint32_t born_nsec;       /* an inode number reused later is no match */
	uint64_t bhard, bsoft;    /* bytes */
	uint64_t ihard, isoft;    /* inodes */
};
/* The record's path for a workspace root, into buf. */
void sbx_quota_record_path(char *buf, size_t sz, unsigned major, unsigned minor, uint64_t ino);
/* Write (replace) the record, making the directories as root with mode
 * 0755 where missing. 0, or -1 with errno and *step naming the call. */
int sbx_quota_record_write(unsigned major, unsigned minor, const struct sbx_qrecord *r,
			   const char **step);
/* Remove it; 0 also when there was none. -1 with errno. */
int sbx_quota_record_remove(unsigned major, unsigned minor, uint64_t ino);
/* 1: a trusted record, read into r; 0: none; -1: one that must not be
 * trusted or could not be read, the reason in why ("owned by uid 1000, not
 * root", "not a record of sbx-quota prepare", "unreadable: ..."). */
int sbx_quota_record_read(unsigned major, unsigned minor, uint64_t ino, struct sbx_qrecord *r,
			  char *why, size_t sz);

/* FS_IOC_FSGETXATTR: project id and whether PROJINHERIT is set. */
int sbx_quota_getattr(int fd, uint32_t *projid, int *inherit);
/* FS_IOC_FSSETXATTR: set the project id; PROJINHERIT too when inherit. */
int sbx_quota_setattr(int fd, uint32_t projid, int inherit);

/* A change set (sbx-ns --changes) is charged to its workspace's project:
 * whatever directory of it holds the overlay's upper layer or workdir must
 * carry the workspace's project id with PROJINHERIT, so that every file the
 * overlay creates there (new files, copy-ups, whiteouts) joins the project.
 * ws and dir: fds that answer FS_IOC_FSGETXATTR. 0: it holds, or the
 * workspace has no project (id 0, or a filesystem without project ids:
 * then there is no quota to escape); 1: it does not, *want the workspace's
 * project, *got and *inherit dir's; -1 with errno. */
int sbx_quota_follows(int ws, int dir, uint32_t *want, uint32_t *got, int *inherit);

/* The block device ("source" field) of a mount in mountinfo text: by mount
 * id when mnt_id != 0, else by "major:minor" of dev. Copies it into out.
 * 0, or -1 (ENOENT: no such mount, ENAMETOOLONG). Unescapes \040 etc. */
int sbx_mountinfo_source(const char *text, uint64_t mnt_id, unsigned long dev,
			 char *out, size_t outsz);

#endif

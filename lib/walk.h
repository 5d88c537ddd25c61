/* A fast walk of a directory tree that never follows a symbolic link and
 * never resolves a path: each directory is read with getdents64 into a
 * buffer kept per depth and reused, and every entry is opened relative to
 * its parent's fd (openat, O_NOFOLLOW), so a name swapped for a link during
 * the walk is seen as the link, not followed. Directories and regular files
 * are opened (the caller may need an fd, e.g. for an ioctl); other types are
 * only stat'ed. Pre-order: a directory is shown before its contents. */
#ifndef SBX_WALK_H
#define SBX_WALK_H

#include <stddef.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <stdint.h>

/* statx(2) on every libc: musl before 1.2.5 has no wrapper and glibc's
 * struct cannot be mixed with <linux/stat.h>. Same layout as the kernel's. */
struct sbx_statx_ts { int64_t tv_sec; uint32_t tv_nsec; int32_t pad; };
struct sbx_statx {
	uint32_t stx_mask, stx_blksize;
	uint64_t stx_attributes;
	uint32_t stx_nlink, stx_uid, stx_gid;
	uint16_t stx_mode, pad1;
	uint64_t stx_ino, stx_size, stx_blocks, stx_attributes_mask;
	struct sbx_statx_ts stx_atime, stx_btime, stx_ctime, stx_mtime;
	uint32_t stx_rdev_major, stx_rdev_minor, stx_dev_major, stx_dev_minor;
	uint64_t stx_mnt_id;
	uint64_t spare[13];
};
#define SBX_STATX_TYPE   0x0001U
#define SBX_STATX_MODE   0x0002U
#define SBX_STATX_NLINK  0x0004U
#define SBX_STATX_BTIME  0x0800U
#define SBX_STATX_MNT_ID 0x1000U
int sbx_statx(int dirfd, const char *path, int flags, unsigned mask, struct sbx_statx *st);

/* One directory read with getdents64 into a buffer of SBX_DIRBUF bytes
 * that the caller keeps (with *len and *pos, both 0 at the start): the
 * next entry, "." and ".." skipped; NULL at the end (errno 0) or when the
 * read fails (errno set). The one reader of directories both walks use. */
#define SBX_DIRBUF 32768
struct sbx_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};
const struct sbx_dirent64 *sbx_dirent_next(int fd, char *buf, size_t *len, size_t *pos);

#define SBX_WALK_MAX_DEPTH 512   /* directories held open at once */

struct sbx_walk_entry {
	const char *path;        /* relative to the root, e.g. "a/b" (not escaped) */
	size_t pathlen;
	const char *name;        /* last component */
	int dirfd;               /* the parent directory */
	int fd;                  /* the entry (directory or regular file), else -1 */
	const struct sbx_statx *st;  /* of fd, or of the name without following */
	unsigned depth;          /* 1 for the root's own entries */
};

/* 0: go on (descending into a directory); SBX_WALK_PRUNE: do not descend;
 * any other value stops the walk and is what sbx_walk returns. The fd is
 * closed by the walk after the callback returns. */
#define SBX_WALK_PRUNE (-1000)
typedef int (*sbx_walk_fn)(void *ctx, const struct sbx_walk_entry *e);

/* Why a walk stopped on its own. */
#define SBX_WALK_ESYS     (-1001)  /* a system call failed: see err */
#define SBX_WALK_ETOODEEP (-1002)  /* more than SBX_WALK_MAX_DEPTH levels */

struct sbx_walk_err {
	int err;                 /* errno of the failed call */
	const char *step;        /* "open", "read directory", "stat" */
	char path[4096];         /* where (relative, not escaped, may be cut) */
	size_t pathlen;
};

/* Walk the tree below rootfd (the root itself is not shown; rootfd's file
 * offset is not used). mask: what statx must fill (SBX_STATX_TYPE, SBX_STATX_NLINK
 * and SBX_STATX_MNT_ID are always asked for). Returns 0 when every entry was
 * shown, else the callback's value or SBX_WALK_ESYS / SBX_WALK_ETOODEEP
 * with *err filled. */
int sbx_walk(int rootfd, unsigned mask, sbx_walk_fn fn, void *ctx,
	     struct sbx_walk_err *err);


#endif

/* Bind mounts by the new mount API or the classic calls: see mount.h. */
#include "mount.h"
#include "walk.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#define TREE_CLONE_ 1U
#define AT_RECURSIVE_ 0x8000U
#define MOVE_F_EMPTY 0x4U
#define MOVE_T_EMPTY 0x40U
#define STATX_ATTR_MOUNT_ROOT_ 0x2000U
/* statfs f_flags (ST_*) */
#define F_RDONLY 0x1U
#define F_NOSUID 0x2U
#define F_NODEV 0x4U
#define F_NOEXEC 0x8U
#define F_NOATIME 0x400U
#define F_NODIRATIME 0x800U
#define F_RELATIME 0x1000U

struct mattr {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
};

static int open_tree_(int dfd, const char *p, unsigned f)
{
	return (int)syscall(SYS_open_tree, dfd, p, f);
}

static int move_mount_(int fdfd, const char *fp, int tdfd, const char *tp, unsigned f)
{
	return (int)syscall(SYS_move_mount, fdfd, fp, tdfd, tp, f);
}

static int setattr_(int dfd, const char *p, unsigned f, unsigned set)
{
	struct mattr a = { .attr_set = set };
	return (int)syscall(SYS_mount_setattr, dfd, p, f, &a, sizeof a);
}

static int reopen(int dfd, const char *path)
{
	return sbx_openat2(dfd, path, O_PATH | O_NOFOLLOW | O_CLOEXEC,
			   RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
			   (path[0] == '/' ? 0 : RESOLVE_BENEATH));
}

enum sbx_mnt_api sbx_mnt_probe(void)
{
	/* Each call is refused for its arguments (bad fd, empty path, size
	 * 0) where it exists, and fails with ENOSYS where it does not. */
	if (open_tree_(-1, "", 0) < 0 && errno == ENOSYS)
		return SBX_MNT_CLASSIC;
	if (move_mount_(-1, "", -1, "", 0) < 0 && errno == ENOSYS)
		return SBX_MNT_CLASSIC;
	if (syscall(SYS_mount_setattr, -1, "", 0, NULL, 0) < 0 && errno == ENOSYS)
		return SBX_MNT_CLASSIC;
	return SBX_MNT_NEW;
}

const char *sbx_mnt_api_name(enum sbx_mnt_api api)
{
	return api == SBX_MNT_NEW ? "new" : "classic";
}

static int fail(const char **step, const char *what)
{
	*step = what;
	return SBX_MNT_ERR;
}

static int mnt_id(int fd, uint64_t *id, int *root)
{
	struct sbx_statx st;

	if (sbx_statx(fd, "", AT_EMPTY_PATH, SBX_STATX_MNT_ID, &st) < 0)
		return -1;
	if (!(st.stx_mask & SBX_STATX_MNT_ID)) {
		errno = ENOSYS;
		return -1;
	}
	*id = st.stx_mnt_id;
	if (root)
		*root = !!(st.stx_attributes & STATX_ATTR_MOUNT_ROOT_);
	return 0;
}

/* Remount the mount whose root fd holds: its own flags kept, attr added. */
static int remount_fd(int fd, unsigned attr, const char **step)
{
	struct statfs sf;
	unsigned long fl = MS_REMOUNT | MS_BIND;
	char p[32];

	if (fstatfs(fd, &sf) < 0)
		return fail(step, "read the mount flags of");
	fl |= (sf.f_flags & F_RDONLY || attr & SBX_MNT_RDONLY) ? MS_RDONLY : 0;
	fl |= (sf.f_flags & F_NOSUID || attr & SBX_MNT_NOSUID) ? MS_NOSUID : 0;
	fl |= (sf.f_flags & F_NODEV || attr & SBX_MNT_NODEV) ? MS_NODEV : 0;
	fl |= sf.f_flags & F_NOEXEC ? MS_NOEXEC : 0;
	fl |= sf.f_flags & F_NODIRATIME ? MS_NODIRATIME : 0;
	/* The atime mode is one of three; no flag at all means strictatime
	 * (the kernel would otherwise default to relatime, a change a user
	 * namespace may not make to a locked mount). */
	if (sf.f_flags & F_NOATIME)
		fl |= MS_NOATIME;
	else if (sf.f_flags & F_RELATIME)
		fl |= MS_RELATIME;
	else
		fl |= MS_STRICTATIME;
	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	if (mount(NULL, p, NULL, fl, NULL) < 0)
		return fail(step, "set mount flags (remount) of");
	return 0;
}

struct minfo {
	uint64_t id, parent;
	char *point;
	int in;    /* in the tree being set */
};

/* Undo mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

static char *read_mountinfo(void)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0 || !buf) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	for (;;) {
		if (len + 1 >= cap) {
			char *b = realloc(buf, cap *= 2);
			if (!b)
				break;
			buf = b;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			if (n < 0) {
				free(buf);
				return NULL;
			}
			buf[len] = '\0';
			return buf;
		}
		len += (size_t)n;
	}
	close(fd);
	free(buf);
	errno = ENOMEM;
	return NULL;
}

/* The submounts below the mount top (not top itself), from mountinfo. */
static struct minfo *submounts(uint64_t top, char *buf, size_t *count)
{
	size_t n = 0, cap = 16;
	struct minfo *m = malloc(cap * sizeof *m);
	int grew = 1;

	for (char *line = buf, *next; m && line && *line; line = next) {
		unsigned long long id, parent;
		char *point;
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		/* ID PARENT MAJ:MIN ROOT POINT ... */
		if (sscanf(line, "%llu %llu", &id, &parent) != 2)
			continue;
		point = line;
		for (int f = 0; f < 4 && point; f++)
			point = strchr(point + 1, ' ');
		if (!point)
			continue;
		point++;
		*strchrnul(point, ' ') = '\0';
		unescape(point);
		if (n == cap) {
			struct minfo *b = realloc(m, (cap *= 2) * sizeof *m);
			if (!b) {
				free(m);
				return NULL;
			}
			m = b;
		}
		m[n++] = (struct minfo){ id, parent, point, 0 };
	}
	if (!m)
		return NULL;
	while (grew) {
		grew = 0;
		for (size_t i = 0; i < n; i++) {
			if (m[i].in || m[i].id == top)
				continue;
			if (m[i].parent == top)
				m[i].in = grew = 1;
			for (size_t j = 0; j < n && !m[i].in; j++)
				if (m[j].in && m[j].id == m[i].parent)
					m[i].in = grew = 1;
		}
	}
	*count = n;
	return m;
}

static int in_tree(const struct minfo *m, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (m[i].in && m[i].id == id)
			return 1;
	return 0;
}

/* Every submount of top, each found by its mount point and proven to be
 * that mount by its id; one hidden under another mount of the tree is out
 * of reach and left alone. */
static int remount_tree(uint64_t top, unsigned attr, const char **step)
{
	char *buf = read_mountinfo();
	struct minfo *m;
	size_t n = 0;
	int rc = 0;

	if (!buf)
		return fail(step, "read /proc/self/mountinfo for the submounts of");
	m = submounts(top, buf, &n);
	if (!m) {
		free(buf);
		return fail(step, "read /proc/self/mountinfo for the submounts of");
	}
	for (size_t i = 0; i < n && !rc; i++) {
		uint64_t id;
		int fd;
		if (!m[i].in)
			continue;
		fd = reopen(AT_FDCWD, m[i].point);
		if (fd < 0 || mnt_id(fd, &id, NULL) < 0)
			rc = fail(step, "open a submount of");
		else if (id == m[i].id)
			rc = remount_fd(fd, attr, step);
		else if (!in_tree(m, n, id))
			rc = SBX_MNT_RACE;
		if (fd >= 0)
			close(fd);
	}
	free(m);
	free(buf);
	return rc;
}

static int bind_classic(int srcfd, int target, int dfd, const char *path, unsigned attr,
			int recursive, const char **step)
{
	char s[32], t[32];
	struct stat a, b;
	uint64_t under, id;
	int fd, root, rc;

	if (mnt_id(target, &under, NULL) < 0)
		return fail(step, "read the mount id of the mount point of");
	snprintf(s, sizeof s, "/proc/self/fd/%d", srcfd);
	snprintf(t, sizeof t, "/proc/self/fd/%d", target);
	if (mount(s, t, NULL, MS_BIND | (recursive ? MS_REC : 0), NULL) < 0)
		return fail(step, "bind");
	/* Found again by its path: a new mount, rooted at the object bound. */
	fd = reopen(dfd, path);
	if (fd < 0)
		return fail(step, "open the new mount of");
	if (mnt_id(fd, &id, &root) < 0 || fstat(fd, &a) < 0 || fstat(srcfd, &b) < 0) {
		rc = fail(step, "stat the new mount of");
	} else if (id == under || !root || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
		rc = SBX_MNT_RACE;
	} else {
		rc = attr ? remount_fd(fd, attr, step) : 0;
		if (!rc && attr && recursive)
			rc = remount_tree(id, attr, step);
	}
	close(fd);
	return rc;
}

int sbx_mnt_bind(enum sbx_mnt_api api, int srcfd, int target, int dfd, const char *path,
		 unsigned attr, int recursive, const char **step)
{
	unsigned rec = recursive ? AT_RECURSIVE_ : 0;
	int tree, rc = 0;

	if (api == SBX_MNT_CLASSIC)
		return bind_classic(srcfd, target, dfd, path, attr, recursive, step);
	tree = open_tree_(srcfd, "", TREE_CLONE_ | O_CLOEXEC | AT_EMPTY_PATH | rec);
	if (tree < 0)
		return fail(step, "clone mount of");
	if (attr && setattr_(tree, "", AT_EMPTY_PATH | rec, attr) < 0)
		rc = fail(step, "set mount flags of");
	else if (move_mount_(tree, "", target, "", MOVE_F_EMPTY | MOVE_T_EMPTY) < 0)
		rc = fail(step, "mount");
	close(tree);
	return rc;
}

int sbx_mnt_set(enum sbx_mnt_api api, int dfd, const char *path, unsigned attr,
		const char **step)
{
	int fd, root, rc;
	uint64_t id;

	if (api == SBX_MNT_NEW)
		return setattr_(dfd, path, 0, attr) < 0 ? fail(step, "set mount flags of") : 0;
	fd = reopen(dfd, path);
	if (fd < 0)
		return fail(step, "open");
	if (mnt_id(fd, &id, &root) < 0)
		rc = fail(step, "stat");
	else if (!root)
		rc = SBX_MNT_RACE;
	else
		rc = remount_fd(fd, attr, step);
	close(fd);
	return rc;
}

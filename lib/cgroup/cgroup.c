#include "cgroup.h"
#include "fd.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* Without openat2 (before 5.6) only a single component can be opened
 * safely: O_NOFOLLOW covers the last one, and there is no other. */
static int open_fallback(int dirfd, const char *name, int flags)
{
	if (strchr(name, '/') || !strcmp(name, "..")) {
		errno = EXDEV;
		return -1;
	}
	return openat(dirfd, name, flags | O_NOFOLLOW);
}

int sbx_cg_openat(int dirfd, const char *name, int flags)
{
	int fd;

	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {
		errno = EINVAL;
		return -1;
	}
	flags |= O_CLOEXEC;
	fd = sbx_openat2(dirfd, name, flags,
			 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	if (fd < 0 && errno == ENOSYS)
		fd = open_fallback(dirfd, name, flags);
	return fd;
}

int sbx_cg_open_root(const char *path)
{
	struct statfs sf;
	int fd;

	/* RESOLVE_NO_SYMLINKS covers the last component too; O_NOFOLLOW
	 * would open a final symlink itself and report ENOTDIR instead. */
	fd = sbx_openat2(AT_FDCWD, path, O_PATH | O_DIRECTORY | O_CLOEXEC,
			 RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	if (fd < 0 && errno == ENOSYS) {
		/* Older kernels: at least the last component is no symlink. */
		struct stat st;
		if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
			errno = ELOOP;
			return -1;
		}
		fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0)
		return -1;
	if (fstatfs(fd, &sf) < 0)
		return sbx_close_fail(fd);
	if (sf.f_type != CGROUP2_SUPER_MAGIC) {
		close(fd);
		errno = EMEDIUMTYPE;
		return -1;
	}
	return fd;
}

ssize_t sbx_cg_read(int dirfd, const char *file, char *buf, size_t size)
{
	size_t n = 0;
	ssize_t r;
	int fd, e;

	if (!size) {
		errno = ENOSPC;
		return -1;
	}
	fd = sbx_cg_openat(dirfd, file, O_RDONLY);
	if (fd < 0)
		return -1;
	while ((r = read(fd, buf + n, size - 1 - n)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		n += (size_t)r;
		if (n == size - 1) {
			char extra;
			if (read(fd, &extra, 1) > 0) {
				errno = ENOSPC;
				goto fail;
			}
			break;
		}
	}
	close(fd);
	if (n && buf[n - 1] == '\n')
		n--;
	buf[n] = '\0';
	return (ssize_t)n;
fail:
	e = errno;
	close(fd);
	errno = e;
	return -1;
}

int sbx_cg_write(int dirfd, const char *file, const char *val)
{
	size_t len = strlen(val);
	ssize_t w;
	int fd, e;

	fd = sbx_cg_openat(dirfd, file, O_WRONLY);
	if (fd < 0)
		return -1;
	/* A cgroup file takes one write as one value: no partial retries. */
	do
		w = write(fd, val, len);
	while (w < 0 && errno == EINTR);
	e = errno;
	close(fd);
	if (w < 0) {
		errno = e;
		return -1;
	}
	if ((size_t)w != len) {
		errno = EIO;
		return -1;
	}
	return 0;
}

int sbx_cg_list_has(const char *list, const char *word)
{
	size_t wl = strlen(word);
	const char *p = list;

	if (!wl)
		return 0;
	while (*p) {
		size_t n;
		while (*p == ' ' || *p == '\n')
			p++;
		n = strcspn(p, " \n");
		if (n == wl && !memcmp(p, word, wl))
			return 1;
		p += n;
	}
	return 0;
}

int sbx_cg_keyed(const char *text, const char *key, unsigned long long *val)
{
	size_t kl = strlen(key);
	const char *p = text;

	while (*p) {
		if (!strncmp(p, key, kl) && p[kl] == ' ') {
			char *end;
			const char *v = p + kl + 1;
			if (*v < '0' || *v > '9')
				break;
			errno = 0;
			*val = strtoull(v, &end, 10);
			if (errno || (*end && *end != '\n'))
				break;
			return 0;
		}
		p = strchrnul(p, '\n');
		if (*p)
			p++;
	}
	errno = ENOENT;
	return -1;
}

int sbx_cg_oom_of(const char *events, const char *local, struct sbx_cg_oom *o)
{
	unsigned long long oom, kills, own_oom, own_kills;

	if (!local)
		local = events;
	if (sbx_cg_keyed(events, "oom", &oom) < 0 || sbx_cg_keyed(events, "oom_kill", &kills) < 0 ||
	    sbx_cg_keyed(local, "oom", &own_oom) < 0 || sbx_cg_keyed(local, "oom_kill", &own_kills) < 0)
		return -1;
	o->kills = kills;
	o->own = kills && own_oom;
	/* A process of this cgroup itself was killed, or no cgroup below
	 * ran out: every kill was at this cgroup's limit or above it. */
	o->reached = kills && (own_oom || own_kills || oom <= own_oom);
	return 0;
}

int sbx_cg_oom_read(int dirfd, struct sbx_cg_oom *o)
{
	char ev[1024], local[1024];
	int have_local;

	/* The subtree's counts first: an event between the two reads then
	 * shows in the local counts only, never as one below. */
	if (sbx_cg_read(dirfd, "memory.events", ev, sizeof ev) < 0)
		return -1;
	have_local = sbx_cg_read(dirfd, "memory.events.local", local, sizeof local) >= 0;
	if (!have_local && errno != ENOENT)
		return -1;
	return sbx_cg_oom_of(ev, have_local ? local : NULL, o);
}

int sbx_cg_pids_refused(int dirfd, unsigned long long *n)
{
	char buf[256];

	if (sbx_cg_read(dirfd, "pids.events.local", buf, sizeof buf) < 0 &&
	    (errno != ENOENT || sbx_cg_read(dirfd, "pids.events", buf, sizeof buf) < 0))
		return -1;
	return sbx_cg_keyed(buf, "max", n);
}

const char *sbx_cg_name_invalid(const char *name)
{
	size_t i;

	if (!*name)
		return "empty";
	if (name[0] == '-')
		return "starts with '-'";
	for (i = 0; name[i]; i++) {
		char c = name[i];
		if (c == '/')
			return "contains '/'";
		if (c == '.')
			return "contains '.'";
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return "invalid character";
	}
	if (i > 64)
		return "longer than 64 characters";
	return NULL;
}

const char *sbx_cg_not_delegated(int dirfd, uid_t uid)
{
	static const char *const files[] = {
		".", "cgroup.procs", "cgroup.threads", "cgroup.subtree_control",
	};
	struct stat st;
	size_t i;

	for (i = 0; i < sizeof files / sizeof files[0]; i++) {
		int r = i ? fstatat(dirfd, files[i], &st, AT_SYMLINK_NOFOLLOW)
			  : fstat(dirfd, &st);
		if (r < 0 || st.st_uid != uid)
			return files[i];
	}
	return NULL;
}

int sbx_cg_placement(const char *dir, char *own, size_t osz, char *anc, size_t asz)
{
	char mnt[4096], buf[8192], procs[4200], *rel = NULL, *line, *slash;
	struct statfs sf;
	size_t n, i, common = 0;

	/* The mount point: the highest directory above dir still on cgroup2. */
	n = strlen(dir);
	if (dir[0] != '/' || n >= sizeof mnt) {
		errno = EINVAL;
		return -1;
	}
	memcpy(mnt, dir, n + 1);
	while (n > 1 && mnt[n - 1] == '/')
		mnt[--n] = '\0';
	for (;;) {
		slash = strrchr(mnt, '/');
		if (!slash || slash == mnt)
			break;
		*slash = '\0';
		if (statfs(mnt, &sf) < 0 || sf.f_type != CGROUP2_SUPER_MAGIC) {
			*slash = '/';
			break;
		}
	}
	/* The caller's own cgroup, relative to that mount. */
	if (sbx_read_small("/proc/self/cgroup", 0, buf, sizeof buf) < 0)
		return -1;
	for (line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (!strncmp(line, "0::", 3)) {
			rel = line + 3;
			break;
		}
	if (!rel) {
		errno = ENOENT;
		return -1;
	}
	rel[strcspn(rel, "\n")] = '\0';
	snprintf(own, osz, "%s%s", mnt, strcmp(rel, "/") ? rel : "");
	/* The closest common ancestor, component by component. */
	for (i = 0; own[i] && own[i] == dir[i]; i++)
		if (own[i] == '/')
			common = i;
	if (!own[i] && (!dir[i] || dir[i] == '/'))
		common = i;
	else if (!dir[i] && own[i] == '/')
		common = i;
	if (common < strlen(mnt))
		common = strlen(mnt);
	snprintf(anc, asz, "%.*s", (int)common, own);
	snprintf(procs, sizeof procs, "%s/cgroup.procs", anc);
	if (faccessat(AT_FDCWD, procs, W_OK, AT_EACCESS) == 0)
		return 0;
	if (errno != EACCES && errno != EPERM)
		return -1;
	return 1;
}

#include "meter_disk.h"
#include "fd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int walk(int dfd, dev_t dev, int depth, uint64_t *bytes)
{
	DIR *d;
	struct dirent *e;
	int err = 0;

	if (depth > SBX_METER_DISK_MAXDEPTH) {
		close(dfd);
		errno = ELOOP;
		return -1;
	}
	if (!(d = fdopendir(dfd))) {
		err = errno;
		close(dfd);
		errno = err;
		return -1;
	}
	while (!err) {
		struct stat st;
		errno = 0;
		if (!(e = readdir(d))) {
			err = errno;
			break;
		}
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT)
				err = errno;
			continue;
		}
		if (S_ISREG(st.st_mode)) {
			*bytes += (uint64_t)st.st_size;
		} else if (S_ISDIR(st.st_mode) && st.st_dev == dev) {
			int fd = openat(dirfd(d), e->d_name,
					O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0) {
				if (errno != ENOENT)
					err = errno;
				continue;
			}
			if (walk(fd, dev, depth + 1, bytes) < 0 && errno != ENOENT)
				err = errno;
		}
	}
	closedir(d);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

int sbx_meter_du(const char *path, uint64_t *bytes)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0)
		return sbx_close_fail(fd);
	return walk(fd, st.st_dev, 0, bytes);
}

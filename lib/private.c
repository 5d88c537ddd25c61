#include "private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static int refuse(int fd, struct sbx_private_why *w, const char *fix)
{
	if (fd >= 0)
		close(fd);
	w->fix = fix;
	errno = 0;
	return -1;
}

int sbx_open_private(const char *path, struct sbx_private_why *w)
{
	struct stat st;
	int fd, eno;

	w->why[0] = '\0';
	w->fix = NULL;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ELOOP) {
		snprintf(w->why, sizeof w->why, "a symlink");
		return refuse(-1, w, "name the file itself");
	}
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0) {
		eno = errno;
		close(fd);
		errno = eno;
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(w->why, sizeof w->why, "not a regular file");
		return refuse(fd, w, NULL);
	}
	if (st.st_uid != 0 && st.st_uid != getuid()) {
		snprintf(w->why, sizeof w->why, "owned by uid %u (not root or the caller)", (unsigned)st.st_uid);
		return refuse(fd, w, "chown it");
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		snprintf(w->why, sizeof w->why, "mode %04o gives group or others access",
			 (unsigned)(st.st_mode & 07777));
		return refuse(fd, w, "chmod 600 it");
	}
	return fd;
}

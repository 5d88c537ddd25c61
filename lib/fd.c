#include "fd.h"
#include "die.h"
#include "exitcodes.h"
#include "clock.h"
#include "parse.h"
#include "status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>


const char *sbx_parse_fd(const char *s, int *fd)
{
	uint64_t v;
	const char *why = sbx_parse_u64(s, 0, 1U << 30, &v);

	if (why)
		return why;
	if (v <= 2)
		return "0, 1 and 2 are stdio";
	if (fcntl((int)v, F_GETFD) < 0)
		return "not open";
	*fd = (int)v;
	return NULL;
}

int sbx_opt_fd_shared(const char *opt, const char *s)
{
	int fd = -1;
	const char *why = sbx_parse_fd(s, &fd);

	/* An fd that is not open is the caller's omission: say how to give it. */
	if (why && !strcmp(why, "not open"))
		sbx_die_usage("%s: invalid fd '%s': not open; open it for the tool (in the shell: %s<FILE or %s>FILE, "
			      "or a previous tool's --pass-fd %s)",
			      opt, s, s, s, s);
	if (why)
		sbx_die_usage("%s: invalid fd '%s': %s", opt, s, why);
	return fd;
}

int sbx_opt_fd(const char *opt, const char *s)
{
	static struct { int fd; const char *opt; } claims[256];
	static size_t nclaims;
	int fd = sbx_opt_fd_shared(opt, s);

	for (size_t i = 0; i < nclaims; i++) {
		if (claims[i].fd != fd)
			continue;
		if (!strcmp(claims[i].opt, "--status-fd"))
			sbx_status_disown();
		if (!strcmp(claims[i].opt, opt))
			sbx_die_usage("%s: fd %d given twice", opt, fd);
		sbx_die_usage("%s: fd %d is also %s", opt, fd, claims[i].opt);
	}
	if (nclaims == sizeof claims / sizeof claims[0])
		sbx_die_usage("%s: more than %zu fd options", opt, nclaims);
	claims[nclaims].fd = fd;
	claims[nclaims++].opt = opt;
	return fd;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

static int close_range_sys(unsigned lo, unsigned hi)
{
#ifdef SYS_close_range
	return (int)syscall(SYS_close_range, lo, hi, 0);
#else
	(void)lo;
	(void)hi;
	errno = ENOSYS;
	return -1;
#endif
}

/* Slow path for kernels without close_range (before 5.9), and macOS. */
static int close_by_listing(const int *keep, size_t n)
{
#ifdef __APPLE__
	DIR *d = opendir("/dev/fd");
#else
	DIR *d = opendir("/proc/self/fd");
#endif
	struct dirent *e;
	int dfd;

	if (!d)
		return -1;
	dfd = dirfd(d);
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);
		size_t i;
		if (fd <= 2 || fd == dfd)
			continue;
		for (i = 0; i < n && keep[i] != fd; i++)
			;
		if (i == n)
			close(fd);
	}
	closedir(d);
	return 0;
}

int sbx_close_fds_except(const int *keep, size_t n)
{
	int sorted[64];
	unsigned lo = 3;
	size_t i;

	if (n > sizeof sorted / sizeof sorted[0]) {
		errno = E2BIG;
		return -1;
	}
	for (i = 0; i < n; i++)
		sorted[i] = keep[i];
	qsort(sorted, n, sizeof sorted[0], cmp_int);
	for (i = 0; i < n; i++) {
		if (sorted[i] < (int)lo)
			continue;
		if ((unsigned)sorted[i] > lo && close_range_sys(lo, (unsigned)sorted[i] - 1) < 0)
			goto fallback;
		lo = (unsigned)sorted[i] + 1;
	}
	if (close_range_sys(lo, ~0U) < 0)
		goto fallback;
	return 0;
fallback:
	if (errno != ENOSYS)
		return -1;
	return close_by_listing(keep, n);
}

int sbx_close_fail(int fd)
{
	int e = errno;

	close(fd);
	errno = e;
	return -1;
}

int sbx_fd_cloexec(int fd, int on)
{
	int fl = fcntl(fd, F_GETFD);

	if (fl < 0)
		return -1;
	fl = on ? fl | FD_CLOEXEC : fl & ~FD_CLOEXEC;
	return fcntl(fd, F_SETFD, fl);
}

int sbx_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Read until len bytes or end of file; with a deadline (ms of
 * sbx_now_ms, 0: none) each read waits for the fd first, and the wait
 * ends with ETIMEDOUT. */
static long read_until(int fd, void *buf, size_t len, uint64_t deadline)
{
	char *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t r;

		if (deadline) {
			struct pollfd pfd = { fd, POLLIN, 0 };
			uint64_t now = sbx_now_ms();
			int pr = now >= deadline ? 0 : poll(&pfd, 1, (int)(deadline - now));
			if (pr == 0) {
				errno = ETIMEDOUT;
				return -1;
			}
			if (pr < 0 && errno != EINTR)
				return -1;
			if (pr < 0)
				continue;
		}
		r = read(fd, p + got, len - got);
		if (r < 0 && (errno == EINTR || (deadline && errno == EAGAIN)))
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (long)got;
}

long sbx_read_full(int fd, void *buf, size_t len)
{
	return read_until(fd, buf, len, 0);
}

long sbx_read_eof(int fd, void *buf, size_t len)
{
	return read_until(fd, buf, len, sbx_now_ms() + SBX_FD_WAIT_MS);
}

long sbx_read_small(const char *path, int flags, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | flags), e;
	long n;

	if (fd < 0)
		return -1;
	n = sbx_read_full(fd, buf, size - 1);
	e = errno;
	close(fd);
	if (n < 0) {
		errno = e;
		return -1;
	}
	buf[n] = '\0';
	return n;
}

void sbx_ready_fd(int fd)
{
	if (fd < 0)
		return;
	if (sbx_write_all(fd, "\n", 1) < 0)
		sbx_warn_errno("unable to write to ready fd %d", fd);
	close(fd);
}

int sbx_write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (sbx_write_all(fd, s, strlen(s)) < 0)
		return sbx_close_fail(fd);
	return close(fd);
}

int sbx_fd_below(int fd, unsigned long long dev, unsigned long long ino)
{
	struct stat st, up;
	int cur = fcntl(fd, F_DUPFD_CLOEXEC, 3), ret = 0;

	for (int depth = 0; cur >= 0 && depth < PATH_MAX; depth++) {
		int next = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (next < 0 || fstat(cur, &st) < 0 || fstat(next, &up) < 0) {
			if (next >= 0)
				close(next);
			break;
		}
		close(cur);
		cur = next;
		if (up.st_dev == dev && up.st_ino == ino) {
			ret = 1;
			break;
		}
		if (up.st_dev == st.st_dev && up.st_ino == st.st_ino)
			break;
	}
	if (cur >= 0)
		close(cur);
	return ret;
}

/* Reading the policies a tool is given: a baseline file only someone
 * trusted could have written, or an fd. See policy.h. */
#include "policy.h"

#include "fd.h"
#include "exitcodes.h"
#include "quote.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Read fd to end of file, at most SBX_POL_MAX_BYTES (more is an error),
 * bounded in time like every fd read to its end (fd.h). */
static int read_all(int fd, const char *src, char **out, size_t *outlen, struct sbx_err *e)
{
	char *buf = malloc(SBX_POL_MAX_BYTES + 1);
	long n;

	if (!buf)
		return sbx_err_set(e, SBX_EXIT_SYS, "unable to allocate memory: %s", strerror(ENOMEM));
	n = sbx_read_eof(fd, buf, SBX_POL_MAX_BYTES + 1);
	if (n < 0) {
		int err = errno;
		free(buf);
		if (err == ETIMEDOUT)
			return sbx_err_set(e, SBX_EXIT_USAGE, "%s: " SBX_FD_NO_EOF, src, SBX_FD_WAIT_MS / 1000);
		return sbx_err_set(e, SBX_EXIT_SYS, "unable to read %s: %s", src, strerror(err));
	}
	if ((size_t)n > SBX_POL_MAX_BYTES) {
		free(buf);
		return sbx_err_set(e, SBX_EXIT_USAGE, "%s: larger than %u bytes", src, SBX_POL_MAX_BYTES);
	}
	*out = buf;
	*outlen = (size_t)n;
	return 0;
}

static int parse_fd(struct sbx_policy *p, int fd, struct sbx_err *e)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if (read_all(fd, p->source ? p->source : "policy", &buf, &len, e) < 0)
		return -1;
	rc = sbx_policy_parse(p, buf, len, e);
	free(buf);
	return rc;
}

int sbx_policy_load_fd(struct sbx_policy *p, int fd, struct sbx_err *e)
{
	return parse_fd(p, fd, e);
}

/* Who may have written st: root or the caller, and nobody else through
 * the group or other bits (a sticky directory, like /tmp, lets
 * others create names but not replace this one). NULL or why not. */
static const char *untrusted(const struct stat *st, int isdir, char *why, size_t sz)
{
	if (st->st_uid != 0 && st->st_uid != geteuid()) {
		snprintf(why, sz, "owned by another user (uid %u)", (unsigned)st->st_uid);
		return why;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		/* Sticky, and its owner trusted (checked above): others may
		 * add names but not rename or remove this one. */
		if (isdir && (st->st_mode & S_ISVTX))
			return NULL;
		snprintf(why, sz, "writable by group or others (mode %04o)",
			 (unsigned)(st->st_mode & 07777));
		return why;
	}
	return NULL;
}

int sbx_policy_open_trusted(const char *path, const char *src, struct sbx_err *e)
{
	char buf[PATH_MAX], whybuf[80], qp[1100], *comp, *next;
	struct stat st;
	const char *why;
	int dfd, fd;

	/* Messages name the path escaped: it may hold any byte. */
	sbx_quote(qp, sizeof qp, path, strlen(path), 1024, 0);
	if (!*path)
		return sbx_err_set(e, SBX_EXIT_USAGE, "%s: invalid path '': empty", src);
	if (path[0] != '/')
		return sbx_err_set(e, SBX_EXIT_USAGE, "%s: invalid path '%s': not absolute", src, qp);
	if (path[strlen(path) - 1] == '/')
		return sbx_err_set(e, SBX_EXIT_USAGE, "%s: invalid path '%s': a directory", src, qp);
	if (strlen(path) >= sizeof buf)
		return sbx_err_set(e, SBX_EXIT_USAGE, "%s: invalid path: too long", src);
	strcpy(buf, path);

	/* Walk from / one component at a time, never following a link, and
	 * judge every directory on the way: whoever could rename an entry in
	 * one of them could swap the file. */
	dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return sbx_err_set(e, SBX_EXIT_SYS, "unable to open /: %s", strerror(errno));
	comp = buf + 1;
	for (;;) {
		if (fstat(dfd, &st) < 0) {
			int err = errno;
			close(dfd);
			return sbx_err_set(e, SBX_EXIT_SYS, "unable to stat a directory of %s: %s",
					    qp, strerror(err));
		}
		if ((why = untrusted(&st, 1, whybuf, sizeof whybuf))) {
			close(dfd);
			return sbx_err_set(e, SBX_EXIT_POLICY,
					    "%s: refused: a directory on its path is %s", src, why);
		}
		while (*comp == '/')
			comp++;
		next = strchr(comp, '/');
		if (!next || !next[strspn(next, "/")])
			break;
		*next = '\0';
		fd = openat(dfd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			int err = errno;
			struct stat ls;
			int link = fstatat(dfd, comp, &ls, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(ls.st_mode);
			close(dfd);
			if (link) {
				sbx_quote(whybuf, sizeof whybuf, comp, strlen(comp), 64, 0);
				return sbx_err_set(e, SBX_EXIT_POLICY,
						    "%s: refused: a symbolic link on its path (%s)", src, whybuf);
			}
			if (err == ENOENT || err == ENOTDIR)
				return sbx_err_set(e, SBX_EXIT_USAGE, "%s: invalid path '%s': %s", src,
						    qp, err == ENOENT ? "does not exist" : "not a directory on its way");
			return sbx_err_set(e, SBX_EXIT_SYS, "unable to open %s: %s", qp, strerror(err));
		}
		close(dfd);
		dfd = fd;
		comp = next + 1;
	}
	if (!*comp) {
		close(dfd);
		return sbx_err_set(e, SBX_EXIT_USAGE, "%s: invalid path '%s': a directory", src, qp);
	}
	/* O_NONBLOCK: a FIFO must not hang us before it is refused. */
	fd = openat(dfd, comp, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;
		close(dfd);
		if (err == ELOOP)
			return sbx_err_set(e, SBX_EXIT_POLICY, "%s: refused: a symbolic link", src);
		if (err == ENOENT)
			return sbx_err_set(e, SBX_EXIT_USAGE, "%s: invalid path '%s': does not exist",
					    src, qp);
		return sbx_err_set(e, SBX_EXIT_SYS, "unable to open %s: %s", qp, strerror(err));
	}
	close(dfd);
	if (fstat(fd, &st) < 0) {
		int err = errno;
		close(fd);
		return sbx_err_set(e, SBX_EXIT_SYS, "unable to stat %s: %s", qp, strerror(err));
	}
	why = !S_ISREG(st.st_mode) ? "not a regular file" : untrusted(&st, 0, whybuf, sizeof whybuf);
	if (why) {
		close(fd);
		return sbx_err_set(e, SBX_EXIT_POLICY, "%s: refused: %s", src, why);
	}
	return fd;
}

int sbx_policy_load_file(struct sbx_policy *p, const char *path, struct sbx_err *e)
{
	int fd = sbx_policy_open_trusted(path, p->source ? p->source : path, e), rc;

	if (fd < 0)
		return -1;
	rc = parse_fd(p, fd, e);
	close(fd);
	return rc;
}

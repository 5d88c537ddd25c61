/* File-descriptor arguments. Every fd option is parsed here: strict decimal,
 * above 2 (0-2 are the command's stdio and never taken by an option), and
 * open. Each tool documents per option whether it consumes the fd (closes
 * it) or passes it on to the command. */
#ifndef SBX_FD_H
#define SBX_FD_H

#include <stddef.h>

/* NULL on success, else a reason ("not open", "not a number", ...). */
const char *sbx_parse_fd(const char *s, int *fd);
/* Die with a usage error (100) naming the option, the value and why.
 * Every fd option of every tool goes through here, and each fd serves one
 * option: a second claim is refused, "--ro-fd: fd 3 given twice" or
 * "--ready-fd: fd 7 is also --status-fd". When one of the two is
 * --status-fd, no exit line is written into it (it is someone else's). */
int sbx_opt_fd(const char *opt, const char *s);
/* The same check without the claim, for an fd the tool only hands on to
 * its command (sbx-cgroup --pass-fd 9 may also be its --status-fd 9, the
 * status fd the command writes to as well). */
int sbx_opt_fd_shared(const char *opt, const char *s);

/* Close every fd above 2 except the n listed in keep (which may be in any
 * order and contain duplicates). Uses close_range(2); falls back to a loop
 * over /proc/self/fd. Returns 0, or -1 with errno set. */
int sbx_close_fds_except(const int *keep, size_t n);

/* Close fd on a failure path without losing the failure: errno is kept.
 * Returns -1, so a caller can `return sbx_close_fail(fd);`. */
int sbx_close_fail(int fd);

/* Set or clear FD_CLOEXEC. Returns 0 or -1. */
int sbx_fd_cloexec(int fd, int on);

/* write(2) all of buf, retrying on EINTR and short writes. 0 or -1. */
int sbx_write_all(int fd, const void *buf, size_t len);

/* Write the string s into the existing file path (a /proc or /sys control
 * file: uid_map, setgroups, a sysctl): 0, or -1 with errno from open or
 * write. */
int sbx_write_file(const char *path, const char *s);

/* read(2) until len bytes or end of file, retrying on EINTR and short
 * reads. Returns the bytes read, or -1 with errno. */
long sbx_read_full(int fd, void *buf, size_t len);

/* What a tool reads from an fd the caller hands it (--policy-fd,
 * --baseline-fd, --plan-fd, --grant-fd) ends at end of file; a writer
 * that never closes its end is refused after SBX_FD_WAIT_MS in all,
 * never waited on forever. The message, after "OPTION FD: ". */
#define SBX_FD_WAIT_MS 10000u
#define SBX_FD_NO_EOF "no end of file after %u s (the writer must close its end)"

/* sbx_read_full with that bound (a non-blocking pipe is waited on, not
 * taken as empty): the bytes read, or -1 with errno, ETIMEDOUT when the
 * end of file did not come in time. */
long sbx_read_eof(int fd, void *buf, size_t len);

/* A small file (a /proc or cgroup file) as a string: opens path with
 * O_RDONLY|O_CLOEXEC and extra flags, reads up to size - 1 bytes and
 * NUL-terminates them. Returns the length, or -1 with errno. */
long sbx_read_small(const char *path, int flags, char *buf, size_t size);

/* --ready-fd: one newline, then close. Errors are reported, not fatal
 * (the reader may have gone; the sandbox is still correct). */
void sbx_ready_fd(int fd);

/* Whether the directory (dev, ino) is one of the ancestors of the
 * directory fd, by "..", never by path: 1 or 0 (also when a step fails). */
int sbx_fd_below(int fd, unsigned long long dev, unsigned long long ino);

#endif

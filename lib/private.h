/* A file only its owner can read: the rule for every file that holds a
 * secret a tool reads (a grant key, a service route's header lines). The
 * path is opened without following a symlink, and the file must be a
 * regular file owned by root or the caller (the real uid) with no group or
 * other mode bits. Every such reader opens through here. */
#ifndef SBX_PRIVATE_H
#define SBX_PRIVATE_H

#include <stddef.h>

/* What is wrong with a file the rule refuses: why ("a symlink", "not a
 * regular file", "owned by uid 1001 (not root or the caller)", "mode 0640
 * gives group or others access") and fix, the static text that mends it
 * ("name the file itself", "chown it", "chmod 600 it"; NULL when there is
 * none to give). */
struct sbx_private_why {
	char why[64];
	const char *fix;
};

/* An fd open for reading (O_RDONLY|O_NONBLOCK|O_CLOEXEC) on path, which
 * the rule accepts. Otherwise -1: with errno set when open or fstat
 * failed (w->why is empty), or with errno 0 and w filled when the rule
 * refuses the file (the fd is closed). */
int sbx_open_private(const char *path, struct sbx_private_why *w);

#endif

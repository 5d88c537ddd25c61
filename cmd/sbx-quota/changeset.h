/* --changes DIR: the change set of `sbx-ns --changes DIR`, the directory
 * whose upper/ is the overlay's upper layer over the workspace. Every write
 * of a command run with a change set lands there, so it must be under the
 * workspace's project quota as the workspace is: prepare gives it the
 * project, verify proves it is there. */
#ifndef SBX_QUOTA_CHANGESET_H
#define SBX_QUOTA_CHANGESET_H

#include "quota_tree.h"

#include <stdint.h>

struct qchg {
	const char *path;
	char name[1100];      /* "change set PATH", PATH escaped, for messages */
	int fd;               /* the directory, O_RDONLY */
	uint32_t projid;      /* its root's */
	int inherit;
	uint64_t inodes;      /* after a walk: the root and every inode below it */
	uint64_t in_project;  /* of those, the ones that had the project (scan) */
};

/* Opens DIR once (absolute, O_NOFOLLOW: a symbolic link is a usage error)
 * and refuses (102) one on another filesystem than the workspace wsfd, the
 * workspace itself, one inside it or one that holds it. */
void qchg_open(struct qchg *c, const char *path, int wsfd, const char *wsname);

/* verify: DIR's root carries the workspace's project projid with
 * PROJINHERIT (else 102 and the prepare line that fixes it), and the tree
 * below it keeps the workspace's rules (sbx_qtree CHECK, whiteouts allowed). */
void qchg_verify(struct qchg *c, uint32_t projid, const char *wsname);

/* prepare, first pass: the tree's shape, and how many of its inodes have
 * projid already (in_project); then apply: all of it into projid. */
void qchg_scan(struct qchg *c, uint32_t projid);
void qchg_apply(struct qchg *c, uint32_t projid);

#endif

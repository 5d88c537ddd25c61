/* The logical size of a directory tree, for sampled disk metering: the sum
 * of st_size over regular files, found without following symlinks and
 * without leaving the directory's filesystem. Every name of a hard-linked
 * file counts (an over-count, never an under-count). */
#ifndef SBX_METER_DISK_H
#define SBX_METER_DISK_H

#include <stdint.h>

/* Deeper trees are refused rather than partly counted. */
#define SBX_METER_DISK_MAXDEPTH 256

/* Adds the size of path's tree to *bytes. Entries that vanish during the
 * walk are skipped. Returns 0, or -1 with errno when part of the tree could
 * not be read (EACCES, ELOOP for a tree deeper than the limit, ...): the
 * caller must treat the size as unknown, not as small. */
int sbx_meter_du(const char *path, uint64_t *bytes);

#endif

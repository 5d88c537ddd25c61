/* Protected paths (--protect PATH): host paths that a sandbox must not be
 * able to change. A writable root exposes a protected path P when P is the
 * root or lies inside it (P or an ancestor of P is writable), and also
 * when the root lies inside P (part of P is writable). Both are refusals.
 *
 * Paths are compared twice: as canonical strings (symlinks resolved as far
 * as the path exists), and by identity, walking the existing ancestors of
 * each side and comparing device and inode with the other, so the same
 * directory reached through a host bind mount under another name is still
 * caught. */
#ifndef SBX_PROTECT_H
#define SBX_PROTECT_H

#include <stddef.h>
#include <sys/types.h>

struct sbx_protect_ent {
	char *path;      /* canonical, malloc'd */
	const char *arg; /* as given */
	int exists;
	dev_t dev;
	ino_t ino;
};

struct sbx_protect {
	struct sbx_protect_ent *v;
	size_t n;
};

/* A writable root as the tool holds it: canonical path and the identity
 * it checked (dev/ino), e.g. sbx-ns's mount_op src/dev/ino. */
struct sbx_protect_root {
	const char *path;
	dev_t dev;
	ino_t ino;
};

/* Canonical form of p: realpath() of the longest existing prefix, the
 * rest appended as given. p must pass sbx_path_shape. malloc'd, or NULL
 * with errno. */
char *sbx_protect_canon(const char *p);

/* Add one protected path or die with a usage error (100):
 *   "--protect: invalid path '': empty"
 *   "--protect: invalid path 'x': not absolute"
 *   "--protect: invalid path '/a/../b': '..' component"
 *   "--protect: invalid path '/': the whole file system" (also when it
 *   resolves to /) */
void sbx_protect_add(struct sbx_protect *p, const char *opt, const char *path);

/* The index of the first protected path that root exposes, or -1. */
long sbx_protect_exposed(const struct sbx_protect *p, const struct sbx_protect_root *root);

/* Check every root; die 102 on the first exposure:
 *   "refusing to start: protected path /srv/keys is writable through --rw /srv" */
void sbx_protect_check(const struct sbx_protect *p, const struct sbx_protect_root *roots,
		       const char *const *root_opts, size_t nroots);

#endif

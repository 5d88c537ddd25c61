/* sbx-changes: review, apply or discard a change set that
 * `sbx-ns --changes DIR` left (the layout: man sbx-changes). */
#ifndef SBX_CHANGES_H
#define SBX_CHANGES_H

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#define TOOL "sbx-changes"
/* The names apply writes files under before renaming them into place,
 * CS_TMP and a number: a change set holding one is refused, the leftovers
 * of a killed apply are removed by the next one. */
#define CS_TMP ".sbx-changes."

enum base_type { B_NONE, B_FILE, B_DIR, B_SYMLINK, B_OTHER, B_CHANGED };

struct base {
	char *path;
	enum base_type type;
	uint64_t dev, ino, size;
	int64_t mtime_ns, ctime_ns;
};

enum kind { K_ADDED, K_MODIFIED, K_DELETED, K_TYPE, K_MODE, K_SYMLINK };

struct change {
	char *path;
	enum kind kind;
	mode_t mode;              /* the new object's type and bits; 0: deleted */
	uid_t uid;                /* its owner in the change set (root's apply gives it) */
	gid_t gid;
	uint64_t size;
	char sha[65];             /* of the new content (files, symlinks) */
	char *target;             /* symlink */
	const struct base *base;  /* its own line, or the opaque directory's */
	int opaque_child;         /* deleted because its directory is opaque */
	const char *refused;      /* why apply refuses it */
	const char *prot;         /* deny-write: the protected path that refuses it */
	int prot_after;           /* protected in the workspace as apply would leave it */
	int done;                 /* the workspace already holds the new state */
	long tmp;                 /* apply: its temporary name's number, or -1 */
};

struct cs {
	const char *dir, *ws;
	int dirfd, wsfd, upfd, lockfd;
	char *parent;    /* apply: DIR's parent, opened (pfd) with DIR (setfd) to remove it */
	int pfd, setfd;
	struct base *base;
	size_t nbase;
	struct change *v;
	size_t n, cap;
	int lazy_sha;    /* apply: a file's sha256 only when a check needs it */
	const char **globs; /* --deny-write (none: the defaults, as sbx-ns's) */
	size_t nglobs;
};

/* main.c */
void cs_open(struct cs *c, const char *dir, const char *ws, int excl);
void cs_die_open(const char *what, const char *path) __attribute__((noreturn));
const char *cs_q(const char *s);
const char *cs_q2(const char *s);
const char *cs_q3(const char *s);
const char *cs_qf(const char *dir, const char *name);
const char *cs_qd(const char *s, int which);
/* scan.c */
void cs_scan(struct cs *c);
void cs_check(struct cs *c);
int cs_ws_parent(struct cs *c, const char *path, const char **name);
int cs_parent(int root, const char *path, const char **name);
/* path below root (a change set's upper), opened without following a link */
int cs_open_below(int root, const char *path, int flags);
const char *cs_kind(enum kind k);
/* protect.c */
void cs_protect_scan(struct cs *c);
const char *cs_protected(const char *path, int *after);
/* apply.c */
int cs_apply(struct cs *c, int skip);
/* diff.c */
int cs_diff(struct cs *c);
/* discard.c */
const char *cs_rm_tree(int dirfd, const char *name);
int cs_discard(const char *dir);
void cs_consumable(struct cs *c);
int cs_consume(struct cs *c);

#endif

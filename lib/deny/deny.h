/* Deny-write's rule: which paths of a tree a command may read but never
 * change. One rule, used by every tool that judges a tree by it (sbx-ns
 * binds what it finds read-only and makes what a command created inert;
 * other tools list it).
 *
 * The rule: the matches of the deny-write globs (relative to the tree,
 * default sbx_deny_default_globs(): .env, .env.*, git's configuration and
 * hooks), and, while the globs hold ".git/config", git's rule: every
 * directory of the whole tree that git takes for a git directory by its
 * shape (a ".git", or HEAD with objects/ and refs/ or with a commondir),
 * its config, config.worktree, commondir, gitdir and hooks, every ".git"
 * that is a file, and what a protected config names inside the tree
 * (include.path, includeIf.*.path, core.hooksPath, a word of a value that
 * names a file by a path: a program git would run).
 *
 *   deny.c      the globs' walk, and what one walk collects
 *   denytree.c  the walk of the whole tree that finds every git directory
 *   denygit.c   git's rule for one git directory
 *   denyconf.c  what a protected config names
 *   denyscan.c  sbx_deny_scan: the whole rule in one call
 *
 * For a tool that only needs the list:
 *
 *   struct deny_list l;
 *   size_t n;
 *   const char *const *g = sbx_deny_default_globs(&n);
 *   sbx_deny_scan(rootfd, "/path/of/tree", g, n, &l);
 *   for (size_t i = 0; i < l.n; i++)  l.v[i].rel: "dir/.git/config", ...
 *   sbx_deny_list_free(&l);
 *
 * Every entry is DENY_PROTECT, with the dev/ino it had; the list is sorted
 * by strcmp of rel and holds no ancestors. A path the walk cannot look at
 * (unreadable, a symlink or hard-linked file where a protected path is,
 * another mount below the tree while git's rule is on, a bound exceeded)
 * ends the process with the start walk's message ("unable to protect ...
 * in the workspace: ...") and its exit code; an invalid glob with a usage
 * message. The walk never follows a symlink and never leaves the tree's
 * mount; it takes any filesystem (overlayfs included).
 *
 * The walk itself (sbx_deny_walk) has two modes, for a tool that keeps a
 * start set and checks a tree again later (sbx-ns): check 0 fills found
 * (the start set); check 1 compares with start and collects in cand what
 * is protected but new, in fail what could not be looked at. tree_in /
 * tree_out let a later walk read again only the directories that changed. */
#ifndef SBX_DENY_H
#define SBX_DENY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

enum deny_kind {
	DENY_ANCESTOR = 1, /* a directory leading to a protected path (sbx-ns pins it) */
	DENY_PROTECT,      /* a protected path */
};

struct deny_op {
	enum deny_kind kind;
	char *rel;         /* relative to the tree; "." the tree itself */
	dev_t dev;
	ino_t ino;
};

struct deny_list {
	struct deny_op *v;
	size_t n, cap;
};

/* The directories one walk of the whole tree read, in walk order (each
 * after its parent), with the ctime each had before it was read: the
 * next walk reads again only those whose ctime is not that one. */
struct deny_dir {
	char *rel;
	dev_t dev;
	ino_t ino;
	int64_t ctime;
	unsigned flags, depth;
};

struct deny_tree {
	struct deny_dir *v;
	size_t n, cap;
	int64_t read_ns;       /* when the walk began (CLOCK_REALTIME_COARSE) */
	int overflow;          /* more directories than it keeps: not to be used */
};

/* One walk of the rule over a tree: at the start (check 0) it fills
 * found; at the end (check 1) it compares with start and collects the
 * protected paths that are new (cand). */
struct deny_walk {
	int check;
	const char *ws_path;   /* the tree's canonical path (absolute paths in configs) */
	int depth;
	struct deny_list found;
	const struct deny_list *start;
	char **cand;
	size_t ncand, capcand;
	struct deny_fix { int fd; mode_t mode; } *fix; /* check: modes to put back */
	size_t nfix, capfix;
	char **fail;           /* check: "rel\0why" of what could not be looked at */
	const struct deny_tree *tree_in; /* the last walk's directories, or NULL: read all */
	struct deny_tree tree_out;       /* this walk's */
	size_t nfail, capfail;
};

/* denyscan.c: the whole rule in one call (see above) */
void sbx_deny_scan(int rootfd, const char *root_path, const char *const *globs, size_t n,
		   struct deny_list *out);
const char *const *sbx_deny_default_globs(size_t *n);
void sbx_deny_list_free(struct deny_list *l);

/* deny.c: the globs' walk, then git's rule (while the globs hold
 * .git/config); wsfd: the tree (O_PATH is enough) */
void sbx_deny_walk(struct deny_walk *w, int wsfd, const char *const *globs, size_t n);
/* The modes sbx_deny_open_up changed, put back; w->fix freed. */
void sbx_deny_restore(struct deny_walk *w);
void sbx_deny_open_up(struct deny_walk *w, int fd);
void sbx_deny_push(struct deny_list *l, enum deny_kind kind, const char *rel, dev_t dev, ino_t ino);
/* The entry of l for exactly this object at rel, or NULL. */
const struct deny_op *sbx_deny_known(const struct deny_list *l, const char *rel, const struct stat *st);
/* The DENY_PROTECT entry of l that rel is at or below, or NULL. */
const struct deny_op *sbx_deny_covered(const struct deny_list *l, const char *rel);
void sbx_deny_new_tree(struct deny_walk *w, int dirfd, const char *rel, int depth);
/* check 1: rel is new and protected; rel could not be looked at (why). */
void sbx_deny_candidate(struct deny_walk *w, const char *rel);
void sbx_deny_failed(struct deny_walk *w, const char *rel, const char *why);

/* denygit.c: git's rule, for one git directory */
enum { SBX_GIT_HEAD = 1, SBX_GIT_OBJECTS = 2, SBX_GIT_REFS = 4, SBX_GIT_COMMONDIR = 8,
       SBX_GIT_DOTGIT = 16, SBX_GIT_INGIT = 32 };
int sbx_deny_git_on(const char *const *globs, size_t n);
int sbx_git_shaped(unsigned flags);
unsigned sbx_git_name_flag(const char *name);
int sbx_git_was_dir(const struct deny_list *start, const char *rel);
void sbx_git_dir(struct deny_walk *w, int wsfd, int fd, const char *rel);
void sbx_git_dotgit(struct deny_walk *w, int dirfd, const char *rel);

/* denyconf.c: what a protected config names in the tree */
void sbx_git_config(struct deny_walk *w, int wsfd, int fd, const char *cfgrel, const char *gitdir);
void sbx_git_global(struct deny_walk *w, int wsfd, const char *gitdir);

/* denytree.c: the walk of the whole tree that finds every git directory */
#define SBX_DENY_MAX_DEPTH 128  /* directories below the tree */
size_t sbx_deny_tree_add(struct deny_tree *t, const char *rel, const struct stat *st, unsigned flags,
			 unsigned depth);
void sbx_deny_git_walk(struct deny_walk *w, int wsfd);
void sbx_deny_tree_free(struct deny_tree *t);

#endif

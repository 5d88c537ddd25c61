/* Deny-write's globs: the paths of a tree that the deny-write globs name
 * (relative to the tree; sbx_deny_default_globs: .env, .env.*, git's
 * configuration and hooks, also of worktrees and submodules), then, while
 * the list holds .git/config, git's rule (denygit.c) over the whole tree
 * (denytree.c) for every git directory.
 *
 * The globs' walk reads only the directories they name (and, for a "**"
 * in the middle, the subtree it stands for), never through a symlink and
 * never below a protected directory. At the start (check 0) each match is
 * pushed to found; a symlink or a hard-linked file where a protected path
 * is, or a path that cannot be looked at, ends the process (the caller
 * cannot protect it). At the end (check 1) what is protected and not the
 * very object of the start set is a candidate (sbx_deny_candidate), and
 * what cannot be looked at is said (sbx_deny_failed). */
#include "deny.h"

#include "die.h"
#include "exitcodes.h"
#include "policy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_COMPS 32
#define MAX_DEPTH 64

static int is_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

static int is_dstar(const char *c)
{
	return c[0] == '*' && c[1] == '*' && c[2] == '\0';
}

void sbx_deny_push(struct deny_list *l, enum deny_kind kind, const char *rel, dev_t dev, ino_t ino)
{
	struct deny_op *d;

	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].kind == kind && !strcmp(l->v[i].rel, rel))
			return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		d = sbx_need(realloc(l->v, cap * sizeof *d));
		l->v = d;
		l->cap = cap;
	}
	d = &l->v[l->n++];
	d->kind = kind;
	d->rel = sbx_need(strdup(rel));
	d->dev = dev;
	d->ino = ino;
}

static void join(char *out, const char *prefix, const char *name)
{
	if (*prefix)
		snprintf(out, PATH_MAX, "%s/%s", prefix, name);
	else
		snprintf(out, PATH_MAX, "%s", name);
}

/* At or below a protected directory of the start set. */
const struct deny_op *sbx_deny_covered(const struct deny_list *l, const char *rel)
{
	for (size_t i = 0; i < l->n; i++) {
		const char *p = l->v[i].rel;
		if (l->v[i].kind == DENY_PROTECT &&
		    (!strcmp(p, ".") || sbx_path_within(rel, p)))
			return &l->v[i];
	}
	return NULL;
}

/* The entry of the start set for exactly this object at this path. */
const struct deny_op *sbx_deny_known(const struct deny_list *l, const char *rel, const struct stat *st)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].rel, rel) && l->v[i].dev == st->st_dev && l->v[i].ino == st->st_ino)
			return &l->v[i];
	return NULL;
}

static void walk(struct deny_walk *w, int dirfd, const char *prefix, char **comps, int i, int n);

/* At the end, an unprivileged caller cannot look into a directory of its
 * own that the command made unsearchable (root can): what the command hid
 * there would stay. The directory is opened to its owner for the check and
 * its mode put back afterwards (sbx_deny_restore). */
void sbx_deny_open_up(struct deny_walk *w, int fd)
{
	static uid_t euid = (uid_t)-1;
	struct stat st;
	char proc[40];

	if (euid == (uid_t)-1)
		euid = geteuid();
	if (euid == 0 || fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != euid || (st.st_mode & 0700) == 0700)
		return;
	if (w->nfix == w->capfix) {
		size_t cap = w->capfix ? w->capfix * 2 : 4;
		struct deny_fix *v = sbx_need(realloc(w->fix, cap * sizeof *v));
		w->fix = v;
		w->capfix = cap;
	}
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	if (chmod(proc, (st.st_mode & 07777) | 0700) < 0)
		return;
	w->fix[w->nfix].fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	w->fix[w->nfix++].mode = st.st_mode & 07777;
}

void sbx_deny_restore(struct deny_walk *w)
{
	char proc[40];

	while (w->nfix > 0) {
		struct deny_fix *f = &w->fix[--w->nfix];
		if (f->fd < 0)
			continue;
		snprintf(proc, sizeof proc, "/proc/self/fd/%d", f->fd);
		chmod(proc, f->mode);
		close(f->fd);
	}
	free(w->fix);
	w->fix = NULL;
	w->capfix = 0;
}

static void descend(struct deny_walk *w, int dirfd, const char *name, const char *rel,
		    char **comps, int i, int n)
{
	int sub;

	/* A "**" in the middle follows directories as deep as they go: a
	 * bound, so a tree the command made cannot exhaust the stack. */
	if (w->depth >= MAX_DEPTH || strlen(rel) > PATH_MAX - NAME_MAX - 2) {
		if (w->check) {
			sbx_deny_candidate(w, rel);
			return;
		}
		sbx_die(SBX_EXIT_POLICY, "unable to protect below %s in the workspace: deeper than %d "
			"directories", rel, MAX_DEPTH);
	}
	sub = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (sub < 0) {
		if (w->check)
			return; /* changed meanwhile: the objects below are looked at by name */
		sbx_die_errno(SBX_EXIT_SYS, "unable to open %s in the workspace", rel);
	}
	sbx_deny_open_up(w, sub);
	w->depth++;
	walk(w, sub, rel, comps, i, n);
	w->depth--;
	close(sub);
}

/* A new directory where the glob ends in "**": everything in it is new.
 * Git's own *.sample files in a hooks directory are never run: left. */
void sbx_deny_new_tree(struct deny_walk *w, int dirfd, const char *rel, int depth)
{
	int rfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	const char *base = strrchr(rel, '/');
	int hooks = !strcmp(base ? base + 1 : rel, "hooks");
	struct dirent *e;
	DIR *d;

	if (rfd < 0 || !(d = fdopendir(rfd))) {
		if (rfd >= 0)
			close(rfd);
		sbx_deny_candidate(w, rel);
		return;
	}
	while ((e = readdir(d))) {
		char sub[PATH_MAX];
		struct stat st;
		size_t len = strlen(e->d_name);

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		join(sub, rel, e->d_name);
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode) && depth < MAX_COMPS) {
			int fd = openat(dirfd, e->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0) {
				sbx_deny_new_tree(w, fd, sub, depth + 1);
				close(fd);
				continue;
			}
		}
		if (hooks && S_ISREG(st.st_mode) && len > 7 && !strcmp(e->d_name + len - 7, ".sample"))
			continue;
		sbx_deny_candidate(w, sub);
	}
	closedir(d);
}

/* One existing entry name of dirfd matched component i. */
static void step(struct deny_walk *w, int dirfd, const char *prefix, const char *name,
		 char **comps, int i, int n)
{
	int final = i == n - 1 || (i == n - 2 && is_dstar(comps[n - 1]));
	const struct deny_op *o;
	char rel[PATH_MAX];
	struct stat st;

	join(rel, prefix, name);
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (w->check)
			return; /* gone meanwhile */
		sbx_die_errno(SBX_EXIT_SYS, "unable to stat %s in the workspace", rel);
	}
	if (!w->check) {
		if (sbx_deny_covered(&w->found, rel))
			return;
		if (S_ISLNK(st.st_mode))
			sbx_die(SBX_EXIT_POLICY, "unable to protect %s in the workspace: it is a symlink", rel);
		if (final) {
			if (S_ISREG(st.st_mode) && st.st_nlink > 1)
				sbx_die(SBX_EXIT_POLICY, "unable to protect %s in the workspace: it has %lu hard links",
					rel, (unsigned long)st.st_nlink);
			sbx_deny_push(&w->found, DENY_PROTECT, rel, st.st_dev, st.st_ino);
			return;
		}
	} else {
		o = sbx_deny_known(w->start, rel, &st);
		if (o && (o->kind == DENY_PROTECT || final))
			return;
		if (!o && final) {
			if (S_ISDIR(st.st_mode) && is_dstar(comps[n - 1])) {
				int fd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (fd >= 0) {
					sbx_deny_new_tree(w, fd, rel, 0);
					close(fd);
					return;
				}
			}
			sbx_deny_candidate(w, rel);
			return;
		}
		/* Where a directory leads to protected paths, a new symlink
		 * or file (a .git file naming another git directory) is one. */
		if (!o && !S_ISDIR(st.st_mode)) {
			sbx_deny_candidate(w, rel);
			return;
		}
	}
	if (S_ISDIR(st.st_mode))
		descend(w, dirfd, name, rel, comps, i + 1, n);
}

/* "**" before the last component: zero or more directories, never
 * through a symlink, never below a protected directory. */
static void any_depth(struct deny_walk *w, int dirfd, const char *prefix, char **comps, int i, int n)
{
	int rfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	const struct deny_op *o;
	struct dirent *e;
	DIR *d;

	walk(w, dirfd, prefix, comps, i + 1, n);
	if (rfd < 0 || !(d = fdopendir(rfd))) {
		if (w->check) {
			if (rfd >= 0)
				close(rfd);
			return;
		}
		sbx_die_errno(SBX_EXIT_SYS, "unable to read directory %s of the workspace", prefix);
	}
	while ((e = readdir(d))) {
		char rel[PATH_MAX];
		struct stat st;

		if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN)
			continue;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		join(rel, prefix, e->d_name);
		if (w->check ? (o = sbx_deny_known(w->start, rel, &st)) && o->kind == DENY_PROTECT :
			       sbx_deny_covered(&w->found, rel) != NULL)
			continue;
		descend(w, dirfd, e->d_name, rel, comps, i, n);
	}
	closedir(d);
}

static void walk(struct deny_walk *w, int dirfd, const char *prefix, char **comps, int i, int n)
{
	const char *c = comps[i];
	struct stat st;

	if (is_dstar(c) && i == n - 1) {
		/* Only "**" alone: the workspace itself read-only. */
		if (!w->check) {
			if (fstatat(dirfd, ".", &st, 0) < 0)
				sbx_die_errno(SBX_EXIT_SYS, "unable to stat the workspace");
			sbx_deny_push(&w->found, DENY_PROTECT, ".", st.st_dev, st.st_ino);
		}
		return;
	}
	if (is_dstar(c)) {
		any_depth(w, dirfd, prefix, comps, i, n);
		return;
	}
	if (!is_glob(c)) {
		if (fstatat(dirfd, c, &st, AT_SYMLINK_NOFOLLOW) == 0)
			step(w, dirfd, prefix, c, comps, i, n);
		else if (errno != ENOENT && errno != ENOTDIR && !w->check)
			sbx_die_errno(SBX_EXIT_SYS, "unable to stat %s/%s in the workspace", prefix, c);
		return;
	}
	int rfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	struct dirent *e;

	if (rfd < 0 || !(d = fdopendir(rfd))) {
		if (w->check) {
			if (rfd >= 0)
				close(rfd);
			return;
		}
		sbx_die_errno(SBX_EXIT_SYS, "unable to read directory %s of the workspace", *prefix ? prefix : ".");
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fnmatch(c, e->d_name, 0) == 0)
			step(w, dirfd, prefix, e->d_name, comps, i, n);
	}
	closedir(d);
}

void sbx_deny_walk(struct deny_walk *w, int wsfd, const char *const *globs, size_t n)
{
	int git = sbx_deny_git_on(globs, n);

	sbx_deny_open_up(w, wsfd);
	for (size_t g = 0; g < n; g++) {
		char buf[PATH_MAX], *comps[MAX_COMPS], *save = NULL, *p;
		int nc = 0;
		snprintf(buf, sizeof buf, "%s", globs[g]);
		for (p = strtok_r(buf, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
			if (nc == MAX_COMPS)
				sbx_die_usage("--deny-write: invalid glob '%s': too deep", globs[g]);
			comps[nc++] = p;
		}
		walk(w, wsfd, "", comps, 0, nc);
	}
	if (git)
		sbx_deny_git_walk(w, wsfd);
}

void sbx_deny_candidate(struct deny_walk *w, const char *rel)
{
	if (w->ncand == w->capcand) {
		size_t cap = w->capcand ? w->capcand * 2 : 8;
		char **v = sbx_need(realloc(w->cand, cap * sizeof *v));
		w->cand = v;
		w->capcand = cap;
	}
	w->cand[w->ncand++] = sbx_need(strdup(rel));
}

void sbx_deny_failed(struct deny_walk *w, const char *rel, const char *why)
{
	size_t a = strlen(rel), b = strlen(why);
	char *e;

	if (w->nfail == w->capfail) {
		size_t cap = w->capfail ? w->capfail * 2 : 4;
		char **v = sbx_need(realloc(w->fail, cap * sizeof *v));
		w->fail = v;
		w->capfail = cap;
	}
	e = sbx_need(malloc(a + b + 2));
	memcpy(e, rel, a + 1);
	memcpy(e + a + 1, why, b + 1);
	w->fail[w->nfail++] = e;
}


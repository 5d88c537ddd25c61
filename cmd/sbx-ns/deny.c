/* Deny-write: paths of the workspace the command may read but never
 * change, given as globs relative to the workspace (default: .env, .env.*,
 * git's configuration and hooks, also of worktrees and submodules:
 * sbx_policy_default_deny; --deny-write replaces the defaults, as the spec's
 * denyWrite does).
 *
 * At the start the outer process finds the matches with the caller's
 * identity and the sandbox binds each one read-only onto itself; every
 * directory between the workspace and a match is bound onto itself, so it
 * cannot be renamed or removed (EBUSY) and what lies below stays protected.
 * Nothing is created in the workspace: a protected path that is missing
 * stays missing. If the command creates one, the same walk finds it again
 * at the end (denyinert.c), and it is moved aside before the run is
 * reported finished. The globs' walk reads only the directories they name
 * (and, for a "**" in the middle, the subtree it stands for); while the
 * list holds .git/config, git's rule (denygit.c) walks the whole tree
 * (denytree.c) for every git directory. */
#include "ns.h"

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

void ns_check_glob(const char *glob)
{
	const char *why = sbx_policy_glob_invalid(glob);

	if (why)
		sbx_die_usage("--deny-write: invalid glob '%s': %s", glob, why);
}

const char *const *ns_deny_globs(const struct ns_plan *p, size_t *n)
{
	const char *const *d = sbx_policy_default_deny;

	if (p->deny) {
		*n = p->ndeny;
		return p->deny;
	}
	for (*n = 0; d[*n]; (*n)++)
		;
	return d;
}

static int is_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

static int is_dstar(const char *c)
{
	return c[0] == '*' && c[1] == '*' && c[2] == '\0';
}

void ns_deny_push(struct deny_list *l, enum deny_kind kind, const char *rel, dev_t dev, ino_t ino)
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
const struct deny_op *ns_deny_covered(const struct deny_list *l, const char *rel)
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
const struct deny_op *ns_deny_known(const struct deny_list *l, const char *rel, const struct stat *st)
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
 * its mode put back afterwards (ns_deny_restore). */
void ns_deny_open_up(struct deny_walk *w, int fd)
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

void ns_deny_restore(struct deny_walk *w)
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
			ns_deny_candidate(w, rel);
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
	ns_deny_open_up(w, sub);
	w->depth++;
	walk(w, sub, rel, comps, i, n);
	w->depth--;
	close(sub);
}

/* A new directory where the glob ends in "**": everything in it is new.
 * Git's own *.sample files in a hooks directory are never run: left. */
void ns_deny_new_tree(struct deny_walk *w, int dirfd, const char *rel, int depth)
{
	int rfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	const char *base = strrchr(rel, '/');
	int hooks = !strcmp(base ? base + 1 : rel, "hooks");
	struct dirent *e;
	DIR *d;

	if (rfd < 0 || !(d = fdopendir(rfd))) {
		if (rfd >= 0)
			close(rfd);
		ns_deny_candidate(w, rel);
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
				ns_deny_new_tree(w, fd, sub, depth + 1);
				close(fd);
				continue;
			}
		}
		if (hooks && S_ISREG(st.st_mode) && len > 7 && !strcmp(e->d_name + len - 7, ".sample"))
			continue;
		ns_deny_candidate(w, sub);
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
		if (ns_deny_covered(&w->found, rel))
			return;
		if (S_ISLNK(st.st_mode))
			sbx_die(SBX_EXIT_POLICY, "unable to protect %s in the workspace: it is a symlink", rel);
		if (final) {
			if (S_ISREG(st.st_mode) && st.st_nlink > 1)
				sbx_die(SBX_EXIT_POLICY, "unable to protect %s in the workspace: it has %lu hard links",
					rel, (unsigned long)st.st_nlink);
			ns_deny_push(&w->found, DENY_PROTECT, rel, st.st_dev, st.st_ino);
			return;
		}
	} else {
		o = ns_deny_known(w->start, rel, &st);
		if (o && (o->kind == DENY_PROTECT || final))
			return;
		if (!o && final) {
			if (S_ISDIR(st.st_mode) && is_dstar(comps[n - 1])) {
				int fd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (fd >= 0) {
					ns_deny_new_tree(w, fd, rel, 0);
					close(fd);
					return;
				}
			}
			ns_deny_candidate(w, rel);
			return;
		}
		/* Where a directory leads to protected paths, a new symlink
		 * or file (a .git file naming another git directory) is one. */
		if (!o && !S_ISDIR(st.st_mode)) {
			ns_deny_candidate(w, rel);
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
		if (w->check ? (o = ns_deny_known(w->start, rel, &st)) && o->kind == DENY_PROTECT :
			       ns_deny_covered(&w->found, rel) != NULL)
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
			ns_deny_push(&w->found, DENY_PROTECT, ".", st.st_dev, st.st_ino);
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

void ns_deny_walk(struct deny_walk *w, int wsfd, const char *const *globs, size_t n)
{
	int git = ns_deny_git_on(globs, n);

	ns_deny_open_up(w, wsfd);
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
		ns_deny_git_walk(w, wsfd);
}

static int cmp_dop(const void *a, const void *b)
{
	const struct deny_op *x = a, *y = b;
	int c = strcmp(x->rel, y->rel);
	return c ? c : (int)x->kind - (int)y->kind;
}

int ns_workspace_fd(struct ns_plan *p)
{
	const struct mount_op *ws = &p->ops[p->ws];
	struct stat st;
	int fd;

	if (p->wsfd >= 0)
		return p->wsfd;
	fd = ws->fd >= 0 ? fcntl(ws->fd, F_DUPFD_CLOEXEC, 3) :
			   open(ws->src, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && (errno == ENOENT || errno == ENOTDIR || errno == ELOOP))
		sbx_die(SBX_EXIT_POLICY, "unable to open workspace %s: it was replaced (race)", ws->src);
	if (fd < 0 || fstat(fd, &st) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open workspace %s", ws->src);
	if (st.st_dev != ws->dev || st.st_ino != ws->ino)
		sbx_die(SBX_EXIT_POLICY, "unable to open workspace %s: it was replaced (race)", ws->src);
	p->wsfd = fd;
	return fd;
}

/* The start set: every match, then every directory leading to one. */
void ns_plan_deny(struct ns_plan *p, const struct deny_tree *prev)
{
	struct deny_walk w = { .check = 0, .ws_path = p->ops[p->ws].src, .tree_in = prev };
	size_t n, nprot;
	const char *const *globs = ns_deny_globs(p, &n);
	int wsfd = ns_workspace_fd(p);

	ns_deny_walk(&w, wsfd, globs, n);
	ns_deny_restore(&w);
	nprot = w.found.n;
	for (size_t i = 0; i < nprot; i++) {
		char anc[PATH_MAX], *s;
		snprintf(anc, sizeof anc, "%s", w.found.v[i].rel);
		for (s = strchr(anc, '/'); s; s = strchr(s + 1, '/')) {
			struct stat st;
			*s = '\0';
			if (fstatat(wsfd, anc, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
				sbx_die(SBX_EXIT_POLICY, "unable to protect %s in the workspace: it was replaced (race)", anc);
			ns_deny_push(&w.found, DENY_ANCESTOR, anc, st.st_dev, st.st_ino);
			*s = '/';
		}
	}
	qsort(w.found.v, w.found.n, sizeof *w.found.v, cmp_dop);
	p->dops = w.found.v;
	p->ndops = w.found.n;
	p->dtree = w.tree_out;
}

/* --tmp-in-workspace: /tmp and /dev/shm are directories of the workspace's
 * filesystem (so its project quota covers them): .sbx-tmp/tmp and
 * .sbx-tmp/shm, created on first use, kept between runs. */
static int scratch_dir(const struct ns_args *a, const struct ns_plan *p, int dirfd, const char *name,
		       const char *path, struct stat *st)
{
	/* --dry-run creates nothing: a missing directory is one to make. */
	if (a->dry_run) {
		if (dirfd < 0 || (fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT))
			return 1;
	} else if (mkdirat(dirfd, name, 0700) == 0) {
		if (p->root && fchownat(dirfd, name, p->uid, p->gid, AT_SYMLINK_NOFOLLOW) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to chown %s", path);
	} else if (errno != EEXIST) {
		sbx_die_errno(SBX_EXIT_SYS, "unable to create %s", path);
	}
	if (fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to stat %s", path);
	if (!S_ISDIR(st->st_mode))
		sbx_die(SBX_EXIT_POLICY, "unable to use %s for /tmp: not a directory", path);
	if (st->st_uid != p->uid)
		sbx_die(SBX_EXIT_POLICY, "unable to use %s for /tmp: owned by uid %u, not %u",
			path, (unsigned)st->st_uid, (unsigned)p->uid);
	return 0;
}

void ns_plan_scratch(const struct ns_args *a, struct ns_plan *p)
{
	static const char *const sub[] = { "tmp", "shm" };
	static const char *const dest[] = { "/tmp", "/dev/shm" };
	char path[PATH_MAX];
	struct stat st;
	int wsfd, base, made;

	if (!a->tmp_in_ws)
		return;
	wsfd = ns_workspace_fd(p);
	snprintf(path, sizeof path, "%s/.sbx-tmp", p->ops[p->ws].src);
	made = scratch_dir(a, p, wsfd, ".sbx-tmp", path, &st);
	base = made ? -1 : openat(wsfd, ".sbx-tmp", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (!made && base < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open %s", path);
	for (int i = 0; i < 2; i++) {
		struct mount_op *op;
		snprintf(path, sizeof path, "%s/.sbx-tmp/%s", p->ops[p->ws].src, sub[i]);
		int create = scratch_dir(a, p, base, sub[i], path, &st);
		op = ns_push_op(p);
		op->create = create;
		op->kind = MNT_SCRATCH;
		op->opt = "--tmp-in-workspace";
		op->src = sbx_need(strdup(path));
		op->dest = (char *)dest[i];
		op->dev = st.st_dev;
		op->ino = st.st_ino;
		op->isdir = 1;
	}
	if (base >= 0)
		close(base);
}

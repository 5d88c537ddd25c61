/* Names as the sandbox resolves them, looked up from outside it. The
 * outer (root in a recipe) must never follow, in its own view of the
 * host, a name the sandbox controls: a workspace symlink to /etc/shadow
 * would put that file's identity and digest in a plan, or its existence
 * in a hint. Three views, one question (the regular file a path leads to):
 *
 *   a living sandbox: pid 1's root, opened by the outer once the sandbox
 *     is up (/proc/PID/root), resolved by the kernel in the sandbox's own
 *     mount namespace: its /tmp, its overlay, its mounts; symlinks and
 *     ".." kept inside it (RESOLVE_IN_ROOT), never a magic link;
 *   a one-shot plan, when nothing exists yet: the root its steps will
 *     build (steps.c), walked one name at a time: a name is looked up in
 *     the step that will show it (a root's host directory, opened as pid 1
 *     will open it, then RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS below it; a
 *     directory or symlink of the sandbox's own; nothing in /proc,
 *     /dev/pts, a device or a fresh tmpfs), and each symlink is followed by
 *     hand, from the sandbox's root;
 *   the host outside the sandbox's roots (hint.c): the host's own names,
 *     the walk stopped at the first name inside any root, so that no hint
 *     reads through a name the sandbox can write.
 *
 * The one-shot view cannot show a change set's overlay (its files are not
 * the workspace's): a name inside a --changes workspace is EXDEV there. */
#include "ns.h"

#include "die.h"
#include "exec.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define VIEW_LINKS 40   /* as the kernel allows (ELOOP) */

enum view_kind {
	V_OWN = 1,  /* a directory of the sandbox's own: holds only mount points */
	V_NONE,     /* /proc, /dev/pts, a device, the resolver: never a program */
	V_HOST,     /* a host object (fd), shown at dest with what lies below */
	V_LINK,     /* a symlink of the sandbox's own (target) */
	V_OVERLAY,  /* the workspace under --changes: not known before the run */
	V_STOP,     /* the host view: a root of the sandbox, not looked into */
};

struct view_ent {
	const char *dest;
	enum view_kind kind;
	int fd;
	const char *target;
};

static void add(struct ns_view *v, const char *dest, enum view_kind kind, int fd, const char *target)
{
	struct view_ent *e;

	v->e = sbx_need(realloc(v->e, (v->n + 1) * sizeof *v->e));
	e = &v->e[v->n++];
	e->dest = dest;
	e->kind = kind;
	e->fd = fd;
	e->target = target;
}

/* A root's host object, opened as pid 1 opens it (root.c): from /, no
 * symlink on the way, the identity the plan checked. */
int ns_op_open(const struct mount_op *op, int *code)
{
	struct stat st;
	int fd = sbx_openat2(AT_FDCWD, op->src, O_PATH | O_CLOEXEC, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);

	if (fd < 0) {
		*code = errno == ELOOP || errno == ENOENT ? SBX_EXIT_POLICY : SBX_EXIT_SYS;
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		*code = SBX_EXIT_SYS;
		close(fd);
		return -1;
	}
	if (st.st_dev != op->dev || st.st_ino != op->ino) {
		*code = SBX_EXIT_POLICY;
		close(fd);
		errno = ESTALE;
		return -1;
	}
	return fd;
}

void ns_view_living(struct ns_view *v, int root)
{
	memset(v, 0, sizeof *v);
	v->root = root;
}

int ns_view_oneshot(const struct ns_plan *p, struct ns_view *v, char *why, size_t n)
{
	memset(v, 0, sizeof *v);
	v->root = -1;
	for (size_t i = 0; i < p->nsteps; i++) {
		const struct ns_step *s = &p->steps[i];
		const struct mount_op *op;
		int fd, code;

		switch (s->kind) {
		case STEP_ROOT:
		case STEP_DIR:
		case STEP_TMPFS:
		case STEP_HOME:
			add(v, s->dest, V_OWN, -1, NULL);
			break;
		case STEP_PROC:
		case STEP_DEVPTS:
		case STEP_DEVICE:
		case STEP_RESOLV:
			add(v, s->dest, V_NONE, -1, NULL);
			break;
		case STEP_LINK:
			add(v, s->dest, V_LINK, -1, s->src);
			break;
		case STEP_BIND:
			op = &p->ops[s->idx];
			if (op->kind == MNT_SYMLINK) {
				add(v, op->dest, V_LINK, -1, op->src);
			} else if (p->chg && s->idx == p->ws) {
				add(v, op->dest, V_OVERLAY, -1, NULL);
			} else if (op->create) {
				/* a scratch directory a dry run leaves to the run: empty */
				add(v, op->dest, V_OWN, -1, NULL);
			} else {
				if ((fd = ns_op_open(op, &code)) < 0) {
					snprintf(why, n, "unable to open %s to look up the program: %s", op->src,
						 errno == ESTALE ? "it was replaced (race)" : strerror(errno));
					ns_view_free(v);
					return code;
				}
				add(v, op->dest, V_HOST, fd, NULL);
			}
			break;
		case STEP_DENY:     /* the same object, bound onto itself */
		case STEP_READONLY:
			break;
		}
	}
	return 0;
}

int ns_view_host(const struct ns_plan *p, struct ns_view *v)
{
	int fd = sbx_openat2(AT_FDCWD, "/", O_PATH | O_DIRECTORY | O_CLOEXEC, 0);

	memset(v, 0, sizeof *v);
	v->root = -1;
	if (fd < 0)
		return -1;
	add(v, "/", V_HOST, fd, NULL);
	for (size_t i = 0; i < p->nops; i++)
		if (p->ops[i].kind != MNT_SYMLINK)
			add(v, p->ops[i].src, V_STOP, -1, NULL);
	return 0;
}

void ns_view_free(struct ns_view *v)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->e[i].fd >= 0)
			close(v->e[i].fd);
	free(v->e);
	v->e = NULL;
	v->n = 0;
}

/* dest is path or a directory path lies in (component-wise). */
static int covers(const char *dest, const char *path)
{
	size_t n = strlen(dest);

	if (!strcmp(dest, "/"))
		return 1;
	return !strncmp(dest, path, n) && (path[n] == '\0' || path[n] == '/');
}

/* What the sandbox will show at path (absolute, canonical: no symlink, no
 * "." or ".."): 0 with *fd on it (O_PATH; -1 for a directory of its own) or
 * with target filled for a symlink, else -errno. */
static int at(const struct ns_view *v, const char *path, int *fd, char *target, size_t cap, mode_t *type)
{
	const struct view_ent *best = NULL;
	const char *rel;
	struct stat st;
	ssize_t len;

	*fd = -1;
	/* The deepest step that shows path; of two at one place, the later. */
	for (size_t i = 0; i < v->n; i++)
		if (covers(v->e[i].dest, path) && (!best || strlen(v->e[i].dest) >= strlen(best->dest)))
			best = &v->e[i];
	if (!best)
		return -ENOENT;
	switch (best->kind) {
	case V_NONE:
		return -ENOENT;
	case V_OVERLAY:
		return -EXDEV;
	case V_STOP:
		return -EPERM;
	case V_LINK:
		if (strcmp(best->dest, path))
			return -ENOENT;
		if (snprintf(target, cap, "%s", best->target) >= (int)cap)
			return -ENAMETOOLONG;
		*type = S_IFLNK;
		return 0;
	case V_OWN:
		/* itself, or a directory made on the way to a later step */
		if (strcmp(best->dest, path)) {
			size_t n = strlen(path);
			for (size_t i = 0; i < v->n; i++)
				if (!strncmp(v->e[i].dest, path, n) && v->e[i].dest[n] == '/')
					goto dir;
			return -ENOENT;
		}
	dir:
		*type = S_IFDIR;
		return 0;
	case V_HOST:
		break;
	}
	rel = path + (strcmp(best->dest, "/") ? strlen(best->dest) : 0);
	while (*rel == '/')
		rel++;
	*fd = sbx_openat2(best->fd, *rel ? rel : ".", O_PATH | O_NOFOLLOW | O_CLOEXEC,
			  RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	if (*fd < 0)
		return errno == ELOOP || errno == EXDEV ? -ENOENT : -errno;  /* changed under the walk */
	if (fstat(*fd, &st) < 0) {
		int e = errno;
		close(*fd);
		*fd = -1;
		return -e;
	}
	*type = st.st_mode & S_IFMT;
	if (S_ISLNK(st.st_mode)) {
		len = readlinkat(*fd, "", target, cap);
		close(*fd);
		*fd = -1;
		if (len < 0)
			return -errno;
		if ((size_t)len >= cap)
			return -ENAMETOOLONG;
		target[len] = '\0';
	}
	return 0;
}

/* The walk of the one-shot and host views: path (absolute) one name at a
 * time from the root, each symlink's target put in front of what is left. */
static int walk(const struct ns_view *v, const char *path)
{
	char cur[PATH_MAX] = "", rest[2 * PATH_MAX], target[PATH_MAX], tmp[2 * PATH_MAX];
	size_t curlen = 0;
	int links = 0, fd = -1, rc;
	mode_t type = S_IFDIR;

	if (snprintf(rest, sizeof rest, "%s", path) >= (int)sizeof rest)
		return -ENAMETOOLONG;
	for (char *r = rest;;) {
		char *name, *end;
		size_t len;

		while (*r == '/')
			r++;
		if (!*r)
			break;
		name = r;
		end = name + strcspn(name, "/");
		len = (size_t)(end - name);
		r = *end ? end + 1 : end;
		if (!S_ISDIR(type)) {
			if (fd >= 0)
				close(fd);
			return -ENOTDIR;
		}
		if (len == 1 && name[0] == '.')
			continue;
		if (len == 2 && name[0] == '.' && name[1] == '.') {
			while (curlen && cur[--curlen] != '/')
				;
			cur[curlen] = '\0';
			continue;
		}
		if (curlen + 1 + len >= sizeof cur)
			return -ENAMETOOLONG;
		cur[curlen++] = '/';
		memcpy(cur + curlen, name, len);
		curlen += len;
		cur[curlen] = '\0';
		if (fd >= 0)
			close(fd);
		if ((rc = at(v, cur, &fd, target, sizeof target, &type)) < 0)
			return rc;
		if (!S_ISLNK(type))
			continue;
		if (++links > VIEW_LINKS)
			return -ELOOP;
		if (snprintf(tmp, sizeof tmp, "%s/%s", target, r) >= (int)sizeof tmp)
			return -ENAMETOOLONG;
		memcpy(rest, tmp, strlen(tmp) + 1);
		r = rest;
		if (target[0] == '/')
			curlen = 0;
		else
			while (curlen && cur[--curlen] != '/')
				;
		cur[curlen] = '\0';
		type = S_IFDIR;
	}
	if (fd < 0)
		return S_ISDIR(type) ? -EACCES : -ENOENT;
	return fd;
}

int ns_view_file(const struct ns_view *v, const char *path)
{
	struct stat st;
	int fd;

	if (path[0] != '/')
		return errno = EINVAL, -1;
	if (v->root >= 0) {
		while (*path == '/')
			path++;
		fd = sbx_openat2(v->root, *path ? path : ".", O_PATH | O_CLOEXEC,
				 RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
		if (fd < 0)
			return -1;
	} else if ((fd = walk(v, path)) < 0) {
		errno = -fd;
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return errno = e, -1;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return errno = EACCES, -1;
	}
	return fd;
}

int ns_view_exec(const struct ns_view *v, const char *path)
{
	char self[64];
	int fd = ns_view_file(v, path);

	if (fd < 0)
		return -1;
	snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
	if (access(self, X_OK) < 0) {
		close(fd);
		return errno = EACCES, -1;
	}
	return fd;
}

/* The search of sbx_exec_find in the view: the first regular file the
 * caller may execute. */
struct find_ctx {
	const struct ns_view *v;
	const char *cwd;
	int fd;
	int fatal;        /* EXDEV, EPERM: the view cannot say; the search stops */
	char full[PATH_MAX];
};

static int usable(const char *path, void *arg)
{
	struct find_ctx *c = arg;

	if (snprintf(c->full, sizeof c->full, "%s%s%s", path[0] == '/' ? "" : c->cwd,
		     path[0] == '/' || !strcmp(c->cwd, "/") ? "" : "/", path) >= (int)sizeof c->full)
		return errno = ENAMETOOLONG, -1;
	c->fd = ns_view_exec(c->v, c->full);
	if (c->fd < 0 && (errno == EXDEV || errno == EPERM)) {
		c->fatal = errno;
		return 0;
	}
	return c->fd < 0 ? -1 : 0;
}

int ns_view_find(const struct ns_view *v, const char *name, const char *search, const char *cwd, char *path,
		 size_t cap)
{
	struct find_ctx c = { .v = v, .cwd = cwd, .fd = -1 };
	char rel[PATH_MAX];

	if (sbx_exec_find_by(name, search, rel, sizeof rel, usable, &c) < 0)
		return -1;
	if (c.fatal)
		return errno = c.fatal, -1;
	if (c.fd < 0 && usable(rel, &c) < 0)   /* a name with '/': taken as it is */
		return -1;
	if (c.fatal) {
		if (c.fd >= 0)
			close(c.fd);
		return errno = c.fatal, -1;
	}
	if (snprintf(path, cap, "%s", c.full) >= (int)cap) {
		close(c.fd);
		return errno = ENAMETOOLONG, -1;
	}
	return c.fd;
}

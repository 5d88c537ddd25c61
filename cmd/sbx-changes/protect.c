/* Deny-write, judged by the one rule (lib/deny, sbx_deny_scan: the globs
 * and git's rule of sbx-ns) on two trees: the workspace as it is now, and
 * the workspace as it would be after apply. The second is the kernel's
 * own merge of the change set over the workspace: in a child that enters
 * a user and mount namespace (lib/probe.c's sbx_userns_enter; root a mount
 * namespace only), a read-only overlay with the change set's upper/ over
 * the workspace, mounted with sbx-ns --changes's options (userxattr), over
 * the workspace's own path so that a config's absolute paths mean what
 * they will mean; its protected paths come back over a pipe, NUL-separated.
 *
 * A change is refused ("deny-write") when its path, a path below it (a
 * directory replaced or deleted) or one of its parents is protected in
 * either tree: a planted bare repository, a config that includes a planted
 * file or names a hooks path, a hook, a .env. */
#include "changes.h"

#include "deny.h"
#include "die.h"
#include "exitcodes.h"
#include "probe.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

struct prot {
	char *rel;
	int after;        /* protected only in the workspace after apply */
};

static struct prot *pv;
static size_t pn;

static void add(const char *rel, int after)
{
	static size_t cap;

	if (pn == cap) {
		cap = cap ? 2 * cap : 64;
		pv = sbx_need(realloc(pv, cap * sizeof *pv));
	}
	pv[pn].rel = sbx_need(strdup(rel));
	pv[pn++].after = after;
}

static int cmp_prot(const void *a, const void *b)
{
	const struct prot *x = a, *y = b;
	int r = strcmp(x->rel, y->rel);

	return r ? r : x->after - y->after;
}

static void write_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to pass the protected paths of the workspace as "
				      "apply would leave it");
		s += w;
		n -= (size_t)w;
	}
}

/* The child: path opened again in its own mount namespace (a mount of
 * the parent's namespace cannot be a layer), proven the object of fd. */
static int again(const char *path, int fd)
{
	struct stat a, b;
	int n = sbx_openat2(AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC,
			    RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);

	if (n < 0 || fstat(n, &a) < 0 || fstat(fd, &b) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open %s in the scan's namespace", cs_q(path));
	if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		sbx_die(SBX_EXIT_POLICY, "%s was replaced while apply read it; to fix: run it again", cs_q(path));
	return n;
}

/* The child: the merged tree, scanned; its list on fd out. */
static void after_child(const struct cs *c, const char *const *globs, size_t n, int out)
{
	char data[128], target[64];
	struct deny_list l;
	struct statfs sf;
	int step, e, fd, up, ws;

	/* root needs no user namespace, and one that maps only 0 would keep it
	 * out of another user's change set, which root may apply */
	if (getuid() == 0)
		e = unshare(CLONE_NEWNS) < 0 ? errno : 0;
	else
		e = sbx_userns_enter(&step);
	if (e) {
		errno = e;
		sbx_die_errno(SBX_EXIT_NOISOLATION, "unable to create a user and mount namespace to read "
			      "workspace %s as apply would leave it; to fix: allow user namespaces "
			      "(Linux 5.11 or later)", cs_q(c->ws));
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to make the mounts of the scan's namespace private");
	up = again(sbx_needf("%s/upper", c->dir), c->upfd);
	ws = again(c->ws, c->wsfd);
	snprintf(data, sizeof data, "lowerdir=/proc/self/fd/%d:/proc/self/fd/%d,userxattr", up, ws);
	snprintf(target, sizeof target, "/proc/self/fd/%d", ws);
	if (mount("overlay", target, "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, data) < 0)
		sbx_die_errno(errno == EPERM || errno == ENODEV ? SBX_EXIT_NOISOLATION : SBX_EXIT_SYS,
			      "unable to mount change set %s over workspace %s as an overlay to read it as apply "
			      "would leave it; to fix: use Linux 5.11 or later with overlayfs",
			      cs_q(c->dir), cs_q2(c->ws));
	fd = sbx_openat2(AT_FDCWD, c->ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC,
			 RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	if (fd < 0 || fstatfs(fd, &sf) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open the overlay of change set %s", cs_q(c->dir));
	if (sf.f_type != OVERLAYFS_SUPER_MAGIC)
		sbx_die(SBX_EXIT_POLICY, "workspace %s is not the overlay just mounted over it (replaced "
			"while apply read it); to fix: run it again", cs_q(c->ws));
	sbx_deny_scan(fd, c->ws, globs, n, &l);
	for (size_t i = 0; i < l.n; i++)
		write_all(out, l.v[i].rel, strlen(l.v[i].rel) + 1);
	_exit(0);
}

static void scan_after(const struct cs *c, const char *const *globs, size_t n)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int p[2], st;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create a pipe");
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to fork");
	if (pid == 0) {
		close(p[0]);
		after_child(c, globs, n, p[1]);
	}
	close(p[1]);
	for (;;) {
		ssize_t r;
		if (len + 4096 > cap)
			buf = sbx_need(realloc(buf, cap = 2 * cap + 65536));
		r = read(p[0], buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to read the protected paths of the workspace as apply "
				      "would leave it");
		if (!r)
			break;
		len += (size_t)r;
	}
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			sbx_die_errno(SBX_EXIT_SYS, "unable to wait for the scan of the workspace as apply would "
				      "leave it");
	/* the child said why on stderr; its code is the outcome */
	if (WIFEXITED(st) && WEXITSTATUS(st))
		exit(WEXITSTATUS(st));
	if (!WIFEXITED(st))
		sbx_die(SBX_EXIT_SYS, "unable to scan the workspace as apply would leave it: killed by signal %d",
			WTERMSIG(st));
	if (len && buf[len - 1])
		sbx_die(SBX_EXIT_SYS, "unable to scan the workspace as apply would leave it: a cut list");
	for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
		add(buf + i, 1);
	free(buf);
}

void cs_protect_scan(struct cs *c)
{
	size_t n = c->nglobs;
	const char *const *globs = n ? (const char *const *)c->globs : sbx_deny_default_globs(&n);
	struct deny_list l;

	sbx_deny_scan(c->wsfd, c->ws, globs, n, &l);
	for (size_t i = 0; i < l.n; i++)
		add(l.v[i].rel, 0);
	sbx_deny_list_free(&l);
	scan_after(c, globs, n);
	if (pn)
		qsort(pv, pn, sizeof *pv, cmp_prot);
}

/* The first entry not less than key. */
static size_t lower(const char *key, size_t klen)
{
	size_t lo = 0, hi = pn;

	while (lo < hi) {
		size_t m = (lo + hi) / 2;
		int r = strncmp(pv[m].rel, key, klen);
		if (!r && strlen(pv[m].rel) > klen)
			r = 1;
		if (r < 0)
			lo = m + 1;
		else
			hi = m;
	}
	return lo;
}

static const struct prot *exact(const char *p, size_t len)
{
	size_t i = lower(p, len);

	return i < pn && strlen(pv[i].rel) == len && !strncmp(pv[i].rel, p, len) ? &pv[i] : NULL;
}

/* The protected path that forbids changing path (itself, a parent, or
 * one below it), or NULL; *after: protected only after apply. */
const char *cs_protected(const char *path, int *after)
{
	const struct prot *hit = NULL;
	size_t len = strlen(path);

	if (!pn)
		return NULL;
	hit = exact(".", 1);
	/* its parents, then itself */
	for (size_t i = 0; !hit && i <= len; i++)
		if (path[i] == '/' || !path[i])
			hit = exact(path, i);
	/* below it: the first entry after "path/" */
	if (!hit) {
		char *key = sbx_needf("%s/", path);
		size_t i = lower(key, len + 1);
		if (i < pn && !strncmp(pv[i].rel, key, len + 1))
			hit = &pv[i];
		free(key);
	}
	if (!hit)
		return NULL;
	*after = hit->after;
	return hit->rel;
}

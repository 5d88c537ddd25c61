/* Deny-write's renames, reported. A protected path and every directory
 * above it are bound onto themselves (deny.c), so the kernel refuses a
 * rename of one or onto one with EBUSY: git's "could not write config file
 * .git/config: Device or resource busy" is its lock file renamed onto the
 * protected config. The kernel's answer says nothing of deny-write, so the
 * supervisor names it.
 *
 * The filter returns a marker for rename, renameat and renameat2 (gen/
 * rules.c), which the command's process turns into SECCOMP_RET_USER_NOTIF
 * when it hands a listener over and the run protects something, else into
 * SECCOMP_RET_ALLOW (notify.c). Each such call comes here: its two paths
 * are read from the caller's memory; only when a last name is a protected
 * path's are they looked up, in the caller's own root (its symlinks
 * followed there, never in the host's), from its working directory or
 * directory fd; and the call goes on with SECCOMP_USER_NOTIF_FLAG_CONTINUE,
 * whatever was found: the kernel decides, this only reports. When the source exists and either side is one of the
 * start set's objects (by device and inode), one warning says which path,
 * what the command tried and that it sees EBUSY, with a "deny-write" status
 * line; further attempts on the same path are counted, and the total not
 * yet reported goes out at the end, bounded like the denial lines (at most
 * 64 paths, one line each per second at most). Nothing read here is
 * trusted: a name that changes under us only changes a report. */
#include "ns.h"
#include "clock.h"

#include "die.h"
#include "json.h"
#include "quote.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#define REN_PATHS 64

enum ren_op { REN_ONTO, REN_OF, REN_EXCHANGE };

struct ren_ent {
	size_t idx;         /* in the start set */
	enum ren_op op;
	uint64_t count, reported, last_ms;
	char *other;        /* the other name, as the first call gave it */
};

struct ns_rename_log {
	struct ren_ent ent[REN_PATHS];
	size_t n;
};

int ns_rename_watched(int nr)
{
	return nr == SYS_rename || nr == SYS_renameat || nr == SYS_renameat2;
}

/* A NUL-terminated string at addr in pid's memory, page by page (a read
 * across an unmapped page fails as a whole). 0, or -1. */
int ns_call_read_str(pid_t pid, uint64_t addr, char *buf, size_t sz)
{
	size_t got = 0;

	while (got < sz - 1) {
		size_t page = 4096 - ((addr + got) & 4095), want = page < sz - 1 - got ? page : sz - 1 - got;
		struct iovec l = { buf + got, want }, rm = { (void *)(uintptr_t)(addr + got), want };
		ssize_t n = process_vm_readv(pid, &l, 1, &rm, 1, 0);

		if (n <= 0)
			return -1;
		if (memchr(buf + got, '\0', (size_t)n))
			return 0;
		got += (size_t)n;
	}
	return -1;
}

/* An O_PATH fd on path (from dirfd, in the caller's view: struct
 * ns_call_view, the caller's root and the name of the directory its
 * relative names start from, as the kernel gives it in that root, read
 * once per call): the name itself (NS_LOOK_NAME), the directory it lies in
 * (NS_LOOK_PARENT: "a/b/" lies in "a") or what it names, a last symlink
 * followed (NS_LOOK_FOLLOW, as exec does); -1 if there is none. Looked up
 * from the caller's root as the caller would: symlinks and ".." kept
 * inside that root (RESOLVE_IN_ROOT), never a magic link, mounts crossed
 * as the caller sees them. */
int ns_call_lookup(struct ns_call_view *v, int dirfd, const char *path, int how)
{
	int parent = how == NS_LOOK_PARENT;
	char full[2 * PATH_MAX], *slash;
	size_t n = 0;

	if (v->root < 0)
		return -1;
	if (path[0] != '/') {
		if (!v->dir[0] || v->dirfd != dirfd) {
			char link[64];
			ssize_t got;
			if (dirfd == AT_FDCWD)
				snprintf(link, sizeof link, "/proc/%d/cwd", (int)v->pid);
			else
				snprintf(link, sizeof link, "/proc/%d/fd/%d", (int)v->pid, dirfd);
			got = readlink(link, v->dir, sizeof v->dir - 1);
			v->dir[got > 0 ? got : 0] = '\0';
			v->dirfd = dirfd;
		}
		if (v->dir[0] != '/')
			return -1;
		n = (size_t)snprintf(full, sizeof full, "%s/", v->dir);
	}
	snprintf(full + n, sizeof full - n, "%s", path);
	if (parent) {
		for (n = strlen(full); n > 1 && full[n - 1] == '/'; )
			full[--n] = '\0';
		slash = strrchr(full, '/');
		slash[1] = '\0';
	}
	return sbx_openat2(v->root, full, O_PATH | O_CLOEXEC | (parent ? O_DIRECTORY : how == NS_LOOK_NAME ?
								O_NOFOLLOW : 0),
			   RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
}

/* Whether the last name of path is the last name of an entry of the start
 * set: a protected path is reached only by its own name (a second hard
 * link is refused, a symlink as the last name is renamed itself), so any
 * other rename is let go without a look. */
static int maybe(const struct ns_plan *p, const char *path)
{
	size_t n = strlen(path), k;
	const char *last;

	while (n > 1 && path[n - 1] == '/')
		n--;
	for (k = n; k && path[k - 1] != '/'; k--)
		;
	last = path + k;
	n -= k;
	for (size_t i = 0; i < p->ndops; i++) {
		const char *rel = p->dops[i].rel, *s = strrchr(rel, '/');
		s = s ? s + 1 : rel;
		if (strlen(s) == n && !memcmp(s, last, n))
			return 1;
	}
	return 0;
}

/* The start set's entry that path names, or -1; *exists tells whether it
 * names anything. */
static long protected_at(const struct ns_plan *p, struct ns_call_view *v, int dirfd, const char *path, int *exists)
{
	struct stat st;
	int fd, rc;

	*exists = 0;
	if (!*path || (fd = ns_call_lookup(v, dirfd, path, NS_LOOK_NAME)) < 0)
		return -1;
	rc = fstat(fd, &st);
	close(fd);
	if (rc < 0)
		return -1;
	*exists = 1;
	for (size_t i = 0; i < p->ndops; i++)
		if (p->dops[i].dev == st.st_dev && p->dops[i].ino == st.st_ino)
			return (long)i;
	return -1;
}

/* The mount of the directory path lies in (its fdinfo's mnt_id), or -1: a
 * rename between two mounts fails with EXDEV before any mount point is
 * looked at. */
static long dir_mount(struct ns_call_view *v, int dirfd, const char *path)
{
	char f[64], line[128];
	long id = -1;
	FILE *in;
	int d = ns_call_lookup(v, dirfd, path, NS_LOOK_PARENT);

	if (d < 0)
		return -1;
	snprintf(f, sizeof f, "/proc/self/fdinfo/%d", d);
	if ((in = fopen(f, "re"))) {
		while (fgets(line, sizeof line, in))
			if (sscanf(line, "mnt_id: %ld", &id) == 1)
				break;
		fclose(in);
	}
	close(d);
	return id;
}

static void report(const struct ns_run *r, struct ren_ent *e, uint64_t now, int final)
{
	static const char *const what[] = { "rename onto", "rename of", "exchange of" };
	static const char *const art[] = { "a", "a", "an" };
	static const char *const other[] = { "from", "to", "with" };
	const struct deny_op *d = &r->p->dops[e->idx];
	char q[PATH_MAX + 16], qo[PATH_MAX + 16];
	struct sbx_json j;
	int to_status = ns_status_due(r, final, e->count, &e->reported, &e->last_ms, now);

	if (!final && e->count == 1) {
		sbx_quote(q, sizeof q, d->rel, strlen(d->rel), PATH_MAX, 0);
		sbx_quote(qo, sizeof qo, e->other, strlen(e->other), PATH_MAX, 0);
		sbx_warn("deny-write: refused %s %s %s %s (%s %s)%s; the command sees EBUSY", art[e->op], what[e->op],
			 d->kind == DENY_PROTECT ? "the protected path" : "the directory", q, other[e->op], qo,
			 d->kind == DENY_PROTECT ? "" : ", which holds protected paths");
	}
	if (!to_status)
		return;
	sbx_json_begin(&j, NS_PROG, "deny-write");
	sbx_json_str(&j, "path", d->rel);
	sbx_json_str(&j, "action", "refused");
	sbx_json_str(&j, "operation", what[e->op]);
	sbx_json_str(&j, other[e->op], e->other);
	sbx_json_bool(&j, "protected", d->kind == DENY_PROTECT);
	sbx_json_uint(&j, "count", e->count);
	sbx_json_write(&j, r->a->status_fd);
}

static void seen(const struct ns_run *r, struct ns_rename_log *log, size_t idx, enum ren_op op,
		 const char *other)
{
	struct ren_ent *e = NULL;
	uint64_t now = sbx_now_ms();

	for (size_t i = 0; i < log->n; i++)
		if (log->ent[i].idx == idx && log->ent[i].op == op)
			e = &log->ent[i];
	if (!e) {
		if (log->n == REN_PATHS)
			return;
		e = &log->ent[log->n++];
		e->idx = idx;
		e->op = op;
		e->other = sbx_need(strdup(other));
	}
	e->count++;
	if (e->count == 1 || now - e->last_ms >= 1000)
		report(r, e, now, 0);
}

void ns_rename_seen(const struct ns_run *r, struct ns_rename_log **logp, int fd,
		    const struct seccomp_notif *req)
{
	struct seccomp_notif_resp resp = { .id = req->id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE };
	const __u64 *a = req->data.args;
	int plain = req->data.nr == SYS_rename, ex = 0, oldfd, newfd, old_ex, new_ex;
	uint64_t oldp = plain ? a[0] : a[1], newp = plain ? a[1] : a[3];
	char from[PATH_MAX], to[PATH_MAX], link[64];
	struct ns_call_view v = { .pid = (pid_t)req->pid, .root = -1 };
	long po, pn, mo;

	oldfd = plain ? AT_FDCWD : (int)a[0];
	newfd = plain ? AT_FDCWD : (int)a[2];
	if (req->data.nr == SYS_renameat2)
		ex = (a[4] & RENAME_EXCHANGE) != 0;
	if (ns_call_read_str(v.pid, oldp, from, sizeof from) < 0 || ns_call_read_str(v.pid, newp, to, sizeof to) < 0 ||
	    ioctl(fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0) {
		ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
		return;
	}
	if (!maybe(r->p, from) && !maybe(r->p, to)) {
		ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
		return;
	}
	snprintf(link, sizeof link, "/proc/%d/root", (int)v.pid);
	v.root = open(link, O_PATH | O_DIRECTORY | O_CLOEXEC);
	po = protected_at(r->p, &v, oldfd, from, &old_ex);
	pn = protected_at(r->p, &v, newfd, to, &new_ex);
	/* Reported before the call goes on, so the line comes before the
	 * command's own error. The source must exist (else ENOENT comes
	 * first), and for an exchange the target too; both must lie on one
	 * mount (else EXDEV comes first). */
	if (old_ex && (!ex || new_ex) && (po >= 0 || pn >= 0) &&
	    (mo = dir_mount(&v, oldfd, from)) >= 0 && mo == dir_mount(&v, newfd, to)) {
		if (!*logp)
			*logp = sbx_need(calloc(1, sizeof **logp));
		if (pn >= 0)
			seen(r, *logp, (size_t)pn, ex ? REN_EXCHANGE : REN_ONTO, from);
		else
			seen(r, *logp, (size_t)po, ex ? REN_EXCHANGE : REN_OF, to);
	}
	if (v.root >= 0)
		close(v.root);
	/* ENOENT here when the caller is gone: nothing to answer. */
	ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

void ns_rename_end(const struct ns_run *r, struct ns_rename_log *log)
{
	if (!log)
		return;
	for (size_t i = 0; i < log->n; i++) {
		if (log->ent[i].count > log->ent[i].reported)
			report(r, &log->ent[i], sbx_now_ms(), 1);
		free(log->ent[i].other);
	}
	free(log);
}

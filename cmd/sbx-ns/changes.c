/* --changes DIR: the workspace shown as an overlay whose upper layer is
 * DIR/upper, so the command's writes land in a change set and the real
 * workspace (the lower layer) is never written.
 *
 * The outer checks DIR by fd before anything is created (absolute, no
 * symlink on its path, a directory of the caller's, not group- or
 * other-writable, on the workspace's filesystem, neither inside the
 * workspace nor holding it, empty or a change set of this workspace),
 * makes the layout (changeset, upper/, work/, lock) and holds DIR/lock
 * with flock(LOCK_EX) for the sandbox's whole life. pid 1 mounts the
 * overlay by those very fds (/proc/self/fd/N). When the run ends, the
 * outer appends to DIR/base.jsonl the workspace's state of every path of
 * upper/ that has no line yet. */
#include "ns.h"

#include "die.h"
#include "exitcodes.h"
#include "fd.h"
#include "json.h"
#include "parse.h"
#include "probe.h"
#include "quota.h"
#include "sys.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RES (RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

/* --changes's value, before it names anything: one line for what is
 * malformed. */
const char *ns_changes_opt(const char *arg)
{
	return sbx_opt_canon_dir("--changes", arg);
}

static noreturn void refuse(const char *dir, const char *why)
{
	sbx_die(SBX_EXIT_POLICY, "--changes: refusing %s: %s", dir, why);
}

/* Overlayfs mounts in a user namespace came with Linux 5.11. */
static int kernel_has_userns_overlay(char *rel, size_t sz)
{
	unsigned maj = 0, min = 0;

	if (sbx_probe_kernel(&maj, &min, rel, sz))
		return 1; /* unknown: the mount itself says */
	return maj > 5 || (maj == 5 && min >= 11);
}

/* The identity line of DIR/changeset for this workspace. */
static char *identity(const struct mount_op *ws, size_t *len)
{
	struct sbx_json j;
	const char *s;

	sbx_json_begin(&j, NULL, NULL);
	sbx_json_int(&j, "version", 1);
	sbx_json_str(&j, "workspace", ws->src);
	sbx_json_uint(&j, "dev", (uint64_t)ws->dev);
	sbx_json_uint(&j, "ino", (uint64_t)ws->ino);
	s = sbx_json_end(&j, len);
	return sbx_need(s ? strndup(s, *len) : NULL);
}

/* Whether the directory at fd has any entry. */
static int is_empty(int fd)
{
	int d = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dp;
	struct dirent *e;
	int empty = 1;

	if (d < 0 || !(dp = fdopendir(d)))
		sbx_die_errno(SBX_EXIT_SYS, "--changes: unable to read the change set");
	while ((e = readdir(dp)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			empty = 0;
	closedir(dp);
	return empty;
}

/* The workspace's project quota holds the change set: DIR, upper/ and
 * work/ carry the workspace's project id with PROJINHERIT, so that what
 * the overlay creates in them (new files, copy-ups, whiteouts) is charged
 * to the project; otherwise the command's writes would escape the quota.
 * A workspace without a project id has no quota to escape. name: NULL for
 * DIR itself, else the entry of DIR that fd is. */
static void same_quota(struct ns_plan *p, const char *dir, int fd, const char *name)
{
	const char *ws = p->ops[p->ws].src;
	char *what = name ? sbx_needf("%s/%s", dir, name) : sbx_need(strdup(dir));
	int w = openat(ns_workspace_fd(p), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int d = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	uint32_t want, got;
	int inherit, r = -1;

	if (w < 0)
		sbx_die_errno(SBX_EXIT_SYS, "--changes: unable to open workspace %s", ws);
	if (d < 0 || (r = sbx_quota_follows(w, d, &want, &got, &inherit)) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "--changes: unable to read the project id of %s", what);
	if (r)
		refuse(dir, sbx_needf("outside the workspace's project quota: %s has project id %u%s, the "
				      "workspace %s project %u with PROJINHERIT (as root: sbx-quota prepare "
				      "--workspace %s --project %u --disk SIZE --changes %s)", what, got,
				      inherit ? "" : " without PROJINHERIT", ws, want, ws, want, dir));
	close(w);
	close(d);
	free(what);
}

/* DIR/upper and DIR/work, made on first use. upper/ is the overlay's
 * root: it gets the workspace's owner and permissions. */
static int sub(int dfd, const char *dir, const char *name, const struct stat *like)
{
	struct stat st;
	int fd, made = mkdirat(dfd, name, 0700) == 0;

	if (!made && errno != EEXIST)
		sbx_die_errno(SBX_EXIT_SYS, "--changes: unable to create %s/%s", dir, name);
	if (made && like) {
		int d = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (d < 0 || (getuid() == 0 && fchown(d, like->st_uid, like->st_gid) < 0) ||
		    fchmod(d, like->st_mode & 0777) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "--changes: unable to set up %s/%s", dir, name);
		close(d);
	}
	fd = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && (errno == ENOTDIR || errno == ELOOP || errno == ENOENT))
		refuse(dir, sbx_needf("%s is not a directory (a damaged change set: discard it)", name));
	if (fd < 0 || fstat(fd, &st) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "--changes: unable to open %s/%s", dir, name);
	return fd;
}

/* Every requirement on DIR, then the layout and the lock (not with
 * --dry-run: it creates nothing). */
void ns_changes_check(const struct ns_args *a, struct ns_plan *p)
{
	const struct mount_op *ws = &p->ops[p->ws];
	const char *dir = a->changes;
	char rel[65], *line, buf[PATH_MAX * 2];
	struct stat st, st_dir;
	size_t len;
	ssize_t n;
	int fd, f;

	if (!dir)
		return;
	if (a->tmp_in_ws)
		sbx_die_usage("--changes and --tmp-in-workspace are exclusive (the scratch directories would be written in the real workspace)");
	for (size_t i = 0; i < p->nops; i++)
		if (i != p->ws && !p->ops[i].ro && p->ops[i].kind != MNT_SYMLINK &&
		    (sbx_path_within(p->ops[i].src, ws->src) || sbx_path_within(ws->src, p->ops[i].src)))
			sbx_die_usage("--changes: %s %s is writable in the workspace, past the change set",
				      p->ops[i].opt, p->ops[i].src);
	if (!kernel_has_userns_overlay(rel, sizeof rel))
		sbx_die(SBX_EXIT_NOISOLATION, "--changes: unable to use a change set: kernel %s has no "
			"overlayfs in user namespaces (Linux 5.11 or later)", rel);
	fd = sbx_openat2(AT_FDCWD, dir, O_PATH | O_DIRECTORY | O_CLOEXEC, RES);
	if (fd < 0 && errno == ELOOP)
		refuse(dir, "a symlink on its path (name the real directory)");
	if (fd < 0 && errno == ENOTDIR)
		refuse(dir, "not a directory");
	if (fd < 0 && errno == ENOENT)
		refuse(dir, "it does not exist (create it empty, mode 0700)");
	if (fd < 0 || fstat(fd, &st) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "--changes: unable to open %s", dir);
	if (st.st_uid != p->caller_uid && !(p->root && st.st_uid == p->uid))
		refuse(dir, sbx_needf("owned by uid %u, not by the caller (chown it, or use a directory of your own)",
				      (unsigned)st.st_uid));
	if (st.st_mode & 022)
		refuse(dir, "group- or other-writable (chmod go-w it)");
	if (st.st_dev != ws->dev)
		refuse(dir, "on another filesystem than the workspace (make it on the workspace's filesystem)");
	if ((st.st_dev == ws->dev && st.st_ino == ws->ino) || sbx_path_within(dir, ws->src) ||
	    sbx_fd_below(fd, ws->dev, ws->ino))
		refuse(dir, sbx_needf("inside the workspace %s (make it beside the workspace)", ws->src));
	if (sbx_path_within(ws->src, dir))
		refuse(dir, sbx_needf("it holds the workspace %s (make it beside the workspace)", ws->src));
	{
		int wfd = ws->fd >= 0 ? fcntl(ws->fd, F_DUPFD_CLOEXEC, 3) :
			  sbx_openat2(AT_FDCWD, ws->src, O_PATH | O_DIRECTORY | O_CLOEXEC, RES);
		struct stat d;
		if (wfd >= 0 && fstat(fd, &d) == 0 && sbx_fd_below(wfd, d.st_dev, d.st_ino))
			refuse(dir, sbx_needf("it holds the workspace %s (make it beside the workspace)", ws->src));
		if (wfd >= 0)
			close(wfd);
	}
	same_quota(p, dir, fd, NULL);

	line = identity(ws, &len);
	f = openat(fd, "changeset", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (f < 0 && errno == ELOOP)
		refuse(dir, "its changeset is a symlink (a damaged change set: discard it)");
	if (f < 0 && errno != ENOENT)
		sbx_die_errno(SBX_EXIT_SYS, "--changes: unable to read %s/changeset", dir);
	if (f < 0) {
		if (!is_empty(fd))
			refuse(dir, "neither empty nor a change set (name an empty directory)");
	} else {
		n = read(f, buf, sizeof buf);
		close(f);
		if (n != (ssize_t)len || memcmp(buf, line, len))
			refuse(dir, sbx_needf("a change set of another workspace, not of %s (use another directory)",
					      ws->src));
	}
	p->chg_dev = st.st_dev;
	p->chg_ino = st.st_ino;
	st_dir = st;
	p->chg_start = (int64_t)time(NULL);
	{
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		p->chg_start = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	}
	if (a->dry_run) {
		close(fd);
		return;
	}
	/* O_PATH allows no *at() writes: the directory itself, proven the same. */
	{
		char self[64];
		struct stat s2;
		int rfd;

		snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
		rfd = open(self, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (rfd < 0 || fstat(rfd, &s2) < 0 || s2.st_dev != st.st_dev || s2.st_ino != st.st_ino)
			sbx_die_errno(SBX_EXIT_SYS, "--changes: unable to open %s", dir);
		close(fd);
		fd = rfd;
	}
	p->chg_lock = openat(fd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (p->chg_lock < 0 && errno == ELOOP)
		refuse(dir, "its lock is a symlink (a damaged change set: discard it)");
	if (p->chg_lock < 0)
		sbx_die_errno(SBX_EXIT_SYS, "--changes: unable to open %s/lock", dir);
	if (flock(p->chg_lock, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			refuse(dir, "it is in use by a running sandbox (wait for it to end, or use another directory)");
		sbx_die_errno(SBX_EXIT_SYS, "--changes: unable to lock %s/lock", dir);
	}
	if (fstat(p->chg_lock, &st) < 0 || !S_ISREG(st.st_mode))
		refuse(dir, "its lock is not a regular file (a damaged change set: discard it)");
	f = openat(fd, "changeset", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (f >= 0) {
		if (write(f, line, len) != (ssize_t)len || close(f) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "--changes: unable to write %s/changeset", dir);
	} else if (errno != EEXIST) {
		sbx_die_errno(SBX_EXIT_SYS, "--changes: unable to write %s/changeset", dir);
	}
	free(line);
	{
		struct stat w;
		if (fstat(p->wsfd >= 0 ? p->wsfd : ns_workspace_fd(p), &w) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "--changes: unable to stat the workspace %s", ws->src);
		p->chg_upper = sub(fd, dir, "upper", &w);
	}
	p->chg_work = sub(fd, dir, "work", NULL);
	same_quota(p, dir, p->chg_upper, "upper");
	same_quota(p, dir, p->chg_work, "work");
	/* root's run: what it made belongs to DIR's owner, as DIR does */
	if (p->root)
		for (const char *const *nm = (const char *const[]){ "changeset", "lock", "work", NULL }; *nm; nm++)
			if (fchownat(fd, *nm, st_dir.st_uid, st_dir.st_gid, AT_SYMLINK_NOFOLLOW) < 0)
				sbx_die_errno(SBX_EXIT_SYS, "--changes: unable to chown %s/%s", dir, *nm);
	p->chg_fd = fd;
}

/* pid 1: a layer opened again in its own mount namespace (a mount of
 * the caller's namespace cannot be a layer), proven the one checked. */
static int layer(const struct ns_plan *p, int checked, const char *name)
{
	char *path = sbx_needf("%s/%s", p->chg, name);
	struct stat a, b;
	int fd = sbx_openat2(AT_FDCWD, path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, RES);

	if (fd < 0 && (errno == ELOOP || errno == ENOENT || errno == ENOTDIR))
		sbx_die(SBX_EXIT_POLICY, "--changes: unable to mount %s: it was replaced (race)", path);
	if (fd < 0 || fstat(fd, &a) < 0 || fstat(checked, &b) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "--changes: unable to open %s", path);
	if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		sbx_die(SBX_EXIT_POLICY, "--changes: unable to mount %s: it was replaced (race)", path);
	free(path);
	return fd;
}

/* pid 1: the overlay at the workspace's mount point (rel from the new
 * root), its layers the checked objects by their fds. */
void ns_changes_mount(const struct ns_plan *p, int lower, const char *rel)
{
	int up = layer(p, p->chg_upper, "upper"), work = layer(p, p->chg_work, "work");
	char data[256];

	snprintf(data, sizeof data, "lowerdir=/proc/self/fd/%d,upperdir=/proc/self/fd/%d,"
		 "workdir=/proc/self/fd/%d,userxattr", lower, up, work);
	if (mount("overlay", rel, "overlay", MS_NOSUID | MS_NODEV, data) < 0) {
		if (errno == EPERM || errno == ENODEV)
			sbx_die_errno(SBX_EXIT_NOISOLATION, "--changes: unable to mount the change set %s as an "
				      "overlay (overlayfs in a user namespace needs Linux 5.11 or later)", p->chg);
		sbx_die_errno(SBX_EXIT_SYS, "--changes: unable to mount the change set %s as an overlay", p->chg);
	}
	close(up);
	close(work);
}

/* base.jsonl: the paths that have a line already (their escaped form). */
struct seen {
	char **v;
	size_t n, cap;
};

static int seen_has(const struct seen *s, const char *key)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i], key))
			return 1;
	return 0;
}

static void seen_add(struct seen *s, char *key)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->v = sbx_need(realloc(s->v, s->cap * sizeof *s->v));
	}
	s->v[s->n++] = key;
}

/* The escaped "path" value of a line: between {"path": and ,"type". */
static char *path_key(const char *line, size_t len)
{
	static const char head[] = "{\"path\":";
	const char *end;

	if (len < sizeof head || memcmp(line, head, sizeof head - 1))
		return NULL;
	end = strstr(line, ",\"type\":");
	return end ? strndup(line + sizeof head - 1, (size_t)(end - line) - (sizeof head - 1)) : NULL;
}

static void load_seen(int fd, struct seen *s)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	ssize_t n;

	for (;;) {
		if (len + 65536 > cap)
			buf = sbx_need(realloc(buf, cap = cap * 2 + 65536));
		n = read(fd, buf + len, cap - len - 1);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	for (char *l = buf, *nl; l && l < buf + len; l = nl + 1) {
		char *k;
		nl = memchr(l, '\n', (size_t)(buf + len - l));
		if (!nl)
			break;     /* no whole line: never written by one write(2) */
		if ((k = path_key(l, (size_t)(nl - l))))
			seen_add(s, k);
	}
	free(buf);
}

static const char *type_of(mode_t m)
{
	return S_ISREG(m) ? "file" : S_ISDIR(m) ? "dir" : S_ISLNK(m) ? "symlink" : "other";
}

struct base_walk {
	int ws;            /* the workspace (the lower layer) */
	int out;           /* base.jsonl, O_APPEND */
	int64_t start;
	struct seen seen;
	int failed;
};

static void base_line(struct base_walk *w, const char *rel)
{
	struct sbx_json j;
	struct stat st;
	const char *line;
	char *key;
	size_t len;
	int fd;

	sbx_json_begin(&j, NULL, NULL);
	sbx_json_str(&j, "path", rel);
	sbx_json_str(&j, "type", "");
	line = sbx_json_end(&j, &len);
	key = line ? path_key(line, len) : NULL;
	sbx_json_free(&j);
	if (!key || seen_has(&w->seen, key)) {
		free(key);
		return;
	}
	sbx_json_begin(&j, NULL, NULL);
	sbx_json_str(&j, "path", rel);
	fd = sbx_openat2(w->ws, rel, O_PATH | O_NOFOLLOW | O_CLOEXEC, RESOLVE_BENEATH | RES);
	if (fd < 0 || fstat(fd, &st) < 0) {
		sbx_json_str(&j, "type", "none");
	} else if ((int64_t)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec > w->start) {
		sbx_json_str(&j, "type", "changed");
	} else {
		sbx_json_str(&j, "type", type_of(st.st_mode));
		sbx_json_uint(&j, "dev", (uint64_t)st.st_dev);
		sbx_json_uint(&j, "ino", (uint64_t)st.st_ino);
		sbx_json_int(&j, "size", (int64_t)st.st_size);
		sbx_json_int(&j, "mtime_ns", (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec);
		sbx_json_int(&j, "ctime_ns", (int64_t)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec);
	}
	if (fd >= 0)
		close(fd);
	if (sbx_json_write(&j, w->out) < 0)
		w->failed = 1;
	seen_add(&w->seen, key);
}

/* upper/ depth first, never following a link. */
static void walk(struct base_walk *w, int dfd, const char *prefix, int depth)
{
	int d = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dp;
	struct dirent *e;

	if (d < 0 || !(dp = fdopendir(d))) {
		if (d >= 0)
			close(d);
		w->failed = 1;
		return;
	}
	while ((e = readdir(dp))) {
		char *rel;
		int sub;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		rel = *prefix ? sbx_needf("%s/%s", prefix, e->d_name) : sbx_need(strdup(e->d_name));
		base_line(w, rel);
		sub = openat(dirfd(dp), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0) {
			if (depth < 4096)
				walk(w, sub, rel, depth + 1);
			close(sub);
		} else if (errno != ENOTDIR && errno != ELOOP) {
			w->failed = 1;
		}
		free(rel);
	}
	closedir(dp);
}

/* Removes name in dfd and all below it, never following a link; a
 * directory is made searchable first (the overlay makes its own mode 0). */
static int remove_tree(int dfd, const char *name, int depth)
{
	DIR *dp;
	struct dirent *e;
	int d, ok = 1;

	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 1;
	if ((errno != EISDIR && errno != EPERM) || depth > 64)
		return 0;
	d = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d < 0 || fchmodat(dfd, name, 0700, 0) < 0) {
		if (d >= 0)
			close(d);
		return 0;
	}
	{
		char self[64];
		int r;
		snprintf(self, sizeof self, "/proc/self/fd/%d", d);
		r = open(self, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(d);
		if (r < 0 || !(dp = fdopendir(r))) {
			if (r >= 0)
				close(r);
			return 0;
		}
	}
	while ((e = readdir(dp)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			ok &= remove_tree(dirfd(dp), e->d_name, depth + 1);
	closedir(dp);
	return ok && unlinkat(dfd, name, AT_REMOVEDIR) == 0;
}

/* At the end of a run (and of a living sandbox): the workspace's state of
 * each path the change set holds that base.jsonl has no line for yet. */
void ns_changes_end(const struct ns_plan *p)
{
	struct base_walk w = { .ws = p->wsfd, .start = p->chg_start };
	int up, wk;

	if (!p->chg || p->chg_fd < 0)
		return;
	/* work/work is the overlay's scratch directory, mode 0, holding the
	 * whiteout its whiteouts link to: gone once the overlay is (its next
	 * mount makes it again), so the change set holds nothing its owner
	 * cannot read (sbx-quota verify --changes walks it all). */
	wk = openat(p->chg_fd, "work", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (wk < 0 || !remove_tree(wk, "work", 0))
		sbx_warn_errno("--changes: unable to remove the overlay's scratch directory %s/work/work", p->chg);
	if (wk >= 0)
		close(wk);
	w.out = openat(p->chg_fd, "base.jsonl", O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	up = openat(p->chg_fd, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (w.out < 0 || up < 0 || w.ws < 0) {
		sbx_warn_errno("--changes: unable to record the base of %s in base.jsonl", p->chg);
		return;
	}
	{
		struct stat d;
		if (p->root && fstat(p->chg_fd, &d) == 0 && fchown(w.out, d.st_uid, d.st_gid) < 0)
			sbx_warn_errno("--changes: unable to chown %s/base.jsonl", p->chg);
	}
	load_seen(w.out, &w.seen);
	walk(&w, up, "", 0);
	if (w.failed)
		sbx_warn("--changes: unable to record the base of every path of %s/upper in base.jsonl", p->chg);
	for (size_t i = 0; i < w.seen.n; i++)
		free(w.seen.v[i]);
	free(w.seen.v);
	close(up);
	close(w.out);
}

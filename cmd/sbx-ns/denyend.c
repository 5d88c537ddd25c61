/* Deny-write after the fact: a protected path that was missing at the
 * start and that the command created cannot be refused without a
 * placeholder in the workspace (a mount needs an existing mount point), so
 * sbx-ns creates nothing there and makes such a path inert before the run
 * is reported finished: the same walk as at the start (deny.c) finds every
 * protected path that is not the very object of the start set; each one
 * the command made is renamed to NAME.sbx-denied (-2, -3... if taken),
 * execute, set-user-ID and set-group-ID bits cleared when it is a file with
 * a single link, never deleted, and reported (stderr, status
 * "deny-write").
 *
 * "The command made it": owned by the command's uid, changed (ctime: a
 * creation, a rename or a link sets it and nothing can set it back) no
 * earlier than the start of the run, and born (btime, where the
 * filesystem keeps it) no later than its end. Anything else is left as it
 * is and reported. A file created on the host by the same uid during the
 * run cannot be told apart: it is moved aside too (never deleted).
 *
 * If sbx-ns is killed, the next run on the same workspace does this for
 * it: each run keeps a record (its uid, start, globs and start set) in a
 * directory of the caller's that no writable root of the run contains (the
 * sandbox can neither see nor forge it): root's /run/sbx-ns, else
 * $XDG_RUNTIME_DIR/sbx-ns or /tmp/sbx-ns-UID, mode 0700. The record is
 * locked (flock) by the outer process for its life and its mtime is
 * touched every second; the pid and start time of the sandbox's pid 1
 * are in it. A later run takes over a record whose lock is free and whose
 * pid 1 is gone (a pid namespace's pid 1 outlives every process in it),
 * with the end of the run put at the last touch plus two seconds. */
#include "ns.h"

#include "procstat.h"

#include "die.h"
#include "exitcodes.h"
#include "json.h"
#include "policy.h"
#include "quote.h"
#include "sys.h"
#include "walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define REC_MAGIC "sbx-ns deny-write record 1"
#define REC_MAX (1U << 22)
#define SLACK_NS 2000000000LL
#define RECOVER_WAIT_MS 10000  /* bound on waiting for a killed run's pid 1 to end */

struct ns_deny_rec {
	int dirfd;
	int fd;
	pid_t owner;            /* the outer process; never acted on by a child */
	char name[128];
	char dir[PATH_MAX];
	struct timespec start;
	time_t beat;
	pid_t dying;            /* pid 1 of a killed run, still ending */
};

/* Who and when, for one record. */
struct deny_scope {
	int wsfd;
	uid_t uid;
	int64_t start_ns, end_ns; /* end_ns 0: the run has just ended (now) */
	int status_fd;
	int earlier;              /* a record of a run that was killed */
	const struct deny_list *start;
};

static int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000LL + t->tv_nsec;
}

void ns_deny_candidate(struct deny_walk *w, const char *rel)
{
	if (w->ncand == w->capcand) {
		size_t cap = w->capcand ? w->capcand * 2 : 8;
		char **v = sbx_need(realloc(w->cand, cap * sizeof *v));
		w->cand = v;
		w->capcand = cap;
	}
	w->cand[w->ncand++] = sbx_need(strdup(rel));
}

/* Birth time through statx (lib/walk.h); -1 if unknown. */
static int64_t btime_ns(int fd)
{
	struct sbx_statx sx;

	memset(&sx, 0, sizeof sx);
	if (sbx_statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, SBX_STATX_BTIME, &sx) < 0 ||
	    !(sx.stx_mask & SBX_STATX_BTIME))
		return -1;
	return sx.stx_btime.tv_sec * 1000000000LL + sx.stx_btime.tv_nsec;
}

static void report(const struct deny_scope *s, const char *rel, const char *to, int cleared,
		   const char *kept)
{
	char q[PATH_MAX * 4 + 8], qt[PATH_MAX * 4 + 8];
	const char *who = s->earlier ? "an earlier run's command (killed)" : "the command";
	struct sbx_json j;

	sbx_quote(q, sizeof q, rel, strlen(rel), PATH_MAX, 0);
	if (to) {
		sbx_quote(qt, sizeof qt, to, strlen(to), PATH_MAX, 0);
		sbx_warn("deny-write: %s created the protected path %s; moved it to %s%s", who, q, qt,
			 cleared ? " and cleared its execute bits" : "");
	} else {
		sbx_warn("deny-write: the protected path %s appeared during a run but %s; left as it is",
			 q, kept);
	}
	if (s->status_fd < 0)
		return;
	sbx_json_begin(&j, NS_PROG, "deny-write");
	sbx_json_str(&j, "path", rel);
	if (to) {
		sbx_json_str(&j, "action", "moved aside");
		sbx_json_str(&j, "moved_to", to);
		sbx_json_bool(&j, "exec_cleared", cleared);
	} else {
		sbx_json_str(&j, "action", "left");
		sbx_json_str(&j, "reason", kept);
	}
	sbx_json_bool(&j, "earlier_run", s->earlier);
	sbx_json_write(&j, s->status_fd);
}

static int renameat2_(int dfd, const char *from, const char *to)
{
	return (int)syscall(SYS_renameat2, dfd, from, dfd, to, 1U /* RENAME_NOREPLACE */);
}

/* Rename name in dirfd to NAME.sbx-denied, -2, -3... never over anything. */
static int move_aside(int dirfd, const char *name, char *to, size_t cap)
{
	int len = (int)strnlen(name, 200), rc = -1;

	for (int k = 1; k < 100; k++) {
		if (k == 1)
			snprintf(to, cap, "%.*s.sbx-denied", len, name);
		else
			snprintf(to, cap, "%.*s.sbx-denied-%d", len, name, k);
		rc = renameat2_(dirfd, name, to);
		if (rc == 0 || errno != EEXIST)
			break;
	}
	return rc;
}

/* Why the object is not the command's, or NULL if it is. */
static const char *not_mine(const struct deny_scope *s, const struct stat *st, int64_t born)
{
	if (st->st_uid != s->uid)
		return "belongs to another user";
	if (ts_ns(&st->st_ctim) < s->start_ns)
		return "was not changed since it started";
	if (s->end_ns && (born >= 0 ? born : ts_ns(&st->st_ctim)) > s->end_ns)
		return "was made after that run ended";
	return NULL;
}

/* A directory above rel that the command made or moved there: then what
 * lies below is the command's too, whatever its own times (mv olddir .git
 * changes the directory's ctime, not its files'). */
static int new_ancestor(const struct deny_scope *s, const char *rel)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	char anc[PATH_MAX], *p;
	struct stat st;

	snprintf(anc, sizeof anc, "%s", rel);
	for (p = strchr(anc, '/'); p; p = strchr(p + 1, '/')) {
		int fd;
		*p = '\0';
		fd = sbx_openat2(s->wsfd, anc, how.flags, how.resolve);
		if (fd >= 0 && fstat(fd, &st) == 0 && !ns_deny_known(s->start, anc, &st) &&
		    !not_mine(s, &st, btime_ns(fd))) {
			close(fd);
			return 1;
		}
		if (fd >= 0)
			close(fd);
		*p = '/';
	}
	return 0;
}

/* What `git init` writes into a new .git/config, line by line: a config
 * made only of these lines sets nothing that runs a program (no hooksPath,
 * fsmonitor, sshCommand, filter, include, alias), so it is left in place
 * and the repository works on the host. Exact bytes, no parsing: anything
 * else (another key, a comment, a continuation) is moved aside. */
static int git_init_config(int pfd, const char *rel, const char *name, const struct stat *st)
{
	static const char *const ok[] = {
		"[core]", "\trepositoryformatversion = 0", "\tfilemode = true", "\tfilemode = false",
		"\tbare = false", "\tlogallrefupdates = true", "\tignorecase = true",
		"\tprecomposeunicode = true", "\tsymlinks = false", NULL
	};
	char buf[1024], *line, *save = NULL;
	struct stat now;
	ssize_t n;
	int fd;

	if (strncmp(rel, ".git/", 5) || strcmp(name, "config") || !S_ISREG(st->st_mode) ||
	    st->st_nlink != 1 || st->st_size <= 0 || st->st_size >= (off_t)sizeof buf)
		return 0;
	fd = openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = fstat(fd, &now) == 0 && now.st_ino == st->st_ino && now.st_dev == st->st_dev ?
		read(fd, buf, sizeof buf - 1) : -1;
	close(fd);
	if (n != st->st_size || buf[n - 1] != '\n' || memchr(buf, '\0', (size_t)n))
		return 0;
	buf[n] = '\0';
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *const *k = ok;
		while (*k && strcmp(*k, line))
			k++;
		if (!*k)
			return 0;
	}
	return 1;
}

/* Make one new protected path inert, if the command made it. */
static void inert(const struct deny_scope *s, const char *rel)
{
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	char parent[PATH_MAX], to[PATH_MAX], torel[2 * PATH_MAX + 2], proc[40], *slash;
	const char *name;
	struct stat st, now, pst;
	int pfd, fd, cleared = 0, rc = -1, e;
	const char *why;

	snprintf(parent, sizeof parent, "%s", rel);
	slash = strrchr(parent, '/');
	if (slash) {
		*slash = '\0';
		name = slash + 1;
		pfd = sbx_openat2(s->wsfd, parent, how.flags, how.resolve);
	} else {
		name = rel;
		pfd = fcntl(s->wsfd, F_DUPFD_CLOEXEC, 3);
	}
	if (pfd < 0)
		return; /* gone or replaced meanwhile: nothing at this path to act on */
	fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		close(pfd);
		return;
	}
	why = not_mine(s, &st, btime_ns(fd));
	if (why && !new_ancestor(s, rel)) {
		report(s, rel, NULL, 0, why);
		goto out;
	}
	if (git_init_config(pfd, rel, name, &st))
		goto out;
	if (strstr(name, ".sbx-denied")) {
		/* Moved aside already (by a run that ended meanwhile, or one
		 * killed while doing so): its name says so; only the bits may
		 * be left to clear. */
		if (!S_ISREG(st.st_mode) || st.st_nlink != 1 || !(st.st_mode & 07111))
			goto out;
		snprintf(to, sizeof to, "%s", name);
		rc = 0;
	}
	if (rc < 0)
		rc = move_aside(pfd, name, to, sizeof to);
	if (rc < 0 && errno == EACCES && fstat(pfd, &pst) == 0 && S_ISDIR(pst.st_mode) &&
	    (!not_mine(s, &pst, btime_ns(pfd)) || new_ancestor(s, rel))) {
		/* The command made its directory read-only to keep what it
		 * put there: the directory is the command's, opened for this
		 * one rename and closed again. */
		snprintf(proc, sizeof proc, "/proc/self/fd/%d", pfd);
		if (chmod(proc, (pst.st_mode & 07777) | 0300) == 0) {
			rc = move_aside(pfd, name, to, sizeof to);
			e = errno;
			chmod(proc, pst.st_mode & 07777);
			errno = e;
		}
	}
	if (rc < 0) {
		char q[PATH_MAX * 4 + 8];
		e = errno;
		sbx_quote(q, sizeof q, rel, strlen(rel), PATH_MAX, 0);
		errno = e;
		sbx_warn_errno("deny-write: unable to move the protected path %s aside", q);
		goto out;
	}
	if (fstatat(pfd, to, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_ino == st.st_ino &&
	    now.st_dev == st.st_dev && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
	    (st.st_mode & 07111)) {
		snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
		cleared = chmod(proc, st.st_mode & 0666) == 0;
	}
	snprintf(torel, sizeof torel, "%s%s%s", slash ? parent : "", slash ? "/" : "", to);
	report(s, rel, torel, cleared, NULL);
out:
	close(fd);
	close(pfd);
}

/* Walk again, compare with the start set, act on what is new. */
static void check(const struct deny_scope *s, const char *const *globs, size_t n,
		  const struct deny_list *start)
{
	struct deny_walk w = { .check = 1, .start = start };
	struct deny_scope sc = *s;

	sc.start = start;
	s = &sc;

	ns_deny_walk(&w, s->wsfd, globs, n);
	for (size_t i = 0; i < w.ncand; i++) {
		inert(s, w.cand[i]);
		free(w.cand[i]);
	}
	free(w.cand);
	ns_deny_restore(&w);
}

/* --- the record --- */

static void hex(char *out, const char *s)
{
	static const char d[] = "0123456789abcdef";
	for (; *s; s++) {
		*out++ = d[(unsigned char)*s >> 4];
		*out++ = d[(unsigned char)*s & 15];
	}
	*out = '\0';
}

static int unhex(char *out, const char *s, size_t cap)
{
	size_t n = 0;
	for (; s[0] && s[1]; s += 2) {
		int hi = s[0] >= 'a' ? s[0] - 'a' + 10 : s[0] - '0';
		int lo = s[1] >= 'a' ? s[1] - 'a' + 10 : s[1] - '0';
		if (hi < 0 || hi > 15 || lo < 0 || lo > 15 || n + 1 >= cap)
			return -1;
		out[n++] = (char)(hi << 4 | lo);
	}
	out[n] = '\0';
	return *s || !n ? -1 : 0;
}

static int state_dir(const struct ns_run *r, char *path, size_t cap)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	const struct mount_op *op;
	char real[PATH_MAX];
	struct stat st;
	int fd;

	/* Root: /run/sbx-ns; where there is no writable /run (an initramfs,
	 * a container with /run read-only), /tmp/sbx-ns-0. */
	if (r->p->root && (mkdir("/run/sbx-ns", 0700) == 0 || errno == EEXIST)) {
		snprintf(path, cap, "/run/sbx-ns");
	} else if (r->p->root) {
		snprintf(path, cap, "/tmp/sbx-ns-0");
	} else if (xdg && xdg[0] == '/' && realpath(xdg, real) && stat(real, &st) == 0 &&
		   S_ISDIR(st.st_mode) && st.st_uid == r->p->caller_uid && !(st.st_mode & 077)) {
		if ((size_t)snprintf(path, cap, "%.4000s/sbx-ns", real) >= cap)
			sbx_die(SBX_EXIT_SYS, "unable to use XDG_RUNTIME_DIR: too long");
	} else {
		snprintf(path, cap, "/tmp/sbx-ns-%u", (unsigned)r->p->caller_uid);
	}
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		sbx_die(SBX_EXIT_SYS, "unable to create %s for the deny-write records: %s; to fix: a "
			"writable %s, or XDG_RUNTIME_DIR naming a directory of the caller's with mode 0700 "
			"(in a container: a tmpfs or emptyDir volume at /tmp)", path, strerror(errno),
			r->p->root ? "/run" : "/tmp");
	fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open %s for the deny-write records", path);
	if (st.st_uid != r->p->caller_uid || (st.st_mode & 077))
		sbx_die(SBX_EXIT_POLICY, "unable to use %s for the deny-write records: owned by uid %u "
			"with mode %03o, not by uid %u with mode 0700 (remove it, or set XDG_RUNTIME_DIR)",
			path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777), (unsigned)r->p->caller_uid);
	for (size_t it = 0; (op = ns_next_writable(r->p, &it)); )
		if (sbx_path_within(path, op->src))
			sbx_die(SBX_EXIT_POLICY, "unable to keep the deny-write records in %s: it lies in the "
				"writable root %s (the command could forge it)", path, op->src);
	return fd;
}

static void prefix_of(const struct ns_run *r, char *out, size_t cap)
{
	snprintf(out, cap, "ws-%llx-%llx-", (unsigned long long)r->p->ops[r->p->ws].dev,
		 (unsigned long long)r->p->ops[r->p->ws].ino);
}

/* State and start time (clock ticks since boot) of a process, from
 * /proc/PID/stat; -1 if it is gone. */
static int proc_stat(long pid, char *state, unsigned long long *start)
{
	struct sbx_proc_stat ps;
	char num[24];

	snprintf(num, sizeof num, "%ld", pid);
	if (sbx_proc_stat(num, &ps) < 0)
		return -1;
	*state = ps.state;
	*start = ps.start;
	return 0;
}

/* pid 1 of a killed run: alive until every process of its namespace is gone. */
static int pid1_alive(long pid, unsigned long long start)
{
	unsigned long long st;
	char state;

	return proc_stat(pid, &state, &st) == 0 && st == start && state != 'Z' && state != 'X';
}

static char *read_all(int fd)
{
	struct stat st;
	char *buf;
	ssize_t n;

	if (fstat(fd, &st) < 0 || st.st_size > REC_MAX)
		return NULL;
	buf = sbx_need(malloc((size_t)st.st_size + 1));
	n = pread(fd, buf, (size_t)st.st_size, 0);
	if (n != st.st_size) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

/* One record of a run that is over: do what it could not. Returns 0 if
 * it was used (or is garbage), -1 if its run still lives. */
static int take_over(struct ns_run *r, int fd)
{
	struct deny_scope s = { .wsfd = r->p->wsfd, .status_fd = r->a->status_fd, .earlier = 1 };
	struct deny_list start = { 0 };
	const char **globs = NULL;
	size_t nglobs = 0;
	char *buf = read_all(fd), *line, *save = NULL;
	int ok = 0, done = 0;
	long pid = 0;
	unsigned long long pstart = 0;
	struct stat st;

	if (!buf || fstat(fd, &st) < 0) {
		free(buf);
		return 0;
	}
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char kind, rel[PATH_MAX], h[2 * PATH_MAX + 2];
		unsigned long long dev, ino, a, b;

		if (!ok) {
			ok = !strcmp(line, REC_MAGIC) ? 1 : -1;
		} else if (sscanf(line, "uid %llu", &a) == 1) {
			s.uid = (uid_t)a;
		} else if (sscanf(line, "start %llu %llu", &a, &b) == 2) {
			s.start_ns = (int64_t)a * 1000000000LL + (int64_t)b;
		} else if (sscanf(line, "glob %8193s", h) == 1 && unhex(rel, h, sizeof rel) == 0) {
			globs = sbx_need(realloc(globs, (nglobs + 1) * sizeof *globs));
			globs[nglobs++] = sbx_need(strdup(rel));
		} else if (sscanf(line, "have %c %llx %llx %8193s", &kind, &dev, &ino, h) == 4 &&
			   unhex(rel, h, sizeof rel) == 0) {
			ns_deny_push(&start, kind == 'P' ? DENY_PROTECT : DENY_ANCESTOR, rel,
				     (dev_t)dev, (ino_t)ino);
		} else if (!strcmp(line, "end")) {
			done = 1;
		} else if (sscanf(line, "pid %ld %llu", &pid, &pstart) != 2) {
			ok = -1;
		}
		if (ok < 0)
			break;
	}
	if (pid > 0 && pid1_alive(pid, pstart)) {
		ok = 0;
		done = -1;
		/* Its outer is gone (the lock was free): pid 1 is ending. */
		r->x.rec->dying = (pid_t)pid;
	}
	/* A record cut short was written before the sandbox existed. */
	if (ok > 0 && done > 0 && pid > 0) {
		int64_t born = btime_ns(r->p->wsfd);

		s.end_ns = ts_ns(&st.st_mtim) + SLACK_NS;
		/* A record names its workspace by device and inode: a directory
		 * born after that run ended only reuses the inode of the one the
		 * record is about, and nothing in it can be that run's. */
		int stale = born >= 0 && born > s.end_ns;
		if (!stale)
			check(&s, globs, nglobs, &start);
	}
	for (size_t i = 0; i < nglobs; i++)
		free((char *)globs[i]);
	free(globs);
	for (size_t i = 0; i < start.n; i++)
		free(start.v[i].rel);
	free(start.v);
	free(buf);
	return done < 0 ? -1 : 0;
}

static void recover_once(struct ns_run *r);

/* Before the plan: the records of this workspace whose runs were killed
 * (the plan's workspace fd is open). A killed run whose pid 1 is still
 * ending (its namespace being torn down) is waited for, a bounded time,
 * so that what it left is made inert before this run's command starts. */
void ns_deny_recover(struct ns_run *r)
{
	for (int round = 0; round < 4; round++) {
		pid_t dying;
		int pfd;

		recover_once(r);
		dying = r->x.rec->dying;
		if (!dying || (pfd = sbx_pidfd_open(dying)) < 0)
			return;
		poll(&(struct pollfd){ .fd = pfd, .events = POLLIN }, 1, RECOVER_WAIT_MS);
		close(pfd);
		close(r->x.rec->dirfd);
		free(r->x.rec);
		r->x.rec = NULL;
	}
}

static void recover_once(struct ns_run *r)
{
	char path[PATH_MAX], pre[64];
	struct dirent *e;
	size_t plen;
	int dfd, rfd;
	DIR *d;

	r->x.rec = sbx_need(calloc(1, sizeof *r->x.rec));
	r->x.rec->fd = -1;
	r->x.rec->owner = getpid();
	dfd = r->x.rec->dirfd = state_dir(r, path, sizeof path);
	snprintf(r->x.rec->dir, sizeof r->x.rec->dir, "%s", path);
	prefix_of(r, pre, sizeof pre);
	plen = strlen(pre);
	rfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0 || !(d = fdopendir(rfd)))
		sbx_die_errno(SBX_EXIT_SYS, "unable to read %s", path);
	while ((e = readdir(d))) {
		struct stat st;
		int fd;

		if (strncmp(e->d_name, pre, plen))
			continue;
		fd = openat(dfd, e->d_name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
		    flock(fd, LOCK_EX | LOCK_NB) == 0 && take_over(r, fd) == 0)
			unlinkat(dfd, e->d_name, 0);
		close(fd);
	}
	closedir(d);
}

static void rec_write(struct ns_run *r, const char *s)
{
	if (write(r->x.rec->fd, s, strlen(s)) != (ssize_t)strlen(s))
		sbx_die_errno(SBX_EXIT_SYS, "unable to write the deny-write record");
}

static void rec_unlink(struct ns_run *r)
{
	struct ns_deny_rec *rec = r->x.rec;

	if (!rec || rec->fd < 0 || getpid() != rec->owner)
		return;
	unlinkat(rec->dirfd, rec->name, 0);
	close(rec->fd);
	rec->fd = -1;
}

/* Just before the clone: this run's record, complete, locked, then named. */
void ns_deny_record(struct ns_run *r)
{
	struct ns_deny_rec *rec = r->x.rec;
	char proc[40], line[2 * PATH_MAX + 96], h[2 * PATH_MAX + 2], pre[64];
	size_t n;
	const char *const *globs = ns_deny_globs(r->p, &n);

	clock_gettime(CLOCK_REALTIME_COARSE, &rec->start);
	rec->beat = rec->start.tv_sec;
	prefix_of(r, pre, sizeof pre);
	snprintf(rec->name, sizeof rec->name, "%s%ld-%llx", pre, (long)getpid(),
		 (unsigned long long)ts_ns(&rec->start));
	/* Unnamed until complete and locked: no other run can see it half-made. */
	rec->fd = openat(rec->dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (rec->fd < 0 || flock(rec->fd, LOCK_EX) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create the deny-write record in %s", rec->dir);
	snprintf(line, sizeof line, REC_MAGIC "\nuid %u\nstart %lld %ld\n", (unsigned)r->p->uid,
		 (long long)rec->start.tv_sec, rec->start.tv_nsec);
	rec_write(r, line);
	for (size_t i = 0; i < n; i++) {
		hex(h, globs[i]);
		snprintf(line, sizeof line, "glob %s\n", h);
		rec_write(r, line);
	}
	for (size_t i = 0; i < r->p->ndops; i++) {
		hex(h, r->p->dops[i].rel);
		snprintf(line, sizeof line, "have %c %llx %llx %s\n",
			 r->p->dops[i].kind == DENY_PROTECT ? 'P' : 'A', (unsigned long long)r->p->dops[i].dev,
			 (unsigned long long)r->p->dops[i].ino, h);
		rec_write(r, line);
	}
	rec_write(r, "end\n");
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", rec->fd);
	if (linkat(AT_FDCWD, proc, rec->dirfd, rec->name, AT_SYMLINK_FOLLOW) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to name the deny-write record %s", rec->name);
}

/* Before the go-ahead: whose death ends the run. */
void ns_deny_started(struct ns_run *r, pid_t pid)
{
	unsigned long long st;
	char line[96], state;

	if (proc_stat(pid, &state, &st) < 0)
		sbx_die(SBX_EXIT_SYS, "unable to read the start time of the sandbox from /proc/%d/stat", (int)pid);
	snprintf(line, sizeof line, "pid %d %llu\n", (int)pid, st);
	rec_write(r, line);
}

void ns_deny_heartbeat(struct ns_run *r)
{
	struct timespec now;

	if (!r->x.rec || r->x.rec->fd < 0)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	if (now.tv_sec == r->x.rec->beat)
		return;
	r->x.rec->beat = now.tv_sec;
	futimens(r->x.rec->fd, NULL);
}

/* The sandbox is gone (its pid 1 reaped): before the exit is reported. */
void ns_deny_end(struct ns_run *r)
{
	struct deny_scope s = { .wsfd = r->p->wsfd, .uid = r->p->uid, .status_fd = r->a->status_fd };
	struct deny_list start = { .v = r->p->dops, .n = r->p->ndops };
	size_t n;
	const char *const *globs = ns_deny_globs(r->p, &n);

	if (!r->x.rec || r->x.rec->fd < 0)
		return;
	s.start_ns = ts_ns(&r->x.rec->start);
	check(&s, globs, n, &start);
	rec_unlink(r);
}

/* The caller's record directory (open since ns_deny_recover), or -1. */
int ns_deny_dirfd(const struct ns_run *r)
{
	return r->x.rec ? r->x.rec->dirfd : -1;
}

/* The unsafe fallback: no sandbox, no protection, nothing to take over. */
void ns_deny_forget(struct ns_run *r)
{
	rec_unlink(r);
}

/* Deny-write after the fact, the record side: if sbx-ns is killed, the
 * next run on the same workspace makes inert what that run's command left
 * (denyinert.c does the checking and moving). Each run keeps a record
 * (its uid, start, globs and start set) in a directory of the caller's
 * that no writable root of the run contains (the sandbox can neither see
 * nor forge it): root's /run/sbx-ns, else $XDG_RUNTIME_DIR/sbx-ns or
 * /tmp/sbx-ns-UID, mode 0700. The record is locked (flock) by the outer
 * process for its life and its mtime is touched every second; the pid and
 * start time of the sandbox's pid 1 are in it. A later run takes over a
 * record whose lock is free and whose pid 1 is gone (a pid namespace's pid
 * 1 outlives every process in it), with the end of the run put at the
 * last touch plus two seconds. The record names the pid namespace its pid
 * is a number in: a run in another one cannot see that pid 1 (the sandbox
 * may live on), and keeps the record for a run there. A run takes over
 * only its own workspace's records (named ws-DEV-INO-...: found wherever
 * the workspace has moved), before its command starts; another
 * workspace's are that workspace's business, and its next run does the
 * same before anything runs there: a run neither works on another tree
 * during its start nor talks about it. sbx-ns --recover takes over every
 * record of the caller's: a record names its workspace's path too, by
 * which it finds another workspace (device and inode must match), and it
 * drops the record when that path no longer names the workspace (removed,
 * moved away).
 *
 * The same directory keeps, per workspace, the directories the last end
 * walk read (denytree.c), for as long as that workspace is at its path.
 * Nothing else stays: a record whose sandbox never existed (a refusal, a
 * failed clone) goes at the exit, and the directory goes with the last
 * run that leaves it empty. Each run holds the directory's lock shared
 * from its start to its end; one that gets it exclusively at its end is
 * alone, and removes the directory if it is empty; a run that opened the
 * directory meanwhile finds it removed once it has its lock, and makes it
 * again. */
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
#include <sys/random.h>
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
	int lockfd;             /* the directory, read-only: its lock, shared */
	int fd;
	int started;            /* the record names a sandbox that existed */
	pid_t owner;            /* the outer process; never acted on by a child */
	char name[128];
	char dir[PATH_MAX];
	struct deny_tree prev;  /* the last run's end walk, kept (denytree.c) */
	struct timespec start;
	time_t beat;
	pid_t dying;            /* pid 1 of a killed run, still ending */
};


static int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000LL + t->tv_nsec;
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

static int state_dir(const struct ns_run *r, char *path, size_t cap, int *lockfd)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	const struct mount_op *op;
	char real[PATH_MAX];
	struct stat st, now;
	int fd, lk;

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
	for (int tries = 0;; tries++) {
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			sbx_die(SBX_EXIT_SYS, "unable to create %s for the deny-write records: %s; to fix: a "
				"writable %s, or XDG_RUNTIME_DIR naming a directory of the caller's with mode 0700 "
				"(in a container: a tmpfs or emptyDir volume at /tmp)", path, strerror(errno),
				r->p->root ? "/run" : "/tmp");
		fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT && tries < 16)
			continue; /* removed by a run that ended meanwhile */
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
		lk = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (lk < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to read %s", path);
		if (flock(lk, LOCK_SH) < 0 || fstat(lk, &st) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to lock %s", path);
		/* Still linked, and still the one at path, once locked: no
		 * run can remove it now. */
		if (st.st_nlink > 0 && lstat(path, &now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino) {
			*lockfd = lk;
			return fd;
		}
		close(lk);
		close(fd);
		if (tries >= 16)
			sbx_die(SBX_EXIT_SYS, "unable to keep %s for the deny-write records: removed again as "
				"soon as made, 16 times (other runs of uid %u ending)", path, (unsigned)r->p->caller_uid);
	}
}

/* The directory at path, if it is still the workspace of dev and ino
 * (and btime, if known, >= 0): its fd (O_PATH). -2 if the path names
 * another or nothing: that workspace is gone from there; -1 if that
 * cannot be told. */
static int ws_at(const char *path, unsigned long long dev, unsigned long long ino, long long btime)
{
	int fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	long long born;
	struct stat st;

	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ? -2 : -1;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return -1;
	}
	born = btime >= 0 ? ns_deny_btime(fd) : -1;
	if ((unsigned long long)st.st_dev != dev || (unsigned long long)st.st_ino != ino ||
	    (born >= 0 && born != btime)) {
		close(fd);
		return -2;
	}
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

/* The pid namespace this process's pids are numbers of (device and
 * inode of /proc/self/ns/pid); -1 if it cannot be told. */
static int own_pidns(unsigned long long *dev, unsigned long long *ino)
{
	struct stat st;

	if (stat("/proc/self/ns/pid", &st) < 0)
		return -1;
	*dev = (unsigned long long)st.st_dev;
	*ino = (unsigned long long)st.st_ino;
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

/* One record of a run that is over: do what it could not, on this run's
 * workspace (own), or (--recover) on the one the record names by its path
 * and name (ws-DEV-INO-...). Returns 0 if it was used, is garbage, was written
 * before its sandbox existed, or is about a workspace no longer at its
 * path; -1 if it stays: its run still lives, or (another workspace) its
 * check could not complete, or it names no path (an older sbx-ns's). */
static int take_over(struct ns_run *r, int fd, const char *name, int own)
{
	struct deny_scope s = { .wsfd = own ? r->p->wsfd : -1, .status_fd = r->a->status_fd, .earlier = 1,
				.ws_path = own ? r->p->ops[r->p->ws].src : NULL, .other = !own };
	struct deny_list start = { 0 };
	const char **globs = NULL;
	size_t nglobs = 0;
	char *buf = read_all(fd), *line, *save = NULL, wpath[PATH_MAX];
	int ok = 0, done = 0, keep = 0, nf, foreign = 0;
	long pid = 0;
	unsigned long long pstart = 0, wdev, wino, nsdev = 0, nsino = 0;
	struct stat st;

	if (!buf || fstat(fd, &st) < 0) {
		free(buf);
		return 0;
	}
	wpath[0] = '\0';
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char kind, rel[PATH_MAX], h[2 * PATH_MAX + 2];
		unsigned long long dev, ino, a, b;

		if (!ok) {
			ok = !strcmp(line, REC_MAGIC) ? 1 : -1;
		} else if (sscanf(line, "uid %llu", &a) == 1) {
			s.uid = (uid_t)a;
		} else if (sscanf(line, "start %llu %llu", &a, &b) == 2) {
			s.start_ns = (int64_t)a * 1000000000LL + (int64_t)b;
		} else if (sscanf(line, "path %8193s", h) == 1 && unhex(wpath, h, sizeof wpath) == 0 &&
			   wpath[0] == '/') {
			;
		} else if (sscanf(line, "glob %8193s", h) == 1 && unhex(rel, h, sizeof rel) == 0) {
			globs = sbx_need(realloc(globs, (nglobs + 1) * sizeof *globs));
			globs[nglobs++] = sbx_need(strdup(rel));
		} else if (sscanf(line, "have %c %llx %llx %8193s", &kind, &dev, &ino, h) == 4 &&
			   unhex(rel, h, sizeof rel) == 0) {
			sbx_deny_push(&start, kind == 'P' ? DENY_PROTECT : DENY_ANCESTOR, rel,
				     (dev_t)dev, (ino_t)ino);
		} else if (!strcmp(line, "end")) {
			done = 1;
		} else if ((nf = sscanf(line, "pid %ld %llu pidns %llx %llx", &pid, &pstart, &nsdev, &nsino)) < 2) {
			ok = -1;
		} else {
			foreign = nf == 4 && (own_pidns(&a, &b) < 0 || a != nsdev || b != nsino);
		}
		if (ok < 0)
			break;
	}
	/* Its pid is a number in another pid namespace than this run's: this
	 * run cannot tell whether that sandbox still lives (its command could
	 * write on after a take-over). Kept for a run in that namespace. */
	if (pid > 0 && foreign) {
		static int said;
		if (!said++)
			sbx_warn("deny-write: a killed run's record %s/%s was written in another pid namespace "
				 "(pid:[%llu]), whose sandbox this run cannot see; kept, for the next run in that pid "
				 "namespace (or sbx-ns --recover there) to take over; if none is left, check what its "
				 "command created in %s%s and remove the record", r->x.rec->dir, name, nsino,
				 own || !wpath[0] ? "" : "another workspace, ", wpath[0] ? wpath : "its workspace");
		ok = 0;
		keep = 1;
	} else if (pid > 0 && pid1_alive(pid, pstart)) {
		ok = 0;
		keep = 1;
		/* Its outer is gone (the lock was free): pid 1 is ending. */
		r->x.rec->dying = (pid_t)pid;
	}
	/* Another workspace's: found again by its path, device and inode. */
	if (!own && ok > 0 && done > 0 && pid > 0) {
		int w = -1;

		if (!wpath[0] || sscanf(name, "ws-%llx-%llx-", &wdev, &wino) != 2)
			keep = 1;
		else if ((w = ws_at(wpath, wdev, wino, -1)) == -1)
			keep = 1;
		if (w < 0)
			ok = 0;
		s.wsfd = w;
		s.ws_path = wpath;
	}
	/* A record cut short was written before the sandbox existed. */
	if (ok > 0 && done > 0 && pid > 0) {
		int64_t born = ns_deny_btime(s.wsfd);

		s.end_ns = ts_ns(&st.st_mtim) + SLACK_NS;
		/* A record names its workspace by device and inode: a directory
		 * born after that run ended only reuses the inode of the one the
		 * record is about, and nothing in it can be that run's. */
		int stale = born >= 0 && born > s.end_ns;
		if (!stale && ns_deny_check(&s, globs, nglobs, &start, NULL, NULL) > 0) {
			if (own)
				sbx_die(SBX_EXIT_POLICY, "deny-write: the end check of an earlier run on this "
					"workspace could not complete (said above); the command does not run until it can");
			keep = 1; /* its workspace's own next run refuses until it can */
		}
	}
	if (!own && s.wsfd >= 0)
		close(s.wsfd);
	for (size_t i = 0; i < nglobs; i++)
		free((char *)globs[i]);
	free(globs);
	for (size_t i = 0; i < start.n; i++)
		free(start.v[i].rel);
	free(start.v);
	free(buf);
	return keep ? -1 : 0;
}

/* The name of the kept tree of this workspace, and what it must match:
 * the workspace (device, inode, birth time, path) and the deny-write list. */
static char *tree_key(const struct ns_run *r, char *name, size_t cap)
{
	size_t n, len;
	const char *const *globs = ns_deny_globs(r->p, &n);
	const char *ws = r->p->ops[r->p->ws].src;
	char *key, *o;

	snprintf(name, cap, "tree-%llx-%llx", (unsigned long long)r->p->ops[r->p->ws].dev,
		 (unsigned long long)r->p->ops[r->p->ws].ino);
	len = 96 + 2 * strlen(ws);
	for (size_t i = 0; i < n; i++)
		len += 2 * strlen(globs[i]) + 1;
	key = sbx_need(malloc(len));
	o = key + snprintf(key, len, "ws %llx %llx %lld\npath ", (unsigned long long)r->p->ops[r->p->ws].dev,
			   (unsigned long long)r->p->ops[r->p->ws].ino, (long long)ns_deny_btime(r->p->wsfd));
	hex(o, ws);
	o += strlen(o);
	o += snprintf(o, len - (size_t)(o - key), "\nglobs ");
	for (size_t i = 0; i < n; i++) {
		hex(o, globs[i]);
		o += strlen(o);
		*o++ = ',';
	}
	*o = '\0';
	return key;
}

static void recover_once(struct ns_run *r);

/* The run that holds the record directory, for its exit. */
static struct ns_run *leave_run;

static void rec_unlink(struct ns_run *r);

/* This run is done with the record directory: removed if nothing is left
 * in it and no other run holds it (shared, each, until its end). */
static void dir_leave(struct ns_deny_rec *rec)
{
	if (rec->lockfd < 0)
		return;
	if (flock(rec->lockfd, LOCK_EX | LOCK_NB) == 0)
		rmdir(rec->dir); /* not empty: others' records, kept trees */
	flock(rec->lockfd, LOCK_UN);
	close(rec->lockfd);
	rec->lockfd = -1;
}

/* At the exit of the outer process, whichever way it goes (a refusal, a
 * failed clone, the end): a record whose sandbox never existed protects
 * nothing and goes; one whose sandbox did stays for the next run (its end
 * check did not run, or left a protected path live). */
void ns_deny_leave(struct ns_run *r)
{
	struct ns_deny_rec *rec = r ? r->x.rec : NULL;

	if (!rec || getpid() != rec->owner)
		return;
	if (rec->fd >= 0 && !rec->started)
		rec_unlink(r);
	if (rec->fd < 0)
		dir_leave(rec);
}

static void leave_on_die(void)
{
	ns_deny_leave(leave_run);
}

/* A kept tree is only a cost saved. It goes when its workspace is no
 * longer at the path its key names (removed, moved, another directory
 * there), when it was unused for a day, or when its key does not parse; a
 * tree being written (NAME.PID-START, denykeep.c) goes once its writer is
 * gone. Never a live writer's, never through a link. */
static void tree_sweep(int dfd, const char *name)
{
	char buf[128 + 2 * PATH_MAX], h[2 * PATH_MAX + 2], wpath[PATH_MAX], state;
	const char *dot = strchr(name, '.');
	unsigned long long dev, ino, start, now;
	long long btime;
	long pid;
	struct stat st;
	ssize_t n;
	int fd, w, gone = 1;

	if (dot) {
		if (sscanf(dot + 1, "%ld-%llx", &pid, &start) == 2 && pid > 0 &&
		    proc_stat(pid, &state, &now) == 0 && now == start)
			return;
		unlinkat(dfd, name, 0);
		return;
	}
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP || errno == ENXIO)
			unlinkat(dfd, name, 0);
		return;
	}
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_mtime >= time(NULL) - 86400 &&
	    (n = pread(fd, buf, sizeof buf - 1, 0)) > 0) {
		buf[n] = '\0';
		if (sscanf(buf, "%*[^\n]\nws %llx %llx %lld\npath %8193s", &dev, &ino, &btime, h) == 4 &&
		    unhex(wpath, h, sizeof wpath) == 0 && wpath[0] == '/') {
			w = ws_at(wpath, dev, ino, btime);
			gone = w == -2;
			if (w >= 0)
				close(w);
		}
	}
	close(fd);
	if (gone)
		unlinkat(dfd, name, 0);
}

/* Before the plan: the records of this workspace whose runs were killed
 * (the plan's workspace fd is open); with --recover, every record of the
 * caller's. A killed run whose pid 1 is still
 * ending (its namespace being torn down) is waited for, a bounded time,
 * so that what it left is made inert before this run's command starts. */
void ns_deny_recover(struct ns_run *r)
{
	for (int round = 0;; round++) {
		pid_t dying;
		int pfd;

		recover_once(r);
		dying = r->x.rec->dying;
		if (!dying || round == 3 || (pfd = sbx_pidfd_open(dying)) < 0)
			break;
		poll(&(struct pollfd){ .fd = pfd, .events = POLLIN }, 1, RECOVER_WAIT_MS);
		close(pfd);
		close(r->x.rec->dirfd);
		close(r->x.rec->lockfd);
		sbx_deny_tree_free(&r->x.rec->prev);
		free(r->x.rec);
		r->x.rec = NULL;
	}
	/* What killed Landlock tier runs left (tierkeep.c). */
	ns_tier_leftovers(r);
}

static void recover_once(struct ns_run *r)
{
	char path[PATH_MAX], pre[64];
	struct dirent *e;
	size_t plen;
	int dfd, rfd, own;
	DIR *d;

	r->x.rec = sbx_need(calloc(1, sizeof *r->x.rec));
	r->x.rec->fd = r->x.rec->lockfd = r->x.rec->dirfd = -1;
	r->x.rec->owner = getpid();
	dfd = r->x.rec->dirfd = state_dir(r, path, sizeof path, &r->x.rec->lockfd);
	snprintf(r->x.rec->dir, sizeof r->x.rec->dir, "%s", path);
	if (!leave_run) {
		leave_run = r;
		sbx_on_die(leave_on_die);
		atexit(leave_on_die);
	}
	leave_run = r;
	prefix_of(r, pre, sizeof pre);
	plen = strlen(pre);
	rfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0 || !(d = fdopendir(rfd)))
		sbx_die_errno(SBX_EXIT_SYS, "unable to read %s", path);
	while ((e = readdir(d))) {
		struct stat st;
		int fd;

		if (!strncmp(e->d_name, "tree-", 5)) {
			tree_sweep(dfd, e->d_name);
			continue;
		}
		if (strncmp(e->d_name, "ws-", 3))
			continue;
		own = !strncmp(e->d_name, pre, plen);
		if (!own && !r->a->recover)
			continue; /* its workspace's next run takes it over */
		fd = openat(dfd, e->d_name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		/* Locked by its run for that run's life; still named once
		 * locked (no other run took it over meanwhile). */
		if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    st.st_nlink == 1 && take_over(r, fd, e->d_name, own) == 0)
			unlinkat(dfd, e->d_name, 0);
		close(fd);
	}
	closedir(d);
	/* The directories the last run's end walk read (denytree.c). */
	{
		char name[64], *key = tree_key(r, name, sizeof name);
		ns_deny_tree_load(dfd, name, key, &r->x.rec->prev);
		free(key);
	}
}

const struct deny_tree *ns_deny_prev(const struct ns_run *r)
{
	return r->x.rec && r->x.rec->prev.n ? &r->x.rec->prev : NULL;
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
	hex(h, r->p->ops[r->p->ws].src);
	snprintf(line, sizeof line, "path %s\n", h);
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
	unsigned long long st, nsdev, nsino;
	char line[128], state;

	if (proc_stat(pid, &state, &st) < 0)
		sbx_die(SBX_EXIT_SYS, "unable to read the start time of the sandbox from /proc/%d/stat", (int)pid);
	if (own_pidns(&nsdev, &nsino) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read /proc/self/ns/pid for the deny-write record");
	/* The pid namespace after the pid: read by a run in another, the pid
	 * means nothing; an older sbx-ns reads the pid and start alone. */
	snprintf(line, sizeof line, "pid %d %llu pidns %llx %llx\n", (int)pid, st, nsdev, nsino);
	rec_write(r, line);
	r->x.rec->started = 1;
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

/* The sandbox is gone (its pid 1 reaped): before the exit is reported.
 * -1: a protected path stays live (said); the run fails (102) and the
 * record is kept, so the next run on the workspace tries again first. */
/* The end check, now: 1 if a protected path is live, else 0; the
 * directories it read go to keep (NULL: dropped). */
static int check_now(struct ns_run *r, struct deny_tree *keep)
{
	struct deny_scope s = { .wsfd = r->p->wsfd, .uid = r->p->uid, .status_fd = r->a->status_fd,
				.ws_path = r->p->ops[r->p->ws].src };
	struct deny_list start = { .v = r->p->dops, .n = r->p->ndops };
	struct deny_tree drop = { 0 };
	size_t n;
	const char *const *globs = ns_deny_globs(r->p, &n);
	int live;

	s.start_ns = ts_ns(&r->x.rec->start);
	live = ns_deny_check(&s, globs, n, &start, &r->p->dtree, keep ? keep : &drop) > 0;
	sbx_deny_tree_free(&drop);
	return live;
}

int ns_deny_end(struct ns_run *r)
{
	if (!r->x.rec || r->x.rec->fd < 0)
		return 0;
	struct deny_tree end = { 0 };
	char name[64], *key;

	if (check_now(r, &end))
		return -1;
	if (end.n) {
		key = tree_key(r, name, sizeof name);
		ns_deny_tree_save(r->x.rec->dirfd, name, key, &end);
		free(key);
		sbx_deny_tree_free(&end);
	}
	rec_unlink(r);
	return 0;
}

/* A living sandbox's check after each command: the same check, the
 * record kept (the sandbox goes on, and so does what its end covers). */
int ns_deny_between(struct ns_run *r)
{
	if (!r->x.rec || r->x.rec->fd < 0)
		return 0;
	return check_now(r, NULL) ? -1 : 0;
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

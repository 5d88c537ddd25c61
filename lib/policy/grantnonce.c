/* The records of single-use grants (grant.h): where a verifier notes that
 * a grant's nonce was used, and how the records of grants that have
 * expired go again, without ever letting one run twice.
 *
 *   DIR/NONCE              the record, made with O_EXCL (of any number of
 *                          verifiers racing, exactly one makes it):
 *                          "used NOW pid PID expires T\n", T in seconds
 *                          since 1970 or "never". An older sbx-ns wrote
 *                          no expiry: such a record stays, as does any
 *                          whose expiry cannot be read.
 *   DIR/expiring/H/NONCE   a second link of the record of a grant that
 *                          expires, H the hour it expires in (T rounded
 *                          down to a multiple of 3600): the index by which
 *                          the expired ones are found an hour at a time,
 *                          without reading the others.
 *   DIR/expiring/pruned    "pruned M\n": the records of grants expiring at
 *                          or before M may be gone, so every such grant
 *                          is refused, whatever the verifier's clock says.
 *
 * A prune raises M first (never lowering it: under the lock of
 * DIR/expiring, and the file replaced by a rename, so it is read whole or
 * not at all), then removes records up to M. A verifier reads M before it
 * makes its record and again after: a record it could make only because a
 * prune had just removed the one before it finds M at or past its grant's
 * expiry, and refuses. Since an expired grant is refused anyway, removing
 * its record cannot let it run again, even on a clock set back later. An
 * hour goes SBX_GRANT_PRUNE_SLACK after its end, so a clock stepped ahead
 * by less than that and set right again refuses no grant still valid. */
#include "grant.h"
#include "cmdpath.h"
#include "digest.h"
#include "die.h"
#include "exitcodes.h"
#include "fd.h"
#include "parse.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXPIRING "expiring"
#define MARK "pruned"
#define MARK_NEW "pruned.new"
#define HOUR SBX_GRANT_NONCE_HOUR

static uint64_t hour_of(uint64_t t)
{
	return t - t % HOUR;
}

/* What failed, for the caller's message (errno kept): -1. */
static int bad(struct sbx_grant_prune *out, const char *what)
{
	int e = errno;

	snprintf(out->bad, sizeof out->bad, "%.*s", (int)sizeof out->bad - 1, what);
	errno = e;
	return -1;
}

/* A record's name: 64 lower-case hex digits. */
static int nonce_name(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++)
		if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
			return 0;
	return n == 2 * SBX_GRANT_NONCE;
}

/* Decimal digits then "\n", all of s, no overflow, no leading zero. */
static int dec_line(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;

	if (*p == '0' && p[1] != '\n')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (p == s || strcmp(p, "\n"))
		return -1;
	*out = v;
	return 0;
}

/* One small file of one line: its text in buf, or -1 (errno; EINVAL: not
 * a regular file of one line). */
static int read_line(int fd, char *buf, size_t cap)
{
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) < 0)
		return -1;
	if (!S_ISREG(st.st_mode) || st.st_size <= 0 || (size_t)st.st_size >= cap) {
		errno = EINVAL;
		return -1;
	}
	n = pread(fd, buf, cap - 1, 0);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	if (n != st.st_size || buf[n - 1] != '\n' || memchr(buf, '\n', (size_t)n) != buf + n - 1 ||
	    memchr(buf, '\0', (size_t)n)) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/* The expiry a record names: 1 and *t, 0 never, -1 unknown. */
static int record_expiry(int fd, uint64_t *t)
{
	char buf[128];
	unsigned long long used;
	long pid;
	int off = -1;

	if (read_line(fd, buf, sizeof buf) < 0 ||
	    sscanf(buf, "used %llu pid %ld expires %n", &used, &pid, &off) != 2 || off < 0)
		return -1;
	if (!strcmp(buf + off, "never\n"))
		return 0;
	return dec_line(buf + off, t) == 0 && *t ? 1 : -1;
}

static int mark_read(int efd, uint64_t *mark)
{
	char buf[64];
	int fd = openat(efd, MARK, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), rc;

	*mark = 0;
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	rc = read_line(fd, buf, sizeof buf);
	close(fd);
	if (rc < 0)
		return -1;
	if (strncmp(buf, MARK " ", sizeof MARK) || dec_line(buf + sizeof MARK, mark) < 0) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

int sbx_grant_nonce_pruned(int dirfd, uint64_t *mark)
{
	int efd = openat(dirfd, EXPIRING, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), rc;

	*mark = 0;
	if (efd < 0)
		return errno == ENOENT ? 0 : -1;
	rc = mark_read(efd, mark);
	close(efd);
	return rc;
}

/* The second link, in the hour's directory (made when missing: a prune
 * that found it empty may remove it meanwhile, then again). Only a cost
 * when it cannot be made: the record stays until sbx-check grant --prune
 * reads it. */
static void index_add(int dirfd, const char *name, uint64_t expires)
{
	char h[24];

	snprintf(h, sizeof h, "%llu", (unsigned long long)hour_of(expires));
	for (int tries = 0; tries < 4; tries++) {
		int efd, bfd = -1, rc = -1, e;

		if (mkdirat(dirfd, EXPIRING, 0700) < 0 && errno != EEXIST)
			return;
		efd = openat(dirfd, EXPIRING, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (efd < 0)
			return;
		if (mkdirat(efd, h, 0700) == 0 || errno == EEXIST)
			bfd = openat(efd, h, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (bfd >= 0)
			rc = linkat(dirfd, name, bfd, name, 0);
		e = bfd >= 0 ? errno : ENOENT;
		if (bfd >= 0)
			close(bfd);
		close(efd);
		if (rc == 0 || e != ENOENT)
			return;
	}
}

int sbx_grant_nonce_put(int dirfd, const unsigned char nonce[SBX_GRANT_NONCE], uint64_t expires, uint64_t now)
{
	char name[2 * SBX_GRANT_NONCE + 1], line[96], exp[24];
	int fd, n, e;

	sbx_digest_hex(nonce, SBX_GRANT_NONCE, name);
	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno == EEXIST ? 1 : -1;
	if (expires)
		snprintf(exp, sizeof exp, "%llu", (unsigned long long)expires);
	else
		snprintf(exp, sizeof exp, "never");
	n = snprintf(line, sizeof line, "used %llu pid %ld expires %s\n", (unsigned long long)now,
		     (long)getpid(), exp);
	if (sbx_write_all(fd, line, (size_t)n) < 0 || fsync(fd) < 0) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	if (close(fd) < 0 || fsync(dirfd) < 0)
		return -1;
	if (expires)
		index_add(dirfd, name, expires);
	return 0;
}

/* M raised to at least want (never lowered), durable before any record
 * goes. */
static int mark_raise(int efd, uint64_t want, uint64_t *mark, struct sbx_grant_prune *out)
{
	char line[48];
	int lk, fd, n, rc = -1;

	if (mark_read(efd, mark) < 0)
		return bad(out, EXPIRING "/" MARK);
	if (*mark >= want)
		return 0;
	lk = openat(efd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lk < 0 || flock(lk, LOCK_EX) < 0)
		goto out;
	if (mark_read(efd, mark) < 0)
		goto out;
	if (*mark >= want) {
		rc = 0;
		goto out;
	}
	fd = openat(efd, MARK_NEW, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		goto out;
	n = snprintf(line, sizeof line, MARK " %llu\n", (unsigned long long)want);
	if (sbx_write_all(fd, line, (size_t)n) < 0 || fsync(fd) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		goto out;
	}
	if (close(fd) < 0 || renameat(efd, MARK_NEW, efd, MARK) < 0 || fsync(efd) < 0)
		goto out;
	*mark = want;
	rc = 0;
out:
	if (rc < 0)
		bad(out, EXPIRING "/" MARK);
	if (lk >= 0) {
		int e = errno;
		close(lk); /* and the lock with it */
		errno = e;
	}
	return rc;
}

/* One entry of hour h's directory: its record goes if it is that very
 * file (same inode) and says it expires in h, up to the mark. */
static int prune_one(int dirfd, int bfd, const char *name, uint64_t h, uint64_t mark,
		     struct sbx_grant_prune *out)
{
	struct stat li, st;
	uint64_t t;
	int fd, ok;

	if (fstatat(bfd, name, &li, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno != ENOENT)
		return bad(out, name);
	if (fd >= 0) {
		ok = fstat(fd, &st) == 0 && st.st_dev == li.st_dev && st.st_ino == li.st_ino &&
		     record_expiry(fd, &t) == 1 && hour_of(t) == h && t <= mark;
		close(fd);
		if (!ok)
			out->unknown++; /* kept, and no longer indexed */
		else if (unlinkat(dirfd, name, 0) == 0)
			out->removed++;
		else if (errno != ENOENT)
			return bad(out, name);
	}
	if (unlinkat(bfd, name, 0) < 0 && errno != ENOENT)
		return bad(out, name);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The hours in DIR/expiring that may go (their end at most top), sorted. */
static uint64_t *hours_due(int efd, uint64_t top, size_t *n)
{
	int fd = openat(efd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	uint64_t *v = NULL, h;
	size_t cap = 0;
	struct dirent *e;
	char line[32];
	DIR *d;

	*n = 0;
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while ((e = readdir(d))) {
		if (strlen(e->d_name) > 20)
			continue;
		snprintf(line, sizeof line, "%s\n", e->d_name);
		if (dec_line(line, &h) < 0 || h % HOUR || h + HOUR - 1 > top)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			v = sbx_need(realloc(v, cap * sizeof *v));
		}
		v[(*n)++] = h;
	}
	closedir(d);
	qsort(v, *n, sizeof *v, cmp_u64);
	return v;
}

/* Every record at the top of DIR (sbx-check grant --prune): the ones the
 * index missed (a verifier killed between the two links) go by what they
 * say; the rest are counted. */
static int prune_scan(int dirfd, int efd, uint64_t mark, struct sbx_grant_prune *out)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), rfd, rc = 0;
	struct dirent *e;
	char idx[64];
	uint64_t t;
	DIR *d;

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return bad(out, ".");
	}
	while ((e = readdir(d))) {
		int k, bfd;

		if (!nonce_name(e->d_name))
			continue;
		rfd = openat(dirfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (rfd < 0) {
			if (errno == ENOENT)
				continue;
			k = -1;
		} else {
			k = record_expiry(rfd, &t);
			close(rfd);
		}
		if (k < 0) {
			out->unknown++;
		} else if (!k) {
			out->never++;
		} else if (t > mark) {
			out->live++;
		} else if (unlinkat(dirfd, e->d_name, 0) == 0 || errno == ENOENT) {
			out->removed++;
			snprintf(idx, sizeof idx, "%llu", (unsigned long long)hour_of(t));
			bfd = openat(efd, idx, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (bfd >= 0) {
				unlinkat(bfd, e->d_name, 0);
				unlinkat(efd, idx, AT_REMOVEDIR);
				close(bfd);
			}
		} else {
			rc = bad(out, e->d_name);
			break;
		}
	}
	closedir(d);
	return rc;
}

int sbx_grant_nonce_prune(int dirfd, uint64_t now, uint64_t max, int all, struct sbx_grant_prune *out)
{
	uint64_t top, mark = 0, *hours, budget = max;
	size_t n;
	int efd, rc = 0;

	memset(out, 0, sizeof *out);
	if (now < SBX_GRANT_PRUNE_SLACK + HOUR)
		return 0;
	/* The end of the last hour that may go. */
	top = hour_of(now - SBX_GRANT_PRUNE_SLACK - HOUR) + HOUR - 1;
	out->upto = top;
	if (all && mkdirat(dirfd, EXPIRING, 0700) < 0 && errno != EEXIST)
		return bad(out, EXPIRING);
	efd = openat(dirfd, EXPIRING, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (efd < 0)
		return errno == ENOENT && !all ? 0 : bad(out, EXPIRING);
	hours = hours_due(efd, top, &n);
	/* M at the end of the last hour that goes now (--prune: of the last
	 * that may, since it also removes what the index missed). */
	if ((n || all) && mark_raise(efd, all ? top : hours[n - 1] + HOUR - 1, &mark, out) < 0) {
		free(hours);
		close(efd);
		return -1;
	}
	for (size_t i = 0; i < n && budget && rc == 0; i++) {
		char h[24];
		struct dirent *e;
		int bfd, dfd, whole = 1;
		DIR *d;

		snprintf(h, sizeof h, "%llu", (unsigned long long)hours[i]);
		bfd = openat(efd, h, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (bfd < 0)
			continue;
		dfd = dup(bfd);
		if (dfd < 0 || !(d = fdopendir(dfd))) {
			if (dfd >= 0)
				close(dfd);
			close(bfd);
			continue;
		}
		while ((e = readdir(d))) {
			if (!nonce_name(e->d_name))
				continue;
			if (!budget) {
				whole = 0;
				break;
			}
			budget--;
			if ((rc = prune_one(dirfd, bfd, e->d_name, hours[i], mark, out)) < 0) {
				whole = 0;
				break;
			}
		}
		closedir(d);
		close(bfd);
		if (whole)
			unlinkat(efd, h, AT_REMOVEDIR); /* not empty: linked meanwhile */
	}
	free(hours);
	if (all && rc == 0)
		rc = prune_scan(dirfd, efd, mark, out);
	close(efd);
	return rc;
}

const char *sbx_grant_nonce_path(const char *opt, const char *arg)
{
	const char *why;

	sbx_opt_abspath(opt, arg);
	why = sbx_path_shape(arg, strlen(arg));
	if (!why && !strcmp(arg, "/"))
		why = "the whole file system";
	if (why)
		sbx_die_usage("%s: invalid path '%s': %s", opt, arg, why);
	return arg;
}

/* --grant-nonce-dir DIR, sbx-check grant --prune DIR: checked as every
 * trusted directory (lib/private.c does the same for a file). */
int sbx_grant_nonce_open(const char *dir, unsigned caller_uid)
{
	char *copy, *c, *next;
	struct stat st;
	int fd;

	copy = sbx_need(strdup(dir));
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open /");
	for (c = copy + 1; c && *c; c = next) {
		int last, nfd;

		next = strchr(c, '/');
		if (next)
			*next++ = '\0';
		last = !next || !*next;
		nfd = openat(fd, c, (last ? O_RDONLY : O_PATH) | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0 && (errno == ELOOP || (errno == ENOTDIR && fstatat(fd, c, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
						      S_ISLNK(st.st_mode))))
			sbx_die(SBX_EXIT_POLICY, "grant nonce directory %s is unsafe: %.*s is a symbolic link",
				dir, (int)(c - copy + strlen(c)), dir);
		if (nfd < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to open the grant nonce directory %s (at %.*s)", dir,
				      (int)(c - copy + strlen(c)), dir);
		close(fd);
		fd = nfd;
		if (fstat(fd, &st) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to stat the grant nonce directory %s", dir);
		if (st.st_uid != 0 && st.st_uid != caller_uid)
			sbx_die(SBX_EXIT_POLICY, "grant nonce directory %s is unsafe: %.*s is owned by uid %u "
				"(not root or the caller)", dir, (int)(c - copy + strlen(c)), dir,
				(unsigned)st.st_uid);
		if ((st.st_mode & 022) && (last || !(st.st_mode & S_ISVTX)))
			sbx_die(SBX_EXIT_POLICY, "grant nonce directory %s is unsafe: %.*s has mode %04o, "
				"writable by group or others: chmod go-w %.*s", dir, (int)(c - copy + strlen(c)),
				dir, (unsigned)(st.st_mode & 07777), (int)(c - copy + strlen(c)), dir);
	}
	free(copy);
	return fd;
}

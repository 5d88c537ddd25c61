/* Deny-write after the fact: a protected path that was missing at the
 * start and that the command created cannot be refused without a
 * placeholder in the workspace (a mount needs an existing mount point), so
 * sbx-ns creates nothing there and makes such a path inert before the run
 * is reported finished: the same walk as at the start (deny.c) finds every
 * protected path that is not the very object of the start set; each one
 * the command made is renamed to NAME.sbx-denied (NAME.sbx-denied-R, R 64
 * random bits, if taken), execute, set-user-ID and set-group-ID bits
 * cleared when it is a file with a single link, never deleted, and
 * reported (stderr, status "deny-write"). One that cannot be is reported
 * as live and fails the run.
 *
 * "The command made it": owned by the command's uid, changed (ctime: a
 * creation, a rename or a link sets it and nothing can set it back) no
 * earlier than the start of the run, and born (btime, where the
 * filesystem keeps it) no later than its end. Anything else is left as it
 * is and reported. A file created on the host by the same uid during the
 * run cannot be told apart: it is moved aside too (never deleted).
 */
#include "ns.h"

#include "die.h"
#include "exitcodes.h"
#include "json.h"
#include "quote.h"
#include "sys.h"
#include "walk.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000LL + t->tv_nsec;
}

/* Birth time through statx (lib/walk.h); -1 if unknown. */
int64_t ns_deny_btime(int fd)
{
	struct sbx_statx sx;

	memset(&sx, 0, sizeof sx);
	if (sbx_statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, SBX_STATX_BTIME, &sx) < 0 ||
	    !(sx.stx_mask & SBX_STATX_BTIME))
		return -1;
	return sx.stx_btime.tv_sec * 1000000000LL + sx.stx_btime.tv_nsec;
}

/* A killed run on another workspace (only --recover does that): each
 * line starts by saying so and which, its paths being relative to it. */
static const char *where(const struct deny_scope *s, char *out, size_t cap)
{
	size_t n;

	if (!s->other)
		return "";
	n = (size_t)snprintf(out, cap, "in another workspace, ");
	sbx_quote(out + n, cap - n, s->ws_path, strlen(s->ws_path), PATH_MAX, 0);
	n = strlen(out);
	snprintf(out + n, cap - n, ", ");
	return out;
}

static void report(const struct deny_scope *s, const char *rel, const char *to, int cleared,
		   const char *kept)
{
	char q[PATH_MAX * 4 + 8], qt[PATH_MAX * 4 + 8], in[PATH_MAX * 4 + 32];
	const char *w = where(s, in, sizeof in);
	struct sbx_json j;

	sbx_quote(q, sizeof q, rel, strlen(rel), PATH_MAX, 0);
	if (to) {
		sbx_quote(qt, sizeof qt, to, strlen(to), PATH_MAX, 0);
		sbx_warn("deny-write: %s%s created the protected path %s; moved it to %s%s", w,
			 s->earlier ? "an earlier run's command (killed)" : "the command", q, qt,
			 cleared ? " and cleared its execute bits" : "");
	} else {
		sbx_warn("deny-write: %sthe protected path %s appeared during a run but %s; left as it is",
			 w, q, kept);
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
	if (s->other)
		sbx_json_str(&j, "workspace", s->ws_path);
	sbx_json_write(&j, s->status_fd);
}

/* A protected path the end check could not make inert: it is live. */
static void report_failed(const struct deny_scope *s, const char *rel, const char *why, int cleared)
{
	char q[PATH_MAX * 4 + 8], qw[PATH_MAX * 4 + 8], in[PATH_MAX * 4 + 32];
	struct sbx_json j;

	sbx_quote(q, sizeof q, rel, strlen(rel), PATH_MAX, 0);
	sbx_quote(qw, sizeof qw, s->ws_path, strlen(s->ws_path), PATH_MAX, 0);
	sbx_warn("deny-write: %sunable to make the protected path %s inert (%s); it is live under its real "
		 "name: remove it before git runs in %s", where(s, in, sizeof in), q, why, qw);
	if (s->status_fd < 0)
		return;
	sbx_json_begin(&j, NS_PROG, "deny-write");
	sbx_json_str(&j, "path", rel);
	sbx_json_str(&j, "action", "failed");
	sbx_json_str(&j, "reason", why);
	if (cleared >= 0)
		sbx_json_bool(&j, "exec_cleared", cleared);
	sbx_json_bool(&j, "earlier_run", s->earlier);
	if (s->other)
		sbx_json_str(&j, "workspace", s->ws_path);
	sbx_json_write(&j, s->status_fd);
}

static int renameat2_(int dfd, const char *from, const char *to)
{
	return (int)syscall(SYS_renameat2, dfd, from, dfd, to, 1U /* RENAME_NOREPLACE */);
}

/* Rename name in dirfd to NAME.sbx-denied, or if that is taken to
 * NAME.sbx-denied-R with R 64 random bits (getrandom): a name the command
 * could not know, so it cannot have taken them all. Never over anything. */
static int move_aside(int dirfd, const char *name, char *to, size_t cap)
{
	int len = (int)strnlen(name, 200), rc;

	snprintf(to, cap, "%.*s.sbx-denied", len, name);
	rc = renameat2_(dirfd, name, to);
	for (int k = 0; k < 8 && rc < 0 && errno == EEXIST; k++) {
		unsigned long long r;
		if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
			return -1;
		snprintf(to, cap, "%.*s.sbx-denied-%016llx", len, name, r);
		rc = renameat2_(dirfd, name, to);
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
		if (fd >= 0 && fstat(fd, &st) == 0 && !sbx_deny_known(s->start, anc, &st) &&
		    !not_mine(s, &st, ns_deny_btime(fd))) {
			close(fd);
			return 1;
		}
		if (fd >= 0)
			close(fd);
		*p = '/';
	}
	return 0;
}

/* A remote's or a branch's name as git clone writes it: letters, digits
 * and . _ / -, not starting with '-' or '.'. */
static int ref_name(const char *s, size_t n)
{
	if (!n || n > 200 || s[0] == '-' || s[0] == '.')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || strchr("._/-", s[i])))
			return 0;
	return 1;
}

/* A remote URL that names a server, not a program: http(s), ssh or git
 * URLs, or ssh's scp form user@host:path. No "::" (TRANSPORT::address runs
 * git-remote-TRANSPORT), no local path (fetching runs git-upload-pack on a
 * repository the command may have made), no leading '-' (an option to
 * ssh), no space, quote, backslash or control byte. */
static int server_url(const char *v)
{
	static const char *const schemes[] = { "https://", "http://", "ssh://", "git://", NULL };
	const char *colon;

	if (!*v || *v == '-' || strstr(v, "::") || strpbrk(v, " \t\"\\;#"))
		return 0;
	for (const unsigned char *c = (const unsigned char *)v; *c; c++)
		if (*c < 0x21 || *c == 0x7f)
			return 0;
	for (const char *const *k = schemes; *k; k++)
		if (!strncmp(v, *k, strlen(*k)))
			return v[strlen(*k)] != '\0' && v[strlen(*k)] != '-';
	colon = strchr(v, ':');
	if (strstr(v, "://"))
		return 0; /* another scheme: file://, or a helper's */
	return colon && colon > v && !memchr(v, '/', (size_t)(colon - v)) && colon[1] != '\0';
}

/* One line of a section the command's git init or git clone wrote. */
static int inert_line(const char *sec, size_t seclen, const char *line)
{
	static const char *const core[] = {
		"\trepositoryformatversion = 0", "\tfilemode = true", "\tfilemode = false",
		"\tbare = false", "\tlogallrefupdates = true", "\tignorecase = true",
		"\tprecomposeunicode = true", "\tsymlinks = false", NULL
	};
	char fetch[512];

	if (!strcmp(sec, "[core]")) {
		for (const char *const *k = core; *k; k++)
			if (!strcmp(*k, line))
				return 1;
		return 0;
	}
	if (!strncmp(sec, "[remote \"", 9)) {
		snprintf(fetch, sizeof fetch, "\tfetch = +refs/heads/*:refs/remotes/%.*s/*",
			 (int)(seclen - 11), sec + 9);
		return (!strncmp(line, "\turl = ", 7) && server_url(line + 7)) || !strcmp(line, fetch);
	}
	if (!strncmp(sec, "[branch \"", 9)) {
		if (!strncmp(line, "\tremote = ", 10))
			return ref_name(line + 10, strlen(line + 10));
		if (!strncmp(line, "\tmerge = refs/heads/", 20))
			return ref_name(line + 20, strlen(line + 20));
	}
	return 0;
}

/* What `git init` and `git clone` write into a new .git/config, line by
 * line: [core] with the keys git init sets, [remote "N"] with a server
 * url and the default fetch refspec, [branch "N"] with remote and merge.
 * A config made only of these sets nothing that runs a program (no
 * hooksPath, fsmonitor, sshCommand, uploadpack, filter, include, alias),
 * so it is left in place and the repository works on the host. Exact
 * lines, nothing else parsed: another key, a comment, a continuation, a
 * key outside a section is moved aside. */
static int git_init_config(int pfd, const char *rel, const char *name, const struct stat *st)
{
	char buf[4096], *line, *save = NULL;
	const char *sec = NULL;
	size_t seclen = 0;
	struct stat now;
	ssize_t n;
	int fd;

	size_t rl = strlen(rel);

	/* A config directly in a ".git" directory, at any depth. */
	if (rl < 11 || strcmp(rel + rl - 11, ".git/config") || (rl > 11 && rel[rl - 12] != '/') ||
	    strcmp(name, "config") || !S_ISREG(st->st_mode) ||
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
		size_t len = strlen(line);
		if (line[0] == '[') {
			int quoted = (!strncmp(line, "[remote \"", 9) || !strncmp(line, "[branch \"", 9)) &&
				     len > 11 && !strcmp(line + len - 2, "\"]") && ref_name(line + 9, len - 11);
			if (!quoted && strcmp(line, "[core]"))
				return 0;
			sec = line;
			seclen = len;
		} else if (!sec || !inert_line(sec, seclen, line)) {
			return 0;
		}
	}
	return 1;
}

/* Make one new protected path inert, if the command made it. */
/* 0, or -1 if it stays live under its name. */
static int inert(const struct deny_scope *s, const char *rel)
{
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	char parent[PATH_MAX], to[PATH_MAX], torel[2 * PATH_MAX + 2], proc[40], *slash;
	const char *name;
	struct stat st, now, pst;
	int pfd, fd, cleared = 0, rc = -1, e, ret = 0;
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
		return 0; /* gone or replaced meanwhile: nothing at this path to act on */
	fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		close(pfd);
		return 0;
	}
	why = not_mine(s, &st, ns_deny_btime(fd));
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
	    (!not_mine(s, &pst, ns_deny_btime(pfd)) || new_ancestor(s, rel))) {
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
		char reason[128];
		snprintf(reason, sizeof reason, "rename: %s", strerror(errno));
		/* Still at its name: at least not executable. */
		if (S_ISREG(st.st_mode) && st.st_nlink == 1 && (st.st_mode & 07111)) {
			snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
			cleared = chmod(proc, st.st_mode & 0666) == 0;
		}
		report_failed(s, rel, reason, S_ISREG(st.st_mode) ? cleared : -1);
		ret = -1;
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
	return ret;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Walk again, compare with the start set, act on what is new, in path
 * order. Returns how many protected paths stay live (or could not be
 * looked at). */
int ns_deny_check(const struct deny_scope *s, const char *const *globs, size_t n,
		 const struct deny_list *start, const struct deny_tree *tree, struct deny_tree *keep)
{
	struct deny_walk w = { .check = 1, .start = start, .ws_path = s->ws_path, .tree_in = tree };
	struct deny_scope sc = *s;
	int failed = 0;

	sc.start = start;
	s = &sc;

	sbx_deny_walk(&w, s->wsfd, globs, n);
	qsort(w.cand, w.ncand, sizeof *w.cand, cmp_str);
	for (size_t i = 0; i < w.ncand; i++) {
		if (i == 0 || strcmp(w.cand[i], w.cand[i - 1]))
			failed += inert(s, w.cand[i]) < 0;
	}
	for (size_t i = 0; i < w.ncand; i++)
		free(w.cand[i]);
	free(w.cand);
	for (size_t i = 0; i < w.nfail; i++) {
		report_failed(s, w.fail[i], w.fail[i] + strlen(w.fail[i]) + 1, -1);
		free(w.fail[i]);
		failed++;
	}
	free(w.fail);
	sbx_deny_restore(&w);
	if (keep && !failed)
		*keep = w.tree_out;
	else
		sbx_deny_tree_free(&w.tree_out);
	return failed;
}


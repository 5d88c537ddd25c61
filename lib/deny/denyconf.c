/* Deny-write's git rule, the configuration side: what a protected config
 * makes git read or run from the workspace. The files it includes
 * (include.path, includeIf.*.path), the directory its core.hooksPath
 * names, and every file a word of one of its values names by a path (git
 * runs commands from configuration in the working tree: fsmonitor, pager,
 * editor, filters, credential helpers, aliases, drivers...). What the
 * caller's global and the system configuration name by a relative path
 * counts in every repository. At the start what exists is bound read-only
 * (a symlink on the way refuses the run); at the end what the command
 * made is a candidate to be made inert (sbx-ns: denyinert.c). */
#include "deny.h"

#include "die.h"
#include "exitcodes.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONFIG_MAX (1 << 20)       /* bytes of a config read */
#define INCLUDE_DEPTH 10           /* git's own limit */

struct gw {
	struct deny_walk *w;
	int wsfd;
};

static const char *type_name(mode_t m)
{
	return S_ISLNK(m) ? "a symlink" : S_ISFIFO(m) ? "a fifo" : S_ISSOCK(m) ? "a socket" :
	       S_ISCHR(m) || S_ISBLK(m) ? "a device" : S_ISDIR(m) ? "a directory" : "not a regular file";
}

static void cannot(struct deny_walk *w, const char *rel, const char *why)
{
	sbx_deny_failed(w, *rel ? rel : ".", why);
}

/* Lexically: dir/v, "." and ".." resolved; -1 if it leaves the workspace. */
static int normalize(char *out, const char *dir, const char *v)
{
	char buf[2 * PATH_MAX + 2], *save = NULL, *c;
	size_t n = 0;

	if ((size_t)snprintf(buf, sizeof buf, "%s/%s", dir, v) >= sizeof buf)
		return -1;
	out[0] = '\0';
	for (c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, "."))
			continue;
		if (!strcmp(c, "..")) {
			char *s;
			if (!n)
				return -1;
			s = strrchr(out, '/');
			n = s ? (size_t)(s - out) : 0;
			out[n] = '\0';
			continue;
		}
		if (n + strlen(c) + 2 >= PATH_MAX)
			return -1;
		if (n)
			out[n++] = '/';
		strcpy(out + n, c);
		n += strlen(c);
	}
	return n ? 0 : -1;
}

/* An include's value as git reads it: quotes and escapes, comments. */
static void config_value(const char *s, char *out, size_t cap)
{
	size_t n = 0;
	int q = 0;

	while (*s == ' ' || *s == '\t')
		s++;
	for (; *s && n + 1 < cap; s++) {
		if (*s == '"') {
			q = !q;
		} else if (*s == '\\' && s[1]) {
			s++;
			out[n++] = *s == 't' ? '\t' : *s == 'n' ? '\n' : *s;
		} else if (!q && (*s == '#' || *s == ';')) {
			break;
		} else {
			out[n++] = *s;
		}
	}
	while (n && (out[n - 1] == ' ' || out[n - 1] == '\t'))
		n--;
	out[n] = '\0';
}

static void include_target(struct gw *g, const char *cfgrel, const char *gitdir, const char *v, int depth);
static void hooks_target(struct gw *g, const char *gitdir, const char *v);
static void program_words(struct gw *g, const char *gitdir, const char *v);

/* Every include.path, includeIf.*.path and core.hooksPath of one config
 * file of the git directory gitdir. */
static void includes(struct gw *g, int fd, const char *cfgrel, const char *gitdir, int depth)
{
	char *buf, *line, *save = NULL, sect[64] = "";
	struct stat st;
	ssize_t n;

	if (depth > INCLUDE_DEPTH || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	if (st.st_size > CONFIG_MAX) {
		if (!cfgrel)
			return; /* the caller's own: not ours to refuse for */
		if (!g->w->check)
			sbx_die(SBX_EXIT_POLICY, "unable to protect the files %s includes: larger than %d bytes",
				cfgrel, CONFIG_MAX);
		cannot(g->w, cfgrel, "a config larger than 1 MiB");
		return;
	}
	buf = sbx_need(malloc((size_t)st.st_size + 1));
	n = pread(fd, buf, (size_t)st.st_size, 0);
	buf[n > 0 ? n : 0] = '\0';
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *s = line, key[16], val[PATH_MAX];
		size_t k = 0;
		int inc, hp;

		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == '[') {
			size_t m = 0;
			for (s++; *s && *s != ']' && *s != ' ' && *s != '\t' && *s != '"' && *s != '.'; s++)
				if (m + 1 < sizeof sect)
					sect[m++] = *s;
			sect[m] = '\0';
			s = strchr(s, ']');
			if (!s)
				continue;
			s++;
			while (*s == ' ' || *s == '\t')
				s++;
		}
		inc = !strcasecmp(sect, "include") || !strcasecmp(sect, "includeif");
		while ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '-' || (*s >= '0' && *s <= '9'))
			if (k + 1 < sizeof key)
				key[k++] = *s++;
			else
				s++;
		key[k] = '\0';
		hp = !inc && !strcasecmp(sect, "core") && !strcasecmp(key, "hookspath");
		if (inc && strcasecmp(key, "path"))
			continue;
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s != '=')
			continue;
		config_value(s + 1, val, sizeof val);
		if (!*val)
			continue;
		if (hp)
			hooks_target(g, gitdir, val);
		else if (inc && cfgrel)
			include_target(g, cfgrel, gitdir, val, depth);
		else if (!inc)
			program_words(g, gitdir, val);
	}
	free(buf);
}

/* The first component of rel that is not a directory one can pass. */
static void first_link(int wsfd, const char *rel, char *out)
{
	char p[PATH_MAX], *s;
	struct stat st;

	snprintf(p, sizeof p, "%s", rel);
	for (s = p;; s++) {
		s = strchr(s, '/');
		if (s)
			*s = '\0';
		if (fstatat(wsfd, p, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) || !s)
			break;
		*s = '/';
	}
	snprintf(out, PATH_MAX, "%s", p);
}

/* v as git resolves it from directory dir (relative to the workspace),
 * into rel; -1 if that is outside the workspace. */
static int resolve(struct gw *g, const char *dir, const char *v, char *rel)
{
	const char *ws = g->w->ws_path, *home = getenv("HOME");
	char abs[2 * PATH_MAX + 2];
	size_t wl = strlen(ws);

	if (!strncmp(v, "~/", 2) || v[0] == '/') {
		if (v[0] == '~') {
			if (!home || home[0] != '/')
				return -1;
			snprintf(abs, sizeof abs, "%s/%s", home, v + 2);
		} else {
			snprintf(abs, sizeof abs, "%s", v);
		}
		if (strncmp(abs, ws, wl) || (abs[wl] != '/' && abs[wl] != '\0'))
			return -1; /* outside the workspace: out of the command's reach */
		return normalize(rel, "", abs + wl);
	}
	if (!strncmp(v, "%(prefix)/", 10))
		return -1;
	return normalize(rel, dir, v);
}

/* rel opened without following anything: O_PATH, so that nothing (a
 * fifo, a device) is opened for real; -1 and errno if it cannot be. */
static int open_beneath(struct gw *g, const char *rel)
{
	return sbx_openat2(g->wsfd, rel, O_PATH | O_NOFOLLOW | O_CLOEXEC,
			   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV);
}

/* A target with a symlink on its path: refused at the start; at the end
 * the first link, the command's doing, is what git would follow. */
static void linked_target(struct gw *g, const char *rel, const char *by)
{
	char first[PATH_MAX];
	struct stat st;

	if (!g->w->check)
		sbx_die(SBX_EXIT_POLICY, "unable to protect %s in the workspace (named by %s): a symlink on its path",
			rel, by);
	first_link(g->wsfd, rel, first);
	if (fstatat(g->wsfd, first, &st, AT_SYMLINK_NOFOLLOW) == 0 && !sbx_deny_known(g->w->start, first, &st))
		sbx_deny_candidate(g->w, first);
}

static void include_target(struct gw *g, const char *cfgrel, const char *gitdir, const char *v, int depth)
{
	struct deny_walk *w = g->w;
	char dir[PATH_MAX], rel[PATH_MAX], proc[40], *s;
	struct stat st, st2;
	int pfd, fd;

	snprintf(dir, sizeof dir, "%s", cfgrel);
	s = strrchr(dir, '/');
	if (s)
		*s = '\0';
	else
		dir[0] = '\0';
	if (resolve(g, dir, v, rel) < 0)
		return;
	pfd = open_beneath(g, rel);
	if (pfd < 0 && (errno == ENOENT || errno == ENOTDIR))
		return; /* nothing to bind; created later, the end check sees it */
	if (pfd < 0 && errno == ELOOP) {
		linked_target(g, rel, cfgrel);
		return;
	}
	if (pfd < 0 || fstat(pfd, &st) < 0) {
		if (!w->check)
			sbx_die_errno(SBX_EXIT_SYS, "unable to open %s in the workspace (included by %s)", rel, cfgrel);
		cannot(w, rel, strerror(errno));
		if (pfd >= 0)
			close(pfd);
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		close(pfd);
		return; /* git includes only files */
	}
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", pfd);
	fd = open(proc, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	close(pfd);
	if (fd < 0 || fstat(fd, &st2) < 0 || st2.st_ino != st.st_ino || st2.st_dev != st.st_dev) {
		if (!w->check)
			sbx_die_errno(SBX_EXIT_SYS, "unable to read %s in the workspace (included by %s)", rel, cfgrel);
		cannot(w, rel, "unreadable");
		if (fd >= 0)
			close(fd);
		return;
	}
	if (!w->check) {
		if (st.st_nlink > 1)
			sbx_die(SBX_EXIT_POLICY, "unable to protect %s in the workspace: it has %lu hard links",
				rel, (unsigned long)st.st_nlink);
		if (!sbx_deny_covered(&w->found, rel))
			sbx_deny_push(&w->found, DENY_PROTECT, rel, st.st_dev, st.st_ino);
		includes(g, fd, rel, gitdir, depth + 1);
	} else if (sbx_deny_known(w->start, rel, &st)) {
		includes(g, fd, rel, gitdir, depth + 1);
	} else {
		sbx_deny_candidate(w, rel);
	}
	close(fd);
}

/* The directory git runs commands in and takes hooksPath from: the
 * working tree (the directory holding a ".git"), else the git directory. */
static void work_dir(const char *gitdir, char *dir)
{
	const char *base = strrchr(gitdir, '/');
	char *s;

	snprintf(dir, PATH_MAX, "%s", gitdir);
	if (!strcmp(base ? base + 1 : gitdir, ".git")) {
		s = strrchr(dir, '/');
		if (s)
			*s = '\0';
		else
			dir[0] = '\0';
	}
}

/* A file a config value names by a path (a word holding a '/'): git runs
 * commands from configuration (fsmonitor, pager, editor, filters,
 * credential helpers, aliases, diff and merge drivers...) in the working
 * tree, so one that lies in the workspace is protected like a hook. Any
 * key: a list of those that run programs would miss the next one. */
static void program_target(struct gw *g, const char *gitdir, const char *v)
{
	struct deny_walk *w = g->w;
	char dir[PATH_MAX], rel[PATH_MAX];
	struct stat st;
	int fd;

	work_dir(gitdir, dir);
	if (resolve(g, dir, v, rel) < 0)
		return;
	fd = open_beneath(g, rel);
	if (fd < 0 && errno == ELOOP) {
		linked_target(g, rel, "a protected config");
		return;
	}
	if (fd < 0)
		return; /* missing (the end check sees it if made), or no file */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		if (!w->check) {
			if (st.st_nlink > 1)
				sbx_die(SBX_EXIT_POLICY, "unable to protect %s in the workspace (named by a "
					"protected config): it has %lu hard links", rel, (unsigned long)st.st_nlink);
			if (!sbx_deny_covered(&w->found, rel))
				sbx_deny_push(&w->found, DENY_PROTECT, rel, st.st_dev, st.st_ino);
		} else if (!sbx_deny_known(w->start, rel, &st) && !sbx_deny_covered(w->start, rel)) {
			sbx_deny_candidate(w, rel);
		}
	}
	close(fd);
}

static void program_words(struct gw *g, const char *gitdir, const char *v)
{
	char buf[PATH_MAX], *word, *save = NULL;

	snprintf(buf, sizeof buf, "%s", v);
	for (word = strtok_r(buf, " \t'\"", &save); word; word = strtok_r(NULL, " \t'\"", &save)) {
		while (*word == '!')
			word++;
		/* Options, assignments, URLs and refspecs name no file here. */
		if (!strchr(word, '/') || *word == '-' || *word == '+' || strchr(word, '=') || strchr(word, ':'))
			continue;
		program_target(g, gitdir, word);
	}
}

/* core.hooksPath: a relative one is taken from the working tree. */
static void hooks_target(struct gw *g, const char *gitdir, const char *v)
{
	struct deny_walk *w = g->w;
	char dir[PATH_MAX], rel[PATH_MAX];
	struct stat st;
	int fd;

	work_dir(gitdir, dir);
	if (resolve(g, dir, v, rel) < 0) {
		if (strcmp(v, ".") && strcmp(v, "./"))
			return;
		snprintf(rel, sizeof rel, "%s", dir); /* the working tree itself */
		if (!*rel)
			snprintf(rel, sizeof rel, ".");
	}
	fd = !strcmp(rel, ".") ? fcntl(g->wsfd, F_DUPFD_CLOEXEC, 3) : open_beneath(g, rel);
	if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
		return;
	if (fd < 0 && errno == ELOOP) {
		linked_target(g, rel, "core.hooksPath");
		return;
	}
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (!w->check)
			sbx_die_errno(SBX_EXIT_SYS, "unable to open %s in the workspace (core.hooksPath)", rel);
		cannot(w, rel, strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	if (!w->check) {
		if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
			sbx_die(SBX_EXIT_POLICY, "unable to protect %s in the workspace (core.hooksPath): it is %s",
				rel, type_name(st.st_mode));
		if (S_ISREG(st.st_mode) && st.st_nlink > 1)
			sbx_die(SBX_EXIT_POLICY, "unable to protect %s in the workspace: it has %lu hard links",
				rel, (unsigned long)st.st_nlink);
		if (!sbx_deny_covered(&w->found, rel))
			sbx_deny_push(&w->found, DENY_PROTECT, rel, st.st_dev, st.st_ino);
	} else if (!sbx_deny_known(w->start, rel, &st) && !sbx_deny_covered(w->start, rel)) {
		if (S_ISDIR(st.st_mode))
			sbx_deny_new_tree(w, fd, rel, 0);
		else
			sbx_deny_candidate(w, rel);
	}
	close(fd);
}


void sbx_git_config(struct deny_walk *w, int wsfd, int fd, const char *cfgrel, const char *gitdir)
{
	struct gw g = { .w = w, .wsfd = wsfd };

	includes(&g, fd, cfgrel, gitdir, 0);
}

/* The caller's global and the system configuration: what they name by a
 * relative path (core.hooksPath = .githooks, an alias running ./x) is
 * taken from every repository's working tree. Includes of theirs lie
 * outside the workspace and are not followed. */
void sbx_git_global(struct deny_walk *w, int wsfd, const char *gitdir)
{
	struct gw gg = { .w = w, .wsfd = wsfd }, *g = &gg;
	const char *home = getenv("HOME"), *xdg = getenv("XDG_CONFIG_HOME");
	char path[3][PATH_MAX];
	int n = 0;

	snprintf(path[n++], PATH_MAX, "/etc/gitconfig");
	if (xdg && xdg[0] == '/')
		snprintf(path[n++], PATH_MAX, "%s/git/config", xdg);
	else if (home && home[0] == '/')
		snprintf(path[n++], PATH_MAX, "%s/.config/git/config", home);
	if (home && home[0] == '/')
		snprintf(path[n++], PATH_MAX, "%s/.gitconfig", home);
	for (int i = 0; i < n; i++) {
		int fd = open(path[i], O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd < 0)
			continue;
		includes(g, fd, NULL, gitdir, 0);
		close(fd);
	}
}

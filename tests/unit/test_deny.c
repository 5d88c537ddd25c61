/* lib/deny: sbx_deny_scan's exact list for a tree with a git repository
 * (hooks, a config with include.path, core.hooksPath and a program), a
 * bare repository found by its shape, and .env; the same over a read-only
 * overlay mounted in a user namespace (as another tool scans a change set
 * over its workspace); a symlink where a protected path is, refused. */
#include "unit.h"
#include "deny.h"
#include "exitcodes.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/magic.h>

static int put(int dirfd, const char *rel, const char *text)
{
	int fd = openat(dirfd, rel, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
	size_t n = strlen(text);

	if (fd < 0)
		return -1;
	if (write(fd, text, n) != (ssize_t)n) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static int dirs(int dirfd, const char *const *rel)
{
	for (; *rel; rel++)
		if (mkdirat(dirfd, *rel, 0755) < 0)
			return -1;
	return 0;
}

/* The tree, at path (made); 0 or -1. */
static int plant(const char *path)
{
	static const char *const d[] = { ".git", ".git/objects", ".git/refs", ".git/hooks", ".githooks", "conf",
					 "src", "tools", "sub", "sub/repo", "sub/repo/objects", "sub/repo/refs",
					 "sub/repo/hooks", NULL };
	char cfg[1024];
	int fd, rc;

	if (mkdir(path, 0755) < 0 || (fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -1;
	snprintf(cfg, sizeof cfg,
		 "[core]\n\thooksPath = .githooks\n\tfsmonitor = ./tools/monitor\n"
		 "[include]\n\tpath = ../conf/extra.cfg\n\tpath = %s/conf/abs.cfg\n", path);
	rc = dirs(fd, d) || put(fd, ".env", "KEY=1\n") || put(fd, ".git/HEAD", "ref: refs/heads/main\n") ||
	     put(fd, ".git/config", cfg) || put(fd, ".git/hooks/pre-commit", "#!/bin/sh\n") ||
	     put(fd, ".git/hooks/pre-commit.sample", "#!/bin/sh\n") || put(fd, "conf/extra.cfg", "[user]\n") ||
	     put(fd, "conf/abs.cfg", "[user]\n") || put(fd, "conf/other.cfg", "") ||
	     put(fd, "tools/monitor", "#!/bin/sh\n") || put(fd, "tools/lint", "") ||
	     put(fd, "src/main.c", "int main;\n") || put(fd, "sub/repo/HEAD", "ref: refs/heads/main\n") ||
	     put(fd, "sub/repo/config", "[core]\n\tbare = true\n") ||
	     put(fd, "sub/repo/hooks/post-update", "#!/bin/sh\n") ? -1 : 0;
	close(fd);
	return rc;
}

static const char *const want[] = {
	".env", ".git/config", ".git/hooks", ".githooks", "conf/abs.cfg", "conf/extra.cfg", "sub/repo/config",
	"sub/repo/hooks", "tools/monitor", NULL
};

/* What another tool's change set adds over the tree: an .env.local, a
 * second bare repository by shape. */
static const char *const want_overlay[] = {
	".env", ".env.local", ".git/config", ".git/hooks", ".githooks", "conf/abs.cfg", "conf/extra.cfg",
	"sub/repo/config", "sub/repo/hooks", "tools/monitor", "vendor/x/config", NULL
};

/* The list l against want; what differs, on stderr. */
static int same(const struct deny_list *l, const char *const *w)
{
	size_t i = 0;
	int ok = 1;

	for (; w[i] && i < l->n; i++) {
		if (strcmp(l->v[i].rel, w[i])) {
			fprintf(stderr, "  entry %zu: \"%s\", expected \"%s\"\n", i, l->v[i].rel, w[i]);
			ok = 0;
		}
		if (l->v[i].kind != DENY_PROTECT) {
			fprintf(stderr, "  entry %zu: kind %d\n", i, (int)l->v[i].kind);
			ok = 0;
		}
	}
	if (w[i] || i != l->n) {
		fprintf(stderr, "  %zu entries, expected %zu\n", l->n, i + (size_t)(w[i] ? 1 : 0));
		for (size_t k = 0; k < l->n; k++)
			fprintf(stderr, "    %s\n", l->v[k].rel);
		ok = 0;
	}
	return ok;
}

static void rmtree(const char *dir)
{
	char cmd[256];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "  cannot remove %s\n", dir);
}

/* The caller's own git configuration counts in every repository: none here. */
static void own_home(const char *dir)
{
	setenv("HOME", dir, 1);
	unsetenv("XDG_CONFIG_HOME");
}

struct scan_arg {
	const char *root, *path;  /* scanned at root; path: as its configs name it */
	const char *home;
	const char *const *want;
};

static void scan_child(void *arg)
{
	const struct scan_arg *s = arg;
	struct deny_list l;
	size_t n;
	const char *const *g = sbx_deny_default_globs(&n);
	int fd = open(s->root, O_PATH | O_DIRECTORY | O_CLOEXEC);

	own_home(s->home);
	if (fd < 0) {
		fprintf(stderr, "  cannot open %s: %s\n", s->root, strerror(errno));
		_exit(1);
	}
	sbx_deny_scan(fd, s->path, g, n, &l);
	if (!same(&l, s->want))
		_exit(1);
	sbx_deny_list_free(&l);
	if (l.v || l.n)
		_exit(1);
	_exit(0);
}

TEST(deny_scan_lists_the_rule_sorted)
{
	char dir[] = "/tmp/sbx-unit-deny.XXXXXX", ws[64], err[4096];
	struct scan_arg s = { .root = ws, .path = ws, .home = dir, .want = want };

	CHECK(mkdtemp(dir) != NULL);
	snprintf(ws, sizeof ws, "%s/ws", dir);
	CHECK(plant(ws) == 0);
	int rc = unit_capture(scan_child, &s, err, sizeof err);
	CHECK(rc == 0);
	if (rc)
		fprintf(stderr, "%s", err);
	rmtree(dir);
}

TEST(deny_scan_default_globs_are_the_policys)
{
	size_t n;
	const char *const *g = sbx_deny_default_globs(&n);

	CHECK(n == 8);
	CHECK_STR(g[0], ".env");
	CHECK_STR(g[2], ".git/config");
	CHECK(g[n] == NULL);
}

static void symlink_child(void *arg)
{
	struct deny_list l;
	size_t n;
	const char *const *g = sbx_deny_default_globs(&n);
	int fd = open(arg, O_PATH | O_DIRECTORY | O_CLOEXEC);

	sbx_deny_scan(fd, arg, g, n, &l);
}

TEST(deny_scan_refuses_a_symlink_it_would_protect)
{
	char dir[] = "/tmp/sbx-unit-deny.XXXXXX", ws[64], env[80], err[4096];

	CHECK(mkdtemp(dir) != NULL);
	snprintf(ws, sizeof ws, "%s/ws", dir);
	snprintf(env, sizeof env, "%s/.env", ws);
	CHECK(mkdir(ws, 0755) == 0 && symlink("/etc/passwd", env) == 0);
	CHECK(unit_capture(symlink_child, ws, err, sizeof err) == SBX_EXIT_POLICY);
	CHECK(strstr(err, ": fatal: unable to protect .env in the workspace: it is a symlink\n") != NULL);
	rmtree(dir);
}

static void invalid_child(void *arg)
{
	static const char *const g[] = { "../x" };
	struct deny_list l;
	int fd = open(arg, O_PATH | O_DIRECTORY | O_CLOEXEC);

	sbx_deny_scan(fd, arg, g, 1, &l);
}

TEST(deny_scan_refuses_an_invalid_glob)
{
	char err[4096], root[] = "/";

	CHECK(unit_capture(invalid_child, root, err, sizeof err) == SBX_EXIT_USAGE);
	CHECK(strstr(err, ": usage: deny-write: invalid glob '../x': '.' and '..' are not allowed\n") != NULL);
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	size_t n = strlen(text);
	int ok = fd >= 0 && write(fd, text, n) == (ssize_t)n;

	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

struct ovl_arg {
	const char *upper, *ws, *mnt, *home;
};

/* A user namespace of its own (root in it: the caller's uid), a read-only
 * overlay of upper over ws at mnt (userxattr: what a user namespace may
 * mount), scanned with the workspace's path for its configs. */
static void overlay_child(void *arg)
{
	const struct ovl_arg *o = arg;
	char map[64], opts[512];
	struct statfs sf;
	uid_t uid = geteuid();
	gid_t gid = getegid();

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
		fprintf(stderr, "  unshare: %s\n", strerror(errno));
		_exit(1);
	}
	snprintf(map, sizeof map, "0 %u 1\n", (unsigned)uid);
	if (write_file("/proc/self/uid_map", map) < 0 || write_file("/proc/self/setgroups", "deny\n") < 0) {
		fprintf(stderr, "  uid_map: %s\n", strerror(errno));
		_exit(1);
	}
	snprintf(map, sizeof map, "0 %u 1\n", (unsigned)gid);
	if (write_file("/proc/self/gid_map", map) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		fprintf(stderr, "  gid_map, private: %s\n", strerror(errno));
		_exit(1);
	}
	snprintf(opts, sizeof opts, "lowerdir=%s:%s,userxattr", o->upper, o->ws);
	if (mount("overlay", o->mnt, "overlay", MS_RDONLY, opts) < 0) {
		fprintf(stderr, "  mount overlay: %s\n", strerror(errno));
		_exit(1);
	}
	if (statfs(o->mnt, &sf) < 0 || sf.f_type != OVERLAYFS_SUPER_MAGIC) {
		fprintf(stderr, "  %s is not an overlay\n", o->mnt);
		_exit(1);
	}
	struct scan_arg s = { .root = o->mnt, .path = o->ws, .home = o->home, .want = want_overlay };
	scan_child(&s);
}

TEST(deny_scan_over_a_read_only_overlay)
{
	static const char *const d[] = { "vendor", "vendor/x", "vendor/x/objects", "vendor/x/refs", NULL };
	char dir[] = "/tmp/sbx-unit-deny.XXXXXX", ws[64], up[64], mnt[64], err[4096];
	struct ovl_arg o = { .upper = up, .ws = ws, .mnt = mnt, .home = dir };
	int fd;

	CHECK(mkdtemp(dir) != NULL);
	CHECK(chmod(dir, 0755) == 0);
	snprintf(ws, sizeof ws, "%s/ws", dir);
	snprintf(up, sizeof up, "%s/upper", dir);
	snprintf(mnt, sizeof mnt, "%s/mnt", dir);
	CHECK(plant(ws) == 0);
	CHECK(mkdir(up, 0755) == 0 && mkdir(mnt, 0755) == 0);
	fd = open(up, O_PATH | O_DIRECTORY | O_CLOEXEC);
	CHECK(fd >= 0 && dirs(fd, d) == 0);
	CHECK(put(fd, ".env.local", "KEY=2\n") == 0 && put(fd, "vendor/x/HEAD", "ref: refs/heads/main\n") == 0 &&
	      put(fd, "vendor/x/config", "") == 0);
	close(fd);
	int rc = unit_capture(overlay_child, &o, err, sizeof err);
	CHECK(rc == 0);
	if (rc)
		fprintf(stderr, "%s", err);
	rmtree(dir);
}

/* Leaves (directories with no subdirectory) are looked up for ".git" and
 * "HEAD" instead of read where link counts say which they are: every
 * shape git takes must still be found in one. */
TEST(deny_scan_finds_git_in_leaf_directories)
{
	static const char *const d[] = { "wt", "lnk", "gf", "plain", "e", "e/.git", "deep", "deep/leaf", NULL };
	static const char *const w[] = { "e/.git/config", "gf/.git", "lnk/config", "wt/commondir", "wt/config", NULL };
	char dir[] = "/tmp/sbx-unit-deny.XXXXXX", ws[64], err[4096];
	struct scan_arg s = { .root = ws, .path = ws, .home = dir, .want = w };
	struct statfs sf;
	struct stat st;
	int fd = -1;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(ws, sizeof ws, "%s/ws", dir);
	CHECK(mkdir(ws, 0755) == 0 && (fd = open(ws, O_PATH | O_DIRECTORY | O_CLOEXEC)) >= 0);
	/* a linked worktree's git directory (HEAD and a commondir); HEAD
	 * with objects/ and refs/ as links; a gitfile; git's names without
	 * HEAD (nothing); a ".git" with no subdirectory */
	CHECK(dirs(fd, d) == 0);
	CHECK(put(fd, "wt/HEAD", "ref: refs/heads/x\n") == 0 && put(fd, "wt/commondir", "../gf\n") == 0 &&
	      put(fd, "wt/config", "") == 0 && put(fd, "lnk/HEAD", "ref: refs/heads/x\n") == 0 &&
	      symlinkat("../deep", fd, "lnk/objects") == 0 && symlinkat("../deep", fd, "lnk/refs") == 0 &&
	      put(fd, "lnk/config", "") == 0 && put(fd, "gf/.git", "gitdir: ../wt\n") == 0 &&
	      put(fd, "plain/objects", "") == 0 && put(fd, "plain/refs", "") == 0 &&
	      put(fd, "plain/commondir", "") == 0 && put(fd, "plain/config", "") == 0 &&
	      put(fd, "e/.git/config", "") == 0 && put(fd, "deep/leaf/x.c", "") == 0);
	/* the shortcut is taken here: leaves count two links */
	CHECK(fstatfs(fd, &sf) == 0 && (sf.f_type == EXT4_SUPER_MAGIC || sf.f_type == XFS_SUPER_MAGIC ||
					 sf.f_type == TMPFS_MAGIC));
	CHECK(fstatat(fd, "wt", &st, 0) == 0 && st.st_nlink == 2);
	close(fd);
	int rc = unit_capture(scan_child, &s, err, sizeof err);
	CHECK(rc == 0);
	if (rc)
		fprintf(stderr, "%s", err);
	rmtree(dir);
}

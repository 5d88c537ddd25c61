#include "unit.h"
#include "die.h"
#include "protect.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *canon(const char *p)
{
	static char out[PATH_MAX];
	char *c = sbx_protect_canon(p);

	snprintf(out, sizeof out, "%s", c ? c : "(null)");
	free(c);
	return out;
}

TEST(protect_canonical_form_resolves_the_existing_prefix)
{
	char dir[] = "/tmp/sbx-unit-pr.XXXXXX", real[PATH_MAX], l[96], want[PATH_MAX + 32], in[160];

	CHECK(mkdtemp(dir) != NULL);
	CHECK(realpath(dir, real) != NULL);
	snprintf(l, sizeof l, "%s/link", dir);
	CHECK(symlink("/etc", l) == 0);
	CHECK_STR(canon("/etc"), "/etc");
	CHECK_STR(canon("/etc/"), "/etc");
	CHECK_STR(canon("/etc//passwd"), "/etc/passwd");
	CHECK_STR(canon("/etc/no/such//thing/"), "/etc/no/such/thing");
	CHECK_STR(canon("/no-such-top"), "/no-such-top");
	snprintf(in, sizeof in, "%s/link/passwd", dir);
	CHECK_STR(canon(in), "/etc/passwd");
	snprintf(in, sizeof in, "%s/link/none/x", dir);
	CHECK_STR(canon(in), "/etc/none/x");
	snprintf(in, sizeof in, "%s/new", dir);
	snprintf(want, sizeof want, "%s/new", real);
	CHECK_STR(canon(in), want);
	unlink(l);
	rmdir(dir);
}

static void do_add(void *arg)
{
	struct sbx_protect p = { 0 };

	sbx_setprog("sbx-t");
	sbx_protect_add(&p, "--protect", arg);
}

TEST(protect_option_refusals)
{
	char err[512];

	CHECK(unit_capture(do_add, "", err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: --protect: invalid path '': empty\n");
	CHECK(unit_capture(do_add, "etc", err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: --protect: invalid path 'etc': not absolute\n");
	CHECK(unit_capture(do_add, "/etc/../root", err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: --protect: invalid path '/etc/../root': '..' component\n");
	CHECK(unit_capture(do_add, "/", err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: --protect: invalid path '/': the whole file system\n");
	CHECK(unit_capture(do_add, "//", err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: --protect: invalid path '//': the whole file system\n");
	CHECK(unit_capture(do_add, "/etc", err, sizeof err) == 0);
	CHECK(unit_capture(do_add, "/etc/not/yet", err, sizeof err) == 0);
}

static struct sbx_protect_root root_of(const char *path)
{
	struct sbx_protect_root r = { path, 0, 0 };
	struct stat st;

	if (stat(path, &st) == 0) {
		r.dev = st.st_dev;
		r.ino = st.st_ino;
	}
	return r;
}

TEST(protect_exposure_in_both_directions)
{
	char dir[] = "/tmp/sbx-unit-pr.XXXXXX", real[PATH_MAX], p[PATH_MAX + 16], w[PATH_MAX + 16],
	     sib[PATH_MAX + 16], inner[PATH_MAX + 32];
	struct sbx_protect pr = { 0 };
	struct sbx_protect_root r;

	CHECK(mkdtemp(dir) != NULL);
	CHECK(realpath(dir, real) != NULL);
	snprintf(p, sizeof p, "%s/keys", real);
	snprintf(sib, sizeof sib, "%s/keys2", real);
	snprintf(w, sizeof w, "%s/work", real);
	snprintf(inner, sizeof inner, "%s/keys/sub", real);
	CHECK(mkdir(p, 0700) == 0 && mkdir(sib, 0700) == 0 && mkdir(w, 0700) == 0 &&
	      mkdir(inner, 0700) == 0);
	sbx_protect_add(&pr, "--protect", p);

	r = root_of(real);          /* the protected path's parent */
	CHECK(sbx_protect_exposed(&pr, &r) == 0);
	r = root_of(p);             /* the path itself */
	CHECK(sbx_protect_exposed(&pr, &r) == 0);
	r = root_of(inner);         /* inside it */
	CHECK(sbx_protect_exposed(&pr, &r) == 0);
	r = root_of("/");
	CHECK(sbx_protect_exposed(&pr, &r) == 0);
	r = root_of(sib);           /* a name that only starts alike */
	CHECK(sbx_protect_exposed(&pr, &r) == -1);
	r = root_of(w);
	CHECK(sbx_protect_exposed(&pr, &r) == -1);
	/* Identity alone: the root given under another name. */
	r = root_of(real);
	r.path = "/elsewhere/by/bind";
	CHECK(sbx_protect_exposed(&pr, &r) == 0);

	rmdir(inner); rmdir(p); rmdir(sib); rmdir(w);
	rmdir(dir);
	free(pr.v[0].path);
	free(pr.v);
}

/* The same directory through a host bind mount: caught by identity. */
TEST(protect_sees_through_a_bind_mount)
{
	char dir[] = "/tmp/sbx-unit-pr.XXXXXX", a[96], b[96], pa[128], pb[128], sub[160];
	struct sbx_protect pr = { 0 };
	struct sbx_protect_root r;

	/* Needs a mount: the suite runs as root (unprivileged: nothing to do). */
	if (geteuid() != 0)
		return;
	CHECK(mkdtemp(dir) != NULL);
	snprintf(a, sizeof a, "%s/a", dir);
	snprintf(b, sizeof b, "%s/b", dir);
	snprintf(pb, sizeof pb, "%s/b/secret", dir);
	snprintf(pa, sizeof pa, "%s/a/secret", dir);
	snprintf(sub, sizeof sub, "%s/a/secret/sub", dir);
	CHECK(mkdir(a, 0700) == 0 && mkdir(b, 0700) == 0 && mkdir(pa, 0700) == 0 &&
	      mkdir(sub, 0700) == 0);
	CHECK(mount(a, b, NULL, MS_BIND, NULL) == 0);
	{
		sbx_protect_add(&pr, "--protect", pb);
		r = root_of(a);      /* the path's parent under its other name */
		CHECK(sbx_protect_exposed(&pr, &r) == 0);
		r = root_of(sub);    /* inside the path, under its other name */
		CHECK(sbx_protect_exposed(&pr, &r) == 0);
		r = root_of(dir);
		r.path = "/unrelated";
		r.ino = (ino_t)-1;
		CHECK(sbx_protect_exposed(&pr, &r) == -1);
		umount2(b, MNT_DETACH);
		free(pr.v[0].path);
		free(pr.v);
	}
	rmdir(sub); rmdir(pa); rmdir(a); rmdir(b); rmdir(dir);
}

struct pc {
	struct sbx_protect *p;
	struct sbx_protect_root *roots;
	const char **opts;
	size_t n;
};

static void do_check(void *arg)
{
	struct pc *c = arg;

	sbx_setprog("sbx-t");
	sbx_protect_check(c->p, c->roots, c->opts, c->n);
}

TEST(protect_check_message)
{
	struct sbx_protect pr = { 0 };
	struct sbx_protect_root roots[2];
	const char *opts[2] = { "--rw", "--workspace" };
	struct pc c = { &pr, roots, opts, 2 };
	char err[512];

	sbx_protect_add(&pr, "--protect", "/etc/sbx-no-such/keys");
	roots[0] = root_of("/var/tmp");
	roots[1] = root_of("/etc");
	CHECK(unit_capture(do_check, &c, err, sizeof err) == 102);
	CHECK_STR(err, "sbx-t: fatal: refusing to start: protected path /etc/sbx-no-such/keys "
		       "is writable through --workspace /etc\n");
	c.n = 1;
	CHECK(unit_capture(do_check, &c, err, sizeof err) == 0);
	CHECK_STR(err, "");
	free(pr.v[0].path);
	free(pr.v);
}

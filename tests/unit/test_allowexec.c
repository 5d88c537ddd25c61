#include "unit.h"
#include "allowexec.h"
#include "die.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static int copy(const char *from, const char *to)
{
	char buf[65536];
	ssize_t n;
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_EXCL, 0755);

	if (in < 0 || out < 0)
		return -1;
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n)
			return -1;
	close(in);
	return close(out);
}

struct ax {
	struct sbx_allowexec *a;
	const char *prog;
	const char *search;
	const char *cwd;
};

static void do_check(void *arg)
{
	struct ax *x = arg;

	sbx_setprog("sbx-t");
	sbx_allowexec_check(x->a, x->prog, x->search, x->cwd);
}

static void do_exec(void *arg)
{
	struct ax *x = arg;
	char *argv[] = { (char *)x->prog, NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", NULL };

	sbx_setprog("sbx-t");
	sbx_allowexec_exec(x->a, argv, x->search, envp);
}

static void do_add(void *arg)
{
	struct sbx_allowexec a = { 0 };

	sbx_setprog("sbx-t");
	sbx_allowexec_add(&a, "--allow-exec", arg);
}

TEST(allowexec_compares_identity_not_names)
{
	char dir[] = "/tmp/sbx-unit-ax.XXXXXX", a[64], h[64], s[64], o[64], b[64], sc[64],
	     msg[512], err[512];
	struct sbx_allowexec list = { 0 };
	struct ax x = { &list, NULL, NULL, NULL };
	int fd;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(a, sizeof a, "%s/true", dir);
	snprintf(h, sizeof h, "%s/hard", dir);
	snprintf(s, sizeof s, "%s/sym", dir);
	snprintf(o, sizeof o, "%s/other", dir);
	snprintf(b, sizeof b, "%s/renamed", dir);
	snprintf(sc, sizeof sc, "%s/script", dir);
	CHECK(copy("/bin/true", a) == 0);
	CHECK(link(a, h) == 0);
	CHECK(symlink(a, s) == 0);
	CHECK(symlink("/bin/false", o) == 0);
	CHECK(copy(a, b) == 0);
	fd = open(sc, O_WRONLY | O_CREAT | O_EXCL, 0755);
	CHECK(fd >= 0 && write(fd, "#!/bin/sh\nexit 7\n", 17) == 17);
	close(fd);

	sbx_allowexec_add(&list, "--allow-exec", a);
	sbx_allowexec_add(&list, "--allow-exec", sc);
	CHECK(list.n == 2);

	/* The listed file, a hard link and a symlink to it: the same file. */
	x.prog = a;
	CHECK(unit_capture(do_check, &x, err, sizeof err) == 0);
	CHECK_STR(err, "");
	x.prog = h;
	CHECK(unit_capture(do_check, &x, err, sizeof err) == 0);
	x.prog = s;
	CHECK(unit_capture(do_check, &x, err, sizeof err) == 0);
	/* Found through the search path. */
	x.prog = "true";
	x.search = dir;
	CHECK(unit_capture(do_check, &x, err, sizeof err) == 0);
	x.prog = "renamed";
	CHECK(unit_capture(do_check, &x, err, sizeof err) == 102);
	snprintf(msg, sizeof msg, "sbx-t: fatal: refusing to run renamed (%s): not one of the --allow-exec files\n", b);
	CHECK_STR(err, msg);
	x.prog = "nothing-here";
	CHECK(unit_capture(do_check, &x, err, sizeof err) == 127);
	CHECK_STR(err, "sbx-t: fatal: unable to find nothing-here\n");
	x.search = NULL;
	/* A renamed copy and a symlink to another binary are other files. */
	x.prog = b;
	CHECK(unit_capture(do_check, &x, err, sizeof err) == 102);
	snprintf(msg, sizeof msg, "sbx-t: fatal: refusing to run %s: not one of the --allow-exec files\n", b);
	CHECK_STR(err, msg);
	x.prog = o;
	CHECK(unit_capture(do_check, &x, err, sizeof err) == 102);
	snprintf(msg, sizeof msg, "sbx-t: fatal: refusing to run %s: not one of the --allow-exec files\n", o);
	CHECK_STR(err, msg);

	/* A relative name is taken from where the command will start. */
	x.prog = "./true";
	x.cwd = dir;
	CHECK(unit_capture(do_check, &x, err, sizeof err) == 0);
	x.prog = "./renamed";
	CHECK(unit_capture(do_check, &x, err, sizeof err) == 102);
	snprintf(msg, sizeof msg, "sbx-t: fatal: refusing to run ./renamed (%s/./renamed): not one of the --allow-exec files\n", dir);
	CHECK_STR(err, msg);
	x.cwd = "/";
	x.prog = "./true";
	CHECK(unit_capture(do_check, &x, err, sizeof err) == 127);
	CHECK_STR(err, "sbx-t: fatal: unable to find ./true\n");
	x.cwd = NULL;

	/* The exec step runs exactly the checked file; a script too. */
	x.prog = s;
	CHECK(unit_capture(do_exec, &x, err, sizeof err) == 0);
	x.prog = sc;
	CHECK(unit_capture(do_exec, &x, err, sizeof err) == 7);
	x.prog = o;
	CHECK(unit_capture(do_exec, &x, err, sizeof err) == 102);
	snprintf(msg, sizeof msg, "sbx-t: fatal: refusing to run %s: not one of the --allow-exec files\n", o);
	CHECK_STR(err, msg);
	/* The listed name now holds another file: refused at exec. */
	CHECK(rename(b, a) == 0);
	x.prog = a;
	CHECK(unit_capture(do_exec, &x, err, sizeof err) == 102);

	unlink(a); unlink(h); unlink(s); unlink(o); unlink(sc);
	rmdir(dir);
	free(list.v);
}

TEST(allowexec_option_refusals)
{
	char err[512];

	CHECK(unit_capture(do_add, "", err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: --allow-exec: invalid path '': empty\n");
	CHECK(unit_capture(do_add, "bin/true", err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: --allow-exec: invalid path 'bin/true': not absolute\n");
	CHECK(unit_capture(do_add, "/nonexistent/x", err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: --allow-exec: invalid path '/nonexistent/x': No such file or directory\n");
	CHECK(unit_capture(do_add, "/tmp", err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: --allow-exec: invalid path '/tmp': not a regular file\n");
	CHECK(unit_capture(do_add, "/bin/true", err, sizeof err) == 0);
}

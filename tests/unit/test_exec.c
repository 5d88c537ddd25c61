#include "unit.h"
#include "exec.h"
#include "die.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

TEST(exec_find)
{
	char out[256];
	CHECK(sbx_exec_find("sh", "/nonexistent::/bin", out, sizeof out) == 0);
	CHECK_STR(out, "/bin/sh");
	CHECK(sbx_exec_find("./x", "/bin", out, sizeof out) == 0);
	CHECK_STR(out, "./x");
	CHECK(sbx_exec_find("no-such-prog-sbx", "/bin:/usr/bin", out, sizeof out) == -1);
	CHECK(errno == ENOENT);
	CHECK(sbx_exec_find("", "/bin", out, sizeof out) == -1);
	CHECK(errno == ENOENT);
	/* empty entries never mean the current directory */
	CHECK(sbx_exec_find("unit-tests", ":", out, sizeof out) == -1);
	/* /etc/passwd exists but is not executable */
	CHECK(sbx_exec_find("passwd", "/etc", out, sizeof out) == -1);
	CHECK(errno == EACCES);
	CHECK(sbx_exec_find("sh", "/bin", out, 5) == -1);
}

static void exec_missing(void *a) { char *argv[] = { a, 0 }; sbx_setprog("sbx-t"); sbx_exec(argv, "/bin", NULL); }

TEST(exec_reports_127_and_126)
{
	char err[256];
	CHECK(unit_capture(exec_missing, "no-such-prog-sbx", err, sizeof err) == 127);
	CHECK_STR(err, "sbx-t: fatal: unable to find no-such-prog-sbx\n");
	CHECK(unit_capture(exec_missing, "/etc/passwd", err, sizeof err) == 126);
	CHECK_STR(err, "sbx-t: fatal: unable to exec /etc/passwd: Permission denied\n");
	CHECK(unit_capture(exec_missing, "/nonexistent/x", err, sizeof err) == 127);
	CHECK_STR(err, "sbx-t: fatal: unable to exec /nonexistent/x: No such file or directory\n");
	CHECK(unit_capture(exec_missing, "true", err, sizeof err) == 0);
}

TEST(wait_code)
{
	int st;
	pid_t p = fork();
	if (p == 0)
		_exit(42);
	waitpid(p, &st, 0);
	CHECK(sbx_wait_code(st) == 42);
	p = fork();
	if (p == 0) {
		raise(SIGKILL);
		_exit(0);
	}
	waitpid(p, &st, 0);
	CHECK(sbx_wait_code(st) == 137);
}

static void die_msgs(void *a)
{
	(void)a;
	sbx_setprog("sbx-t");
	sbx_warn("careful %d", 1);
	errno = ENOENT;
	sbx_warn_errno("unable to open %s", "/x");
	errno = EPERM;
	sbx_die_errno(111, "unable to mount %s", "/proc");
}

static void die_plain(void *a) { (void)a; sbx_setprog("sbx-t"); sbx_die(102, "refused: %s", "why"); }
static void die_use(void *a) { (void)a; sbx_setprog("sbx-t"); sbx_die_usage("missing prog"); }

TEST(die_message_shapes)
{
	char err[512];
	CHECK(unit_capture(die_msgs, NULL, err, sizeof err) == 111);
	CHECK_STR(err, "sbx-t: warning: careful 1\n"
		       "sbx-t: warning: unable to open /x: No such file or directory\n"
		       "sbx-t: fatal: unable to mount /proc: Operation not permitted\n");
	CHECK(unit_capture(die_plain, NULL, err, sizeof err) == 102);
	CHECK_STR(err, "sbx-t: fatal: refused: why\n");
	CHECK(unit_capture(die_use, NULL, err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: missing prog\n");
}

/* lib/err: an error carried up, then reported the one way die.c reports. */
#include "unit.h"

#include "die.h"
#include "err.h"

#include <errno.h>

static void die_with(void *arg)
{
	sbx_setprog("sbx-t");
	sbx_err_die(arg);
}

TEST(err_set_fills_and_returns_minus_one)
{
	struct sbx_err e;

	e.fix = "stale";
	CHECK(sbx_err_set(&e, SBX_EXIT_POLICY, "refusing %s", "x") == -1);
	CHECK(e.code == SBX_EXIT_POLICY && e.eno == 0 && e.fix == NULL);
	CHECK_STR(e.msg, "refusing x");
	CHECK(sbx_err_errno(&e, SBX_EXIT_SYS, EACCES, "unable to open %s", "/a") == -1);
	CHECK(e.code == SBX_EXIT_SYS && e.eno == EACCES);
	CHECK(sbx_err_set(NULL, SBX_EXIT_SYS, "nowhere") == -1);
}

TEST(err_die_prints_errno_text_and_fix_and_exits_with_the_code)
{
	struct sbx_err e;
	char err[512];

	sbx_err_errno(&e, SBX_EXIT_SYS, EACCES, "unable to open %s", "/a");
	CHECK(unit_capture(die_with, &e, err, sizeof err) == SBX_EXIT_SYS);
	CHECK_STR(err, "sbx-t: fatal: unable to open /a: Permission denied\n");
	e.fix = "make /a readable";
	CHECK(unit_capture(die_with, &e, err, sizeof err) == SBX_EXIT_SYS);
	CHECK_STR(err, "sbx-t: fatal: unable to open /a: Permission denied; to fix: make /a readable\n");
	sbx_err_set(&e, SBX_EXIT_USAGE, "--x: invalid value");
	CHECK(unit_capture(die_with, &e, err, sizeof err) == SBX_EXIT_USAGE);
	CHECK_STR(err, "sbx-t: usage: --x: invalid value\n");
}

TEST(err_die_never_exits_zero_and_escapes_names)
{
	struct sbx_err e;
	char err[512];

	sbx_err_set(&e, 0, "refusing '%s'", "a\033[2Jb");
	CHECK(unit_capture(die_with, &e, err, sizeof err) == SBX_EXIT_POLICY);
	CHECK_STR(err, "sbx-t: fatal: refusing 'a\\x1b[2Jb'\n");
}

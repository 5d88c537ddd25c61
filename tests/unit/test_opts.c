#include "unit.h"
#include "opts.h"
#include "die.h"

enum { O_A = 1, O_B, O_C };
static const struct sbx_opt tab[] = {
	{ "alpha", SBX_ARG, SBX_ONCE, O_A },
	{ "beta", SBX_NOARG, SBX_ONCE, O_B },
	{ "ro", SBX_ARG, SBX_MANY, O_C },
	{ 0 }
};

struct run { int argc; char **argv; };

static void parse_all(void *p)
{
	struct run *r = p;
	struct sbx_optstate st;
	const char *arg;
	sbx_setprog("sbx-t");
	sbx_opt_init(&st, 1);
	while (sbx_opt_next(&st, tab, r->argc, r->argv, &arg))
		;
}

static int run_err(char **argv, char *err, size_t n)
{
	struct run r;
	for (r.argc = 0; argv[r.argc]; r.argc++)
		;
	r.argv = argv;
	return unit_capture(parse_all, &r, err, n);
}

TEST(opts_parse_in_order_and_stop_at_operand)
{
	char *argv[] = { "t", "--alpha", "1", "--ro=/a", "--beta", "--ro", "/b", "prog", "--alpha", "x", 0 };
	struct sbx_optstate st;
	const char *arg;
	int id, n = 0, ids[8];
	const char *args[8];
	sbx_opt_init(&st, 1);
	while ((id = sbx_opt_next(&st, tab, 10, argv, &arg))) {
		ids[n] = id;
		args[n++] = arg;
	}
	CHECK(n == 4);
	CHECK(ids[0] == O_A); CHECK_STR(args[0], "1");
	CHECK(ids[1] == O_C); CHECK_STR(args[1], "/a");
	CHECK(ids[2] == O_B); CHECK(args[2] == NULL);
	CHECK(ids[3] == O_C); CHECK_STR(args[3], "/b");
	CHECK(st.ind == 7);
}

TEST(opts_double_dash_and_dash)
{
	char *argv[] = { "t", "--beta", "--", "--alpha", 0 };
	char *argv2[] = { "t", "-", 0 };
	struct sbx_optstate st;
	const char *arg;
	sbx_opt_init(&st, 1);
	CHECK(sbx_opt_next(&st, tab, 4, argv, &arg) == O_B);
	CHECK(sbx_opt_next(&st, tab, 4, argv, &arg) == 0);
	CHECK(st.ind == 3);
	sbx_opt_init(&st, 1);
	CHECK(sbx_opt_next(&st, tab, 2, argv2, &arg) == 0);
	CHECK(st.ind == 1);
	sbx_opt_init(&st, 1);
	CHECK(sbx_opt_next(&st, tab, 1, argv2, &arg) == 0);
}

TEST(opts_refuse_bad_usage)
{
	char err[256];
	char *a1[] = { "t", "--alpha", "1", "--alpha", "2", 0 };
	char *a2[] = { "t", "--gamma", 0 };
	char *a3[] = { "t", "--alpha", 0 };
	char *a4[] = { "t", "--beta=1", 0 };
	char *a5[] = { "t", "-a", 0 };
	char *a6[] = { "t", "--beta", "--beta", 0 };
	char *a7[] = { "t", "--", 0 };
	char *a8[] = { "t", "--alph", "x", 0 };
	CHECK(run_err(a1, err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: --alpha given twice\n");
	CHECK(run_err(a2, err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: unknown option --gamma\n");
	CHECK(run_err(a3, err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: --alpha needs a value\n");
	CHECK(run_err(a4, err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: --beta takes no value\n");
	CHECK(run_err(a5, err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: unknown option -a (options are long: --name)\n");
	CHECK(run_err(a6, err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: --beta given twice\n");
	CHECK(run_err(a7, err, sizeof err) == 0);
	CHECK(run_err(a8, err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: unknown option --alph\n");
}

TEST(opts_empty_value_is_a_value)
{
	char *argv[] = { "t", "--alpha=", 0 };
	struct sbx_optstate st;
	const char *arg;
	sbx_opt_init(&st, 1);
	CHECK(sbx_opt_next(&st, tab, 2, argv, &arg) == O_A);
	CHECK_STR(arg, "");
}

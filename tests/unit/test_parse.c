#include "unit.h"
#include "parse.h"
#include "die.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *size(const char *s, uint64_t *v) { return sbx_parse_size(s, UINT64_MAX, v); }

TEST(size_accepts_units)
{
	uint64_t v = 0;
	CHECK(!size("1", &v)); CHECK_U64(v, 1);
	CHECK(!size("512K", &v)); CHECK_U64(v, 512ULL << 10);
	CHECK(!size("4G", &v)); CHECK_U64(v, 4ULL << 30);
	CHECK(!size("4GiB", &v)); CHECK_U64(v, 4ULL << 30);
	CHECK(!size("4gb", &v)); CHECK_U64(v, 4ULL << 30);
	CHECK(!size("3m", &v)); CHECK_U64(v, 3ULL << 20);
	CHECK(!size("2T", &v)); CHECK_U64(v, 2ULL << 40);
	CHECK(!size("16777215T", &v)); CHECK_U64(v, 16777215ULL << 40);
	CHECK(!size("18446744073709551615", &v)); CHECK_U64(v, UINT64_MAX);
}

TEST(size_refuses_bad_input)
{
	uint64_t v = 7;
	CHECK_STR(size("", &v), "empty");
	CHECK_STR(size(NULL, &v), "empty");
	CHECK_STR(size("0", &v), "zero not allowed");
	CHECK_STR(size("0G", &v), "zero not allowed");
	CHECK_STR(size("-1", &v), "negative");
	CHECK_STR(size("+1", &v), "sign not allowed");
	CHECK_STR(size(" 1", &v), "whitespace not allowed");
	CHECK_STR(size("1 G", &v), "whitespace not allowed");
	CHECK_STR(size("1G ", &v), "trailing garbage");
	CHECK_STR(size("inf", &v), "not a number");
	CHECK_STR(size("nan", &v), "not a number");
	CHECK_STR(size("0x10", &v), "trailing garbage");
	CHECK_STR(size("1e9", &v), "trailing garbage");
	CHECK_STR(size("1.5G", &v), "fractions not allowed");
	CHECK_STR(size("1P", &v), "trailing garbage");
	CHECK_STR(size("1GG", &v), "trailing garbage");
	CHECK_STR(size("1Gi", &v), "trailing garbage");
	CHECK_STR(size("18446744073709551616", &v), "overflow");
	CHECK_STR(size("16777216T", &v), "overflow");
	CHECK_STR(size("99999999999999999999999", &v), "overflow");
	CHECK_STR(sbx_parse_size("2K", 1024, &v), "too large");
	CHECK_U64(v, 7);
}

TEST(u64_bounds)
{
	uint64_t v = 0;
	CHECK(!sbx_parse_u64("0", 0, 10, &v)); CHECK_U64(v, 0);
	CHECK(!sbx_parse_u64("10", 0, 10, &v)); CHECK_U64(v, 10);
	CHECK_STR(sbx_parse_u64("11", 0, 10, &v), "too large");
	CHECK_STR(sbx_parse_u64("0", 1, 10, &v), "zero not allowed");
	CHECK_STR(sbx_parse_u64("1", 2, 10, &v), "too small");
	CHECK_STR(sbx_parse_u64("007x", 0, 10, &v), "trailing garbage");
	CHECK_STR(sbx_parse_u64("-0", 0, 10, &v), "negative");
	CHECK_STR(sbx_parse_u64("1 ", 0, 10, &v), "trailing garbage");
	CHECK_STR(sbx_parse_u64("18446744073709551616", 0, UINT64_MAX, &v), "overflow");
	CHECK(!sbx_parse_u64("18446744073709551615", 0, UINT64_MAX, &v));
	CHECK_U64(v, UINT64_MAX);
}

TEST(percent)
{
	uint64_t v = 0;
	CHECK(!sbx_parse_percent("50", 10000, &v)); CHECK_U64(v, 50);
	CHECK(!sbx_parse_percent("200%", 10000, &v)); CHECK_U64(v, 200);
	CHECK_STR(sbx_parse_percent("0", 10000, &v), "zero not allowed");
	CHECK_STR(sbx_parse_percent("%", 10000, &v), "not a number");
	CHECK_STR(sbx_parse_percent("50%%", 10000, &v), "trailing garbage");
	CHECK_STR(sbx_parse_percent("-5", 10000, &v), "negative");
	CHECK_STR(sbx_parse_percent("10001", 10000, &v), "too large");
	CHECK_STR(sbx_parse_percent("1.5", 10000, &v), "trailing garbage");
}

TEST(seconds)
{
	uint64_t v = 0;
	CHECK(!sbx_parse_seconds("30", UINT64_MAX, &v)); CHECK_U64(v, 30000);
	CHECK(!sbx_parse_seconds("0.5", UINT64_MAX, &v)); CHECK_U64(v, 500);
	CHECK(!sbx_parse_seconds("2.25", UINT64_MAX, &v)); CHECK_U64(v, 2250);
	CHECK(!sbx_parse_seconds("0.001", UINT64_MAX, &v)); CHECK_U64(v, 1);
	CHECK_STR(sbx_parse_seconds("0", UINT64_MAX, &v), "zero not allowed");
	CHECK_STR(sbx_parse_seconds("0.000", UINT64_MAX, &v), "zero not allowed");
	CHECK_STR(sbx_parse_seconds("0.0001", UINT64_MAX, &v), "more than three decimals");
	CHECK_STR(sbx_parse_seconds("1.", UINT64_MAX, &v), "trailing garbage");
	CHECK_STR(sbx_parse_seconds(".5", UINT64_MAX, &v), "not a number");
	CHECK_STR(sbx_parse_seconds("1s", UINT64_MAX, &v), "trailing garbage");
	CHECK_STR(sbx_parse_seconds("-1", UINT64_MAX, &v), "negative");
	CHECK_STR(sbx_parse_seconds("inf", UINT64_MAX, &v), "not a number");
	CHECK_STR(sbx_parse_seconds("18446744073709552", UINT64_MAX, &v), "overflow");
	CHECK_STR(sbx_parse_seconds("100", 99000, &v), "too large");
}

TEST(env_names)
{
	CHECK(!sbx_env_name_invalid("_A1", 3));
	CHECK(!sbx_env_name_invalid("PATH=x", 4));
	CHECK_STR(sbx_env_name_invalid("", 0), "empty name");
	CHECK_STR(sbx_env_name_invalid("1A", 2), "bad name");
	CHECK_STR(sbx_env_name_invalid("A-B", 3), "bad name");
	CHECK_STR(sbx_env_name_invalid("A\nB", 3), "bad name");
}

static void die_abspath(void *arg) { sbx_setprog("sbx-t"); sbx_opt_abspath("--root", arg); }
static void die_need(void *arg) { sbx_setprog("sbx-t"); sbx_need(arg); }

TEST(one_message_for_a_relative_path_and_for_no_memory)
{
	char err[256];
	CHECK(unit_capture(die_abspath, "", err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: --root: invalid path '': empty\n");
	CHECK(unit_capture(die_abspath, "a/b", err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: --root: invalid path 'a/b': not absolute\n");
	char want[128];
	snprintf(want, sizeof want, "sbx-t: fatal: unable to allocate memory: %s\n", strerror(ENOMEM));
	CHECK(unit_capture(die_need, NULL, err, sizeof err) == 111);
	CHECK_STR(err, want);
	CHECK_STR(sbx_opt_abspath("--root", "/a"), "/a");
}

/* A width past INT_MAX makes vasprintf fail at once, without allocating. */
static void die_needf(void *arg) { sbx_setprog("sbx-t"); sbx_needf("x%*s", *(int *)arg, ""); }

TEST(a_formatted_string_or_the_one_message_for_no_memory)
{
	char err[256], want[128];
	int wide = INT_MAX;
	char *s = sbx_needf("%s=%u", "PORT", 8080u);
	CHECK_STR(s, "PORT=8080");
	free(s);
	snprintf(want, sizeof want, "sbx-t: fatal: unable to allocate memory: %s\n", strerror(ENOMEM));
	CHECK(unit_capture(die_needf, &wide, err, sizeof err) == 111);
	CHECK_STR(err, want);
}

static void die_size(void *arg) { sbx_setprog("sbx-t"); sbx_opt_size("--memory", arg, UINT64_MAX); }

TEST(option_forms_die_with_usage)
{
	char err[256];
	CHECK(unit_capture(die_size, "1Q", err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: --memory: invalid size '1Q': trailing garbage\n");
	CHECK(unit_capture(die_size, "", err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: --memory: invalid size '': empty\n");
}

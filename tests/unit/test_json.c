#include "unit.h"
#include "json.h"

#include <stdlib.h>
#include <unistd.h>

static const char *line(struct sbx_json *j)
{
	static char out[1024];
	size_t n;
	const char *l = sbx_json_end(j, &n);
	snprintf(out, sizeof out, "%s", l ? l : "(null)");
	sbx_json_free(j);
	return out;
}

TEST(json_basic_event)
{
	struct sbx_json j;
	sbx_json_begin(&j, "sbx-ns", "exit");
	sbx_json_int(&j, "code", -3);
	sbx_json_uint(&j, "big", UINT64_MAX);
	sbx_json_bool(&j, "ok", 1);
	sbx_json_null(&j, "signal");
	CHECK_STR(line(&j), "{\"tool\":\"sbx-ns\",\"event\":\"exit\",\"code\":-3,"
		  "\"big\":18446744073709551615,\"ok\":true,\"signal\":null}\n");
}

TEST(json_integers_at_their_edges)
{
	struct sbx_json j;
	sbx_json_begin(&j, NULL, NULL);
	sbx_json_int(&j, "zero", 0);
	sbx_json_int(&j, "min", INT64_MIN);
	sbx_json_int(&j, "max", INT64_MAX);
	sbx_json_uint(&j, "u0", 0);
	sbx_json_int(&j, "m1", -1);
	CHECK_STR(line(&j), "{\"zero\":0,\"min\":-9223372036854775808,\"max\":9223372036854775807,"
		  "\"u0\":0,\"m1\":-1}\n");
}

TEST(json_escapes_everything_hostile)
{
	struct sbx_json j;
	sbx_json_begin(&j, NULL, NULL);
	sbx_json_str(&j, "q", "a\"b\\c");
	sbx_json_str(&j, "ctl", "\n\r\t\x01\x1f\x7f");
	sbx_json_strn(&j, "nul", "a\0b", 3);
	sbx_json_str(&j, "utf8", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	sbx_json_str(&j, "bad", "\xff\xc3(\xe0\x80\xaf\xed\xa0\x80\xf4\x90\x80\x80x");
	CHECK_STR(line(&j),
		  "{\"q\":\"a\\\"b\\\\c\",\"ctl\":\"\\u000a\\u000d\\u0009\\u0001\\u001f\\u007f\","
		  "\"nul\":\"a\\u0000b\",\"utf8\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\","
		  "\"bad\":\"\\ufffd\\ufffd(\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffdx\"}\n");
}

TEST(json_nesting)
{
	struct sbx_json j;
	sbx_json_begin(&j, "t", "e");
	sbx_json_open_obj(&j, "ns");
	sbx_json_uint(&j, "user", 1);
	sbx_json_uint(&j, "mnt", 2);
	sbx_json_close_obj(&j);
	sbx_json_open_arr(&j, "list");
	sbx_json_str(&j, NULL, "a");
	sbx_json_uint(&j, NULL, 2);
	sbx_json_close_arr(&j);
	sbx_json_open_obj(&j, "open");
	CHECK_STR(line(&j), "{\"tool\":\"t\",\"event\":\"e\",\"ns\":{\"user\":1,\"mnt\":2},"
		  "\"list\":[\"a\",2],\"open\":{}}\n");
}

TEST(json_long_line_written_whole)
{
	struct sbx_json j;
	char *big = malloc(100001);
	int p[2];
	char *buf = malloc(200000);
	ssize_t n;
	memset(big, 'x', 100000);
	big[100000] = 0;
	CHECK(pipe(p) == 0);
	sbx_json_begin(&j, "t", "e");
	sbx_json_str(&j, "s", big);
	/* pipe buffer is 64 KiB: write from a child so the parent can drain */
	if (fork() == 0) {
		_exit(sbx_json_write(&j, p[1]) == 0 ? 0 : 1);
	}
	sbx_json_free(&j);
	close(p[1]);
	size_t tot = 0;
	while ((n = read(p[0], buf + tot, 200000 - tot)) > 0)
		tot += (size_t)n;
	CHECK(tot == 100000 + strlen("{\"tool\":\"t\",\"event\":\"e\",\"s\":\"\"}\n"));
	CHECK(buf[tot - 1] == '\n');
	close(p[0]);
	free(big);
	free(buf);
}

TEST(json_write_to_closed_fd_reports_error)
{
	struct sbx_json j;
	sbx_json_begin(&j, "t", "e");
	CHECK(sbx_json_write(&j, 987) == -1);
	sbx_json_begin(&j, "t", "e");
	CHECK(sbx_json_write(&j, -1) == 0);
}

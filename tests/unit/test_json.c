#include "unit.h"
#include "json.h"
#include "opts.h"
#include "status.h"

#include <stdlib.h>
#include <sys/wait.h>
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

/* What one process wrote to fd, read back (the line is small). */
static int wrote(int fd, const char *want)
{
	char buf[256];
	ssize_t n = read(fd, buf, sizeof buf - 1);

	if (n < 0)
		return 0;
	buf[n] = 0;
	return !strcmp(buf, want);
}

/* The version goes on the first line the owner writes to its status fd and
 * on no other: not on a line to another fd, not on a later line, not on a
 * line of a forked child. In a child process: the status fd is global. */
TEST(json_version_only_on_the_first_status_line)
{
	int st = -1;
	pid_t pid = fork();

	if (pid == 0) {
		struct sbx_json j;
		int s[2], o[2], ok = 1;
		char arg[16];
		pid_t c;

		if (pipe(s) || pipe(o))
			_exit(2);
		snprintf(arg, sizeof arg, "%d", s[1]);
		sbx_status_opt(arg);
		sbx_json_begin(&j, "t", "other");
		sbx_json_write(&j, o[1]);
		ok &= wrote(o[0], "{\"tool\":\"t\",\"event\":\"other\"}\n");
		c = fork();
		if (c == 0) {
			sbx_json_begin(&j, "t", "child");
			_exit(sbx_json_write(&j, s[1]) ? 1 : 0);
		}
		waitpid(c, NULL, 0);
		ok &= wrote(s[0], "{\"tool\":\"t\",\"event\":\"child\"}\n");
		sbx_json_begin(&j, "t", "first");
		sbx_json_int(&j, "n", 1);
		sbx_json_write(&j, s[1]);
		ok &= wrote(s[0], "{\"tool\":\"t\",\"event\":\"first\",\"version\":\"" SBX_VERSION "\",\"n\":1}\n");
		sbx_json_begin(&j, "t", "exit");
		sbx_json_write(&j, s[1]);
		ok &= wrote(s[0], "{\"tool\":\"t\",\"event\":\"exit\"}\n");
		_exit(ok ? 0 : 1);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

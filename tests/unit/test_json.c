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

/* The UTF-8 form of code point cp into b: its length. */
static size_t enc(uint32_t cp, char *b)
{
	if (cp < 0x80) {
		b[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		b[0] = (char)(0xc0 | cp >> 6);
		b[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	b[0] = (char)(0xe0 | cp >> 12);
	b[1] = (char)(0x80 | (cp >> 6 & 0x3f));
	b[2] = (char)(0x80 | (cp & 0x3f));
	return 3;
}

/* Every C1 control (CSI U+009B and OSC U+009D drive terminals), the line
 * and paragraph separators and the bidi controls leave as \uXXXX, never
 * as their bytes. */
TEST(json_escapes_every_non_printing_code_point)
{
	static const uint32_t more[] = { 0x2028, 0x2029, 0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c,
					 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0xfeff, 0xfff9,
					 0xfffa, 0xfffb };
	uint32_t cps[32 + sizeof more / sizeof more[0]];
	size_t n = 0;

	for (uint32_t cp = 0x80; cp <= 0x9f; cp++)
		cps[n++] = cp;
	for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
		cps[n++] = more[i];
	for (size_t i = 0; i < n; i++) {
		struct sbx_json j;
		char in[8], want[64];
		size_t l = enc(cps[i], in + 1);
		in[0] = 'a';
		in[l + 1] = 'b';
		sbx_json_begin(&j, NULL, NULL);
		sbx_json_strn(&j, "s", in, l + 2);
		snprintf(want, sizeof want, "{\"s\":\"a\\u%04x" "b\"}\n", (unsigned)cps[i]);
		CHECK_STR(line(&j), want);
		CHECK(!sbx_cp_printable(cps[i]));
	}
}

/* Their neighbours, and the rest of Unicode's text, stay as they are. */
TEST(json_keeps_printable_neighbours)
{
	static const uint32_t keep[] = { 0x7e, 0xa0, 0xa1, 0xe9, 0x2027, 0x202f, 0x2065, 0x206a, 0x200d,
					 0x061b, 0xfef0, 0xfffd };
	for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
		struct sbx_json j;
		char in[8], want[64];
		size_t l = enc(keep[i], in);
		sbx_json_begin(&j, NULL, NULL);
		sbx_json_strn(&j, "s", in, l);
		snprintf(want, sizeof want, "{\"s\":\"%.*s\"}\n", (int)l, in);
		CHECK_STR(line(&j), want);
		CHECK(sbx_cp_printable(keep[i]));
	}
	/* An emoji outside the BMP, and a C1 control written overlong
	 * (invalid: each byte is U+FFFD, never the control). */
	{
		struct sbx_json j;
		sbx_json_begin(&j, NULL, NULL);
		sbx_json_str(&j, "s", "\xf0\x9f\x98\x80\xe0\x82\x9b");
		CHECK_STR(line(&j), "{\"s\":\"\xf0\x9f\x98\x80\\ufffd\\ufffd\\ufffd\"}\n");
	}
}

/* lib/quote: the one escaper for untrusted names in messages. */
#include "unit.h"

#include "quote.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define Q(s, len, max, flags) sbx_quote(out, sizeof out, (s), (len), (max), (flags))

TEST(quote_escapes_control_bytes_and_cuts_long_names)
{
	char out[32];
	CHECK_STR(Q("a/b c", 5, SIZE_MAX, 0), "a/b c");
	CHECK_STR(Q("x\ny", 3, SIZE_MAX, 0), "x\\x0ay");
	CHECK_STR(Q("'\\\x7f\xff", 4, SIZE_MAX, 0), "'\\\\x7f\\xff");
	CHECK_STR(Q("abcdefghijklmnopqrstuvwxyz0123456789", 36, SIZE_MAX, 0), "abcdefghijklmnopqrstuvwxyz01...");
	CHECK_STR(sbx_quote(out, 16, "\n\n\n\n\n\n\n\n", 8, SIZE_MAX, 0), "\\x0a\\x0a\\x0a...");
	CHECK_STR(sbx_quote(out, 3, "abc", 3, SIZE_MAX, 0), "");
}

/* In a name, a literal backslash sequence and the byte it stands for never
 * look the same, nor does a quote that would end the quoted name early. */
TEST(quote_name_escapes_backslashes_and_quotes)
{
	char a[32], b[32];
	sbx_quote(a, sizeof a, "'\\\x7f\xff", 4, SIZE_MAX, SBX_QUOTE_NAME);
	CHECK_STR(a, "\\x27\\x5c\\x7f\\xff");
	sbx_quote(a, sizeof a, "a\\x1b", 5, SIZE_MAX, SBX_QUOTE_NAME);
	sbx_quote(b, sizeof b, "a\x1b", 2, SIZE_MAX, SBX_QUOTE_NAME);
	CHECK_STR(a, "a\\x5cx1b");
	CHECK_STR(b, "a\\x1b");
	sbx_quote(a, sizeof a, "it's", 4, SIZE_MAX, SBX_QUOTE_NAME | SBX_QUOTE_UTF8);
	CHECK_STR(a, "it\\x27s");
}

TEST(quote_shows_at_most_max_input_bytes)
{
	char out[64];
	CHECK_STR(Q("abcdef", 6, 4, 0), "abcd...");
	CHECK_STR(Q("abcd", 4, 4, 0), "abcd");
	CHECK_STR(Q("\x01\x02\x03", 3, 2, 0), "\\x01\\x02...");
	CHECK_STR(Q("x", 0, 4, 0), "");
}

TEST(quote_keeps_valid_utf8_only_when_asked_and_the_whole_name_is_valid)
{
	char out[64];
	CHECK_STR(Q("b\xc3\xbc" "cher\n", 8, SIZE_MAX, SBX_QUOTE_UTF8), "b\xc3\xbc" "cher\\x0a");
	CHECK_STR(Q("b\xc3\xbc" "cher", 7, SIZE_MAX, 0), "b\\xc3\\xbccher");
	/* one invalid byte: every byte from 0x80 is escaped */
	CHECK_STR(Q("/a\xff\xc3\xa9", 5, SIZE_MAX, SBX_QUOTE_UTF8), "/a\\xff\\xc3\\xa9");
	/* a C1 control is valid UTF-8 and still escaped */
	CHECK_STR(Q("a\xc2\x9b" "b", 4, SIZE_MAX, SBX_QUOTE_UTF8), "a\\xc2\\x9bb");
	/* a character is never cut in half */
	CHECK_STR(sbx_quote(out, 8, "ab\xc3\xbc\xc3\xbc", 6, SIZE_MAX, SBX_QUOTE_UTF8), "ab\xc3\xbc...");
}

TEST(quote_text_keeps_each_valid_character_and_escapes_the_rest)
{
	char out[64];
	CHECK_STR(Q("a\xff\xc3\xa9\x1b[2J\\", 9, SIZE_MAX, SBX_QUOTE_TEXT), "a\\xff\xc3\xa9\\x1b[2J\\");
	CHECK_STR(Q("\xc2\x85x", 3, SIZE_MAX, SBX_QUOTE_TEXT), "\\xc2\\x85x");
}

/* Messages escape by the same rule as JSON (sbx_cp_printable): bidi
 * controls and the line separators too, byte by byte. */
TEST(quote_escapes_what_json_escapes)
{
	char out[64];

	CHECK_STR(Q("a\xe2\x80\xae" "b", 5, SIZE_MAX, SBX_QUOTE_UTF8), "a\\xe2\\x80\\xaeb");
	CHECK_STR(Q("a\xe2\x80\xa8" "b", 5, SIZE_MAX, SBX_QUOTE_TEXT), "a\\xe2\\x80\\xa8b");
	CHECK_STR(Q("a\xc2\x9d" "b", 4, SIZE_MAX, SBX_QUOTE_TEXT), "a\\xc2\\x9db");
	CHECK_STR(Q("\xe2\x80\xaf", 3, SIZE_MAX, SBX_QUOTE_UTF8), "\xe2\x80\xaf");
}

/* A file's text (sbx-changes diff): tab and newline stay; shown escaped,
 * the backslash is escaped and the quote is not. */
TEST(quote_lines_keep_tab_and_newline_and_escape_the_backslash_when_asked)
{
	char out[64];
	unsigned t = SBX_QUOTE_TEXT | SBX_QUOTE_LINES;
	CHECK_STR(Q("a\tb\n", 4, SIZE_MAX, t), "a\tb\n");
	CHECK_STR(Q("a\tb\r\n", 5, SIZE_MAX, SBX_QUOTE_TEXT), "a\\x09b\\x0d\\x0a");
	CHECK_STR(Q("it's \\x1b\x1b", 10, SIZE_MAX, t | SBX_QUOTE_BACKSLASH), "it's \\x5cx1b\\x1b");
	CHECK(!sbx_quote_needed("it's \\ \t\xc3\xa9\n", 11, t));
	CHECK(sbx_quote_needed("\r\n", 2, t));
	CHECK(sbx_quote_needed("\xc2\x9b", 2, t));
	CHECK(sbx_quote_needed("\xff", 1, t));
	CHECK(sbx_quote_needed("\\", 1, t | SBX_QUOTE_BACKSLASH));
	CHECK(!sbx_quote_needed("", 0, t));
}

/* The writer takes any length and the same rule as sbx_quote. */
TEST(quote_put_writes_whole_text_by_the_same_rule)
{
	static char in[200000];
	char *buf = NULL, want[64];
	size_t n = 0;
	FILE *f;

	for (size_t i = 0; i < sizeof in; i++)
		in[i] = i % 2 ? '\x1b' : 'a';
	f = open_memstream(&buf, &n);
	sbx_quote_put(f, in, sizeof in, SBX_QUOTE_TEXT);
	sbx_quote_put(f, "\xe2\x82\xac\xe2\x82\\'\n", 8, SBX_QUOTE_TEXT | SBX_QUOTE_BACKSLASH);
	fclose(f);
	CHECK(n == sizeof in / 2 * 5 + 3 + 8 + 4 + 1 + 4);
	CHECK(!memcmp(buf, "a\\x1ba\\x1b", 10));
	sbx_quote(want, sizeof want, "\xe2\x82\xac\xe2\x82\\'\n", 8, SIZE_MAX, SBX_QUOTE_TEXT | SBX_QUOTE_BACKSLASH);
	CHECK(n >= strlen(want) && !strcmp(buf + n - strlen(want), want));
	CHECK_STR(want, "\xe2\x82\xac\\xe2\\x82\\x5c'\\x0a");
	free(buf);
}

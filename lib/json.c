#include "json.h"
#include "grow.h"
#include "opts.h"
#include "status.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void put(struct sbx_json *j, const char *s, size_t n)
{
	sbx_grow_append(&j->buf, &j->len, &j->cap, &j->failed, s, n);
}

static void puts_(struct sbx_json *j, const char *s) { put(j, s, strlen(s)); }

size_t sbx_utf8_decode(const unsigned char *p, size_t n, uint32_t *out)
{
	uint32_t cp;
	size_t len, i;

	if (p[0] < 0x80) {
		*out = p[0];
		return 1;
	}
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*out = cp;
	return len;
}

size_t sbx_utf8_len(const unsigned char *p, size_t n)
{
	uint32_t cp;
	return sbx_utf8_decode(p, n, &cp);
}

/* The one rule for what reaches a reader as it is (json.h). */
int sbx_cp_printable(uint32_t cp)
{
	if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
		return 0; /* C0, DEL, C1: CSI (U+009B) and OSC (U+009D) drive terminals */
	if (cp == 0x2028 || cp == 0x2029)
		return 0; /* line and paragraph separators: a line break to some readers */
	if (cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
	    (cp >= 0x2066 && cp <= 0x2069))
		return 0; /* bidi controls: they reorder what is shown after them */
	if (cp == 0xfeff || (cp >= 0xfff9 && cp <= 0xfffb))
		return 0; /* zero-width no-break space, interlinear annotations: invisible */
	return 1;
}

static void quoted(struct sbx_json *j, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	char esc[8];
	size_t i = 0, l;
	uint32_t cp;

	put(j, "\"", 1);
	while (i < n) {
		unsigned char c = p[i];
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			put(j, esc, 2);
			i++;
		} else if ((l = sbx_utf8_decode(p + i, n - i, &cp)) == 0) {
			puts_(j, "\\ufffd");
			i++;
		} else if (!sbx_cp_printable(cp)) {
			/* Every non-printing code point is in the BMP. */
			memcpy(esc, "\\u", 2);
			esc[2] = hex[cp >> 12 & 15];
			esc[3] = hex[cp >> 8 & 15];
			esc[4] = hex[cp >> 4 & 15];
			esc[5] = hex[cp & 15];
			put(j, esc, 6);
			i += l;
		} else {
			/* Plain printable ASCII goes in one piece: a log line
			 * is mostly that, and one append per byte dominated
			 * the broker's per-connection cost. */
			size_t e = i + l;
			if (l == 1)
				while (e < n && p[e] >= 0x20 && p[e] < 0x7f && p[e] != '"' && p[e] != '\\')
					e++;
			put(j, s + i, e - i);
			i = e;
		}
	}
	put(j, "\"", 1);
}

static void key(struct sbx_json *j, const char *k)
{
	if (j->need_comma)
		put(j, ",", 1);
	j->need_comma = 1;
	if (k) {
		quoted(j, k, strlen(k));
		put(j, ":", 1);
	}
}

void sbx_json_begin(struct sbx_json *j, const char *tool, const char *event)
{
	memset(j, 0, sizeof *j);
	put(j, "{", 1);
	j->nested = 1;
	if (tool)
		sbx_json_str(j, "tool", tool);
	if (event)
		sbx_json_str(j, "event", event);
	j->head = j->len;
	j->is_exit = event && !strcmp(event, "exit");
}

void sbx_json_strn(struct sbx_json *j, const char *k, const char *v, size_t n)
{
	key(j, k);
	quoted(j, v, n);
}

void sbx_json_str(struct sbx_json *j, const char *k, const char *v)
{
	if (!v) {
		sbx_json_null(j, k);
		return;
	}
	sbx_json_strn(j, k, v, strlen(v));
}

/* Decimal digits of v, without printf: every status and log line has
 * several numbers. */
static void put_u64(struct sbx_json *j, uint64_t v, int neg)
{
	char b[24];
	size_t i = sizeof b;

	do
		b[--i] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	if (neg)
		b[--i] = '-';
	put(j, b + i, sizeof b - i);
}

void sbx_json_int(struct sbx_json *j, const char *k, int64_t v)
{
	key(j, k);
	put_u64(j, v < 0 ? -(uint64_t)v : (uint64_t)v, v < 0);
}

void sbx_json_uint(struct sbx_json *j, const char *k, uint64_t v)
{
	key(j, k);
	put_u64(j, v, 0);
}

void sbx_json_bool(struct sbx_json *j, const char *k, int v)
{
	key(j, k);
	puts_(j, v ? "true" : "false");
}

void sbx_json_null(struct sbx_json *j, const char *k)
{
	key(j, k);
	puts_(j, "null");
}

void sbx_json_raw(struct sbx_json *j, const char *k, const char *json)
{
	key(j, k);
	puts_(j, json);
}

void sbx_json_open_obj(struct sbx_json *j, const char *k)
{
	key(j, k);
	put(j, "{", 1);
	j->nested++;
	j->need_comma = 0;
}

void sbx_json_open_arr(struct sbx_json *j, const char *k)
{
	key(j, k);
	put(j, "[", 1);
	j->nested++;
	j->need_comma = 0;
}

void sbx_json_close_obj(struct sbx_json *j)
{
	put(j, "}", 1);
	j->nested--;
	j->need_comma = 1;
}

void sbx_json_close_arr(struct sbx_json *j)
{
	put(j, "]", 1);
	j->nested--;
	j->need_comma = 1;
}

const char *sbx_json_end(struct sbx_json *j, size_t *len)
{
	while (j->nested > 0)
		sbx_json_close_obj(j);
	put(j, "\n", 1);
	if (j->failed)
		return NULL;
	if (len)
		*len = j->len;
	return j->buf;
}

/* One write(2) of the line. A status reader that went away (EPIPE) must
 * not kill the tool with SIGPIPE before it says so and exits with its own
 * code, whatever the tool did with the signal so far: it is blocked for the
 * write, and the one the write raised is taken back. */
static ssize_t write_line(int fd, const char *line, size_t len)
{
	sigset_t pipe, old;
	ssize_t w;
	int guard = fd == sbx_status_fd(), e;

	if (guard) {
		sigemptyset(&pipe);
		sigaddset(&pipe, SIGPIPE);
		sigprocmask(SIG_BLOCK, &pipe, &old);
	}
	do
		w = write(fd, line, len);
	while (w < 0 && errno == EINTR);
	e = errno;
	if (guard) {
		if (w < 0 && e == EPIPE && !sigismember(&old, SIGPIPE)) {
			struct timespec now = { 0, 0 };
			sigtimedwait(&pipe, NULL, &now);
		}
		sigprocmask(SIG_SETMASK, &old, NULL);
	}
	errno = e;
	return w;
}

/* ,"version":V between the head and the rest of the line. */
static void put_version(struct sbx_json *j)
{
	static const char v[] = ",\"version\":\"" SBX_VERSION "\"";
	size_t n = sizeof v - 1, tail = j->len - j->head;

	put(j, v, n);
	if (j->failed)
		return;
	memmove(j->buf + j->head + n, j->buf + j->head, tail);
	memcpy(j->buf + j->head, v, n);
}

int sbx_json_write(struct sbx_json *j, int fd)
{
	size_t len = 0;
	const char *line;
	int r = 0;

	if (j->head > 1 && sbx_status_first(fd))
		put_version(j);
	line = sbx_json_end(j, &len);

	if (fd >= 0) {
		if (!line) {
			errno = ENOMEM;
			r = -1;
		} else {
			ssize_t w = write_line(fd, line, len);
			if (w < 0)
				r = -1;
			else if ((size_t)w != len) {
				errno = EIO;
				r = -1;
			}
		}
		sbx_status_wrote(fd, j->is_exit, r == 0, errno);
	}
	sbx_json_free(j);
	return r;
}

void sbx_json_free(struct sbx_json *j)
{
	int e = errno;
	free(j->buf);
	j->buf = NULL;
	j->len = j->cap = 0;
	errno = e;
}

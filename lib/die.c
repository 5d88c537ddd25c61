#include "die.h"

#include "status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *prog = "sbx";

void sbx_setprog(const char *name) { prog = name; }
const char *sbx_prog(void) { return prog; }

/* Length of the valid UTF-8 sequence at s (at most n bytes) that is not a
 * control character (C0, DEL, C1), or 0. */
static size_t printable_seq(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len, i;
	unsigned cp;

	if (c < 0x20 || c == 0x7f)
		return 0;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0x80 && cp <= 0x9f))
		return 0;
	return len;
}

/* The one place where text reaches a terminal: names from untrusted places
 * (workspace files, host names from clients) may hold escape sequences, so
 * every control character and invalid byte is written as \xNN (the form
 * sbx_walk_quote in lib/walk.h writes, so names it quoted stay as they are). */
static size_t escape(char *out, size_t cap, const char *in, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)in;
	size_t o = 0, i = 0;

	while (i < n) {
		size_t k = printable_seq(s + i, n - i);
		if (k) {
			if (o + k >= cap)
				break;
			memcpy(out + o, s + i, k);
			o += k;
			i += k;
			continue;
		}
		if (o + 4 >= cap)
			break;
		out[o++] = '\\';
		out[o++] = 'x';
		out[o++] = hex[s[i] >> 4];
		out[o++] = hex[s[i] & 15];
		i++;
	}
	return o;
}

void sbx_msg(enum sbx_msg_kind kind, int code, int with_errno, const char *fmt, ...)
{
	static const char *const kinds[] = { "fatal", "usage", "warning", "killed", "note" };
	int err = errno;
	char text[2048], line[4096];
	size_t n = 0, o;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsnprintf(text, sizeof text, fmt, ap);
	n = r < 0 ? 0 : (size_t)r;
	va_end(ap);
	if (with_errno && n < sizeof text) {
		r = snprintf(text + n, sizeof text - n, ": %s", strerror(err));
		n += r < 0 ? 0 : (size_t)r;
	}
	if (n >= sizeof text)
		n = sizeof text - 1;
	text[n] = '\0';
	r = snprintf(line, sizeof line, "%s: %s: ", prog, kinds[kind]);
	o = r < 0 ? 0 : (size_t)r;
	o += escape(line + o, sizeof line - o - 1, text, n);
	line[o++] = '\n';
	while (write(2, line, o) < 0 && errno == EINTR)
		;
	if (kind == SBX_MSG_FATAL || kind == SBX_MSG_USAGE) {
		sbx_status_exit_on_die(code, text);
		_exit(code);
	}
	errno = err;
}

const char *sbx_fmt_bytes(char *buf, unsigned long sz, unsigned long long v)
{
	if (v && v % (1024ULL * 1024) == 0)
		snprintf(buf, sz, "%llu MiB", v / (1024ULL * 1024));
	else
		snprintf(buf, sz, "%llu bytes", v);
	return buf;
}

const char *sbx_fmt_ms(char *buf, unsigned long sz, unsigned long long ms)
{
	unsigned long long frac = ms % 1000;
	int digits = 3;

	if (!frac) {
		snprintf(buf, sz, "%llu s", ms / 1000);
		return buf;
	}
	for (; frac % 10 == 0; frac /= 10)
		digits--;
	snprintf(buf, sz, "%llu.%0*llu s", ms / 1000, digits, frac);
	return buf;
}

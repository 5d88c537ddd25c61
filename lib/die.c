#include "die.h"

#include "json.h"
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
	size_t len;

	if (s[0] < 0x20 || s[0] == 0x7f)
		return 0;
	len = sbx_utf8_len(s, n);
	/* C1 controls U+0080..U+009F are encoded as C2 80..C2 9F. */
	if (len == 2 && s[0] == 0xc2 && s[1] < 0xa0)
		return 0;
	return len;
}

/* The one place where text reaches a terminal: names from untrusted places
 * (workspace files, host names from clients) may hold escape sequences, so
 * every control character and invalid byte is written as \xNN (the form
 * sbx_quote in lib/quote.h writes, so names it quoted stay as they are). */
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

#include "die.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *prog = "sbx";

void sbx_setprog(const char *name) { prog = name; }
const char *sbx_prog(void) { return prog; }

void sbx_msg(enum sbx_msg_kind kind, int code, int with_errno, const char *fmt, ...)
{
	static const char *const kinds[] = { "fatal", "usage", "warning", "killed", "note" };
	int err = errno;
	char line[2048];
	size_t n;
	va_list ap;
	int r;

	r = snprintf(line, sizeof line, "%s: %s: ", prog, kinds[kind]);
	n = r < 0 ? 0 : (size_t)r;
	va_start(ap, fmt);
	if (n < sizeof line) {
		r = vsnprintf(line + n, sizeof line - n, fmt, ap);
		n += r < 0 ? 0 : (size_t)r;
	}
	va_end(ap);
	if (with_errno && n < sizeof line) {
		r = snprintf(line + n, sizeof line - n, ": %s", strerror(err));
		n += r < 0 ? 0 : (size_t)r;
	}
	if (n >= sizeof line - 1)
		n = sizeof line - 2;
	line[n++] = '\n';
	while (write(2, line, n) < 0 && errno == EINTR)
		;
	if (kind == SBX_MSG_FATAL || kind == SBX_MSG_USAGE)
		_exit(code);
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

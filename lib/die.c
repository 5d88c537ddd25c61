#include "die.h"

#include "quote.h"
#include "status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *prog = "sbx";
static void (*on_die)(void);

void sbx_setprog(const char *name) { prog = name; }
const char *sbx_prog(void) { return prog; }
void sbx_on_die(void (*fn)(void)) { on_die = fn; }

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
	/* The one place where text reaches a terminal: names from untrusted
	 * places (workspace files, host names from clients) may hold escape
	 * sequences, so every control character and invalid byte becomes
	 * \xNN, the form names quoted before stay in. */
	o += strlen(sbx_quote(line + o, sizeof line - o - 1, text, n, SIZE_MAX, SBX_QUOTE_TEXT));
	line[o++] = '\n';
	while (write(2, line, o) < 0 && errno == EINTR)
		;
	if (kind == SBX_MSG_FATAL || kind == SBX_MSG_USAGE) {
		void (*fn)(void) = on_die;

		on_die = NULL;
		if (fn)
			fn();
		sbx_status_exit_on_die(code, text);
		_exit(code);
	}
	errno = err;
}

void *sbx_need(void *p)
{
	if (!p) {
		errno = ENOMEM;
		sbx_die_errno(SBX_EXIT_SYS, "unable to allocate memory");
	}
	return p;
}

char *sbx_needf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return sbx_need(n < 0 ? NULL : s);
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

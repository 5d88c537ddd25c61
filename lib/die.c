#include "die.h"
#include "exitcodes.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *prog = "sbx";

void sbx_setprog(const char *name) { prog = name; }
const char *sbx_prog(void) { return prog; }

/* Build the whole line first and write it with one write(2), so that lines
 * from several processes sharing stderr never interleave. */
static void emit(const char *kind, int err, const char *fmt, va_list ap)
{
	char line[2048];
	size_t n;
	int r;

	r = snprintf(line, sizeof line, "%s: %s: ", prog, kind);
	n = r < 0 ? 0 : (size_t)r;
	if (n < sizeof line) {
		r = vsnprintf(line + n, sizeof line - n, fmt, ap);
		n += r < 0 ? 0 : (size_t)r;
	}
	if (err && n < sizeof line) {
		r = snprintf(line + n, sizeof line - n, ": %s", strerror(err));
		n += r < 0 ? 0 : (size_t)r;
	}
	if (n >= sizeof line - 1)
		n = sizeof line - 2;
	line[n++] = '\n';
	while (write(2, line, n) < 0 && errno == EINTR)
		;
}

void sbx_die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit("fatal", 0, fmt, ap);
	va_end(ap);
	_exit(code);
}

void sbx_die_errno(int code, const char *fmt, ...)
{
	int e = errno;
	va_list ap;
	va_start(ap, fmt);
	emit("fatal", e, fmt, ap);
	va_end(ap);
	_exit(code);
}

void sbx_die_usage(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit("usage", 0, fmt, ap);
	va_end(ap);
	_exit(SBX_EXIT_USAGE);
}

void sbx_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit("warning", 0, fmt, ap);
	va_end(ap);
}

void sbx_warn_errno(const char *fmt, ...)
{
	int e = errno;
	va_list ap;
	va_start(ap, fmt);
	emit("warning", e, fmt, ap);
	va_end(ap);
	errno = e;
}

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
	static const char *const kinds[] = { "fatal", "usage", "warning", "note" };
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
	if (kind != SBX_MSG_WARNING && kind != SBX_MSG_NOTE)
		_exit(code);
	errno = err;
}

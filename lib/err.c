#include "err.h"

#include "die.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int sbx_err_vset(struct sbx_err *e, int code, int eno, const char *fmt, va_list ap)
{
	if (!e)
		return -1;
	e->code = code;
	e->eno = eno;
	e->fix = NULL;
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	return -1;
}

int sbx_err_set(struct sbx_err *e, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sbx_err_vset(e, code, 0, fmt, ap);
	va_end(ap);
	return -1;
}

int sbx_err_errno(struct sbx_err *e, int code, int eno, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sbx_err_vset(e, code, eno, fmt, ap);
	va_end(ap);
	return -1;
}

void sbx_err_die(const struct sbx_err *e)
{
	int code = e->code ? e->code : SBX_EXIT_POLICY;

	sbx_msg(code == SBX_EXIT_USAGE ? SBX_MSG_USAGE : SBX_MSG_FATAL, code, 0, "%s%s%s%s%s", e->msg,
		e->eno ? ": " : "", e->eno ? strerror(e->eno) : "", e->fix ? "; to fix: " : "",
		e->fix ? e->fix : "");
	__builtin_unreachable();
}

/* One failure, carried from where it happened to where the tool reports
 * it. A step that can fail fills a struct sbx_err (the exit code from
 * exitcodes.h, the message naming the step and the path, the errno whose
 * text ends it, what fixes it) and returns -1; its caller cleans up what
 * it made and either returns the error further or ends the run with
 * sbx_err_die(), which goes through sbx_msg() (die.c): the one stderr
 * line, the status fd's exit line and the exit code stay in one place.
 * A step that has nothing to undo dies at once with sbx_die(). */
#ifndef SBX_ERR_H
#define SBX_ERR_H

#include <stdarg.h>
#include <stddef.h>

struct sbx_err {
	int code;         /* exit code; SBX_EXIT_USAGE is reported as a usage error */
	int eno;          /* errno whose text ends the message, or 0 */
	const char *fix;  /* static text for "; to fix: FIX" at the end, or NULL */
	char msg[2048];   /* without the program name and "fatal: " */
};

/* Fill e (when not NULL) and return -1, printf-style. */
int sbx_err_set(struct sbx_err *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The same, with eno's text to end the message. */
int sbx_err_errno(struct sbx_err *e, int code, int eno, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The same from a va_list, for a module's own printf-style reporter. */
int sbx_err_vset(struct sbx_err *e, int code, int eno, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));

/* "PROG: usage: MSG" for SBX_EXIT_USAGE, else "PROG: fatal: MSG[: errno
 * text][; to fix: FIX]", and exit with e->code (a code of 0 exits
 * SBX_EXIT_POLICY: an error never ends a run as a success). */
_Noreturn void sbx_err_die(const struct sbx_err *e);

#endif

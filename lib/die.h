/* One way to report: "PROG: fatal: unable to STEP PATH: errno text". */
#ifndef SBX_DIE_H
#define SBX_DIE_H

#include <stdnoreturn.h>

/* The program name is the only global state: set once at the top of main. */
void sbx_setprog(const char *name);
const char *sbx_prog(void);

/* "PROG: fatal: MSG\n", exit(code). */
noreturn void sbx_die(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* "PROG: fatal: MSG: strerror(errno)\n", exit(code). errno is read on entry. */
noreturn void sbx_die_errno(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* "PROG: usage: MSG\n", exit(SBX_EXIT_USAGE). */
noreturn void sbx_die_usage(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
/* "PROG: warning: MSG\n" */
void sbx_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sbx_warn_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif

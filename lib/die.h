/* One way to report: "PROG: fatal: unable to STEP PATH: errno text". */
#ifndef SBX_DIE_H
#define SBX_DIE_H

#include "exitcodes.h"

/* The program name is set once at the top of main. */
void sbx_setprog(const char *name);
const char *sbx_prog(void);
/* What a program undoes before a fatal or usage message's exit (what it
 * made on the host that the run will not use): fn runs once, after the
 * message; NULL: nothing. */
void sbx_on_die(void (*fn)(void));

enum sbx_msg_kind { SBX_MSG_FATAL, SBX_MSG_USAGE, SBX_MSG_WARNING, SBX_MSG_KILLED, SBX_MSG_NOTE };

/* Writes "PROG: KIND: MSG[: strerror(errno)]\n" with one write(2), so lines
 * from several processes sharing stderr never interleave; then, for FATAL
 * and USAGE, _exit(code). errno is read on entry and preserved for warnings. */
void sbx_msg(enum sbx_msg_kind kind, int code, int with_errno, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* "PROG: fatal: MSG", exit(code). */
#define sbx_die(code, ...) \
	(sbx_msg(SBX_MSG_FATAL, (code), 0, __VA_ARGS__), __builtin_unreachable())
/* "PROG: fatal: MSG: errno text", exit(code). */
#define sbx_die_errno(code, ...) \
	(sbx_msg(SBX_MSG_FATAL, (code), 1, __VA_ARGS__), __builtin_unreachable())
/* "PROG: usage: MSG", exit(SBX_EXIT_USAGE). */
#define sbx_die_usage(...) \
	(sbx_msg(SBX_MSG_USAGE, SBX_EXIT_USAGE, 0, __VA_ARGS__), __builtin_unreachable())
/* "PROG: warning: MSG[: errno text]" */
#define sbx_warn(...) sbx_msg(SBX_MSG_WARNING, 0, 0, __VA_ARGS__)
#define sbx_warn_errno(...) sbx_msg(SBX_MSG_WARNING, 0, 1, __VA_ARGS__)
/* "PROG: killed: MSG": a limit or a timeout ended the command. */
#define sbx_killed(...) sbx_msg(SBX_MSG_KILLED, 0, 0, __VA_ARGS__)
/* "PROG: note: MSG": a limit held the command back without ending it. */
#define sbx_note(...) sbx_msg(SBX_MSG_NOTE, 0, 0, __VA_ARGS__)
/* p, or die with the one message of a failed allocation, "PROG: fatal:
 * unable to allocate memory: " and strerror(ENOMEM) (111):
 * x = sbx_need(malloc(n)). */
void *sbx_need(void *p);
/* A new string formatted like printf, or the same death as sbx_need. */
char *sbx_needf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "64 MiB" when v is whole MiB, else "N bytes". */
const char *sbx_fmt_bytes(char *buf, unsigned long sz, unsigned long long v);
/* Milliseconds as seconds the way --timeout takes them: "3 s", "0.25 s". */
const char *sbx_fmt_ms(char *buf, unsigned long sz, unsigned long long ms);

#endif

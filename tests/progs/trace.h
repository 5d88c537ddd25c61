/* Tracing a program and every process it starts, for the test programs
 * that answer or hold one system call of it (clock-set, open-hold): the
 * child stops for its tracer, installs the one-call filter of filter-one.h
 * with SECCOMP_RET_TRACE, and execs PROG; the tracer resumes every stop,
 * hands each of those calls to on_call (the call runs after it unless
 * on_call answered it) and each exec to on_exec, delivers PROG's signals,
 * passes SIGTERM, SIGINT and SIGHUP on to PROG, and returns PROG's status
 * as a shell gives it. A RET_TRACE of another filter gets ENOSYS, as it
 * would with no tracer. x86_64 only. */
#ifndef SBX_TEST_TRACE_H
#define SBX_TEST_TRACE_H

#include "filter-one.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#define TRACE_MINE 0x5bc /* SECCOMP_RET_DATA of the tracer's filter */

static pid_t trace_child;
static const char *trace_me;

static void trace_pass(int sig)
{
	kill(trace_child, sig);
}

static void trace_die(const char *what)
{
	fprintf(stderr, "%s: unable to %s: %s\n", trace_me, what, strerror(errno));
	if (trace_child > 0)
		kill(trace_child, SIGKILL);
	exit(111);
}

#ifdef __x86_64__
static int trace_run(const char *me, char **argv, unsigned int nr, void (*on_call)(pid_t),
		     void (*on_exec)(pid_t))
{
	int st;

	trace_me = me;
	trace_child = fork();
	if (trace_child < 0)
		trace_die("fork");
	if (trace_child == 0) {
		if (ptrace(PTRACE_TRACEME, 0, 0, 0) < 0 || raise(SIGSTOP) < 0)
			_exit(111);
		if (filter_one(nr, SECCOMP_RET_TRACE | TRACE_MINE) < 0) {
			fprintf(stderr, "%s: unable to install the filter: %s\n", me, strerror(errno));
			_exit(111);
		}
		execvp(argv[0], argv);
		fprintf(stderr, "%s: unable to run %s: %s\n", me, argv[0], strerror(errno));
		_exit(127);
	}
	if (waitpid(trace_child, &st, 0) < 0 || !WIFSTOPPED(st))
		trace_die("start the program");
	if (ptrace(PTRACE_SETOPTIONS, trace_child, 0,
		   PTRACE_O_TRACESECCOMP | PTRACE_O_TRACEEXEC | PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK |
			   PTRACE_O_TRACEVFORK | PTRACE_O_EXITKILL) < 0)
		trace_die("trace the program");
	signal(SIGTERM, trace_pass);
	signal(SIGINT, trace_pass);
	signal(SIGHUP, trace_pass);
	if (ptrace(PTRACE_CONT, trace_child, 0, 0) < 0)
		trace_die("start the program");
	for (;;) {
		int sig = 0, ev;
		pid_t pid = waitpid(-1, &st, __WALL);

		if (pid < 0) {
			if (errno == EINTR)
				continue;
			trace_die("wait for the program");
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (pid != trace_child)
				continue;
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
		ev = st >> 16;
		if (ev == PTRACE_EVENT_EXEC && on_exec) {
			on_exec(pid);
		} else if (ev == PTRACE_EVENT_SECCOMP) {
			unsigned long data = 0;
			struct user_regs_struct r;

			if (ptrace(PTRACE_GETEVENTMSG, pid, 0, &data) < 0 || ptrace(PTRACE_GETREGS, pid, 0, &r) < 0)
				trace_die("read a traced call");
			if (data == TRACE_MINE) {
				on_call(pid);
			} else {
				r.orig_rax = -1;
				r.rax = -ENOSYS;
				if (ptrace(PTRACE_SETREGS, pid, 0, &r) < 0)
					trace_die("answer a traced call");
			}
		} else if (!ev && WSTOPSIG(st) != SIGSTOP) {
			sig = WSTOPSIG(st); /* a signal for the program: delivered */
		}
		/* Other events, and the SIGSTOP a new thread or child starts
		 * with, only resume it. */
		ptrace(PTRACE_CONT, pid, 0, sig);
	}
}
#endif

#endif

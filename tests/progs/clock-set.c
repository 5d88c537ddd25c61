/* clock-set FILE PROG [ARGS]: run PROG (a static or dynamic program, with
 * all its threads) with a CLOCK_MONOTONIC the test sets: while FILE holds
 * a number N, every clock_gettime(CLOCK_MONOTONIC) of PROG answers the
 * second N after clock-set started, exactly (the clock stands still
 * there); while FILE is absent or empty, PROG reads the real clock. A
 * test moves PROG's time by rewriting FILE, instead of sleeping until the
 * real clock has moved. Nothing in PROG changes: clock-set traces it.
 *
 * How: the vDSO, which answers clock_gettime without entering the kernel,
 * is hidden from PROG (its auxv entry is turned into AT_IGNORE at exec, so
 * libc falls back to the system call), a seccomp filter sends every
 * clock_gettime to clock-set (SECCOMP_RET_TRACE), and clock-set answers
 * the monotonic ones itself and lets the others run. A RET_TRACE of
 * another filter (tests/progs/ns-nomountapi's) gets ENOSYS, as it would
 * with no tracer. SIGTERM, SIGINT and SIGHUP to clock-set are passed to
 * PROG; clock-set exits with PROG's status. x86_64 only. */
#include "filter-one.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MINE 0x5bc /* SECCOMP_RET_DATA of this program's filter */

static pid_t child;
static long base; /* the real monotonic second clock-set started in */

static void pass(int sig)
{
	kill(child, sig);
}

static void die(const char *what)
{
	fprintf(stderr, "clock-set: unable to %s: %s\n", what, strerror(errno));
	if (child > 0)
		kill(child, SIGKILL);
	exit(111);
}

/* -1: the real clock; else the second FILE sets. */
static long wanted(const char *file)
{
	char buf[32];
	ssize_t n;
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

#ifdef __x86_64__
static void start(char **argv)
{
	if (ptrace(PTRACE_TRACEME, 0, 0, 0) < 0 || raise(SIGSTOP) < 0)
		_exit(111);
	if (filter_one(SYS_clock_gettime, SECCOMP_RET_TRACE | MINE) < 0) {
		perror("clock-set: unable to install the filter");
		_exit(111);
	}
	execvp(argv[0], argv);
	fprintf(stderr, "clock-set: unable to run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* At exec: argc, argv, NULL, envp, NULL, then the auxv pairs. */
static void hide_vdso(pid_t pid)
{
	struct user_regs_struct r;
	unsigned long p, v;
	int nulls = 0;

	if (ptrace(PTRACE_GETREGS, pid, 0, &r) < 0)
		die("read the registers at exec");
	p = r.rsp + sizeof(long); /* past argc */
	while (nulls < 2) {
		errno = 0;
		v = (unsigned long)ptrace(PTRACE_PEEKDATA, pid, p, 0);
		if (errno)
			die("read the new program's stack");
		nulls += v == 0;
		p += sizeof(long);
	}
	for (;; p += 2 * sizeof(long)) {
		errno = 0;
		v = (unsigned long)ptrace(PTRACE_PEEKDATA, pid, p, 0);
		if (errno)
			die("read the auxiliary vector");
		if (v == AT_NULL)
			return;
		if (v == AT_SYSINFO_EHDR && ptrace(PTRACE_POKEDATA, pid, p, (void *)AT_IGNORE) < 0)
			die("hide the vDSO");
	}
}

static void on_seccomp(pid_t pid, const char *file)
{
	struct user_regs_struct r;
	unsigned long data = 0;
	long sec;

	if (ptrace(PTRACE_GETEVENTMSG, pid, 0, &data) < 0 || ptrace(PTRACE_GETREGS, pid, 0, &r) < 0)
		die("read a traced call");
	if (data != MINE) {
		r.orig_rax = -1;
		r.rax = -ENOSYS;
	} else if ((r.rdi == CLOCK_MONOTONIC || r.rdi == CLOCK_MONOTONIC_COARSE) &&
		   (sec = wanted(file)) >= 0) {
		errno = 0;
		if (ptrace(PTRACE_POKEDATA, pid, r.rsi, (void *)(base + sec)) < 0 ||
		    ptrace(PTRACE_POKEDATA, pid, r.rsi + sizeof(long), 0) < 0)
			r.rax = -EFAULT;
		else
			r.rax = 0;
		r.orig_rax = -1;
	} else {
		return; /* the real call runs */
	}
	if (ptrace(PTRACE_SETREGS, pid, 0, &r) < 0)
		die("answer a traced call");
}

int main(int argc, char **argv)
{
	struct timespec ts;
	int st;

	if (argc < 3) {
		fprintf(stderr, "clock-set: usage: clock-set FILE PROG [ARGS...]\n");
		return 100;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	base = ts.tv_sec;
	child = fork();
	if (child < 0)
		die("fork");
	if (child == 0)
		start(argv + 2);
	if (waitpid(child, &st, 0) < 0 || !WIFSTOPPED(st))
		die("start the program");
	if (ptrace(PTRACE_SETOPTIONS, child, 0,
		   PTRACE_O_TRACESECCOMP | PTRACE_O_TRACEEXEC | PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK |
			   PTRACE_O_TRACEVFORK | PTRACE_O_EXITKILL) < 0)
		die("trace the program");
	signal(SIGTERM, pass);
	signal(SIGINT, pass);
	signal(SIGHUP, pass);
	if (ptrace(PTRACE_CONT, child, 0, 0) < 0)
		die("start the program");
	for (;;) {
		int sig = 0, ev;
		pid_t pid = waitpid(-1, &st, __WALL);

		if (pid < 0) {
			if (errno == EINTR)
				continue;
			die("wait for the program");
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (pid != child)
				continue;
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
		ev = st >> 16;
		if (ev == PTRACE_EVENT_EXEC)
			hide_vdso(pid);
		else if (ev == PTRACE_EVENT_SECCOMP)
			on_seccomp(pid, argv[1]);
		else if (!ev && WSTOPSIG(st) != SIGSTOP)
			sig = WSTOPSIG(st); /* a signal for the program: delivered */
		/* Other events, and the SIGSTOP a new thread or child starts
		 * with, only resume it. */
		ptrace(PTRACE_CONT, pid, 0, sig);
	}
}
#else
int main(void)
{
	fprintf(stderr, "clock-set: x86_64 only\n");
	return 111;
}
#endif

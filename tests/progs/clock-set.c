/* clock-set [--realtime] FILE PROG [ARGS]: run PROG (a static or dynamic
 * program, with all its threads and children) with a CLOCK_MONOTONIC the
 * test sets: while FILE holds a number N, every
 * clock_gettime(CLOCK_MONOTONIC) of PROG answers the second N after
 * clock-set started, exactly (the clock stands still there); while FILE is
 * absent or empty, PROG reads the real clock. With --realtime it is
 * CLOCK_REALTIME instead that FILE sets, to the second N since 1970 (a
 * host whose clock was set back, or the time a grant was still valid),
 * and CLOCK_MONOTONIC is the real one. A test moves PROG's time by
 * rewriting FILE, instead of sleeping until the real clock has moved.
 * Nothing in PROG changes: clock-set traces it.
 *
 * How: the vDSO, which answers clock_gettime without entering the kernel,
 * is hidden from PROG (its auxv entry is turned into AT_IGNORE at exec, so
 * libc falls back to the system call), a seccomp filter sends every
 * clock_gettime to clock-set (SECCOMP_RET_TRACE, trace.h), and clock-set
 * answers the ones of its clock itself and lets the others run. A
 * RET_TRACE of another filter (tests/progs/ns-nomountapi's) gets ENOSYS,
 * as it would with no tracer. SIGTERM, SIGINT and SIGHUP to clock-set are
 * passed to PROG; clock-set exits with PROG's status. x86_64 only. */
#include "trace.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>

static long base; /* the real monotonic second clock-set started in (0: --realtime) */
static int realtime;
static const char *file;

/* -1: the real clock; else the second FILE sets. */
static long wanted(void)
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
/* At exec: argc, argv, NULL, envp, NULL, then the auxv pairs. */
static void hide_vdso(pid_t pid)
{
	struct user_regs_struct r;
	unsigned long p, v;
	int nulls = 0;

	if (ptrace(PTRACE_GETREGS, pid, 0, &r) < 0)
		trace_die("read the registers at exec");
	p = r.rsp + sizeof(long); /* past argc */
	while (nulls < 2) {
		errno = 0;
		v = (unsigned long)ptrace(PTRACE_PEEKDATA, pid, p, 0);
		if (errno)
			trace_die("read the new program's stack");
		nulls += v == 0;
		p += sizeof(long);
	}
	for (;; p += 2 * sizeof(long)) {
		errno = 0;
		v = (unsigned long)ptrace(PTRACE_PEEKDATA, pid, p, 0);
		if (errno)
			trace_die("read the auxiliary vector");
		if (v == AT_NULL)
			return;
		if (v == AT_SYSINFO_EHDR && ptrace(PTRACE_POKEDATA, pid, p, (void *)AT_IGNORE) < 0)
			trace_die("hide the vDSO");
	}
}

static void on_clock(pid_t pid)
{
	struct user_regs_struct r;
	long sec;

	if (ptrace(PTRACE_GETREGS, pid, 0, &r) < 0)
		trace_die("read a traced call");
	if (!(realtime ? r.rdi == CLOCK_REALTIME || r.rdi == CLOCK_REALTIME_COARSE :
			 r.rdi == CLOCK_MONOTONIC || r.rdi == CLOCK_MONOTONIC_COARSE) ||
	    (sec = wanted()) < 0)
		return; /* the real call runs */
	errno = 0;
	if (ptrace(PTRACE_POKEDATA, pid, r.rsi, (void *)(base + sec)) < 0 ||
	    ptrace(PTRACE_POKEDATA, pid, r.rsi + sizeof(long), 0) < 0)
		r.rax = -EFAULT;
	else
		r.rax = 0;
	r.orig_rax = -1;
	if (ptrace(PTRACE_SETREGS, pid, 0, &r) < 0)
		trace_die("answer a traced call");
}

int main(int argc, char **argv)
{
	struct timespec ts;

	if (argc > 1 && !strcmp(argv[1], "--realtime")) {
		realtime = 1;
		argv++;
		argc--;
	}
	if (argc < 3) {
		fprintf(stderr, "clock-set: usage: clock-set [--realtime] FILE PROG [ARGS...]\n");
		return 100;
	}
	file = argv[1];
	clock_gettime(CLOCK_MONOTONIC, &ts);
	base = realtime ? 0 : ts.tv_sec;
	return trace_run("clock-set", argv + 2, SYS_clock_gettime, on_clock, hide_vdso);
}
#else
int main(void)
{
	fprintf(stderr, "clock-set: x86_64 only\n");
	return 111;
}
#endif

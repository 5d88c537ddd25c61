/* open-hold NAME HELD GO PROG [ARGS]: run PROG (and what it starts) and
 * hold it at the first openat(2) with O_EXCL of a file named NAME (the
 * last component of the path), before the call runs: open-hold writes
 * "held" and a newline to the fifo HELD, waits for a line on the fifo GO,
 * then lets the call run. A test makes something happen exactly between
 * what PROG did before that call and the call itself (a prune removing
 * the record a verifier is about to make), instead of hoping a race
 * falls that way. Traced as clock-set is (trace.h); exits with PROG's
 * status. x86_64 only. */
#include "trace.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/syscall.h>

static const char *name, *held_fifo, *go_fifo;
static int held;

#ifdef __x86_64__
/* The tracee's string at addr, cut at PATH_MAX. */
static void peek_str(pid_t pid, unsigned long addr, char *out, size_t cap)
{
	size_t n = 0;

	while (n + sizeof(long) < cap) {
		long w;

		errno = 0;
		w = ptrace(PTRACE_PEEKDATA, pid, addr + n, 0);
		if (errno)
			trace_die("read a traced call's path");
		memcpy(out + n, &w, sizeof w);
		if (memchr(&w, '\0', sizeof w))
			return;
		n += sizeof w;
	}
	out[n] = '\0';
}

static void on_open(pid_t pid)
{
	struct user_regs_struct r;
	char path[PATH_MAX + 8], line[8];
	const char *base;
	int fd;

	if (held || ptrace(PTRACE_GETREGS, pid, 0, &r) < 0 || !(r.rdx & O_EXCL))
		return;
	peek_str(pid, r.rsi, path, sizeof path);
	base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	if (strcmp(base, name))
		return;
	held = 1;
	fd = open(held_fifo, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "held\n", 5) != 5)
		trace_die("say it holds");
	close(fd);
	fd = open(go_fifo, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, line, sizeof line) <= 0)
		trace_die("wait for the go");
	close(fd);
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "open-hold: usage: open-hold NAME HELD GO PROG [ARGS...]\n");
		return 100;
	}
	name = argv[1];
	held_fifo = argv[2];
	go_fifo = argv[3];
	return trace_run("open-hold", argv + 4, SYS_openat, on_open, NULL);
}
#else
int main(void)
{
	fprintf(stderr, "open-hold: x86_64 only\n");
	return 111;
}
#endif

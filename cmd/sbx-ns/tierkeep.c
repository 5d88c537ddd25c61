/* The Landlock tier's processes: no pid namespace ends them, so sbx-ns
 * does. The outer and a keeper between it and the command are child
 * subreapers: whatever the command starts (setsid, setpgid, a double
 * fork) stays their descendant, and is killed when the command ends. The
 * keeper stays when the outer is SIGKILLed: it sees its pipe from the
 * outer close, kills every descendant and removes the TMPDIR. The command
 * cannot signal or ptrace the keeper (Landlock's ptrace rule; from ABI 6
 * its signal scope; as root dropping to --uid, another uid too); below
 * ABI 6 an unprivileged caller's command can kill the keeper, and then
 * only the outer's own end kills what it left. A TMPDIR that outlived
 * both (SIGKILL of each) is named by a record, locked while either lives,
 * in the caller's deny-write record directory; the next tier run (or
 * sbx-ns --recover) removes it once the lock is free. */
#include "ns.h"

#include "die.h"
#include "exitcodes.h"
#include "fd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TIER_PREFIX "/tmp/sbx-landlock."
#define REC_PREFIX "tier-"
#define MAX_KIDS 4096

/* This process's children, from /proc/self/task/ *\/children (or, without
 * CONFIG_PROC_CHILDREN, every /proc/PID/stat naming it as the parent). */
static size_t children(pid_t *out, size_t cap)
{
	char path[64], buf[8192];
	struct dirent *e;
	size_t n = 0;
	DIR *d = opendir("/proc/self/task");
	int any = 0;

	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%.20s/children", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		any = 1;
		ssize_t len = read(fd, buf, sizeof buf - 1);
		close(fd);
		for (char *p = buf, *end; len > 0 && n < cap; p = end) {
			buf[len] = '\0';
			long pid = strtol(p, &end, 10);
			if (end == p)
				break;
			if (pid > 0)
				out[n++] = (pid_t)pid;
		}
	}
	if (d)
		closedir(d);
	if (any)
		return n;
	/* The slow way. */
	pid_t self = getpid();
	if (!(d = opendir("/proc")))
		return 0;
	while ((e = readdir(d)) && n < cap) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		snprintf(path, sizeof path, "/proc/%ld/stat", pid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t len = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		char *rp = strrchr(buf, ')');
		long ppid;
		char st;
		if (rp && sscanf(rp + 1, " %c %ld", &st, &ppid) == 2 && ppid == self)
			out[n++] = (pid_t)pid;
	}
	closedir(d);
	return n;
}

/* Kill and reap every descendant. A child's pid stays its own until it is
 * reaped here, so kill() never hits another process; the grandchildren of
 * a killed child become children (subreaper) and are taken next round.
 * Each round waits for one child to end: the loop ends when none is left. */
void ns_tier_kill_all(void)
{
	static pid_t kids[MAX_KIDS];

	for (;;) {
		size_t n = children(kids, MAX_KIDS);
		pid_t p;

		for (size_t i = 0; i < n; i++)
			kill(kids[i], SIGKILL);
		p = waitpid(-1, NULL, __WALL);
		if (p < 0 && errno == ECHILD)
			return;
		if (p < 0 && errno != EINTR)
			return;
		while (waitpid(-1, NULL, WNOHANG | __WALL) > 0)
			;
	}
}

static int valid_suffix(const char *s)
{
	size_t n = strlen(s);

	if (n != 6)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9')))
			return 0;
	return 1;
}

/* The TMPDIRs of tier runs that are gone: their record's lock is free. */
void ns_tier_leftovers(struct ns_run *r)
{
	int dfd = ns_deny_dirfd(r), rfd;
	struct dirent *e;
	DIR *d;

	if (dfd < 0 || (rfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return;
	if (!(d = fdopendir(rfd))) {
		close(rfd);
		return;
	}
	while ((e = readdir(d))) {
		char tmp[64];
		struct stat st;
		int fd;

		if (strncmp(e->d_name, REC_PREFIX, strlen(REC_PREFIX)) ||
		    !valid_suffix(e->d_name + strlen(REC_PREFIX)))
			continue;
		fd = openat(dfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0) {
			snprintf(tmp, sizeof tmp, TIER_PREFIX "%s", e->d_name + strlen(REC_PREFIX));
			ns_tier_remove(tmp);
			unlinkat(dfd, e->d_name, 0);
		}
		close(fd);
	}
	closedir(d);
}

/* The record of this run's TMPDIR, created and locked; -1 if a record of
 * that name exists (the caller makes another TMPDIR). No record directory
 * (a dry run never gets here): 0, nothing recorded. */
int ns_tier_record(struct ns_run *r, const char *tmp)
{
	int dfd = ns_deny_dirfd(r), fd;
	char name[64];

	if (dfd < 0)
		return 0;
	snprintf(name, sizeof name, REC_PREFIX "%s", tmp + strlen(TIER_PREFIX));
	fd = openat(dfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST)
		return -1;
	if (fd < 0 || flock(fd, LOCK_EX) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to record the landlock tier's TMPDIR %s", tmp);
	r->x.tier_rec = fd;
	return 0;
}

void ns_tier_unrecord(struct ns_run *r, const char *tmp)
{
	char name[64];

	if (r->x.tier_rec < 0 || ns_deny_dirfd(r) < 0)
		return;
	snprintf(name, sizeof name, REC_PREFIX "%s", tmp + strlen(TIER_PREFIX));
	unlinkat(ns_deny_dirfd(r), name, 0);
	close(r->x.tier_rec);
	r->x.tier_rec = -1;
}

/* The keeper: the command's parent. Passes termination requests on,
 * reports the command's wait status on repfd when it ends, then kills what
 * it left; if the outer goes first (deathfd closes), kills everything and
 * removes the TMPDIR itself. */
noreturn static void keeper(struct ns_run *r, int deathfd, int repfd, pid_t cmd)
{
	sigset_t set;
	struct signalfd_siginfo si;
	int sfd, st = 0;

	ns_wait_signals(&set);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0) {
		kill(cmd, SIGKILL);
		ns_tier_kill_all();
		_exit(SBX_EXIT_SYS);
	}
	for (;;) {
		struct pollfd pf[2] = { { .fd = sfd, .events = POLLIN }, { .fd = deathfd, .events = POLLIN } };
		pid_t p;

		if (poll(pf, 2, -1) < 0)
			continue;
		if (pf[1].revents) {
			/* The outer is gone: nobody else will clean up. */
			kill(cmd, SIGKILL);
			ns_tier_kill_all();
			ns_tier_end(r);
			ns_tier_unrecord(r, r->x.tier_tmp);
			_exit(SBX_EXIT_LOST);
		}
		if (read(sfd, &si, sizeof si) != (ssize_t)sizeof si)
			continue;
		if (si.ssi_signo != SIGCHLD) {
			kill(cmd, (int)si.ssi_signo);
			continue;
		}
		while ((p = waitpid(-1, &st, WNOHANG | __WALL)) > 0)
			if (p == cmd)
				break;
		if (p == cmd)
			break;
	}
	ns_tier_kill_all();
	if (write(repfd, &st, sizeof st) != (ssize_t)sizeof st)
		_exit(SBX_EXIT_SYS);
	_exit(0);
}

/* Start the keeper and, below it, the command (ns_host_exec). The outer
 * becomes a child subreaper too, for the case the keeper dies first. */
pid_t ns_tier_spawn(struct ns_run *r, void (*confine)(struct ns_run *), int *repfd)
{
	int death[2], rep[2];
	pid_t k, cmd;

	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to become a child subreaper");
	if (pipe2(death, O_CLOEXEC) < 0 || pipe2(rep, O_CLOEXEC) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create pipes");
	k = fork();
	if (k < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to fork");
	if (k > 0) {
		close(death[0]);
		close(rep[1]);
		/* death[1] stays open for the outer's life: its close is the signal. */
		*repfd = rep[0];
		return k;
	}
	close(death[1]);
	close(rep[0]);
	if (r->a->status_fd >= 0)
		close(r->a->status_fd);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0 || prctl(PR_SET_DUMPABLE, 0) < 0)
		_exit(SBX_EXIT_SYS);
	cmd = fork();
	if (cmd < 0)
		_exit(SBX_EXIT_SYS);
	if (cmd == 0)
		ns_host_exec(r, confine);
	keeper(r, death[0], rep[1], cmd);
}

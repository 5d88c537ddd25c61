/* Running the command: make its cgroup, start it inside (never outside,
 * not for an instant), supervise it, kill whatever is left, remove the
 * cgroup, and only then report. */
#include "sbx-cgroup.h"

#include "cgroup.h"
#include "die.h"
#include "exec.h"
#include "exitcodes.h"
#include "fd.h"
#include "json.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#define EMPTY_WAIT_MS 10000   /* bound on waiting for a killed cgroup to empty */

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#define SBX_CLONE_INTO_CGROUP 0x200000000ULL

/* struct clone_args of <linux/sched.h> up to CLONE_ARGS_SIZE_VER2, spelled
 * out so that the header does not clash with libc's <sched.h>. */
struct clone_args_v2 {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal;
	uint64_t stack, stack_size, tls, set_tid, set_tid_size, cgroup;
};

/* What happened, for the exit line and the exit code. */
struct outcome {
	int status;            /* wait status of the command */
	pid_t pid;             /* the direct child */
	int timed_out;
	int cancel_signal;     /* the signal that cancelled the run, or 0 */
	int leftovers;         /* the command exited, its descendants did not */
	int killed;            /* cgroup.kill was written */
	int ordered;           /* the timeout or cancellation ended it in order (ending.c) */
	struct ending end;
	int cleanup_ok;
	int have_oom, have_pids, have_cpu, have_peak, have_throttled;
	struct sbx_cg_oom oom;
	unsigned long long pids_max, usage_usec, throttled_usec, peak;
};

static void child_exec(const struct opts *o, const sigset_t *oldmask, pid_t parent, int gate, int cgfd);

static void status_start(const struct opts *o, const struct cg *child, pid_t pid, const char *how)
{
	struct sbx_json j;

	if (o->status_fd < 0)
		return;
	sbx_json_begin(&j, TOOL, "start");
	sbx_json_str(&j, "cgroup", child->path);
	sbx_json_int(&j, "pid", pid);
	sbx_json_str(&j, "placement", how);
	sbx_json_write(&j, o->status_fd);
}

/* A failure to place the command: when the kernel refused because this
 * process sits outside the subtree its user may manage (the usual mistake
 * of a delegated user), say that and what to do. */
static int place_fail(struct sbx_err *f, int e, const char *what, const struct cg *child)
{
	char own[4200], anc[4200];

	if ((e == EACCES || e == EPERM) &&
	    sbx_cg_placement(child->path, own, sizeof own, anc, sizeof anc) == 1)
		return sbx_err_set(f, SBX_EXIT_SYS,
			     "unable to %s %s: %s: this process's cgroup %s is outside the subtree uid %u "
			     "may manage, and placing a process needs write access to %s/cgroup.procs "
			     "(their common ancestor); to fix: start sbx-cgroup from inside that subtree "
			     "(systemd-run --user --scope -p Delegate=yes sbx-cgroup ..., or first write "
			     "the shell's pid into a leaf cgroup of it that uid %u owns)",
			     what, child->path, strerror(e), own, (unsigned)getuid(), anc,
			     (unsigned)getuid());
	return sbx_err_errno(f, SBX_EXIT_SYS, e, "unable to %s %s", what, child->path);
}

/* Start the command in the child cgroup: clone3(CLONE_INTO_CGROUP), or on
 * kernels without it fork a child that waits on a pipe until the parent
 * has written it into cgroup.procs. */
static pid_t spawn(const struct opts *o, const struct cg *child, const sigset_t *oldmask,
		   int *pidfd, const char **how, struct sbx_err *f)
{
	struct clone_args_v2 ca;
	pid_t self = getpid(), pid;
	int gate[2];
	char buf[32];

	memset(&ca, 0, sizeof ca);
	ca.flags = SBX_CLONE_INTO_CGROUP | CLONE_PIDFD;
	ca.pidfd = (uint64_t)(uintptr_t)pidfd;
	ca.exit_signal = SIGCHLD;
	ca.cgroup = (uint64_t)child->fd;
	*pidfd = -1;
	pid = (pid_t)sbx_clone3(&ca, sizeof ca);
	if (pid == 0)
		child_exec(o, oldmask, self, -1, child->fd);
	if (pid > 0) {
		*how = "clone3";
		return pid;
	}
	if (errno != ENOSYS && errno != EINVAL && errno != E2BIG)
		return place_fail(f, errno, "start the command in", child);

	*how = "fork";
	if (pipe2(gate, O_CLOEXEC) < 0)
		return sbx_err_errno(f, SBX_EXIT_SYS, errno, "unable to create a pipe");
	pid = fork();
	if (pid < 0)
		return sbx_err_errno(f, SBX_EXIT_SYS, errno, "unable to fork");
	if (pid == 0) {
		close(gate[1]);
		child_exec(o, oldmask, self, gate[0], child->fd);
	}
	close(gate[0]);
	snprintf(buf, sizeof buf, "%d", (int)pid);
	if (sbx_cg_write(child->fd, "cgroup.procs", buf) < 0) {
		int e = errno;
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(gate[1]);
		return place_fail(f, e, "move the command into", child);
	}
	/* Placed: let it run. */
	if (write(gate[1], "", 1) != 1) {
		int e = errno;
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(gate[1]);
		return sbx_err_errno(f, SBX_EXIT_SYS, e, "unable to release the command");
	}
	close(gate[1]);
	*pidfd = sbx_pidfd_open(pid);
	return pid;
}

/* In the new process, already inside its cgroup (or about to be). Only
 * async-signal-safe steps: after clone3 this shares nothing with libc's
 * idea of the parent's threads. */
static void child_exec(const struct opts *o, const sigset_t *oldmask, pid_t parent, int gate, int cgfd)
{
	char c;

	/* Dies with sbx-cgroup, even if that is SIGKILLed: nothing is left
	 * running unsupervised. The parent may already be gone. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(SBX_EXIT_LOST);
	if (gate >= 0) {
		ssize_t r;
		do
			r = read(gate, &c, 1);
		while (r < 0 && errno == EINTR);
		if (r != 1)
			_exit(SBX_EXIT_SYS);
		close(gate);
	}
	/* A new cgroup namespace rooted at the child cgroup where the
	 * caller may create one (root); otherwise sbx-ns does it in its user
	 * namespace. With nsdelegate it is a delegation boundary. */
	if (unshare(CLONE_NEWCGROUP) < 0 && errno != EPERM && errno != EINVAL)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create a cgroup namespace");
	signal(SIGPIPE, SIG_DFL);
	sigprocmask(SIG_SETMASK, oldmask, NULL);
	/* --cgroup-fd: the command's own cgroup, for a living sandbox that
	 * makes its commands' cgroups below it (sbx-ns --serve --cgroup-fd). */
	if (o->cgroup_fd >= 0 && (dup2(cgfd, o->cgroup_fd) < 0 || fcntl(o->cgroup_fd, F_SETFD, 0) < 0))
		sbx_die_errno(SBX_EXIT_SYS, "unable to open the cgroup on fd %d (--cgroup-fd)", o->cgroup_fd);
	{
		int keep[MAX_PASS_FDS + 1];
		size_t n = o->npass;
		memcpy(keep, o->pass, n * sizeof *keep);
		if (o->cgroup_fd >= 0)
			keep[n++] = o->cgroup_fd;
		if (sbx_close_fds_except(keep, n) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to close inherited fds");
	}
	sbx_exec(o->argv, NULL, NULL);
}

static void reap(pid_t pid, int *exited, int *status)
{
	siginfo_t si;

	memset(&si, 0, sizeof si);
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG) < 0 || si.si_pid != pid)
		return;
	*exited = 1;
	*status = si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8 : si.si_status & 0x7f;
}

static int kill_once(const struct cg *child, struct outcome *out)
{
	if (out->killed)
		return 0;
	out->killed = 1;
	return cg_kill(child);
}

/* A timeout or a cancellation: everything but the direct child at once,
 * then the direct child after its grace (ending.c). */
static int end_once(const struct cg *child, pid_t pid, int pidfd, int sigfd, struct outcome *out)
{
	if (out->killed)
		return 0;
	out->killed = 1;
	out->ordered = 1;
	return cg_end_ordered(child, pid, pidfd, sigfd, &out->end);
}

/* Wait for the command; a timeout or a cancelling signal kills the whole
 * cgroup, and the command is then reaped like any other ending. */
static void supervise(const struct opts *o, const struct cg *child, pid_t pid, int pidfd,
		      int sigfd, struct outcome *out)
{
	struct pollfd pfd[3];
	int tfd = -1, exited = 0, n;

	if (o->timeout_ms) {
		struct itimerspec its;
		memset(&its, 0, sizeof its);
		its.it_value.tv_sec = (time_t)(o->timeout_ms / 1000);
		its.it_value.tv_nsec = (long)(o->timeout_ms % 1000) * 1000000L;
		tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (tfd < 0 || timerfd_settime(tfd, 0, &its, NULL) < 0) {
			/* No timer, no timeout: do not let the command run unbounded. */
			sbx_warn_errno("unable to arm the timeout; killing the command");
			out->timed_out = 1;
			if (kill_once(child, out) < 0)
				sbx_warn_errno("unable to kill %s", child->path);
		}
	}
	for (;;) {
		reap(pid, &exited, &out->status);
		if (exited)
			break;
		n = 0;
		pfd[n++] = (struct pollfd){ .fd = sigfd, .events = POLLIN };
		if (pidfd >= 0)
			pfd[n++] = (struct pollfd){ .fd = pidfd, .events = POLLIN };
		if (tfd >= 0)
			pfd[n++] = (struct pollfd){ .fd = tfd, .events = POLLIN };
		if (poll(pfd, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			sbx_die_errno(SBX_EXIT_SYS, "unable to poll");
		}
		if (pfd[0].revents) {
			struct signalfd_siginfo si;
			while (read(sigfd, &si, sizeof si) == sizeof si) {
				if (si.ssi_signo == SIGCHLD || out->cancel_signal)
					continue;
				out->cancel_signal = (int)si.ssi_signo;
				if (end_once(child, pid, pidfd, sigfd, out) < 0)
					sbx_warn_errno("unable to kill %s", child->path);
			}
		}
		if (tfd >= 0 && pfd[n - 1].revents) {
			uint64_t ticks;
			if (read(tfd, &ticks, sizeof ticks) == sizeof ticks && !out->timed_out &&
			    !out->cancel_signal) {
				out->timed_out = 1;
				if (end_once(child, pid, pidfd, sigfd, out) < 0)
					sbx_warn_errno("unable to kill %s", child->path);
			}
			close(tfd);
			tfd = -1;
		}
	}
	if (tfd >= 0)
		close(tfd);
}

static void read_stats(const struct cg *cg, struct outcome *out)
{
	char buf[2048];

	out->have_oom = sbx_cg_oom_read(cg->fd, &out->oom) == 0;
	out->have_pids = sbx_cg_pids_refused(cg->fd, &out->pids_max) == 0;
	if (sbx_cg_read(cg->fd, "cpu.stat", buf, sizeof buf) >= 0) {
		out->have_cpu = sbx_cg_keyed(buf, "usage_usec", &out->usage_usec) == 0;
		out->have_throttled = sbx_cg_keyed(buf, "throttled_usec", &out->throttled_usec) == 0;
	}
	if (sbx_cg_read(cg->fd, "memory.peak", buf, sizeof buf) >= 0)
		out->have_peak = sscanf(buf, "%llu", &out->peak) == 1;
}

/* The exit code, by precedence: a failed cleanup (the release did not
 * happen), cancellation (128 + the signal sbx-cgroup received), timeout,
 * an OOM kill at the cgroup's memory limit or an enclosing one that the
 * command did not survive (not one at a limit of a cgroup below, which
 * the command or an sbx-ns --join --memory set), then the command's own
 * status (its code, or 128 + N when a signal killed it). */
static int exit_code(const struct outcome *out)
{
	int cmd = sbx_wait_code(out->status);

	if (!out->cleanup_ok)
		return SBX_EXIT_SYS;
	if (out->cancel_signal)
		return SBX_EXIT_SIGNAL_BASE + out->cancel_signal;
	if (out->timed_out)
		return SBX_EXIT_TIMEOUT;
	if (out->oom.reached && cmd != 0)
		return SBX_EXIT_OOM;
	return cmd;
}

static void status_exit(const struct opts *o, const struct cg *child, const struct outcome *out,
			int code)
{
	struct sbx_json j;

	if (o->status_fd < 0)
		return;
	sbx_json_begin(&j, TOOL, "exit");
	sbx_json_int(&j, "code", code);
	if (WIFSIGNALED(out->status))
		sbx_json_int(&j, "signal", WTERMSIG(out->status));
	else
		sbx_json_int(&j, "command_code", WEXITSTATUS(out->status));
	sbx_json_str(&j, "cgroup", child->path);
	sbx_json_bool(&j, "timed_out", out->timed_out);
	sbx_json_bool(&j, "cancelled", out->cancel_signal != 0);
	if (out->cancel_signal)
		sbx_json_int(&j, "cancel_signal", out->cancel_signal);
	sbx_json_bool(&j, "leftovers_killed", out->leftovers);
	if (out->ordered && !out->end.plain) {
		sbx_json_uint(&j, "grace_ms", GRACE_MS);
		sbx_json_bool(&j, "grace_expired", out->end.grace_expired);
	}
#define OPT_UINT(key, have, v) do { if (have) sbx_json_uint(&j, key, v); else sbx_json_null(&j, key); } while (0)
	OPT_UINT("oom_kill", out->have_oom, out->oom.kills);
	if (out->have_oom)
		sbx_json_bool(&j, "memory_limit_reached", out->oom.reached);
	else
		sbx_json_null(&j, "memory_limit_reached");
	OPT_UINT("pids_max_hits", out->have_pids, out->pids_max);
	OPT_UINT("cpu_usage_usec", out->have_cpu, out->usage_usec);
	OPT_UINT("cpu_throttled_usec", out->have_throttled, out->throttled_usec);
	OPT_UINT("memory_peak", out->have_peak, out->peak);
#undef OPT_UINT
	sbx_json_bool(&j, "cleanup", out->cleanup_ok);
	sbx_json_write(&j, o->status_fd);
}

/* Without --status-fd too: one line on stderr when a limit or the timeout
 * ended the command, or a limit held it back (pids.max refused forks, the
 * OOM killer took a process it survived). A cancelled run says nothing:
 * whoever sent the signal knows. */
static void tell(const struct opts *o, const struct outcome *out, int code)
{
	char lim[64], peak[64];
	unsigned long long kills = out->oom.kills;
	const char *plural = kills == 1 ? "" : "es";

	if (out->ordered && !out->end.plain && out->end.grace_expired)
		sbx_warn("%s (pid %d) was still running %s after SIGTERM; killed it (if it was "
			 "sbx-ns, its deny-write end check did not finish: sbx-ns --recover on that "
			 "workspace, or its next run, does it)", o->argv[0], out->pid,
			 out->end.cut ? "at a second cancelling signal" : "at the end of its grace of 5 s");
	if (out->cancel_signal)
		return;
	if (o->lim.memory && (out->oom.own || !out->oom.reached))
		snprintf(lim, sizeof lim, "memory limit %s", sbx_fmt_bytes(peak, sizeof peak, o->lim.memory));
	else
		snprintf(lim, sizeof lim, "an enclosing cgroup's memory limit");
	if (out->have_peak)
		sbx_fmt_bytes(peak, sizeof peak, out->peak);
	else
		snprintf(peak, sizeof peak, "unknown");
	if (out->timed_out)
		sbx_killed("timeout of %s reached", sbx_fmt_ms(peak, sizeof peak, o->timeout_ms));
	else if (code == SBX_EXIT_OOM && out->oom.reached)
		sbx_killed("%s reached (oom_kill %llu, peak %s)", lim, kills, peak);
	else if (out->oom.reached)
		sbx_note("%s reached: %llu process%s OOM-killed (peak %s)", lim, kills,
			 plural, peak);
	else if (out->oom.kills && o->lim.memory)
		sbx_note("%s not reached: %llu process%s OOM-killed at the limit of a cgroup below "
			 "(peak %s)", lim, kills, plural, peak);
	else if (out->oom.kills)
		sbx_note("%llu process%s OOM-killed at the memory limit of a cgroup below (peak %s)",
			 kills, plural, peak);
	if (out->pids_max && o->lim.pids)
		sbx_note("pids limit %llu reached %llu time%s", (unsigned long long)o->lim.pids,
			 out->pids_max, out->pids_max == 1 ? "" : "s");
	else if (out->pids_max)
		sbx_note("an enclosing cgroup's pids limit reached %llu time%s", out->pids_max,
			 out->pids_max == 1 ? "" : "s");
}

/* Undo what setup made when the command never started. */
static _Noreturn void abandon(const struct cg *holder, const char *name, const struct cg *root,
			      const char *parent, int parent_created, const struct sbx_err *f)
{
	cg_remove(holder, name);
	if (parent_created)
		cg_remove(root, parent);
	sbx_err_die(f);
}

int mode_run(const struct opts *o)
{
	struct cg root, parent, child;
	const struct cg *holder = &root;
	struct outcome out;
	struct sbx_err f;
	sigset_t mask, oldmask;
	int parent_created = 0, sigfd, pidfd, code, made;
	const char *how = "";
	pid_t pid;

	/* Signals that cancel are taken from here on through a signalfd, so
	 * none is lost between setup and supervision. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &mask, &oldmask) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to block signals");
	sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sigfd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create a signalfd");
	/* A status reader that went away must not kill the supervisor. */
	signal(SIGPIPE, SIG_IGN);

	cg_open_root(&root, o->root, "--root");
	if (o->parent) {
		if (cg_prepare_parent(&root, o->parent, &o->lim, &parent, &parent_created, &f) < 0)
			sbx_err_die(&f);
		holder = &parent;
	} else if (cg_need_controllers(&root, &o->lim, &f) < 0 ||
		   cg_enable_controllers(&root, &o->lim, &f) < 0) {
		sbx_err_die(&f);
	}

	/* A cgroup of the same name whose supervisor is gone is reaped; one
	 * still supervised is refused. */
	made = mkdirat(holder->fd, o->name, 0755) == 0;
	if (!made && errno == EEXIST) {
		if (cg_reap_orphan(holder, o->name, &f) == 0 &&
		    !(made = mkdirat(holder->fd, o->name, 0755) == 0))
			sbx_err_errno(&f, SBX_EXIT_SYS, errno, "unable to create %s/%s", holder->path, o->name);
	} else if (!made) {
		sbx_err_errno(&f, SBX_EXIT_SYS, errno, "unable to create %s/%s", holder->path, o->name);
	}
	if (!made) {
		if (parent_created)
			cg_remove(&root, o->parent);
		sbx_err_die(&f);
	}
	if (cg_open_child(holder, o->name, &child, O_RDONLY) < 0) {
		sbx_err_errno(&f, SBX_EXIT_SYS, errno, "unable to open %s", child.path);
		abandon(holder, o->name, &root, o->parent, parent_created, &f);
	}
	cg_mark_supervised(&child);
	if (cg_write_limits(&child, &o->lim, &f) < 0)
		abandon(holder, o->name, &root, o->parent, parent_created, &f);

	memset(&out, 0, sizeof out);
	{
		/* Cancelled while setting up: the command never starts. */
		struct signalfd_siginfo si;
		while (read(sigfd, &si, sizeof si) == sizeof si)
			if (si.ssi_signo != SIGCHLD && !out.cancel_signal)
				out.cancel_signal = (int)si.ssi_signo;
		if (out.cancel_signal) {
			out.cleanup_ok = cg_remove(holder, o->name) == 0;
			out.status = out.cancel_signal; /* as if killed by it */
			code = exit_code(&out);
			status_exit(o, &child, &out, code);
			return code;
		}
	}

	pid = spawn(o, &child, &oldmask, &pidfd, &how, &f);
	if (pid < 0)
		abandon(holder, o->name, &root, o->parent, parent_created, &f);
	out.pid = pid;
	status_start(o, &child, pid, how);
	sbx_ready_fd(o->ready_fd);

	supervise(o, &child, pid, pidfd, sigfd, &out);
	if (pidfd >= 0)
		close(pidfd);

	/* The command is gone; whatever it started is not allowed to stay. */
	out.cleanup_ok = 1;
	if (!out.killed && cg_populated(&child) != 0) {
		out.leftovers = 1;
		if (kill_once(&child, &out) < 0) {
			sbx_warn_errno("unable to kill what is left in %s", child.path);
			out.cleanup_ok = 0;
		}
	}
	if (cg_wait_empty(&child, EMPTY_WAIT_MS) < 0) {
		sbx_warn_errno("unable to empty %s", child.path);
		out.cleanup_ok = 0;
	}
	read_stats(&child, &out);
	close(child.fd);
	if (out.cleanup_ok && cg_remove(holder, o->name) < 0) {
		sbx_warn_errno("unable to remove %s", child.path);
		out.cleanup_ok = 0;
	}
	code = exit_code(&out);
	status_exit(o, &child, &out, code);
	tell(o, &out, code);
	return code;
}

/* --sampled: no cgroup at all. The command runs under the sampled meter of
 * lib/meter/meter.h (the one sbx-seatbelt uses on macOS): the mode a host whose
 * cgroup v2 tree has no controllers can really use. Every status line says
 * "sampled, not hard"; isolation (sbx-ns further down the chain) is
 * unchanged by it. */
#include "sbx-cgroup.h"
#include "die.h"
#include "exec.h"
#include "exitcodes.h"
#include "fd.h"
#include "json.h"
#include "meter.h"

#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

static void status_start(const struct opts *o, pid_t pid)
{
	struct sbx_json j;

	if (o->status_fd < 0)
		return;
	sbx_json_begin(&j, TOOL, "start");
	sbx_json_int(&j, "pid", pid);
	sbx_json_str(&j, "placement", "none");
	sbx_json_str(&j, "enforcement", SBX_METER_ENFORCEMENT);
	sbx_json_write(&j, o->status_fd);
}

static void status_exit(const struct opts *o, const struct sbx_meter_result *r, int cancel_signal)
{
	struct sbx_json j;

	if (o->status_fd < 0)
		return;
	sbx_json_begin(&j, TOOL, "exit");
	sbx_json_int(&j, "code", r->code);
	/* When the meter killed the tree there is no command figure to report. */
	if (!r->lost && !r->timed_out && !r->cancelled) {
		if (WIFSIGNALED(r->status))
			sbx_json_int(&j, "signal", WTERMSIG(r->status));
		else
			sbx_json_int(&j, "command_code", WEXITSTATUS(r->status));
	}
	if (cancel_signal)
		sbx_json_int(&j, "cancel_signal", cancel_signal);
	sbx_meter_json(&j, r);
	sbx_json_write(&j, o->status_fd);
}

int mode_sampled(const struct opts *o)
{
	struct sbx_meter_cfg cfg;
	struct sbx_meter_result r;
	sigset_t mask, oldmask;
	pid_t self = getpid(), pid;
	int cancel_signal = 0;

	memset(&cfg, 0, sizeof cfg);
	cfg.cpu_pct = o->lim.cpu_pct;
	cfg.memory = o->lim.memory;
	cfg.pids = o->lim.pids;
	cfg.timeout_ms = o->timeout_ms;

	/* Cancelling signals wait in a signalfd that the meter polls and never
	 * reads. SIGCHLD stays out of it: the meter reaps with waitpid, and a
	 * readable fd means "cancel". */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, &oldmask) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to block signals");
	cfg.cancel_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (cfg.cancel_fd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create a signalfd");
	/* A status reader that went away must not end the metering. */
	signal(SIGPIPE, SIG_IGN);
	/* Orphans of the command are re-parented to us and stay metered. */
	if (sbx_meter_prepare() < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to become a child subreaper");

	pid = fork();
	if (pid < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to fork");
	if (pid == 0) {
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != self)
			_exit(SBX_EXIT_LOST);
		signal(SIGPIPE, SIG_DFL);
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
		if (sbx_close_fds_except(o->pass, o->npass) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to close inherited fds");
		sbx_exec(o->argv, NULL, NULL);
	}
	status_start(o, pid);
	sbx_ready_fd(o->ready_fd);

	if (sbx_meter_run(&cfg, pid, o->status_fd, TOOL, &r) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to meter %s", o->argv[0]);
	if (r.cancelled) {
		struct signalfd_siginfo si;
		if (read(cfg.cancel_fd, &si, sizeof si) == (ssize_t)sizeof si)
			cancel_signal = (int)si.ssi_signo;
		r.code = SBX_EXIT_SIGNAL_BASE + (cancel_signal ? cancel_signal : SIGKILL);
	}
	status_exit(o, &r, cancel_signal);
	if (r.timed_out) {
		char t[64];
		sbx_killed("timeout of %s reached", sbx_fmt_ms(t, sizeof t, o->timeout_ms));
	}
	if (r.lost)
		sbx_meter_die_lost(&r);
	return r.code;
}

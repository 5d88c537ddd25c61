/* meter-run [--cpu PCT] [--memory SIZE] [--pids N] [--disk SIZE] [--workspace DIR]
 *           [--interval SECONDS] [--timeout SECONDS] [--status-fd FD]
 *           [--] prog [args...]
 *
 * Runs prog under the sampled meter (lib/meter/meter.h) with nothing else around
 * it, so the host suite can drive the meter with real processes. It is also
 * the reference for a tool's sampled mode: block the cancelling signals
 * into a signalfd, prepare, fork, restore the mask in the child and exec,
 * run the meter, write the exit line, exit with the result's code (SIGTERM,
 * SIGINT or SIGHUP to meter-run kill the tree: 128 + that signal). */
#include "die.h"
#include "exec.h"
#include "exitcodes.h"
#include "fd.h"
#include "json.h"
#include "meter.h"
#include "opts.h"
#include "parse.h"

#include <signal.h>
#include <stdint.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

enum { O_CPU = 1, O_MEMORY, O_PIDS, O_DISK, O_WORKSPACE, O_INTERVAL, O_TIMEOUT, O_STATUS_FD };

static const struct sbx_opt table[] = {
	{ "cpu", SBX_ARG, SBX_ONCE, O_CPU },
	{ "memory", SBX_ARG, SBX_ONCE, O_MEMORY },
	{ "pids", SBX_ARG, SBX_ONCE, O_PIDS },
	{ "disk", SBX_ARG, SBX_ONCE, O_DISK },
	{ "workspace", SBX_ARG, SBX_ONCE, O_WORKSPACE },
	{ "interval", SBX_ARG, SBX_ONCE, O_INTERVAL },
	{ "timeout", SBX_ARG, SBX_ONCE, O_TIMEOUT },
	{ "status-fd", SBX_ARG, SBX_ONCE, O_STATUS_FD },
	{ 0 }
};

int main(int argc, char **argv)
{
	struct sbx_meter_cfg cfg = { 0 };
	struct sbx_meter_result r;
	struct sbx_optstate st;
	const char *arg, *ws = NULL;
	int id, status_fd = -1;
	struct sbx_json j;
	sigset_t mask, old;
	pid_t pid;

	sbx_setprog("meter-run");
	sbx_opt_init(&st, 1);
	while ((id = sbx_opt_next(&st, table, argc, argv, &arg))) {
		switch (id) {
		case O_CPU: cfg.cpu_pct = sbx_opt_percent("--cpu", arg, 6400); break;
		case O_MEMORY: cfg.memory = sbx_opt_size("--memory", arg, UINT64_MAX / 2); break;
		case O_PIDS: cfg.pids = sbx_opt_u64("--pids", arg, 1, 4194304); break;
		case O_DISK: cfg.disk = sbx_opt_size("--disk", arg, UINT64_MAX / 2); break;
		case O_WORKSPACE: ws = arg; break;
		case O_INTERVAL:
			cfg.interval_ms = sbx_opt_seconds("--interval", arg, SBX_METER_MAX_INTERVAL_MS);
			if (cfg.interval_ms < SBX_METER_MIN_INTERVAL_MS)
				sbx_die_usage("--interval: invalid seconds '%s': below 0.01", arg);
			break;
		case O_TIMEOUT: cfg.timeout_ms = sbx_opt_seconds("--timeout", arg, 86400000); break;
		case O_STATUS_FD: status_fd = sbx_opt_fd("--status-fd", arg); break;
		}
	}
	if (st.ind >= argc)
		sbx_die_usage("missing program");
	if (ws) {
		cfg.disk_paths = &ws;
		cfg.ndisk_paths = 1;
	}
	/* Cancelling signals wait in a signalfd that the meter polls. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, &old) < 0 ||
	    (cfg.cancel_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to set up signals");
	if (sbx_meter_prepare() < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to become a child subreaper");
	if (status_fd >= 0)
		sbx_fd_cloexec(status_fd, 1);
	if ((pid = fork()) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to fork");
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		sbx_exec(argv + st.ind, NULL, NULL);
	}
	/* A status reader that went away must not kill the supervisor
	 * (and leave the tree unmetered). */
	signal(SIGPIPE, SIG_IGN);
	if (sbx_meter_run(&cfg, pid, status_fd, "meter-run", &r) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to meter %s", argv[st.ind]);
	if (r.cancelled) {
		struct signalfd_siginfo si;
		if (read(cfg.cancel_fd, &si, sizeof si) == (ssize_t)sizeof si)
			r.code = SBX_EXIT_SIGNAL_BASE + (int)si.ssi_signo;
	}
	sbx_json_begin(&j, "meter-run", "exit");
	sbx_json_int(&j, "code", r.code);
	/* "signal" is the command's own death, not the meter's kill. */
	if (!r.lost && !r.timed_out && !r.cancelled && WIFSIGNALED(r.status))
		sbx_json_int(&j, "signal", WTERMSIG(r.status));
	sbx_meter_json(&j, &r);
	sbx_json_write(&j, status_fd);
	if (r.lost)
		sbx_meter_die_lost(&r);
	if (r.timed_out)
		sbx_die(SBX_EXIT_TIMEOUT, "timed out: %s killed (%s)", argv[st.ind],
			SBX_METER_ENFORCEMENT);
	return r.code;
}

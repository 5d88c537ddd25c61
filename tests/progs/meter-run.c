/* meter-run [--cpu PCT] [--memory SIZE] [--disk SIZE] [--workspace DIR]
 *           [--interval SECONDS] [--status-fd FD] [--] prog [args...]
 *
 * Runs prog under the sampled meter (lib/meter.h) with nothing else around
 * it, so the host suite can drive the meter with real processes. It is also
 * the reference for a tool's sampled mode: prepare, fork, exec, run the
 * meter, write the exit line, exit with the result's code. */
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
#include <sys/wait.h>
#include <unistd.h>

enum { O_CPU = 1, O_MEMORY, O_DISK, O_WORKSPACE, O_INTERVAL, O_STATUS_FD };

static const struct sbx_opt table[] = {
	{ "cpu", SBX_ARG, SBX_ONCE, O_CPU },
	{ "memory", SBX_ARG, SBX_ONCE, O_MEMORY },
	{ "disk", SBX_ARG, SBX_ONCE, O_DISK },
	{ "workspace", SBX_ARG, SBX_ONCE, O_WORKSPACE },
	{ "interval", SBX_ARG, SBX_ONCE, O_INTERVAL },
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
	pid_t pid;

	sbx_setprog("meter-run");
	sbx_opt_init(&st, 1);
	while ((id = sbx_opt_next(&st, table, argc, argv, &arg))) {
		switch (id) {
		case O_CPU: cfg.cpu_pct = sbx_opt_percent("--cpu", arg, 6400); break;
		case O_MEMORY: cfg.memory = sbx_opt_size("--memory", arg, UINT64_MAX / 2); break;
		case O_DISK: cfg.disk = sbx_opt_size("--disk", arg, UINT64_MAX / 2); break;
		case O_WORKSPACE: ws = arg; break;
		case O_INTERVAL:
			cfg.interval_ms = sbx_opt_seconds("--interval", arg, SBX_METER_MAX_INTERVAL_MS);
			if (cfg.interval_ms < SBX_METER_MIN_INTERVAL_MS)
				sbx_die_usage("--interval: invalid seconds '%s': below 0.01", arg);
			break;
		case O_STATUS_FD: status_fd = sbx_opt_fd("--status-fd", arg); break;
		}
	}
	if (st.ind >= argc)
		sbx_die_usage("missing program");
	if (ws) {
		cfg.disk_paths = &ws;
		cfg.ndisk_paths = 1;
	}
	if (sbx_meter_prepare() < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to become a child subreaper");
	if (status_fd >= 0)
		sbx_fd_cloexec(status_fd, 1);
	if ((pid = fork()) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to fork");
	if (pid == 0)
		sbx_exec(argv + st.ind, NULL, NULL);
	if (sbx_meter_run(&cfg, pid, status_fd, "meter-run", &r) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to meter %s", argv[st.ind]);
	sbx_json_begin(&j, "meter-run", "exit");
	sbx_json_int(&j, "code", r.code);
	if (!r.lost && WIFSIGNALED(r.status))
		sbx_json_int(&j, "signal", WTERMSIG(r.status));
	sbx_meter_json(&j, &r);
	sbx_json_write(&j, status_fd);
	if (r.lost)
		sbx_meter_die_lost(&r);
	return r.code;
}

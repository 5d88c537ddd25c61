/* policy-tool: the policy library on the command line, for the tests.
 *
 *   policy-tool merge [--baseline FILE | --baseline-fd FD]
 *                     [--policy-fd FD | request options]
 *                     [--workspace DIR] [--for ns|cgroup|quota|all] [--clamp]
 *                     [--status-fd FD]
 *
 * The policy options and the merge go through sbx_policy_effective(), the
 * call the tools make, so these tests cover the tools' path.
 *
 * Request options build the request the way a tool builds it from its
 * argv: --ro PATH, --rw PATH, --deny-write GLOB, --net MODE, --allow-host
 * PATTERN, --cpu PCT, --memory SIZE, --pids N, --disk SIZE, --inodes N,
 * --hard-limits yes|no. Prints the effective policy as one JSON line on
 * stdout; with --status-fd, a line {"event":"policy","clamped":[...]}
 * there. Errors and exit codes are the tools' (100 malformed, 102 refused). */
#include "die.h"
#include "exitcodes.h"
#include "fd.h"
#include "opts.h"
#include "parse.h"
#include "policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
	O_BASE = 1, O_BASE_FD, O_REQ_FD, O_WS, O_FOR, O_CLAMP, O_STATUS,
	O_RO, O_RW, O_DENY, O_NET, O_HOST, O_CPU, O_MEM, O_PIDS, O_DISK, O_INODES, O_HARD,
};

static const struct sbx_opt table[] = {
	{ "baseline", SBX_ARG, SBX_ONCE, O_BASE },
	{ "baseline-fd", SBX_ARG, SBX_ONCE, O_BASE_FD },
	{ "policy-fd", SBX_ARG, SBX_ONCE, O_REQ_FD },
	{ "workspace", SBX_ARG, SBX_ONCE, O_WS },
	{ "for", SBX_ARG, SBX_ONCE, O_FOR },
	{ "clamp", SBX_NOARG, SBX_ONCE, O_CLAMP },
	{ "status-fd", SBX_ARG, SBX_ONCE, O_STATUS },
	{ "ro", SBX_ARG, SBX_MANY, O_RO },
	{ "rw", SBX_ARG, SBX_MANY, O_RW },
	{ "deny-write", SBX_ARG, SBX_MANY, O_DENY },
	{ "net", SBX_ARG, SBX_ONCE, O_NET },
	{ "allow-host", SBX_ARG, SBX_MANY, O_HOST },
	{ "cpu", SBX_ARG, SBX_ONCE, O_CPU },
	{ "memory", SBX_ARG, SBX_ONCE, O_MEM },
	{ "pids", SBX_ARG, SBX_ONCE, O_PIDS },
	{ "disk", SBX_ARG, SBX_ONCE, O_DISK },
	{ "inodes", SBX_ARG, SBX_ONCE, O_INODES },
	{ "hard-limits", SBX_ARG, SBX_ONCE, O_HARD },
	{ 0, 0, 0, 0 },
};

static void ok(int rc, const struct sbx_err *e)
{
	if (rc < 0)
		sbx_err_die(e);
}

int main(int argc, char **argv)
{
	struct sbx_policy req, eff;
	struct sbx_policy_opts po;
	struct sbx_err e;
	struct sbx_optstate st;
	const char *arg, *ws = NULL;
	int status_fd = -1;
	unsigned scope = SBX_PSCOPE_ALL;
	char *out;
	int id;

	sbx_setprog("policy-tool");
	if (argc < 2 || strcmp(argv[1], "merge"))
		sbx_die_usage("usage: policy-tool merge [options]");
	sbx_policy_opts_init(&po);
	sbx_policy_init(&req, "argv");
	sbx_opt_init(&st, 2);
	while ((id = sbx_opt_next(&st, table, argc, argv, &arg))) {
		switch (id) {
		case O_BASE: sbx_policy_opt_baseline(&po, arg); break;
		case O_BASE_FD: sbx_policy_opt_baseline_fd(&po, arg); break;
		case O_REQ_FD: sbx_policy_opt_policy_fd(&po, arg); break;
		case O_CLAMP: po.clamp = 1; break;
		case O_WS: ws = arg; break;
		case O_FOR:
			if (!strcmp(arg, "ns")) scope = SBX_PSCOPE_NS;
			else if (!strcmp(arg, "cgroup")) scope = SBX_PSCOPE_CGROUP;
			else if (!strcmp(arg, "quota")) scope = SBX_PSCOPE_QUOTA;
			else if (!strcmp(arg, "all")) scope = SBX_PSCOPE_ALL;
			else sbx_die_usage("--for: invalid tool '%s' (ns, cgroup, quota, all)", arg);
			break;
		case O_STATUS: status_fd = sbx_opt_fd("--status-fd", arg); break;
		case O_RO: ok(sbx_policy_add_root(&req, &req.ro, arg, "--ro", &e), &e); break;
		case O_RW: ok(sbx_policy_add_root(&req, &req.rw, arg, "--rw", &e), &e); break;
		case O_DENY: ok(sbx_policy_add_glob(&req, arg, "--deny-write", &e), &e); break;
		case O_HOST: ok(sbx_policy_add_host(&req, arg, "--allow-host", &e), &e); break;
		case O_NET: {
			static const char *const n[] = { "none", "loopback", "broker", "host" };
			int v = 0;
			for (int i = 0; i < 4; i++)
				if (!strcmp(arg, n[i]))
					v = SBX_PNET_NONE + i;
			if (!v)
				sbx_die_usage("--net: invalid mode '%s' (none, loopback, broker, host)", arg);
			ok(sbx_policy_set_int(&req, &req.net, v, "--net", &e), &e);
			break;
		}
		case O_CPU:
			ok(sbx_policy_set_u64(&req, &req.cpu, sbx_opt_percent("--cpu", arg, SBX_POL_MAX_CPU_PCT),
					      "--cpu", &e), &e);
			break;
		case O_MEM:
			ok(sbx_policy_set_u64(&req, &req.memory, sbx_opt_size("--memory", arg, SBX_POL_MAX_MEMORY),
					      "--memory", &e), &e);
			break;
		case O_PIDS:
			ok(sbx_policy_set_u64(&req, &req.pids, sbx_opt_u64("--pids", arg, 1, SBX_POL_MAX_PIDS),
					      "--pids", &e), &e);
			break;
		case O_DISK:
			ok(sbx_policy_set_u64(&req, &req.disk, sbx_opt_size("--disk", arg, SBX_POL_MAX_DISK),
					      "--disk", &e), &e);
			break;
		case O_INODES:
			ok(sbx_policy_set_u64(&req, &req.inodes, sbx_opt_u64("--inodes", arg, 1, SBX_POL_MAX_INODES),
					      "--inodes", &e), &e);
			break;
		case O_HARD:
			if (strcmp(arg, "yes") && strcmp(arg, "no"))
				sbx_die_usage("--hard-limits: invalid value '%s' (yes, no)", arg);
			ok(sbx_policy_set_int(&req, &req.hard, !strcmp(arg, "yes"), "--hard-limits", &e), &e);
			break;
		}
	}
	if (st.ind < argc)
		sbx_die_usage("unexpected argument '%s'", argv[st.ind]);

	sbx_policy_effective(&po, &req, scope, ws, "policy-tool", status_fd, &eff);
	out = sbx_policy_to_json(&eff, scope);
	if (!out || sbx_write_all(1, out, strlen(out)) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to write the policy");
	free(out);
	sbx_policy_free(&eff);
	sbx_policy_free(&req);
	return 0;
}

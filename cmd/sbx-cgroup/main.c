/* sbx-cgroup: run a command in its own cgroup v2 child with hard limits,
 * supervise it, kill everything it left behind and remove the cgroup; or
 * refuse before the command runs when a limit cannot be had. */
#include "sbx-cgroup.h"

#include "cgroup.h"
#include "die.h"
#include "exitcodes.h"
#include "status.h"
#include "fd.h"
#include "opts.h"
#include "parse.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_CPU_PCT   100000ULL                 /* 1000 cores */
#define MAX_MEMORY    (1ULL << 50)              /* 1 PiB */
#define MAX_PIDS      4194304ULL                /* PID_MAX_LIMIT: pids.max takes no more */
#define MAX_TIMEOUT   (366ULL * 86400 * 1000)   /* a year, in ms */

static const char usage_text[] =
	"usage: sbx-cgroup --root DIR --name NAME [OPTION]... [--] PROG [ARG]...\n"
	"       sbx-cgroup --root DIR --parent NAME --create [OPTION]...\n"
	"       sbx-cgroup --root DIR --parent NAME --destroy [--status-fd FD]\n"
	"       sbx-cgroup --delegate DIR --user USER [--status-fd FD]\n"
	"       sbx-cgroup --sampled [OPTION]... [--] PROG [ARG]...\n"
	"Run PROG in a cgroup v2 of its own with hard limits, and remove it after.\n"
	"\n"
	"Where:\n"
	"  --root DIR             the cgroup v2 directory prepared by the administrator\n"
	"  --name NAME            the command's cgroup, made under DIR (or DIR/PARENT)\n"
	"  --parent NAME          a cgroup under DIR holding the total limits\n"
	"  --sampled              no cgroup: limits sampled every 0.1 s, not hard\n"
	"\n"
	"Limits:\n"
	"  --cpu PCT              percent of one core (100 is one core)\n"
	"  --memory SIZE          memory.max, with swap off; K, M, G or T\n"
	"  --pids N               pids.max: processes and threads\n"
	"  --timeout SEC          end the run after SEC seconds (104); default: none\n"
	"  --baseline FILE        the administrator's baseline policy (JSON)\n"
	"  --baseline-fd FD       the baseline from an open fd (consumed)\n"
	"  --policy-fd FD         the limits as a JSON policy\n"
	"  --clamp                narrow limits wider than the baseline to it\n"
	"\n"
	"The command:\n"
	"  --status-fd FD         write JSON status lines to FD\n"
	"  --ready-fd FD          write a newline to FD once it runs in its cgroup\n"
	"  --pass-fd FD           keep FD open for the command (repeatable)\n"
	"  --cgroup-fd FD         open the command's cgroup on FD for it\n"
	"\n"
	"Administration:\n"
	"  --create               make or verify the parent with the given limits\n"
	"  --destroy              kill everything under the parent and remove it\n"
	"  --delegate DIR         as root, prepare DIR for an unprivileged --user\n"
	"  --user USER            the user of --delegate, a name or a uid\n";

/* Option ids double as bits in a mask of what was given, so that each
 * mode can say which options it takes. New options (e.g. a sampled mode)
 * are one more row here and one more bit in the masks below. */
enum {
	O_ROOT = 1, O_NAME, O_PARENT, O_CPU, O_MEMORY, O_PIDS, O_TIMEOUT,
	O_STATUS, O_READY, O_PASS, O_CREATE, O_DESTROY, O_DELEGATE, O_USER,
	O_HELP, O_SAMPLED, O_BASELINE, O_BASELINE_FD, O_POLICY_FD, O_CLAMP, O_CGROUP_FD,
};
#define BIT(id) (1U << (id))

static const struct sbx_opt table[] = {
	{ "root",      SBX_ARG,   SBX_ONCE, O_ROOT },
	{ "name",      SBX_ARG,   SBX_ONCE, O_NAME },
	{ "parent",    SBX_ARG,   SBX_ONCE, O_PARENT },
	{ "cpu",       SBX_ARG,   SBX_ONCE, O_CPU },
	{ "memory",    SBX_ARG,   SBX_ONCE, O_MEMORY },
	{ "pids",      SBX_ARG,   SBX_ONCE, O_PIDS },
	{ "timeout",   SBX_ARG,   SBX_ONCE, O_TIMEOUT },
	{ "status-fd", SBX_ARG,   SBX_ONCE, O_STATUS },
	{ "ready-fd",  SBX_ARG,   SBX_ONCE, O_READY },
	{ "pass-fd",   SBX_ARG,   SBX_MANY, O_PASS },
	{ "create",    SBX_NOARG, SBX_ONCE, O_CREATE },
	{ "destroy",   SBX_NOARG, SBX_ONCE, O_DESTROY },
	{ "delegate",  SBX_ARG,   SBX_ONCE, O_DELEGATE },
	{ "user",      SBX_ARG,   SBX_ONCE, O_USER },
	{ "help",      SBX_NOARG, SBX_ONCE, O_HELP },
	{ "sampled",   SBX_NOARG, SBX_ONCE, O_SAMPLED },
	{ "baseline",    SBX_ARG,   SBX_ONCE, O_BASELINE },
	{ "baseline-fd", SBX_ARG,   SBX_ONCE, O_BASELINE_FD },
	{ "policy-fd",   SBX_ARG,   SBX_ONCE, O_POLICY_FD },
	{ "clamp",       SBX_NOARG, SBX_ONCE, O_CLAMP },
	{ "cgroup-fd",   SBX_ARG,   SBX_ONCE, O_CGROUP_FD },
	{ NULL, 0, 0, 0 },
};

#define LIMIT_BITS (BIT(O_CPU) | BIT(O_MEMORY) | BIT(O_PIDS) | BIT(O_BASELINE) | \
		    BIT(O_BASELINE_FD) | BIT(O_POLICY_FD) | BIT(O_CLAMP))
static const unsigned allowed_run = BIT(O_ROOT) | BIT(O_NAME) | BIT(O_PARENT) | LIMIT_BITS |
	BIT(O_TIMEOUT) | BIT(O_STATUS) | BIT(O_READY) | BIT(O_PASS) | BIT(O_CGROUP_FD);
static const unsigned allowed_create = BIT(O_ROOT) | BIT(O_PARENT) | LIMIT_BITS |
	BIT(O_STATUS) | BIT(O_CREATE);
static const unsigned allowed_destroy = BIT(O_ROOT) | BIT(O_PARENT) | BIT(O_STATUS) |
	BIT(O_DESTROY);
static const unsigned allowed_delegate = BIT(O_DELEGATE) | BIT(O_USER) | BIT(O_STATUS);
/* No cgroup at all: the limits are sampled by lib/meter/meter.c. */
static const unsigned allowed_sampled = BIT(O_SAMPLED) | LIMIT_BITS | BIT(O_TIMEOUT) |
	BIT(O_STATUS) | BIT(O_READY) | BIT(O_PASS);

static const char *cg_name(const char *opt, const char *s)
{
	const char *why = sbx_cg_name_invalid(s);

	if (why)
		sbx_die_usage("%s: invalid name '%s': %s", opt, s, why);
	return s;
}

static unsigned parse(int argc, char **argv, struct opts *o)
{
	struct sbx_optstate st;
	const char *arg;
	unsigned given = 0;
	int id;

	sbx_opt_init(&st, 1);
	while ((id = sbx_opt_next(&st, table, argc, argv, &arg))) {
		given |= BIT(id);
		switch (id) {
		case O_ROOT: o->root = sbx_opt_abspath("--root", arg); break;
		case O_NAME: o->name = cg_name("--name", arg); break;
		case O_PARENT: o->parent = cg_name("--parent", arg); break;
		case O_CPU: o->lim.cpu_pct = sbx_opt_percent("--cpu", arg, MAX_CPU_PCT); break;
		case O_MEMORY: o->lim.memory = sbx_opt_size("--memory", arg, MAX_MEMORY); break;
		case O_PIDS: o->lim.pids = sbx_opt_u64("--pids", arg, 1, MAX_PIDS); break;
		case O_TIMEOUT: o->timeout_ms = sbx_opt_seconds("--timeout", arg, MAX_TIMEOUT); break;
		case O_STATUS: o->status_fd = sbx_status_opt(arg); break;
		case O_READY: o->ready_fd = sbx_opt_fd("--ready-fd", arg); break;
		case O_PASS:
			if (o->npass == MAX_PASS_FDS)
				sbx_die_usage("--pass-fd: more than %d fds", MAX_PASS_FDS);
			o->pass[o->npass++] = sbx_opt_fd_shared("--pass-fd", arg);
			break;
		case O_CREATE: o->create = 1; break;
		case O_DESTROY: o->destroy = 1; break;
		case O_DELEGATE: o->delegate = sbx_opt_abspath("--delegate", arg); break;
		case O_SAMPLED: o->sampled = 1; break;
		case O_USER:
			if (!*arg)
				sbx_die_usage("--user: invalid user '': empty");
			o->user = arg;
			break;
		case O_BASELINE: sbx_policy_opt_baseline(&o->pol, arg); break;
		case O_BASELINE_FD: sbx_policy_opt_baseline_fd(&o->pol, arg); break;
		case O_POLICY_FD: sbx_policy_opt_policy_fd(&o->pol, arg); break;
		case O_CLAMP: o->pol.clamp = 1; break;
		case O_CGROUP_FD: {
			/* a number for an fd sbx-cgroup opens: one that is free */
			uint64_t n = sbx_opt_u64("--cgroup-fd", arg, 3, 1023);
			if (fcntl((int)n, F_GETFD) >= 0)
				sbx_die_usage("--cgroup-fd: fd %d is open (name a free fd: sbx-cgroup opens the cgroup on it)",
					      (int)n);
			o->cgroup_fd = (int)n;
			break;
		}
		case O_HELP: sbx_opt_help(usage_text);
		}
	}
	o->argv = argv + st.ind;
	return given;
}

/* The first option given that the mode does not take, in table order. */
static void only(unsigned given, unsigned allowed, const char *mode)
{
	for (const struct sbx_opt *t = table; t->name; t++)
		if ((given & BIT(t->id)) && !(allowed & BIT(t->id)))
			sbx_die_usage("%s does not take --%s", mode, t->name);
}

/* The limits become the effective policy's: the request (--cpu, --memory,
 * --pids, --sampled, or the JSON on --policy-fd) merged with the baseline,
 * so that no request raises a limit the baseline sets, nor trades hard
 * limits for sampled ones where the policy requires them. Without policy
 * options the argv stands as it is. */
static void apply_policy(struct opts *o)
{
	struct sbx_policy req, eff;
	struct sbx_err e;

	if (!sbx_policy_opts_used(&o->pol))
		return;
	for (size_t i = 0; i < o->npass; i++)
		if (o->pass[i] == o->pol.baseline_fd || o->pass[i] == o->pol.policy_fd)
			sbx_die_usage("--pass-fd: fd %d is a policy fd (consumed)", o->pass[i]);
	sbx_policy_init(&req, "argv");
	if ((o->lim.cpu_pct && sbx_policy_set_u64(&req, &req.cpu, o->lim.cpu_pct, "--cpu", &e) < 0) ||
	    (o->lim.memory && sbx_policy_set_u64(&req, &req.memory, o->lim.memory, "--memory", &e) < 0) ||
	    (o->lim.pids && sbx_policy_set_u64(&req, &req.pids, o->lim.pids, "--pids", &e) < 0) ||
	    (o->sampled && sbx_policy_set_int(&req, &req.hard, 0, "--sampled", &e) < 0))
		sbx_err_die(&e);
	sbx_policy_effective(&o->pol, &req, SBX_PSCOPE_CGROUP, NULL, TOOL, o->status_fd, &eff);
	/* A clamp cannot turn --sampled into a cgroup run (that needs --root
	 * and --name): it refuses instead. */
	if (o->sampled && eff.hard.set && eff.hard.v)
		sbx_die(SBX_EXIT_POLICY, "policy refused: --sampled: sampled limits where the policy "
			"requires hard ones (%s)", eff.hard.origin ? eff.hard.origin : "policy");
	o->lim.cpu_pct = eff.cpu.set ? eff.cpu.v : 0;
	o->lim.memory = eff.memory.set ? eff.memory.v : 0;
	o->lim.pids = eff.pids.set ? eff.pids.v : 0;
	sbx_policy_free(&eff);
	sbx_policy_free(&req);
}

int main(int argc, char **argv)
{
	struct opts o;
	unsigned given;
	int has_prog;

	sbx_setprog(TOOL);
	sbx_opt_version(argc, argv);
	memset(&o, 0, sizeof o);
	o.status_fd = o.ready_fd = o.cgroup_fd = -1;
	sbx_policy_opts_init(&o.pol);
	given = parse(argc, argv, &o);
	has_prog = o.argv[0] != NULL;

	if (o.create && o.destroy)
		sbx_die_usage("--create and --destroy exclude each other");
	if (o.user && !o.delegate)
		sbx_die_usage("--user needs --delegate");

	if (o.delegate) {
		only(given, allowed_delegate, "--delegate");
		if (!o.user)
			sbx_die_usage("--delegate needs --user");
		if (has_prog)
			sbx_die_usage("--delegate takes no program");
		return mode_delegate(&o);
	}
	if (o.create || o.destroy) {
		const char *mode = o.create ? "--create" : "--destroy";
		only(given, o.create ? allowed_create : allowed_destroy, mode);
		if (!o.root)
			sbx_die_usage("%s needs --root", mode);
		if (!o.parent)
			sbx_die_usage("%s needs --parent", mode);
		if (has_prog)
			sbx_die_usage("%s takes no program", mode);
		if (o.create)
			apply_policy(&o);
		return o.create ? mode_create(&o) : mode_destroy(&o);
	}
	if (o.sampled) {
		only(given, allowed_sampled, "--sampled");
		if (!has_prog)
			sbx_die_usage("missing program");
		apply_policy(&o);
		return mode_sampled(&o);
	}
	only(given, allowed_run, "running a program");
	if (!o.root)
		sbx_die_usage("missing --root");
	if (!o.name)
		sbx_die_usage("missing --name");
	if (!has_prog)
		sbx_die_usage("missing program");
	apply_policy(&o);
	return mode_run(&o);
}

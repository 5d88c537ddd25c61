/* sbx-ns: run a command nobody trusts in fresh namespaces, on a fresh root,
 * without privileges, behind seccomp and Landlock.
 *
 *   sbx-ns (the caller's identity) --clone--> pid 1 of the sandbox (builds
 *   the root, reaps, forwards signals) --fork--> the command.
 *
 * This file is the outer process: options, the checks that need the
 * caller's view of the host, the namespaces, and the wait. */
#include "ns.h"
#include "clock.h"

#include "cmdpath.h"
#include "container.h"
#include "die.h"
#include "exec.h"
#include "exitcodes.h"
#include "status.h"
#include "fd.h"
#include "json.h"
#include "opts.h"
#include "parse.h"
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif

static const char usage[] =
	"usage: sbx-ns [--workspace DIR | --workspace-fd FD] [--ro PATH]... [--rw PATH]... "
	"[--ro-fd FD]... [--rw-fd FD]... [--bind SRC DEST]... [--ro-bind SRC DEST]... "
	"[--bind-fd FD DEST]... [--ro-bind-fd FD DEST]... [--runtime PATHS] [--tmp-in-workspace] "
	"[--deny-write GLOB]... [--home DIR] [--require-landlock] [--uid N --gid N] [--setenv NAME=VALUE]... "
	"[--keep-env NAME]... [--net none|loopback|broker:PATH[,transparent][,port=N]|host] [--broker-fd FD] "
	"[--command-path DIRS] [--allow-exec PATH]... [--protect PATH]... "
	"[--grant-fd FD --grant-key FILE [--grant-nonce-dir DIR]] [--timeout SEC] [--quiet-denials] "
	"[--baseline FILE | --baseline-fd FD] [--policy-fd FD] [--clamp] [--print-policy | --dry-run] "
	"[--status-fd FD] [--ready-fd FD] [--] prog [args...]\n"
	"       sbx-ns --recover (--workspace DIR | --workspace-fd FD) [--status-fd FD]\n"
	"       sbx-ns --version\n";

enum {
	O_WORKSPACE = 1, O_WORKSPACE_FD, O_RO, O_RW, O_RO_FD, O_RW_FD, O_RUNTIME,
	O_TMP_IN_WS, O_DENY_WRITE, O_REQUIRE_LANDLOCK, O_UID, O_GID, O_SETENV,
	O_KEEP_ENV, O_NET, O_BROKER_FD, O_STATUS_FD, O_READY_FD, O_HELP,
	O_CMDPATH, O_ALLOW_EXEC, O_PROTECT, O_GRANT_FD, O_GRANT_KEY, O_GRANT_NONCE_DIR, O_TIMEOUT,
	O_BIND, O_RO_BIND, O_BIND_FD, O_RO_BIND_FD, O_QUIET_DENIALS,
	O_BASELINE, O_BASELINE_FD, O_POLICY_FD, O_CLAMP, O_PRINT_POLICY, O_HOME,
	O_DRY_RUN, O_RECOVER,
};

#define NS_MAX_TIMEOUT_MS (7ULL * 24 * 3600 * 1000)

static const struct sbx_opt options[] = {
	{ "workspace",        SBX_ARG,   SBX_ONCE, O_WORKSPACE },
	{ "workspace-fd",     SBX_ARG,   SBX_ONCE, O_WORKSPACE_FD },
	{ "ro",               SBX_ARG,   SBX_MANY, O_RO },
	{ "rw",               SBX_ARG,   SBX_MANY, O_RW },
	{ "ro-fd",            SBX_ARG,   SBX_MANY, O_RO_FD },
	{ "rw-fd",            SBX_ARG,   SBX_MANY, O_RW_FD },
	{ "runtime",          SBX_ARG,   SBX_ONCE, O_RUNTIME },
	{ "tmp-in-workspace", SBX_NOARG, SBX_ONCE, O_TMP_IN_WS },
	{ "deny-write",       SBX_ARG,   SBX_MANY, O_DENY_WRITE },
	{ "home",             SBX_ARG,   SBX_ONCE, O_HOME },
	{ "require-landlock", SBX_NOARG, SBX_ONCE, O_REQUIRE_LANDLOCK },
	{ "uid",              SBX_ARG,   SBX_ONCE, O_UID },
	{ "gid",              SBX_ARG,   SBX_ONCE, O_GID },
	{ "setenv",           SBX_ARG,   SBX_MANY, O_SETENV },
	{ "keep-env",         SBX_ARG,   SBX_MANY, O_KEEP_ENV },
	{ "net",              SBX_ARG,   SBX_ONCE, O_NET },
	{ "broker-fd",        SBX_ARG,   SBX_ONCE, O_BROKER_FD },
	{ "status-fd",        SBX_ARG,   SBX_ONCE, O_STATUS_FD },
	{ "ready-fd",         SBX_ARG,   SBX_ONCE, O_READY_FD },
	{ "help",             SBX_NOARG, SBX_ONCE, O_HELP },
	{ "command-path",     SBX_ARG,   SBX_ONCE, O_CMDPATH },
	{ "allow-exec",       SBX_ARG,   SBX_MANY, O_ALLOW_EXEC },
	{ "protect",          SBX_ARG,   SBX_MANY, O_PROTECT },
	{ "grant-fd",         SBX_ARG,   SBX_ONCE, O_GRANT_FD },
	{ "grant-key",        SBX_ARG,   SBX_ONCE, O_GRANT_KEY },
	{ "grant-nonce-dir",  SBX_ARG,   SBX_ONCE, O_GRANT_NONCE_DIR },
	{ "timeout",          SBX_ARG,   SBX_ONCE, O_TIMEOUT },
	/* two arguments: SRC here, DEST taken from argv by parse() */
	{ "bind",             SBX_ARG,   SBX_MANY, O_BIND },
	{ "ro-bind",          SBX_ARG,   SBX_MANY, O_RO_BIND },
	{ "bind-fd",          SBX_ARG,   SBX_MANY, O_BIND_FD },
	{ "ro-bind-fd",       SBX_ARG,   SBX_MANY, O_RO_BIND_FD },
	{ "quiet-denials",    SBX_NOARG, SBX_ONCE, O_QUIET_DENIALS },
	{ "baseline",         SBX_ARG,   SBX_ONCE, O_BASELINE },
	{ "baseline-fd",      SBX_ARG,   SBX_ONCE, O_BASELINE_FD },
	{ "policy-fd",        SBX_ARG,   SBX_ONCE, O_POLICY_FD },
	{ "clamp",            SBX_NOARG, SBX_ONCE, O_CLAMP },
	{ "print-policy",     SBX_NOARG, SBX_ONCE, O_PRINT_POLICY },
	{ "dry-run",          SBX_NOARG, SBX_ONCE, O_DRY_RUN },
	{ "recover",          SBX_NOARG, SBX_ONCE, O_RECOVER },
	{ 0, 0, 0, 0 }
};

/* NAME of --setenv/--keep-env: what a shell accepts as a variable name. */
static void check_env_name(const char *opt, const char *arg, const char *name, size_t len)
{
	const char *why = sbx_env_name_invalid(name, len);

	if (why)
		sbx_die_usage("%s: invalid variable '%s': %s", opt, arg, why);
}

static size_t env_name_len(const char *s)
{
	const char *eq = strchr(s, '=');
	return eq ? (size_t)(eq - s) : strlen(s);
}

/* A name set twice (by --setenv or --keep-env) is a usage error, never
 * last-one-wins. */
static void check_env_unique(const struct ns_args *a, const char *opt, const char *arg)
{
	size_t n = env_name_len(arg), i;

	for (i = 0; i < a->nsetenv; i++)
		if (env_name_len(a->setenv[i]) == n && !strncmp(a->setenv[i], arg, n))
			sbx_die_usage("%s: variable %.*s given twice", opt, (int)n, arg);
	for (i = 0; i < a->nkeepenv; i++)
		if (env_name_len(a->keepenv[i]) == n && !strncmp(a->keepenv[i], arg, n))
			sbx_die_usage("%s: variable %.*s given twice", opt, (int)n, arg);
}

static const char **push_str(const char **v, size_t *n, const char *s)
{
	v = sbx_need(realloc(v, (*n + 1) * sizeof *v));
	v[(*n)++] = s;
	return v;
}

/* Fills a (everyone after reads it through r->a, a pointer to const)
 * and, from the options that name objects, the plan's first entries in
 * r->p-> Returns whether --net was given (an argv request that names no
 * network asks for none). */
static int parse(struct ns_args *a, struct ns_plan *p, int argc, char **argv)
{
	struct sbx_optstate st;
	const char *arg;
	int id, have_ws = 0, net_given = 0;
	const char *other = NULL;

	sbx_opt_init(&st, 1);
	while ((id = sbx_opt_next(&st, options, argc, argv, &arg))) {
		if (id != O_WORKSPACE && id != O_WORKSPACE_FD && id != O_STATUS_FD && id != O_RECOVER && !other)
			for (const struct sbx_opt *o = options; o->name; o++)
				if (o->id == id)
					other = o->name;
		switch (id) {
		case O_HELP:
			fputs(usage, stdout);
			exit(0);
		case O_WORKSPACE:
		case O_WORKSPACE_FD:
			if (have_ws)
				sbx_die_usage("--workspace and --workspace-fd are exclusive");
			have_ws = 1;
			p->ws = p->nops;
			if (id == O_WORKSPACE)
				ns_add_path(p, MNT_WORKSPACE, 0, "--workspace", arg);
			else
				ns_add_fd(p, MNT_WORKSPACE, 0, "--workspace-fd", arg);
			break;
		case O_RO: ns_add_path(p, MNT_RO, 1, "--ro", arg); break;
		case O_RW: ns_add_path(p, MNT_RW, 0, "--rw", arg); break;
		case O_HOME:
			/* A writable root like --rw, and the command's HOME. */
			ns_add_path(p, MNT_RW, 0, "--home", arg);
			a->home = p->ops[p->nops - 1].dest;
			break;
		case O_RO_FD: ns_add_fd(p, MNT_RO, 1, "--ro-fd", arg); break;
		case O_RW_FD: ns_add_fd(p, MNT_RW, 0, "--rw-fd", arg); break;
		case O_RUNTIME:
			if (!*arg)
				sbx_die_usage("--runtime: empty (use --runtime none for no system paths)");
			a->runtime = arg;
			break;
		case O_TMP_IN_WS: a->tmp_in_ws = 1; break;
		case O_DENY_WRITE:
			ns_check_glob(arg);
			p->deny = push_str(p->deny, &p->ndeny, arg);
			break;
		case O_REQUIRE_LANDLOCK: a->require_landlock = 1; break;
		case O_UID:
			p->uid = (uid_t)sbx_opt_u64("--uid", arg, 1, 4294967294ULL);
			a->have_uid = 1;
			break;
		case O_GID:
			p->gid = (gid_t)sbx_opt_u64("--gid", arg, 1, 4294967294ULL);
			a->have_gid = 1;
			break;
		case O_SETENV:
			if (!strchr(arg, '='))
				sbx_die_usage("--setenv: invalid variable '%s': missing '='", arg);
			check_env_name("--setenv", arg, arg, env_name_len(arg));
			check_env_unique(a, "--setenv", arg);
			a->setenv = push_str(a->setenv, &a->nsetenv, arg);
			break;
		case O_KEEP_ENV:
			check_env_name("--keep-env", arg, arg, strlen(arg));
			check_env_unique(a, "--keep-env", arg);
			a->keepenv = push_str(a->keepenv, &a->nkeepenv, arg);
			break;
		case O_NET: ns_parse_net(p, arg); net_given = 1; break;
		case O_BASELINE: sbx_policy_opt_baseline(&a->pol, arg); break;
		case O_BASELINE_FD: sbx_policy_opt_baseline_fd(&a->pol, arg); break;
		case O_POLICY_FD: sbx_policy_opt_policy_fd(&a->pol, arg); break;
		case O_CLAMP: a->pol.clamp = 1; break;
		case O_PRINT_POLICY: a->print_policy = 1; break;
		case O_DRY_RUN: a->dry_run = 1; break;
		case O_RECOVER: a->recover = 1; break;
		case O_BROKER_FD: ns_opt_broker_fd(p, arg); break;
		case O_STATUS_FD: a->status_fd = sbx_status_opt(arg); break;
		case O_READY_FD: a->ready_fd = sbx_opt_fd("--ready-fd", arg); break;
		case O_CMDPATH: a->cmdpath = sbx_opt_cmdpath("--command-path", arg); break;
		case O_ALLOW_EXEC: sbx_allowexec_add(&a->allow, "--allow-exec", arg); break;
		case O_PROTECT: sbx_protect_add(&a->prot, "--protect", arg); break;
		case O_GRANT_FD: p->grant_fd = sbx_opt_fd("--grant-fd", arg); break;
		case O_GRANT_KEY:
			p->grant_key = sbx_need(malloc(sizeof *p->grant_key));
			sbx_grant_key_load("--grant-key", arg, p->grant_key);
			break;
		case O_GRANT_NONCE_DIR: p->nonce_dir = ns_opt_nonce_dir(arg); break;
		case O_TIMEOUT: a->timeout_ms = sbx_opt_seconds("--timeout", arg, NS_MAX_TIMEOUT_MS); break;
		case O_QUIET_DENIALS: a->quiet_denials = 1; break;
		case O_BIND:
		case O_RO_BIND:
		case O_BIND_FD:
		case O_RO_BIND_FD: {
			static const char *const names[] = { "--bind", "--ro-bind", "--bind-fd", "--ro-bind-fd" };
			int k = id - O_BIND;
			ns_add_bind(p, k & 1, k >= 2, names[k], arg, st.ind < argc ? argv[st.ind++] : NULL);
			break;
		}
		}
	}
	if (a->recover) {
		/* Only what names the workspace and where to report. */
		if (st.ind < argc)
			sbx_die_usage("--recover takes no program");
		if (other)
			sbx_die_usage("--recover takes only --workspace or --workspace-fd, and --status-fd, not --%s", other);
		if (!have_ws)
			sbx_die_usage("missing --workspace or --workspace-fd");
		return 0;
	}
	/* --print-policy shows what would run; a program is optional. */
	if (st.ind >= argc && !a->print_policy)
		sbx_die_usage("missing program");
	if (a->print_policy && a->dry_run)
		sbx_die_usage("--print-policy and --dry-run are exclusive");
	if (st.ind < argc && !*argv[st.ind])
		sbx_die_usage("empty program name");
	a->cmd = argv + st.ind;
	if (a->pol.clamp && !sbx_policy_opts_baseline(&a->pol))
		sbx_die_usage("--clamp needs --baseline or --baseline-fd");
	if (!have_ws)
		sbx_die_usage("missing --workspace or --workspace-fd");
	if ((p->grant_fd >= 0) != (p->grant_key != NULL))
		sbx_die_usage("--grant-fd and --grant-key go together");
	if (p->nonce_dir && p->grant_fd < 0)
		sbx_die_usage("--grant-nonce-dir needs --grant-fd and --grant-key");
	if (a->cmdpath) {
		for (size_t i = 0; i < a->nsetenv; i++)
			if (!strncmp(a->setenv[i], "PATH=", 5))
				sbx_die_usage("--setenv: PATH is set by --command-path");
		for (size_t i = 0; i < a->nkeepenv; i++)
			if (!strcmp(a->keepenv[i], "PATH"))
				sbx_die_usage("--keep-env: PATH is set by --command-path");
	}
	return net_given;
}

/* The process policy, before anything is created: no writable root may
 * expose a protected path, the program must be an allowed file (a grant
 * is checked once the plan is final: grant.c). */
static void check_policy(const struct ns_args *a, struct ns_plan *p)
{
	struct sbx_protect_root *roots = sbx_need(calloc(p->nops + 1, sizeof *roots));
	const char **opts = sbx_need(calloc(p->nops + 1, sizeof *opts));
	const struct mount_op *op;
	size_t n = 0;

	for (size_t it = 0; (op = ns_next_writable(p, &it)); ) {
		roots[n].path = op->src;
		roots[n].dev = op->dev;
		roots[n].ino = op->ino;
		opts[n++] = op->opt;
	}
	sbx_protect_check(&a->prot, roots, opts, n);
	free(roots);
	free(opts);

	p->env = ns_build_env(a, p, &p->search);
	if (a->allow.n)
		sbx_allowexec_check(&a->allow, a->cmd[0], p->search, p->ops[p->ws].dest);
}

/* Who the command runs as. Root never runs it as root: it names the
 * identity (as the spec's execution uid/gid); an unprivileged caller runs it
 * as itself and may not choose. */
static void check_identity(const struct ns_args *a, struct ns_plan *p)
{
	p->caller_uid = getuid();
	p->caller_gid = getgid();
	if (geteuid() != p->caller_uid || getegid() != p->caller_gid)
		sbx_die(SBX_EXIT_POLICY, "refusing to run set-user-ID or set-group-ID");
	p->root = p->caller_uid == 0;
	if (!p->root) {
		if (a->have_uid || a->have_gid)
			sbx_die_usage("%s: only root chooses the command's identity",
				      a->have_uid ? "--uid" : "--gid");
		p->uid = p->caller_uid;
		p->gid = p->caller_gid;
		return;
	}
	if (!a->have_uid || !a->have_gid)
		sbx_die_usage("running as root needs --uid and --gid (the command never runs as root)");
}

static const char userns_help[] =
	"user namespaces are blocked for this caller; an administrator must allow them: "
	"sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces above 0, "
	"kernel.apparmor_restrict_unprivileged_userns=0 (or an AppArmor profile for sbx-ns), "
	"no container seccomp policy denying clone with CLONE_NEWUSER";

/* The errno text first, then what to change: "unable to STEP: why; help". */
noreturn static void die_userns(const char *step, const char *path)
{
	int e = errno;
	char ctr[320];

	if ((e == EPERM || e == ENOSYS) && sbx_container(ctr, sizeof ctr) != SBX_CTR_NONE)
		sbx_die(SBX_EXIT_NOISOLATION, "unable to %s%s: %s (%s); %s", step, path, strerror(e), ctr,
			sbx_fix_ctr_userns);
	sbx_die(SBX_EXIT_NOISOLATION, "unable to %s%s: %s; %s", step, path, strerror(e), userns_help);
}

/* The maps of the sandbox's user namespace, written from outside: root maps
 * itself (to build the root with its own view of the host) and the
 * command's identity; anyone else maps only itself, as the kernel allows. */
static void write_maps(const struct ns_plan *p, pid_t pid)
{
	char path[64], map[128];

	if (!p->root) {
		snprintf(path, sizeof path, "/proc/%d/setgroups", (int)pid);
		if (sbx_write_file(path, "deny") < 0 && errno != ENOENT)
			die_userns("write ", path);
		snprintf(map, sizeof map, "%u %u 1\n", (unsigned)p->uid, (unsigned)p->uid);
	} else {
		snprintf(map, sizeof map, "0 0 1\n%u %u 1\n", (unsigned)p->uid, (unsigned)p->uid);
	}
	snprintf(path, sizeof path, "/proc/%d/uid_map", (int)pid);
	if (sbx_write_file(path, map) < 0)
		die_userns("write ", path);
	if (!p->root)
		snprintf(map, sizeof map, "%u %u 1\n", (unsigned)p->gid, (unsigned)p->gid);
	else
		snprintf(map, sizeof map, "0 0 1\n%u %u 1\n", (unsigned)p->gid, (unsigned)p->gid);
	snprintf(path, sizeof path, "/proc/%d/gid_map", (int)pid);
	if (sbx_write_file(path, map) < 0)
		die_userns("write ", path);
}

static void status_namespaces(const struct ns_args *a, pid_t pid)
{
	static const char *const ns[] = { "user", "mnt", "pid", "ipc", "uts", "net", "cgroup" };
	struct sbx_json j;
	char path[64];
	struct stat st;

	if (a->status_fd < 0)
		return;
	sbx_json_begin(&j, NS_PROG, "namespaces");
	sbx_json_int(&j, "pid", pid);
	sbx_json_open_obj(&j, "ns");
	for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
		snprintf(path, sizeof path, "/proc/%d/ns/%s", (int)pid, ns[i]);
		if (stat(path, &st) == 0)
			sbx_json_uint(&j, ns[i], (uint64_t)st.st_ino);
		else
			sbx_json_null(&j, ns[i]);
	}
	sbx_json_close_obj(&j);
	sbx_json_write(&j, a->status_fd);
}

static void status_started(const struct ns_run *r, const struct ns_report *rep)
{
	struct sbx_json j;

	if (r->a->status_fd < 0)
		return;
	sbx_json_begin(&j, NS_PROG, "started");
	if (rep->value > 0)
		sbx_json_int(&j, "landlock", rep->value);
	else
		sbx_json_str(&j, "landlock", "none");
	sbx_json_bool(&j, "seccomp", 1);
	ns_net_status(&j, r->p, "handed to the broker");
	if (r->p->net == NET_BROKER)
		sbx_json_int(&j, "broker_pid", r->x.broker_pid);
	sbx_json_bool(&j, "hidepid", rep->extra);
	sbx_json_str(&j, "mounts", sbx_mnt_api_name(r->p->mnt_api));
	sbx_json_str(&j, "userns", "blocked");
	sbx_json_uint(&j, "uid", r->p->uid);
	sbx_json_uint(&j, "gid", r->p->gid);
	if (ns_grant_name(r->p))
		sbx_json_str(&j, "grant", ns_grant_name(r->p));
	sbx_json_write(&j, r->a->status_fd);
}

/* The outcome: the command's code, 128+N for a signal; if the sandbox died
 * before the command started, its own code (the message is already out). */
static int finish(const struct ns_args *a, int started, int have_exit, int cmd_status, int init_status,
		  int timed_out, int deny_live)
{
	struct sbx_json j;
	int code, sig = 0;

	if (timed_out) {
		code = SBX_EXIT_TIMEOUT;
		sig = SIGKILL;
	} else if (have_exit) {
		code = sbx_wait_code(cmd_status);
		if (WIFSIGNALED(cmd_status))
			sig = WTERMSIG(cmd_status);
	} else {
		code = sbx_wait_code(init_status);
		if (WIFSIGNALED(init_status))
			sig = WTERMSIG(init_status);
	}
	/* A protected path the end check left live fails the run, whatever
	 * the command's own code. */
	if (deny_live)
		code = SBX_EXIT_POLICY;
	if (a->status_fd >= 0) {
		sbx_json_begin(&j, NS_PROG, "exit");
		sbx_json_int(&j, "code", code);
		if (sig)
			sbx_json_int(&j, "signal", sig);
		if (!started)
			sbx_json_str(&j, "stage", "setup");
		if (timed_out)
			sbx_json_bool(&j, "timeout", 1);
		if (deny_live)
			sbx_json_str(&j, "error", "deny-write: a protected path is live under its real name");
		sbx_json_write(&j, a->status_fd);
	}
	return code;
}

/* Forward termination requests to pid 1 (which passes them to the command)
 * and collect the reports until pid 1 is gone. --timeout kills pid 1 (and
 * with it every process of the sandbox) when the time is up. */
static int wait_sandbox(struct ns_run *r, pid_t pid)
{
	sigset_t set;
	struct signalfd_siginfo si;
	struct pollfd pf[4];
	struct ns_report rep;
	int sfd, started = 0, have_exit = 0, cmd_status = 0, st = 0, report_open = 1, timed_out = 0, deny_live;
	uint64_t deadline = r->a->timeout_ms ? sbx_now_ms() + r->a->timeout_ms : 0;

	ns_wait_signals(&set);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0) {
		kill(pid, SIGKILL);
		sbx_die_errno(SBX_EXIT_SYS, "unable to create signalfd");
	}
	for (;;) {
		pf[0].fd = sfd;
		pf[0].events = POLLIN;
		pf[1].fd = report_open ? r->x.report_fd : -1;
		pf[1].events = POLLIN;
		int wait_ms = 1000, rc; /* the deny-write record's heartbeat */
		ns_deny_heartbeat(r);
		if (deadline && !timed_out) {
			uint64_t now = sbx_now_ms();
			if (now >= deadline) {
				kill(pid, SIGKILL);
				timed_out = 1;
			} else {
				wait_ms = deadline - now > 1000 ? 1000 : (int)(deadline - now);
			}
		}
		pf[2].fd = ns_notify_fd(r);
		pf[2].events = POLLIN;
		pf[2].revents = 0;
		pf[3].fd = ns_net_fd(r);
		pf[3].events = POLLIN;
		pf[3].revents = 0;
		rc = poll(pf, 4, wait_ms);
		if (rc < 0) {
			if (errno == EINTR)
				continue;
			kill(pid, SIGKILL);
			sbx_die_errno(SBX_EXIT_SYS, "unable to poll");
		}
		if (pf[1].revents) {
			ssize_t n = read(r->x.report_fd, &rep, sizeof rep);
			if (n == (ssize_t)sizeof rep && rep.kind == 'S') {
				started = 1;
				status_started(r, &rep);
			} else if (n == (ssize_t)sizeof rep && rep.kind == 'X') {
				have_exit = 1;
				cmd_status = rep.value;
			} else if (n == (ssize_t)sizeof rep && rep.kind == 'F') {
				r->x.tier_proc = rep.value;
			} else if (n <= 0 && !(n < 0 && errno == EINTR)) {
				report_open = 0;
			}
		}
		if (pf[2].revents)
			ns_notify_handle(r, pf[2].revents);
		if (pf[3].revents)
			ns_net_handle(r);
		if (!(pf[0].revents & POLLIN))
			continue;
		if (read(sfd, &si, sizeof si) != (ssize_t)sizeof si)
			continue;
		if (si.ssi_signo != SIGCHLD) {
			kill(pid, (int)si.ssi_signo);
			continue;
		}
		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
	}
	/* pid 1 wrote its report before exiting: drain it. */
	while (report_open) {
		ssize_t n = read(r->x.report_fd, &rep, sizeof rep);
		if (n != (ssize_t)sizeof rep)
			break;
		if (rep.kind == 'S') {
			started = 1;
			status_started(r, &rep);
		} else if (rep.kind == 'X') {
			have_exit = 1;
			cmd_status = rep.value;
		} else if (rep.kind == 'F') {
			r->x.tier_proc = rep.value;
		}
	}
	close(sfd);
	ns_notify_end(r);
	deny_live = ns_deny_end(r) < 0;
	ns_net_finish(r);
	/* pid 1 found no fresh /proc and the baseline allows the tier: the
	 * caller takes it (the command never ran). */
	if (r->x.tier_proc && !started && !timed_out)
		return -1;
	return finish(r->a, started, have_exit, cmd_status, st, timed_out, deny_live);
}

/* The OOM killer of a memory limit picks the largest process; a command
 * that keeps its memory in a tmpfs can make that the tiny outer, whose end
 * check would then be lost. Root exempts the outer (pid 1 was cloned
 * before, and keeps the caller's value); others (and a root without
 * CAP_SYS_RESOURCE) cannot lower it, and a
 * killed outer's record is taken over by the next run or --recover. */
static void outer_oom_exempt(const struct ns_plan *p)
{
	int fd;

	if (!p->root || (fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC)) < 0)
		return;
	if (write(fd, "-1000", 5) != 5 && errno != EACCES && errno != EPERM)
		sbx_warn_errno("unable to exempt the outer process from the OOM killer");
	close(fd);
}

/* --recover: what killed runs on this workspace left is made inert (the
 * check their own end would have done), and nothing runs. A runtime calls
 * it after a crash took the whole chain down. */
noreturn static void recover_only(struct ns_run *r, struct ns_plan *p)
{
	struct sbx_json j;

	p->caller_uid = getuid();
	p->caller_gid = getgid();
	if (geteuid() != p->caller_uid || getegid() != p->caller_gid)
		sbx_die(SBX_EXIT_POLICY, "refusing to run set-user-ID or set-group-ID");
	p->root = p->caller_uid == 0;
	ns_workspace_fd(p);
	ns_deny_recover(r);
	ns_tier_leftovers(r);
	if (r->a->status_fd >= 0) {
		sbx_json_begin(&j, NS_PROG, "exit");
		sbx_json_int(&j, "code", 0);
		sbx_json_bool(&j, "recover", 1);
		sbx_json_write(&j, r->a->status_fd);
	}
	exit(SBX_EXIT_OK);
}

int main(int argc, char **argv)
{
	struct ns_args args;
	struct ns_plan plan;
	struct ns_run r;
	sigset_t block;
	int syncp[2], repp[2], code, net_given;
	pid_t ppid = getppid(), pid;

	sbx_setprog(NS_PROG);
	sbx_opt_version(argc, argv);
	memset(&args, 0, sizeof args);
	memset(&plan, 0, sizeof plan);
	memset(&r, 0, sizeof r);
	r.a = &args;
	r.p = &plan;
	args.status_fd = args.ready_fd = plan.wsfd = plan.grant_fd = -1;
	plan.net = NET_NONE;
	plan.broker_fd = -1;
	sbx_policy_opts_init(&args.pol);
	net_given = parse(&args, &plan, argc, argv);
	if (args.recover)
		recover_only(&r, &plan);
	check_identity(r.a, &plan);

	/* Killing whatever started sbx-ns kills the sandbox. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to set the parent-death signal");
	if (getppid() != ppid)
		sbx_die(SBX_EXIT_LOST, "unable to start: the parent process is gone");

	ns_apply_policy(r.a, &plan, net_given);
	ns_add_runtime(r.a, &plan);
	ns_drop_ro_in_ws(r.a, &plan);
	ns_check_binds(r.a, &plan);
	ns_check_ops(&plan);
	ns_check_launcher(&plan);
	ns_check_net(r.a, &plan);
	if (sbx_probe_landlock(&plan.landlock_abi) != 0)
		plan.landlock_abi = 0;
	plan.mnt_api = sbx_mnt_probe();
	if (r.a->require_landlock && plan.landlock_abi <= 0)
		sbx_die(SBX_EXIT_NOISOLATION, "unable to use Landlock: this kernel does not offer it (--require-landlock)");
	check_policy(r.a, &plan);
	ns_check_ws_writable(r.a, &plan);
	ns_plan_hint(r.a, &plan);
	ns_plan_scratch(r.a, &plan);
	/* --dry-run: no takeover of earlier runs' records (it changes the
	 * host), and the plan is printed before anything is prepared. */
	if (!r.a->dry_run) {
		ns_workspace_fd(&plan);
		ns_deny_recover(&r);
	}
	ns_plan_deny(&plan, ns_deny_prev(&r));
	ns_plan_root(r.a, &plan);
	/* The plan is final: a grant is checked against it (grant.c). */
	if (r.a->dry_run || plan.grant_key)
		ns_plan_program(r.a, &plan);
	ns_check_grant(r.a, &plan);
	if (r.a->dry_run)
		ns_dry_run(&r);

	ns_net_prepare(&r);
	ns_notify_prepare(&r);
	if (pipe2(syncp, O_CLOEXEC) < 0 || pipe2(repp, O_CLOEXEC) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create pipes");
	sigemptyset(&block);
	sigaddset(&block, SIGCHLD);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGQUIT);
	signal(SIGCHLD, SIG_DFL);
	if (sigprocmask(SIG_BLOCK, &block, &r.x.oldmask) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to block signals");
	ns_deny_record(&r);

	/* One clone: every namespace at once; the child is pid 1. Raw clone
	 * (fork semantics) so nothing in libc runs twice. */
	pid = (pid_t)syscall(SYS_clone, (unsigned long)(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID |
			     CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP | SIGCHLD |
			     (r.p->net == NET_HOST ? 0 : CLONE_NEWNET)),
			     0, 0, 0, 0);
	if (pid < 0) {
		/* Only here, where the namespaces the sandbox is made of cannot
		 * be had, and only if the effective policy has both halves of
		 * the unsafe fallback; anything else fails closed. */
		int e = errno, nons = e == EPERM || e == ENOSPC || e == EUSERS || e == EINVAL || e == EACCES;
		if (r.p->pol_on && sbx_policy_unsafe_fallback(&r.p->eff) && nons) {
			ns_grant_no_fallback(r.p, "the unsafe fallback", e);
			ns_unsafe_fallback(&r, e);
		}
		if (ns_tier_allowed(r.p) && nons) {
			ns_grant_no_fallback(r.p, "the Landlock tier", e);
			ns_landlock_tier(&r, e);
		}
		errno = e;
		die_userns("create namespaces", "");
	}
	if (pid == 0) {
		sbx_status_disown(); /* the outer reports pid 1's end */
		close(syncp[1]);
		close(repp[0]);
		r.x.sync_fd = syncp[0];
		r.x.report_fd = repp[1];
		ns_notify_inside(&r);
		ns_init_main(&r);
	}
	close(syncp[0]);
	close(repp[1]);
	r.x.report_fd = repp[0];
	ns_notify_outer(&r);
	/* A status reader that goes away must not take the sandbox with it
	 * (the sandbox was created before this, with the caller's disposition). */
	signal(SIGPIPE, SIG_IGN);
	write_maps(r.p, pid);
	ns_deny_started(&r, pid);
	outer_oom_exempt(r.p);
	status_namespaces(r.a, pid);
	/* Go. The outer keeps its end open for life: the sandbox sees EOF
	 * (and has its parent-death signal) when the outer is gone. */
	if (write(syncp[1], "g", 1) != 1) {
		kill(pid, SIGKILL);
		sbx_die_errno(SBX_EXIT_SYS, "unable to start the sandbox");
	}
	ns_net_outer(&r, pid);
	if (r.a->ready_fd >= 0)
		close(r.a->ready_fd);
	code = wait_sandbox(&r, pid);
	ns_net_end(&r);
	if (code < 0) {
		ns_grant_no_fallback(r.p, "the Landlock tier", r.x.tier_proc);
		ns_landlock_tier(&r, r.x.tier_proc);
	}
	return code;
}

/* sbx-ns's arguments: the option table, parse() into struct ns_args and
 * the first plan entries, and the two checks that need only the caller's
 * view before anything is created (the identity, the process policy). */
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

static const char usage[] =
	"usage: sbx-ns [OPTION]... [--] PROG [ARG]...\n"
	"       sbx-ns [OPTION]... --serve PATH [--] [PROG [ARG]...]\n"
	"       sbx-ns --join PATH [OPTION]... [--] PROG [ARG]...\n"
	"       sbx-ns --join PATH (--jobs | --wait-job ID | --kill-job ID | --stop)\n"
	"       sbx-ns --join PATH --connect PORT [--connect-fd N] [--] HOSTPROG [ARG]...\n"
	"       sbx-ns --recover (--workspace DIR | --workspace-fd FD) [--status-fd FD]\n"
	"Run PROG in fresh namespaces, on a fresh root, behind Landlock and seccomp.\n"
	"\n"
	"What the command sees:\n"
	"  --workspace DIR        the directory it may write, and its working directory\n"
	"  --workspace-fd FD      the workspace as an open directory fd (consumed)\n"
	"  --ro PATH              show PATH read-only at its own path (repeatable)\n"
	"  --rw PATH              show PATH writable at its own path (repeatable)\n"
	"  --ro-fd FD             --ro for an open fd (consumed)\n"
	"  --rw-fd FD             --rw for an open fd (consumed)\n"
	"  --bind SRC DEST        show the host's SRC writable at DEST\n"
	"  --ro-bind SRC DEST     show the host's SRC read-only at DEST\n"
	"  --bind-fd FD DEST      --bind for an open fd (consumed)\n"
	"  --ro-bind-fd FD DEST   --ro-bind for an open fd (consumed)\n"
	"  --runtime PATHS        the system paths shown read-only (a:b:c, or none)\n"
	"  --tmp-in-workspace     /tmp and /dev/shm on the workspace's file system\n"
	"  --changes DIR          its writes go to change set DIR, not the workspace\n"
	"  --deny-write GLOB      a path it may read, not change; replaces the defaults\n"
	"  --home DIR             a writable HOME; default: /tmp/home, gone at the end\n"
	"  --protect PATH         refuse to run if PATH would be writable\n"
	"\n"
	"Identity and environment:\n"
	"  --uid N                the command's uid; root only, and then required\n"
	"  --gid N                the command's gid; root only, and then required\n"
	"  --setenv NAME=VALUE    set a variable for the command\n"
	"  --keep-env NAME        pass the caller's value of NAME (if set)\n"
	"  --no-host-ca           do not keep the host's CA variables and their files\n"
	"  --command-path DIRS    where PROG is looked up, and the command's PATH\n"
	"  --allow-exec PATH      PROG must be this file (device and inode)\n"
	"\n"
	"Network:\n"
	"  --net MODE             none (default), loopback, host or broker:PATH[,...]\n"
	"  --broker-fd FD         with --net broker: the broker's socket as an open fd\n"
	"\n"
	"Limits and policy:\n"
	"  --timeout SEC          kill the whole sandbox after SEC seconds (exit 104)\n"
	"  --require-landlock     refuse to run (106) on a kernel without Landlock\n"
	"  --quiet-denials        denied calls fail with EPERM and are not reported\n"
	"  --grant-fd FD          run only what the grant read from FD allows\n"
	"  --grant-key FILE       the key that grants are verified with\n"
	"  --grant-nonce-dir DIR  where single-use grants are recorded\n"
	"  --baseline FILE        the administrator's baseline policy (JSON)\n"
	"  --baseline-fd FD       the baseline from an open fd (consumed)\n"
	"  --policy-fd FD         the request as a JSON policy instead of options\n"
	"  --clamp                narrow a request wider than the baseline to it\n"
	"  --observe FILE         record what the run did in FILE (a new file)\n"
	"  --shadow-policy FILE   report what the policy in FILE would refuse\n"
	"\n"
	"Output and control:\n"
	"  --print-policy         print the effective policy as JSON; run nothing\n"
	"  --dry-run              make every check, print the plan as JSON; run nothing\n"
	"  --pty                  give the command a terminal of the sandbox's own\n"
	"  --status-fd FD         write JSON status lines to FD\n"
	"  --ready-fd FD          write a newline to FD once the sandbox is set up\n"
	"  --recover              run nothing: clean up after runs that were killed\n"
	"\n"
	"A living sandbox:\n"
	"  --serve PATH           keep the sandbox, serving commands on socket PATH\n"
	"  --ready-port N         ready once 127.0.0.1:N accepts inside it\n"
	"  --ready-timeout SEC    how long it may take to become ready; default: 30\n"
	"  --cgroup-fd FD         its cgroup, whose limits bound all its commands\n"
	"\n";

enum {
	O_WORKSPACE = 1, O_WORKSPACE_FD, O_RO, O_RW, O_RO_FD, O_RW_FD, O_RUNTIME,
	O_TMP_IN_WS, O_DENY_WRITE, O_REQUIRE_LANDLOCK, O_UID, O_GID, O_SETENV,
	O_KEEP_ENV, O_NET, O_BROKER_FD, O_STATUS_FD, O_READY_FD, O_HELP,
	O_CMDPATH, O_ALLOW_EXEC, O_PROTECT, O_GRANT_FD, O_GRANT_KEY, O_GRANT_NONCE_DIR, O_TIMEOUT,
	O_BIND, O_RO_BIND, O_BIND_FD, O_RO_BIND_FD, O_QUIET_DENIALS,
	O_BASELINE, O_BASELINE_FD, O_POLICY_FD, O_CLAMP, O_PRINT_POLICY, O_HOME,
	O_DRY_RUN, O_RECOVER, O_SERVE, O_READY_PORT, O_READY_TIMEOUT, O_CGROUP_FD, O_PTY, O_NO_HOST_CA, O_CHANGES,
	O_OBSERVE, O_SHADOW,
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
	{ "serve",            SBX_ARG,   SBX_ONCE, O_SERVE },
	{ "ready-port",       SBX_ARG,   SBX_ONCE, O_READY_PORT },
	{ "ready-timeout",    SBX_ARG,   SBX_ONCE, O_READY_TIMEOUT },
	{ "cgroup-fd",        SBX_ARG,   SBX_ONCE, O_CGROUP_FD },
	{ "pty",              SBX_NOARG, SBX_ONCE, O_PTY },
	{ "no-host-ca",       SBX_NOARG, SBX_ONCE, O_NO_HOST_CA },
	{ "changes",          SBX_ARG,   SBX_ONCE, O_CHANGES },
	{ "observe",          SBX_ARG,   SBX_ONCE, O_OBSERVE },
	{ "shadow-policy",    SBX_ARG,   SBX_ONCE, O_SHADOW },
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

/* The options whose value is one absolute path (for --bind and
 * --ro-bind, the source; the destination is squashed in binds.c, the
 * entries of --runtime and the broker's path where they are split). */
static int takes_path(int id)
{
	switch (id) {
	case O_WORKSPACE: case O_RO: case O_RW: case O_HOME: case O_BIND: case O_RO_BIND:
	case O_ALLOW_EXEC: case O_PROTECT: case O_GRANT_KEY: case O_GRANT_NONCE_DIR:
	case O_BASELINE: case O_SERVE: case O_CHANGES: case O_OBSERVE: case O_SHADOW:
		return 1;
	}
	return 0;
}

/* --runtime's list with each entry in the one spelling (sbx_path_squash);
 * empty and relative entries are left for ns_add_runtime to refuse. */
static const char *squash_list(const char *list)
{
	char *out = sbx_need(malloc(strlen(list) + 1)), *w = out;
	const char *p = list;

	*out = '\0';
	for (;;) {
		const char *end = strchrnul(p, ':');
		char *e = sbx_need(strndup(p, (size_t)(end - p)));
		char *q = e[0] == '/' ? sbx_path_squash(e) : e;

		w = stpcpy(w, q);
		if (q != e)
			free(q);
		free(e);
		if (!*end)
			break;
		*w++ = ':';
		*w = '\0';
		p = end + 1;
	}
	return out;
}

/* Fills a (everyone after reads it through r->a, a pointer to const)
 * and, from the options that name objects, the plan's first entries in
 * r->p-> Returns whether --net was given (an argv request that names no
 * network asks for none). */
int ns_parse(struct ns_args *a, struct ns_plan *p, int argc, char **argv)
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
		/* One spelling for every path: "/dir/" and "//dir" are "/dir". */
		const char *orig = arg;
		size_t nops = p->nops;
		char name[32] = "";
		if (takes_path(id))
			for (const struct sbx_opt *o = options; o->name; o++)
				if (o->id == id) {
					snprintf(name, sizeof name, "--%s", o->name);
					arg = sbx_opt_path(name, arg);
				}
		switch (id) {
		case O_HELP:
			sbx_opt_help(sbx_needf("%s%s", usage, ns_join_options));
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
			a->runtime = strcmp(arg, "none") ? squash_list(arg) : arg;
			break;
		case O_TMP_IN_WS: a->tmp_in_ws = 1; break;
		case O_DENY_WRITE:
			arg = sbx_path_squash(arg);
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
		case O_PTY: a->pty = 1; break;
		case O_NO_HOST_CA: a->no_host_ca = 1; break;
		case O_CHANGES: a->changes = ns_changes_opt(arg); break;
		case O_OBSERVE: a->observe = sbx_opt_abspath("--observe", arg); break;
		case O_SHADOW: a->shadow = sbx_opt_abspath("--shadow-policy", arg); break;
		case O_RECOVER: a->recover = 1; break;
		case O_SERVE: a->serve = sbx_opt_abspath("--serve", arg); break;
		case O_READY_PORT: a->ready_port = (unsigned)sbx_opt_u64("--ready-port", arg, 1, 65535); break;
		case O_CGROUP_FD: a->cgroup_fd = sbx_opt_fd("--cgroup-fd", arg); break;
		case O_READY_TIMEOUT: a->ready_ms = sbx_opt_seconds("--ready-timeout", arg, NS_MAX_TIMEOUT_MS); break;
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
		/* A trailing slash still says "a directory", as it does to the kernel. */
		if (p->nops > nops && orig[strlen(orig) - 1] == '/' && !p->ops[p->nops - 1].isdir)
			sbx_die_usage("%s: invalid path '%s': not a directory", name, orig);
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
	/* --print-policy shows what would run, --serve waits for commands:
	 * a program is optional. */
	if (st.ind >= argc && !a->print_policy && !a->serve)
		sbx_die_usage("missing program");
	if (a->pty && a->serve)
		sbx_die_usage("--pty is for a command: a living sandbox's commands ask for one (sbx-ns --join PATH --pty)");
	if ((a->ready_port || a->ready_ms) && !a->serve)
		sbx_die_usage("--%s needs --serve", a->ready_port ? "ready-port" : "ready-timeout");
	if (a->print_policy && a->dry_run)
		sbx_die_usage("--print-policy and --dry-run are exclusive");
	if (st.ind < argc && !*argv[st.ind])
		sbx_die_usage("empty program name");
	a->cmd = argv + st.ind;
	if (a->pol.clamp && !sbx_policy_opts_baseline(&a->pol))
		sbx_die_usage("--clamp needs --baseline or --baseline-fd");
	if (!have_ws)
		sbx_die_usage("missing --workspace or --workspace-fd");
	/* A living sandbox takes --grant-key alone: a grant comes with each
	 * command (grant.c refuses --grant-fd there). */
	if (!a->serve && (p->grant_fd >= 0) != (p->grant_key != NULL))
		sbx_die_usage("--grant-fd and --grant-key go together");
	if (p->nonce_dir && !a->serve && p->grant_fd < 0)
		sbx_die_usage("--grant-nonce-dir needs --grant-fd and --grant-key");
	if (p->nonce_dir && a->serve && !p->grant_key)
		sbx_die_usage("--grant-nonce-dir needs --grant-key");
	/* The execs are seen by the supervisor, which --quiet-denials leaves out. */
	if (a->observe && a->quiet_denials)
		sbx_die_usage("--observe needs the supervisor, and --quiet-denials runs without one");
	ns_shadow_check(a, p);
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
void ns_check_policy(const struct ns_args *a, struct ns_plan *p)
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
	if (a->allow.n && a->cmd[0])
		sbx_allowexec_check(&a->allow, a->cmd[0], p->search, p->ops[p->ws].dest);
}

/* Who the command runs as. Root never runs it as root: it names the
 * identity (as the spec's execution uid/gid); an unprivileged caller runs it
 * as itself and may not choose. */
void ns_check_identity(const struct ns_args *a, struct ns_plan *p)
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

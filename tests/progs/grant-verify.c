/* grant-verify: the process-policy steps of a sandbox launcher, without
 * the sandbox, so tests can drive lib/grant, lib/cmdpath, lib/allowexec
 * and lib/protect the way sbx-ns calls them (same order, same messages):
 *
 *   grant-verify [--grant-fd FD --grant-key FILE] [--timeout SEC]
 *                [--cwd DIR] [--setenv NAME=VALUE]... [--command-path DIRS]
 *                [--allow-exec PATH]... [--protect PATH]... [--rw DIR]...
 *                [--] prog [args...]
 *
 * The command runs in DIR (default /) with exactly the --setenv variables
 * (plus PATH=DIRS with --command-path) and, with a grant, reads exactly the
 * stdin bytes that were verified. */
#include "allowexec.h"
#include "cmdpath.h"
#include "die.h"
#include "exec.h"
#include "exitcodes.h"
#include "fd.h"
#include "grant.h"
#include "opts.h"
#include "parse.h"
#include "protect.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { O_GRANT_FD = 1, O_GRANT_KEY, O_TIMEOUT, O_CWD, O_SETENV, O_CMDPATH, O_ALLOW, O_PROTECT, O_RW };

struct gv {
	int grant_fd;
	struct sbx_grant_key *key;
	uint64_t timeout_ms;
	const char *cwd;
	char **env;
	size_t nenv;
	const char *cmdpath;
	struct sbx_allowexec allow;
	struct sbx_protect prot;
	struct sbx_protect_root *rw;
	const char **rw_opts;
	size_t nrw;
	char **cmd;
};

static void push_env(struct gv *o, char *s)
{
	o->env = realloc(o->env, (o->nenv + 2) * sizeof *o->env);
	if (!o->env)
		sbx_die_errno(SBX_EXIT_SYS, "unable to allocate memory");
	o->env[o->nenv++] = s;
	o->env[o->nenv] = NULL;
}

static void add_rw(struct gv *o, const char *arg)
{
	char real[PATH_MAX];
	struct stat st;

	if (!realpath(sbx_opt_abspath("--rw", arg), real) || stat(real, &st) < 0)
		sbx_die_usage("--rw: unable to find '%s': %s", arg, strerror(errno));
	o->rw = realloc(o->rw, (o->nrw + 1) * sizeof *o->rw);
	o->rw_opts = realloc(o->rw_opts, (o->nrw + 1) * sizeof *o->rw_opts);
	if (!o->rw || !o->rw_opts)
		sbx_die_errno(SBX_EXIT_SYS, "unable to allocate memory");
	o->rw[o->nrw].path = strdup(real);
	o->rw[o->nrw].dev = st.st_dev;
	o->rw[o->nrw].ino = st.st_ino;
	o->rw_opts[o->nrw++] = "--rw";
}

static void parse(struct gv *o, int argc, char **argv)
{
	static const struct sbx_opt tab[] = {
		{ "grant-fd", SBX_ARG, SBX_ONCE, O_GRANT_FD },
		{ "grant-key", SBX_ARG, SBX_ONCE, O_GRANT_KEY },
		{ "timeout", SBX_ARG, SBX_ONCE, O_TIMEOUT },
		{ "cwd", SBX_ARG, SBX_ONCE, O_CWD },
		{ "setenv", SBX_ARG, SBX_MANY, O_SETENV },
		{ "command-path", SBX_ARG, SBX_ONCE, O_CMDPATH },
		{ "allow-exec", SBX_ARG, SBX_MANY, O_ALLOW },
		{ "protect", SBX_ARG, SBX_MANY, O_PROTECT },
		{ "rw", SBX_ARG, SBX_MANY, O_RW },
		{ 0 },
	};
	struct sbx_optstate st;
	const char *arg;
	int id;

	sbx_opt_init(&st, 1);
	while ((id = sbx_opt_next(&st, tab, argc, argv, &arg))) {
		switch (id) {
		case O_GRANT_FD: o->grant_fd = sbx_opt_fd("--grant-fd", arg); break;
		case O_GRANT_KEY:
			o->key = malloc(sizeof *o->key);
			if (!o->key)
				sbx_die_errno(SBX_EXIT_SYS, "unable to allocate memory");
			sbx_grant_key_load("--grant-key", arg, o->key);
			break;
		case O_TIMEOUT: o->timeout_ms = sbx_opt_seconds("--timeout", arg, 7ULL * 86400000); break;
		case O_CWD: o->cwd = arg; break;
		case O_SETENV:
			if (!strchr(arg, '='))
				sbx_die_usage("--setenv: invalid variable '%s': missing '='", arg);
			push_env(o, (char *)arg);
			break;
		case O_CMDPATH: o->cmdpath = sbx_opt_cmdpath("--command-path", arg); break;
		case O_ALLOW: sbx_allowexec_add(&o->allow, "--allow-exec", arg); break;
		case O_PROTECT: sbx_protect_add(&o->prot, "--protect", arg); break;
		case O_RW: add_rw(o, arg); break;
		}
	}
	if ((o->grant_fd >= 0) != (o->key != NULL))
		sbx_die_usage("--grant-fd and --grant-key go together");
	if (st.ind >= argc)
		sbx_die_usage("missing program");
	o->cmd = argv + st.ind;
	if (o->cmdpath) {
		for (size_t i = 0; i < o->nenv; i++)
			if (!strncmp(o->env[i], "PATH=", 5))
				sbx_die_usage("--setenv: PATH is set by --command-path");
		{
			char *p;
			if (asprintf(&p, "PATH=%s", o->cmdpath) < 0)
				sbx_need(NULL);
			push_env(o, p);
		}
	}
	if (!o->env && !(o->env = calloc(1, sizeof *o->env)))
		sbx_die_errno(SBX_EXIT_SYS, "unable to allocate memory");
}

int main(int argc, char **argv)
{
	struct gv o = { .grant_fd = -1, .cwd = "/" };
	const char *search;

	sbx_setprog("grant-verify");
	parse(&o, argc, argv);
	search = o.cmdpath ? o.cmdpath : "/usr/local/bin:/usr/bin:/bin";

	/* Before anything is set up: protected paths, the program, the grant. */
	sbx_protect_check(&o.prot, o.rw, o.rw_opts, o.nrw);
	if (o.allow.n)
		sbx_allowexec_check(&o.allow, o.cmd[0], search, o.cwd);
	if (o.key) {
		struct sbx_grant_input in = {
			.argv = o.cmd, .cwd = o.cwd, .envp = o.env, .timeout_ms = o.timeout_ms,
		};
		int mfd = sbx_grant_stdin(0, SBX_GRANT_STDIN_MAX, in.stdin_sha);

		if (mfd < 0 && errno == EFBIG)
			sbx_die_usage("%s", SBX_GRANT_STDIN_BIG);
		if (mfd < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to read stdin");
		struct sbx_grant_use use = { .nonce_dirfd = -1, .nonce_dir = NULL, .record = 0 };

		/* No plan here: argv-only grants (a plan grant differs in every group). */
		sbx_grant_enforce(o.grant_fd, o.key, &in, &use, (uint64_t)time(NULL));
		sbx_grant_key_wipe(o.key);
		if (dup2(mfd, 0) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to pass stdin");
		close(mfd);
	}
	if (chdir(o.cwd) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to enter %s", o.cwd);
	if (o.allow.n)
		sbx_allowexec_exec(&o.allow, o.cmd, search, o.env);
	sbx_exec(o.cmd, search, o.env);
}

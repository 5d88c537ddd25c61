/* sbx-check grant: make a grant (lib/policy/grant.h) for one exact run, for hosts
 * and tests, signed with the host's key; the grant goes to stdout.
 *   --plan FILE | --plan-fd FD: kind plan, the run and its sandbox as
 *     `sbx-ns --dry-run` planned them (grant_plan.c);
 *   --kind argv: the command only (argv after the options, the working
 *     directory, the environment, the stdin digest, the timeout), nothing of
 *     the sandbox; the weaker kind, only when asked for by name.
 * --expires SEC makes it expire SEC seconds from now, --single-use gives it
 * a fresh nonce, which sbx-ns records and refuses to see twice.
 * --prune DIR removes from a nonce directory the records of grants that
 * have expired (lib/policy/grantnonce.c), and says what it kept. */
#include "cmdpath.h"
#include "die.h"
#include "digest.h"
#include "exitcodes.h"
#include "fd.h"
#include "grant.h"
#include "check.h"
#include "grant_plan.h"
#include "opts.h"
#include "parse.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int chk_grant(int argc, char **argv);

enum { G_KEY = 1, G_CWD, G_TIMEOUT, G_STDIN_SHA, G_STDIN_FILE, G_ENV, G_PLAN, G_PLAN_FD, G_KIND,
       G_EXPIRES, G_SINGLE_USE, G_PRUNE, G_HELP, };

static size_t name_len(const char *s)
{
	return (size_t)(strchr(s, '=') - s);
}

/* NAME=VALUE as sbx-ns's --setenv takes it; a name given twice is refused. */
void grant_check_env(const char *opt, const char *arg, char **env, size_t n)
{
	const char *eq = strchr(arg, '='), *why;
	size_t len;

	if (!eq)
		sbx_die_usage("%s: invalid variable '%s': missing '='", opt, arg);
	len = (size_t)(eq - arg);
	why = sbx_env_name_invalid(arg, len);
	if (why)
		sbx_die_usage("%s: invalid variable '%s': %s", opt, arg, why);
	for (size_t i = 0; i < n; i++)
		if (name_len(env[i]) == len && !strncmp(env[i], arg, len))
			sbx_die_usage("%s: variable %.*s given twice", opt, (int)len, arg);
}

static void parse_sha(const char *arg, unsigned char out[SBX_SHA256_LEN])
{
	size_t n = strlen(arg);

	if (!n)
		sbx_die_usage("--stdin-sha256: invalid digest '': empty");
	if (n != 2 * SBX_SHA256_LEN)
		sbx_die_usage("--stdin-sha256: invalid digest '%s': not 64 hex digits", arg);
	for (size_t i = 0; i < SBX_SHA256_LEN; i++) {
		unsigned v = 0;
		for (int k = 0; k < 2; k++) {
			char c = arg[2 * i + (size_t)k];
			v <<= 4;
			if (c >= '0' && c <= '9')
				v |= (unsigned)(c - '0');
			else if (c >= 'a' && c <= 'f')
				v |= (unsigned)(c - 'a' + 10);
			else
				sbx_die_usage("--stdin-sha256: invalid digest '%s': not lower-case hex", arg);
		}
		out[i] = (unsigned char)v;
	}
}

/* The stdin the command will get, hashed from a regular file. */
int grant_open_file(const char *opt, const char *arg)
{
	struct stat st;
	int fd;

	fd = open(sbx_opt_abspath(opt, arg), O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ELOOP)
		sbx_die_usage("%s: '%s' is a symlink", opt, arg);
	if (fd < 0 && errno == ENOENT)
		sbx_die_usage("%s: unable to find '%s': %s", opt, arg, strerror(errno));
	if (fd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open %s", arg);
	if (fstat(fd, &st) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to stat %s", arg);
	if (!S_ISREG(st.st_mode))
		sbx_die_usage("%s: '%s' is not a regular file", opt, arg);
	return fd;
}

static void hash_file(const char *arg, unsigned char out[SBX_SHA256_LEN])
{
	int fd = grant_open_file("--stdin-file", arg);
	struct stat st;

	if (fstat(fd, &st) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to stat %s", arg);
	if ((uint64_t)st.st_size > SBX_GRANT_STDIN_MAX)
		sbx_die_usage("--stdin-file: '%s' is " SBX_GRANT_STDIN_WHY, arg);
	if (sbx_sha256_fd(fd, out) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read %s", arg);
	close(fd);
}

/* The grant binds bytes: the directory must be written the one way the
 * verifier will write it (absolute, no "." or "..", no doubled or
 * trailing slash). It need not exist here: it is the sandbox's view. */
const char *grant_check_cwd(const char *opt, const char *arg)
{
	const char *bad = sbx_path_shape(arg, strlen(arg));

	if (bad)
		sbx_die_usage("%s: invalid directory '%s': %s", opt, arg, bad);
	if (strstr(arg, "//") || (strlen(arg) > 1 && arg[strlen(arg) - 1] == '/'))
		sbx_die_usage("%s: invalid directory '%s': not canonical", opt, arg);
	return arg;
}

/* Every record of an expired grant goes (sbx-ns removes a few per run);
 * one line says what went and what stayed. */
static int prune(const char *dir)
{
	struct sbx_grant_prune pr;
	struct timespec ts;
	char upto[40];
	int fd = sbx_grant_nonce_open(dir, (unsigned)getuid());

	if (clock_gettime(CLOCK_REALTIME, &ts) < 0 || ts.tv_sec <= 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read the clock");
	if (sbx_grant_nonce_prune(fd, (uint64_t)ts.tv_sec, UINT64_MAX, 1, &pr) < 0) {
		if (errno == EINVAL && !strcmp(pr.bad, "expiring/pruned"))
			sbx_die(SBX_EXIT_SYS, "unable to prune %s: %s/%s is not one line 'pruned SECONDS' (up to "
				"which expiry records were removed): " SBX_GRANT_MARK_FIX, dir, dir, pr.bad);
		sbx_die_errno(SBX_EXIT_SYS, "unable to prune %s (at %s/%s)", dir, dir, pr.bad);
	}
	close(fd);
	sbx_grant_utc(pr.upto, upto, sizeof upto);
	if (printf("%s: removed %llu nonces of grants expired by %s; kept %llu of grants not expired by then, "
		   "%llu that never expire, %llu whose expiry cannot be read\n", dir,
		   (unsigned long long)pr.removed, upto, (unsigned long long)pr.live,
		   (unsigned long long)pr.never, (unsigned long long)pr.unknown) < 0 || fflush(stdout) != 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to write the result");
	return SBX_EXIT_OK;
}

int chk_grant(int argc, char **argv)
{
	static const struct sbx_opt tab[] = {
		{ "key", SBX_ARG, SBX_ONCE, G_KEY },
		{ "cwd", SBX_ARG, SBX_ONCE, G_CWD },
		{ "timeout", SBX_ARG, SBX_ONCE, G_TIMEOUT },
		{ "stdin-sha256", SBX_ARG, SBX_ONCE, G_STDIN_SHA },
		{ "stdin-file", SBX_ARG, SBX_ONCE, G_STDIN_FILE },
		{ "env", SBX_ARG, SBX_MANY, G_ENV },
		{ "plan", SBX_ARG, SBX_ONCE, G_PLAN },
		{ "plan-fd", SBX_ARG, SBX_ONCE, G_PLAN_FD },
		{ "kind", SBX_ARG, SBX_ONCE, G_KIND },
		{ "expires", SBX_ARG, SBX_ONCE, G_EXPIRES },
		{ "single-use", SBX_NOARG, SBX_ONCE, G_SINGLE_USE },
		{ "prune", SBX_ARG, SBX_ONCE, G_PRUNE },
		{ "help", SBX_NOARG, SBX_ONCE, G_HELP },
		{ 0 },
	};
	struct sbx_grant_input in = { 0 };
	struct sbx_grant_key *key;
	struct sbx_grant g;
	struct sbx_optstate st;
	char cwd[PATH_MAX], out[SBX_GRANT_MAX];
	const char *arg, *keypath = NULL, *dir = NULL, *plan = NULL, *plan_opt = NULL, *manual = NULL;
	const char *prune_dir = NULL;
	char **env = NULL;
	size_t nenv = 0;
	int id, have_stdin = 0, single = 0, others = 0;
	enum sbx_grant_kind kind = 0;
	uint64_t expires = 0;

	struct sbx_sha256 empty;

	/* The empty stdin unless told otherwise. */
	sbx_sha256_init(&empty);
	sbx_sha256_final(&empty, in.stdin_sha);
	sbx_opt_init(&st, 2);
	while ((id = sbx_opt_next(&st, tab, argc, argv, &arg))) {
		others += id != G_PRUNE;
		switch (id) {
		case G_HELP: sbx_opt_help(chk_usage);
		case G_PRUNE: prune_dir = sbx_grant_nonce_path("--prune", arg); break;
		case G_KEY:
			keypath = sbx_opt_abspath("--key", arg);
			break;
		case G_CWD: dir = grant_check_cwd("--cwd", arg); manual = "--cwd"; break;
		case G_TIMEOUT:
			in.timeout_ms = sbx_opt_seconds("--timeout", arg, GRANT_MAX_TIMEOUT_MS);
			manual = "--timeout";
			break;
		case G_PLAN:
		case G_PLAN_FD:
			if (plan)
				sbx_die_usage("--plan and --plan-fd are exclusive");
			plan = arg;
			plan_opt = id == G_PLAN ? "--plan" : "--plan-fd";
			break;
		case G_STDIN_SHA:
		case G_STDIN_FILE:
			if (have_stdin)
				sbx_die_usage("--stdin-sha256 and --stdin-file are exclusive");
			have_stdin = 1;
			if (id == G_STDIN_SHA)
				parse_sha(arg, in.stdin_sha);
			else
				hash_file(arg, in.stdin_sha);
			break;
		case G_KIND:
			if (!strcmp(arg, "plan"))
				kind = SBX_GRANT_KIND_PLAN;
			else if (!strcmp(arg, "argv"))
				kind = SBX_GRANT_KIND_ARGV;
			else
				sbx_die_usage("--kind: invalid kind '%s': plan or argv", arg);
			break;
		case G_EXPIRES:
			expires = sbx_opt_u64("--expires", arg, 1, SBX_GRANT_MAX_EXPIRY);
			break;
		case G_SINGLE_USE: single = 1; break;
		case G_ENV:
			grant_check_env("--env", arg, env, nenv);
			manual = "--env";
			env = sbx_need(realloc(env, (nenv + 2) * sizeof *env));
			env[nenv++] = (char *)arg;
			env[nenv] = NULL;
			break;
		}
	}
	if (prune_dir && (others || st.ind < argc))
		sbx_die_usage("--prune DIR takes no other option and no program");
	if (prune_dir)
		return prune(prune_dir);
	if (!keypath)
		sbx_die_usage("grant: missing --key");
	if (plan && manual)
		sbx_die_usage("%s and %s are exclusive (the plan gives argv, cwd, env and timeout)",
			      plan_opt, manual);
	if (plan && st.ind < argc)
		sbx_die_usage("%s: the program comes from the plan", plan_opt);
	if (!kind)
		kind = plan ? SBX_GRANT_KIND_PLAN : 0;
	if (!kind)
		sbx_die_usage("grant: without --plan a grant binds only the command: give --plan "
			      "(from sbx-ns --dry-run), or --kind argv for the weaker kind");
	if (kind == SBX_GRANT_KIND_PLAN && !plan)
		sbx_die_usage("--kind plan needs --plan or --plan-fd");
	if (plan) {
		grant_plan_load(plan_opt, plan, &in, &env);
		if (kind == SBX_GRANT_KIND_ARGV)
			in.have_plan = 0;
	} else {
		if (st.ind >= argc)
			sbx_die_usage("missing program");
		if (!*argv[st.ind])
			sbx_die_usage("empty program name");
		if (!dir) {
			if (!getcwd(cwd, sizeof cwd))
				sbx_die_errno(SBX_EXIT_SYS, "unable to find the current directory");
			dir = cwd;
		}
		in.argv = argv + st.ind;
		in.cwd = dir;
	}
	in.envp = env;

	key = sbx_need(malloc(sizeof *key));
	sbx_grant_key_load("--key", keypath, key);
	memset(&g, 0, sizeof g);
	g.kind = kind;
	if (expires) {
		struct timespec ts;
		if (clock_gettime(CLOCK_REALTIME, &ts) < 0 || ts.tv_sec <= 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to read the clock");
		g.expires = (uint64_t)ts.tv_sec + expires;
	}
	if (single && sbx_grant_new_nonce(&g) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to draw a nonce (getrandom)");
	sbx_grant_fields(&in, &g);
	sbx_grant_sign(&g, key);
	sbx_grant_key_wipe(key);
	free(key);
	if (sbx_write_all(1, out, sbx_grant_format(&g, out)) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to write the grant");
	return SBX_EXIT_OK;
}

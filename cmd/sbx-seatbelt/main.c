/* sbx-seatbelt: confine a command with macOS Seatbelt (sandbox-exec) and
 * meter it by sampling. The profile is generated here (lib/seatbelt/sbpl.h) and can
 * be printed on any OS; running it needs macOS, and elsewhere the tool
 * refuses with SBX_EXIT_NOISOLATION rather than run the command unconfined. */
#include "die.h"
#include "exec.h"
#include "exitcodes.h"
#include "status.h"
#include "fd.h"
#include "json.h"
#include "meter.h"
#include "opts.h"
#include "parse.h"
#include "quote.h"
#include "sbpl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SANDBOX_EXEC "/usr/bin/sandbox-exec"
#define MAX_PATHS 64

static const char usage[] =
	"usage: sbx-seatbelt --workspace DIR [OPTION]... [--] PROG [ARG]...\n"
	"       sbx-seatbelt --workspace DIR [OPTION]... --print-profile\n"
	"Run PROG under a macOS Seatbelt profile, metered by sampling.\n"
	"\n"
	"Files and network:\n"
	"  --workspace DIR        the one writable directory\n"
	"  --ro PATH              another read-only directory or file (repeatable)\n"
	"  --deny-write GLOB      a workspace path it may not change (repeatable)\n"
	"  --net MODE             none (the default), or broker-port=N\n"
	"\n"
	"Sampled limits (not hard):\n"
	"  --cpu PCT              percent of one core\n"
	"  --memory SIZE          the sum of the resident sizes of the tree\n"
	"  --disk SIZE            the size of the workspace's regular files\n"
	"  --interval SECONDS     the sampling interval; default: 0.1\n"
	"  --require-hard-limits  refused (101): Seatbelt has no hard limits\n"
	"\n"
	"Output:\n"
	"  --print-profile        print the profile and exit; run nothing\n"
	"  --status-fd FD         write JSON status lines to FD\n";

enum {
	O_WORKSPACE = 1, O_RO, O_NET, O_DENY, O_CPU, O_MEMORY, O_DISK, O_INTERVAL,
	O_HARD, O_PRINT, O_STATUS_FD, O_HELP
};

static const struct sbx_opt table[] = {
	{ "workspace", SBX_ARG, SBX_ONCE, O_WORKSPACE },
	{ "ro", SBX_ARG, SBX_MANY, O_RO },
	{ "net", SBX_ARG, SBX_ONCE, O_NET },
	{ "deny-write", SBX_ARG, SBX_MANY, O_DENY },
	{ "cpu", SBX_ARG, SBX_ONCE, O_CPU },
	{ "memory", SBX_ARG, SBX_ONCE, O_MEMORY },
	{ "disk", SBX_ARG, SBX_ONCE, O_DISK },
	{ "interval", SBX_ARG, SBX_ONCE, O_INTERVAL },
	{ "require-hard-limits", SBX_NOARG, SBX_ONCE, O_HARD },
	{ "print-profile", SBX_NOARG, SBX_ONCE, O_PRINT },
	{ "status-fd", SBX_ARG, SBX_ONCE, O_STATUS_FD },
	{ "help", SBX_NOARG, SBX_ONCE, O_HELP },
	{ 0 }
};

struct opts {
	struct sbx_sbpl_cfg sb;
	struct sbx_meter_cfg meter;
	const char *ro[MAX_PATHS], *deny[MAX_PATHS];
	int hard, print, status_fd;
	char **argv;   /* the command */
};

static unsigned parse_net(const char *s)
{
	uint64_t port;

	if (!strcmp(s, "none"))
		return 0;
	if (strncmp(s, "broker-port=", 12))
		sbx_die_usage("--net: invalid value '%s': expected none or broker-port=N", s);
	port = sbx_opt_u64("--net broker-port", s + 12, 1, 65535);
	return (unsigned)port;
}

static void parse(struct opts *o, int argc, char **argv)
{
	struct sbx_optstate st;
	const char *arg;
	int id;

	memset(o, 0, sizeof *o);
	o->status_fd = -1;
	o->sb.ro = o->ro;
	o->sb.deny = o->deny;
	sbx_opt_init(&st, 1);
	while ((id = sbx_opt_next(&st, table, argc, argv, &arg))) {
		switch (id) {
		case O_WORKSPACE: o->sb.workspace = arg; break;
		case O_RO:
			if (o->sb.nro == MAX_PATHS)
				sbx_die_usage("--ro: more than %d paths", MAX_PATHS);
			o->ro[o->sb.nro++] = arg;
			break;
		case O_NET: o->sb.broker_port = parse_net(arg); break;
		case O_DENY:
			if (o->sb.ndeny == MAX_PATHS)
				sbx_die_usage("--deny-write: more than %d globs", MAX_PATHS);
			o->deny[o->sb.ndeny++] = arg;
			break;
		case O_CPU: o->meter.cpu_pct = sbx_opt_percent("--cpu", arg, 6400); break;
		case O_MEMORY: o->meter.memory = sbx_opt_size("--memory", arg, 1ull << 60); break;
		case O_DISK: o->meter.disk = sbx_opt_size("--disk", arg, 1ull << 60); break;
		case O_INTERVAL:
			o->meter.interval_ms = sbx_opt_seconds("--interval", arg,
							       SBX_METER_MAX_INTERVAL_MS);
			if (o->meter.interval_ms < SBX_METER_MIN_INTERVAL_MS)
				sbx_die_usage("--interval: invalid duration '%s': below 0.01", arg);
			break;
		case O_HARD: o->hard = 1; break;
		case O_PRINT: o->print = 1; break;
		case O_STATUS_FD: o->status_fd = sbx_status_opt(arg); break;
		case O_HELP: sbx_opt_help(usage);
		}
	}
	if (!o->sb.workspace)
		sbx_die_usage("missing --workspace");
	o->argv = argv + st.ind;
}

/* The profile, preceded by the parameters and environment as comments: the
 * whole output is itself a valid SBPL file (no value can hold a newline). */
static void print_profile(const struct sbx_sbpl *s)
{
	printf("; sandbox-exec parameters (-D NAME=VALUE)\n");
	for (size_t i = 0; i < s->nparams; i++)
		printf(";   %s\n", s->params[i]);
	printf("; environment\n;   TMPDIR=%s\n", s->tmpdir);
	fputs(s->profile, stdout);
	if (fflush(stdout) == EOF || ferror(stdout))
		sbx_die_errno(SBX_EXIT_SYS, "unable to write the profile");
}

/* Seatbelt matches resolved paths: a workspace reached through a symlink
 * would never match its own rules. Returns an fd on the directory. */
static int open_workspace(const char *given, const char *canon)
{
	char real[PATH_MAX], *c;
	int fd;

	if ((fd = open(given, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open %s", given);
	if (!realpath(given, real))
		sbx_die_errno(SBX_EXIT_SYS, "unable to resolve %s", given);
	if (sbx_sbpl_canon(real, strlen(real), &c))
		sbx_die(SBX_EXIT_POLICY, "refusing workspace %s: its resolved path %s cannot be "
			"named in a profile", given, real);
	if (strcmp(c, canon))
		sbx_die(SBX_EXIT_POLICY, "refusing workspace %s: it resolves to %s through a "
			"symlink", given, real);
	free(c);
	return fd;
}

/* A hard link would give the command a second name for a file outside the
 * workspace rules (or make a denied file writable under another name). */
static void refuse_hard_links(int dfd, const char *path, int depth)
{
	DIR *d;
	struct dirent *e;

	if (depth > 256)
		sbx_die(SBX_EXIT_POLICY, "refusing workspace: %s is nested too deeply", path);
	if (!(d = fdopendir(dfd)))
		sbx_die_errno(SBX_EXIT_SYS, "unable to read %s", path);
	while ((errno = 0, e = readdir(d))) {
		struct stat st;
		char sub[PATH_MAX];
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to stat %s", sub);
		if (S_ISDIR(st.st_mode)) {
			int fd = openat(dirfd(d), e->d_name,
					O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0)
				sbx_die_errno(SBX_EXIT_SYS, "unable to open %s", sub);
			refuse_hard_links(fd, sub, depth + 1);
		} else if (st.st_nlink > 1) {
			sbx_die(SBX_EXIT_POLICY, "refusing workspace: %s has %lu hard links",
				sub, (unsigned long)st.st_nlink);
		}
	}
	if (errno)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read %s", path);
	closedir(d);
}

#ifdef __APPLE__
/* TMPDIR lives inside the workspace: temporary files are metered with it
 * and nothing is written elsewhere. */
static void make_tmpdir(int wsfd, const char *path)
{
	struct stat st;

	if (mkdirat(wsfd, SBX_SBPL_TMPDIR, 0700) < 0 && errno != EEXIST)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create %s", path);
	if (fstatat(wsfd, SBX_SBPL_TMPDIR, &st, AT_SYMLINK_NOFOLLOW) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to stat %s", path);
	if (!S_ISDIR(st.st_mode))
		sbx_die(SBX_EXIT_POLICY, "refusing %s: not a directory", path);
}

static int run(const struct opts *o, const struct sbx_sbpl *s, int wsfd)
{
	const char *disk[1] = { s->workspace };
	struct sbx_meter_cfg mc = o->meter;
	struct sbx_meter_result r;
	struct sbx_json j;
	size_t n = 0, argc = 0;
	char **av;
	pid_t pid;

	if (access(SANDBOX_EXEC, X_OK) < 0)
		sbx_die_errno(SBX_EXIT_NOISOLATION, "unable to run %s", SANDBOX_EXEC);
	make_tmpdir(wsfd, s->tmpdir);
	close(wsfd);
	while (o->argv[argc])
		argc++;
	av = sbx_need(calloc(2 * s->nparams + argc + 5, sizeof *av));
	/* By absolute path only: a sandbox-exec found on PATH could be
	 * anything. */
	av[n++] = SANDBOX_EXEC;
	for (size_t i = 0; i < s->nparams; i++) {
		av[n++] = "-D";
		av[n++] = s->params[i];
	}
	av[n++] = "-p";
	av[n++] = s->profile;
	av[n++] = "--";
	for (size_t i = 0; i < argc; i++)
		av[n++] = o->argv[i];
	if (setenv("TMPDIR", s->tmpdir, 1) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to set TMPDIR");
	mc.disk_paths = disk;
	mc.ndisk_paths = 1;
	if (sbx_meter_prepare() < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to prepare the meter");
	if (o->status_fd >= 0)
		sbx_fd_cloexec(o->status_fd, 1);
	if ((pid = fork()) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to fork");
	if (pid == 0) {
		execv(SANDBOX_EXEC, av);
		sbx_die_errno(SBX_EXIT_EXEC, "unable to exec %s", SANDBOX_EXEC);
	}
	/* A status reader that went away must not kill the supervisor
	 * (and leave the tree unmetered). */
	signal(SIGPIPE, SIG_IGN);
	if (sbx_meter_run(&mc, pid, o->status_fd, "sbx-seatbelt", &r) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to meter %s", o->argv[0]);
	sbx_json_begin(&j, "sbx-seatbelt", "exit");
	sbx_json_int(&j, "code", r.code);
	/* "signal" is the command's own death, not the meter's kill. */
	if (!r.lost && !r.timed_out && !r.cancelled && WIFSIGNALED(r.status))
		sbx_json_int(&j, "signal", WTERMSIG(r.status));
	sbx_meter_json(&j, &r);
	sbx_json_write(&j, o->status_fd);
	if (r.lost)
		sbx_meter_die_lost(&r);
	return r.code;
}
#endif

int main(int argc, char **argv)
{
	struct opts o;
	struct sbx_sbpl s;
	const char *why, *bad, *badval;
	int wsfd;

	sbx_setprog("sbx-seatbelt");
	sbx_opt_version(argc, argv);
	parse(&o, argc, argv);
	if ((why = sbx_sbpl_build(&o.sb, &s, &bad, &badval))) {
		char b[204]; /* a long value is cut after 200 bytes of it shown */
		if (!bad)
			sbx_die(SBX_EXIT_SYS, "unable to build the profile: %s", why);
		sbx_die_usage("%s: invalid %s '%s': %s", bad,
			      strcmp(bad, "--deny-write") ? "path" : "glob",
			      sbx_quote(b, sizeof b, badval, strlen(badval), SIZE_MAX, SBX_QUOTE_UTF8), why);
	}
	if (o.print && *o.argv)
		sbx_die_usage("--print-profile runs nothing: no program allowed");
	if (!o.print && !*o.argv)
		sbx_die_usage("missing program");
	if (o.hard)
		sbx_die(SBX_EXIT_UNSUPPORTED, "--require-hard-limits: Seatbelt has no hard "
			"limits; its limits are %s", SBX_METER_ENFORCEMENT);
	if (o.print) {
		print_profile(&s);
		return 0;
	}
	wsfd = open_workspace(o.sb.workspace, s.workspace);
	refuse_hard_links(dup(wsfd), o.sb.workspace, 0);
#ifdef __APPLE__
	return run(&o, &s, wsfd);
#else
	close(wsfd);
	sbx_die(SBX_EXIT_NOISOLATION, "unable to run %s: Seatbelt exists only on macOS "
		"(on Linux confine with sbx-ns)", SANDBOX_EXEC);
#endif
}

/* sbx-check: say what this host enforces, whether the sbx tools are the
 * ones installed, and prove the sandbox holds by running the real chain.
 * The shape of doas -C: check and answer, change nothing. */
#include "parse.h"
#include "check.h"
#include "die.h"
#include "exitcodes.h"
#include "opts.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char chk_usage[] =
	"usage: sbx-check host [OPTION]...\n"
	"       sbx-check tools [OPTION]... [PATH]...\n"
	"       sbx-check proof [OPTION]...\n"
	"       sbx-check grant --key FILE (--plan FILE | --plan-fd FD) [OPTION]...\n"
	"       sbx-check grant --key FILE --kind argv [OPTION]... [--] PROG [ARG]...\n"
	"       sbx-check grant --prune DIR\n"
	"       sbx-check policy narrow --baseline FILE [--headroom X] OBS...\n"
	"Say what this host enforces, check the sbx tools, prove the sandbox holds,\n"
	"sign a grant, or narrow a baseline to what observed runs did.\n"
	"\n"
	"host and proof:\n"
	"  --cgroup-root DIR      a cgroup v2 directory prepared by the administrator\n"
	"  --quota-workspace DIR  a directory under a project quota\n"
	"  --baseline FILE        host: the administrator's baseline policy to check\n"
	"  --ns PATH              proof: the sbx-ns to prove; default: the one beside\n"
	"  --tier TIER            proof: full (the default) or landlock\n"
	"\n"
	"tools:\n"
	"  --manifest FILE        the manifest to compare with\n"
	"\n"
	"grant:\n"
	"  --key FILE             the HMAC key; required\n"
	"  --plan FILE            sign the plan sbx-ns --dry-run printed\n"
	"  --plan-fd FD           the same, read from an open fd\n"
	"  --kind plan|argv       what is signed; default: plan with --plan\n"
	"  --cwd DIR              the command's directory; default: the current one\n"
	"  --timeout SEC          the run's timeout; default: none\n"
	"  --env NAME=VALUE       one variable of the command's environment\n"
	"  --stdin-sha256 HEX     the SHA-256 of the command's stdin\n"
	"  --stdin-file FILE      hash this file as the stdin; default: empty stdin\n"
	"  --expires SEC          it expires SEC seconds from now\n"
	"  --single-use           it may run once (sbx-ns --grant-nonce-dir)\n"
	"  --prune DIR            remove the nonces of expired grants from DIR\n"
	"\n"
	"policy narrow:\n"
	"  --baseline FILE        the baseline the runs were observed under; required\n"
	"  --headroom X           limits are X times the observed peak; default: 1.5\n"
	"\n"
	"host, tools and proof:\n"
	"  --json                 one JSON document instead of lines\n";

int chk_grant(int argc, char **argv); /* grant.c */
int chk_policy(int argc, char **argv); /* narrow.c */

enum { O_HELP = 1, O_PROBE, O_CGROUP, O_QUOTA, O_NS, O_MANIFEST, O_JSON, O_BASELINE, O_TIER };

void chk_bindir(char *out, size_t n)
{
	char self[PATH_MAX], *slash;
	ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);

	if (k < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read /proc/self/exe");
	self[k] = '\0';
	slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	snprintf(out, n, "%s", self[0] ? self : "/");
}

/* Path options: absolute, existing, not a symlink, of the wanted kind. */
static const char *path_opt(const char *opt, const char *v, int want_dir)
{
	struct stat st;

	if (lstat(sbx_opt_abspath(opt, v), &st) < 0)
		sbx_die_usage("%s: unable to find '%s': %s", opt, v, strerror(errno));
	if (S_ISLNK(st.st_mode))
		sbx_die_usage("%s: '%s' is a symlink", opt, v);
	if (want_dir && !S_ISDIR(st.st_mode))
		sbx_die_usage("%s: '%s' is not a directory", opt, v);
	if (!want_dir && !S_ISREG(st.st_mode))
		sbx_die_usage("%s: '%s' is not a regular file", opt, v);
	return v;
}

static int run_mode(const char *mode, int argc, char **argv)
{
	static const struct sbx_opt host_tab[] = {
		{ "help", SBX_NOARG, SBX_ONCE, O_HELP },
		{ "cgroup-root", SBX_ARG, SBX_ONCE, O_CGROUP },
		{ "quota-workspace", SBX_ARG, SBX_ONCE, O_QUOTA },
		{ "baseline", SBX_ARG, SBX_ONCE, O_BASELINE },
		{ "json", SBX_NOARG, SBX_ONCE, O_JSON },
		{ 0 },
	};
	static const struct sbx_opt tools_tab[] = {
		{ "help", SBX_NOARG, SBX_ONCE, O_HELP },
		{ "manifest", SBX_ARG, SBX_ONCE, O_MANIFEST },
		{ "json", SBX_NOARG, SBX_ONCE, O_JSON },
		{ 0 },
	};
	static const struct sbx_opt proof_tab[] = {
		{ "help", SBX_NOARG, SBX_ONCE, O_HELP },
		{ "cgroup-root", SBX_ARG, SBX_ONCE, O_CGROUP },
		{ "quota-workspace", SBX_ARG, SBX_ONCE, O_QUOTA },
		{ "ns", SBX_ARG, SBX_ONCE, O_NS },
		{ "tier", SBX_ARG, SBX_ONCE, O_TIER },
		{ "json", SBX_NOARG, SBX_ONCE, O_JSON },
		{ 0 },
	};
	const struct sbx_opt *tab = !strcmp(mode, "host") ? host_tab
				  : !strcmp(mode, "tools") ? tools_tab : proof_tab;
	struct chk_opts o = { 0 };
	struct chk_report r = { .mode = mode };
	struct sbx_optstate st;
	const char *arg;
	int id, i;

	sbx_opt_init(&st, 2);
	while ((id = sbx_opt_next(&st, tab, argc, argv, &arg))) {
		switch (id) {
		case O_HELP: sbx_opt_help(chk_usage);
		case O_CGROUP: o.cgroup_root = path_opt("--cgroup-root", arg, 1); break;
		case O_QUOTA: o.quota_ws = path_opt("--quota-workspace", arg, 1); break;
		case O_BASELINE:
			o.baseline = sbx_opt_abspath("--baseline", arg);
			break;
		case O_NS:
			o.ns = path_opt("--ns", arg, 0);
			if (access(o.ns, X_OK) < 0)
				sbx_die_usage("--ns: '%s' is not executable", o.ns);
			break;
		case O_TIER:
			if (!strcmp(arg, "landlock"))
				o.tier = 1;
			else if (strcmp(arg, "full"))
				sbx_die_usage("--tier: unknown tier '%s' (full or landlock)", arg);
			break;
		case O_MANIFEST: o.manifest = path_opt("--manifest", arg, 0); break;
		case O_JSON: o.json = 1; break;
		}
	}
	if (o.tier && (o.cgroup_root || o.quota_ws))
		sbx_die_usage("--tier landlock proves isolation only: prove --%s with the full proof",
			      o.cgroup_root ? "cgroup-root" : "quota-workspace");
	if (strcmp(mode, "tools")) {
		if (st.ind < argc)
			sbx_die_usage("%s takes no operands: '%s'", mode, argv[st.ind]);
	} else {
		for (i = st.ind; i < argc; i++) {
			sbx_opt_abspath("tools", argv[i]);
		}
	}
	if (!strcmp(mode, "host"))
		chk_host(&r, &o);
	else if (!strcmp(mode, "tools"))
		chk_tools(&r, &o, argv + st.ind, argc - st.ind);
	else
		chk_proof(&r, &o);
	return chk_finish(&r, o.json);
}

int main(int argc, char **argv)
{
	static const struct sbx_opt tab[] = {
		{ "help", SBX_NOARG, SBX_ONCE, O_HELP },
		{ "probe", SBX_NOARG, SBX_ONCE, O_PROBE },
		{ 0 },
	};
	struct sbx_optstate st;
	const char *arg;
	int id;

	sbx_setprog("sbx-check");
	sbx_opt_version(argc, argv);
	sbx_opt_init(&st, 1);
	id = sbx_opt_next(&st, tab, argc, argv, &arg);
	if (id == O_HELP)
		sbx_opt_help(chk_usage);
	if (id == O_PROBE)
		return chk_probe(argc - st.ind, argv + st.ind);
	if (st.ind != 1)
		sbx_die_usage("missing mode (host, tools, proof, grant or policy)");
	if (argc < 2)
		sbx_die_usage("missing mode (host, tools, proof, grant or policy)");
	if (!strcmp(argv[1], "grant"))
		return chk_grant(argc, argv);
	if (!strcmp(argv[1], "policy"))
		return chk_policy(argc, argv);
	if (strcmp(argv[1], "host") && strcmp(argv[1], "tools") && strcmp(argv[1], "proof"))
		sbx_die_usage("unknown mode '%s' (host, tools, proof, grant or policy)", argv[1]);
	return run_mode(argv[1], argc, argv);
}

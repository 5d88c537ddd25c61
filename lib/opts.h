/* The argv grammar of every tool: `sbx-X [options] [--] prog [args...]`.
 * Long options come from one table; parsing stops at the first non-option
 * (never reorders argv); "--" ends options; a repeated option that is not
 * marked repeatable is a usage error, never last-one-wins. */
#ifndef SBX_OPTS_H
#define SBX_OPTS_H

/* The release every tool reports for --version. */
#define SBX_VERSION "0.16.0"

/* `TOOL --version` (as the only first argument): prints
 * "TOOL VERSION (commit HASH, clean|dirty)", or "(commit unknown)" when
 * the build could not tell, and exits 0. Every tool calls it first thing
 * in main. The line holds no path and no time: two builds of one commit
 * print the same. */
void sbx_opt_version(int argc, char **argv);

/* `TOOL --help`: TEXT (the usage lines and one line per option), the
 * lines of --help and --version, and where the full reference is, on
 * stdout in one piece; exits 0. A stdout that does not take it all
 * (closed, a full disk, a reader gone with SIGPIPE ignored) is said on
 * stderr and exits 111: a help that was cut short is no help. */
_Noreturn void sbx_opt_help(const char *text);

enum sbx_optarg { SBX_NOARG = 0, SBX_ARG = 1 };
enum sbx_optrep { SBX_ONCE = 0, SBX_MANY = 1 };

struct sbx_opt {
	const char *name;     /* without the leading "--" */
	enum sbx_optarg arg;
	enum sbx_optrep rep;
	int id;               /* returned by sbx_opt_next; must be > 0 */
};

struct sbx_optstate {
	int ind;              /* index of the next argv element to look at */
	unsigned char seen[128]; /* how many times each table entry was seen */
};

/* Start parsing at argv[first] (1 for a tool, 2 after a subcommand word). */
void sbx_opt_init(struct sbx_optstate *st, int first);

/* Returns the id of the next option and sets *arg (NULL for SBX_NOARG),
 * or 0 when options end: st->ind then indexes the first operand (or argc).
 * Unknown options, missing arguments, "--opt=value" on an option without
 * argument and repeats die with a usage error. Both "--opt value" and
 * "--opt=value" are accepted. A lone "-" is an operand. */
int sbx_opt_next(struct sbx_optstate *st, const struct sbx_opt *tab,
		 int argc, char **argv, const char **arg);

#endif

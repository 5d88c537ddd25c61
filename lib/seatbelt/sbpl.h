/* The Seatbelt (SBPL) profile generator of sbx-seatbelt. It is pure text
 * work, so it builds and is tested on every OS: Linux CI checks the exact
 * profile (golden files) without ever running sandbox-exec.
 *
 * No caller-supplied path is ever spliced into the profile text: every path
 * and every regex travels as a sandbox-exec parameter (-D NAME=VALUE) and the
 * profile refers to it as (param "NAME"). The profile text is therefore a
 * fixed function of how many paths there are, and quoting in the SBPL
 * (Scheme) reader can never be broken by a file name. What must still be
 * escaped is the regex syntax of deny-write globs, which this file does. */
#ifndef SBX_SBPL_H
#define SBX_SBPL_H

#include <stddef.h>

/* A path as Seatbelt sees it. Seatbelt matches resolved paths, and on macOS
 * /var, /tmp and /etc are symlinks into /private, so a rule naming /var/x
 * would never match. The rewrite is textual, so the profile printed on Linux
 * is the one macOS would get. Refused (the reason is returned, *out is left
 * NULL): empty, relative, NUL or newline or carriage return inside, not
 * valid UTF-8, "." or ".." components, longer than PATH_MAX. Repeated and
 * trailing slashes are collapsed. On success returns NULL and *out is
 * malloc'd (or NULL with reason "out of memory"). */
const char *sbx_sbpl_canon(const char *in, size_t len, char **out);

/* A deny-write glob, relative to the (canonical) workspace or absolute
 * inside it, as an anchored regex that also covers everything below a
 * match: "*" is any run of characters except "/", "?" one character except
 * "/", a "**" component any number of components; every other character
 * stands for itself (regex metacharacters are escaped). The same input
 * rules as sbx_sbpl_canon apply, plus: absolute globs outside the
 * workspace and "**" mixed with other characters in a component are
 * refused. *prefix receives the directory the profile protects from
 * unlink and rename along with its ancestors: the longest leading part
 * without wildcards, or the parent of a glob that has none. */
const char *sbx_sbpl_glob(const char *ws, const char *in, size_t len,
			  char **regex, char **prefix);

struct sbx_sbpl_cfg {
	const char *workspace;          /* as given; canonicalised here */
	const char *const *ro;          /* extra read-only paths */
	size_t nro;
	const char *const *deny;        /* deny-write globs */
	size_t ndeny;
	unsigned broker_port;           /* 0: no network at all */
};

struct sbx_sbpl {
	char *workspace;                /* canonical */
	char *tmpdir;                   /* TMPDIR for the command, inside it */
	char *profile;                  /* SBPL text */
	char **params;                  /* "NAME=VALUE", for -D */
	size_t nparams;
};

/* The directory inside the workspace that becomes TMPDIR. */
#define SBX_SBPL_TMPDIR ".tmp"

/* Build everything. Returns NULL, or a reason with *bad pointing at the
 * option name ("--workspace", "--ro", "--deny-write") and *badval at the
 * offending value. */
const char *sbx_sbpl_build(const struct sbx_sbpl_cfg *cfg, struct sbx_sbpl *out,
			   const char **bad, const char **badval);
void sbx_sbpl_free(struct sbx_sbpl *s);

#endif

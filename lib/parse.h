/* Strict parsers for numbers given on the command line or in a policy.
 * Each returns NULL on success or a short reason ("empty", "negative",
 * "overflow", "trailing garbage", ...) and leaves *out untouched on error.
 * Accepted forms are plain ASCII decimal: no sign, no leading '+', no
 * spaces, no hex, no exponent, no "inf"/"nan". */
#ifndef SBX_PARSE_H
#define SBX_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* Unsigned decimal in [min, max]. "0" is refused when min > 0. */
const char *sbx_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* A size in bytes: digits, then optionally one suffix K, M, G or T
 * (powers of 1024; case-insensitive; an optional trailing "B" or "iB"
 * after the letter, e.g. 4G, 4GiB, 512K, 100). Zero refused; must fit in
 * [1, max]. */
const char *sbx_parse_size(const char *s, uint64_t max, uint64_t *out);

/* A CPU percentage of one core: integer 1..max (100 = one core). */
const char *sbx_parse_percent(const char *s, uint64_t max, uint64_t *out);

/* Seconds with up to three decimals ("30", "0.5", "2.250"), returned in
 * milliseconds; zero refused; at most max_ms. */
const char *sbx_parse_seconds(const char *s, uint64_t max_ms, uint64_t *out_ms);

/* The name of an environment variable the caller sets (sbx-ns --setenv and
 * --keep-env, sbx-check grant --env and a plan's env): what a shell
 * accepts, [A-Za-z_][A-Za-z0-9_]*. NULL when fine, else "empty name" or
 * "bad name". */
const char *sbx_env_name_invalid(const char *name, size_t len);

/* An option's absolute path, in the one shape every tool says it: dies
 * with "OPT: invalid path '': empty" or "OPT: invalid path 'x': not
 * absolute" (usage, 100). Returns s. */
const char *sbx_opt_abspath(const char *opt, const char *s);

/* A directory an option names in its one canonical spelling: absolute (as
 * sbx_opt_abspath), no control character, no "." or ".." component, not
 * the root. Dies with a usage error (100) saying which; returns s. */
const char *sbx_opt_canon_dir(const char *opt, const char *s);

/* The one spelling of a path a tool takes: repeated slashes collapsed and
 * a trailing slash dropped ("//a//b/" is "/a/b", "///" is "/"), so "/dir/"
 * names what "/dir" names; '.' and '..' components are left for the
 * checks that refuse them. A new string (dies on ENOMEM). */
char *sbx_path_squash(const char *s);

/* sbx_opt_abspath, then sbx_path_squash: every path option of sbx-ns
 * goes through this before anything looks at it. */
const char *sbx_opt_path(const char *opt, const char *s);

/* The option-level forms: die with a usage error naming the option and the
 * value, e.g. "sbx-cgroup: usage: --memory: invalid size '1Q': trailing garbage". */
uint64_t sbx_opt_u64(const char *opt, const char *s, uint64_t min, uint64_t max);
uint64_t sbx_opt_size(const char *opt, const char *s, uint64_t max);
uint64_t sbx_opt_percent(const char *opt, const char *s, uint64_t max);
uint64_t sbx_opt_seconds(const char *opt, const char *s, uint64_t max_ms);

#endif

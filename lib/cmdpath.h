/* The command search path (--command-path DIRS): one value both finds the
 * program and becomes its PATH, so what the caller looked up is what the
 * command's own lookups see. Every entry must be a non-empty absolute
 * directory without "." or ".." components that exists when checked; an
 * empty entry (which shells read as ".") is refused, never skipped. */
#ifndef SBX_CMDPATH_H
#define SBX_CMDPATH_H

#include <stddef.h>

#define SBX_CMDPATH_MAX 65536  /* bytes of DIRS accepted */

/* The shape of an absolute path that names one place without relying on
 * the current directory: starts with '/', no "." or ".." component.
 * NULL when fine, else a reason ("not absolute", "'..' component"). */
const char *sbx_path_shape(const char *p, size_t len);

/* Check DIRS. NULL when every entry is fine; else a reason naming the
 * entry, written into why: "empty entry 2", "entry 'bin': not absolute",
 * "entry '/nope': No such file or directory", "entry '/etc/passwd': not a
 * directory". */
const char *sbx_cmdpath_check(const char *dirs, char *why, size_t n);

/* The option form: dies with a usage error (100),
 * "--command-path: invalid path list '/bin::/usr/bin': empty entry 2". */
const char *sbx_opt_cmdpath(const char *opt, const char *dirs);

#endif

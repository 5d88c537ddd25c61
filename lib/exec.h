/* Running the rest of argv: the last step of every chain-loading tool. */
#ifndef SBX_EXEC_H
#define SBX_EXEC_H

#include <stdnoreturn.h>

/* Find prog: a name containing '/' is used as is; otherwise each entry of
 * search (a PATH-style list; NULL means the caller's PATH, or
 * "/usr/local/bin:/usr/bin:/bin" when unset) is tried in order, and the first
 * regular file that is executable wins. Empty entries are skipped (they do
 * not mean "."). On success writes the path to out and returns 0; otherwise
 * returns -1 with errno ENOENT (not found anywhere) or EACCES (found but
 * not executable) or ENAMETOOLONG. */
int sbx_exec_find(const char *prog, const char *search, char *out, unsigned outsz);
/* The same search, with ok(path, ctx) deciding what is usable (0, or -1
 * with errno) instead of this process's view of the host: how a sandbox's
 * lookup is made from outside it (sbx-ns's plan). */
int sbx_exec_find_by(const char *prog, const char *search, char *out, unsigned outsz,
		     int (*ok)(const char *path, void *ctx), void *ctx);

/* execve(argv[0] looked up in search, argv, envp), or die: 127 with
 * "unable to find PROG" when not found, 126 with "unable to exec PROG:
 * errno text" otherwise. envp NULL means the current environment. */
noreturn void sbx_exec(char *const argv[], const char *search, char *const envp[]);

/* The shell convention for a wait(2) status: the exit code, or 128+N when
 * killed by signal N. */
int sbx_wait_code(int status);

#endif

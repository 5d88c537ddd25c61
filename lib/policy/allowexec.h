/* --allow-exec PATH: the initial program must be one of the listed files,
 * by identity (device and inode of what the path resolves to, symlinks
 * followed), never by name: a renamed copy is another file, a symlink to
 * another binary resolves to that binary, both are refused; a symlink or a
 * hard link to a listed file is that file. The list is taken (stat'ed)
 * once, when the options are read. */
#ifndef SBX_ALLOWEXEC_H
#define SBX_ALLOWEXEC_H

#include <stddef.h>
#include <stdnoreturn.h>
#include <sys/types.h>

struct sbx_allowexec_ent {
	const char *path;   /* as given */
	dev_t dev;
	ino_t ino;
};

struct sbx_allowexec {
	struct sbx_allowexec_ent *v;
	size_t n;
};

/* Add one listed file, or die with a usage error (100): empty, relative,
 * missing, not a regular file:
 *   "--allow-exec: invalid path 'x': not absolute"
 *   "--allow-exec: invalid path '/nope': No such file or directory"
 *   "--allow-exec: invalid path '/tmp': not a regular file" */
void sbx_allowexec_add(struct sbx_allowexec *a, const char *opt, const char *path);

/* Is this file (by fstat or stat result) listed? 1 or 0. */
int sbx_allowexec_has(const struct sbx_allowexec *a, dev_t dev, ino_t ino);

/* The early check, before anything is set up: look prog up in search
 * (lib/exec.h rules; a relative name with '/' is taken from cwd, the
 * directory the command will start in, NULL: the current one), stat what
 * it resolves to, compare. Returns, or dies: 127 "unable to find PROG",
 * 102 "refusing to run PROG (PATH): not one of the --allow-exec files". */
void sbx_allowexec_check(const struct sbx_allowexec *a, const char *prog, const char *search,
			 const char *cwd);

/* The last step: look argv[0] up in search, open what it resolves to,
 * compare that open file with the list and execute exactly it
 * (execveat(fd, "", AT_EMPTY_PATH)), so no rename between the check and
 * the exec can swap the program. Dies as sbx_exec does (127/126) and with
 * the 102 refusal above. The fd is left open across exec only for a
 * script: its interpreter reads /dev/fd/N (so the script's $0 is that
 * name), never the path again; a binary gets it closed. */
noreturn void sbx_allowexec_exec(const struct sbx_allowexec *a, char *const argv[],
				 const char *search, char *const envp[]);

#endif

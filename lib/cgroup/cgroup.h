/* cgroup v2 access relative to a directory fd. Paths are resolved beneath
 * that fd without following any symlink, and interface files are never
 * created: a cgroup file that does not exist means the kernel (or the
 * controller) does not offer it. sbx-cgroup configures through these;
 * sbx-check probes through them. */
#ifndef SBX_CGROUP_H
#define SBX_CGROUP_H

#include <stddef.h>
#include <sys/types.h>

/* Open an absolute path as a cgroup v2 directory: O_PATH|O_DIRECTORY, no
 * symlink in any component, and on a cgroup2 file system. Returns the fd,
 * or -1 with errno: ELOOP (a symlink), ENOTDIR, EMEDIUMTYPE (not cgroup2),
 * or what open reported. */
int sbx_cg_open_root(const char *path);

/* openat beneath dirfd with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|
 * RESOLVE_NO_MAGICLINKS (openat2), falling back to openat with O_NOFOLLOW
 * on kernels without openat2 (name must then be a single component).
 * O_CREAT is refused (EINVAL). O_CLOEXEC is always added. */
int sbx_cg_openat(int dirfd, const char *name, int flags);

/* Read a whole interface file into buf (NUL-terminated, one trailing
 * newline removed). Returns the length, or -1 with errno (ENOSPC when the
 * file does not fit). */
ssize_t sbx_cg_read(int dirfd, const char *file, char *buf, size_t size);

/* Write val to an interface file with one write(2). 0 or -1 with errno. */
int sbx_cg_write(int dirfd, const char *file, const char *val);

/* Is word one of the space-separated words of list? */
int sbx_cg_list_has(const char *list, const char *word);

/* "KEY VALUE" lines (cgroup.events, memory.events, cpu.stat): the value
 * of key, or -1 with errno ENOENT when the key is absent. */
int sbx_cg_keyed(const char *text, const char *key, unsigned long long *val);

/* Whose limit an event was. memory.events and, since 6.11, pids.events
 * count the whole subtree: an OOM kill or a refused fork at the limit of
 * a cgroup below (one a command made, a living sandbox's command cgroup)
 * shows there too, so "this cgroup's limit was reached" is read from the
 * .local files, which count the cgroup's own limit only. */

/* The OOM kills in a cgroup's subtree and whose limit they were at.
 * "oom" of memory.events.local (5.2) counts the times this cgroup's own
 * memory.max started the OOM killer, "oom_kill" the processes of the
 * cgroup itself (not below) killed by any. Before 5.2 memory.events was
 * that file (5.2 made it count the subtree and gave the old meaning the
 * .local name); it is read for both then. */
struct sbx_cg_oom {
	unsigned long long kills; /* "oom_kill" of memory.events: the subtree's */
	int own;                  /* killed and this cgroup's memory.max was reached */
	int reached;              /* killed at this cgroup's limit or an enclosing
				   * one's, not only at limits of cgroups below */
};

/* From the text of memory.events and of memory.events.local (NULL when
 * the kernel has none). 0, or -1 with errno when a key is missing. */
int sbx_cg_oom_of(const char *events, const char *local, struct sbx_cg_oom *o);

/* The same, read from the cgroup. 0, or -1 with errno (ENOENT: no
 * memory controller in this cgroup). */
int sbx_cg_oom_read(int dirfd, struct sbx_cg_oom *o);

/* Refused forks, none of them at a limit below this cgroup: "max" of
 * pids.events.local (6.11: this cgroup's own pids.max hit; forks of its
 * own processes refused at its limit or an ancestor's when mounted with
 * pids_localevents), else of pids.events (before 6.11 that meaning).
 * 0, or -1 with errno (ENOENT: no pids controller in this cgroup). */
int sbx_cg_pids_refused(int dirfd, unsigned long long *n);

/* A cgroup name sbx may create: 1 to 64 of [A-Za-z0-9_-], not starting
 * with '-'. No '.' at all, so that a name can never be, or later become, a
 * kernel interface file such as cpu.max. NULL when fine, else why not. */
const char *sbx_cg_name_invalid(const char *name);

/* Delegation as cgroup-v2.rst describes it: the directory and its
 * cgroup.procs, cgroup.threads and cgroup.subtree_control owned by uid.
 * Returns NULL when all are, else the name of the first one that is not
 * ("." for the directory), or of the one that could not be examined. */
const char *sbx_cg_not_delegated(int dirfd, uid_t uid);

/* Whether the caller may start processes in cgroups below dir (an absolute
 * path on cgroup2): moving a process there, by clone3(CLONE_INTO_CGROUP) or
 * through cgroup.procs, needs write access to cgroup.procs of the closest
 * common ancestor of the caller's own cgroup and the target (cgroup-v2.rst,
 * "Delegation Containment"), so a delegated user's process must already sit
 * inside the subtree it was given. 0: it may; 1: it may not, with own (the
 * caller's cgroup) and anc (that ancestor) filled; -1 with errno when it
 * could not be told. */
int sbx_cg_placement(const char *dir, char *own, size_t osz, char *anc, size_t asz);

#endif

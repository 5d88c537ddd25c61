/* What the running kernel offers the sandbox, asked by trying it rather than
 * by version numbers: a feature can be compiled out, blocked by a sysctl,
 * an LSM or a container's seccomp filter, whatever uname says. Every probe
 * is side-effect free for the caller (anything that changes process state
 * runs in a throw-away child). Each returns 0 when the feature works, or a
 * positive errno saying why not. */
#ifndef SBX_PROBE_H
#define SBX_PROBE_H

#include <stddef.h>

/* Kernel release "6.18.0-..." into rel; major and minor parsed from it.
 * Returns 0 or errno (EINVAL when the release does not start with N.N). */
int sbx_probe_kernel(unsigned *major, unsigned *minor, char *rel, size_t relsz);

/* Read a decimal sysctl such as "/proc/sys/user/max_user_namespaces".
 * Returns 0 with *val set, or errno (ENOENT when this kernel lacks it). */
int sbx_probe_sysctl(const char *path, long *val);

/* The namespace count limit an ENOSPC from creating namespaces hit: the
 * first of user.max_{kinds}_namespaces (kinds: "user", "mnt", ... NULL
 * ended) that is 0, else the first one. Its name ("user.max_mnt_namespaces")
 * in name and its value in *val (-1 when unreadable). Each limit counts
 * here and in every user namespace above, so a 0 is the likeliest cause;
 * a count that reached a positive limit cannot be told apart. */
void sbx_probe_ns_limit(const char *const *kinds, char *name, size_t n, long *val);

/* The steps of creating a usable user namespace, in order. */
enum sbx_userns_step { SBX_USERNS_UNSHARE = 1, SBX_USERNS_MAP, SBX_USERNS_MOUNTNS };

/* In a child: unshare(CLONE_NEWUSER), map the caller's uid and gid to 0, then
 * unshare(CLONE_NEWNS) as that root (AppArmor's userns restriction lets the
 * first step pass and denies the capabilities the last one needs). On
 * failure *step names the failing step. */
int sbx_probe_userns(enum sbx_userns_step *step);

/* The same steps in this process (a child that probes what a user and
 * mount namespace allow): 0, or errno with *step the failing step. */
int sbx_userns_enter(int *step);

/* In a child: PR_SET_NO_NEW_PRIVS and an allow-everything BPF filter. */
int sbx_probe_seccomp(void);

/* Landlock ABI version (>= 1) in *abi. */
int sbx_probe_landlock(int *abi);

/* clone3 accepts CLONE_INTO_CGROUP (asked with a cgroup fd that cannot be
 * open, so no process is ever created: EBADF means the flag is known, EINVAL
 * that it is not). */
int sbx_probe_clone3_cgroup(void);

/* pidfd_open on the caller. */
int sbx_probe_pidfd(void);

/* openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS. */
int sbx_probe_openat2(void);

/* quotactl_fd exists (asked with fd -1: EBADF means it does). */
int sbx_probe_quotactl_fd(void);

/* The mount steps sbx-ns takes to build its root, in a child's own user and
 * mount namespace: a tmpfs, a recursive bind of src (by its fd) onto a
 * directory of it, made read-only, nosuid and nodev with every submount,
 * proven to be the object bound, then the tmpfs itself made read-only; by
 * the interface api (enum sbx_mnt_api). On failure, step (n bytes) says
 * which step. */
int sbx_probe_mounts(int api, const char *src, char *step, size_t n);

#endif

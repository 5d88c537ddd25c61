/* Running inside a container: how to tell, and what its user must change.
 * sbx-ns names these fixes when it refuses and sbx-check host names them in
 * its report, so both say the same thing in the same words. The fixes are
 * container-level settings (a podman or docker flag, a Kubernetes
 * securityContext field), never host boot parameters: a container's user
 * cannot act on those. */
#ifndef SBX_CONTAINER_H
#define SBX_CONTAINER_H

#include <stddef.h>

enum sbx_ctr { SBX_CTR_NONE, SBX_CTR_PODMAN, SBX_CTR_DOCKER, SBX_CTR_KUBERNETES, SBX_CTR_OTHER };

/* Whether this process runs in a container, from what the runtimes leave
 * behind (/run/.containerenv, /.dockerenv, the Kubernetes service account or
 * service variables, a `container` variable, paths of /proc covered by other
 * mounts). why gets the evidence ("podman: /run/.containerenv"). */
enum sbx_ctr sbx_container(char *why, size_t n);

/* 1 when a seccomp filter is installed on this process (Seccomp: 2 in
 * /proc/self/status): an ENOSYS or EPERM may then be the filter's answer,
 * not the kernel's. 0 when none is, -1 when it cannot be told. */
int sbx_seccomp_filtered(void);

/* The first path under /proc that another mount covers (a runtime's masked
 * path), into first; 0 when there is none. Such a mount forbids mounting a
 * fresh proc in a new pid namespace (EPERM). */
int sbx_proc_masked(char *first, size_t n);

/* 1 when this process is chrooted: no mount that /proc/self/mountinfo
 * shows has "/" as its mount point (chroot(2) into a directory). The
 * kernel refuses such a process a new user namespace (EPERM), whatever the
 * sysctls say. 0 otherwise, or when it cannot be told. */
int sbx_chrooted(void);

/* The fixes, one line each. */
extern const char sbx_fix_ctr_proc[];    /* a masked /proc: unmask it */
extern const char sbx_fix_ctr_userns[];  /* the runtime refuses new user namespaces */
extern const char sbx_fix_ctr_seccomp[]; /* the runtime's seccomp profile refuses a call */
extern const char sbx_fix_ctr_cgroup[];  /* no usable cgroup v2 inside the container */
extern const char sbx_fix_chroot[];      /* a chrooted process gets no user namespace */

#endif

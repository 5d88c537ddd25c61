/* Make user namespaces unavailable to this process and everything it
 * starts, as a container's seccomp profile does: clone and unshare with
 * CLONE_NEWUSER fail with EPERM, clone3 (whose flags a filter cannot read)
 * with ENOSYS. sbx-check's Landlock tier proof runs sbx-ns under it where
 * the host would otherwise give it namespaces; tests/progs/ns-nouserns
 * does the same for the test suite. */
#ifndef SBX_NOUSERNS_H
#define SBX_NOUSERNS_H

/* Installs the filter (and no_new_privs). 0, or -1 with errno. */
int sbx_refuse_userns(void);

#endif

/* The system calls libc does not wrap, or did not when the oldest libc we
 * build with was released: each is called here and nowhere else, so its
 * number, its argument struct and its fallback live in one place. Each
 * returns what the system call does (-1 with errno; ENOSYS where the
 * kernel, or the platform, has no such call). */
#ifndef SBX_SYS_H
#define SBX_SYS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* openat2(2) with flags and resolve (RESOLVE_*); mode 0. */
int sbx_openat2(int dirfd, const char *path, uint64_t flags, uint64_t resolve);
/* pidfd_open(2), flags 0. */
int sbx_pidfd_open(pid_t pid);
/* pidfd_send_signal(2) without siginfo, flags 0. */
int sbx_pidfd_signal(int pidfd, int sig);
/* clone3(2) with a struct clone_args of size bytes: like fork, 0 in the
 * child. */
long sbx_clone3(void *args, size_t size);

#endif

/* System calls without a libc wrapper: see sys.h. */
#include "sys.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#ifdef __linux__
#include <linux/openat2.h>
#include <sys/syscall.h>

#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif

int sbx_openat2(int dirfd, const char *path, uint64_t flags, uint64_t resolve)
{
	struct open_how how;

	memset(&how, 0, sizeof how);
	how.flags = flags;
	how.resolve = resolve;
	return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}

int sbx_pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

int sbx_pidfd_signal(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

long sbx_clone3(void *args, size_t size)
{
	return syscall(SYS_clone3, args, size);
}

#else /* macOS: sbx-seatbelt's meter asks for a pidfd and does without */

int sbx_openat2(int dirfd, const char *path, uint64_t flags, uint64_t resolve)
{
	(void)dirfd, (void)path, (void)flags, (void)resolve;
	errno = ENOSYS;
	return -1;
}

int sbx_pidfd_open(pid_t pid)
{
	(void)pid;
	errno = ENOSYS;
	return -1;
}

int sbx_pidfd_signal(int pidfd, int sig)
{
	(void)pidfd, (void)sig;
	errno = ENOSYS;
	return -1;
}

long sbx_clone3(void *args, size_t size)
{
	(void)args, (void)size;
	errno = ENOSYS;
	return -1;
}
#endif

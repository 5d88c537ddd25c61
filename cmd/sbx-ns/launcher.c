/* Launcher integrity (the spec's threat model for the program that starts
 * the sandbox): a command confined by path could still rewrite sbx-ns for
 * the next run through a writable root or a second hard link, so sbx-ns
 * refuses to run when its own executable could be changed by the sandbox
 * or by anyone but root and the caller. */
#include "ns.h"

#include "die.h"
#include "exitcodes.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void ns_check_launcher(const struct ns_plan *p)
{
	char exe[PATH_MAX], dir[PATH_MAX], *slash;
	struct stat st, ds;
	ssize_t n;
	int fd;

	n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read /proc/self/exe");
	exe[n] = '\0';
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open /proc/self/exe");
	close(fd);
	if (!S_ISREG(st.st_mode))
		sbx_die(SBX_EXIT_POLICY, "refusing to run: the executable %s is not a regular file", exe);
	if (st.st_nlink != 1)
		sbx_die(SBX_EXIT_POLICY, "refusing to run: the executable %s has %lu hard links",
			exe, (unsigned long)st.st_nlink);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		sbx_die(SBX_EXIT_POLICY, "refusing to run: the executable %s is writable by group or others", exe);
	if (st.st_uid != 0 && st.st_uid != p->caller_uid)
		sbx_die(SBX_EXIT_POLICY, "refusing to run: the executable %s is owned by uid %u, "
			"neither root nor the caller", exe, (unsigned)st.st_uid);
	/* Inside a writable root, by name or by identity: each directory
	 * above the executable is compared with each writable root, so a
	 * second mount of the workspace elsewhere is caught too. */
	if (exe[0] != '/')
		sbx_die(SBX_EXIT_POLICY, "refusing to run: the executable %s has no path", exe);
	strcpy(dir, exe);
	for (;;) {
		slash = strrchr(dir, '/');
		if (!slash)
			break;
		*(slash == dir ? slash + 1 : slash) = '\0';
		if (stat(dir, &ds) == 0) {
			const struct mount_op *op;
			for (size_t it = 0; (op = ns_next_writable(p, &it)); ) {
				if ((ds.st_dev == op->dev && ds.st_ino == op->ino) || sbx_path_within(exe, op->src))
					sbx_die(SBX_EXIT_POLICY, "refusing to run: the executable %s lies "
						"inside the writable root %s", exe, op->src);
			}
		}
		if (!strcmp(dir, "/"))
			break;
	}
}

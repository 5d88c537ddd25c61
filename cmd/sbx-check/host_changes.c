/* `sbx-check host`: whether sbx-ns --changes works here: an overlay
 * mounted with userxattr in a throwaway user and mount namespace, its
 * layers in a scratch directory of /var/tmp (removed after). */
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int put(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok ? 0 : -1;
}

/* The child: a user namespace mapping the caller to 0, a mount namespace,
 * the overlay. Exits with the errno of the step that failed. */
static int probe(const char *dir)
{
	char map[64], data[512], m[256];
	uid_t u = getuid();
	gid_t g = getgid();

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return errno;
	snprintf(map, sizeof map, "0 %u 1\n", (unsigned)u);
	if (put("/proc/self/setgroups", "deny") < 0 && errno != ENOENT)
		return errno;
	if (put("/proc/self/uid_map", map) < 0)
		return errno;
	snprintf(map, sizeof map, "0 %u 1\n", (unsigned)g);
	if (put("/proc/self/gid_map", map) < 0)
		return errno;
	snprintf(data, sizeof data, "lowerdir=%s/l,upperdir=%s/u,workdir=%s/w,userxattr", dir, dir, dir);
	snprintf(m, sizeof m, "%s/m", dir);
	if (mount("overlay", m, "overlay", MS_NOSUID | MS_NODEV, data) < 0)
		return errno;
	return 0;
}

static void rm_tree(const char *dir)
{
	char p[256];
	const char *sub[] = { "w/work", "w/index", "w", "u", "l", "m" };

	for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, sub[i]);
		rmdir(p);
	}
	rmdir(dir);
}

void chk_host_changes(struct chk_report *r)
{
	char dir[] = "/var/tmp/sbx-check-ovl.XXXXXX", p[256];
	const char *sub[] = { "l", "u", "w", "m" };
	int st = 0, e;
	pid_t pid;

	if (!mkdtemp(dir)) {
		chk_refused(r, CLS_EXTRA, "changes", errno, "make a scratch directory in /var/tmp", "");
		return;
	}
	for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, sub[i]);
		mkdir(p, 0700);
	}
	pid = fork();
	if (pid == 0)
		_exit(probe(dir));
	e = pid < 0 ? errno : waitpid(pid, &st, 0) < 0 ? errno : WIFEXITED(st) ? WEXITSTATUS(st) : EINTR;
	rm_tree(dir);
	if (!e)
		chk_add(r, CLS_EXTRA, "changes", CHK_OK,
			"change sets (sbx-ns --changes): overlayfs mounts in a user namespace");
	else
		chk_refused(r, CLS_EXTRA, "changes", e, "mount an overlay in a user namespace for sbx-ns --changes",
			    "Linux 5.11 or later, with overlayfs, and user namespaces allowed");
}

/* `sbx-check host`: whether sbx-ns --changes works here: an overlay
 * mounted with userxattr in a throwaway user and mount namespace, its
 * layers in a scratch directory of /var/tmp (removed after). */
#include "check.h"
#include "probe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The child: a user namespace mapping the caller to 0, a mount namespace,
 * the overlay. Exits with the errno of the step that failed. */
static int probe(const char *dir)
{
	char data[512], m[256];
	int step, e = sbx_userns_enter(&step);

	if (e)
		return e;
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

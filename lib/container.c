/* Container detection and the container-level fixes: see container.h. */
#include "container.h"
#include "procstat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char sbx_fix_ctr_proc[] =
	"in a container, unmask /proc: podman --security-opt unmask=/proc/*, "
	"docker --security-opt systempaths=unconfined, Kubernetes securityContext "
	"procMount: Unmasked (with hostUsers: false; podman kube play before 4.7 ignores "
	"procMount: run it with contrib/kubernetes/runc-procmount, installed by "
	"contrib/kubernetes/setup-debian12.sh, or a newer podman)";
const char sbx_fix_ctr_userns[] =
	"in a container, allow new user namespaces: podman allows them by default; docker "
	"--security-opt seccomp=unconfined (its default profile refuses clone with namespace "
	"flags, unshare and the mount calls without CAP_SYS_ADMIN); Kubernetes securityContext "
	"seccompProfile type: Unconfined or a Localhost profile allowing clone with namespace "
	"flags, unshare and the mount calls";
const char sbx_fix_ctr_seccomp[] =
	"the container's seccomp profile refuses it: podman or docker --security-opt "
	"seccomp=PROFILE allowing it, Kubernetes securityContext seccompProfile type: Localhost";
const char sbx_fix_ctr_cgroup[] =
	"in a container, let the runtime hold the limits (podman or docker --memory, "
	"--pids-limit, --cpus; Kubernetes resources.limits), or give sbx-cgroup a delegated "
	"cgroup v2 subtree (a cgroup v2 host, podman --cgroupns=private)";
const char sbx_fix_chroot[] =
	"this process is chrooted, and the kernel refuses a chrooted process a new user "
	"namespace: run it outside chroot(2) (a container's root, made with pivot_root, "
	"is not refused)";

static int exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

int sbx_proc_masked(char *first, size_t n)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], path[1024];

	if (!f)
		return 0;
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "%*s %*s %*s %*s %1023s", path) != 1 || strncmp(path, "/proc/", 6))
			continue;
		/* binfmt_misc sits on a permanently empty directory: allowed. */
		if (!strcmp(path, "/proc/sys/fs/binfmt_misc"))
			continue;
		snprintf(first, n, "%s", path);
		fclose(f);
		return 1;
	}
	fclose(f);
	return 0;
}

int sbx_chrooted(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], path[1024];
	int any = 0, root = 0;

	if (!f)
		return 0;
	while (!root && fgets(line, sizeof line, f)) {
		if (sscanf(line, "%*s %*s %*s %*s %1023s", path) != 1)
			continue;
		any = 1;
		root = !strcmp(path, "/");
	}
	fclose(f);
	return any && !root;
}

enum sbx_ctr sbx_container(char *why, size_t n)
{
	const char *v;
	char masked[256];

	if ((v = getenv("KUBERNETES_SERVICE_HOST")) && *v) {
		snprintf(why, n, "Kubernetes: KUBERNETES_SERVICE_HOST is set");
		return SBX_CTR_KUBERNETES;
	}
	if (exists("/var/run/secrets/kubernetes.io")) {
		snprintf(why, n, "Kubernetes: /var/run/secrets/kubernetes.io");
		return SBX_CTR_KUBERNETES;
	}
	if (exists("/run/.containerenv")) {
		snprintf(why, n, "podman: /run/.containerenv");
		return SBX_CTR_PODMAN;
	}
	if (exists("/.dockerenv")) {
		snprintf(why, n, "docker: /.dockerenv");
		return SBX_CTR_DOCKER;
	}
	if ((v = getenv("container")) && *v) {
		snprintf(why, n, "container=%.64s", v);
		for (char *c = why; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		return SBX_CTR_OTHER;
	}
	if (sbx_proc_masked(masked, sizeof masked)) {
		snprintf(why, n, "a masked /proc: %s is covered by a mount", masked);
		return SBX_CTR_OTHER;
	}
	snprintf(why, n, "no sign of a container");
	return SBX_CTR_NONE;
}

int sbx_seccomp_filtered(void)
{
	unsigned long long mode;

	return sbx_proc_status("Seccomp", 10, &mode) < 0 ? -1 : mode == 2;
}

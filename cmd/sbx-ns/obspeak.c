/* The peaks of the run's own cgroup, for --observe and --shadow-policy:
 * memory.peak, pids.peak and cpu.stat's usage_usec, read once the sandbox
 * is over (the files keep them after the last process left).
 *
 * Only a cgroup that is the run's own says anything of the run: a living
 * sandbox's --cgroup-fd, or the cgroup v2 sbx-ns runs in when it is the
 * only process there as it starts (what sbx-cgroup gives the rest of its
 * chain: a new cgroup, with sbx-ns its one process). A shared cgroup (a
 * user's session, a service's, the root) would report other processes'
 * memory as the run's; there the record says why it has no peaks instead.
 * The outer sbx-ns and the sandbox's pid 1 are counted with the command:
 * a peak is what a limit on that cgroup would have to allow. */
#include "ns.h"

#include "cgroup.h"
#include "die.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Where cgroup2 is mounted, from mountinfo. */
static int cg2_mount(char *out, size_t sz)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int found = 0;

	if (!f)
		return -1;
	while (!found && fgets(line, sizeof line, f)) {
		char *sep = strstr(line, " - "), mnt[4096], type[64];
		if (!sep || sscanf(sep, " - %63s", type) != 1 || strcmp(type, "cgroup2"))
			continue;
		/* 36 35 98:0 /root /mnt ... : the fifth field, no escapes needed
		 * for the places cgroup2 is mounted (an octal escape refuses) */
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1 && !strchr(mnt, '\\') &&
		    strlen(mnt) < sz) {
			snprintf(out, sz, "%s", mnt);
			found = 1;
		}
	}
	fclose(f);
	return found ? 0 : -1;
}

static int own_cgroup(struct ns_peak *pk)
{
	char line[4096], mnt[2048], path[8192], procs[64];
	FILE *f = fopen("/proc/self/cgroup", "re");
	int found = 0, fd;
	ssize_t n;

	while (f && !found && fgets(line, sizeof line, f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = '\0';
			found = 1;
		}
	if (f)
		fclose(f);
	if (!found || cg2_mount(mnt, sizeof mnt) < 0) {
		snprintf(pk->why, sizeof pk->why, "no cgroup v2 hierarchy here");
		return -1;
	}
	if (!strcmp(line + 3, "/")) {
		snprintf(pk->why, sizeof pk->why, "sbx-ns runs in the root cgroup, which is not the run's own "
			 "(sbx-cgroup gives it one)");
		return -1;
	}
	snprintf(path, sizeof path, "%s%s", mnt, line + 3);
	if ((fd = sbx_cg_open_root(path)) < 0) {
		snprintf(pk->why, sizeof pk->why, "unable to open its cgroup: %s", strerror(errno));
		return -1;
	}
	/* Its one process, this one: a cgroup of the run's own. */
	n = sbx_cg_read(fd, "cgroup.procs", procs, sizeof procs);
	if (n < 0 || (long)strtol(procs, NULL, 10) != (long)getpid() || strchr(procs, '\n')) {
		snprintf(pk->why, sizeof pk->why, "its cgroup holds other processes, so it is not the run's own "
			 "(sbx-cgroup gives it one)");
		close(fd);
		return -1;
	}
	return fd;
}

void ns_peak_start(const struct ns_run *r, struct ns_peak *pk)
{
	memset(pk, 0, sizeof *pk);
	pk->fd = r->a->cgroup_fd >= 0 ? fcntl(r->a->cgroup_fd, F_DUPFD_CLOEXEC, 3) : own_cgroup(pk);
}

void ns_peak_read(struct ns_peak *pk)
{
	char buf[4096];
	unsigned long long v;

	if (pk->fd < 0)
		return;
	if (sbx_cg_read(pk->fd, "memory.peak", buf, sizeof buf) >= 0 && sscanf(buf, "%llu", &v) == 1)
		pk->have_mem = 1, pk->mem = v;
	if (sbx_cg_read(pk->fd, "pids.peak", buf, sizeof buf) >= 0 && sscanf(buf, "%llu", &v) == 1)
		pk->have_pids = 1, pk->pids = v;
	if (sbx_cg_read(pk->fd, "cpu.stat", buf, sizeof buf) >= 0 && sbx_cg_keyed(buf, "usage_usec", &v) == 0)
		pk->have_cpu = 1, pk->cpu_usec = v;
	if (!pk->have_mem || !pk->have_pids)
		snprintf(pk->why, sizeof pk->why, "its cgroup has no %s (a controller not enabled for it, or an "
			 "older kernel)", !pk->have_mem ? "memory.peak" : "pids.peak");
}

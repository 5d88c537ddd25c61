/* A living sandbox's cgroups (--serve --cgroup-fd FD, under sbx-cgroup
 * --cgroup-fd FD): the cgroup FD names holds the sandbox's totals; the
 * sandbox itself (the outer and pid 1) moves into its leaf "sandbox", and
 * a command that asks for limits of its own (--memory, --pids, --cpu on
 * --join) is born in a sibling "cmd-ID" (clone3 CLONE_INTO_CGROUP by pid
 * 1: no gap), under the same totals. That cgroup goes with the command:
 * what it left running is killed, the cgroup removed; an OOM kill there
 * ends that command only (105), a command that hit its pids limit is
 * reported as a limit exceeded (103).
 *
 *   C (totals; subtree_control +memory +pids [+cpu] while serving)
 *   |-- sandbox   the outer, pid 1, and commands without limits
 *   |-- cmd-7     one command and what it started
 *
 * The cgroup must hold the outer alone and have no controllers enabled
 * for children (sbx-cgroup's child cgroup does); at the stop sbx-ns puts
 * it back as it found it. Root running the commands as another uid makes
 * cgroup.procs of C and of each command's cgroup that uid's while serving
 * (clone3 into a cgroup checks both for pid 1's uid); nothing inside sees
 * a cgroup file system. */
#include "ns.h"

#include "cgroup.h"
#include "die.h"
#include "exitcodes.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define CG_RMDIR_TRIES 200        /* 10 ms apart: what a killed cgroup takes to empty */

static char enabled[32];          /* the controllers enabled below C */
static uid_t procs_uid = (uid_t)-1;
static gid_t procs_gid;

/* The cgroup FD names, before anything is made. */
void ns_cg_check(const struct ns_args *a, const struct ns_plan *p)
{
	char buf[4096], self[32];
	struct statfs sf;
	int n = 0;

	if (a->cgroup_fd < 0)
		return;
	if (!a->serve)
		sbx_die_usage("--cgroup-fd needs --serve (a one-shot run's cgroup is sbx-cgroup's)");
	if (fstatfs(a->cgroup_fd, &sf) < 0 || sf.f_type != CGROUP2_SUPER_MAGIC)
		sbx_die_usage("--cgroup-fd: fd %d is not a cgroup v2 directory", a->cgroup_fd);
	if (sbx_cg_read(a->cgroup_fd, "cgroup.procs", buf, sizeof buf) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read cgroup.procs of --cgroup-fd %d", a->cgroup_fd);
	snprintf(self, sizeof self, "%d", (int)getpid());
	for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n"))
		if (strcmp(l, self) || ++n > 1)
			sbx_die(SBX_EXIT_UNSUPPORTED, "unable to make command cgroups: the cgroup of --cgroup-fd %d "
				"holds other processes than sbx-ns (give it a cgroup of its own: sbx-cgroup --cgroup-fd)",
				a->cgroup_fd);
	if (!n)
		sbx_die(SBX_EXIT_UNSUPPORTED, "unable to make command cgroups: sbx-ns is not in the cgroup of "
			"--cgroup-fd %d (sbx-cgroup --cgroup-fd gives the one it runs in)", a->cgroup_fd);
	if (sbx_cg_read(a->cgroup_fd, "cgroup.subtree_control", buf, sizeof buf) < 0 || *buf)
		sbx_die(SBX_EXIT_UNSUPPORTED, "unable to make command cgroups: the cgroup of --cgroup-fd %d "
			"already has controllers for children (%s)", a->cgroup_fd, buf);
	if (sbx_cg_read(a->cgroup_fd, "cgroup.controllers", buf, sizeof buf) < 0 ||
	    !sbx_cg_list_has(buf, "memory") || !sbx_cg_list_has(buf, "pids"))
		sbx_die(SBX_EXIT_UNSUPPORTED, "unable to make command cgroups: the memory and pids controllers "
			"are not available in the cgroup of --cgroup-fd %d", a->cgroup_fd);
	snprintf(enabled, sizeof enabled, "+memory +pids%s", sbx_cg_list_has(buf, "cpu") ? " +cpu" : "");
	(void)p;
}

static int fail(const char *what)
{
	sbx_warn_errno("unable to %s", what);
	return -1;
}

/* After the clone (pid 1's cgroup namespace is rooted at C): the outer
 * and pid 1 into C/sandbox, the controllers on for C's children. */
int ns_cg_setup(struct ns_run *r, pid_t pid1)
{
	int fd = r->a->cgroup_fd, sb;
	char pid[32];
	struct stat st;

	if (fd < 0)
		return 0;
	if (mkdirat(fd, "sandbox", 0755) < 0)
		return fail("create the sandbox's cgroup");
	if ((sb = sbx_cg_openat(fd, "sandbox", O_RDONLY | O_DIRECTORY)) < 0)
		return fail("open the sandbox's cgroup");
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	if (sbx_cg_write(sb, "cgroup.procs", pid) < 0)
		return close(sb), fail("move sbx-ns into the sandbox's cgroup");
	snprintf(pid, sizeof pid, "%d", (int)pid1);
	if (sbx_cg_write(sb, "cgroup.procs", pid) < 0)
		return close(sb), fail("move the sandbox's pid 1 into its cgroup");
	close(sb);
	if (sbx_cg_write(fd, "cgroup.subtree_control", enabled) < 0)
		return fail("enable the controllers for the commands' cgroups");
	if (r->p->root && r->p->uid != 0) {
		if (fstatat(fd, "cgroup.procs", &st, AT_SYMLINK_NOFOLLOW) < 0)
			return fail("stat cgroup.procs");
		if (fchownat(fd, "cgroup.procs", r->p->uid, r->p->gid, AT_SYMLINK_NOFOLLOW) < 0)
			return fail("give the sandbox's uid the cgroup's cgroup.procs");
		procs_uid = st.st_uid;
		procs_gid = st.st_gid;
	}
	return 0;
}

/* A command's own cgroup with its limits, open for CLONE_INTO_CGROUP;
 * -1 with a reason in why. */
int ns_cg_command(const struct ns_run *r, uint32_t id, uint64_t memory, uint64_t pids, uint64_t cpu_pct,
		  char *why, size_t sz)
{
	char name[32], v[64];
	int fd = r->a->cgroup_fd, c;

	snprintf(name, sizeof name, "cmd-%u", id);
	if (mkdirat(fd, name, 0755) < 0 || (c = sbx_cg_openat(fd, name, O_RDONLY | O_DIRECTORY)) < 0) {
		snprintf(why, sz, "unable to create the command's cgroup %s: %s", name, strerror(errno));
		return -1;
	}
	if (memory) {
		snprintf(v, sizeof v, "%llu", (unsigned long long)memory);
		if (sbx_cg_write(c, "memory.max", v) < 0 ||
		    (sbx_cg_write(c, "memory.swap.max", "0") < 0 && errno != ENOENT))
			goto bad;
	}
	if (pids) {
		snprintf(v, sizeof v, "%llu", (unsigned long long)pids);
		if (sbx_cg_write(c, "pids.max", v) < 0)
			goto bad;
	}
	if (cpu_pct) {
		snprintf(v, sizeof v, "%llu 100000", (unsigned long long)cpu_pct * 1000);
		if (sbx_cg_write(c, "cpu.max", v) < 0)
			goto bad;
	}
	/* clone3 into it checks that pid 1 may write its cgroup.procs */
	if (procs_uid != (uid_t)-1 && fchownat(c, "cgroup.procs", r->p->uid, r->p->gid, AT_SYMLINK_NOFOLLOW) < 0)
		goto bad;
	return c;
bad:
	snprintf(why, sz, "unable to set the limits of the command's cgroup %s: %s", name, strerror(errno));
	close(c);
	unlinkat(fd, name, AT_REMOVEDIR);
	return -1;
}

static int cg_empty(int c)
{
	char ev[256];
	unsigned long long v = 1;

	if (sbx_cg_read(c, "cgroup.events", ev, sizeof ev) < 0 || sbx_cg_keyed(ev, "populated", &v) < 0)
		return 1;
	return v == 0;
}

/* The command's main process ended: what its cgroup saw, then the rest
 * of it killed and the cgroup gone. *oom: NS_OOM_OWN when its --memory
 * was reached, NS_OOM_ABOVE when a process of it was killed at a limit
 * above (the sandbox's total, the host's); *pids_hit: its --pids was. */
void ns_cg_command_end(const struct ns_run *r, uint32_t id, int *oom, int *pids_hit)
{
	char name[32], buf[1024];
	struct sbx_cg_oom oe;
	unsigned long long v;
	int fd = r->a->cgroup_fd, c, i;

	*oom = *pids_hit = 0;
	snprintf(name, sizeof name, "cmd-%u", id);
	if ((c = sbx_cg_openat(fd, name, O_RDONLY | O_DIRECTORY)) < 0)
		return;
	if (sbx_cg_oom_read(c, &oe) == 0 && oe.reached)
		*oom = oe.own ? NS_OOM_OWN : NS_OOM_ABOVE;
	if (sbx_cg_pids_refused(c, &v) == 0 && v)
		*pids_hit = 1;
	/* cgroup.kill (5.14); before it, each process, again until none is left. */
	int have_kill = sbx_cg_write(c, "cgroup.kill", "1") == 0;
	if (!have_kill && errno != ENOENT)
		sbx_warn_errno("unable to kill what is left in the command's cgroup %s", name);
	for (i = 0; i < CG_RMDIR_TRIES && !cg_empty(c); i++) {
		if (!have_kill && sbx_cg_read(c, "cgroup.procs", buf, sizeof buf) >= 0)
			for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n"))
				kill((pid_t)atoi(l), SIGKILL);
		poll(NULL, 0, 10);
	}
	close(c);
	if (unlinkat(fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		sbx_warn_errno("unable to remove the command's cgroup %s", name);
}

/* The stop, pid 1 gone: C as it was found (the commands' cgroups
 * removed, no controllers for children, the outer back in C). */
void ns_cg_teardown(const struct ns_run *r)
{
	int fd = r->a->cgroup_fd;
	char pid[32];

	if (fd < 0 || !*enabled)
		return;
	for (uint32_t id = 1; id < r->x.serve_next_id; id++) {
		char name[32];
		snprintf(name, sizeof name, "cmd-%u", id);
		if (unlinkat(fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
			sbx_warn_errno("unable to remove the command's cgroup %s", name);
	}
	if (procs_uid != (uid_t)-1 && fchownat(fd, "cgroup.procs", procs_uid, procs_gid, AT_SYMLINK_NOFOLLOW) < 0)
		sbx_warn_errno("unable to give cgroup.procs back to uid %u", (unsigned)procs_uid);
	if (sbx_cg_write(fd, "cgroup.subtree_control", "-memory -pids -cpu") < 0 &&
	    sbx_cg_write(fd, "cgroup.subtree_control", "-memory -pids") < 0)
		sbx_warn_errno("unable to disable the controllers below the sandbox's cgroup");
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	if (sbx_cg_write(fd, "cgroup.procs", pid) < 0)
		sbx_warn_errno("unable to move sbx-ns back into the sandbox's cgroup");
	else if (unlinkat(fd, "sandbox", AT_REMOVEDIR) < 0 && errno != ENOENT)
		sbx_warn_errno("unable to remove the sandbox's cgroup");
}

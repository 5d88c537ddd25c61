/* A cgroup whose supervisor is gone. sbx-cgroup's command dies with it
 * (PR_SET_PDEATHSIG), but what the command started lives on in the cgroup
 * when the supervisor is SIGKILLed. So each run marks its cgroup with who
 * supervises it (the xattr user.sbx.supervisor: pid, start time, pid
 * namespace), and a later run with the same --root and --name that finds
 * the cgroup still there tells an orphan (the supervisor is gone, or the
 * pid now belongs to another process) from a cgroup still in use, and
 * reaps only the orphan. */
#include "sbx-cgroup.h"

#include "die.h"
#include "procstat.h"
#include "exitcodes.h"
#include "fd.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define SUPERVISOR_XATTR "user.sbx.supervisor"
#define EMPTY_WAIT_MS 10000

/* Field 22 of /proc/PID/stat: when the process started, in clock ticks
 * after boot. 0 when unreadable. */
static unsigned long long start_time(const char *pid)
{
	struct sbx_proc_stat ps;

	return sbx_proc_stat(pid, &ps) == 0 ? ps.start : 0;
}

static unsigned long long pidns(const char *pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof path, "/proc/%s/ns/pid", pid);
	return stat(path, &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

void cg_mark_supervised(const struct cg *cg)
{
	char val[96];
	int n = snprintf(val, sizeof val, "%ld %llu %llu", (long)getpid(), start_time("self"),
			 pidns("self"));

	/* Without user xattrs on cgroup2 (Linux < 5.7) an orphan is only
	 * refused later, never reaped: nothing to say here. */
	(void)fsetxattr(cg->fd, SUPERVISOR_XATTR, val, (size_t)n, 0);
}

/* 1: the recorded supervisor still runs (or cannot be ruled out). */
static int supervised(long pid, unsigned long long start, unsigned long long ns)
{
	char spid[32];
	int pfd, alive;

	if (ns != pidns("self"))
		return 1;   /* another pid namespace: its pid means nothing here */
	snprintf(spid, sizeof spid, "%ld", pid);
	pfd = sbx_pidfd_open((pid_t)pid);
	if (pfd < 0)
		return errno == ESRCH ? 0 : 1;
	/* The stat read belongs to the process the pidfd holds if that is
	 * still alive afterwards. */
	alive = start_time(spid) == start && sbx_pidfd_signal(pfd, 0) == 0;
	close(pfd);
	return alive;
}

int cg_reap_orphan(const struct cg *holder, const char *name, struct sbx_err *f)
{
	struct cg old;
	char val[96];
	long pid;
	unsigned long long start, ns;
	ssize_t n;
	int end;

	if (cg_open_child(holder, name, &old, O_RDONLY) < 0)
		return sbx_err_set(f, SBX_EXIT_POLICY, "refusing to reuse %s/%s: it exists already",
			     holder->path, name);
	n = fgetxattr(old.fd, SUPERVISOR_XATTR, val, sizeof val - 1);
	if (n > 0)
		val[n] = '\0';
	if (n <= 0 || sscanf(val, "%ld %llu %llu%n", &pid, &start, &ns, &end) != 3 ||
	    (size_t)end != (size_t)n || pid <= 0) {
		close(old.fd);
		return sbx_err_set(f, SBX_EXIT_POLICY,
			     "refusing to reuse %s: it exists already", old.path);
	}
	if (supervised(pid, start, ns)) {
		close(old.fd);
		return sbx_err_set(f, SBX_EXIT_POLICY,
			     "refusing to reuse %s: it exists already, supervised by pid %ld", old.path, pid);
	}
	if (cg_kill(&old) < 0 || cg_wait_empty(&old, EMPTY_WAIT_MS) < 0) {
		int e = errno;
		close(old.fd);
		return sbx_err_errno(f, SBX_EXIT_SYS, e, "unable to empty %s, left by a supervisor that is gone (pid %ld)",
			     old.path, pid);
	}
	close(old.fd);
	if (cg_remove(holder, name) < 0)
		return sbx_err_errno(f, SBX_EXIT_SYS, errno,
			     "unable to remove %s, left by a supervisor that is gone (pid %ld)", old.path, pid);
	sbx_note("removed %s, left by a supervisor that is gone (pid %ld): killed what still ran in it",
		 old.path, pid);
	return 0;
}

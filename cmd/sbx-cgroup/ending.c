/* The ordered end of a timeout or a cancellation. cgroup.kill at once
 * would take the command's direct child with everything else; in the chain
 * that child is sbx-ns's outer process (sbx-quota execs on), which must
 * outlive its sandbox to run the deny-write end check. So: freeze the
 * cgroup (nothing in it runs or forks), SIGKILL every process in it but
 * the direct child, thaw, send the direct child SIGCONT and SIGTERM, give
 * it GRACE_MS to end, then cgroup.kill whatever is left. A direct child
 * that is the untrusted command itself gains nothing but the grace: it
 * is alone in its cgroup and dies at the grace's end at the latest. */
#include "sbx-cgroup.h"

#include "cgroup.h"
#include "sys.h"
#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define FREEZE_WAIT_MS 2000   /* bound on waiting for "frozen 1" */
#define SWEEP_MS 2000         /* bound on killing all but the direct child */
#define MAX_VICTIMS 4096      /* per round; more are taken in the next round */

struct victims {
	int fd[MAX_VICTIMS];
	pid_t pid[MAX_VICTIMS];
	size_t n;
};

/* What one listing of the subtree does: open a pidfd for each pid but
 * keep (open), or mark which pids of an earlier listing are still there. */
struct listing {
	pid_t keep;
	struct victims *open;
	const struct victims *chk;
	int *listed;
};

static void listed_pid(void *ctx, pid_t pid)
{
	struct listing *l = ctx;

	if (pid == l->keep)
		return;
	if (l->open && l->open->n < MAX_VICTIMS) {
		int pfd = sbx_pidfd_open(pid);
		if (pfd >= 0) {
			l->open->pid[l->open->n] = pid;
			l->open->fd[l->open->n++] = pfd;
		}
	}
	for (size_t i = 0; l->chk && i < l->chk->n; i++)
		if (l->chk->pid[i] == pid)
			l->listed[i] = 1;
}

/* One round: a pidfd for each listed pid, then the list again; only a pid
 * still listed after its pidfd was opened is the process that was listed
 * (nothing new starts in a frozen cgroup, and a pid freed in between
 * belongs to a process outside it), and only those are killed. Waits for
 * them to end. Returns how many were killed. */
static size_t sweep_round(const struct cg *child, pid_t keep, long long end)
{
	static struct victims v;
	int listed[MAX_VICTIMS];
	struct pollfd pf[MAX_VICTIMS];
	size_t killed = 0, n = 0;

	v.n = 0;
	cg_each_pid(child->fd, listed_pid, &(struct listing){ .keep = keep, .open = &v });
	memset(listed, 0, sizeof listed);
	cg_each_pid(child->fd, listed_pid, &(struct listing){ .keep = keep, .chk = &v, .listed = listed });
	for (size_t i = 0; i < v.n; i++) {
		if (listed[i] && sbx_pidfd_signal(v.fd[i], SIGKILL) == 0) {
			killed++;
			pf[n++] = (struct pollfd){ .fd = v.fd[i], .events = POLLIN };
		}
	}
	/* A pidfd is readable once its process has exited. */
	while (n) {
		long long left = end - (long long)sbx_now_ms();
		if (left <= 0 || poll(pf, (nfds_t)n, (int)left) <= 0)
			break;
		for (size_t i = 0; i < n; )
			if (pf[i].revents)
				pf[i] = pf[--n];
			else
				i++;
	}
	for (size_t i = 0; i < v.n; i++)
		close(v.fd[i]);
	return killed;
}

static int freeze(const struct cg *child, const char *v, int wait)
{
	char ev[256];
	unsigned long long frozen = 0;
	long long end = (long long)sbx_now_ms() + FREEZE_WAIT_MS;

	if (sbx_cg_write(child->fd, "cgroup.freeze", v) < 0)
		return -1;
	while (wait && (long long)sbx_now_ms() < end) {
		if (sbx_cg_read(child->fd, "cgroup.events", ev, sizeof ev) >= 0 &&
		    sbx_cg_keyed(ev, "frozen", &frozen) == 0 && frozen)
			return 0;
		poll(NULL, 0, 5);
	}
	return wait ? 1 : 0;
}

/* Wait for the direct child's pidfd, a second cancelling signal ending
 * the wait early. 0: it ended; 1: the grace expired (or was cut short). */
static int wait_child(int pidfd, int sigfd, unsigned ms, int *cut)
{
	long long end = (long long)sbx_now_ms() + ms;

	for (;;) {
		struct pollfd pf[2] = { { .fd = pidfd, .events = POLLIN }, { .fd = sigfd, .events = POLLIN } };
		long long left = end - (long long)sbx_now_ms();
		if (left <= 0)
			return 1;
		if (poll(pf, 2, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (pf[0].revents)
			return 0;
		if (pf[1].revents) {
			struct signalfd_siginfo si;
			while (read(sigfd, &si, sizeof si) == sizeof si)
				if (si.ssi_signo != SIGCHLD)
					*cut = 1;
			if (*cut)
				return 1;
		}
	}
}

int cg_end_ordered(const struct cg *child, pid_t pid, int pidfd, int sigfd, struct ending *e)
{
	long long end;
	int r;

	memset(e, 0, sizeof *e);
	e->start_ms = sbx_now_ms();
	/* No pidfd or no freezer (before 5.2): the old way, all at once. */
	if (pidfd < 0 || freeze(child, "1", 1) < 0) {
		e->plain = 1;
		return cg_kill(child);
	}
	end = (long long)sbx_now_ms() + SWEEP_MS;
	while (sweep_round(child, pid, end) > 0 && (long long)sbx_now_ms() < end)
		e->rounds++;
	if (freeze(child, "0", 0) < 0)
		e->thaw_failed = 1;
	e->swept_ms = sbx_now_ms();
	/* A stopped child would hold SIGTERM pending for ever. */
	sbx_pidfd_signal(pidfd, SIGCONT);
	sbx_pidfd_signal(pidfd, SIGTERM);
	e->grace_expired = wait_child(pidfd, sigfd, GRACE_MS, &e->cut);
	r = cg_kill(child);
	e->end_ms = sbx_now_ms();
	return r;
}

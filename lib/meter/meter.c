#include "meter.h"
#include "clock.h"
#include "meter_disk.h"
#include "meter_tree.h"
#include "die.h"
#include "exec.h"
#include "exitcodes.h"
#include "json.h"
#include "sys.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <poll.h>

#ifdef __linux__
#include <sys/prctl.h>
#endif

/* How many times a stop or kill sweep rescans for processes forked while
 * it was running; a tree that keeps forking faster is swept again at the
 * next interval. */
#define SWEEP_ROUNDS 16
/* After the command: how long descendants get to die once killed. */
#define REAP_WAIT_MS 2000

int sbx_meter_prepare(void)
{
#ifdef __linux__
	return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
#else
	return 0;
#endif
}

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000 };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Sleep up to ms, waking early when the command exits (Linux: its pidfd
 * becomes readable), so a short command is not held for a whole interval,
 * or when the caller cancels (cancel_fd readable). */
static void nap(int pidfd, int cancel_fd, uint64_t ms)
{
	struct pollfd p[2];
	nfds_t n = 0;

	if (pidfd >= 0)
		p[n++] = (struct pollfd){ .fd = pidfd, .events = POLLIN };
	if (cancel_fd > 2)
		p[n++] = (struct pollfd){ .fd = cancel_fd, .events = POLLIN };
	if (!n || (poll(p, n, (int)ms) < 0 && errno != EINTR))
		sleep_ms(ms);
}

static int readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return fd > 2 && poll(&p, 1, 0) > 0;
}

/* Reap every child of ours (orphans re-parented to the subreaper
 * included); 1 once the command itself has been reaped, -1 when it can
 * never be (no children at all: SIGCHLD ignored, or not ours). */
static int reap(pid_t child, int *status)
{
	int st, done = 0;
	pid_t p;

	while ((p = waitpid(-1, &st, WNOHANG)) > 0)
		if (p == child) {
			*status = st;
			done = 1;
		}
	if (!done && p < 0 && errno == ECHILD)
		return -1;
	return done;
}

static int tree_dup(struct sbx_meter_tree *dst, const struct sbx_meter_tree *src)
{
	struct sbx_meter_proc *v = NULL;

	if (src->n && !(v = malloc(src->n * sizeof *v)))
		return -1;
	if (src->n)
		memcpy(v, src->v, src->n * sizeof *v);
	sbx_meter_tree_free(dst);
	dst->v = v;
	dst->n = dst->cap = src->n;
	return 0;
}

/* Signal the whole tree, rescanning for processes forked meanwhile until
 * a rescan finds nobody new. */
static int sweep(struct sbx_meter_tree *t, pid_t self, int sig)
{
	struct sbx_meter_tree done = { 0 };
	int rc = 0;

	for (int round = 0; round < SWEEP_ROUNDS; round++) {
		size_t fresh = 0;
		sbx_meter_tree_kill(t, sig);
		if (tree_dup(&done, t) < 0 || sbx_meter_tree_scan(t, self) < 0) {
			rc = -1;
			break;
		}
		for (size_t i = 0; i < t->n; i++)
			if (!sbx_meter_tree_find(&done, t->v[i].pid, t->v[i].start))
				fresh++;
		if (!fresh)
			break;
	}
	sbx_meter_tree_free(&done);
	return rc;
}

static void status_start(const struct sbx_meter_cfg *cfg, uint64_t interval,
			 int fd, const char *tool)
{
	struct sbx_json j;

	if (fd < 0)
		return;
	sbx_json_begin(&j, tool, "meter");
	sbx_json_str(&j, "enforcement", SBX_METER_ENFORCEMENT);
	sbx_json_uint(&j, "interval_ms", interval);
	if (cfg->cpu_pct)
		sbx_json_uint(&j, "cpu", cfg->cpu_pct);
	if (cfg->memory)
		sbx_json_uint(&j, "memory", cfg->memory);
	if (cfg->disk)
		sbx_json_uint(&j, "disk", cfg->disk);
	if (cfg->pids)
		sbx_json_uint(&j, "pids", cfg->pids);
	sbx_json_write(&j, fd);
}

static void status_lost(const struct sbx_meter_result *r, int fd, const char *tool)
{
	struct sbx_json j;

	if (fd < 0)
		return;
	sbx_json_begin(&j, tool, "lost");
	sbx_json_str(&j, "reason", r->lost);
	sbx_json_str(&j, "enforcement", SBX_METER_ENFORCEMENT);
	sbx_json_uint(&j, "limit", r->limit);
	sbx_json_uint(&j, "measured", r->measured);
	sbx_json_write(&j, fd);
}

/* The logical size of every metered directory; -1 when one could not be
 * read completely (the size is then unknown). */
static int disk_usage(const struct sbx_meter_cfg *cfg, uint64_t *bytes)
{
	*bytes = 0;
	for (size_t i = 0; i < cfg->ndisk_paths; i++)
		if (sbx_meter_du(cfg->disk_paths[i], bytes) < 0)
			return -1;
	return 0;
}

static void lose(struct sbx_meter_result *r, const char *why, uint64_t limit,
		 uint64_t measured, int fd, const char *tool)
{
	if (r->lost)
		return;
	r->lost = why;
	r->limit = limit;
	r->measured = measured;
	status_lost(r, fd, tool);
}

static void check_disk(const struct sbx_meter_cfg *cfg, struct sbx_meter_result *r,
		       int fd, const char *tool)
{
	uint64_t bytes;

	if (!cfg->disk || !cfg->ndisk_paths)
		return;
	if (disk_usage(cfg, &bytes) < 0) {
		lose(r, "disk-unreadable", cfg->disk, bytes, fd, tool);
		return;
	}
	if (bytes > r->peak_disk)
		r->peak_disk = bytes;
	if (bytes > cfg->disk)
		lose(r, "disk", cfg->disk, bytes, fd, tool);
}

int sbx_meter_run(const struct sbx_meter_cfg *cfg, pid_t child, int status_fd,
		  const char *tool, struct sbx_meter_result *out)
{
	uint64_t interval = cfg->interval_ms ? cfg->interval_ms : SBX_METER_DEFAULT_INTERVAL_MS;
	struct sbx_meter_tree tree = { 0 }, prev = { 0 };
	pid_t self = getpid();
	uint64_t last, next_disk, deadline, cpu_ns = 0;
	int64_t debt_ns = 0;
	int pidfd, status = 0, err = 0;

	memset(out, 0, sizeof *out);
	status_start(cfg, interval, status_fd, tool);
	pidfd = sbx_pidfd_open(child);
	last = next_disk = sbx_now_ms();
	deadline = cfg->timeout_ms ? last + cfg->timeout_ms : 0;

	for (;;) {
		uint64_t delta = 0, rss = 0, t;
		int r = reap(child, &status);

		if (r > 0)
			break;
		if (r < 0) {
			err = ECHILD;
			break;
		}

		if (tree_dup(&prev, &tree) < 0 || sbx_meter_tree_scan(&tree, self) < 0) {
			err = errno;
			break;
		}
		if (!out->lost && !out->timed_out && !out->cancelled) {
			if (readable(cfg->cancel_fd))
				out->cancelled = 1;
			else if (deadline && sbx_now_ms() >= deadline)
				out->timed_out = 1;
		}
		if (out->lost || out->timed_out || out->cancelled) {
			/* Keep killing (new forks included) until the command
			 * is gone. */
			sweep(&tree, self, SIGSTOP);
			sbx_meter_tree_kill(&tree, SIGKILL);
			nap(pidfd, -1, 10);
			continue;
		}
		out->samples++;
		if (tree.n > out->peak_procs)
			out->peak_procs = tree.n;
		for (size_t i = 0; i < tree.n; i++) {
			const struct sbx_meter_proc *p = &tree.v[i];
			const struct sbx_meter_proc *o = sbx_meter_tree_find(&prev, p->pid, p->start);
			if (!o)
				delta += p->cpu_ns;
			else if (p->cpu_ns > o->cpu_ns)
				delta += p->cpu_ns - o->cpu_ns;
			rss += p->rss;
		}
		cpu_ns += delta;
		if (rss > out->peak_memory)
			out->peak_memory = rss;
		if (cfg->memory && rss > cfg->memory) {
			lose(out, "memory", cfg->memory, rss, status_fd, tool);
			continue;
		}
		if (cfg->pids && tree.n > cfg->pids) {
			lose(out, "pids", cfg->pids, tree.n, status_fd, tool);
			continue;
		}
		t = sbx_now_ms();
		if (t >= next_disk) {
			check_disk(cfg, out, status_fd, tool);
			/* A big workspace must not turn the meter into the
			 * main consumer: walk at most a fifth of the time. */
			next_disk = sbx_now_ms();
			next_disk += (next_disk - t) * 4 > interval ? (next_disk - t) * 4 : interval;
			if (out->lost)
				continue;
		}
		if (cfg->cpu_pct) {
			int64_t allowed = (int64_t)((t - last) * 1000000 * cfg->cpu_pct / 100);
			int64_t credit = (int64_t)(interval * 1000000 * cfg->cpu_pct / 100);
			debt_ns += (int64_t)delta - allowed;
			/* An idle spell may not bank more than one interval of
			 * CPU for a later burst. */
			if (debt_ns < -credit)
				debt_ns = -credit;
			last = t;
			if (debt_ns > 0) {
				/* Stopped for S, the allowance grows by
				 * S * pct / 100: exactly the debt. */
				uint64_t s = (uint64_t)debt_ns / 10000 / cfg->cpu_pct, t0;
				if (deadline && t + s > deadline)
					s = deadline > t ? deadline - t : 0;
				sweep(&tree, self, SIGSTOP);
				t0 = sbx_now_ms();
				nap(pidfd, cfg->cancel_fd, s);
				sbx_meter_tree_kill(&tree, SIGCONT);
				last = sbx_now_ms();
				/* A cancel or the command's death may cut the
				 * stop short: only the time really stopped pays. */
				debt_ns -= (int64_t)((last - t0) * 1000000 * cfg->cpu_pct / 100);
				out->stopped_ms += last - t0;
				continue;
			}
		}
		t = sbx_now_ms();
		nap(pidfd, cfg->cancel_fd,
		    deadline && deadline < t + interval ? (deadline > t ? deadline - t : 0) : interval);
	}
	if (err) {
		/* Supervision failed: nothing is metered any more, so nothing
		 * may keep running. */
		kill(child, SIGKILL);
		while (reap(child, &status) == 0)
			sleep_ms(10);
	}
	out->status = status;
	out->cpu_ms = cpu_ns / 1000000;

	/* The disk once more: what the last interval wrote counts too. */
	if (!err && !out->timed_out && !out->cancelled)
		check_disk(cfg, out, status_fd, tool);

	/* Whatever outlived the command is killed: a run ends with no
	 * process of its tree left. */
	if (sbx_meter_tree_scan(&tree, self) == 0 && tree.n) {
		uint64_t until = sbx_now_ms() + REAP_WAIT_MS;
		out->leftover = tree.n;
		do {
			sweep(&tree, self, SIGSTOP);
			sbx_meter_tree_kill(&tree, SIGKILL);
			sleep_ms(5);
			reap(child, &status);
		} while (sbx_meter_tree_scan(&tree, self) == 0 && tree.n && sbx_now_ms() < until);
	}
	/* Killed processes turn into zombies of ours (we are their
	 * subreaper): reap them, so none is left to init. */
	for (uint64_t until = sbx_now_ms() + REAP_WAIT_MS; sbx_now_ms() < until; ) {
		pid_t p = waitpid(-1, NULL, WNOHANG);
		if (p < 0)
			break;
		if (p == 0)
			sleep_ms(5);
	}
	sbx_meter_tree_free(&tree);
	sbx_meter_tree_free(&prev);
	if (pidfd >= 0)
		close(pidfd);
	if (err) {
		out->code = SBX_EXIT_SYS;
		errno = err;
		return -1;
	}
	if (out->lost)
		out->code = SBX_EXIT_LOST;
	else if (out->timed_out)
		out->code = SBX_EXIT_TIMEOUT;
	else if (out->cancelled)
		out->code = SBX_EXIT_SIGNAL_BASE + SIGKILL;
	else
		out->code = sbx_wait_code(out->status);
	return 0;
}

void sbx_meter_json(struct sbx_json *j, const struct sbx_meter_result *r)
{
	sbx_json_str(j, "enforcement", SBX_METER_ENFORCEMENT);
	if (r->timed_out)
		sbx_json_bool(j, "timed_out", 1);
	if (r->cancelled)
		sbx_json_bool(j, "cancelled", 1);
	if (r->lost) {
		sbx_json_str(j, "lost", r->lost);
		sbx_json_uint(j, "limit", r->limit);
		sbx_json_uint(j, "measured", r->measured);
	}
	sbx_json_uint(j, "peak_memory", r->peak_memory);
	sbx_json_uint(j, "peak_disk", r->peak_disk);
	sbx_json_uint(j, "cpu_ms", r->cpu_ms);
	sbx_json_uint(j, "stopped_ms", r->stopped_ms);
	sbx_json_uint(j, "samples", r->samples);
	sbx_json_uint(j, "peak_procs", r->peak_procs);
	sbx_json_uint(j, "leftover", r->leftover);
}

void sbx_meter_die_lost(const struct sbx_meter_result *r)
{
	if (!strcmp(r->lost, "disk-unreadable"))
		sbx_die(SBX_EXIT_LOST, "sandbox lost: unable to measure disk usage (%s)",
			SBX_METER_ENFORCEMENT);
	sbx_die(SBX_EXIT_LOST, "sandbox lost: %s limit exceeded: %llu %s sampled, limit %llu (%s)",
		r->lost, (unsigned long long)r->measured,
		strcmp(r->lost, "pids") ? "bytes" : "processes", (unsigned long long)r->limit,
		SBX_METER_ENFORCEMENT);
}

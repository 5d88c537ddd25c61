/* Sampled metering: the limits a host without cgroup controllers (macOS,
 * or Linux with no cgroup v2 controllers delegated) can still apply to a
 * command, honestly labelled "sampled, not hard".
 *
 * Every interval the meter rediscovers the process tree of the calling
 * process (Linux: /proc; macOS: proc_listchildpids/proc_pidinfo) and
 *  - CPU: compares the tree's CPU time with PCT% of one core and, when the
 *    tree is ahead, stops it (SIGSTOP) for as long as it takes the
 *    allowance to catch up, then continues it (SIGCONT): a duty cycle;
 *  - memory: sums the resident set sizes (shared pages count once per
 *    process, so the sum errs on the high side);
 *  - disk: sums the logical sizes (st_size) of regular files under the
 *    metered directories, also once more after the command has ended.
 *  - pids: counts the processes of the tree in each sample.
 * Exceeding memory, pids or disk kills every tracked process (SIGKILL) and
 * the result is LOST with the reason; no file is ever deleted.
 *
 * What sampling cannot promise, by construction: a limit can be overshot
 * for up to one interval; a process that is born and dies between two
 * samples is never seen; logical sizes are not blocks on disk. On Linux
 * the caller becomes a child subreaper (sbx_meter_prepare), so a
 * double-forked descendant that outlives its parent stays in the tree; on
 * macOS a descendant is kept once it has been seen, even after its parent
 * exits. */
#ifndef SBX_METER_H
#define SBX_METER_H

#include <stddef.h>
#include <stdnoreturn.h>
#include <stdint.h>
#include <sys/types.h>

struct sbx_json;

#define SBX_METER_ENFORCEMENT "sampled, not hard"
#define SBX_METER_DEFAULT_INTERVAL_MS 100
#define SBX_METER_MIN_INTERVAL_MS 10
#define SBX_METER_MAX_INTERVAL_MS 10000

struct sbx_meter_cfg {
	uint64_t interval_ms;           /* 0: SBX_METER_DEFAULT_INTERVAL_MS */
	uint64_t cpu_pct;               /* percent of one core; 0: no limit */
	uint64_t memory;                /* bytes, sum of RSS; 0: no limit */
	uint64_t disk;                  /* bytes, logical; 0: no limit */
	uint64_t pids;                  /* processes seen in one sample; 0: no
	                                 * limit (a sampled count: a burst of
	                                 * forks between samples is not seen) */
	const char *const *disk_paths;  /* directories whose files count */
	size_t ndisk_paths;
	uint64_t timeout_ms;            /* kill the tree after this; 0: never */
	int cancel_fd;                  /* > 2: readable means cancel (e.g. a
	                                 * signalfd); it is polled, never read */
};

struct sbx_meter_result {
	int code;            /* exit code for the caller: the command's own,
	                      * 128+N, SBX_EXIT_LOST, SBX_EXIT_TIMEOUT, or
	                      * 128+SIGKILL when cancelled (a caller that knows
	                      * which signal cancelled it reports its own) */
	int timed_out;       /* the tree was killed at timeout_ms */
	int cancelled;       /* the tree was killed because cancel_fd was
	                      * readable */
	int status;          /* the command's wait(2) status */
	const char *lost;    /* NULL, "memory", "pids", "disk" or
	                      * "disk-unreadable" */
	uint64_t limit;      /* the limit that was exceeded */
	uint64_t measured;   /* the sample that exceeded it */
	uint64_t peak_memory;
	uint64_t peak_disk;
	uint64_t cpu_ms;     /* CPU time of the tree, as sampled */
	uint64_t stopped_ms; /* wall time the tree spent stopped (throttled) */
	uint64_t samples;
	uint64_t peak_procs; /* most processes seen in one sample */
	uint64_t leftover;   /* descendants still alive after the command
	                      * ended, killed by the meter */
};

/* Call before forking the command: on Linux it makes the caller a child
 * subreaper so that orphaned descendants are re-parented to it and stay
 * visible. Returns 0 or -1 with errno. (No-op on macOS.) */
int sbx_meter_prepare(void);

/* Supervise child (already forked by the caller) and every descendant of
 * the calling process until child has exited; then meter the disk once
 * more and kill what is left of the tree. Reaps every child of the caller
 * (the caller must have no other children and must not ignore SIGCHLD). Writes a "meter" event when
 * it starts and a "lost" event when a limit is exceeded to status_fd
 * (-1: none), as tool. Returns 0, or -1 with errno when supervision itself
 * failed (the tree has then been killed and reaped, out->code is
 * SBX_EXIT_SYS). */
int sbx_meter_run(const struct sbx_meter_cfg *cfg, pid_t child, int status_fd,
		  const char *tool, struct sbx_meter_result *out);

/* The figures of a result as fields of a status line (the caller's
 * "exit" line): enforcement, lost/limit/measured when lost, peak_memory,
 * peak_disk, cpu_ms, stopped_ms, samples, leftover; timed_out or
 * cancelled when true. */
void sbx_meter_json(struct sbx_json *j, const struct sbx_meter_result *r);

/* For a LOST result: "PROG: fatal: sandbox lost: memory limit exceeded:
 * N bytes sampled, limit M (sampled, not hard)", exit SBX_EXIT_LOST. */
noreturn void sbx_meter_die_lost(const struct sbx_meter_result *r);

#endif

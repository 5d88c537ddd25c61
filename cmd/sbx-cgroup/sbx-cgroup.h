/* sbx-cgroup's own pieces: main.c parses and dispatches, setup.c makes and
 * verifies cgroups, run.c starts the command in its cgroup and supervises
 * it, delegate.c prepares a delegated subtree. */
#ifndef SBX_CGROUP_TOOL_H
#define SBX_CGROUP_TOOL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "policy.h"

#define TOOL "sbx-cgroup"
#define CPU_PERIOD 100000ULL      /* cpu.max period in microseconds */
#define MAX_PASS_FDS 32

struct limits {
	uint64_t cpu_pct;  /* 0: not requested; 100 = one core */
	uint64_t memory;   /* bytes; 0: not requested */
	uint64_t pids;     /* 0: not requested */
};

struct opts {
	const char *root, *name, *parent, *delegate, *user;
	struct limits lim;
	uint64_t timeout_ms;  /* 0: none */
	int status_fd, ready_fd;
	int pass[MAX_PASS_FDS];
	size_t npass;
	int cgroup_fd;        /* --cgroup-fd FD: the child cgroup, open on FD for the command; -1 */
	int create, destroy;
	int sampled;          /* --sampled: no cgroup, lib/meter/meter.c instead */
	struct sbx_policy_opts pol; /* --baseline, --baseline-fd, --policy-fd, --clamp */
	char **argv;          /* the command, NULL-terminated */
};

/* A cgroup sbx-cgroup works on: an fd and a path for messages. */
struct cg {
	int fd;               /* O_PATH directory fd (O_RDONLY for the child) */
	char path[PATH_MAX];  /* --root based, for messages and status lines */
};

/* setup.c */
void cg_open_root(struct cg *root, const char *path, const char *opt);
int cg_open_child(const struct cg *parent, const char *name, struct cg *out, int flags);
int cg_need_controllers(const struct cg *cg, const struct limits *lim, struct sbx_err *f);
int cg_enable_controllers(const struct cg *cg, const struct limits *lim, struct sbx_err *f);
int cg_write_limits(const struct cg *cg, const struct limits *lim, struct sbx_err *f);
int cg_prepare_parent(const struct cg *root, const char *name, const struct limits *lim,
		      struct cg *out, int *created, struct sbx_err *f);
int cg_populated(const struct cg *cg);
/* fn for every pid in the cgroup dirfd and every cgroup below it. */
void cg_each_pid(int dirfd, void (*fn)(void *ctx, pid_t pid), void *ctx);
int cg_kill(const struct cg *cg);
int cg_wait_empty(const struct cg *cg, unsigned ms);
int cg_remove(const struct cg *parent, const char *name);
int mode_create(const struct opts *o);
int mode_destroy(const struct opts *o);

/* orphan.c */
void cg_mark_supervised(const struct cg *cg);
int cg_reap_orphan(const struct cg *holder, const char *name, struct sbx_err *f);

/* ending.c: the ordered end of a timeout or cancellation */
#define GRACE_MS 5000         /* the direct child's time to end after SIGTERM */
struct ending {
	uint64_t start_ms, swept_ms, end_ms;
	int rounds;           /* sweeps that killed something */
	int plain;            /* no pidfd or no freezer: cgroup.kill at once */
	int grace_expired;    /* the direct child outlived GRACE_MS */
	int cut;              /* a second cancelling signal cut the grace short */
	int thaw_failed;
};
int cg_end_ordered(const struct cg *child, pid_t pid, int pidfd, int sigfd, struct ending *e);

/* run.c */
int mode_run(const struct opts *o);

/* sampled.c */
int mode_sampled(const struct opts *o);

/* delegate.c */
int mode_delegate(const struct opts *o);

#endif

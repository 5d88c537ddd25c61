/* sbx-ns: what the steps of one run share. The outer process fills a
 * struct ns_run from argv and from its checks of the host; the sandbox's
 * pid 1 and the command's process inherit it as a copy of memory (clone
 * without CLONE_VM), so the plan is made once, by the caller's identity,
 * before anything is created. */
#ifndef SBX_NS_H
#define SBX_NS_H

#include <signal.h>
#include <stdnoreturn.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "allowexec.h"
#include "grant.h"
#include "handoff.h"
#include "mount.h"
#include "policy.h"
#include "protect.h"

#define NS_PROG "sbx-ns"

/* One bind mount of the sandbox's root, in the order it is applied. */
enum mount_kind {
	MNT_RUNTIME = 1,   /* the default system set, or --runtime */
	MNT_RO,            /* --ro PATH, --ro-fd FD */
	MNT_RW,            /* --rw PATH, --rw-fd FD */
	MNT_WORKSPACE,     /* --workspace DIR, --workspace-fd FD */
	MNT_SCRATCH,       /* --tmp-in-workspace: a workspace directory at /tmp or /dev/shm */
	MNT_SYMLINK,       /* a runtime path that is a symlink (/bin -> usr/bin) */
	MNT_BIND,          /* --bind/--ro-bind SRC DEST and the fd forms: src and dest
			    * differ; everything else is the same as MNT_RO/MNT_RW */
};

struct mount_op {
	enum mount_kind kind;
	int ro;
	const char *opt;   /* the option that asked for it, for messages */
	char *src;         /* canonical host path */
	char *dest;        /* absolute path inside the sandbox */
	int fd;            /* the caller's fd (the *-fd forms), else -1 */
	dev_t dev;         /* identity checked at every step */
	ino_t ino;
	int isdir;
	int create;        /* --dry-run: a scratch directory the run would make */
};

/* Deny-write: what the outer found in the workspace, relative to it. */
enum deny_kind {
	DENY_ANCESTOR = 1, /* bound onto itself so it cannot be renamed or removed */
	DENY_PROTECT,      /* bound read-only onto itself */
};

struct deny_op {
	enum deny_kind kind;
	char *rel;
	dev_t dev;
	ino_t ino;
};

struct deny_list {
	struct deny_op *v;
	size_t n, cap;
};

/* One walk of the globs over the workspace: at the start (check 0) it
 * fills found; at the end (check 1) it compares with start and collects
 * the protected paths that are new (cand). */
struct deny_walk {
	int check;
	int depth;
	struct deny_list found;
	const struct deny_list *start;
	char **cand;
	size_t ncand, capcand;
	struct deny_fix { int fd; mode_t mode; } *fix; /* check: modes to put back */
	size_t nfix, capfix;
};

struct ns_deny_rec;

/* --net: none (no interface up, no socket), loopback (a private lo),
 * broker (a private lo, a bridge to the broker's socket, a filter allowing
 * only TCP sockets), host (the host's network; listen() denied). */
enum net_mode { NET_NONE = 1, NET_LOOPBACK, NET_BROKER, NET_HOST };

#define NS_BROKER_PORT 3128

/* The command's private HOME without --home: in the sandbox's own /tmp. */
#define NS_HOME "/tmp/home"

struct ns_run {
	/* argv */
	struct mount_op *ops;
	size_t nops, capops;
	const char **deny;     /* --deny-write globs (NULL: the defaults) */
	size_t ndeny;
	const char **setenv;   /* NAME=VALUE */
	size_t nsetenv;
	const char **keepenv;  /* NAME */
	size_t nkeepenv;
	const char *runtime;   /* --runtime PATHS, NULL for the default set */
	const char *home;      /* --home DIR (its path inside), NULL: NS_HOME */
	int tmp_in_ws;
	int require_landlock;
	int have_uid, have_gid;
	uid_t uid;             /* the command's identity */
	gid_t gid;
	enum net_mode net;
	const char *broker_path; /* --net broker:PATH */
	int broker_fd;           /* O_PATH on the broker's socket (--broker-fd, or opened from PATH) */
	int have_broker_fd;
	unsigned port;           /* the bridge's port inside */
	int transparent;         /* broker:PATH,transparent: DNS and captured ports too */
	unsigned cap_ports[SBX_CAPTURE_MAX]; /* transparent: the ports the broker asked for */
	size_t ncap;
	char *resolv;            /* transparent: where the sandbox's resolv.conf is bound */
	int net_chan[2];         /* broker: [0] outer, [1] pid 1: the listening sockets and the go-ahead */
	char *broker_real;       /* broker: where the checked socket lies, for messages */
	int broker_chan;         /* broker: the connection the listeners went over, kept for life */
	pid_t broker_pid;        /* broker: its pid, from SO_PEERCRED */
	uid_t broker_uid;        /* broker: its uid, from SO_PEERCRED on the probe */
	int status_fd, ready_fd;
	char **cmd;            /* prog and its args */
	const char *cmdpath;   /* --command-path DIRS: the lookup and PATH (NULL: as before) */
	struct sbx_allowexec allow;  /* --allow-exec PATH... */
	struct sbx_protect prot;     /* --protect PATH... */
	int grant_fd;          /* --grant-fd FD (consumed), else -1 */
	struct sbx_grant_key *grant_key; /* --grant-key FILE, loaded while parsing */
	uint64_t timeout_ms;   /* --timeout SEC: enforced here, bound by the grant; 0 none */
	struct sbx_policy_opts pol; /* --baseline, --baseline-fd, --policy-fd, --clamp */
	int print_policy;      /* --print-policy */
	int dry_run;           /* --dry-run: print the plan (plan.c), run nothing */
	int grant_checked;     /* --dry-run: the grant was enforced */
	struct sbx_policy eff; /* the effective policy (when pol_on) */
	int pol_on;

	/* found by the outer */
	int root;              /* the caller is root (maps 0 too, switches to uid/gid) */
	uid_t caller_uid;
	gid_t caller_gid;
	size_t ws;             /* index of the workspace in ops */
	int wsfd;              /* O_PATH on the workspace, the outer's own */
	struct deny_op *dops;  /* the start set, in path order */
	size_t ndops;
	struct ns_deny_rec *rec; /* the run's record (denyend.c) */
	int landlock_abi;      /* 0: none */
	char *tier_tmp;        /* the Landlock tier's private TMPDIR (NULL: not that tier) */
	int tier_deny_off;     /* the tier runs with deny-write globs unenforced (tierDenyWrite) */
	int tier_proc;         /* the tier because no fresh /proc could be mounted (errno), not clone */
	enum sbx_mnt_api mnt_api; /* the mount calls this kernel offers (probed once) */
	sigset_t oldmask;      /* the caller's signal mask, restored for the command */
	int sync_fd;           /* read end in the sandbox: EOF means the outer died */
	int report_fd;         /* sandbox -> outer: what happened inside */
	char **env;            /* the command's environment, built by the outer */
	int quiet_denials;     /* --quiet-denials: plain EPERM, no supervisor */
	int notify_sock[2];    /* [0] outer, [1] the command's process: the listener */
	struct ns_notify *notify; /* the outer's supervisor state (notify.c) */
	const char *search;    /* where prog is looked up: PATH of env */
	char *hint;            /* why prog would not be found inside (hint.c), or NULL */
};

/* Records on the report pipe, fixed size so one write(2) is atomic. */
struct ns_report {
	int kind;          /* 'S' command about to exec, 'X' command ended,
			    * 'F' no fresh /proc here: take the Landlock tier */
	int value;         /* 'S': Landlock ABI (0 none); 'X': wait status; 'F': errno */
	int extra;         /* 'S': hidepid applied; 'X': unused */
};

/* paths.c */
void ns_add_path(struct ns_run *r, enum mount_kind kind, int ro, const char *opt, const char *arg);
void ns_add_fd(struct ns_run *r, enum mount_kind kind, int ro, const char *opt, const char *arg);
void ns_add_runtime(struct ns_run *r);
void ns_check_ops(struct ns_run *r);
struct mount_op *ns_push_op(struct ns_run *r);

/* binds.c */
void ns_add_bind(struct ns_run *r, int ro, int byfd, const char *opt, const char *src,
		 const char *dest);
void ns_check_binds(const struct ns_run *r);
void ns_drop_ro_in_ws(struct ns_run *r);

/* policy.c: the baseline, the request, the unsafe fallback */
void ns_apply_policy(struct ns_run *r, int net_given);
noreturn void ns_unsafe_fallback(struct ns_run *r, int err);
noreturn void ns_host_run(struct ns_run *r, void (*confine)(struct ns_run *), const char *tier);

/* tier.c: the Landlock tier, where no user namespace can be had and the
 * baseline says "fallback": "landlock" */
noreturn void ns_landlock_tier(struct ns_run *r, int err);
int ns_tier_allowed(const struct ns_run *r);
void ns_tier_end(struct ns_run *r);
int ns_tier_deny_unenforced(const struct ns_run *r);

/* tiernet.c: --net in the Landlock tier (the broker on the host's loopback) */
int ns_tier_net(const struct ns_run *r, char *why, size_t sz);

/* notify.c: denial reports through seccomp user notifications */
struct sock_fprog;
void ns_notify_prepare(struct ns_run *r);
void ns_notify_outer(struct ns_run *r);
void ns_notify_inside(struct ns_run *r);
void ns_install_filter(const struct ns_run *r, const struct sock_fprog *prog);
int ns_notify_fd(const struct ns_run *r);
void ns_notify_handle(struct ns_run *r, short revents);
void ns_notify_end(struct ns_run *r);
int ns_status_due(const struct ns_run *r, int final, uint64_t count, uint64_t *reported, uint64_t *last_ms,
		  uint64_t now);

/* launcher.c */
void ns_check_launcher(const struct ns_run *r);

/* deny.c */
void ns_check_glob(const char *glob);
const char *const *ns_deny_globs(const struct ns_run *r, size_t *n);
void ns_deny_push(struct deny_list *l, enum deny_kind kind, const char *rel, dev_t dev, ino_t ino);
void ns_deny_walk(struct deny_walk *w, int wsfd, const char *const *globs, size_t n);
void ns_deny_restore(struct deny_walk *w);
const struct deny_op *ns_deny_known(const struct deny_list *l, const char *rel, const struct stat *st);
int ns_workspace_fd(struct ns_run *r);
void ns_plan_deny(struct ns_run *r);
void ns_plan_scratch(struct ns_run *r);

/* denyend.c: the record of a run, and protected paths created by it */
void ns_deny_candidate(struct deny_walk *w, const char *rel);
void ns_deny_recover(struct ns_run *r);
void ns_deny_record(struct ns_run *r);
void ns_deny_started(struct ns_run *r, pid_t pid);
void ns_deny_heartbeat(struct ns_run *r);
void ns_deny_end(struct ns_run *r);
void ns_deny_forget(struct ns_run *r);

/* hint.c */
void ns_check_ws_writable(const struct ns_run *r);
void ns_plan_hint(struct ns_run *r);
void ns_explain_exec(const struct ns_run *r);

/* plan.c: --dry-run */
struct sbx_json;
void ns_plan_json(const struct ns_run *r, struct sbx_json *j);
noreturn void ns_dry_run(struct ns_run *r);

/* root.c: in the sandbox's pid 1, before the command exists */
void ns_build_root(struct ns_run *r, int *hidepid);

/* inside.c */
noreturn void ns_init_main(struct ns_run *r);
char **ns_build_env(const struct ns_run *r, const char **path);
void ns_wait_signals(sigset_t *set);

/* net.c */
void ns_parse_net(struct ns_run *r, const char *s);
void ns_opt_broker_fd(struct ns_run *r, const char *arg);
void ns_check_net(struct ns_run *r);
void ns_net_prepare(struct ns_run *r);
void ns_net_inside(struct ns_run *r);
void ns_net_outer(struct ns_run *r, pid_t pid);
void ns_net_end(struct ns_run *r);
const char *ns_net_name(const struct ns_run *r);
struct sbx_json;
void ns_net_status(struct sbx_json *j, const struct ns_run *r, const char *bridge);
char **ns_net_env(const struct ns_run *r, char **env, size_t *k);
int ns_net_reserved_env(const char *name, size_t len);

/* netlog.c: the broker's decisions, on the status fd and in a note */
int ns_net_fd(const struct ns_run *r);
void ns_net_handle(struct ns_run *r);
void ns_net_finish(struct ns_run *r);

/* seccomp.c */
void ns_load_filter(const struct ns_run *r);
const char *ns_filter_name(const struct ns_run *r);

/* landlock.c */
int ns_landlock(const struct ns_run *r);

/* caps.c */
int ns_drop_bounding(void);
int ns_clear_caps(void);

#endif

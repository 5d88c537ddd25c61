/* sbx-ns: what the steps of one run share, in three stages.
 *
 *   arguments (struct ns_args): the options as given; parse() fills them,
 *     everything after reads them through a pointer to const;
 *   plan (struct ns_plan): every decision, made by the outer with the
 *     caller's identity before anything is created: the roots and their
 *     checked identities, the writable entries every writable-root check
 *     iterates (ns_next_writable), the deny-write operations, the root's
 *     steps (steps.c), the environment, network, filters, grant; --dry-run
 *     prints it (plan.c);
 *   execution (struct ns_exec): channels, fds, pids and per-process state
 *     of the outer, the sandbox's pid 1 (which executes the root's steps,
 *     root.c) and the command's process.
 *
 * The plan's builders take struct ns_plan * (and the arguments as const).
 * Execution takes a struct ns_run: the arguments and the plan behind
 * pointers to const, the execution state its own, so nothing after the
 * plan can change it. The sandbox's processes inherit all of it as a copy
 * of memory (clone without CLONE_VM), so the plan is made once. */
#ifndef SBX_NS_H
#define SBX_NS_H

#include <signal.h>
#include <stdnoreturn.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "allowexec.h"
#include "deny.h"
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
	MNT_CA,            /* what a host CA variable names, read-only at its own path (hostca.c) */
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

struct ns_deny_rec;

/* One step of building the sandbox's root, in the order pid 1 takes it
 * (steps.c makes the list, root.c executes it, plan.c prints it). */
enum step_kind {
	STEP_ROOT = 1,  /* the new root: a tmpfs, made / by pivot_root */
	STEP_DIR,       /* a directory of the sandbox's own (mode) */
	STEP_TMPFS,     /* a tmpfs (flags, data[0]) */
	STEP_PROC,      /* a fresh proc: the first of data[] the kernel takes */
	STEP_DEVPTS,    /* a private devpts instance */
	STEP_DEVICE,    /* a host device node (src) bound onto a file of /dev */
	STEP_LINK,      /* a symlink of the sandbox's own (src: its target) */
	STEP_BIND,      /* ops[idx]: a host path, or a runtime symlink */
	STEP_RESOLV,    /* transparent broker: the resolver file, read-only */
	STEP_DENY,      /* dops[idx] bound onto itself (read-only: protect) */
	STEP_HOME,      /* the command's HOME without --home (mode) */
	STEP_READONLY,  /* one of the sandbox's own mounts made read-only */
};

struct ns_step {
	enum step_kind kind;
	const char *dest;      /* absolute, inside the sandbox */
	const char *src;       /* STEP_DEVICE, STEP_LINK */
	unsigned long flags;   /* MS_* */
	const char *data[3];   /* mount data (STEP_PROC: tried in order; NULL none) */
	size_t ndata;
	mode_t mode;           /* STEP_DIR, STEP_HOME */
	int own;               /* a tmpfs where mount points may be made */
	size_t idx;            /* STEP_BIND: in ops; STEP_DENY: in dops */
	const char *what;      /* STEP_DIR: for the message */
};

/* The program argv[0] resolves to, as hashed for the plan (grant.c). */
struct ns_program {
	int found;
	char *path;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
	unsigned char sha[32];
	int still;             /* owned by root, writable by no one else: no rewrite to fear */
	const char *allow;     /* the --allow-exec entry it is, or NULL */
};

/* --net: none (no interface up, no socket), loopback (a private lo),
 * broker (a private lo, a bridge to the broker's socket, a filter allowing
 * only TCP sockets), host (the host's network; listen() denied). */
enum net_mode { NET_NONE = 1, NET_LOOPBACK, NET_BROKER, NET_HOST };

#define NS_BROKER_PORT 3128

/* The command's private HOME without --home: in the sandbox's own /tmp. */
#define NS_HOME "/tmp/home"

/* Stage 1, the arguments: the options as given. parse() (main.c) fills
 * them and nothing changes them afterwards: every later stage reads them
 * through a pointer to const. The options that name objects (paths, fds,
 * the network, the identity, the grant, the deny-write globs) are checked
 * as they are parsed and become the plan's first entries instead. */
struct ns_args {
	const char **setenv;   /* NAME=VALUE */
	size_t nsetenv;
	const char **keepenv;  /* NAME */
	size_t nkeepenv;
	const char *runtime;   /* --runtime PATHS, NULL for the default set */
	const char *home;      /* --home DIR (its path inside), NULL: NS_HOME */
	int tmp_in_ws;
	int require_landlock;
	int have_uid, have_gid;
	int status_fd, ready_fd;
	char **cmd;            /* prog and its args */
	const char *cmdpath;   /* --command-path DIRS: the lookup and PATH (NULL: as before) */
	struct sbx_allowexec allow;  /* --allow-exec PATH... */
	struct sbx_protect prot;     /* --protect PATH... */
	uint64_t timeout_ms;   /* --timeout SEC: enforced here, bound by the grant; 0 none */
	struct sbx_policy_opts pol; /* --baseline, --baseline-fd, --policy-fd, --clamp */
	int print_policy;      /* --print-policy */
	int recover;           /* --recover: killed runs' end checks only, no command */
	pid_t parent;          /* the process that started sbx-ns */
	int dry_run;           /* --dry-run: print the plan (plan.c), run nothing */
	int quiet_denials;     /* --quiet-denials: plain EPERM, no supervisor */
	int pty;               /* --pty: the command's terminal is a pty of the sandbox's own */
	const char *serve;     /* --serve PATH: a living sandbox (serve.c); cmd may be empty */
	unsigned ready_port;   /* --ready-port N: ready once 127.0.0.1:N answers inside */
	uint64_t ready_ms;     /* --ready-timeout SEC: how long readiness may take */
	int cgroup_fd;         /* --cgroup-fd FD: the sandbox's cgroup, for command cgroups (servecg.c) */
	int no_host_ca;        /* --no-host-ca: the host's CA variables are not kept (hostca.c) */
	const char *changes;   /* --changes DIR: the workspace as an overlay (changes.c) */
	const char *observe;   /* --observe FILE: the run's observation record (observe.c) */
	const char *shadow;    /* --shadow-policy FILE: a candidate policy, reported on (shadow.c) */
};

/* Stage 2, the plan: every decision of the run, made by the outer with
 * the caller's identity before anything is created, from the arguments,
 * the effective policy and the host (opening and checking only the
 * objects it names). --dry-run prints it; execution follows it. */
struct ns_plan {
	struct mount_op *ops;  /* the roots, argv's then the policy's and the runtime set */
	size_t nops, capops;
	size_t ws;             /* index of the workspace in ops */
	const char **deny;     /* deny-write globs (NULL: the defaults; the policy's union) */
	size_t ndeny;
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
	char *broker_real;       /* broker: where the checked socket lies, for messages */
	uid_t broker_uid;        /* broker: its uid, from SO_PEERCRED on the probe */
	int grant_fd;          /* --grant-fd FD (consumed), else -1 */
	struct sbx_grant_key *grant_key; /* --grant-key FILE, loaded while parsing */
	int grant_checked;     /* the grant was enforced */
	enum sbx_grant_kind grant_kind; /* which kind it was */
	const char *nonce_dir; /* --grant-nonce-dir DIR */
	struct ns_program prog; /* with a grant or --dry-run: the program (grant.c) */
	int have_prog;
	struct sbx_policy eff; /* the effective policy (when pol_on) */
	struct sbx_policy base; /* the baseline (when one was given; hostca.c holds CA paths to it) */
	int pol_on;
	int root;              /* the caller is root (maps 0 too, switches to uid/gid) */
	uid_t caller_uid;
	gid_t caller_gid;
	int wsfd;              /* O_PATH on the workspace, the outer's own */
	struct deny_op *dops;  /* the deny-write start set, in path order */
	struct deny_tree dtree; /* the directories the start walk read */
	size_t ndops;
	struct ns_step *steps; /* the root, step by step (steps.c) */
	size_t nsteps, capsteps;
	int landlock_abi;      /* 0: none */
	enum sbx_mnt_api mnt_api; /* the mount calls this kernel offers (probed once) */
	char **ca_env;         /* the host's CA variables kept, NAME=VALUE (hostca.c) */
	size_t nca;
	char **env;            /* the command's environment */
	const char *search;    /* where prog is looked up: PATH of env */
	char *hint;            /* why prog would not be found inside (hint.c), or NULL */
	const char *chg;       /* --changes DIR, or NULL (changes.c) */
	int chg_fd, chg_upper, chg_work, chg_lock; /* DIR, its layers, its lock (held for life) */
	dev_t chg_dev;         /* DIR's identity, in the plan */
	ino_t chg_ino;
	int64_t chg_start;     /* when the run began (ns): a later ctime is a conflict */
	struct ns_shadow_plan *shadow; /* --shadow-policy: the candidate and what it refuses of the plan */
};

struct ns_serve;

/* Stage 3, execution: what the processes of the run hold (the outer, the
 * sandbox's pid 1 and the command's process each have a copy). */
struct ns_exec {
	int net_chan[2];         /* broker: [0] outer, [1] pid 1: the listening sockets and the go-ahead */
	int broker_chan;         /* broker: the connection the listeners went over, kept for life */
	pid_t broker_pid;        /* broker: its pid, from SO_PEERCRED */
	int net_keep[SBX_HANDOFF_FDS]; /* broker: the outer's copies of the listeners (net.c) */
	size_t net_nkeep;
	uint64_t net_lost_ms;    /* broker: when its connection ended while the sandbox lives; 0: not lost */
	uint64_t net_next_ms;    /* broker: when to try it again */
	int net_pending;         /* broker: a new connection that carries the listeners, its answer awaited */
	int net_ending;          /* the sandbox is over: an end of the connection is expected */
	int net_said;            /* a refused re-handoff was said once */
	char *resolv;            /* transparent: where the sandbox's resolv.conf is bound */
	struct ns_deny_rec *rec; /* the run's record (denyend.c) */
	char *tier_tmp;        /* the Landlock tier's private TMPDIR (NULL: not that tier) */
	int tier_rec;          /* its record, locked while the outer or the keeper lives (tierkeep.c) */
	int tier_deny_off;     /* the tier runs with deny-write globs unenforced (tierDenyWrite) */
	int tier_proc;         /* the tier because no fresh /proc could be mounted (errno), not clone */
	sigset_t oldmask;      /* the caller's signal mask, restored for the command */
	int sync_fd;           /* read end in the sandbox: EOF means the outer died */
	int report_fd;         /* sandbox -> outer: what happened inside */
	int notify_sock[2];    /* [0] outer, [1] the command's process: the listener */
	int pty_sock[2];       /* --pty: [0] the outer's relay, [1] pid 1: the pty's master */
	struct ns_notify *notify; /* the outer's supervisor state (notify.c) */
	int ctl_fd;              /* --serve: pid 1's end of its channel with the outer (serve1.c) */
	int ctl_out;             /* --serve: the outer's end (serve.c) */
	pid_t pty_relay;         /* --pty: the outer's relay process, or 0 */
	struct ns_serve *serve;  /* --serve: the outer's state (serve.c) */
	uint32_t serve_next_id;  /* --serve: the next job's id (servecg.c removes up to it) */
	int sandbox_root;        /* --serve: O_PATH on pid 1's root once it is up, else -1 */
	struct ns_observe *obs;  /* --observe, --shadow-policy: what the run did (observe.c) */
	struct ns_exec_log *execs; /* --observe: the files executed (obsexec.c) */
	struct ns_shadow_run *shadow; /* --shadow-policy: what it would refuse (shadow.c) */
};

/* One run, as the execution stage sees it: the arguments and the plan
 * read-only, the execution state its own. A function given the run can
 * write only struct ns_exec; the plan's builders take struct ns_plan *. */
struct ns_run {
	const struct ns_args *a;
	const struct ns_plan *p;
	struct ns_exec x;
};

/* Records on the report pipe, fixed size so one write(2) is atomic. */
struct ns_report {
	int kind;          /* 'S' command about to exec, 'X' command ended,
			    * 'F' no fresh /proc here: take the Landlock tier */
	int value;         /* 'S': Landlock ABI (0 none); 'X': wait status; 'F': errno */
	int extra;         /* 'S': hidepid applied; 'X': unused */
};

/* One command of a living sandbox as pid 1 runs it (serve1.c, inside.c):
 * what the request asked for, checked by the outer. A one-shot run's
 * command is the same thing made from its arguments and plan. */
struct ns_cmd {
	char **argv;
	char **env;
	const char *search;    /* PATH of env */
	const char *cwd;       /* inside; NULL: the workspace */
	int tty;               /* the slave of a new pty of the sandbox's devpts, or -1 */
	const char *out, *err; /* files inside for stdout and stderr (detached jobs), or NULL */
	const struct ns_program *prog; /* a plan grant's program: exec'd only if it is that file; or NULL */
	int oneshot;           /* the one-shot run's command (report, ready fd, grant) */
};

/* The living sandbox's channel between the outer and pid 1: one message
 * a record, a fixed header and its strings; fds ride along (SCM_RIGHTS). */
#define NS_WIRE_MAX (256 * 1024)   /* a request's strings, in bytes */
#define NS_WIRE_ARGS 4096          /* argv and env entries of one request */
#define NS_SERVE_LIVE 128          /* commands running at once */
#define NS_SERVE_JOBS 512          /* jobs remembered, ended ones included */
#define NS_SERVE_CLIENTS 256       /* control connections at once */

struct ns_wire {
	char kind;             /* outer -> pid 1: 'R' run, 'K' signal, 'C' connect;
				* pid 1 -> outer: 'S' started, 'X' ended, 'c' connected, 'E' refused */
	uint32_t id;           /* the job */
	int32_t value;         /* 'K' signal; 'C' port; 'S' pid; 'X' wait status; 'c','E' errno */
	uint32_t flags;        /* 'R': NS_RUN_* */
	uint16_t rows, cols;   /* 'R' with a pty: the window */
	uint32_t nargv, nenv;  /* 'R': strings after the header: cwd, argv, env, out, err, prog */
	/* 'R' with NS_RUN_PROG: the file a plan grant's program is, as the
	 * outer hashed it (its path: the last string) */
	uint64_t prog_dev, prog_ino;
	int64_t prog_size, prog_mtime[2], prog_ctime[2];  /* tv_sec, tv_nsec */
	unsigned char prog_sha[32];
};
#define NS_RUN_PTY    1u
#define NS_RUN_FILES  2u   /* stdout and stderr are files named inside the sandbox */
#define NS_RUN_CGROUP 4u   /* the last fd is the command's own cgroup (CLONE_INTO_CGROUP) */
#define NS_RUN_PROG   8u   /* a plan grant's program: exec only that file (prog_* and a string) */
#define NS_RUN_STILL  16u  /* ... and it is still (no rewrite to fear: struct ns_program) */

/* paths.c */
/* args.c: the command line into a (and the plan's first entries): 1 if
 * --net was given; then who runs the command, and the process policy. */
int ns_parse(struct ns_args *a, struct ns_plan *p, int argc, char **argv);
void ns_check_identity(const struct ns_args *a, struct ns_plan *p);
void ns_check_policy(const struct ns_args *a, struct ns_plan *p);
void ns_add_path(struct ns_plan *p, enum mount_kind kind, int ro, const char *opt, const char *arg);
void ns_add_fd(struct ns_plan *p, enum mount_kind kind, int ro, const char *opt, const char *arg);
void ns_add_runtime(const struct ns_args *a, struct ns_plan *p);
/* A path within the default runtime set (paths.c): outside the policy as the set is. */
int ns_runtime_default_holds(const char *path);
void ns_check_ops(const struct ns_plan *p);
struct mount_op *ns_push_op(struct ns_plan *p);
const struct mount_op *ns_next_writable(const struct ns_plan *p, size_t *it);
const char *ns_canonical(const char *path, int last_link_ok, struct stat *st);

/* hostca.c: the host's CA variables, kept and what they name bound */
int ns_host_ca_on(const struct ns_args *a, const struct ns_plan *p);
void ns_plan_host_ca(const struct ns_args *a, struct ns_plan *p);
int ns_host_ca_kept(const struct ns_plan *p, const char *name);

/* binds.c */
void ns_add_bind(struct ns_plan *p, int ro, int byfd, const char *opt, const char *src,
		 const char *dest);
void ns_check_binds(const struct ns_args *a, const struct ns_plan *p);
void ns_drop_ro_in_ws(const struct ns_args *a, struct ns_plan *p);

/* policy.c: the baseline, the request, the unsafe fallback */
void ns_apply_policy(const struct ns_args *a, struct ns_plan *p, int net_given);
noreturn void ns_unsafe_fallback(struct ns_run *r, int err);
noreturn void ns_host_run(struct ns_run *r, void (*confine)(struct ns_run *), const char *tier);

/* tier.c: the Landlock tier, where no user namespace can be had and the
 * baseline says "fallback": "landlock" */
noreturn void ns_landlock_tier(struct ns_run *r, int err);
int ns_tier_allowed(const struct ns_plan *p);
void ns_tier_end(struct ns_run *r);
void ns_tier_remove(const char *path);
noreturn void ns_host_exec(struct ns_run *r, void (*confine)(struct ns_run *));
/* tierkeep.c */
void ns_tier_kill_all(void);
void ns_tier_leftovers(struct ns_run *r);
int ns_tier_record(struct ns_run *r, const char *tmp);
void ns_tier_unrecord(struct ns_run *r, const char *tmp);
pid_t ns_tier_spawn(struct ns_run *r, void (*confine)(struct ns_run *), int *repfd);
int ns_tier_deny_unenforced(const struct ns_plan *p);

/* tiernet.c: --net in the Landlock tier (the broker on the host's loopback) */
int ns_tier_net(const struct ns_plan *p, char *why, size_t sz);
/* net.c: one question to the broker on its Unix socket, and its answer. */
size_t ns_broker_answer(int s, const char *line, char *ans, size_t sz);
ssize_t ns_broker_ask_tcp(const struct ns_plan *p, char *ans, size_t sz);

/* notify.c: denial reports through seccomp user notifications */
struct sock_fprog;
void ns_notify_prepare(struct ns_run *r);
void ns_notify_outer(struct ns_run *r);
void ns_notify_inside(struct ns_run *r);
void ns_install_filter(const struct ns_run *r, const struct sock_fprog *prog);
struct pollfd;
size_t ns_notify_fds(const struct ns_run *r, struct pollfd *pf, size_t max);
void ns_notify_handle(struct ns_run *r, int fd, short revents);
void ns_notify_end(struct ns_run *r);
/* notifyren.c: deny-write's refused renames, reported */
struct ns_rename_log;
struct seccomp_notif;
int ns_rename_watched(int nr);
void ns_rename_seen(const struct ns_run *r, struct ns_rename_log **log, int fd, const struct seccomp_notif *req);
void ns_rename_end(const struct ns_run *r, struct ns_rename_log *log);
int ns_status_due(const struct ns_run *r, int final, uint64_t count, uint64_t *reported, uint64_t *last_ms,
		  uint64_t now);
/* One notified call's names, looked up from outside in the caller's own
 * root (notifyren.c): its root, and the directory its relative names
 * start from, read once per call. */
struct ns_call_view {
	pid_t pid;
	int root;           /* O_PATH on /proc/PID/root, or -1 */
	int dirfd;          /* whose name dir is; dir[0] == 0: none yet */
	char dir[4096];
};
enum { NS_LOOK_NAME, NS_LOOK_PARENT, NS_LOOK_FOLLOW };
int ns_call_read_str(pid_t pid, uint64_t addr, char *buf, size_t sz);
int ns_call_lookup(struct ns_call_view *v, int dirfd, const char *path, int how);

/* launcher.c */
void ns_check_launcher(const struct ns_plan *p);

/* deny.c: the deny-write rule (lib/deny) for this run's workspace */
void ns_check_glob(const char *glob);
const char *const *ns_deny_globs(const struct ns_plan *p, size_t *n);
int ns_workspace_fd(struct ns_plan *p);
void ns_plan_deny(struct ns_plan *p, const struct deny_tree *prev);
void ns_plan_scratch(const struct ns_args *a, struct ns_plan *p);

/* denykeep.c: the whole-tree walk's directories (lib/deny/denytree.c)
 * kept between runs */
void ns_deny_tree_save(int dirfd, const char *name, const char *key, const struct deny_tree *t);
int ns_deny_tree_load(int dirfd, const char *name, const char *key, struct deny_tree *t);

/* denyend.c: the record of a run, and protected paths created by it */
/* denyinert.c: what is new at the end, made inert */
/* Who and when, for one end check. */
struct deny_scope {
	int wsfd;
	uid_t uid;
	int64_t start_ns, end_ns; /* end_ns 0: the run has just ended (now) */
	int status_fd;
	int earlier;              /* a record of a run that was killed */
	int other;                /* ... on another workspace than this run's (--recover) */
	const struct deny_list *start;
	const char *ws_path;      /* the workspace's canonical path */
};

int64_t ns_deny_btime(int fd);
int ns_deny_check(const struct deny_scope *s, const char *const *globs, size_t n,
		  const struct deny_list *start, const struct deny_tree *tree, struct deny_tree *keep);

/* denyend.c: the record of a run */
void ns_deny_recover(struct ns_run *r);
const struct deny_tree *ns_deny_prev(const struct ns_run *r);
void ns_deny_record(struct ns_run *r);
void ns_deny_started(struct ns_run *r, pid_t pid);
void ns_deny_heartbeat(struct ns_run *r);
int ns_deny_end(struct ns_run *r);
void ns_deny_forget(struct ns_run *r);
void ns_deny_leave(struct ns_run *r);
int ns_deny_dirfd(const struct ns_run *r);

/* hint.c */
void ns_check_ws_writable(const struct ns_args *a, const struct ns_plan *p);
void ns_plan_hint(const struct ns_args *a, struct ns_plan *p);
void ns_explain_exec(const struct ns_args *a, const struct ns_plan *p);

/* plan.c: --dry-run */
struct sbx_json;
void ns_plan_json(const struct ns_run *r, struct sbx_json *j);
noreturn void ns_dry_run(struct ns_run *r);

/* view.c: names as the sandbox resolves them, looked up from outside */
struct view_ent;
struct ns_view {
	int root;              /* a living sandbox's root (RESOLVE_IN_ROOT), else -1 */
	struct view_ent *e;    /* the one-shot or host view's steps */
	size_t n;
};
void ns_view_living(struct ns_view *v, int root);
int ns_view_oneshot(const struct ns_plan *p, struct ns_view *v, char *why, size_t n);
int ns_view_host(const struct ns_plan *p, struct ns_view *v);
void ns_view_free(struct ns_view *v);
int ns_view_file(const struct ns_view *v, const char *path);
int ns_view_exec(const struct ns_view *v, const char *path);
int ns_view_find(const struct ns_view *v, const char *name, const char *search, const char *cwd, char *path,
		 size_t cap);
int ns_op_open(const struct mount_op *op, int *code);

/* program.c: the plan's program, found, hashed and executed */
int ns_find_program(const struct ns_plan *p, const struct ns_view *v, const char *name, const char *search,
		    const char *cwd, const struct sbx_allowexec *allow, struct ns_program *g, char *why, size_t n);
void ns_plan_program(const struct ns_args *a, struct ns_plan *p);
void ns_program_json(struct sbx_json *j, const struct ns_plan *p);
int ns_grant_open(const struct ns_run *r, const struct ns_cmd *c);
void ns_grant_exec(const struct ns_cmd *c, int fd);

/* grant.c: the grant */
void ns_check_grant(const struct ns_args *a, struct ns_plan *p);
const char *ns_opt_nonce_dir(const char *arg);
const char *ns_grant_name(const struct ns_plan *p);
void ns_grant_no_fallback(const struct ns_plan *p, const char *what, int err);
extern const char ns_grant_argv_only[];  /* the warning an argv-only grant runs with */
const char *ns_env_search(char *const *env); /* PATH of a command's env, or the default */
/* One command of a living sandbox (serve.c): with a grant (text) it is
 * verified against the plan of this command in this sandbox, as a one-shot
 * run's is; a dry run also gives that plan's document. */
struct ns_grant_req {
	char **argv, **env;     /* the command and its whole environment */
	const char *search;     /* PATH of env (ns_env_search) */
	const char *cwd;        /* inside; NULL: the workspace */
	uint64_t timeout_ms;    /* its --timeout, 0 none */
	const char *text;       /* the grant, NULL none */
	size_t len;
	unsigned char stdin_sha[SBX_SHA256_LEN]; /* of the bytes its stdin holds */
	int dry_run;            /* the plan only: the grant checked, no nonce recorded */
	int kind;               /* out: the grant's kind, 0 none */
	struct ns_program prog; /* out: the program, with a grant or a dry run */
	char *doc;              /* out, dry_run: the plan document */
	size_t doclen;
};
int ns_grant_request(const struct ns_run *r, struct ns_grant_req *q, char *why, size_t n);
void ns_grant_request_end(struct ns_grant_req *q);

/* steps.c: the root's steps, from the checked run */
void ns_plan_root(const struct ns_args *a, struct ns_plan *p);

/* root.c: in the sandbox's pid 1, before the command exists */
void ns_build_root(const struct ns_plan *p, struct ns_exec *x, int *hidepid);

/* inside.c */
noreturn void ns_init_main(struct ns_run *r);
char **ns_build_env(const struct ns_args *a, const struct ns_plan *p, const char **path);
void ns_wait_signals(sigset_t *set);
int ns_parent_gone(const struct ns_args *a);

/* net.c */
void ns_parse_net(struct ns_plan *p, const char *s);
void ns_opt_broker_fd(struct ns_plan *p, const char *arg);
void ns_check_net(const struct ns_args *a, struct ns_plan *p);
void ns_net_prepare(struct ns_run *r);
void ns_net_inside(struct ns_run *r);
void ns_net_outer(struct ns_run *r, pid_t pid);
void ns_net_end(struct ns_run *r);
const char *ns_net_name(const struct ns_plan *p);
struct sbx_json;
void ns_net_status(struct sbx_json *j, const struct ns_plan *p, const char *bridge);
char **ns_net_env(const struct ns_plan *p, char **env, size_t *k);
int ns_net_reserved_env(const char *name, size_t len);

/* netlog.c: the broker's decisions, on the status fd and in a note */
int ns_net_fd(const struct ns_run *r);
void ns_net_handle(struct ns_run *r);
void ns_net_lost(struct ns_run *r);
void ns_net_reset_lines(void);
int ns_net_pending(struct ns_run *r);
int ns_net_tick(struct ns_run *r, int wait_ms);
void ns_net_finish(struct ns_run *r);

/* seccomp.c */
void ns_load_filter(const struct ns_run *r);
const char *ns_filter_name(const struct ns_plan *p, const struct ns_exec *x);

/* landlock.c */
int ns_landlock(const struct ns_plan *p, const struct ns_exec *x);

/* serve.c: the living sandbox's outer (--serve PATH) */
void ns_serve_check(const struct ns_args *a, const struct ns_plan *p);
void ns_serve_prepare(struct ns_run *r);
int ns_serve_outer(struct ns_run *r, pid_t pid);
void ns_serve_cleanup(struct ns_run *r);
/* serve1.c: pid 1 of a living sandbox */
noreturn void ns_serve_inside(struct ns_run *r, int hidepid);
/* servecg.c: the commands' own cgroups under the sandbox's (--cgroup-fd) */
void ns_cg_check(const struct ns_args *a, const struct ns_plan *p);
int ns_cg_setup(struct ns_run *r, pid_t pid1);
int ns_cg_command(const struct ns_run *r, uint32_t id, uint64_t memory, uint64_t pids, uint64_t cpu_pct,
		  char *why, size_t sz);
/* Whose memory limit the OOM killer ended a command with --memory at. */
enum { NS_OOM_OWN = 1, NS_OOM_ABOVE };
void ns_cg_command_end(const struct ns_run *r, uint32_t id, int *oom, int *pids_hit);
void ns_cg_teardown(const struct ns_run *r);
/* join.c: sbx-ns --join PATH ... (the client) */
noreturn void ns_join_main(int argc, char **argv);
/* The client's options as --help lists them (join.c). */
extern const char ns_join_options[];
/* inside.c: the command's process, for both kinds of run */
noreturn void ns_command(struct ns_run *r, const struct ns_cmd *c, int hidepid);
const char *ns_env_refused(const struct ns_args *a, const struct ns_plan *p, const char *nameval);
/* paths.c: the root a host path lies in (by name and by each directory
 * above it), writable ones only or any; NULL: none */
const struct mount_op *ns_root_holding(const struct ns_plan *p, const char *path, int writable_only);
/* pty.c; --pty of a one-shot run: pid 1 opens it, the outer relays it */
void ns_pty_prepare(struct ns_run *r);
void ns_pty_outer(struct ns_run *r);
void ns_pty_outer_end(struct ns_run *r);
int ns_pty_inside(struct ns_run *r, int *slave);
void ns_pty_send(struct ns_run *r, int master);
int ns_pty_open(int *slave);
int ns_pty_attach(int slave);
int ns_pty_relay(int master, int in_fd, int out_fd, int ctl);
/* denyend.c: the end check while the sandbox lives on (after a command) */
int ns_deny_between(struct ns_run *r);

/* caps.c */
int ns_drop_bounding(void);
int ns_clear_caps(void);

/* observe.c: --observe FILE, the record of what the run did while it was
 * enforced (and the same facts for a --shadow-policy candidate) */
struct json_t;
void ns_observe_check(const struct ns_args *a, const struct ns_plan *p);
void ns_observe_start(struct ns_run *r);
void ns_observe_conn(const struct ns_run *r, struct json_t *line);
void ns_observe_denied(const struct ns_run *r, const char *syscall, const char *family, uint64_t count);
void ns_observe_no_fallback(struct ns_run *r, const char *what, int err);
void ns_observe_finish(struct ns_run *r);
void ns_observe_end(struct ns_run *r, int code);
int ns_observe_exec_on(const struct ns_args *a);
/* obsexec.c: every execve and execveat brought to the supervisor, and
 * the files they named */
struct sock_filter;
struct sbx_json;
size_t ns_exec_filter(const struct ns_args *a, struct sock_filter *out, size_t max);
int ns_exec_watched(const struct ns_run *r, int nr);
void ns_exec_seen(const struct ns_run *r, int fd, const struct seccomp_notif *req);
struct ns_exec_log *ns_exec_log_new(void);
void ns_exec_log_lines(struct ns_exec_log *l, void (*put)(void *ctx, struct sbx_json *j), void *ctx);
void ns_exec_log_free(struct ns_exec_log *l);
/* obspeak.c: the peaks of the run's own cgroup */
struct ns_peak {
	int fd;                    /* the cgroup, or -1 */
	char why[160];             /* why there is none */
	int have_mem, have_pids, have_cpu;
	uint64_t mem, pids, cpu_usec;
};
void ns_peak_start(const struct ns_run *r, struct ns_peak *pk);
void ns_peak_read(struct ns_peak *pk);
/* shadow.c: --shadow-policy FILE */
struct ns_shadow_plan;
void ns_shadow_check(const struct ns_args *a, const struct ns_plan *p);
void ns_shadow_plan(const struct ns_args *a, struct ns_plan *p, const struct sbx_policy *req);
struct ns_shadow_run *ns_shadow_run_new(const struct ns_plan *p);
void ns_shadow_conn(const struct ns_run *r, const char *host, unsigned port, uint64_t count);
void ns_shadow_end(struct ns_run *r, const struct ns_peak *pk);

/* changes.c: --changes DIR */
const char *ns_changes_opt(const char *arg);
void ns_changes_check(const struct ns_args *a, struct ns_plan *p);
void ns_changes_mount(const struct ns_plan *p, int lower, const char *rel);
void ns_changes_end(const struct ns_plan *p);

#endif

/* Policies: an administrator's baseline that a request can only narrow.
 *
 * A policy holds the fields of the `sandbox` block (filesystem roots,
 * deny-write globs, network, fallback) and of the `resources` block (CPU,
 * memory, processes, disk, inodes). It comes from JSON (policy_json.c: the
 * files other sandbox systems already use, loaded strictly), or is built by
 * a tool from its argv (the request). sbx_policy_merge() combines the
 * baseline and the request into the effective policy, which is never more
 * permissive than the baseline: a request that asks for more is refused
 * naming the field, or, with clamp, narrowed to the baseline and the field
 * listed as clamped.
 *
 * Every field records whether it was given ("set") and where it came from
 * ("origin": "--memory", or "--baseline /etc/b.json: $.resources.memory_mb")
 * so that a refusal can name both sides. An unset field places no
 * constraint: the other side's value applies. Loading a `sandbox` block
 * fills the keys it omits with the documented defaults, as its users expect;
 * an absent block leaves its fields unset.
 *
 * Errors never exit: they fill a struct sbx_err (err.h) and the tool
 * decides; sbx_err_die() prints it in the usual shape. Codes: SBX_EXIT_USAGE for malformed input (bad
 * JSON, unknown key, wrong type, out-of-range value, an inconsistent unsafe
 * fallback), SBX_EXIT_POLICY for a refused merge or an untrusted baseline
 * file, SBX_EXIT_SYS for a failed read. */
#ifndef SBX_POLICY_H
#define SBX_POLICY_H

#include "err.h"

#include <stddef.h>
#include <stdint.h>

struct sbx_json;

/* Ordered from narrowest to widest: a merge takes the smaller. */
enum sbx_pol_net {
	SBX_PNET_NONE = 1,     /* "none": no network */
	SBX_PNET_LOOPBACK,     /* "localhost": loopback only (sbx-ns --net loopback) */
	SBX_PNET_BROKER,       /* "allowlist": through sbx-broker, allowlisted hosts */
	SBX_PNET_HOST,         /* "all": the host's network (sbx-ns --net host) */
};

enum sbx_pol_mode {
	SBX_PMODE_NATIVE = 1,  /* "native": confined (narrower) */
	SBX_PMODE_OFF,         /* "off": unconfined; no sbx tool runs this way */
};

enum sbx_pol_fallback {
	SBX_PFB_FAIL_CLOSED = 1,   /* "fail-closed": no sandbox, no run */
	SBX_PFB_LANDLOCK,          /* "landlock": no namespaces, Landlock and seccomp
				    * (only from the baseline) */
	SBX_PFB_UNSAFE_HOST,       /* "unsafe-host-process": run unconfined */
};
/* Their names, indexed by value, NULL-terminated. */
extern const char *const sbx_pol_fallbacks[];

/* tierDenyWrite: whether the Landlock tier, which cannot keep deny-write
 * globs inside a writable root, refuses to run (the default) or runs with
 * them unenforced, saying so. Only a baseline may say "unenforced". */
enum {
	SBX_PTDW_REFUSE = 1,       /* "refuse" */
	SBX_PTDW_UNENFORCED,       /* "unenforced" */
};
extern const char *const sbx_pol_tier_deny[];

/* Which fields a tool enforces: a merge looks only at these, so one policy
 * file can serve every tool of a chain. */
#define SBX_PSCOPE_NS     0x1u  /* the sandbox block */
#define SBX_PSCOPE_CGROUP 0x2u  /* cpu_percent, memory_mb, max_processes, require_hard_limits */
#define SBX_PSCOPE_QUOTA  0x4u  /* disk_mb, max_inodes, require_hard_limits, accept_statfs_quota */
#define SBX_PSCOPE_ALL    0x7u

/* Limits of the values a policy may hold (the tools' own maxima). */
#define SBX_POL_MAX_CPU_PCT  100000ULL         /* 1000 cores */
#define SBX_POL_MAX_MEMORY   (1ULL << 50)      /* 1 PiB, in bytes */
#define SBX_POL_MAX_DISK     (1ULL << 60)      /* bytes */
#define SBX_POL_MAX_PIDS     4194304ULL        /* PID_MAX_LIMIT */
#define SBX_POL_MAX_INODES   (1ULL << 48)
#define SBX_POL_MAX_ITEMS    4096              /* entries of one list */
#define SBX_POL_MAX_BYTES    (4u << 20)        /* a policy file or fd */

struct sbx_pol_u64 { uint64_t v; int set; char *origin; };
struct sbx_pol_int { int v; int set; char *origin; };   /* enums and booleans */
struct sbx_pol_item { char *val; char *origin; };
struct sbx_pol_list { struct sbx_pol_item *it; size_t n, cap; int set; char *origin; };

struct sbx_policy {
	char *source;                 /* "--baseline /etc/b.json", "--policy-fd 4", "argv" */

	/* sandbox block (seed names in comments) */
	struct sbx_pol_int mode;      /* mode */
	struct sbx_pol_int net;       /* network.mode */
	struct sbx_pol_list allow;    /* network.allowlist: host patterns, normal form */
	struct sbx_pol_list ro;       /* readableRoots: absolute once resolved */
	struct sbx_pol_list rw;       /* writableRoots */
	struct sbx_pol_list deny;     /* denyWrite: globs relative to the workspace */
	struct sbx_pol_int fallback;  /* fallback */
	struct sbx_pol_int unsafe;    /* unsafeAllowHostProcess */
	struct sbx_pol_int tier_deny; /* tierDenyWrite: baseline only (sbx-ns's Landlock tier) */
	struct sbx_pol_int host_ca;   /* hostCA: the host's CA variables and files (sbx-ns); unset: true */

	/* resources block */
	struct sbx_pol_u64 cpu;       /* cpu_percent: 100 = one core */
	struct sbx_pol_u64 memory;    /* memory_mb, held in bytes */
	struct sbx_pol_u64 pids;      /* max_processes */
	struct sbx_pol_u64 disk;      /* disk_mb, held in bytes */
	struct sbx_pol_u64 inodes;    /* max_inodes (sbx's addition) */
	struct sbx_pol_int hard;      /* require_hard_limits */
	struct sbx_pol_int statfs_ok; /* accept_statfs_quota: baseline only (sbx-quota) */
};

/* Fields narrowed by a clamped merge, by their block path
 * ("resources.memory_mb", "sandbox.readableRoots"), each once. */
#define SBX_POL_NFIELDS 16
#define SBX_POL_VALUE_MAX 160
struct sbx_pol_clamped {
	const char *field[SBX_POL_NFIELDS];
	char value[SBX_POL_NFIELDS][SBX_POL_VALUE_MAX]; /* the first value narrowed, for messages */
	size_t n;
};

/* The deny-write globs a sandbox block has when it names none. */
extern const char *const sbx_policy_default_deny[];
/* Why a deny-write glob is invalid, or NULL. */
const char *sbx_policy_glob_invalid(const char *glob);

/* policy.c: the model */
void sbx_policy_init(struct sbx_policy *p, const char *source);
void sbx_policy_free(struct sbx_policy *p);
int sbx_policy_has_sandbox(const struct sbx_policy *p);
int sbx_policy_has_resources(const struct sbx_policy *p);

/* Building a request from argv. origin is the option ("--ro"); each
 * returns 0, or -1 with e filled (SBX_EXIT_USAGE) for a value the policy
 * cannot hold. Values are checked like the JSON ones. */
int sbx_policy_set_u64(struct sbx_policy *p, struct sbx_pol_u64 *f, uint64_t v,
		       const char *origin, struct sbx_err *e);
int sbx_policy_set_int(struct sbx_policy *p, struct sbx_pol_int *f, int v,
		       const char *origin, struct sbx_err *e);
/* Append to a list (marks it set). Roots must be absolute or relative to
 * the workspace (resolved later), globs as sbx-ns takes them, hosts as
 * sbx-broker takes them; duplicates are dropped. */
int sbx_policy_add_root(struct sbx_policy *p, struct sbx_pol_list *l, const char *path,
			const char *origin, struct sbx_err *e);
int sbx_policy_add_glob(struct sbx_policy *p, const char *glob, const char *origin,
			struct sbx_err *e);
int sbx_policy_add_host(struct sbx_policy *p, const char *pattern, const char *origin,
			struct sbx_err *e);
/* Mark a list given (and empty if nothing was added): an argv request
 * says everything about its roots, so an omitted --ro means "no readable
 * root", not "whatever the baseline has". */
void sbx_policy_list_given(struct sbx_pol_list *l, const char *origin);
/* Fill every unset field of the sandbox block with its default: mode
 * native, network none with an empty allowlist, readable and writable
 * roots ".", the default deny-write globs, fail-closed, no host process. */
void sbx_policy_sandbox_defaults(struct sbx_policy *p);

/* Turn relative roots into absolute ones under ws (a canonical absolute
 * directory, or NULL when the tool has no workspace: a relative root is
 * then an error). Roots are lexically normal: no "." or ".." components,
 * no "//", no trailing '/'. Call on both sides before merging. */
int sbx_policy_resolve_roots(struct sbx_policy *p, const char *ws, struct sbx_err *e);

/* Checks of a single policy: both halves of the unsafe fallback or
 * neither (SBX_EXIT_USAGE). The JSON loader runs it; call it on a request
 * built by hand. */
int sbx_policy_check(const struct sbx_policy *p, struct sbx_err *e);

/* eff = base ∧ req over the fields in scope. base may be NULL (no
 * baseline: eff is a copy of req). Without clamp a request field wider
 * than the baseline's is refused (SBX_EXIT_POLICY, message naming both
 * origins); with clamp it is narrowed and listed in *cl (may be NULL).
 * eff is initialised here; free it with sbx_policy_free. */
int sbx_policy_merge(const struct sbx_policy *base, const struct sbx_policy *req,
		     unsigned scope, int clamp, struct sbx_policy *eff,
		     struct sbx_pol_clamped *cl, struct sbx_err *e);

/* 1 when path (absolute, normal) lies within one of the roots of l
 * (component-wise: /a/bc is not within /a/b). */
int sbx_policy_within(const struct sbx_pol_list *l, const char *path);
/* 1 when path equals root or lies below it, component-wise; the one
 * "within" every tool uses, for absolute paths and for paths relative to
 * the workspace alike. */
int sbx_path_within(const char *path, const char *root);

/* p ⊓ base = p: p is no wider than base in any field (SBX_PSCOPE_ALL):
 * the merge of p as a request under base refuses nothing, and gives p
 * back unchanged (every field base sets, p sets; every deny-write glob of
 * base, p has). The check a narrowed or shadow policy passes before it is
 * printed or used; 0, or -1 with e naming the first field that is wider
 * (SBX_EXIT_POLICY). Roots of both must be resolved against one
 * workspace. accept_statfs_quota is a baseline's alone (no request may
 * hold it): p never has it, and it is not compared. */
int sbx_policy_meet_holds(const struct sbx_policy *base, const struct sbx_policy *p, struct sbx_err *e);
/* A limit's value as messages spell it ("1024 MiB", "64 processes"), by
 * its field ("resources.memory_mb"). */
void sbx_policy_fmt_u64(char *buf, size_t sz, const char *field, uint64_t v);

/* Both halves of the unsafe fallback are on. */
int sbx_policy_unsafe_fallback(const struct sbx_policy *p);

/* Names used in messages and JSON. */
const char *sbx_policy_net_name(int net);     /* "none", "localhost", "allowlist", "all" */

/* policy_json.c */
/* Parse len bytes (not NUL-terminated) as a policy. p must have been
 * initialised; source labels messages. Strict: duplicate keys, unknown
 * keys, wrong types, floats where integers belong, zero, negative and
 * too-large values, trailing bytes, a BOM, NUL in strings, nesting beyond
 * 2048 levels are refused with the JSON path ("$.sandbox.network.mode"). */
int sbx_policy_parse(struct sbx_policy *p, const char *buf, size_t len, struct sbx_err *e);
/* The policy, restricted to scope, as a JSON document (indented, ending in
 * a newline), loadable by sbx_policy_parse. malloc'd; NULL on ENOMEM. */
char *sbx_policy_to_json(const struct sbx_policy *p, unsigned scope);
/* Add "clamped":[fields...] to a status line being built. */
void sbx_policy_clamped_json(struct sbx_json *j, const struct sbx_pol_clamped *cl);

/* policy_file.c: reading policies the tools were given */
/* --baseline FILE: an absolute path; every directory on the way and the
 * file owned by root or the caller and not writable by group or others
 * (a directory may be if it is sticky, like /tmp); no symbolic
 * link anywhere; a regular file. Reads at most SBX_POL_MAX_BYTES and
 * parses it. source is the label for messages ("--baseline FILE"). */
int sbx_policy_load_file(struct sbx_policy *p, const char *path, struct sbx_err *e);
/* The same checks, for any file an administrator keeps (a baseline, an
 * observation record): the open fd (O_RDONLY), or -1 with e filled.
 * src labels messages. */
int sbx_policy_open_trusted(const char *path, const char *src, struct sbx_err *e);
/* --baseline-fd FD / --policy-fd FD: reads the fd from its current offset
 * to end of file and parses it; the fd is left open (the tool closes it:
 * both options consume their fd). */
int sbx_policy_load_fd(struct sbx_policy *p, int fd, struct sbx_err *e);

/* The status line of a merge, on fd (nothing when fd < 0):
 * {"tool":TOOL,"event":"policy","baseline":B,"clamped":[...],"unsafe_fallback":U}.
 * Returns sbx_json_write's result. */
int sbx_policy_status(int fd, const char *tool, int have_baseline, const struct sbx_policy *eff,
		      const struct sbx_pol_clamped *cl);

/* The unsafe host-process fallback is about to run the command unconfined
 * because the sandbox could not be set up (err: the errno of that step):
 * one WARNING line on stderr, written whole, and an "unsafe_fallback"
 * event on fd (if >= 0). The caller then execs the command itself. */
void sbx_policy_unsafe_notice(int fd, const char *tool, int err);

/* policy_opts.c: the options every tool takes, and the one call that turns
 * them and the tool's argv into the effective policy. */
struct sbx_policy_opts {
	const char *baseline;   /* --baseline FILE */
	int baseline_fd;        /* --baseline-fd FD (consumed) */
	int policy_fd;          /* --policy-fd FD (consumed) */
	int clamp;              /* --clamp */
	struct sbx_policy *keep_base; /* when set, the baseline (roots resolved) is left
				       * here for the tool's own checks, not freed */
};
void sbx_policy_opts_init(struct sbx_policy_opts *o);
/* Option handlers: die with a usage error (100) on a bad value, or when
 * --baseline and --baseline-fd are both given. */
void sbx_policy_opt_baseline(struct sbx_policy_opts *o, const char *arg);
void sbx_policy_opt_baseline_fd(struct sbx_policy_opts *o, const char *arg);
void sbx_policy_opt_policy_fd(struct sbx_policy_opts *o, const char *arg);
/* A baseline was given. */
int sbx_policy_opts_baseline(const struct sbx_policy_opts *o);
/* A baseline or a --policy-fd was given (1) or neither (0). Dies with a
 * usage error for --clamp without a baseline, and for a status fd that is
 * also a policy fd. */
int sbx_policy_opts_used(const struct sbx_policy_opts *o);

/* Everything between the options and the tool's own work, dying (with the
 * tool's name, exact message and code) at the first problem:
 *  - the request: req as the tool built it from its argv (only what the
 *    options said), or, with --policy-fd, the JSON there (argv fields in
 *    scope as well are a usage error: one source per request);
 *  - for SBX_PSCOPE_NS an argv request says everything about the sandbox:
 *    the workspace ws is a writable root, unnamed roots are not asked
 *    for, the default deny-write globs apply unless some were given, the
 *    rest takes the block's defaults; relative roots resolve against ws;
 *  - the baseline (file or fd), merged by scope, refused or clamped;
 *  - for SBX_PSCOPE_NS the workspace must lie within the effective
 *    writable roots (sbx-ns always writes it);
 *  - one "policy" status line on status_fd when a baseline or a policy
 *    was given.
 * Consumed fds are closed. eff must be freed by the caller. */
void sbx_policy_effective(const struct sbx_policy_opts *o, struct sbx_policy *req,
			  unsigned scope, const char *ws, const char *tool, int status_fd,
			  struct sbx_policy *eff);

#endif

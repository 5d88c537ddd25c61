/* `sbx-check proof`, shared between its parts: the runner (proof_run.c),
 * the scratch workspace (proof_scratch.c), the isolation and network lines
 * (proof.c), the broker lines (proof_broker.c) and their test network
 * (proof_net.c), the limit lines (proof_limits.c). */
#ifndef SBX_CHECK_PROOF_H
#define SBX_CHECK_PROOF_H

#include "check.h"

#include <limits.h>
#include <signal.h>
#include <sys/types.h>

#define RUN_TIMEOUT_MS 60000
/* sbx-ns never runs a command as root: a root caller's proof runs as
 * nobody, and the workspace belongs to nobody so that its writes can work. */
#define PROOF_UID "65534"
#define PROOF_ID 65534
#define MAXARGS 32

struct run {
	int code;          /* exit code, 128+N for a signal, -1 timed out */
	char out[1024];    /* stdout and stderr, newlines folded */
	int warned;        /* the Landlock tier's WARNING line was on stderr */
};

struct scratch {
	char base[64];     /* /var/tmp/sbx-check.XXXXXX */
	char ws[PATH_MAX];
	char probe[PATH_MAX];
	char secret[PATH_MAX];
	char outside[PATH_MAX];
};

struct chain {
	int sigfd;         /* SIGINT, SIGTERM, SIGHUP: stop, clean up, then die of it */
	int stop;          /* the signal received, 0 while running */
	sigset_t oldmask;
	char ns[PATH_MAX];
	char cgroup[PATH_MAX];
	char quota[PATH_MAX];
	int have_ns, have_cgroup, have_quota, have_broker;
	/* The Landlock tier's proof: every sbx-ns run gets the baseline that
	 * allows the tier and reports on fd 3 (status); with give_up_deny the
	 * request on fd 4 says "denyWrite": []; with refuse_userns the chain
	 * runs where user namespaces cannot be created; stderr goes to errors;
	 * kernel_abi is the Landlock ABI this kernel offers (0: none). */
	int tier, give_up_deny, refuse_userns, kernel_abi;
	char baseline[PATH_MAX], request[PATH_MAX], status[PATH_MAX], errors[PATH_MAX];
};

/* argv for: [prefix...] NS [nsopts...] --workspace WS -- PROBE --probe ACTION ARGS */
struct argv_b {
	char *v[MAXARGS];
	int n;
};

/* proof_run.c */
/* fork with stdout flushed first (no report line written twice), or die. */
pid_t pr_fork(void);
void pr_run_st(struct chain *c, char *const argv[], const char *status, struct run *res);
void pr_run(struct chain *c, char *const argv[], struct run *res);
int pr_tool_exists(const char *path);
void pr_add(struct argv_b *a, const char *s);
void pr_add_ns(struct argv_b *a, const struct chain *c, const char *net, const char *ws,
	       const char *probe);

/* proof_scratch.c */
void pr_join(char *out, size_t n, const char *dir, const char *name);
void pr_put_file(const char *path, const char *text, mode_t mode);
void pr_copy_self(const char *dst);
void pr_make_scratch(struct scratch *s);
/* What the scratch workspace put at PATH (relative to its base), or die. */
const char *pr_scratch_text(const char *path);
void pr_remove_tree(const char *dir);
int pr_file_has(const char *path, const char *text);
int pr_exists(const char *path);

/* What the attempts aim at besides the scratch workspace. */
struct aims {
	char port[16];       /* a listener on the host's 127.0.0.1 */
	char tmp[PATH_MAX];  /* a file in the host's /tmp (the Landlock tier) */
	pid_t outside;       /* a process of the command's uid outside (the tier) */
	char abstract[64];   /* an abstract Unix socket outside, and its listener (the tier) */
	int abstract_fd;
};

/* proof.c */
void pr_judge(struct chk_report *r, enum chk_class cls, const char *name, int want_ok,
	      const struct run *res, int host_ok, const char *host_says);
/* Every isolation attempt of the full proof, or of the tier's (c->tier). */
void pr_attempts(struct chk_report *r, struct chain *c, const struct scratch *s, struct aims *x);
/* Listens on 127.0.0.1, port chosen by the kernel; returns the socket. */
int pr_host_listener(unsigned *port);

/* proof_tier.c: the Landlock tier's proof. */
void pr_tier_proof(struct chk_report *r, struct chain *c, const struct scratch *s);
/* Judges an attempt in the tier: as pr_judge, and only if sbx-ns said it
 * ran the command in the tier; scoped: kept only from Landlock ABI 6. */
void pr_tier_judge(struct chk_report *r, const struct chain *c, const char *name, int want_ok,
		   int scoped, const struct run *res, int host_ok, const char *host_says);
/* A deny-write line the tier cannot prove (deny-write given up). */
void pr_tier_no_deny(struct chk_report *r, const char *name);
int pr_outside_signalled(const struct aims *x);
int pr_outside_connected(const struct aims *x);

/* proof_net.c: the broker proof's test network. No packet can leave it. */
#define ORIGIN_ADDR "198.18.99.2"
#define ALLOWED_NAME "allowed.sbx-check.test"
#define DENIED_NAME "denied.sbx-check.test"

struct testnet {
	char ip[32];
	char nh[32], no[32], vh[16], vo[16];
	char sock[PATH_MAX], hosts[PATH_MAX];
	int made, count_fd, requests;
	pid_t origin, broker;
};

const char *pr_find_ip(void);
int pr_is_iproute2(struct chain *c, const char *ip);
pid_t pr_start_helper(struct chain *c, struct testnet *t, const char *broker, int userns,
		      char *why, size_t n);
int pr_origin_requests(struct testnet *t);
int pr_testnet_up(struct chain *c, struct testnet *t, const struct scratch *s,
		  const char *broker, char *why, size_t n);
void pr_testnet_down(struct chain *c, struct testnet *t);

/* proof_broker.c */
void pr_broker_proof(struct chk_report *r, struct chain *c, const struct scratch *s);

/* proof_limits.c */
void pr_cgroup_proof(struct chk_report *r, struct chain *c, const struct scratch *s,
		     const char *root);
void pr_quota_proof(struct chk_report *r, struct chain *c, const char *qws);
void pr_limits_without_ns(struct chk_report *r, const struct chk_opts *o);

#endif

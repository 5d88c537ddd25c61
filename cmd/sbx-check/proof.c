/* `sbx-check proof`: run the real chain on a scratch workspace and show,
 * attempt by attempt, that the sandbox holds. The commands inside are this
 * binary in its probe mode (copied into the workspace), so the proof needs
 * no shell in the sandbox. Each attempt is judged on two things: what the
 * probe says happened inside, and what the host sees afterwards. */
#include "proof.h"
#include "die.h"
#include "exitcodes.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

/* Judges one attempt. want_ok: the action should succeed. host_ok: what the
 * host sees afterwards agrees with the expectation. */
void pr_judge(struct chk_report *r, enum chk_class cls, const char *name, int want_ok,
	      const struct run *res, int host_ok, const char *host_says)
{
	struct chk_item *it;

	if (res->code == SBX_EXIT_NOISOLATION) {
		it = chk_add(r, CLS_ISOLATION, name, CHK_UNSUPPORTED,
			     "the chain refused: isolation unavailable (exit 106): %s", res->out);
		chk_fix(it, "see `sbx-check host`");
		return;
	}
	if (res->code == -1) {
		chk_add(r, cls, name, CHK_FAIL, "no answer within %d s: %s", RUN_TIMEOUT_MS / 1000,
			res->out);
		return;
	}
	if (res->code != 0 && res->code != 1) {
		chk_add(r, cls, name, CHK_FAIL, "the chain exited %d instead of running the probe: %s",
			res->code, res->out);
		return;
	}
	if ((res->code == 0) != want_ok) {
		chk_add(r, cls, name, CHK_FAIL, "%s: %s", want_ok ? "refused" : "allowed", res->out);
		return;
	}
	if (!host_ok) {
		chk_add(r, cls, name, CHK_FAIL, "%s; but on the host: %s", res->out, host_says);
		return;
	}
	chk_add(r, cls, name, CHK_OK, "%s%s", want_ok ? "" : "denied: ", res->out);
}

/* What an attempt names after its action. */
enum aim {
	AIM_PATH,      /* a path below the scratch directory */
	AIM_PORT,      /* the port of the listener on the host's 127.0.0.1 */
	AIM_TMP,       /* a file in the host's /tmp */
	AIM_PID,       /* the process outside (the Landlock tier) */
	AIM_ABSTRACT,  /* the abstract Unix socket outside (the Landlock tier) */
};

/* What the host must see afterwards. */
enum seen {
	SEEN_ANY,       /* nothing to check on the host */
	SEEN_WRITTEN,   /* the file holds the probe's line */
	SEEN_KEPT,      /* the file still holds what the scratch workspace put there */
	SEEN_ABSENT,    /* the file does not exist */
	SEEN_UNSIGNALLED, /* the process outside has no SIGUSR1 pending */
	SEEN_UNCONNECTED, /* the abstract socket outside has no connection waiting */
};

/* Which proof runs an attempt: the full sandbox's, the Landlock tier's. */
#define FULL 1
#define TIER 2
#define DENY 4   /* kept by deny-write, not by the roots */

/* One isolation proof: what is tried, and what counts as a pass. */
struct attempt {
	const char *name;
	unsigned proofs;        /* FULL, TIER */
	const char *action;     /* sbx-check --probe ACTION ARG */
	enum aim aim;
	const char *path;       /* AIM_PATH: below the scratch directory */
	int want_ok;            /* pass when the action works (else: when it is refused) */
	enum seen seen;
	const char *host_says;  /* what the host saw when it was not that */
};

static const struct attempt isolation_tab[] = {
	{ "workspace-read", FULL | TIER, "read", AIM_PATH, "ws/readme", 1, SEEN_ANY, "" },
	{ "workspace-write", FULL | TIER, "write", AIM_PATH, "ws/created", 1, SEEN_WRITTEN, "" },
	{ "sibling-secret", FULL | TIER, "read", AIM_PATH, "secret", 0, SEEN_ANY, "" },
	{ "env-write", FULL | TIER | DENY, "write", AIM_PATH, "ws/.env", 0, SEEN_KEPT,
	  ".env was modified" },
	{ "git-hook-write", FULL | TIER | DENY, "write", AIM_PATH, "ws/.git/hooks/pre-commit", 0,
	  SEEN_ABSENT, ".git/hooks/pre-commit exists" },
	{ "outside-write", FULL | TIER, "write", AIM_PATH, "outside/escaped", 0, SEEN_ABSENT,
	  "a file appeared outside the workspace" },
	{ "tmp-write", TIER, "write", AIM_TMP, NULL, 0, SEEN_ABSENT, "a file appeared in /tmp" },
	{ "offline", FULL | TIER, "connect", AIM_PORT, NULL, 0, SEEN_ANY, "" },
	{ "signal-outside", TIER, "signal", AIM_PID, NULL, 0, SEEN_UNSIGNALLED,
	  "the process outside has SIGUSR1 pending" },
	{ "abstract-outside", TIER, "abstract", AIM_ABSTRACT, NULL, 0, SEEN_UNCONNECTED,
	  "the abstract socket outside has a connection waiting" },
};

/* Runs one attempt through the chain and judges it. */
static void attempt(struct chk_report *r, struct chain *c, const struct scratch *s,
		    const struct attempt *t, struct aims *x)
{
	char target[PATH_MAX];
	const char *says = t->host_says;
	struct argv_b a = { .n = 0 };
	struct run res;
	int host_ok = 1;

	switch (t->aim) {
	case AIM_PATH: pr_join(target, sizeof target, s->base, t->path); break;
	case AIM_PORT: snprintf(target, sizeof target, "%s", x->port); break;
	case AIM_TMP: snprintf(target, sizeof target, "%s", x->tmp); break;
	case AIM_PID: snprintf(target, sizeof target, "%ld", (long)x->outside); break;
	case AIM_ABSTRACT: snprintf(target, sizeof target, "%s", x->abstract); break;
	}
	pr_add_ns(&a, c, NULL, s->ws, s->probe);
	pr_add(&a, t->action);
	pr_add(&a, target);
	pr_run(c, a.v, &res);
	switch (t->seen) {
	case SEEN_ANY:
		break;
	case SEEN_WRITTEN:
		host_ok = pr_file_has(target, CHK_PROBE_WRITTEN);
		says = pr_exists(target) ? "the file has other content" : "the file is not there";
		break;
	case SEEN_KEPT:
		host_ok = pr_file_has(target, pr_scratch_text(t->path));
		break;
	case SEEN_ABSENT:
		host_ok = !pr_exists(target);
		break;
	case SEEN_UNSIGNALLED:
		host_ok = !pr_outside_signalled(x);
		break;
	case SEEN_UNCONNECTED:
		host_ok = !pr_outside_connected(x);
		break;
	}
	if (c->tier)
		pr_tier_judge(r, c, t->name, t->want_ok, !strcmp(t->action, "signal") ||
			      !strcmp(t->action, "abstract"), &res, host_ok, says);
	else
		pr_judge(r, CLS_ISOLATION, t->name, t->want_ok, &res, host_ok, says);
}

/* Every attempt of one proof, in the table's order. */
void pr_attempts(struct chk_report *r, struct chain *c, const struct scratch *s, struct aims *x)
{
	unsigned proof = c->tier ? TIER : FULL;

	for (size_t i = 0; i < sizeof isolation_tab / sizeof isolation_tab[0]; i++) {
		const struct attempt *t = &isolation_tab[i];
		if (!(t->proofs & proof))
			continue;
		if (c->tier && c->give_up_deny && (t->proofs & DENY)) {
			pr_tier_no_deny(r, t->name);
			continue;
		}
		attempt(r, c, s, t, x);
	}
}

/* A listener on the host's own 127.0.0.1: reaching it from inside would
 * prove the sandbox shares the host's network. Nothing ever leaves the
 * machine: the only address used is loopback. */
int pr_host_listener(unsigned *port)
{
	struct sockaddr_in a;
	socklen_t al = sizeof a;
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 16) < 0 ||
	    getsockname(s, (struct sockaddr *)&a, &al) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to listen on 127.0.0.1");
	*port = ntohs(a.sin_port);
	return s;
}

/* The isolation lines, then the network modes beyond them (loopback and
 * the broker). */
static void isolation(struct chk_report *r, struct chain *c, const struct scratch *s)
{
	struct aims x = { .outside = -1, .abstract_fd = -1 };
	struct argv_b a;
	struct run res;
	struct chk_item *it;
	unsigned port;
	int l = pr_host_listener(&port);

	snprintf(x.port, sizeof x.port, "%u", port);
	pr_attempts(r, c, s, &x);

	a.n = 0;
	pr_add_ns(&a, c, "loopback", s->ws, s->probe);
	pr_add(&a, "loopback");
	pr_run(c, a.v, &res);
	if (res.code == SBX_EXIT_USAGE) {
		it = chk_add(r, CLS_EXTRA, "loopback", CHK_UNSUPPORTED,
			     "this sbx-ns refuses --net loopback: %s", res.out);
		chk_fix(it, "an sbx-ns with network modes");
	} else {
		pr_judge(r, CLS_EXTRA, "loopback", 1, &res, 1, "");
		a.n = 0;
		pr_add_ns(&a, c, "loopback", s->ws, s->probe);
		pr_add(&a, "connect");
		pr_add(&a, x.port);
		pr_run(c, a.v, &res);
		pr_judge(r, CLS_EXTRA, "loopback-host", 0, &res, 1, "");
	}
	close(l);

	pr_broker_proof(r, c, s);
}

void chk_proof(struct chk_report *r, const struct chk_opts *o)
{
	char bindir[PATH_MAX], p[PATH_MAX + 32];
	struct chain c;
	struct scratch s;
	struct chk_item *it;

	memset(&c, 0, sizeof c);
	chk_bindir(bindir, sizeof bindir);
	if (o->ns)
		snprintf(c.ns, sizeof c.ns, "%s", o->ns);
	else
		pr_join(c.ns, sizeof c.ns, bindir, "sbx-ns");
	c.have_ns = pr_tool_exists(c.ns);
	pr_join(c.cgroup, sizeof c.cgroup, bindir, "sbx-cgroup");
	c.have_cgroup = pr_tool_exists(c.cgroup);
	pr_join(c.quota, sizeof c.quota, bindir, "sbx-quota");
	c.have_quota = pr_tool_exists(c.quota);
	pr_join(p, sizeof p, bindir, "sbx-broker");
	c.have_broker = pr_tool_exists(p);

	if (!c.have_ns) {
		for (size_t i = 0; i < sizeof isolation_tab / sizeof isolation_tab[0]; i++) {
			if (!(isolation_tab[i].proofs & (o->tier ? TIER : FULL)))
				continue;
			it = chk_add(r, CLS_ISOLATION, isolation_tab[i].name, CHK_UNSUPPORTED,
				     "sbx-ns is not installed at %s", c.ns);
			chk_fix(it, "install sbx-ns beside sbx-check");
		}
		if (!o->tier)
			pr_limits_without_ns(r, o);
		return;
	}
	/* From here on a signal must not leave the scratch directory behind. */
	{
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGINT);
		sigaddset(&set, SIGTERM);
		sigaddset(&set, SIGHUP);
		if (sigprocmask(SIG_BLOCK, &set, &c.oldmask) < 0 ||
		    (c.sigfd = signalfd(-1, &set, SFD_CLOEXEC)) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to set up signal handling");
	}
	pr_make_scratch(&s);
	if (o->tier) {
		pr_tier_proof(r, &c, &s);
	} else {
		isolation(r, &c, &s);
		pr_cgroup_proof(r, &c, &s, o->cgroup_root);
		pr_quota_proof(r, &c, o->quota_ws);
	}
	pr_remove_tree(s.base);
	if (c.stop) {
		/* Interrupted: the scratch directory is gone; die of the signal. */
		signal(c.stop, SIG_DFL);
		sigprocmask(SIG_SETMASK, &c.oldmask, NULL);
		raise(c.stop);
		_exit(SBX_EXIT_SIGNAL_BASE + c.stop);
	}
	sigprocmask(SIG_SETMASK, &c.oldmask, NULL);
	close(c.sigfd);
}

/* sbx-ns and its policy: the request its argv (or --policy-fd) makes,
 * merged with the administrator's baseline, becomes the plan: the roots,
 * the deny-write globs, the network; --print-policy shows it; binds to a
 * chosen destination must draw from the effective roots; and the unsafe
 * host-process fallback runs only when both halves allow it. */
#include "ns.h"

#include "clock.h"
#include "die.h"
#include "exec.h"
#include "exitcodes.h"
#include "fd.h"
#include "json.h"
#include "quote.h"

#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int listed(const struct sbx_pol_list *l, const char *src)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->it[i].val, src))
			return 1;
	return 0;
}

static int bound(const struct ns_plan *p, const char *src)
{
	for (size_t i = 0; i < p->nops; i++)
		if (p->ops[i].kind != MNT_BIND && !strcmp(p->ops[i].src, src))
			return 1;
	return 0;
}

static int from_baseline(const char *origin)
{
	return origin && !strncmp(origin, "--baseline", 10);
}

/* Roots the policy names that no bind covers yet. Inside the workspace
 * (or, for a readable root, inside a writable one) they are there
 * already. A baseline root a clamp brought in is skipped if this host
 * lacks it; a requested one must exist, as --ro/--rw require. */
static void add_missing(struct ns_plan *p, const struct sbx_pol_list *l, enum mount_kind kind,
			const char *ws)
{
	for (size_t i = 0; i < l->n; i++) {
		const char *path = l->it[i].val, *o = l->it[i].origin;
		struct stat st;

		if (bound(p, path) || sbx_path_within(path, ws) ||
		    (kind == MNT_RO && sbx_policy_within(&p->eff.rw, path)))
			continue;
		if (from_baseline(o) && lstat(path, &st) < 0 && errno == ENOENT)
			continue;
		ns_add_path(p, kind, kind == MNT_RO, from_baseline(o) ? "--baseline" : "--policy-fd", path);
	}
}

/* Make the binds the effective policy's: drop the --ro/--rw roots it no
 * longer names (a clamp), add what it names that argv did not
 * (--policy-fd, a clamp). */
static void apply_roots(struct ns_plan *p)
{
	const char *ws = p->ops[p->ws].src;
	size_t k = 0;

	for (size_t i = 0; i < p->nops; i++) {
		struct mount_op *op = &p->ops[i];
		int keep = (op->kind != MNT_RO && op->kind != MNT_RW) ||
			   listed(op->kind == MNT_RO ? &p->eff.ro : &p->eff.rw, op->src);
		if (!keep) {
			if (op->fd >= 0)
				close(op->fd);
			continue;
		}
		if (i == p->ws)
			p->ws = k;
		p->ops[k++] = *op;
	}
	p->nops = k;
	add_missing(p, &p->eff.rw, MNT_RW, ws);
	add_missing(p, &p->eff.ro, MNT_RO, ws);
}

/* --bind/--ro-bind (and the fd forms) show a host path at another place:
 * what the command can reach there is the source, so under a baseline the
 * source is held to the roots like --rw/--ro are. A writable bind draws
 * from the effective writable roots; a read-only one from the readable
 * roots (a writable root is readable too). The destination is only a name
 * inside the sandbox and not a root of the policy. A clamp cannot move a
 * bind: it is refused either way. */
static void check_binds(const struct ns_plan *p)
{
	for (size_t i = 0; i < p->nops; i++) {
		const struct mount_op *op = &p->ops[i];
		char q[1100];
		int ok;

		if (op->kind != MNT_BIND)
			continue;
		ok = op->ro ? sbx_policy_within(&p->eff.ro, op->src) || sbx_policy_within(&p->eff.rw, op->src)
			    : sbx_policy_within(&p->eff.rw, op->src);
		if (ok)
			continue;
		sbx_quote(q, sizeof q, op->src, strlen(op->src), 256, 0);
		sbx_die(SBX_EXIT_POLICY, "policy refused: %s: %s is not within the effective %s roots",
			op->opt, q, op->ro ? "readable" : "writable");
	}
}

/* --runtime paths are read by the command like readable roots: with a
 * baseline they must lie within the effective ones. The default set
 * (system directories) is outside the policy, as it is for every
 * sandbox of this kind, and so is a --runtime path within it (a subset
 * of what the default would show). */
static void check_runtime(const struct ns_args *a, const struct ns_plan *p)
{
	char list[4096], *save = NULL, *e;

	if (!a->runtime || !strcmp(a->runtime, "none") || strlen(a->runtime) >= sizeof list)
		return;
	strcpy(list, a->runtime);
	for (e = strtok_r(list, ":", &save); e; e = strtok_r(NULL, ":", &save))
		if (!ns_runtime_default_holds(e) && !sbx_policy_within(&p->eff.ro, e) &&
		    !sbx_policy_within(&p->eff.rw, e)) {
			char q[1100];
			sbx_quote(q, sizeof q, e, strlen(e), 256, 0);
			sbx_die(SBX_EXIT_POLICY, "policy refused: --runtime: %s is not within the "
				"effective readable roots", q);
		}
}

void ns_apply_policy(const struct ns_args *a, struct ns_plan *p, int net_given)
{
	struct sbx_policy req;
	struct sbx_err e;
	const char *ws = p->ops[p->ws].src;

	if (!sbx_policy_opts_baseline(&a->pol) && a->pol.policy_fd < 0 && !a->print_policy)
		return;
	/* The request as argv makes it: --ro/--rw (and their fd forms) by
	 * their canonical paths, --deny-write, --net. The workspace, the
	 * defaults and --policy-fd are sbx_policy_effective's. Binds to a
	 * destination are checked against the result (check_binds). */
	sbx_policy_init(&req, "argv");
	for (size_t i = 0; i < p->nops; i++) {
		const struct mount_op *op = &p->ops[i];
		if ((op->kind == MNT_RO || op->kind == MNT_RW) &&
		    sbx_policy_add_root(&req, op->kind == MNT_RO ? &req.ro : &req.rw, op->src,
					op->opt, &e) < 0)
			sbx_err_die(&e);
	}
	for (size_t i = 0; i < p->ndeny; i++)
		if (sbx_policy_add_glob(&req, p->deny[i], "--deny-write", &e) < 0)
			sbx_err_die(&e);
	/* enum net_mode and the policy's network modes share their order
	 * and values (none < loopback < broker < host). */
	if (net_given && sbx_policy_set_int(&req, &req.net, (int)p->net, "--net", &e) < 0)
		sbx_err_die(&e);
	/* --no-host-ca is the request's "hostCA": false (hostca.c reads the
	 * effective value, whichever side said it). */
	if (a->no_host_ca && sbx_policy_set_int(&req, &req.host_ca, 0, "--no-host-ca", &e) < 0)
		sbx_err_die(&e);
	sbx_policy_effective(&a->pol, &req, SBX_PSCOPE_NS, ws, NS_PROG, a->status_fd, &p->eff);
	ns_shadow_plan(a, p, &req);
	sbx_policy_free(&req);
	p->pol_on = 1;

	if (p->eff.mode.set && p->eff.mode.v == SBX_PMODE_OFF)
		sbx_die(SBX_EXIT_POLICY, "policy refused: %s: mode \"off\" runs commands unconfined; "
			"sbx-ns only confines", p->eff.mode.origin ? p->eff.mode.origin : "policy");
	/* The network: what the merge left. Narrowed below broker, the
	 * broker's socket is not needed (and is closed); widened to broker
	 * by a policy, the socket must come from --broker-fd or --net
	 * broker:PATH (ns_check_net). The hosts a broker lets through are
	 * the broker's own --allow-host list: --print-policy shows the
	 * effective allowlist to start it with. */
	p->net = (enum net_mode)p->eff.net.v;
	if (p->net != NET_BROKER) {
		if (p->have_broker_fd)
			close(p->broker_fd);
		p->have_broker_fd = 0;
		p->broker_fd = -1;
		p->broker_path = NULL;
		p->transparent = 0;
	} else if (!p->port) {
		p->port = NS_BROKER_PORT;
	}
	/* deny-write: the union, replacing the defaults (they are in it) */
	free(p->deny);
	p->deny = sbx_need(calloc(p->eff.deny.n + 1, sizeof *p->deny));
	for (size_t i = 0; i < p->eff.deny.n; i++) {
		ns_check_glob(p->eff.deny.it[i].val);
		p->deny[i] = p->eff.deny.it[i].val;
	}
	p->ndeny = p->eff.deny.n;
	apply_roots(p);
	if (sbx_policy_opts_baseline(&a->pol)) {
		check_runtime(a, p);
		check_binds(p);
	}

	if (a->print_policy) {
		char *out = sbx_policy_to_json(&p->eff, SBX_PSCOPE_NS);
		if (!out || sbx_write_all(1, out, strlen(out)) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to write the policy");
		exit(SBX_EXIT_OK);
	}
}

/* Wait for the command as the sandbox's outer does: termination requests
 * are passed on, --timeout kills it. The signals are blocked (main). */
static int wait_command(const struct ns_args *a, pid_t pid, int *st, int *timed_out)
{
	sigset_t set;
	siginfo_t si;
	uint64_t end = sbx_now_ms() + a->timeout_ms;

	ns_wait_signals(&set);
	*timed_out = 0;
	for (;;) {
		int sig;

		if (waitpid(pid, st, WNOHANG) == pid)
			return 0;
		if (a->timeout_ms && !*timed_out) {
			uint64_t now = sbx_now_ms();
			struct timespec left;
			if (now >= end) {
				kill(pid, SIGKILL);
				*timed_out = 1;
				continue;
			}
			left.tv_sec = (time_t)((end - now) / 1000);
			left.tv_nsec = (long)((end - now) % 1000) * 1000000L;
			sig = sigtimedwait(&set, &si, &left);
		} else {
			sig = sigwaitinfo(&set, &si);
		}
		if (sig < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			kill(pid, SIGKILL);
			return -1;
		}
		if (sig != SIGCHLD)
			kill(pid, ns_parent_gone(a) ? SIGKILL : sig);
	}
}

/* In the command's process: its identity, the workspace, confine(), exec. */
noreturn void ns_host_exec(struct ns_run *r, void (*confine)(struct ns_run *))
{
	if (r->a->status_fd >= 0)
		close(r->a->status_fd);
	if (sbx_close_fds_except(NULL, 0) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to close inherited fds");
	if (r->p->root && (setgroups(0, NULL) < 0 || setresgid(r->p->gid, r->p->gid, r->p->gid) < 0 ||
			setresuid(r->p->uid, r->p->uid, r->p->uid) < 0))
		sbx_die_errno(SBX_EXIT_SYS, "unable to switch to uid %u", (unsigned)r->p->uid);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to set no_new_privs");
	if (chdir(r->p->ops[r->p->ws].src) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to enter the workspace %s", r->p->ops[r->p->ws].src);
	if (confine)
		confine(r);
	if (sigprocmask(SIG_SETMASK, &r->x.oldmask, NULL) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to restore the signal mask");
	if (r->a->allow.n)
		sbx_allowexec_exec(&r->a->allow, r->a->cmd, r->p->search, r->p->env);
	sbx_exec(r->a->cmd, r->p->search, r->p->env);
}

/* The command as a host process, where no namespaces can be had: as it
 * would have run inside (never as root, the environment it would have had,
 * the workspace as its directory), confine() (if any) applied last before
 * exec, the outer waiting and reporting the outcome like a sandboxed run;
 * tier names the isolation in the exit event (NULL: the unsafe fallback).
 * A confined command runs below a keeper (tierkeep.c), and nothing it
 * started outlives the run. */
noreturn void ns_host_run(struct ns_run *r, void (*confine)(struct ns_run *), const char *tier)
{
	struct sbx_json j;
	int st = 0, code, timed_out, repfd = -1;
	pid_t pid;

	ns_deny_forget(r);
	if (r->a->ready_fd >= 0)
		close(r->a->ready_fd);
	if (confine) {
		pid = ns_tier_spawn(r, confine, &repfd);
	} else {
		pid = fork();
		if (pid < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to fork");
		if (pid == 0)
			ns_host_exec(r, confine);
	}
	if (wait_command(r->a, pid, &st, &timed_out) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to wait for the command");
	if (confine) {
		/* The keeper reported the command's own status; if it did
		 * not (killed), its own is the outcome. What either left
		 * behind, reparented here, goes now. */
		int cst;
		if (read(repfd, &cst, sizeof cst) == (ssize_t)sizeof cst)
			st = cst;
		close(repfd);
		ns_tier_kill_all();
	}
	code = timed_out ? SBX_EXIT_TIMEOUT : sbx_wait_code(st);
	if (r->a->status_fd >= 0) {
		sbx_json_begin(&j, NS_PROG, "exit");
		sbx_json_int(&j, "code", code);
		if (timed_out)
			sbx_json_int(&j, "signal", SIGKILL);
		else if (WIFSIGNALED(st))
			sbx_json_int(&j, "signal", WTERMSIG(st));
		if (timed_out)
			sbx_json_bool(&j, "timeout", 1);
		if (tier)
			sbx_json_str(&j, "isolation", tier);
		else
			sbx_json_bool(&j, "unsafe_fallback", 1);
		sbx_json_write(&j, r->a->status_fd);
	}
	if (confine) {
		ns_tier_end(r);
		ns_tier_unrecord(r, r->x.tier_tmp);
	}
	exit(code);
}

/* No namespaces for this caller, and the policy allows running anyway:
 * say so loudly, then run the command with nothing of the sandbox around it. */
noreturn void ns_unsafe_fallback(struct ns_run *r, int err)
{
	sbx_policy_unsafe_notice(r->a->status_fd, NS_PROG, err);
	ns_host_run(r, NULL, NULL);
}

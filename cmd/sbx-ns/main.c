/* sbx-ns: run a command nobody trusts in fresh namespaces, on a fresh root,
 * without privileges, behind seccomp and Landlock.
 *
 *   sbx-ns (the caller's identity) --clone--> pid 1 of the sandbox (builds
 *   the root, reaps, forwards signals) --fork--> the command.
 *
 * This file is the outer process: the namespaces, the identity maps, the
 * wait and the outcome; its options are read in args.c. */
#include "ns.h"
#include "clock.h"
#include "mark.h"

#include "cmdpath.h"
#include "container.h"
#include "die.h"
#include "exec.h"
#include "exitcodes.h"
#include "status.h"
#include "fd.h"
#include "json.h"
#include "opts.h"
#include "parse.h"
#include "probe.h"
#include "procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif

/* What an administrator must change, naming only the sysctls this kernel
 * has. ENOSPC is a namespace count: the one clone makes a user, mount,
 * pid, ipc, uts, cgroup and network namespace, each counted against its
 * user.max_*_namespaces here and in every user namespace above; the one at
 * 0 is named, else the user namespaces' own. Anything else is one of the
 * settings that block user namespaces. */
static const char *userns_help(int e, char *buf, size_t n)
{
	static const char *const kinds[] = { "user", "mnt", "pid", "ipc", "uts", "cgroup", "net", NULL };
	struct stat st;
	char name[64];
	long max;

	if (e == ENOSPC) {
		sbx_probe_ns_limit(kinds, name, sizeof name, &max);
		if (max >= 0)
			snprintf(buf, n, "a namespace count limit is reached (%s=%ld here); an administrator "
				 "must raise it: sysctl -w %s=15000", name, max, name);
		else
			snprintf(buf, n, "a namespace count limit (%s) is reached; an administrator must raise "
				 "it: sysctl -w %s=15000", name, name);
		return buf;
	}
	if (e == EPERM && sbx_chrooted()) {
		snprintf(buf, n, "%s", sbx_fix_chroot);
		return buf;
	}
	snprintf(buf, n, "user namespaces are blocked for this caller; an administrator must allow them: "
		 "%suser.max_user_namespaces above 0, %sno container seccomp policy denying clone with "
		 "CLONE_NEWUSER",
		 stat("/proc/sys/kernel/unprivileged_userns_clone", &st) == 0
			 ? "sysctl kernel.unprivileged_userns_clone=1, " : "",
		 stat("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", &st) == 0
			 ? "kernel.apparmor_restrict_unprivileged_userns=0 (or an AppArmor profile for sbx-ns), " : "");
	return buf;
}

/* The errno text first, then what to change: "unable to STEP: why; help". */
noreturn static void die_userns(const char *step, const char *path)
{
	int e = errno;
	char ctr[320], help[512];

	char masked[256];

	/* docker's default masks /proc as well: name both fixes at once. */
	if ((e == EPERM || e == ENOSYS) && sbx_container(ctr, sizeof ctr) != SBX_CTR_NONE &&
	    sbx_proc_masked(masked, sizeof masked))
		sbx_die(SBX_EXIT_NOISOLATION, "unable to %s%s: %s (%s); %s; and, %s being masked, %s",
			step, path, strerror(e), ctr, sbx_fix_ctr_userns, masked, sbx_fix_ctr_proc);
	if ((e == EPERM || e == ENOSYS) && sbx_container(ctr, sizeof ctr) != SBX_CTR_NONE)
		sbx_die(SBX_EXIT_NOISOLATION, "unable to %s%s: %s (%s); %s", step, path, strerror(e), ctr,
			sbx_fix_ctr_userns);
	sbx_die(SBX_EXIT_NOISOLATION, "unable to %s%s: %s; %s", step, path, strerror(e),
		userns_help(e, help, sizeof help));
}

/* Root maps ids other than its own only with CAP_SETUID and CAP_SETGID
 * (a container run with --cap-drop=ALL and --user 0 has neither): that
 * refusal is the caller's identity, not a blocked user namespace. */
static int lacks_setid_caps(void)
{
	unsigned long long eff;

	return sbx_proc_status("CapEff", 16, &eff) == 0 &&
	       (eff & (1ULL << 6 | 1ULL << 7)) != (1ULL << 6 | 1ULL << 7);
}

noreturn static void die_map(const struct ns_plan *p, const char *path)
{
	int e = errno;
	char ctr[320];
	int in;

	if (p->root && e == EPERM && lacks_setid_caps()) {
		in = sbx_container(ctr, sizeof ctr) != SBX_CTR_NONE;
		sbx_die(SBX_EXIT_NOISOLATION, "unable to write %s: %s (root without CAP_SETUID and "
			"CAP_SETGID maps only its own id%s%s); run sbx-ns as an unprivileged user (in "
			"a container: the image's USER, or --user with a uid other than 0), or as root "
			"with CAP_SETUID and CAP_SETGID", path, strerror(e), in ? "; " : "", in ? ctr : "");
	}
	errno = e;
	die_userns("write ", path);
}

/* The maps of the sandbox's user namespace, written from outside: root maps
 * itself (to build the root with its own view of the host) and the
 * command's identity; anyone else maps only itself, as the kernel allows. */
static void write_maps(const struct ns_plan *p, pid_t pid)
{
	char path[64], map[128];

	if (!p->root) {
		snprintf(path, sizeof path, "/proc/%d/setgroups", (int)pid);
		if (sbx_write_file(path, "deny") < 0 && errno != ENOENT)
			die_userns("write ", path);
		snprintf(map, sizeof map, "%u %u 1\n", (unsigned)p->uid, (unsigned)p->uid);
	} else {
		snprintf(map, sizeof map, "0 0 1\n%u %u 1\n", (unsigned)p->uid, (unsigned)p->uid);
	}
	snprintf(path, sizeof path, "/proc/%d/uid_map", (int)pid);
	if (sbx_write_file(path, map) < 0)
		die_map(p, path);
	if (!p->root)
		snprintf(map, sizeof map, "%u %u 1\n", (unsigned)p->gid, (unsigned)p->gid);
	else
		snprintf(map, sizeof map, "0 0 1\n%u %u 1\n", (unsigned)p->gid, (unsigned)p->gid);
	snprintf(path, sizeof path, "/proc/%d/gid_map", (int)pid);
	if (sbx_write_file(path, map) < 0)
		die_map(p, path);
}

static void status_namespaces(const struct ns_args *a, pid_t pid)
{
	static const char *const ns[] = { "user", "mnt", "pid", "ipc", "uts", "net", "cgroup" };
	struct sbx_json j;
	char path[64];
	struct stat st;

	if (a->status_fd < 0)
		return;
	sbx_json_begin(&j, NS_PROG, "namespaces");
	sbx_json_int(&j, "pid", pid);
	sbx_json_open_obj(&j, "ns");
	for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
		snprintf(path, sizeof path, "/proc/%d/ns/%s", (int)pid, ns[i]);
		if (stat(path, &st) == 0)
			sbx_json_uint(&j, ns[i], (uint64_t)st.st_ino);
		else
			sbx_json_null(&j, ns[i]);
	}
	sbx_json_close_obj(&j);
	sbx_json_write(&j, a->status_fd);
}

static void status_started(const struct ns_run *r, const struct ns_report *rep)
{
	struct sbx_json j;

	if (r->a->status_fd < 0)
		return;
	sbx_json_begin(&j, NS_PROG, "started");
	if (rep->value > 0)
		sbx_json_int(&j, "landlock", rep->value);
	else
		sbx_json_str(&j, "landlock", "none");
	sbx_json_bool(&j, "seccomp", 1);
	ns_net_status(&j, r->p, "handed to the broker");
	if (r->p->net == NET_BROKER)
		sbx_json_int(&j, "broker_pid", r->x.broker_pid);
	sbx_json_bool(&j, "hidepid", rep->extra);
	sbx_json_str(&j, "mounts", sbx_mnt_api_name(r->p->mnt_api));
	sbx_json_str(&j, "userns", "blocked");
	sbx_json_uint(&j, "uid", r->p->uid);
	sbx_json_uint(&j, "gid", r->p->gid);
	if (ns_grant_name(r->p))
		sbx_json_str(&j, "grant", ns_grant_name(r->p));
	sbx_json_write(&j, r->a->status_fd);
}

/* The outcome: the command's code, 128+N for a signal; if the sandbox died
 * before the command started, its own code (the message is already out). */
static int finish(const struct ns_args *a, int started, int have_exit, int cmd_status, int init_status,
		  int timed_out, int deny_live)
{
	struct sbx_json j;
	int code, sig = 0;

	if (timed_out) {
		code = SBX_EXIT_TIMEOUT;
		sig = SIGKILL;
	} else if (have_exit) {
		code = sbx_wait_code(cmd_status);
		if (WIFSIGNALED(cmd_status))
			sig = WTERMSIG(cmd_status);
	} else {
		code = sbx_wait_code(init_status);
		if (WIFSIGNALED(init_status))
			sig = WTERMSIG(init_status);
	}
	/* A protected path the end check left live fails the run, whatever
	 * the command's own code. */
	if (deny_live)
		code = SBX_EXIT_POLICY;
	if (a->status_fd >= 0) {
		sbx_json_begin(&j, NS_PROG, "exit");
		sbx_json_int(&j, "code", code);
		if (sig)
			sbx_json_int(&j, "signal", sig);
		if (!started)
			sbx_json_str(&j, "stage", "setup");
		if (timed_out)
			sbx_json_bool(&j, "timeout", 1);
		if (deny_live)
			sbx_json_str(&j, "error", "deny-write: a protected path is live under its real name");
		sbx_json_write(&j, a->status_fd);
	}
	return code;
}

/* Forward termination requests to pid 1 (which passes them to the command)
 * and collect the reports until pid 1 is gone. --timeout kills pid 1 (and
 * with it every process of the sandbox) when the time is up. */
static int wait_sandbox(struct ns_run *r, pid_t pid)
{
	sigset_t set;
	struct signalfd_siginfo si;
	struct pollfd pf[4];
	struct ns_report rep;
	int sfd, started = 0, have_exit = 0, cmd_status = 0, st = 0, report_open = 1, timed_out = 0, deny_live;
	uint64_t deadline = r->a->timeout_ms ? sbx_now_ms() + r->a->timeout_ms : 0;

	ns_wait_signals(&set);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0) {
		kill(pid, SIGKILL);
		sbx_die_errno(SBX_EXIT_SYS, "unable to create signalfd");
	}
	for (;;) {
		pf[0].fd = sfd;
		pf[0].events = POLLIN;
		pf[1].fd = report_open ? r->x.report_fd : -1;
		pf[1].events = POLLIN;
		int wait_ms = 1000, rc; /* the deny-write record's heartbeat */
		ns_deny_heartbeat(r);
		if (deadline && !timed_out) {
			uint64_t now = sbx_now_ms();
			if (now >= deadline) {
				kill(pid, SIGKILL);
				timed_out = 1;
			} else {
				wait_ms = deadline - now > 1000 ? 1000 : (int)(deadline - now);
			}
		}
		/* the supervisor's socket until the listener came, then the listener */
		pf[2].fd = -1;
		pf[2].revents = 0;
		ns_notify_fds(r, &pf[2], 1);
		wait_ms = ns_net_tick(r, wait_ms);
		pf[3].fd = ns_net_fd(r);
		pf[3].events = POLLIN;
		pf[3].revents = 0;
		rc = poll(pf, 4, wait_ms);
		if (rc < 0) {
			if (errno == EINTR)
				continue;
			kill(pid, SIGKILL);
			sbx_die_errno(SBX_EXIT_SYS, "unable to poll");
		}
		if (pf[1].revents) {
			ssize_t n = read(r->x.report_fd, &rep, sizeof rep);
			if (n == (ssize_t)sizeof rep && rep.kind == 'S') {
				SBX_MARK("started");
				started = 1;
				status_started(r, &rep);
			} else if (n == (ssize_t)sizeof rep && rep.kind == 'X') {
				SBX_MARK("exited");
				have_exit = 1;
				cmd_status = rep.value;
			} else if (n == (ssize_t)sizeof rep && rep.kind == 'F') {
				r->x.tier_proc = rep.value;
			} else if (n <= 0 && !(n < 0 && errno == EINTR)) {
				report_open = 0;
			}
		}
		if (pf[2].revents)
			ns_notify_handle(r, pf[2].fd, pf[2].revents);
		if (pf[3].revents)
			ns_net_handle(r);
		if (!(pf[0].revents & POLLIN))
			continue;
		if (read(sfd, &si, sizeof si) != (ssize_t)sizeof si)
			continue;
		if (si.ssi_signo != SIGCHLD) {
			kill(pid, ns_parent_gone(r->a) ? SIGKILL : (int)si.ssi_signo);
			continue;
		}
		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
	}
	SBX_MARK("reaped");
	/* pid 1 wrote its report before exiting: drain it. */
	while (report_open) {
		ssize_t n = read(r->x.report_fd, &rep, sizeof rep);
		if (n != (ssize_t)sizeof rep)
			break;
		if (rep.kind == 'S') {
			started = 1;
			status_started(r, &rep);
		} else if (rep.kind == 'X') {
			SBX_MARK("exited");
			have_exit = 1;
			cmd_status = rep.value;
		} else if (rep.kind == 'F') {
			r->x.tier_proc = rep.value;
		}
	}
	close(sfd);
	ns_notify_end(r);
	SBX_MARK("notify-end");
	deny_live = ns_deny_end(r) < 0;
	SBX_MARK("deny-end");
	ns_net_finish(r);
	ns_observe_finish(r);
	/* pid 1 found no fresh /proc and the baseline allows the tier: the
	 * caller takes it (the command never ran). */
	if (r->x.tier_proc && !started && !timed_out)
		return -1;
	return finish(r->a, started, have_exit, cmd_status, st, timed_out, deny_live);
}

/* The OOM killer of a memory limit picks the largest process; a command
 * that keeps its memory in a tmpfs can make that the tiny outer, whose end
 * check would then be lost. Root exempts the outer (pid 1 was cloned
 * before, and keeps the caller's value); others (and a root without
 * CAP_SYS_RESOURCE) cannot lower it, and a
 * killed outer's record is taken over by the next run or --recover. */
static void outer_oom_exempt(const struct ns_plan *p)
{
	int fd;

	if (!p->root || (fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC)) < 0)
		return;
	if (write(fd, "-1000", 5) != 5 && errno != EACCES && errno != EPERM)
		sbx_warn_errno("unable to exempt the outer process from the OOM killer");
	close(fd);
}

/* --recover: what killed runs on this workspace left is made inert (the
 * check their own end would have done), and nothing runs. A runtime calls
 * it after a crash took the whole chain down. */
noreturn static void recover_only(struct ns_run *r, struct ns_plan *p)
{
	struct sbx_json j;

	p->caller_uid = getuid();
	p->caller_gid = getgid();
	if (geteuid() != p->caller_uid || getegid() != p->caller_gid)
		sbx_die(SBX_EXIT_POLICY, "refusing to run set-user-ID or set-group-ID");
	p->root = p->caller_uid == 0;
	ns_workspace_fd(p);
	ns_deny_recover(r);
	if (r->a->status_fd >= 0) {
		sbx_json_begin(&j, NS_PROG, "exit");
		sbx_json_int(&j, "code", 0);
		sbx_json_bool(&j, "recover", 1);
		sbx_json_write(&j, r->a->status_fd);
	}
	exit(SBX_EXIT_OK);
}

/* A change set needs the sandbox's own mount namespace: without one
 * (the Landlock tier, the unsafe fallback) the command would write the
 * real workspace. */
noreturn static void no_tier(const struct ns_plan *p, int e)
{
	sbx_die(SBX_EXIT_NOISOLATION, "--changes: unable to use change set %s: no mount namespace "
		"for the sandbox (%s), and the Landlock tier would write the real workspace", p->chg, strerror(e));
}

int main(int argc, char **argv)
{
	struct ns_args args;
	struct ns_plan plan;
	struct ns_run r;
	sigset_t block;
	int syncp[2], repp[2], code, net_given;
	pid_t ppid = getppid(), pid;

	SBX_MARK("exec");
	sbx_setprog(NS_PROG);
	sbx_opt_version(argc, argv);
	/* A client of a living sandbox: a program of its own (join.c). */
	if (argc > 1 && (!strcmp(argv[1], "--join") || !strncmp(argv[1], "--join=", 7)))
		ns_join_main(argc, argv);
	memset(&args, 0, sizeof args);
	memset(&plan, 0, sizeof plan);
	memset(&r, 0, sizeof r);
	r.a = &args;
	r.p = &plan;
	args.status_fd = args.ready_fd = args.cgroup_fd = plan.wsfd = plan.grant_fd = -1;
	plan.net = NET_NONE;
	plan.broker_fd = -1;
	plan.chg_fd = plan.chg_upper = plan.chg_work = plan.chg_lock = -1;
	r.x.sandbox_root = -1;
	sbx_policy_opts_init(&args.pol);
	net_given = ns_parse(&args, &plan, argc, argv);
	if (args.recover)
		recover_only(&r, &plan);
	ns_check_identity(r.a, &plan);
	SBX_MARK("parse");

	/* Killing whatever started sbx-ns kills the sandbox: SIGTERM, which
	 * ends it before the record exists and, once the sandbox does, is
	 * taken as the parent's end (ns_parent_gone): the sandbox is killed,
	 * its end check runs and the record goes. */
	args.parent = ppid;
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to set the parent-death signal");
	if (getppid() != ppid)
		sbx_die(SBX_EXIT_LOST, "unable to start: the parent process is gone");

	/* The host's CA paths are held to the baseline's roots (hostca.c). */
	args.pol.keep_base = &plan.base;
	ns_apply_policy(r.a, &plan, net_given);
	ns_add_runtime(r.a, &plan);
	ns_drop_ro_in_ws(r.a, &plan);
	ns_check_binds(r.a, &plan);
	ns_plan_host_ca(r.a, &plan);
	ns_check_ops(&plan);
	ns_check_launcher(&plan);
	ns_check_net(r.a, &plan);
	if (sbx_probe_landlock(&plan.landlock_abi) != 0)
		plan.landlock_abi = 0;
	plan.mnt_api = sbx_mnt_probe();
	if (r.a->require_landlock && plan.landlock_abi <= 0)
		sbx_die(SBX_EXIT_NOISOLATION, "unable to use Landlock: this kernel does not offer it (--require-landlock)");
	ns_check_policy(r.a, &plan);
	ns_check_ws_writable(r.a, &plan);
	plan.chg = args.changes;
	ns_changes_check(r.a, &plan);
	ns_plan_scratch(r.a, &plan);
	SBX_MARK("policy");
	/* --dry-run: no takeover of earlier runs' records (it changes the
	 * host), and the plan is printed before anything is prepared. */
	if (!r.a->dry_run) {
		ns_workspace_fd(&plan);
		ns_deny_recover(&r);
	}
	SBX_MARK("recover");
	ns_plan_deny(&plan, ns_deny_prev(&r));
	SBX_MARK("deny-walk");
	ns_plan_root(r.a, &plan);
	ns_plan_hint(r.a, &plan);
	/* The plan is final: a grant is checked against it (grant.c). */
	if (r.a->dry_run || plan.grant_key)
		ns_plan_program(r.a, &plan);
	ns_check_grant(r.a, &plan);
	ns_observe_check(r.a, &plan);
	ns_serve_check(r.a, &plan);
	ns_cg_check(r.a, &plan);
	if (r.a->dry_run)
		ns_dry_run(&r);
	SBX_MARK("plan");

	ns_net_prepare(&r);
	ns_notify_prepare(&r);
	ns_pty_prepare(&r);
	if (pipe2(syncp, O_CLOEXEC) < 0 || pipe2(repp, O_CLOEXEC) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create pipes");
	sigemptyset(&block);
	sigaddset(&block, SIGCHLD);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGQUIT);
	signal(SIGCHLD, SIG_DFL);
	if (sigprocmask(SIG_BLOCK, &block, &r.x.oldmask) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to block signals");
	ns_deny_record(&r);
	ns_serve_prepare(&r);
	ns_observe_start(&r);
	SBX_MARK("prepare");

	/* One clone: every namespace at once; the child is pid 1. Raw clone
	 * (fork semantics) so nothing in libc runs twice. */
	pid = (pid_t)syscall(SYS_clone, (unsigned long)(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID |
			     CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP | SIGCHLD |
			     (r.p->net == NET_HOST ? 0 : CLONE_NEWNET)),
			     0, 0, 0, 0);
	if (pid < 0) {
		/* Only here, where the namespaces the sandbox is made of cannot
		 * be had, and only if the effective policy has both halves of
		 * the unsafe fallback; anything else fails closed. */
		int e = errno, nons = e == EPERM || e == ENOSPC || e == EUSERS || e == EINVAL || e == EACCES;
		/* A living sandbox is namespaces or nothing. */
		if (r.a->serve) {
			ns_serve_cleanup(&r);
			ns_deny_forget(&r);
			errno = e;
			die_userns("create namespaces", "");
		}
		if (r.p->chg && nons)
			no_tier(r.p, e);
		if (r.p->pol_on && sbx_policy_unsafe_fallback(&r.p->eff) && nons) {
			ns_grant_no_fallback(r.p, "the unsafe fallback", e);
			ns_observe_no_fallback(&r, "the unsafe fallback", e);
			ns_unsafe_fallback(&r, e);
		}
		if (ns_tier_allowed(r.p) && nons) {
			ns_grant_no_fallback(r.p, "the Landlock tier", e);
			ns_observe_no_fallback(&r, "the Landlock tier", e);
			ns_landlock_tier(&r, e);
		}
		errno = e;
		die_userns("create namespaces", "");
	}
	if (pid == 0) {
		sbx_status_disown(); /* the outer reports pid 1's end */
		close(syncp[1]);
		close(repp[0]);
		r.x.sync_fd = syncp[0];
		r.x.report_fd = repp[1];
		if (r.x.pty_sock[0] >= 0)
			close(r.x.pty_sock[0]);
		if (r.x.ctl_out >= 0)
			close(r.x.ctl_out);
		ns_notify_inside(&r);
		ns_init_main(&r);
	}
	SBX_MARK("clone");
	close(syncp[0]);
	close(repp[1]);
	if (r.x.ctl_fd >= 0)
		close(r.x.ctl_fd);
	r.x.report_fd = repp[0];
	ns_notify_outer(&r);
	/* A status reader that goes away must not take the sandbox with it
	 * (the sandbox was created before this, with the caller's disposition). */
	signal(SIGPIPE, SIG_IGN);
	write_maps(r.p, pid);
	SBX_MARK("maps");
	if (ns_cg_setup(&r, pid) < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		ns_cg_teardown(&r);
		ns_serve_cleanup(&r);
		sbx_die(SBX_EXIT_SYS, "unable to set up the commands' cgroups under --cgroup-fd %d", r.a->cgroup_fd);
	}
	ns_deny_started(&r, pid);
	outer_oom_exempt(r.p);
	status_namespaces(r.a, pid);
	/* Go. The outer keeps its end open for life: the sandbox sees EOF
	 * (and has its parent-death signal) when the outer is gone. */
	if (write(syncp[1], "g", 1) != 1) {
		kill(pid, SIGKILL);
		sbx_die_errno(SBX_EXIT_SYS, "unable to start the sandbox");
	}
	SBX_MARK("go");
	ns_net_outer(&r, pid);
	ns_pty_outer(&r);
	if (r.a->serve) {
		code = ns_serve_outer(&r, pid);
		ns_net_end(&r);
		ns_changes_end(r.p);
		return code;
	}
	if (r.a->ready_fd >= 0)
		close(r.a->ready_fd);
	code = wait_sandbox(&r, pid);
	ns_pty_outer_end(&r);
	ns_net_end(&r);
	if (code >= 0)
		ns_observe_end(&r, code);
	ns_changes_end(r.p);
	SBX_MARK("end");
	if (code < 0 && r.p->chg)
		no_tier(r.p, r.x.tier_proc);
	if (code < 0) {
		ns_grant_no_fallback(r.p, "the Landlock tier", r.x.tier_proc);
		ns_observe_no_fallback(&r, "the Landlock tier", r.x.tier_proc);
		ns_landlock_tier(&r, r.x.tier_proc);
	}
	return code;
}

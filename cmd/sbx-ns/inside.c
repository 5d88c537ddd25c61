/* Inside the namespaces: pid 1 of the sandbox builds the root, gives up its
 * privileges and forks the command; then it only reaps, forwards
 * SIGTERM/SIGINT/SIGHUP/SIGQUIT to the command, and reports the command's
 * status to the outer process.
 *
 * The command's process takes the last steps: a nested user namespace of
 * its own (after pid 1 limited this namespace's children to one per user,
 * so no further one can be made; proved by trying), no capabilities, no new
 * privileges, Landlock, a clean environment, only stdio open, the
 * parent-death signal, and the seccomp filter last. */
#include "ns.h"

#include "die.h"
#include "exec.h"
#include "exitcodes.h"
#include "fd.h"
#include "mark.h"
#include "parse.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* A new user namespace for the command alone, mapping only its identity.
 * Its parent allows one child namespace per user, so the kernel refuses
 * any further one whatever the filter does. */
static void nest_userns(void)
{
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();

	if (unshare(CLONE_NEWUSER) < 0)
		sbx_die_errno(SBX_EXIT_NOISOLATION, "unable to create the command's user namespace");
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if (sbx_write_file("/proc/self/uid_map", map) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to write /proc/self/uid_map");
	if (sbx_write_file("/proc/self/setgroups", "deny") < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to write /proc/self/setgroups");
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	if (sbx_write_file("/proc/self/gid_map", map) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to write /proc/self/gid_map");
	if (unshare(CLONE_NEWUSER) == 0)
		sbx_die(SBX_EXIT_NOISOLATION, "unable to block user namespaces: a nested one could still be created");
}

/* Built by the outer process before anything is set up (a grant binds it);
 * the sandbox inherits it as memory. */
/* The value NAME will have from --setenv or --keep-env, or NULL. */
static const char *given(const struct ns_args *a, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; i < a->nsetenv; i++)
		if (!strncmp(a->setenv[i], name, len) && a->setenv[i][len] == '=')
			return a->setenv[i] + len + 1;
	for (size_t i = 0; i < a->nkeepenv; i++)
		if (!strcmp(a->keepenv[i], name) && getenv(name))
			return getenv(name);
	return NULL;
}

char **ns_build_env(const struct ns_args *a, const struct ns_plan *p, const char **path)
{
	size_t n = 5 + a->nsetenv + a->nkeepenv + p->nca + 5 + 1, k = 0;
	char **env = sbx_need(calloc(n, sizeof *env));
	const char *home = given(a, "HOME") ? given(a, "HOME") : a->home ? a->home : NS_HOME;
	char *cache = sbx_needf("%s/.cache", home), *config = sbx_needf("%s/.config", home);

	const char *defaults[5][2] = {
		{ "PATH", a->cmdpath ? a->cmdpath : "/usr/local/bin:/usr/bin:/bin" }, { "HOME", home },
		{ "TMPDIR", "/tmp" }, { "XDG_CACHE_HOME", cache }, { "XDG_CONFIG_HOME", config },
	};
	for (int d = 0; d < 5; d++) {
		if (given(a, defaults[d][0]))
			continue;
		env[k++] = sbx_needf("%s=%s", defaults[d][0], defaults[d][1]);
	}
	free(cache);
	free(config);
	for (size_t i = 0; i < a->nkeepenv; i++) {
		const char *v = getenv(a->keepenv[i]);
		/* a CA variable hostca.c kept comes below, with the path it bound */
		if (v && !ns_host_ca_kept(p, a->keepenv[i]))
			env[k++] = sbx_needf("%s=%s", a->keepenv[i], v);
	}
	for (size_t i = 0; i < p->nca; i++)
		env[k++] = p->ca_env[i];
	for (size_t i = 0; i < a->nsetenv; i++)
		env[k++] = (char *)a->setenv[i];
	env[k] = NULL;
	env = ns_net_env(p, env, &k);
	*path = a->cmdpath ? a->cmdpath : "/usr/local/bin:/usr/bin:/bin";
	for (size_t i = 0; i < k; i++)
		if (!strncmp(env[i], "PATH=", 5))
			*path = env[i] + 5;
	return env;
}

/* NAME=VALUE a request may add to the command's environment: the same
 * names --setenv takes, checked by the same rules (why not, or NULL). */
const char *ns_env_refused(const struct ns_args *a, const struct ns_plan *p, const char *nameval)
{
	const char *eq = strchr(nameval, '='), *why;
	size_t len;

	if (!eq)
		return "missing '='";
	len = (size_t)(eq - nameval);
	if ((why = sbx_env_name_invalid(nameval, len)))
		return why;
	if (p->net == NET_BROKER && ns_net_reserved_env(nameval, len))
		return "set by --net broker";
	if (a->cmdpath && len == 4 && !strncmp(nameval, "PATH", 4))
		return "set by --command-path";
	return NULL;
}

/* path (relative to the command's cwd) opened onto fd: 0 or -1, said. */
static int redirect(const char *path, int fd)
{
	int f = open(path, (fd ? O_WRONLY | O_CREAT | O_APPEND : O_RDONLY) | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0644);

	if (f < 0 || dup2(f, fd) < 0) {
		sbx_warn_errno("unable to open %s for the job's %s", path, fd == 0 ? "stdin" : fd == 1 ? "stdout" : "stderr");
		return -1;
	}
	if (f != fd)
		close(f);
	return 0;
}

/* The command's process, forked by pid 1: a one-shot run's command, or
 * one a client of a living sandbox asked for (c). Both take the same
 * steps in the same order; only the one-shot command reports to the
 * outer, writes the ready fd and may run a granted program. */
noreturn void ns_command(struct ns_run *r, const struct ns_cmd *c, int hidepid)
{
	struct ns_report rep = { 'S', 0, hidepid };
	int keep[3], nkeep = 0, prog = -1;
	const char *cwd = c->cwd ? c->cwd : r->p->ops[r->p->ws].dest;

	SBX_MARK("c-forked");
	if (setsid() < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to start a new session");
	if (c->tty >= 0 && ns_pty_attach(c->tty) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to make the pty the command's terminal");
	/* pid 1 is not dumpable; the command's own /proc/self files must be
	 * its own (exec makes it dumpable anyway). */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to set the dumpable flag");
	if (ns_drop_bounding() < 0 || ns_clear_caps() < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to drop capabilities");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to set no_new_privs");
	if (chdir(cwd) < 0)
		sbx_die_errno(c->cwd ? SBX_EXIT_USAGE : SBX_EXIT_SYS, "unable to enter %s%s",
			      c->cwd ? "--cwd " : "the workspace ", cwd);
	/* A living sandbox's pid 1 took the Landlock domain for all its
	 * commands (serve1.c): one of its own would hide each command from
	 * the next (no signal, no /proc entry across sibling domains). */
	SBX_MARK("c-caps");
	if (!r->a->serve)
		rep.value = ns_landlock(r->p, &r->x);
	SBX_MARK("c-landlock");
	/* A detached job's output files, opened as the command under Landlock. */
	if (c->out && (redirect(c->out, 1) < 0 || redirect(c->err, 2) < 0 || redirect("/dev/null", 0) < 0))
		_exit(SBX_EXIT_SYS);
	if (c->oneshot) {
		keep[nkeep++] = r->x.report_fd;
		if (r->a->ready_fd >= 0)
			keep[nkeep++] = r->a->ready_fd;
	}
	if (r->x.notify_sock[1] >= 0)
		keep[nkeep++] = r->x.notify_sock[1];
	if (sbx_close_fds_except(keep, (size_t)nkeep) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to close inherited fds");
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to set the parent-death signal");
	if (getppid() != 1)
		_exit(SBX_EXIT_LOST);
	if (sigprocmask(SIG_SETMASK, &r->x.oldmask, NULL) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to restore the signal mask");
	SBX_MARK("c-fds");
	ns_load_filter(r);
	SBX_MARK("c-seccomp");
	prog = ns_grant_open(r, c);
	if (c->oneshot) {
		if (write(r->x.report_fd, &rep, sizeof rep) != (ssize_t)sizeof rep)
			_exit(SBX_EXIT_LOST);
		close(r->x.report_fd);
		sbx_ready_fd(r->a->ready_fd);
		ns_explain_exec(r->a, r->p);
	}
	SBX_MARK("c-exec");
	ns_grant_exec(c, prog);
	if (r->a->allow.n)
		sbx_allowexec_exec(&r->a->allow, c->argv, c->search, c->env);
	sbx_exec(c->argv, c->search, c->env);
}

static void drop_init(const struct ns_plan *p)
{
	if (ns_drop_bounding() < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to drop the capability bounding set");
	if (p->root) {
		if (setgroups(0, NULL) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to clear supplementary groups");
		if (setresgid(p->gid, p->gid, p->gid) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to set gid %u", (unsigned)p->gid);
		if (setresuid(p->uid, p->uid, p->uid) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to set uid %u", (unsigned)p->uid);
	}
	if (ns_clear_caps() < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to drop capabilities");
	/* A change of credentials resets both: set them after it. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to protect the sandbox's pid 1");
}

/* pid 1 moves into the nested user namespace itself, once: every command
 * it forks is born there, and the limit of one namespace per user in the
 * sandbox's own namespace is then used up, so no command (one of a
 * living sandbox's many, or a one-shot run's) can make another. */
static void nest_init(void)
{
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to set the dumpable flag");
	nest_userns();
	/* A new user namespace gives a full bounding set again. */
	if (ns_drop_bounding() < 0 || ns_clear_caps() < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to drop capabilities");
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to protect the sandbox's pid 1");
}

void ns_init_main(struct ns_run *r)
{
	struct signalfd_siginfo si;
	struct pollfd pf;
	sigset_t set;
	int hidepid = 0, sfd, st, master, slave = -1;
	pid_t cmd, p;
	char c;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* Wait for the maps; EOF means the outer process is gone. */
	if (read(r->x.sync_fd, &c, 1) != 1)
		_exit(SBX_EXIT_LOST);
	SBX_MARK("p1-go");
	ns_build_root(r->p, &r->x, &hidepid);
	SBX_MARK("p1-pivot");
	/* Through the sandbox's own fresh /proc: a container's /proc/sys is
	 * read-only, this one is not, and the limit is this namespace's. */
	if (sbx_write_file("/proc/sys/user/max_user_namespaces", "1") < 0)
		sbx_die_errno(SBX_EXIT_NOISOLATION, "unable to limit user namespaces (/proc/sys/user/max_user_namespaces)");
	ns_net_inside(r);
	SBX_MARK("p1-limit");
	drop_init(r->p);
	nest_init();
	SBX_MARK("p1-nest");
	pf.fd = r->x.sync_fd;
	pf.events = POLLIN;
	if (poll(&pf, 1, 0) != 0)
		_exit(SBX_EXIT_LOST);

	if (r->a->serve)
		ns_serve_inside(r, hidepid);
	master = ns_pty_inside(r, &slave);
	cmd = fork();
	if (cmd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to fork the command");
	if (cmd == 0) {
		struct ns_cmd one = { .argv = r->a->cmd, .env = r->p->env, .search = r->p->search,
				      .tty = slave, .oneshot = 1 };
		if (master >= 0)
			close(master);
		if (r->p->grant_checked && r->p->grant_kind == SBX_GRANT_KIND_PLAN)
			one.prog = &r->p->prog;
		ns_command(r, &one, hidepid);
	}
	SBX_MARK("p1-forked");
	if (master >= 0) {
		close(slave);
		ns_pty_send(r, master);
	}

	if (sbx_close_fds_except(&r->x.report_fd, 1) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to close fds");
	ns_wait_signals(&set);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0) {
		kill(cmd, SIGKILL);
		sbx_die_errno(SBX_EXIT_SYS, "unable to create signalfd");
	}
	for (;;) {
		if (read(sfd, &si, sizeof si) != (ssize_t)sizeof si)
			continue;
		if (si.ssi_signo != SIGCHLD) {
			kill(cmd, (int)si.ssi_signo);
			continue;
		}
		while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
			if (p == cmd) {
				struct ns_report rep = { 'X', st, 0 };
				if (write(r->x.report_fd, &rep, sizeof rep) < 0)
					_exit(SBX_EXIT_LOST);
				_exit(sbx_wait_code(st) & 0xff);
			}
		}
	}
}

/* The process that started sbx-ns is gone: its parent-death signal
 * (main) came, or the signal came after it; the sandbox is killed then,
 * whatever the command does with a signal. */
int ns_parent_gone(const struct ns_args *a)
{
	return a->parent > 0 && getppid() != a->parent;
}

/* What a waiting sbx-ns process handles: its child's end, and the signals
 * it forwards (or acts on) instead of dying of them. */
void ns_wait_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGCHLD);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGQUIT);
}

/* sbx-ns --join PATH: the client of a living sandbox (serve.c). It asks
 * the serving sbx-ns to run a command and passes it its own stdin, stdout
 * and stderr (or, with --pty or from a terminal, relays a pty of the
 * sandbox's own: the host's terminal never enters the sandbox); forwards
 * SIGINT, SIGTERM, SIGHUP and SIGQUIT to the command; and exits with the
 * command's code (sbx's table where sbx fails, 103 when the sandbox is
 * lost). With --grant-fd FD it sends the command's grant and its stdin,
 * read whole into a sealed file in memory (the sandbox hashes what the
 * command will read); --dry-run prints the command's plan in that sandbox,
 * what a grant for it is made from (sbx-check grant --plan). The other
 * verbs list, wait for and signal jobs, connect to a port inside, and
 * stop the sandbox. */
#include "ns.h"

#include "die.h"
#include "exec.h"
#include "exitcodes.h"
#include "fd.h"
#include "fdpass.h"
#include "json.h"
#include "mark.h"
#include "opts.h"
#include "parse.h"
#include "status.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

enum {
	J_JOIN = 1, J_CWD, J_SETENV, J_TIMEOUT, J_PTY, J_DETACH, J_STDOUT, J_STDERR, J_JOBS, J_WAIT,
	J_KILL, J_SIGNAL, J_STOP, J_CONNECT, J_CONNECT_FD, J_STATUS_FD, J_HELP, J_MEMORY, J_PIDS, J_CPU,
	J_GRANT_FD, J_DRY_RUN,
};

static const struct sbx_opt options[] = {
	{ "join",       SBX_ARG,   SBX_ONCE, J_JOIN },
	{ "cwd",        SBX_ARG,   SBX_ONCE, J_CWD },
	{ "setenv",     SBX_ARG,   SBX_MANY, J_SETENV },
	{ "timeout",    SBX_ARG,   SBX_ONCE, J_TIMEOUT },
	{ "pty",        SBX_NOARG, SBX_ONCE, J_PTY },
	{ "detach",     SBX_NOARG, SBX_ONCE, J_DETACH },
	{ "stdout",     SBX_ARG,   SBX_ONCE, J_STDOUT },
	{ "stderr",     SBX_ARG,   SBX_ONCE, J_STDERR },
	{ "jobs",       SBX_NOARG, SBX_ONCE, J_JOBS },
	{ "wait-job",   SBX_ARG,   SBX_ONCE, J_WAIT },
	{ "kill-job",   SBX_ARG,   SBX_ONCE, J_KILL },
	{ "signal",     SBX_ARG,   SBX_ONCE, J_SIGNAL },
	{ "stop",       SBX_NOARG, SBX_ONCE, J_STOP },
	{ "connect",    SBX_ARG,   SBX_ONCE, J_CONNECT },
	{ "connect-fd", SBX_ARG,   SBX_ONCE, J_CONNECT_FD },
	{ "status-fd",  SBX_ARG,   SBX_ONCE, J_STATUS_FD },
	{ "help",       SBX_NOARG, SBX_ONCE, J_HELP },
	{ "memory",     SBX_ARG,   SBX_ONCE, J_MEMORY },
	{ "pids",       SBX_ARG,   SBX_ONCE, J_PIDS },
	{ "cpu",        SBX_ARG,   SBX_ONCE, J_CPU },
	{ "grant-fd",   SBX_ARG,   SBX_ONCE, J_GRANT_FD },
	{ "dry-run",    SBX_NOARG, SBX_ONCE, J_DRY_RUN },
	{ 0, 0, 0, 0 }
};

/* The client's options, also the last group of sbx-ns --help. */
const char ns_join_options[] =
	"Commands of a living sandbox (sbx-ns --join PATH ...):\n"
	"  --join PATH            the living sandbox's control socket (first argument)\n"
	"  --cwd DIR              the command's directory; default: the workspace\n"
	"  --setenv NAME=VALUE    add or replace a variable, for this command only\n"
	"  --timeout SEC          kill the command's process group after SEC (104)\n"
	"  --memory SIZE          a cgroup of its own with this memory.max, no swap\n"
	"  --pids N               a cgroup of its own with this pids.max\n"
	"  --cpu PCT              a cgroup of its own with this share of one core\n"
	"  --pty                  a terminal of the sandbox's own (implied from one)\n"
	"  --grant-fd FD          the command's grant, read from FD\n"
	"  --dry-run              print the command's plan (what a grant is made of)\n"
	"  --detach               run it as a job that outlives this client; print its id\n"
	"  --stdout FILE          with --detach: the job's stdout, inside the sandbox\n"
	"  --stderr FILE          with --detach: the job's stderr, inside the sandbox\n"
	"  --jobs                 list the jobs: id, state, code, argv\n"
	"  --wait-job ID          wait for job ID to end; exit with its code\n"
	"  --kill-job ID          signal job ID's process group (SIGTERM)\n"
	"  --signal N             with --kill-job: this signal number instead\n"
	"  --stop                 stop the sandbox: every command ends, PATH goes\n"
	"  --connect PORT         run HOSTPROG with a connection to 127.0.0.1:PORT inside\n"
	"  --connect-fd N         with --connect: HOSTPROG's fd for it; default: 3\n"
	"  --status-fd FD         write the outcome as a JSON line to FD\n";

static const char usage[] =
	"usage: sbx-ns --join PATH [OPTION]... [--] PROG [ARG]...\n"
	"       sbx-ns --join PATH (--jobs | --wait-job ID | --kill-job ID | --stop)\n"
	"       sbx-ns --join PATH --connect PORT [--connect-fd N] [--] HOSTPROG [ARG]...\n"
	"Run PROG in the living sandbox at PATH (made by sbx-ns --serve PATH).\n"
	"\n";

struct join {
	const char *path, *cwd, *out, *err, *wait, *kill, *sig, *port, *memory, *pids, *cpu;
	const char **env;
	size_t nenv;
	uint64_t timeout_ms;
	int pty, detach, jobs, stop, cfd, grant_fd, dry_run;
	char **argv;
};

static int status_fd = -1;

/* The outcome: the exit line, then on stderr the sandbox's reason (if it
 * refused) or what killed the command (a limit, its --timeout), and the
 * code. The line says which, where the command's own stderr cannot. */
noreturn static void leave_as(int code, int sig, const char *why, const char *killed)
{
	if (status_fd >= 0) {
		struct sbx_json j;
		sbx_json_begin(&j, NS_PROG, "exit");
		sbx_json_int(&j, "code", code);
		if (sig)
			sbx_json_int(&j, "signal", sig);
		if (why)
			sbx_json_str(&j, "error", why);
		if (killed)
			sbx_json_str(&j, "killed", killed);
		sbx_json_write(&j, status_fd);
	}
	if (killed)
		sbx_killed("%s", killed);
	if (why)
		sbx_msg(code == SBX_EXIT_USAGE ? SBX_MSG_USAGE : SBX_MSG_FATAL, code, 0, "%s", why);
	exit(code);
}

noreturn static void leave_why(int code, int sig, const char *why)
{
	leave_as(code, sig, why, NULL);
}

noreturn static void leave(int code, int sig)
{
	leave_as(code, sig, NULL, NULL);
}

static int dial(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s;

	if (strlen(path) >= sizeof sa.sun_path)
		sbx_die_usage("--join: invalid path '%s': too long for a socket", path);
	strcpy(sa.sun_path, path);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create a socket");
	if (connect(s, (struct sockaddr *)&sa, sizeof sa) < 0) {
		if (errno == ENOENT || errno == ECONNREFUSED)
			sbx_die(SBX_EXIT_LOST, "unable to join %s: %s (no sandbox serves there: start one with "
				"sbx-ns ... --serve %s)", path, strerror(errno), path);
		sbx_die_errno(errno == EACCES ? SBX_EXIT_POLICY : SBX_EXIT_SYS, "unable to join %s", path);
	}
	return s;
}

/* One answer; its fd (if any) in *fd. The text is terminated. */
static ssize_t answer(int s, char *buf, size_t sz, int *fd)
{
	int fds[SBX_FDPASS_MAX + 1], cut;
	size_t nfds;
	ssize_t n = sbx_recv_fds(s, buf, sz - 1, 0, fds, 2, &nfds, &cut);

	if (fd)
		*fd = -1;
	for (size_t i = 0; i < nfds; i++) {
		if (fd && i == 0)
			*fd = fds[i];
		else
			close(fds[i]);
	}
	if (n <= 0) {
		if (n == 0 || errno == ECONNRESET)
			sbx_die(SBX_EXIT_LOST, "the sandbox was lost (its sbx-ns --serve ended)");
		sbx_die_errno(SBX_EXIT_SYS, "unable to read the sandbox's answer");
	}
	buf[n] = '\0';
	return n;
}

/* "exit CODE SIG", "error CODE TEXT", "stopped CODE": the end. */
noreturn static void finish(const char *a)
{
	int code, sig = 0, off = 0;

	if (sscanf(a, "exit %d %d%n", &code, &sig, &off) == 2)
		leave_as(code, sig, NULL, a[off] == ' ' ? a + off + 1 : NULL);
	if (sscanf(a, "stopped %d", &code) == 1)
		leave(code, 0);
	if (sscanf(a, "error %d %n", &code, &off) == 1 && off && code > 0 && code < 256)
		leave_why(code, 0, a + off);
	sbx_die(SBX_EXIT_SYS, "unable to understand the sandbox's answer");
}

/* One word of the request: prefix and value, NUL-terminated. */
static size_t put(char *buf, size_t k, const char *prefix, const char *value)
{
	size_t lp = strlen(prefix), lv = strlen(value);

	if (k + lp + lv + 1 > NS_WIRE_MAX)
		sbx_die_usage("request too large (at most %d bytes)", NS_WIRE_MAX);
	memcpy(buf + k, prefix, lp);
	memcpy(buf + k + lp, value, lv + 1);
	return k + lp + lv + 1;
}

static void send_req(int s, const char *buf, size_t len, const int *fds, size_t nfds)
{
	if (sbx_send_fds(s, buf, len, fds, nfds) != (ssize_t)len)
		sbx_die_errno(errno == EMSGSIZE ? SBX_EXIT_USAGE : SBX_EXIT_LOST, "unable to send the request");
}

static void parse(struct join *j, int argc, char **argv)
{
	struct sbx_optstate st;
	const char *arg;
	int id, verbs;

	sbx_opt_init(&st, 1);
	while ((id = sbx_opt_next(&st, options, argc, argv, &arg))) {
		switch (id) {
		case J_HELP:
			sbx_opt_help(sbx_needf("%s%s", usage, ns_join_options));
		case J_JOIN: j->path = arg; break; /* checked after --help had its say */
		case J_CWD: j->cwd = sbx_opt_path("--cwd", arg); break;
		case J_SETENV: {
			const char *eq = strchr(arg, '='), *why;
			if (!eq)
				sbx_die_usage("--setenv: invalid variable '%s': missing '='", arg);
			if ((why = sbx_env_name_invalid(arg, (size_t)(eq - arg))))
				sbx_die_usage("--setenv: invalid variable '%s': %s", arg, why);
			j->env = sbx_need(realloc(j->env, (j->nenv + 1) * sizeof *j->env));
			j->env[j->nenv++] = arg;
			break;
		}
		case J_TIMEOUT: j->timeout_ms = sbx_opt_seconds("--timeout", arg, 7ULL * 24 * 3600 * 1000); break;
		case J_PTY: j->pty = 1; break;
		case J_DETACH: j->detach = 1; break;
		case J_STDOUT: j->out = sbx_opt_path("--stdout", arg); break;
		case J_STDERR: j->err = sbx_opt_path("--stderr", arg); break;
		case J_JOBS: j->jobs = 1; break;
		case J_WAIT: sbx_opt_u64("--wait-job", arg, 1, UINT32_MAX); j->wait = arg; break;
		case J_KILL: sbx_opt_u64("--kill-job", arg, 1, UINT32_MAX); j->kill = arg; break;
		case J_SIGNAL: sbx_opt_u64("--signal", arg, 1, 64); j->sig = arg; break;
		case J_STOP: j->stop = 1; break;
		case J_CONNECT: sbx_opt_u64("--connect", arg, 1, 65535); j->port = arg; break;
		case J_CONNECT_FD:
			j->cfd = (int)sbx_opt_u64("--connect-fd", arg, 0, 1023);
			break;
		case J_STATUS_FD: status_fd = sbx_status_opt(arg); break;
		case J_MEMORY: sbx_opt_size("--memory", arg, 1ULL << 50); j->memory = arg; break;
		case J_PIDS: sbx_opt_u64("--pids", arg, 1, 4194304); j->pids = arg; break;
		case J_CPU: sbx_opt_percent("--cpu", arg, 102400); j->cpu = arg; break;
		case J_GRANT_FD: j->grant_fd = sbx_opt_fd("--grant-fd", arg); break;
		case J_DRY_RUN: j->dry_run = 1; break;
		}
	}
	j->argv = argv + st.ind;
	j->path = sbx_opt_path("--join", j->path);
	verbs = !!j->jobs + !!j->wait + !!j->kill + !!j->stop + !!j->port;
	if (verbs > 1)
		sbx_die_usage("--jobs, --wait-job, --kill-job, --stop and --connect are exclusive");
	if (verbs && (j->cwd || j->nenv || j->timeout_ms || j->pty || j->detach || j->out || j->err || j->memory ||
		      j->pids || j->cpu))
		sbx_die_usage("--cwd, --setenv, --timeout, --memory, --pids, --cpu, --pty, --detach, --stdout and "
			      "--stderr are for running a command");
	if (verbs && (j->grant_fd >= 0 || j->dry_run))
		sbx_die_usage("--grant-fd and --dry-run are for running a command");
	if (j->dry_run && (j->pty || j->detach || j->out || j->err || j->memory || j->pids || j->cpu))
		sbx_die_usage("--dry-run shows a command's plan: no --pty, --detach, --stdout, --stderr, --memory, "
			      "--pids or --cpu");
	if (j->grant_fd >= 0 && j->pty)
		sbx_die_usage("--pty and --grant-fd are exclusive: a grant binds the command's stdin, and a "
			      "terminal's is not bound");
	if (j->sig && !j->kill)
		sbx_die_usage("--signal goes with --kill-job");
	if (j->cfd >= 0 && !j->port)
		sbx_die_usage("--connect-fd goes with --connect");
	if ((j->out || j->err) && !j->detach)
		sbx_die_usage("--stdout and --stderr go with --detach");
	if (!j->out != !j->err)
		sbx_die_usage("--stdout and --stderr go together");
	if (j->detach && j->pty)
		sbx_die_usage("--detach and --pty are exclusive");
	if ((verbs && !j->port) && *j->argv)
		sbx_die_usage("--jobs, --wait-job, --kill-job and --stop take no program");
	if ((!verbs || j->port) && !*j->argv)
		sbx_die_usage("missing program");
	if (*j->argv && !**j->argv)
		sbx_die_usage("empty program name");
	if (j->cfd < 0)
		j->cfd = 3;
}

/* A terminal type's name, as terminfo spells them (xterm-256color). */
static int term_ok(const char *t)
{
	size_t n = strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-");

	return n && n < 64 && !t[n];
}

/* Relay the pty until the command's session hangs up, then the end. */
noreturn static void run_pty(int s, int master)
{
	char a[512];

	/* A closed stdout must end the relay with EPIPE (and the terminal
	 * restored), not kill the client. */
	signal(SIGPIPE, SIG_IGN);
	if (ns_pty_relay(master, 0, 1, s) < 0)
		sbx_warn_errno("unable to relay the terminal");
	close(master);
	answer(s, a, sizeof a, NULL);
	finish(a);
}

/* Wait for the end, forwarding the termination signals. */
noreturn static void wait_end(int s, int forward)
{
	sigset_t set;
	struct signalfd_siginfo si;
	struct pollfd pf[2];
	char a[512], msg[32];
	int sfd;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	if (!forward)
		sigemptyset(&set);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0 || (sfd = signalfd(-1, &set, SFD_CLOEXEC)) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to take signals");
	for (;;) {
		pf[0] = (struct pollfd){ .fd = s, .events = POLLIN };
		pf[1] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			sbx_die_errno(SBX_EXIT_SYS, "unable to poll");
		}
		if (pf[1].revents & POLLIN && read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
			int n = snprintf(msg, sizeof msg, "signal %u", si.ssi_signo);
			send(s, msg, (size_t)n, MSG_NOSIGNAL);
		}
		if (pf[0].revents) {
			answer(s, a, sizeof a, NULL);
			SBX_MARK("j-exit");
			finish(a);
		}
	}
}

noreturn void ns_join_main(int argc, char **argv)
{
	static char buf[NS_WIRE_MAX + 1];
	struct join j = { .grant_fd = -1, .cfd = -1 };
	static char a[NS_SERVE_JOBS * 256 + 64], grant[SBX_GRANT_MAX + 1];
	size_t k = 0, glen = 0;
	int s, fd, stdio[3] = { 0, 1, 2 };

	parse(&j, argc, argv);
	if (!j.path)
		sbx_die_usage("missing --join PATH");
	s = dial(j.path);
	SBX_MARK("j-dial");
	if (j.jobs || j.stop || j.wait || j.kill) {
		k = put(buf, k, j.jobs ? "jobs" : j.stop ? "stop" : j.wait ? "wait" : "kill", "");
		if (j.wait || j.kill)
			k = put(buf, k, "job=", j.wait ? j.wait : j.kill);
		if (j.sig)
			k = put(buf, k, "signal=", j.sig);
		send_req(s, buf, k, NULL, 0);
		/* A waiter that is stopped stops waiting; the job runs on. */
		if (j.wait)
			wait_end(s, 0);
		answer(s, a, sizeof a, NULL);
		if (!strncmp(a, "jobs\n", 5)) {
			fputs(a + 5, stdout);
			fflush(stdout);
			leave(0, 0);
		}
		finish(a);
	}
	if (j.port) {
		k = put(buf, k, "connect", "");
		k = put(buf, k, "port=", j.port);
		send_req(s, buf, k, NULL, 0);
		answer(s, a, sizeof a, &fd);
		if (strcmp(a, "conn") || fd < 0)
			finish(a);
		close(s);
		if (fd != j.cfd && (dup2(fd, j.cfd) < 0 || close(fd) < 0))
			sbx_die_errno(SBX_EXIT_SYS, "unable to place the connection on fd %d", j.cfd);
		sbx_fd_cloexec(j.cfd, 0);
		sbx_exec(j.argv, getenv("PATH"), environ);
	}
	/* The host's terminal never enters the sandbox: from a terminal the
	 * command gets a pty of the sandbox's own. */
	if (!j.detach && j.grant_fd < 0 && !j.dry_run)
		for (int i = 0; i < 3; i++)
			if (isatty(i))
				j.pty = 1;
	if (j.detach && !j.out)
		for (int i = j.grant_fd >= 0; i < 3; i++) /* (a grant's stdin is a copy) */
			if (isatty(i))
				sbx_die_usage("--detach: fd %d is a terminal, which never enters the sandbox: "
					      "redirect it or give --stdout and --stderr", i);
	/* A grant: its text, sent in the request (no NUL: the request's words
	 * end at one), and the command's stdin, read whole into a sealed file
	 * in memory that the sandbox copies and hashes (a one-shot run's
	 * stdin is read the same way). A granted command gets no pty. */
	if (j.grant_fd >= 0) {
		glen = sbx_grant_read(j.grant_fd, grant);
		if (glen > SBX_GRANT_MAX || memchr(grant, '\0', glen)) {
			struct sbx_grant g;
			const char *why = "";
			sbx_grant_parse(grant, glen, &g, &why);
			sbx_die(SBX_EXIT_POLICY, "grant refused: malformed (%s)", why);
		}
		grant[glen] = '\0';
		for (int i = 1; i < 3 && !j.dry_run && !j.out; i++)
			if (isatty(i))
				sbx_die_usage("--grant-fd: fd %d is a terminal, which never enters the sandbox, and a "
					      "granted command gets no pty: redirect it", i);
		if (!j.out) {
			unsigned char sha[SBX_SHA256_LEN];
			stdio[0] = sbx_grant_stdin(0, SBX_GRANT_STDIN_MAX, sha);
			if (stdio[0] < 0 && errno == EFBIG)
				sbx_die_usage("%s", SBX_GRANT_STDIN_BIG);
			if (stdio[0] < 0)
				sbx_die_errno(SBX_EXIT_SYS, "unable to read stdin");
		}
	}
	k = put(buf, k, j.dry_run ? "plan" : "run", "");
	if (j.grant_fd >= 0)
		k = put(buf, k, "grant=", grant);
	if (j.cwd)
		k = put(buf, k, "cwd=", j.cwd);
	for (size_t i = 0; i < j.nenv; i++)
		k = put(buf, k, "env=", j.env[i]);
	if (j.pty && getenv("TERM")) {
		int given = 0;
		for (size_t i = 0; i < j.nenv; i++)
			given |= !strncmp(j.env[i], "TERM=", 5);
		if (!given && term_ok(getenv("TERM")))
			k = put(buf, k, "env=TERM=", getenv("TERM"));
	}
	if (j.timeout_ms) {
		char t[32];
		snprintf(t, sizeof t, "%llu", (unsigned long long)j.timeout_ms);
		k = put(buf, k, "timeout=", t);
	}
	if (j.pty) {
		struct winsize ws = { .ws_row = 24, .ws_col = 80 };
		char w[32];
		if (ioctl(0, TIOCGWINSZ, &ws) < 0 && ioctl(1, TIOCGWINSZ, &ws) < 0) {
			ws.ws_row = 24;
			ws.ws_col = 80;
		}
		snprintf(w, sizeof w, "%ux%u", ws.ws_row, ws.ws_col);
		k = put(buf, k, "pty=", w);
	}
	if (j.memory)
		k = put(buf, k, "memory=", j.memory);
	if (j.pids)
		k = put(buf, k, "pids=", j.pids);
	if (j.cpu)
		k = put(buf, k, "cpu=", j.cpu);
	if (j.detach)
		k = put(buf, k, "detach=1", "");
	if (j.out) {
		k = put(buf, k, "out=", j.out);
		k = put(buf, k, "err=", j.err);
	}
	k = put(buf, k, "--", "");
	for (char **p = j.argv; *p; p++)
		k = put(buf, k, "", *p);
	if (j.dry_run)
		send_req(s, buf, k, stdio, j.grant_fd >= 0 ? 1 : 0);
	else
		send_req(s, buf, k, stdio, j.pty || j.out ? 0 : 3);
	SBX_MARK("j-sent");
	if (j.grant_fd >= 0 && !j.out)
		close(stdio[0]);
	answer(s, a, sizeof a, &fd);
	/* What a one-shot run would warn of (an argv-only grant). */
	while (!strncmp(a, "warning ", 8)) {
		sbx_warn("%s", a + 8);
		if (fd >= 0)
			close(fd);
		answer(s, a, sizeof a, &fd);
	}
	if (!strcmp(a, "plan") && fd >= 0) {
		/* --dry-run: the plan, from the file in memory it came in */
		char chunk[65536];
		ssize_t n;
		while ((n = read(fd, chunk, sizeof chunk)) > 0 || (n < 0 && errno == EINTR))
			if (n > 0 && sbx_write_all(1, chunk, (size_t)n) < 0)
				sbx_die_errno(SBX_EXIT_SYS, "unable to write the plan");
		if (n < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to read the plan");
		leave(0, 0);
	}
	if (!strncmp(a, "job ", 4)) {
		printf("%s\n", a + 4);
		fflush(stdout);
		leave(0, 0);
	}
	if (strcmp(a, "started"))
		finish(a);
	SBX_MARK("j-started");
	if (j.pty) {
		if (fd < 0)
			sbx_die(SBX_EXIT_SYS, "unable to relay the terminal: the sandbox sent no pty");
		run_pty(s, fd);
	}
	if (fd >= 0)
		close(fd);
	wait_end(s, 1);
}

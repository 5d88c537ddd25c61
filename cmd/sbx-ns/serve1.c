/* pid 1 of a living sandbox (--serve): instead of one command, it takes
 * requests from the outer over their private channel and forks each
 * command with exactly the confinement a one-shot run's command gets
 * (ns_command). It reaps everything, reports each command's start and end,
 * signals a command's process group when the outer says so, and connects
 * to a port on the sandbox's own loopback for the host (the connected
 * socket goes out as an fd; no process copies bytes).
 *
 * Only the outer speaks on the channel; the commands never hold it (every
 * fd but stdio is closed in ns_command), cannot trace or read pid 1 (it
 * is not dumpable) and cannot kill it (init of its pid namespace). The
 * outer has checked every request; pid 1 still bounds what it parses. A
 * run under a plan grant names the program's file as the outer hashed it
 * (NS_RUN_PROG): the command's process executes exactly that file. pid 1
 * holds no grant key: it wipes its copy of the outer's first. */
#include "ns.h"

#include "die.h"
#include "exitcodes.h"
#include "fd.h"
#include "fdpass.h"
#include "sys.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define CONNECT_WAIT_MS 2000

struct live {
	uint32_t id;
	pid_t pid;
};

static struct live live[NS_SERVE_LIVE];
static size_t nlive;

static void reply(int ctl, char kind, uint32_t id, int32_t value, int fd)
{
	struct ns_wire w = { .kind = kind, .id = id, .value = value };

	if (sbx_send_fds(ctl, &w, sizeof w, &fd, fd >= 0 ? 1 : 0) != (ssize_t)sizeof w)
		_exit(SBX_EXIT_LOST); /* the outer is gone: so is the sandbox */
}

/* The strings after the header: n NUL-terminated ones, in buf[0..len). */
static int split(char *buf, size_t len, char **v, size_t n)
{
	size_t k = 0, i = 0;

	while (k < n) {
		char *end = memchr(buf + i, '\0', len - i);
		if (i >= len || !end)
			return -1;
		v[k++] = buf + i;
		i = (size_t)(end - buf) + 1;
	}
	return i == len ? 0 : -1;
}

static void run(struct ns_run *r, int ctl, const struct ns_wire *w, char *buf, size_t len,
		const int *fds, size_t nfds, int hidepid)
{
	size_t nfiles = w->flags & NS_RUN_FILES ? 2 : 0, nprog = w->flags & NS_RUN_PROG ? 1 : 0;
	size_t n = 1 + (size_t)w->nargv + 1 + w->nenv + 1 + nfiles + nprog;
	struct ns_program prog = { 0 };
	char **v;
	int master = -1, slave = -1;
	pid_t pid;

	int cg = w->flags & NS_RUN_CGROUP && nfds ? fds[--nfds] : -1;

	if (nlive >= NS_SERVE_LIVE || w->nargv < 1 || w->nargv > NS_WIRE_ARGS || w->nenv > NS_WIRE_ARGS ||
	    (w->flags & ~(NS_RUN_PTY | NS_RUN_FILES | NS_RUN_CGROUP | NS_RUN_PROG | NS_RUN_STILL)) ||
	    (w->flags & NS_RUN_CGROUP && cg < 0) ||
	    nfds != (w->flags & (NS_RUN_PTY | NS_RUN_FILES) ? 0u : 3u)) {
		reply(ctl, 'E', w->id, EINVAL, -1);
		return;
	}
	v = sbx_need(calloc(n, sizeof *v));
	/* cwd, argv..., NULL marker "", env..., "", [out, err], [prog] */
	if (split(buf, len, v, n) < 0 || *v[1 + w->nargv] || *v[2 + w->nargv + w->nenv] ||
	    (nprog && (*v[n - 1] != '/' || strlen(v[n - 1]) >= PATH_MAX))) {
		free(v);
		reply(ctl, 'E', w->id, EINVAL, -1);
		return;
	}
	if (nprog) {
		/* A plan grant's program, as the outer hashed it: the command's
		 * process executes that file or nothing (ns_grant_open). */
		prog.found = 1;
		prog.path = v[n - 1];
		prog.dev = (dev_t)w->prog_dev;
		prog.ino = (ino_t)w->prog_ino;
		prog.size = (off_t)w->prog_size;
		prog.mtime.tv_sec = (time_t)w->prog_mtime[0];
		prog.mtime.tv_nsec = (long)w->prog_mtime[1];
		prog.ctime.tv_sec = (time_t)w->prog_ctime[0];
		prog.ctime.tv_nsec = (long)w->prog_ctime[1];
		memcpy(prog.sha, w->prog_sha, sizeof prog.sha);
		prog.still = !!(w->flags & NS_RUN_STILL);
	}
	if (w->flags & NS_RUN_PTY) {
		struct winsize ws = { .ws_row = w->rows, .ws_col = w->cols };
		if ((master = ns_pty_open(&slave)) < 0) {
			free(v);
			reply(ctl, 'E', w->id, errno, -1);
			return;
		}
		if (ws.ws_row && ws.ws_col)
			ioctl(master, TIOCSWINSZ, &ws);
	}
	if (cg >= 0) {
		/* Born in its own cgroup: never a moment outside it. */
		struct { uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls,
			 set_tid, set_tid_size, cgroup; } ca = { .flags = 0x200000000ULL /* CLONE_INTO_CGROUP */,
								.exit_signal = SIGCHLD, .cgroup = (uint64_t)cg };
		pid = (pid_t)sbx_clone3(&ca, sizeof ca);
	} else {
		pid = fork();
	}
	if (pid < 0) {
		int e = errno;
		free(v);
		if (master >= 0) {
			close(master);
			close(slave);
		}
		reply(ctl, 'E', w->id, e, -1);
		return;
	}
	if (pid == 0) {
		struct ns_cmd c = { .argv = v + 1, .cwd = *v[0] ? v[0] : NULL, .tty = slave };
		v[1 + w->nargv] = NULL;      /* argv ends at its marker */
		v[2 + w->nargv + w->nenv] = NULL;
		c.env = v + 2 + w->nargv;
		c.search = ns_env_search(c.env);
		if (nfiles) {
			c.out = v[3 + w->nargv + w->nenv];
			c.err = v[4 + w->nargv + w->nenv];
		}
		if (nprog)
			c.prog = &prog;
		if (master >= 0)
			close(master);
		close(ctl);
		for (size_t i = 0; i < nfds; i++)
			if (dup2(fds[i], (int)i) < 0)
				_exit(SBX_EXIT_SYS);
		ns_command(r, &c, hidepid);
	}
	free(v);
	if (slave >= 0)
		close(slave);
	live[nlive].id = w->id;
	live[nlive++].pid = pid;
	reply(ctl, 'S', w->id, pid, master);
	if (master >= 0)
		close(master);
}

/* A command's whole process group (it is a session leader), or the
 * command alone if the group is gone. */
static void signal_job(int ctl, const struct ns_wire *w)
{
	for (size_t i = 0; i < nlive; i++)
		if (live[i].id == w->id) {
			if (kill(-live[i].pid, w->value) < 0)
				kill(live[i].pid, w->value);
			return;
		}
	(void)ctl; /* already ended: its 'X' is on the way or sent */
}

/* A TCP connection to 127.0.0.1:port in the sandbox's network namespace. */
static void connect_port(int ctl, const struct ns_wire *w)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)w->value) };
	struct pollfd pf;
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), e = 0;
	socklen_t el = sizeof e;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0) {
		reply(ctl, 'c', w->id, errno, -1);
		return;
	}
	if (connect(s, (struct sockaddr *)&sa, sizeof sa) < 0) {
		if (errno != EINPROGRESS) {
			e = errno;
			close(s);
			reply(ctl, 'c', w->id, e, -1);
			return;
		}
		pf.fd = s;
		pf.events = POLLOUT;
		if (poll(&pf, 1, CONNECT_WAIT_MS) != 1)
			e = ETIMEDOUT;
		else if (getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
			e = errno;
		if (e) {
			close(s);
			reply(ctl, 'c', w->id, e, -1);
			return;
		}
	}
	/* The host's end blocks like any socket a program is given. */
	fcntl(s, F_SETFL, 0);
	reply(ctl, 'c', w->id, 0, s);
	close(s);
}

static void reap(int ctl)
{
	int st;
	pid_t p;

	while ((p = waitpid(-1, &st, WNOHANG)) > 0)
		for (size_t i = 0; i < nlive; i++)
			if (live[i].pid == p) {
				uint32_t id = live[i].id;
				live[i] = live[--nlive];
				reply(ctl, 'X', id, st, -1);
				break;
			}
}

noreturn void ns_serve_inside(struct ns_run *r, int hidepid)
{
	static char msg[sizeof(struct ns_wire) + NS_WIRE_MAX];
	struct signalfd_siginfo si;
	struct pollfd pf[2];
	sigset_t set;
	int ctl = r->x.ctl_fd, keep[2] = { ctl, r->x.notify_sock[1] }, sfd, root;

	/* The grant key is the outer's: none in the sandbox. */
	if (r->p->grant_key)
		sbx_grant_key_wipe(r->p->grant_key);
	/* pid 1 keeps the channel and the supervisor's socket (each command
	 * hands its filter's listener over it), nothing else. */
	if (sbx_close_fds_except(keep, keep[1] >= 0 ? 2 : 1) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to close fds");
	/* One Landlock domain for pid 1 and every command it forks: a later
	 * command can see and signal what an earlier one left running. pid 1
	 * stays out of their reach all the same: it is not dumpable (no
	 * trace, no /proc entry, no fd taken), and as init of its pid
	 * namespace it drops SIGKILL and SIGSTOP from inside and reads every
	 * other signal only to ignore it. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to set no_new_privs");
	ns_landlock(r->p, &r->x);
	ns_wait_signals(&set);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create signalfd");
	/* Set up: the outer gets the sandbox's root, where it looks up the
	 * program of each plan as the commands will (program.c). */
	root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open the sandbox's root");
	reply(ctl, 'S', 0, hidepid, root);
	close(root);
	for (;;) {
		pf[0].fd = ctl;
		pf[0].events = POLLIN;
		pf[1].fd = sfd;
		pf[1].events = POLLIN;
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(SBX_EXIT_SYS);
		}
		if (pf[1].revents & POLLIN) {
			/* Only SIGCHLD means anything here; the rest (sent by
			 * a command of the same uid) are read and dropped. */
			if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si && si.ssi_signo == SIGCHLD)
				reap(ctl);
		}
		if (pf[0].revents) {
			int fds[SBX_FDPASS_MAX + 1], cut;
			size_t nfds;
			ssize_t got = sbx_recv_fds(ctl, msg, sizeof msg, 0, fds, 4, &nfds, &cut);
			struct ns_wire w;

			if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN))
				_exit(SBX_EXIT_LOST);
			if (got < (ssize_t)sizeof w || cut) {
				for (size_t i = 0; i < nfds; i++)
					close(fds[i]);
				continue;
			}
			memcpy(&w, msg, sizeof w);
			if (w.kind == 'R')
				run(r, ctl, &w, msg + sizeof w, (size_t)got - sizeof w, fds, nfds, hidepid);
			else if (w.kind == 'K')
				signal_job(ctl, &w);
			else if (w.kind == 'C')
				connect_port(ctl, &w);
			for (size_t i = 0; i < nfds; i++)
				close(fds[i]);
		}
	}
}

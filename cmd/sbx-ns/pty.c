/* The command's terminal: a pty of the sandbox's own devpts instance
 * (steps.c mounts it with newinstance,ptmxmode=0666), so the command
 * holds a terminal without reaching any of the host's; its master goes
 * to the host-side client, which relays it to the caller's terminal.
 *
 *   int ns_pty_open(int *slave);
 *	Inside the sandbox: a new pty, unlocked. Returns the master and
 *	sets *slave, both O_CLOEXEC, or -1 with errno.
 *   int ns_pty_attach(int slave);
 *	In the command's process, after setsid(): slave becomes the
 *	controlling terminal and fds 0, 1 and 2. 0, or -1 with errno.
 *   int ns_pty_relay(int master, int in_fd, int out_fd, int ctl);
 *	In the host-side client: in_fd to the master, the master to
 *	out_fd, until the command's session hangs the pty up, or ctl (a
 *	socket, -1 for none) is readable or hung up: then what the master
 *	still holds is passed on for at most PTY_DRAIN_MS. ctl is not
 *	read. A terminal in_fd is made raw and its size follows SIGWINCH;
 *	the end of in_fd becomes the pty's EOF character (queue_eof). 0,
 *	or -1 with errno; either way the caller's terminal, signal mask
 *	and the master's flags are as they were. */
#include "ns.h"

#include "clock.h"
#include "die.h"
#include "exitcodes.h"
#include "fdpass.h"
#include "status.h"
#include "fd.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

/* /dev/ptmx is a symlink to it in the sandbox; the path itself names the
 * devpts instance the slave must come from. */
static const char pty_ptmx[] = "/dev/pts/ptmx";

#define PTY_BUF (16 * 1024)
/* After ctl: output still in flight reaches the caller, a command's
 * orphans that keep writing do not hold the client. */
#define PTY_DRAIN_ROUND_MS 100
#define PTY_DRAIN_MS 500

int ns_pty_open(int *slave)
{
	int m, s, unlock = 0;
	unsigned n;
	char path[32];

	m = open(pty_ptmx, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0)
		return -1;
	/* devpts gives the slave the opener's ids and mode=620 already:
	 * grantpt has nothing to do. */
	if (ioctl(m, TIOCSPTLCK, &unlock) < 0)
		return sbx_close_fail(m);
	/* The peer of this very master, whatever is mounted on /dev/pts by
	 * now; opening by name could be raced. */
	s = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (s < 0 && (errno == EINVAL || errno == ENOTTY)) {
		if (ioctl(m, TIOCGPTN, &n) < 0)
			return sbx_close_fail(m);
		snprintf(path, sizeof path, "/dev/pts/%u", n);
		s = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
	}
	if (s < 0)
		return sbx_close_fail(m);
	*slave = s;
	return m;
}

int ns_pty_attach(int slave)
{
	if (ioctl(slave, TIOCSCTTY, 0) < 0)
		return -1;
	/* dup2 onto itself keeps the close-on-exec flag: clear it instead. */
	for (int fd = 0; fd <= 2; fd++)
		if (fd == slave ? sbx_fd_cloexec(fd, 0) < 0 : dup2(slave, fd) < 0)
			return -1;
	if (slave > 2)
		close(slave);
	return 0;
}

struct pty_buf {
	size_t off, len;
	char b[PTY_BUF];
};

struct pty_relay {
	int master, in, out, ctl;
	int sfd;            /* SIGWINCH, when in is a terminal; else -1 */
	int raw;            /* in is in raw mode: saved is to be restored */
	int masked;         /* oldmask is to be restored */
	int master_fl;      /* the master's status flags, to be restored; -1 */
	int in_open;        /* in is still read */
	int hup;            /* the command's session is gone */
	int last;           /* the last byte read from in, -1 none */
	struct termios saved;
	sigset_t oldmask;
	struct pty_buf to_master, to_out;
};

/* Undo what begin did, keeping errno: every return goes through here. */
static int relay_end(struct pty_relay *r, int rc)
{
	int e = errno;

	if (r->raw)
		tcsetattr(r->in, TCSADRAIN, &r->saved);
	if (r->sfd >= 0)
		close(r->sfd);
	if (r->masked)
		sigprocmask(SIG_SETMASK, &r->oldmask, NULL);
	if (r->master_fl >= 0)
		fcntl(r->master, F_SETFL, r->master_fl);
	errno = e;
	return rc;
}

/* Best effort: a size that cannot be read or set changes nothing else. */
static void copy_winsize(const struct pty_relay *r)
{
	struct winsize ws;

	if (ioctl(r->in, TIOCGWINSZ, &ws) == 0)
		ioctl(r->master, TIOCSWINSZ, &ws);
}

static int relay_begin(struct pty_relay *r)
{
	struct termios raw;
	sigset_t winch;

	/* A blocking write into a full pty while the command blocks on its
	 * own output to us would hang both. The caller's fds stay as they
	 * are: their file descriptions are shared with its shell. */
	r->master_fl = fcntl(r->master, F_GETFL);
	if (r->master_fl < 0 || fcntl(r->master, F_SETFL, r->master_fl | O_NONBLOCK) < 0) {
		r->master_fl = -1;
		return -1;
	}
	if (r->in < 0 || !isatty(r->in))
		return 0;
	if (tcgetattr(r->in, &r->saved) < 0)
		return -1;
	/* The signalfd before the first copy: a resize in between is seen. */
	sigemptyset(&winch);
	sigaddset(&winch, SIGWINCH);
	if (sigprocmask(SIG_BLOCK, &winch, &r->oldmask) < 0)
		return -1;
	r->masked = 1;
	r->sfd = signalfd(-1, &winch, SFD_CLOEXEC | SFD_NONBLOCK);
	if (r->sfd < 0)
		return -1;
	copy_winsize(r);
	raw = r->saved;
	cfmakeraw(&raw);
	if (tcsetattr(r->in, TCSANOW, &raw) < 0)
		return -1;
	r->raw = 1;
	return 0;
}

static void take_winch(struct pty_relay *r)
{
	struct signalfd_siginfo si;

	while (read(r->sfd, &si, sizeof si) == (ssize_t)sizeof si)
		;
	copy_winsize(r);
}

static int line_ended(const struct termios *t, int c)
{
	if (c == '\n' || c == t->c_cc[VEOF])
		return 1;
	if (c == '\r')
		return (t->c_iflag & ICRNL) && !(t->c_iflag & IGNCR);
	return c != _POSIX_VDISABLE && (c == t->c_cc[VEOL] || ((t->c_lflag & IEXTEN) && c == t->c_cc[VEOL2]));
}

/* in has ended: the pty's own end-of-file character tells the command.
 * In canonical mode it ends the input only at the start of a line; after
 * an unterminated line it hands that line over instead, and a second one
 * is needed ("printf x | ..." would otherwise never end). */
static void queue_eof(struct pty_relay *r)
{
	struct termios t;
	cc_t eof;

	if (tcgetattr(r->master, &t) < 0 || t.c_cc[VEOF] == _POSIX_VDISABLE)
		return;
	eof = t.c_cc[VEOF];
	r->to_master.off = 0;
	r->to_master.len = 0;
	r->to_master.b[r->to_master.len++] = (char)eof;
	if ((t.c_lflag & ICANON) && r->last >= 0 && !line_ended(&t, r->last))
		r->to_master.b[r->to_master.len++] = (char)eof;
}

static int read_in(struct pty_relay *r)
{
	ssize_t n = read(r->in, r->to_master.b, sizeof r->to_master.b);

	if (n > 0) {
		r->to_master.off = 0;
		r->to_master.len = (size_t)n;
		r->last = (unsigned char)r->to_master.b[n - 1];
		return 0;
	}
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -1;
	r->in_open = 0;
	queue_eof(r);
	return 0;
}

/* Input for a command that is gone has nowhere to go. */
static void drop_input(struct pty_relay *r)
{
	r->to_master.off = r->to_master.len = 0;
	r->in_open = 0;
}

static int write_master(struct pty_relay *r, short revents)
{
	struct pty_buf *b = &r->to_master;
	ssize_t n = write(r->master, b->b + b->off, b->len - b->off);

	if (n > 0) {
		b->off += (size_t)n;
		if (b->off == b->len)
			b->off = b->len = 0;
		return 0;
	}
	/* Nothing taken from a hung-up pty: nothing ever will be. */
	if (n == 0 || errno == EAGAIN) {
		if (revents & (POLLHUP | POLLERR))
			drop_input(r);
		return 0;
	}
	if (errno == EIO)
		drop_input(r);
	else if (errno != EINTR)
		return -1;
	return 0;
}

/* The command's session ends with read's EIO once all its output is read
 * (0 on some kernels); with POLLHUP, EAGAIN also means nothing is left. */
static int read_master(struct pty_relay *r, short revents)
{
	ssize_t n = read(r->master, r->to_out.b, sizeof r->to_out.b);

	if (n > 0) {
		r->to_out.off = 0;
		r->to_out.len = (size_t)n;
		return 0;
	}
	if (n == 0 || errno == EIO || (errno == EAGAIN && (revents & POLLHUP)))
		r->hup = 1;
	else if (errno != EINTR && errno != EAGAIN)
		return -1;
	return 0;
}

static int write_out(struct pty_relay *r)
{
	struct pty_buf *b = &r->to_out;
	ssize_t n = write(r->out, b->b + b->off, b->len - b->off);

	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -1;
	b->off += (size_t)n;
	if (b->off == b->len)
		b->off = b->len = 0;
	return 0;
}

/* What is waiting for out, by end (a non-blocking out waits in poll; a
 * blocking one in write, as it would anyway). Past end it is dropped. */
static int flush_out(struct pty_relay *r, uint64_t end)
{
	struct pollfd pf = { .fd = r->out, .events = POLLOUT };
	uint64_t now;

	while (r->to_out.len) {
		if (write_out(r) < 0)
			return -1;
		if (!r->to_out.len)
			break;
		now = sbx_now_ms();
		if (now >= end) {
			r->to_out.off = r->to_out.len = 0;
			break;
		}
		if (poll(&pf, 1, (int)(end - now)) < 0 && errno != EINTR)
			return -1;
	}
	return 0;
}

/* ctl spoke: the master's remaining output, in rounds of at most
 * PTY_DRAIN_ROUND_MS, until it has none or PTY_DRAIN_MS have passed. */
static int drain(struct pty_relay *r)
{
	uint64_t end = sbx_now_ms() + PTY_DRAIN_MS, now;
	struct pollfd pf = { .fd = r->master, .events = POLLIN };
	ssize_t n;
	int ready;

	for (;;) {
		if (flush_out(r, end) < 0)
			return -1;
		now = sbx_now_ms();
		if (r->hup || now >= end)
			return 0;
		ready = poll(&pf, 1, (int)(end - now < PTY_DRAIN_ROUND_MS ? end - now : PTY_DRAIN_ROUND_MS));
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready < 0)
			return -1;
		if (ready == 0)
			return 0;
		if (pf.revents & POLLNVAL) {
			errno = EBADF;
			return -1;
		}
		n = read(r->master, r->to_out.b, sizeof r->to_out.b);
		if (n > 0) {
			r->to_out.off = 0;
			r->to_out.len = (size_t)n;
		} else if (n == 0 || errno == EIO || errno == EAGAIN) {
			return 0;
		} else if (errno != EINTR) {
			return -1;
		}
	}
}

enum { P_IN, P_MASTER, P_OUT, P_SIG, P_CTL, P_N };

int ns_pty_relay(int master, int in_fd, int out_fd, int ctl)
{
	struct pty_relay r = {
		.master = master, .in = in_fd, .out = out_fd, .ctl = ctl, .sfd = -1,
		.master_fl = -1, .in_open = in_fd >= 0, .last = -1,
	};
	struct pollfd pf[P_N];
	short mev;

	if (relay_begin(&r) < 0)
		return relay_end(&r, -1);
	for (;;) {
		if (r.hup && !r.to_out.len)
			return relay_end(&r, 0);
		/* One buffer each way, refilled only when empty: what is
		 * polled for is what can be done, so nothing spins. */
		mev = (short)((!r.hup && !r.to_out.len ? POLLIN : 0) |
			      (!r.hup && r.to_master.len ? POLLOUT : 0));
		pf[P_IN] = (struct pollfd){ .fd = r.in_open && !r.to_master.len ? r.in : -1, .events = POLLIN };
		pf[P_MASTER] = (struct pollfd){ .fd = mev ? r.master : -1, .events = mev };
		pf[P_OUT] = (struct pollfd){ .fd = r.to_out.len ? r.out : -1, .events = POLLOUT };
		pf[P_SIG] = (struct pollfd){ .fd = r.sfd, .events = POLLIN };
		pf[P_CTL] = (struct pollfd){ .fd = r.ctl, .events = POLLIN };
		if (poll(pf, P_N, -1) < 0) {
			if (errno == EINTR)
				continue;
			return relay_end(&r, -1);
		}
		for (int i = 0; i < P_N; i++)
			if (pf[i].revents & POLLNVAL) {
				errno = EBADF;
				return relay_end(&r, -1);
			}
		if (pf[P_SIG].revents)
			take_winch(&r);
		if ((pf[P_MASTER].revents & (POLLOUT | POLLHUP | POLLERR)) && r.to_master.len &&
		    write_master(&r, pf[P_MASTER].revents) < 0)
			return relay_end(&r, -1);
		if ((pf[P_MASTER].revents & (POLLIN | POLLHUP | POLLERR)) && (mev & POLLIN) &&
		    read_master(&r, pf[P_MASTER].revents) < 0)
			return relay_end(&r, -1);
		if (r.hup)
			drop_input(&r);
		if (pf[P_OUT].revents && write_out(&r) < 0)
			return relay_end(&r, -1);
		if (pf[P_IN].revents && read_in(&r) < 0)
			return relay_end(&r, -1);
		if (pf[P_CTL].revents)
			return relay_end(&r, drain(&r));
	}
}

/* --pty of a one-shot run. pid 1 opens the pty in the sandbox's own
 * devpts, makes its slave the command's terminal and hands the master to
 * the outer over a socket pair made before the clone; a relay process
 * of the outer's (so that its wait for the sandbox stays as it is)
 * relays it to the caller's stdio until the command's side hangs up,
 * and the outer waits for it before it reports the end. */
void ns_pty_prepare(struct ns_run *r)
{
	r->x.pty_sock[0] = r->x.pty_sock[1] = -1;
	if (r->a->pty && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, r->x.pty_sock) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create the pty's socket pair");
}

/* pid 1, before it forks the command: the master, and the slave in
 * *slave; -1 without --pty. */
int ns_pty_inside(struct ns_run *r, int *slave)
{
	int master;

	*slave = -1;
	if (!r->a->pty)
		return -1;
	if ((master = ns_pty_open(slave)) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open a pty in the sandbox's devpts");
	return master;
}

void ns_pty_send(struct ns_run *r, int master)
{
	if (sbx_send_fds(r->x.pty_sock[1], "P", 1, &master, 1) != 1)
		_exit(SBX_EXIT_LOST);
	close(master);
	close(r->x.pty_sock[1]);
	r->x.pty_sock[1] = -1;
}

/* The outer, after the go: the relay process. */
void ns_pty_outer(struct ns_run *r)
{
	pid_t parent = getpid();
	int fds[2], cut, master;
	size_t n;
	char b;

	r->x.pty_relay = 0;
	if (r->x.pty_sock[0] < 0)
		return;
	close(r->x.pty_sock[1]);
	r->x.pty_relay = fork();
	if (r->x.pty_relay < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to fork the pty's relay");
	if (r->x.pty_relay > 0) {
		close(r->x.pty_sock[0]);
		return;
	}
	sbx_status_disown();
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(SBX_EXIT_LOST);
	sigprocmask(SIG_SETMASK, &r->x.oldmask, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* EOF: the sandbox ended before the command had its pty. */
	if (sbx_recv_fds(r->x.pty_sock[0], &b, 1, 0, fds, 2, &n, &cut) != 1 || n != 1 || cut)
		_exit(0);
	master = fds[0];
	_exit(ns_pty_relay(master, 0, 1, -1) < 0 ? SBX_EXIT_SYS : 0);
}

/* The outer, once the sandbox is gone: the relay has the last output. */
void ns_pty_outer_end(struct ns_run *r)
{
	if (r->x.pty_relay > 0)
		while (waitpid(r->x.pty_relay, NULL, 0) < 0 && errno == EINTR)
			;
}

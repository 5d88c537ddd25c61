/* The bridge: every connection accepted on the sandbox's 127.0.0.1:N or
 * [::1]:N is copied, byte for byte and both ways, to a new connection to
 * the broker's Unix socket. One process, one poll loop, non-blocking
 * sockets, splice(2) through a pipe per direction (the bytes never enter
 * user space). It parses nothing: the broker judges every byte.
 *
 * Failing closed: when the broker cannot be reached a connection is reset
 * (never answered any other way). When the broker process ends, every open
 * connection is reset and the listening sockets are closed, so new
 * connections are refused by the kernel. The broker is known from
 * SO_PEERCRED of the first connection: a pidfd tells when it has exited,
 * and its /proc entry, read when it ends a stream, tells an answer that is
 * complete from a process being torn down (the kernel closes a dying
 * process's sockets after it marks it PF_EXITING and before the pidfd
 * turns readable). */
#include "ns.h"

#include "exitcodes.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#define MAXCONN 256     /* fewer when the fd limit is lower: 6 fds each */
#define PIPE_BYTES (256 << 10)
#define PF_EXITING_ 0x4U

struct conn {
	int c, u;           /* client (TCP, inside), upstream (the broker) */
	int a[2], b[2];     /* c -> u, u -> c */
	size_t pa, pb;      /* bytes in each pipe */
	int afull, bfull;   /* the pipe took no more: wait for a drain */
	int ceof, ueof;     /* end of stream read from each side */
	int cshut, ushut;   /* end of stream passed on to each side */
};

/* The broker, as far as it can be known. */
struct peer {
	int pidfd;          /* -1 unknown yet, -2 not to be known */
	int procfd;         /* its /proc/PID directory */
};

/* The broker is exiting or gone: its stat shows PF_EXITING, a zombie, or
 * no longer exists. */
static int dying(const struct peer *b)
{
	char buf[512], *p, st;
	unsigned flags;
	ssize_t n;
	int fd;

	if (b->procfd < 0)
		return 0;
	fd = openat(b->procfd, "stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 1;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %u", &st, &flags) != 2)
		return 1;
	return st == 'Z' || st == 'X' || (flags & PF_EXITING_);
}

static void reset(int fd)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
	close(fd);
}

static void drop(struct conn *k, int rst)
{
	if (rst)
		reset(k->c);
	else
		close(k->c);
	close(k->u);
	close(k->a[0]); close(k->a[1]);
	close(k->b[0]); close(k->b[1]);
	k->c = -1;
}

static int upstream(int bfd, struct peer *b)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cr;
	socklen_t len = sizeof cr;
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (s < 0)
		return -1;
	snprintf(sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d", bfd);
	if (connect(s, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int e = errno;
		close(s);
		errno = e;
		return -1;
	}
	if (b->pidfd == -1) {
		b->pidfd = -2; /* tried once */
		if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 && cr.pid > 0) {
			char path[32];
			int p = (int)syscall(SYS_pidfd_open, cr.pid, 0);
			snprintf(path, sizeof path, "/proc/%d", (int)cr.pid);
			b->procfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
			/* Still the same process (not a reused pid)? */
			if (p >= 0 && b->procfd >= 0 && !dying(b)) {
				b->pidfd = p;
			} else {
				if (p >= 0)
					close(p);
				if (b->procfd >= 0)
					close(b->procfd);
				b->procfd = -1;
			}
		}
	}
	return s;
}

static void accept_all(int lfd, struct conn *ks, int maxconn, int bfd, struct peer *b, int *gone)
{
	for (;;) {
		struct conn *k = NULL;
		int c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), u;

		if (c < 0)
			return;
		for (int i = 0; i < maxconn; i++)
			if (ks[i].c < 0) {
				k = &ks[i];
				break;
			}
		if (!k) {
			reset(c);
			continue;
		}
		u = upstream(bfd, b);
		if (u < 0) {
			reset(c);
			if (errno != EAGAIN)
				*gone = 1;
			continue;
		}
		memset(k, 0, sizeof *k);
		k->c = c;
		k->u = u;
		if (pipe2(k->a, O_NONBLOCK | O_CLOEXEC) < 0) {
			reset(c);
			close(u);
			k->c = -1;
			continue;
		}
		if (pipe2(k->b, O_NONBLOCK | O_CLOEXEC) < 0) {
			reset(c);
			close(u);
			close(k->a[0]);
			close(k->a[1]);
			k->c = -1;
			continue;
		}
		/* Fewer rounds per byte; the default size when over the limit. */
		fcntl(k->a[1], F_SETPIPE_SZ, PIPE_BYTES);
		fcntl(k->b[1], F_SETPIPE_SZ, PIPE_BYTES);
	}
}

/* Move what can be moved; -1 when the connection is to be reset. */
static int pump_in(int from, int pipew, size_t *p, int *full, int *eof)
{
	ssize_t n = splice(from, NULL, pipew, NULL, 1 << 20, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);

	if (n > 0) {
		*p += (size_t)n;
		return 0;
	}
	if (n == 0) {
		*eof = 1;
		return 0;
	}
	if (errno == EAGAIN) {
		*full = *p > 0; /* else nothing was there after all */
		return 0;
	}
	return errno == EINTR ? 0 : -1;
}

static int pump_out(int piper, int to, size_t *p, int *full)
{
	ssize_t n = splice(piper, NULL, to, NULL, *p, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);

	if (n > 0) {
		*p -= (size_t)n;
		*full = 0;
		return 0;
	}
	return n < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : -1;
}

noreturn void ns_bridge(int lfd4, int lfd6, int bfd)
{
	static struct conn ks[MAXCONN];
	struct pollfd pf[3 + 2 * MAXCONN];
	int idx[MAXCONN][2];
	struct peer b = { .pidfd = -1, .procfd = -1 };
	struct rlimit rl;
	int gone = 0, maxconn = MAXCONN;

	signal(SIGPIPE, SIG_IGN);
	/* Never run out of fds: a full accept queue that cannot be accepted
	 * would spin the loop. Past maxconn, connections are accepted and
	 * reset. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		if (rl.rlim_cur < (rlim_t)(6 * MAXCONN + 16))
			maxconn = rl.rlim_cur > 22 ? (int)(rl.rlim_cur - 16) / 6 : 1;
	}
	ns_load_bridge_filter();
	for (int i = 0; i < MAXCONN; i++)
		ks[i].c = -1;
	for (;;) {
		int n = 0;

		pf[n++] = (struct pollfd){ .fd = lfd4, .events = POLLIN };
		pf[n++] = (struct pollfd){ .fd = lfd6, .events = POLLIN };
		pf[n++] = (struct pollfd){ .fd = b.pidfd >= 0 ? b.pidfd : -1, .events = POLLIN };
		for (int i = 0; i < MAXCONN; i++) {
			struct conn *k = &ks[i];
			short ce = 0, ue = 0;

			idx[i][0] = idx[i][1] = -1;
			if (k->c < 0)
				continue;
			if (!k->ceof && !k->afull)
				ce |= POLLIN;
			if (k->pb)
				ce |= POLLOUT;
			if (!k->ueof && !k->bfull)
				ue |= POLLIN;
			if (k->pa)
				ue |= POLLOUT;
			/* A side with nothing left to do is left out: its
			 * POLLHUP would wake the loop for nothing. */
			idx[i][0] = n;
			pf[n++] = (struct pollfd){ .fd = ce ? k->c : -1, .events = ce };
			idx[i][1] = n;
			pf[n++] = (struct pollfd){ .fd = ue ? k->u : -1, .events = ue };
		}
		if (poll(pf, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(SBX_EXIT_SYS);
		}
		if (b.pidfd >= 0 && pf[2].revents)
			gone = 1;
		if (pf[0].revents)
			accept_all(lfd4, ks, maxconn, bfd, &b, &gone);
		if (pf[1].revents)
			accept_all(lfd6, ks, maxconn, bfd, &b, &gone);
		if (gone) {
			/* The broker is gone: reset everything, refuse what comes. */
			close(lfd4);
			close(lfd6);
			for (int i = 0; i < MAXCONN; i++)
				if (ks[i].c >= 0)
					drop(&ks[i], 1);
			_exit(0);
		}
		for (int i = 0; i < MAXCONN; i++) {
			struct conn *k = &ks[i];
			short cr, ur;
			int bad = 0;

			if (k->c < 0 || idx[i][0] < 0)
				continue;
			cr = pf[idx[i][0]].revents;
			ur = pf[idx[i][1]].revents;
			if ((cr | ur) & POLLERR) {
				drop(k, 1);
				continue;
			}
			/* What came in is sent on at once, without waiting
			 * for the next round to say the other side is writable. */
			if ((cr & (POLLIN | POLLHUP)) && !k->ceof && !k->afull)
				bad |= pump_in(k->c, k->a[1], &k->pa, &k->afull, &k->ceof);
			if (!bad && k->pa)
				bad |= pump_out(k->a[0], k->u, &k->pa, &k->afull);
			if (!bad && (ur & (POLLIN | POLLHUP)) && !k->ueof && !k->bfull) {
				bad |= pump_in(k->u, k->b[1], &k->pb, &k->bfull, &k->ueof);
				if (k->ueof && dying(&b))
					gone = 1;
			}
			if (!bad && k->pb)
				bad |= pump_out(k->b[0], k->c, &k->pb, &k->bfull);
			if (bad) {
				drop(k, 1);
				continue;
			}
			if (k->ceof && !k->pa && !k->ushut) {
				shutdown(k->u, SHUT_WR);
				k->ushut = 1;
			}
			if (k->ueof && !k->pb && !k->cshut && !gone) {
				shutdown(k->c, SHUT_WR);
				k->cshut = 1;
			}
			if (k->cshut && k->ushut)
				drop(k, 0);
		}
		if (gone) {
			close(lfd4);
			close(lfd6);
			for (int i = 0; i < MAXCONN; i++)
				if (ks[i].c >= 0)
					drop(&ks[i], 1);
			_exit(0);
		}
	}
}

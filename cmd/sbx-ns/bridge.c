/* The bridge: every connection accepted on the sandbox's 127.0.0.1:N or
 * [::1]:N is copied, byte for byte and both ways, to a new connection to
 * the broker's Unix socket. One process, one poll loop, non-blocking
 * sockets, splice(2) through a pipe per direction (the bytes never enter
 * user space). It parses nothing: the broker judges every byte.
 *
 * Failing closed: when the broker cannot be reached a connection is reset
 * (never answered any other way). When the broker process ends (watched
 * through a pidfd from SO_PEERCRED), every open connection is reset and
 * the listening sockets are closed, so new connections are refused by the
 * kernel. An end of stream from the broker is passed on as one after a
 * short grace (GRACE_MS) during which a dying broker is told from one that
 * finished its answer: the broker's sockets close a moment before its
 * process is seen to exit. */
#include "ns.h"

#include "exitcodes.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAXCONN 256
#define GRACE_MS 20

struct conn {
	int c, u;           /* client (TCP, inside), upstream (the broker) */
	int a[2], b[2];     /* c -> u, u -> c */
	size_t pa, pb;      /* bytes in each pipe */
	int afull, bfull;   /* the pipe took no more: wait for a drain */
	int ceof, ueof;     /* end of stream read from each side */
	int cshut, ushut;   /* end of stream passed on to each side */
	long long fin_at;   /* ueof: when to pass it on (ms) */
};

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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

static int upstream(int bfd, int *pidfd)
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
	if (*pidfd == -1) {
		*pidfd = -2; /* tried once */
		if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 && cr.pid > 0) {
			int p = (int)syscall(SYS_pidfd_open, cr.pid, 0);
			if (p >= 0)
				*pidfd = p;
		}
	}
	return s;
}

static void accept_all(int lfd, struct conn *ks, int bfd, int *pidfd, int *gone)
{
	for (;;) {
		struct conn *k = NULL;
		int c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), u;

		if (c < 0)
			return;
		for (int i = 0; i < MAXCONN; i++)
			if (ks[i].c < 0) {
				k = &ks[i];
				break;
			}
		if (!k) {
			reset(c);
			continue;
		}
		u = upstream(bfd, pidfd);
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
	int pidfd = -1, gone = 0;

	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < MAXCONN; i++)
		ks[i].c = -1;
	for (;;) {
		int n = 0, timeout = -1;
		long long now = now_ms();

		pf[n++] = (struct pollfd){ .fd = lfd4, .events = POLLIN };
		pf[n++] = (struct pollfd){ .fd = lfd6, .events = POLLIN };
		pf[n++] = (struct pollfd){ .fd = pidfd >= 0 ? pidfd : -1, .events = POLLIN };
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
			if (k->ueof && !k->pb && !k->cshut) {
				long long left = k->fin_at - now;
				if (left < 1)
					left = 1;
				if (timeout < 0 || left < timeout)
					timeout = (int)left;
			}
			/* A side with nothing left to do is left out: its
			 * POLLHUP would wake the loop for nothing. */
			idx[i][0] = n;
			pf[n++] = (struct pollfd){ .fd = ce ? k->c : -1, .events = ce };
			idx[i][1] = n;
			pf[n++] = (struct pollfd){ .fd = ue ? k->u : -1, .events = ue };
		}
		if (poll(pf, (nfds_t)n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			_exit(SBX_EXIT_SYS);
		}
		if (pidfd >= 0 && pf[2].revents)
			gone = 1;
		if (pf[0].revents)
			accept_all(lfd4, ks, bfd, &pidfd, &gone);
		if (pf[1].revents)
			accept_all(lfd6, ks, bfd, &pidfd, &gone);
		if (gone) {
			/* The broker is gone: reset everything, refuse what comes. */
			close(lfd4);
			close(lfd6);
			for (int i = 0; i < MAXCONN; i++)
				if (ks[i].c >= 0)
					drop(&ks[i], 1);
			_exit(0);
		}
		now = now_ms();
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
			if ((cr & (POLLIN | POLLHUP | POLLERR)) && !k->ceof && !k->afull)
				bad |= pump_in(k->c, k->a[1], &k->pa, &k->afull, &k->ceof);
			if ((ur & (POLLIN | POLLHUP | POLLERR)) && !k->ueof && !k->bfull) {
				bad |= pump_in(k->u, k->b[1], &k->pb, &k->bfull, &k->ueof);
				if (k->ueof)
					k->fin_at = now + (pidfd >= 0 ? GRACE_MS : 0);
			}
			if (!bad && k->pa && (ur & (POLLOUT | POLLERR | POLLHUP)))
				bad |= pump_out(k->a[0], k->u, &k->pa, &k->afull);
			if (!bad && k->pb && (cr & (POLLOUT | POLLERR | POLLHUP)))
				bad |= pump_out(k->b[0], k->c, &k->pb, &k->bfull);
			if (bad) {
				drop(k, 1);
				continue;
			}
			if (k->ceof && !k->pa && !k->ushut) {
				shutdown(k->u, SHUT_WR);
				k->ushut = 1;
			}
			if (k->ueof && !k->pb && !k->cshut && now >= k->fin_at) {
				shutdown(k->c, SHUT_WR);
				k->cshut = 1;
			}
			if (k->cshut && k->ushut)
				drop(k, 0);
		}
	}
}

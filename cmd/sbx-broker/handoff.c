/* Sandboxes handed over by sbx-ns: the listeners of a sandbox come over
 * the broker's own socket with SBX-HANDOFF 1, and the connection they
 * came on becomes the sandbox's channel. */
#include "conn.h"
#include "json.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* A listener the broker will serve: a listening TCP socket on a loopback
 * address. NULL, or why not. */
static const char *check_listener(int fd, char *where, size_t wsz)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	int v[4];
	const int opt[4] = { SO_DOMAIN, SO_TYPE, SO_PROTOCOL, SO_ACCEPTCONN };

	for (int i = 0; i < 4; i++) {
		socklen_t vl = sizeof v[i];
		if (getsockopt(fd, SOL_SOCKET, opt[i], &v[i], &vl) < 0)
			return "not a socket";
	}
	if ((v[0] != AF_INET && v[0] != AF_INET6) || v[1] != SOCK_STREAM || v[2] != IPPROTO_TCP)
		return "not a TCP socket";
	if (!v[3])
		return "not listening";
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return "no address";
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
		char t[INET_ADDRSTRLEN];
		if ((ntohl(a->sin_addr.s_addr) >> 24) != 127)
			return "not on a loopback address";
		inet_ntop(AF_INET, &a->sin_addr, t, sizeof t);
		snprintf(where, wsz, "%s:%u", t, ntohs(a->sin_port));
	} else {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
		if (!IN6_IS_ADDR_LOOPBACK(&a->sin6_addr))
			return "not on a loopback address";
		snprintf(where, wsz, "[::1]:%u", ntohs(a->sin6_port));
	}
	return NULL;
}

static void sandbox_log(struct loop *L, const struct sandbox *sb, const char *event, const char *why)
{
	struct sbx_json j;
	char t[40];

	iso_time(t, sizeof t);
	sbx_json_begin(&j, "sbx-broker", "sandbox");
	sbx_json_str(&j, "time", t);
	sbx_json_str(&j, "state", event);
	sbx_json_str(&j, "listeners", sb->where);
	sbx_json_str(&j, "reason", why);
	log_line(L, &j);
}

/* The sandbox is over (its channel ended) or the broker is: its listeners
 * close, and so does every connection accepted from them. */
void sandbox_end(struct loop *L, struct sandbox *sb, const char *why)
{
	struct conn *c, *next;

	if (sb->dead)
		return;
	for (size_t i = 0; i < sb->nl; i++) {
		/* Removed by name: another process may hold the same socket,
		 * and epoll forgets a file only when its last fd closes. */
		epoll_ctl(L->ep, EPOLL_CTL_DEL, sb->lfd[i], NULL);
		close(sb->lfd[i]);
	}
	/* Its connections' lines go out before the channel closes: sbx-ns
	 * reads the channel to its end. */
	for (c = L->head; c; c = next) {
		next = c->next;
		if (c->sb == sb) {
			set_reason(c, "%s", why);
			conn_close(L, c);
		}
	}
	sandbox_flush(sb);
	epoll_ctl(L->ep, EPOLL_CTL_DEL, sb->ch, NULL);
	close(sb->ch);
	sandbox_log(L, sb, "detached", why);
	if (sb->prev)
		sb->prev->next = sb->next;
	else
		L->sbs = sb->next;
	if (sb->next)
		sb->next->prev = sb->prev;
	L->nsbs--;
	sb->dead = 1;
	sb->next_dead = L->dead_sbs;
	L->dead_sbs = sb;
}

void on_channel(struct loop *L, struct sandbox *sb)
{
	char b[64];
	ssize_t n = recv(sb->ch, b, sizeof b, MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	sandbox_end(L, sb, n > 0 ? "bytes on the sandbox's channel" : "the sandbox ended");
}

static void handoff_refused(int fd, const char *why)
{
	char line[256];
	int n = snprintf(line, sizeof line, "SBX-HANDOFF REFUSED %s\n", why);

	if (n > 0 && (size_t)n < sizeof line)
		(void)!send(fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* A connection that came with file descriptors: sbx-ns handing over the
 * sandbox's listeners with HANDOFF_HELLO. Anything else that carries
 * descriptors is refused. The connection becomes the sandbox's channel;
 * the answer tells sbx-ns that the listeners are served. */
static int handoff(struct loop *L, struct conn *c, int *fds, size_t nfds, int truncated)
{
	const char *why = NULL;
	struct sandbox *sb = NULL;
	struct epoll_event e;

	c->decision = "refused";
	snprintf(c->method, sizeof c->method, "HANDOFF");
	if (truncated || nfds > SB_FDS)
		why = "more file descriptors than a sandbox has listeners";
	else if (c->inlen != sizeof HANDOFF_HELLO - 1 || memcmp(c->in, HANDOFF_HELLO, c->inlen))
		why = "file descriptors without a handoff";
	else if (L->nsbs >= SB_MAX)
		why = "too many sandboxes";
	else if (!(sb = calloc(1, sizeof *sb)))
		why = "out of memory";
	for (size_t i = 0; !why && i < nfds; i++) {
		char w[48];
		why = check_listener(fds[i], w, sizeof w);
		if (!why)
			snprintf(sb->where + strlen(sb->where), sizeof sb->where - strlen(sb->where), "%s%s",
				 i ? " " : "", w);
		else
			snprintf(c->reason, sizeof c->reason, "listener %zu: %s", i + 1, why);
	}
	if (why) {
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		free(sb);
		set_reason(c, "%s", why);
		handoff_refused(c->cfd, c->reason);
		c->answered = 1;
		conn_close(L, c);
		return -1;
	}
	sb->ch = c->cfd;
	sb->nl = nfds;
	sb->hch = (struct handle){ K_SB_CHANNEL, NULL, sb };
	e = (struct epoll_event){ .events = EPOLLIN | EPOLLRDHUP, .data.ptr = &sb->hch };
	if (epoll_ctl(L->ep, EPOLL_CTL_MOD, sb->ch, &e) < 0)
		why = "unable to watch the channel";
	for (size_t i = 0; i < nfds; i++) {
		sb->lfd[i] = fds[i];
		sb->hl[i] = (struct handle){ K_SB_LISTEN, NULL, sb };
		if (!why && (fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK) < 0 ||
			     ep_add(L, fds[i], &sb->hl[i], EPOLLIN) < 0))
			why = "unable to watch a listener";
	}
	sb->next = L->sbs;
	if (L->sbs)
		L->sbs->prev = sb;
	L->sbs = sb;
	L->nsbs++;
	c->cfd = -1; /* the channel now */
	if (why) {
		handoff_refused(sb->ch, why);
		set_reason(c, "%s", why);
		conn_close(L, c);
		sandbox_end(L, sb, why);
		return -1;
	}
	if (send(sb->ch, HANDOFF_OK, sizeof HANDOFF_OK - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		set_reason(c, "sbx-ns went away");
		conn_close(L, c);
		sandbox_end(L, sb, "sbx-ns went away");
		return -1;
	}
	c->decision = "allowed";
	set_reason(c, "sandbox listeners %s", sb->where);
	sandbox_log(L, sb, "attached", NULL);
	conn_close(L, c);
	return -1;
}

/* The first read of a connection on the broker's own socket also takes
 * any file descriptors sent with it. Same results as fill(). */
int first_read(struct loop *L, struct conn *c)
{
	char cbuf[CMSG_SPACE((SB_FDS + 1) * sizeof(int))];
	struct iovec iov;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
	int fds[SB_FDS + 1];
	size_t nfds = 0;
	ssize_t r;

	if (!c->in) {
		c->in = malloc(READ_FIRST);
		if (!c->in)
			return -1;
		c->incap = READ_FIRST;
	}
	iov = (struct iovec){ c->in, c->incap };
	do
		r = recvmsg(c->cfd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r > 0)
		c->inlen = (size_t)r;
	for (struct cmsghdr *cm = r >= 0 ? CMSG_FIRSTHDR(&m) : NULL; cm; cm = CMSG_NXTHDR(&m, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
			if (nfds < sizeof fds / sizeof fds[0])
				fds[nfds++] = fd;
			else
				close(fd);
		}
	}
	if (nfds)
		return handoff(L, c, fds, nfds, (m.msg_flags & MSG_CTRUNC) != 0) < 0 ? -2 : 0;
	if (r > 0)
		return 1;
	if (r == 0)
		return 0;
	return errno == EAGAIN || errno == EWOULDBLOCK ? 1 : -1;
}

/* Sandboxes handed over by sbx-ns: the listeners of a sandbox come over
 * the broker's own socket with SBX_HANDOFF_HELLO (in transparent mode
 * SBX_HANDOFF_TRANSPARENT, with the DNS sockets and the captured ports'
 * listeners; lib/handoff.h), and the connection they came on becomes the
 * sandbox's channel. */
#include "conn.h"
#include "json.h"
#include "fdpass.h"

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

/* A transparent sandbox's other sockets: the DNS socket (UDP) and
 * listener (TCP) on 127.0.0.1:53, and a captured port's listener on
 * 0.0.0.0:port. NULL, or why not. */
static const char *check_role(int fd, enum role role, unsigned port, char *where, size_t wsz)
{
	struct sockaddr_in a;
	socklen_t len = sizeof a;
	int v[4];
	const int opt[4] = { SO_DOMAIN, SO_TYPE, SO_PROTOCOL, SO_ACCEPTCONN };
	int udp = role == R_DNS_UDP;
	uint32_t want = role == R_CAPTURE ? INADDR_ANY : INADDR_LOOPBACK;

	if (role == R_PROXY)
		return check_listener(fd, where, wsz);
	for (int i = 0; i < 4; i++) {
		socklen_t vl = sizeof v[i];
		if (getsockopt(fd, SOL_SOCKET, opt[i], &v[i], &vl) < 0)
			return "not a socket";
	}
	if (v[0] != AF_INET || v[1] != (udp ? SOCK_DGRAM : SOCK_STREAM) ||
	    v[2] != (udp ? IPPROTO_UDP : IPPROTO_TCP))
		return udp ? "not a UDP socket over IPv4" : "not a TCP socket over IPv4";
	if (!udp && !v[3])
		return "not listening";
	if (getsockname(fd, (struct sockaddr *)&a, &len) < 0 || a.sin_family != AF_INET)
		return "no address";
	if (ntohl(a.sin_addr.s_addr) != want || ntohs(a.sin_port) != port)
		return role == R_CAPTURE ? "not the wildcard listener of the next captured port" :
		       "not on 127.0.0.1:53";
	snprintf(where, wsz, role == R_CAPTURE ? "%u" : udp ? "dns 127.0.0.1:53/udp" : "127.0.0.1:53/tcp", port);
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
	broker_synth_free(sb->synth);
	sb->synth = NULL;
	dns_log_flush(L, sb);
	/* Its connections' lines go out before the channel closes: sbx-ns
	 * reads the channel to its end. */
	for (c = L->head; c; c = next) {
		next = c->next;
		if (c->sb == sb) {
			set_reason(c, "%s", why);
			conn_close(L, c);
		}
	}
	/* Its lookups with workers keep the lane until they come back. */
	broker_lane_release(&L->res, sb->lane);
	sb->lane = NULL;
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
	int n = snprintf(line, sizeof line, "%s%s\n", SBX_HANDOFF_REFUSED, why);

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
	unsigned ports[SBX_CAPTURE_MAX];
	size_t nports = 0, most = 2;
	int transparent = c->inlen == sizeof SBX_HANDOFF_TRANSPARENT - 1 &&
			  !memcmp(c->in, SBX_HANDOFF_TRANSPARENT, c->inlen);

	c->decision = "refused";
	snprintf(c->method, sizeof c->method, "HANDOFF");
	if (transparent) {
		nports = broker_capture_ports(L->cfg, ports);
		most = 4 + nports;
	}
	if (truncated || nfds > most)
		why = "more file descriptors than a sandbox has listeners";
	else if (transparent && nfds != most)
		why = "fewer file descriptors than a transparent sandbox has sockets";
	else if (!transparent &&
		 (c->inlen != sizeof SBX_HANDOFF_HELLO - 1 || memcmp(c->in, SBX_HANDOFF_HELLO, c->inlen)))
		why = "file descriptors without a handoff";
	else if (L->nsbs >= SB_MAX)
		why = "too many sandboxes";
	else if (!(sb = calloc(1, sizeof *sb)))
		why = "out of memory";
	for (size_t i = 0; !why && i < nfds; i++) {
		char w[48];
		enum role role = i < 2 ? R_PROXY : i == 2 ? R_DNS_UDP : i == 3 ? R_DNS_TCP : R_CAPTURE;
		why = check_role(fds[i], role, role == R_CAPTURE ? ports[i - 4] : SBX_DNS_PORT, w, sizeof w);
		if (!why && role == R_CAPTURE && i == 4)
			snprintf(sb->where + strlen(sb->where), sizeof sb->where - strlen(sb->where), " captured");
		if (!why)
			sb->role[i] = (unsigned char)role;
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
		sb->hl[i] = (struct handle){ sb->role[i] == R_DNS_UDP ? K_SB_DNS : K_SB_LISTEN, NULL, sb };
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
	if (send(sb->ch, SBX_HANDOFF_OK, sizeof SBX_HANDOFF_OK - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
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
	int fds[SB_FDS + 1], truncated;
	size_t nfds;
	ssize_t r;

	if (!c->in) {
		c->in = malloc(READ_FIRST);
		if (!c->in)
			return -1;
		c->incap = READ_FIRST;
	}
	r = sbx_recv_fds(c->cfd, c->in, c->incap, MSG_DONTWAIT, fds, sizeof fds / sizeof fds[0],
			 &nfds, &truncated);
	if (r > 0)
		c->inlen = (size_t)r;
	if (nfds)
		return handoff(L, c, fds, nfds, truncated) < 0 ? -2 : 0;
	if (r > 0)
		return 1;
	if (r == 0)
		return 0;
	return errno == EAGAIN || errno == EWOULDBLOCK ? 1 : -1;
}

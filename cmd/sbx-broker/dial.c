/* Dialling the checked addresses in turn (or the upstream proxy, which
 * is asked to CONNECT to the checked address). */
#include "conn.h"
#include "netaddr.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

int dial(struct loop *L, struct conn *c)
{
	const struct broker_cfg *cfg = L->cfg;

	while (c->ai < c->rq->naddrs) {
		const struct sockaddr_storage *dst = cfg->proxy ? &cfg->upstream : &c->rq->addrs[c->ai];
		socklen_t len = dst->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
		int fd;

		sbx_addr_text((const struct sockaddr *)&c->rq->addrs[c->ai], c->addr, sizeof c->addr);
		fd = socket(dst->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			refuse(L, c, 502, "unable to create a socket: %s", strerror(errno));
			return -1;
		}
		if (connect(fd, (const struct sockaddr *)dst, len) == 0 || errno == EINPROGRESS) {
			c->ofd = fd;
			if (ep_add(L, fd, &c->ho, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) < 0) {
				refuse(L, c, 502, "unable to watch a socket: %s", strerror(errno));
				return -1;
			}
			c->st = S_DIAL;
			return 0;
		}
		set_reason(c, "unable to connect to %s: %s", c->addr, strerror(errno));
		close(fd);
		if (cfg->proxy)
			break;
		c->ai++;
	}
	refuse(L, c, 502, "unable to connect");
	return -1;
}

int dial_done(struct loop *L, struct conn *c)
{
	int err = 0, one = 1;
	socklen_t len = sizeof err;
	struct tcp_info ti;
	socklen_t tl = sizeof ti;

	/* Any event of the connection's brings it here, the client's too:
	 * while the handshake is under way there is nothing to decide. */
	if (getsockopt(c->ofd, IPPROTO_TCP, TCP_INFO, &ti, &tl) < 0)
		err = errno;
	else if (ti.tcpi_state == TCP_SYN_SENT)
		return 0;
	else if (ti.tcpi_state == TCP_ESTABLISHED || ti.tcpi_state == TCP_CLOSE_WAIT)
		err = 0; /* connected: there is no error to take */
	else if (getsockopt(c->ofd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	else if (!err)
		err = ECONNREFUSED; /* closed, its error already taken */
	if (err == EINPROGRESS || err == EALREADY)
		return 0;
	if (err) {
		set_reason(c, "unable to connect to %s: %s", c->addr, strerror(err));
		close(c->ofd);
		c->ofd = -1;
		if (L->cfg->proxy) {
			refuse(L, c, 502, "unable to connect to the upstream proxy");
			return -1;
		}
		c->ai++;
		c->reason[0] = '\0';
		if (c->ai >= c->rq->naddrs) {
			refuse(L, c, 502, "unable to connect to %s: %s", c->addr, strerror(err));
			return -1;
		}
		return dial(L, c);
	}
	setsockopt(c->ofd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	req_free(L, c->rq);
	c->rq = NULL;
	if (L->cfg->proxy) {
		char line[200];
		int v6 = strchr(c->addr, ':') != NULL;
		int n = snprintf(line, sizeof line, "CONNECT %s%s%s:%u HTTP/1.1\r\nHost: %s%s%s:%u\r\n\r\n",
				 v6 ? "[" : "", c->addr, v6 ? "]" : "", c->port,
				 v6 ? "[" : "", c->addr, v6 ? "]" : "", c->port);
		if (send(c->ofd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) != n) {
			refuse(L, c, 502, "unable to send CONNECT to the upstream proxy");
			return -1;
		}
		c->st = S_UPSTREAM;
		return run(L, c);
	}
	return c->svc ? tls_start(L, c) : established(L, c);
}

int read_upstream(struct loop *L, struct conn *c)
{
	struct sbx_http_head *h;
	int r, p;

	r = fill(c, c->ofd, &c->rin, &c->rinlen, &c->rincap, 16 * 1024);
	h = malloc(sizeof *h);
	if (!h) {
		refuse(L, c, 502, "out of memory");
		return -1;
	}
	p = sbx_http_parse_response(c->rin, c->rinlen, 16 * 1024, h);
	if (p == SBX_HTTP_INCOMPLETE && r == 1) {
		free(h);
		return 0;
	}
	if (p == SBX_HTTP_INCOMPLETE || p == SBX_HTTP_BAD) {
		refuse(L, c, 502, "upstream proxy: %s", p == SBX_HTTP_BAD ? h->why : "no answer to CONNECT");
		free(h);
		return -1;
	}
	if (h->status < 200 || h->status > 299) {
		refuse(L, c, 502, "upstream proxy answered %d", h->status);
		free(h);
		return -1;
	}
	if (h->head_len != c->rinlen) {
		free(h);
		refuse(L, c, 502, "upstream proxy sent bytes after its answer");
		return -1;
	}
	free(h);
	free(c->rin);
	c->rin = NULL;
	c->rinlen = c->rincap = 0;
	return c->svc ? tls_start(L, c) : established(L, c);
}

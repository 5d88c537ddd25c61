/* Transparent sandboxes (sbx-ns --net broker:PATH,transparent): the DNS
 * socket and listener the sandbox handed over, and connections to its
 * captured ports. The policy and the DNS answers are transparent.c's;
 * here is their I/O on the loop. */
#include "conn.h"
#include "clock.h"
#include "dns.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#define DNS_BATCH 64      /* UDP queries per wakeup: one sandbox's flood waits its turn */
#define DNS_TCP_QUERIES 16 /* per connection */

static void dns_line(struct loop *L, struct sandbox *sb, int untold, const char *decision, const char *name,
		     const char *addr, const char *reason)
{
	struct conn tmp = { .decision = decision, .start_ms = sbx_now_ms(), .port = SBX_DNS_PORT, .sb = sb,
			    .untold = untold };

	snprintf(tmp.method, sizeof tmp.method, "DNS");
	snprintf(tmp.host, sizeof tmp.host, "%s", name);
	snprintf(tmp.addr, sizeof tmp.addr, "%s", addr);
	snprintf(tmp.reason, sizeof tmp.reason, "%s", reason);
	log_conn(L, &tmp);
}

/* One line per refused query and per name given an address (at most
 * 256 a sandbox), in the connection's format: method DNS, port 53. The
 * sandbox is told of the refusals; the names it was given are the
 * broker's log's. The lines are the sandbox's, within its log budget
 * (log.c) like its connections'. */
static void dns_log(struct loop *L, struct sandbox *sb, const struct broker_dns_result *res)
{
	dns_line(L, sb, !strcmp(res->decision, "allowed"), res->decision, res->name, res->addr, res->reason);
}

void on_dns(struct loop *L, struct sandbox *sb, int fd)
{
	unsigned char q[SBX_DNS_MSG_MAX + 1], a[SBX_DNS_ANSWER_MAX];

	for (int i = 0; i < DNS_BATCH; i++) {
		struct sockaddr_storage from;
		socklen_t fl = sizeof from;
		struct broker_dns_result res;
		ssize_t n = recvfrom(fd, q, sizeof q, MSG_DONTWAIT | MSG_TRUNC, (struct sockaddr *)&from, &fl);
		size_t k;

		if (n < 0)
			return;
		/* MSG_TRUNC: n is the datagram's length, past the buffer when
		 * too long, and the parser refuses it by that length. */
		k = broker_dns(L->cfg, &sb->synth, q, (size_t)n < sizeof q ? (size_t)n : sizeof q, a, &res);
		if (k)
			(void)!sendto(fd, a, k, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&from, fl);
		if (res.log)
			dns_log(L, sb, &res);
	}
}

/* DNS over TCP: each message after its 2-byte length, answered in turn. */
int dns_tcp(struct loop *L, struct conn *c)
{
	unsigned char a[2 + SBX_DNS_ANSWER_MAX];
	int r = fill(c, c->cfd, &c->in, &c->inlen, &c->incap, 2 * (2 + SBX_DNS_MSG_MAX));

	for (;;) {
		struct broker_dns_result res;
		size_t mlen, k;

		if (c->inlen < 2)
			break;
		mlen = (size_t)((unsigned char)c->in[0] << 8 | (unsigned char)c->in[1]);
		if (mlen > SBX_DNS_MSG_MAX || mlen < 12) {
			c->decision = "refused";
			set_reason(c, "DNS: a TCP message of %zu bytes", mlen);
			c->quiet = 0;
			conn_close(L, c);
			return -1;
		}
		if (c->inlen < 2 + mlen)
			break;
		k = broker_dns(L->cfg, &c->sb->synth, (unsigned char *)c->in + 2, mlen, a + 2, &res);
		if (res.log)
			dns_log(L, c->sb, &res);
		a[0] = (unsigned char)(k >> 8);
		a[1] = (unsigned char)k;
		if (k && send(c->cfd, a, k + 2, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)(k + 2)) {
			conn_close(L, c);
			return -1;
		}
		memmove(c->in, c->in + 2 + mlen, c->inlen - 2 - mlen);
		c->inlen -= 2 + mlen;
		if (++c->nq == DNS_TCP_QUERIES) {
			conn_close(L, c);
			return -1;
		}
	}
	if (r <= 0 || c->inlen == 2 * (2 + SBX_DNS_MSG_MAX)) {
		c->client_eof = r == 0;
		conn_close(L, c);
		return -1;
	}
	return 0;
}

/* A connection to a captured port: its destination is a synthetic
 * address of this sandbox, which names the name; then exactly a CONNECT's
 * policy for that name and port, or --allow-tcp's. */
int capture_start(struct loop *L, struct conn *c)
{
	struct sockaddr_in a;
	socklen_t al = sizeof a;
	const char *name;
	char text[INET_ADDRSTRLEN] = "?";

	c->captured = 1;
	c->answered = 1; /* a TLS or raw client reads no HTTP status */
	c->decision = "refused";
	snprintf(c->method, sizeof c->method, "CAPTURED");
	if (getsockname(c->cfd, (struct sockaddr *)&a, &al) < 0 || a.sin_family != AF_INET) {
		refuse(L, c, 403, "captured connection without an IPv4 destination");
		return -1;
	}
	c->port = ntohs(a.sin_port);
	inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
	name = broker_synth_name(c->sb->synth, ntohl(a.sin_addr.s_addr));
	if (!name) {
		refuse(L, c, 403, "destination %s:%u is no name of this sandbox's DNS", text, c->port);
		return -1;
	}
	snprintf(c->host, sizeof c->host, "%s", name);
	if (broker_opaque(L->cfg, c->host, c->port)) {
		c->opaque = 1;
		snprintf(c->method, sizeof c->method, "OPAQUE");
		return resolve_start(L, c);
	}
	if (broker_service_find(L->cfg, c->host) && c->port != 80) {
		c->svc = broker_service_find(L->cfg, c->host);
		refuse(L, c, 403, "port %u refused: a route is asked on port 80 (http://%s/)", c->port, c->host);
		return -1;
	}
	if (c->port == 80) {
		c->answered = 0;
		c->method[0] = '\0';
		c->st = S_HEAD;
		return read_head(L, c);
	}
	snprintf(c->method, sizeof c->method, "TLS");
	c->is_connect = 1;
	if (!broker_port_allowed(L->cfg, c->port)) {
		refuse(L, c, 403, "port %u not allowed (--allow-port)", c->port);
		return -1;
	}
	if (!broker_host_allowed(L->cfg, c->host)) {
		refuse(L, c, 403, "host %s not on the allowlist (%s)", c->host, L->cfg->hosts_from);
		return -1;
	}
	c->st = S_HELLO;
	return run(L, c);
}


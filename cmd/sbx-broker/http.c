/* The client's request: its head read and checked against the policy,
 * the name handed to the resolver; once the origin is reached, the answer
 * to CONNECT, or one plain HTTP request rebuilt and its response relayed. */
#include "conn.h"
#include "http1.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>

/* sbx-ns checks that the broker answers before it builds a sandbox: it
 * connects to the broker's own socket, writes SBX_PROBE and closes. It
 * is neither a request nor a refusal, and is not logged. In transparent
 * mode the probe (SBX_PROBE_PORTS) asks for the ports to capture, and the
 * answer comes before the close; the landlock tier's (SBX_PROBE_TCP) asks
 * which sockets are the broker's --listen-tcp. */

/* SBX_TCP and the inode of each --listen-tcp listening socket. */
static size_t tcp_line(const struct broker_cfg *cfg, char *buf, size_t sz)
{
	int fds[2] = { cfg->tcp_fd, cfg->listen_is_tcp ? cfg->listen_fd : -1 };
	size_t len = (size_t)snprintf(buf, sz, "%s", SBX_TCP);
	struct stat st;

	for (size_t i = 0; i < 2; i++)
		if (fds[i] >= 0 && !fstat(fds[i], &st) && len < sz)
			len += (size_t)snprintf(buf + len, sz - len, " %llu", (unsigned long long)st.st_ino);
	if (len < sz)
		len += (size_t)snprintf(buf + len, sz - len, "\n");
	return len < sz ? len : 0;
}

/* 1: the probe's first bytes, wait for the rest; -1: a probe, c is gone;
 * 0: not a probe. */
static int probe(struct loop *L, struct conn *c, int r)
{
	size_t n = sizeof SBX_PROBE - 1;

	/* The probe lines have the same length and differ in their last
	 * digit only. */
	if (c->sb || !c->inlen || c->inlen > n ||
	    (memcmp(c->in, SBX_PROBE, c->inlen) && memcmp(c->in, SBX_PROBE_PORTS, c->inlen) &&
	     memcmp(c->in, SBX_PROBE_TCP, c->inlen)))
		return 0;
	if (c->inlen < n)
		return r > 0 ? 1 : 0;
	if (!memcmp(c->in, SBX_PROBE_PORTS, n)) {
		char line[SBX_CAPTURE_MAX * 6 + 16];
		size_t len = broker_ports_line(L->cfg, line, sizeof line);
		if (len)
			(void)!send(c->cfd, line, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	} else if (!memcmp(c->in, SBX_PROBE_TCP, n)) {
		char line[64];
		size_t len = tcp_line(L->cfg, line, sizeof line);
		if (len)
			(void)!send(c->cfd, line, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	c->quiet = 1;
	conn_close(L, c);
	return -1;
}

int broker_port_allowed(const struct broker_cfg *cfg, unsigned port)
{
	for (size_t i = 0; i < cfg->nports; i++)
		if (cfg->ports[i] == port)
			return 1;
	return 0;
}

int broker_host_allowed(const struct broker_cfg *cfg, const char *host)
{
	if (!cfg->nhosts)
		return cfg->proxy; /* proxy mode may leave the names open */
	for (size_t i = 0; i < cfg->nhosts; i++)
		if (sbx_hostpat_match(&cfg->hosts[i], host))
			return 1;
	return 0;
}

int http_hop_by_hop(const struct sbx_http_field *f)
{
	static const char *const names[] = { "connection", "proxy-connection", "keep-alive",
		"proxy-authorization", "proxy-authenticate", "te", "trailer", "expect", NULL };
	for (size_t i = 0; names[i]; i++)
		if (f->nlen == strlen(names[i]) && !strncasecmp(f->name, names[i], f->nlen))
			return 1;
	return 0;
}

/* Plain HTTP: the request is rebuilt from what was parsed, in origin
 * form, without hop-by-hop fields, and closes after one response. It
 * waits in up.buf, with the body bytes already read, for the origin. */
static int forward_request(struct loop *L, struct conn *c, const struct sbx_http_head *h)
{
	size_t n, cap, body;
	char *out;

	/* Every field may grow by the ": " the client left out; the request
	 * line only shrinks (origin form); then "Connection: close". */
	cap = h->head_len + 2 * h->nfields + 64 + (c->inlen - h->head_len);
	out = malloc(cap);
	if (!out) {
		refuse(L, c, 502, "out of memory");
		return -1;
	}
	n = (size_t)snprintf(out, cap, "%.*s %.*s HTTP/1.1\r\n", (int)h->mlen, h->method, (int)h->plen, h->path);
	for (size_t i = 0; i < h->nfields; i++) {
		const struct sbx_http_field *f = &h->f[i];
		if (http_hop_by_hop(f))
			continue;
		memcpy(out + n, f->name, f->nlen);
		n += f->nlen;
		memcpy(out + n, ": ", 2);
		memcpy(out + n + 2, f->value, f->vlen);
		n += 2 + f->vlen;
		memcpy(out + n, "\r\n", 2);
		n += 2;
	}
	memcpy(out + n, "Connection: close\r\n\r\n", 21);
	n += 21;
	body = c->inlen - h->head_len;
	memcpy(out + n, c->in + h->head_len, body);
	n += body;
	c->up.buf = out;
	c->up.len = n;
	c->body_left = (h->has_length ? h->length : 0) - body;
	c->expect_continue = h->expect_continue;
	free(c->in);
	c->in = NULL;
	c->inlen = c->incap = 0;
	return 0;
}

/* A proxy request names its destination; a captured one (port 80) is in
 * origin form and its Host must be the name connected to. */
static int parse_head(const struct conn *c, struct sbx_http_head *h)
{
	if (c->captured)
		return sbx_http_parse_origin(c->in, c->inlen, HEAD_MAX, c->host, h);
	return sbx_http_parse_request(c->in, c->inlen, HEAD_MAX, h);
}

int read_head(struct loop *L, struct conn *c)
{
	struct sbx_http_head hh, *h = &hh;
	int r = 1, p = SBX_HTTP_INCOMPLETE;
	size_t parsed = c->inlen; /* what earlier events read was no whole head */
	size_t cap;

	if (!c->inlen && !c->sb) {
		/* Until the first bytes, every read is this one: a plain
		 * read would drop descriptors that come with them. */
		r = first_read(L, c);
		if (r == -2)
			return -1; /* a handoff: c is gone */
		if (r > 0 && !c->inlen)
			return 0;
		p = parse_head(c, h);
		parsed = c->inlen;
	}
	/* Read on until the socket is empty, except after a whole CONNECT
	 * head (or a bad one): what follows a CONNECT is read by the step
	 * that checks the ClientHello, and the read could only say EAGAIN. */
	cap = c->incap;
	if (r > 0 && p != SBX_HTTP_BAD && !(p == SBX_HTTP_DONE && h->is_connect))
		r = fill(c, c->cfd, &c->in, &c->inlen, &c->incap, HEAD_MAX);
	/* A whole head reads the same with more bytes after it: it is parsed
	 * again only when the buffer it points into moved. */
	if (c->inlen != parsed && (p != SBX_HTTP_DONE || c->incap != cap))
		p = parse_head(c, h);
	switch (probe(L, c, r)) {
	case -1: return -1;
	case 1: return 0;
	}
	if (p == SBX_HTTP_BAD) {
		c->decision = "refused";
		refuse(L, c, h->status_out, "%s", h->why);
		return -1;
	}
	if (!r)
		c->client_eof = 1;
	if (p == SBX_HTTP_INCOMPLETE) {
		if (r < 0 || r == 0) {
			set_reason(c, r ? "read failed" : "client closed before a full request");
			conn_close(L, c);
			return -1;
		}
		return 0;
	}
	snprintf(c->method, sizeof c->method, "%.*s", (int)h->mlen, h->method);
	{
		size_t hn = strnlen(h->host, sizeof h->host);
		if (hn >= sizeof c->host)
			hn = sizeof c->host - 1;
		memcpy(c->host, h->host, hn);
		c->host[hn] = '\0';
	}
	c->port = h->port;
	c->head_len = h->head_len;
	c->is_connect = h->is_connect;
	c->decision = "refused";
	if (L->cfg->nsvc && service_placeholders(L, c, h) < 0)
		return -1;
	if (broker_service_find(L->cfg, h->host)) {
		if (service_check(L, c, broker_service_find(L->cfg, h->host)) < 0)
			return -1;
	} else if (!broker_port_allowed(L->cfg, h->port)) {
		refuse(L, c, 403, "port %u not allowed (--allow-port)", c->port);
		return -1;
	} else if (!broker_host_allowed(L->cfg, h->host)) {
		refuse(L, c, 403, "host %s not on the allowlist (%s)", c->host, L->cfg->hosts_from);
		return -1;
	}
	if (!c->is_connect) {
		uint64_t body = h->has_length ? h->length : 0;
		if (body > L->cfg->max_req || h->head_len > L->cfg->max_req - body) {
				refuse(L, c, 413, "request larger than --max-request-bytes");
			return -1;
		}
		if (c->inlen - h->head_len > body) {
				refuse(L, c, 400, "bytes after the request");
			return -1;
		}
		/* A body still to come is searched for every placeholder
		 * (relay.c); what came with the head was (rules.c), and its
		 * tail is held to be searched with the next read. */
		if (L->cfg->nsvc && body > c->inlen - h->head_len && (c->up.keep = service_ph_keep(L->cfg))) {
			c->up.scan = L->cfg;
			c->up.nhold = c->up.keep < c->inlen - h->head_len ? c->up.keep : c->inlen - h->head_len;
			c->inlen -= c->up.nhold;
			memcpy(c->up.hold, c->in + c->inlen, c->up.nhold);
		}
		if ((c->svc ? service_forward(L, c, h) : forward_request(L, c, h)) < 0)
			return -1;
		c->body_left -= c->up.nhold;
	}
	return resolve_start(L, c);
}

/* The name goes to the resolver in its sandbox's lane (resolve.c), unless
 * it needs no worker: an answer kept from this second for this sandbox,
 * or a pinned name, checked here. */
int resolve_start(struct loop *L, struct conn *c)
{
	struct broker_lane *lane = &L->res.own_sockets;

	if (c->sb && !c->sb->lane)
		c->sb->lane = broker_lane_new(&L->res);
	if (c->sb)
		lane = c->sb->lane;
	c->rq = lane ? req_new(L) : NULL;
	if (!c->rq) {
		refuse(L, c, 502, "out of memory");
		return -1;
	}
	c->rq->conn = c;
	c->rq->lane_id = lane->id;
	c->rq->port = c->port;
	c->rq->allow_private = L->cfg->allow_private;
	snprintf(c->rq->host, sizeof c->rq->host, "%s", c->host);
	if (broker_answers_get(&L->answers, c->rq)) {
		c->st = S_DIAL;
		c->decision = "allowed";
		return dial(L, c);
	}
	if (broker_resolve_pinned(&L->res, c->rq))
		return resolved(L, c);
	if (broker_resolver_queue(&L->res, lane, c->rq) < 0) {
		req_free(L, c->rq);
		c->rq = NULL;
		refuse(L, c, 503, "%s lookup limit reached (--max-sandbox-lookups)",
		       c->sb ? "this sandbox's" : "the broker's own sockets'");
		return -1;
	}
	c->st = S_RESOLVE;
	return 0;
}

int resolved(struct loop *L, struct conn *c)
{
	struct broker_req *q = c->rq;

	c->st = S_DIAL; /* the answer now belongs to the connection */
	if (q->refused) {
		snprintf(c->addr, sizeof c->addr, "%s", q->addr_text);
		c->decision = q->status == 403 ? "refused" : "failed";
		if (q->addr_text[0])
			refuse(L, c, q->status, "address %s refused: %s", q->addr_text, q->refused);
		else
			refuse(L, c, q->status, "%s: %s", c->host, q->refused);
		return -1;
	}
	c->decision = "allowed";
	broker_answers_put(&L->answers, q);
	return dial(L, c);
}

int established(struct loop *L, struct conn *c)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

	c->decision = "allowed";
	dir_init(&c->up, c->cfd, c->ofd, L->cfg->max_req);
	dir_init(&c->down, c->ofd, c->cfd, L->cfg->max_resp);
	if (c->opaque) {
		/* --allow-tcp: checked name, checked address, bytes as they are. */
		c->st = S_TUNNEL;
		return run(L, c);
	}
	if (c->is_connect && c->captured)
		return hello_passed(L, c); /* checked before dialling; no CONNECT to answer */
	if (c->is_connect) {
		/* The head is done with (read_head parsed it); keep any bytes
		 * the client sent after it without waiting for our answer. */
		memmove(c->in, c->in + c->head_len, c->inlen - c->head_len);
		c->inlen -= c->head_len;
		if (send(c->cfd, ok, sizeof ok - 1, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)(sizeof ok - 1)) {
			set_reason(c, "unable to answer the client");
			conn_close(L, c);
			return -1;
		}
		c->answered = 1;
		c->status = 200;
		c->st = S_HELLO;
		return run(L, c);
	}
	/* Plain HTTP: the request was built with its head parsed. */
	c->up.count = c->up.len;
	c->up.limit = UINT64_MAX; /* checked whole, against the framing, before dialling */
	c->up.left = c->body_left;
	if (c->expect_continue && c->up.left) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		(void)!send(c->cfd, cont, sizeof cont - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	c->st = S_HTTP;
	return run(L, c);
}

/* The origin's response head, checked before any of it is passed on. */
static int read_response(struct loop *L, struct conn *c)
{
	struct sbx_http_head *h;
	int r, p;

	r = fill(c, c->ofd, &c->rin, &c->rinlen, &c->rincap, RESP_HEAD_MAX);
	if (r < 0 && tls_why(c)) {
		refuse(L, c, 502, "TLS with %s: %s", c->addr, tls_why(c));
		return -1;
	}
	h = malloc(sizeof *h);
	if (!h) {
		refuse(L, c, 502, "out of memory");
		return -1;
	}
	for (;;) {
		size_t body;
		p = sbx_http_parse_response(c->rin, c->rinlen, RESP_HEAD_MAX, h);
		if (p == SBX_HTTP_INCOMPLETE && r == 1) {
			free(h);
			return 0;
		}
		if (p != SBX_HTTP_DONE) {
			refuse(L, c, 502, "%s", p == SBX_HTTP_BAD ? h->why : "origin closed without an answer");
			free(h);
			return -1;
		}
		/* Interim answers (100, 103) are dropped: the broker already
		 * said 100 to a client that asked. */
		if (h->status < 200) {
			memmove(c->rin, c->rin + h->head_len, c->rinlen - h->head_len);
			c->rinlen -= h->head_len;
			continue;
		}
		if (sbx_http_no_body(&(struct sbx_http_head){ .method = c->method, .mlen = strlen(c->method) }, h->status))
			c->down.left = 0;
		else if (h->has_length)
			c->down.left = h->length;
		else
			c->down.left = UINT64_MAX; /* chunked (cut at its end) or close-delimited */
		c->down.chunked = c->down.left == UINT64_MAX && h->chunked;
		if (c->down.left != UINT64_MAX && h->head_len + c->down.left > L->cfg->max_resp) {
			refuse(L, c, 502, "response larger than --max-response-bytes");
			free(h);
			return -1;
		}
		body = c->rinlen - h->head_len;
		if (body > c->down.left)
			body = (size_t)c->down.left; /* anything past the framing is dropped */
		if (c->down.chunked) {
			long k = sbx_chunked_scan(&c->down.ck, c->rin + h->head_len, body);
			if (k < 0) {
				refuse(L, c, 502, "broken chunked framing from the origin");
				free(h);
				return -1;
			}
			body = (size_t)k;
		}
		c->down.buf = c->rin;
		c->down.len = h->head_len + body;
		c->down.count = c->down.len;
		if (c->down.left != UINT64_MAX)
			c->down.left -= body;
		else if (c->down.chunked && sbx_chunked_done(&c->down.ck))
			c->down.left = 0;
		if (c->down.count > c->down.limit) {
			/* Cut where the limit is, as when the bytes arrive
			 * later: how the origin's writes were split must not
			 * change what the client gets. */
			c->down.len = c->down.count = c->down.limit;
			c->down.left = 0;
			c->cut = 1;
		}
		c->status = h->status;
		c->rin = NULL;
		c->rinlen = c->rincap = 0;
		c->resp_head_done = 1;
		c->answered = 1;
		free(h);
		return 1;
	}
}

int http(struct loop *L, struct conn *c)
{
	int r;

	if (!c->up.done) {
		r = pump(c, &c->up, "--max-request-bytes");
		if (r < 0) {
			if (c->up.found)
				c->decision = "refused";
			refuse(L, c, c->up.found ? 403 : 502, "unable to forward the request");
			return -1;
		}
		if (r == 1) {
			if (c->up.eof && c->up.left) {
				set_reason(c, "client closed before the whole body");
				conn_close(L, c);
				return -1;
			}
			c->up.done = 1;
		}
	}
	if (c->up.done && !c->up.eof) {
		/* Exactly one request: anything after its framed body ends the
		 * connection (it was never forwarded). */
		char b;
		ssize_t n = recv(c->cfd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
		if (n > 0) {
			c->decision = "refused";
			refuse(L, c, 400, "bytes after the request");
			return -1;
		}
		if (n == 0)
			c->up.eof = 1;
	}
	if (!c->resp_head_done) {
		r = read_response(L, c);
		if (r <= 0)
			return r;
	}
	r = pump(c, &c->down, "--max-response-bytes");
	if (r < 0) {
		conn_close(L, c);
		return -1;
	}
	if (r == 1) {
		/* A Unix stream socket has no reset: a client reading a
		 * close-delimited body cannot tell a cut one from a whole
		 * one, so the log must. */
		if (c->cut)
			set_reason(c, "--max-response-bytes exceeded");
		else if ((c->down.left && c->down.left != UINT64_MAX) ||
			 (c->down.chunked && !sbx_chunked_done(&c->down.ck)))
			set_reason(c, "origin closed before the whole body");
		else if (tls_unclean(c) && c->down.left == UINT64_MAX && !c->down.chunked)
			set_reason(c, "TLS with %s: closed without close_notify; the body may be cut", c->addr);
		conn_close(L, c);
		return -1;
	}
	return 0;
}

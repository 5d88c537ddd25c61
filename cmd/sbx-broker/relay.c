/* Bytes between client and origin. Tunnelled bytes move with splice(2)
 * through a pipe per direction, so they are never copied into the
 * broker's memory; a chunked body is read and scanned for its end. A
 * tunnel opens only after the client's ClientHello names the CONNECT
 * host and carries no placeholder (rules.c). A plain HTTP request's body
 * is read in memory too when there is a placeholder to search it for. */
#include "conn.h"
#include "tlshello.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define COPY_READ (16 * 1024)

/* A failed read or write: its cause, the TLS library's for a route. */
static void io_failed(struct conn *c, const char *what)
{
	if (tls_why(c))
		set_reason(c, "TLS with %s: %s", c->addr, tls_why(c));
	else
		set_reason(c, "%s failed: %s", what, strerror(errno));
}

/* n bytes of a body in cbuf, the held ones first, searched: what cannot
 * be the start of a placeholder goes out, the rest is held for the next
 * read (all of it at the body's end). A placeholder stops the body. */
static int scan_body(struct conn *c, struct dir *d, size_t n)
{
	size_t keep = d->left && !d->eof ? d->keep : 0;

	if ((d->found = service_ph_find(d->scan, d->cbuf, n))) {
		service_ph_refused(c, d->found, "in a request body");
		return -1;
	}
	if (keep > n)
		keep = n;
	memcpy(d->hold, d->cbuf + n - keep, keep);
	d->nhold = keep;
	d->buf = d->cbuf;
	d->len = n - keep;
	d->off = 0;
	return 1;
}

/* Bytes that cannot be spliced blind are read into memory: a chunked
 * body, whose end is in its framing, the bytes of a route's TLS and a
 * body searched for placeholders. A chunked body is scanned: whatever
 * follows the last chunk and its trailer is never delivered, and the
 * response ends there, as one framed by Content-Length does. 1: bytes
 * queued (or the end), 0: would block, -1: failed, reason set. */
static int read_copy(struct conn *c, struct dir *d, const char *limit_name)
{
	size_t n = COPY_READ, held = d->nhold;
	ssize_t r;

	if (!d->chunked && d->left < n)
		n = (size_t)d->left; /* nothing past the framing is read */
	if (d->limit - d->count + 1 < n)
		n = (size_t)(d->limit - d->count + 1);
	if (!d->cbuf && !(d->cbuf = malloc(COPY_READ + sizeof d->hold))) {
		set_reason(c, "out of memory");
		return -1;
	}
	memcpy(d->cbuf, d->hold, held);
	do
		r = origin_recv(c, d->src, d->cbuf + held, n);
	while (r < 0 && errno == EINTR);
	if (r <= 0) {
		if (r == 0) {
			d->eof = 1;
			if (d->scan)
				return scan_body(c, d, held);
			return 1;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		io_failed(c, "read");
		return -1;
	}
	if (d->chunked) {
		long k = sbx_chunked_scan(&d->ck, d->cbuf, (size_t)r);
		if (k < 0) {
			set_reason(c, "broken chunked framing from the origin");
			return -1;
		}
		r = k;
		if (sbx_chunked_done(&d->ck))
			d->left = 0;
	} else if (d->left != UINT64_MAX)
		d->left -= (uint64_t)r;
	d->count += (uint64_t)r;
	if (d->count > d->limit) {
		/* The byte past the limit is never delivered. */
		set_reason(c, "%s exceeded", limit_name);
		return -1;
	}
	if (d->scan)
		return scan_body(c, d, held + (size_t)r);
	d->buf = d->cbuf;
	d->len = (size_t)r;
	d->off = 0;
	return 1;
}

/* Move what one direction can move now. 1: the source ended (or its
 * framing is complete) and everything was delivered; 0: would block;
 * -1: failed, reason set. */
int pump(struct conn *c, struct dir *d, const char *limit_name)
{
	for (;;) {
		ssize_t r;
		size_t n;

		while (d->off < d->len) {
			r = origin_send(c, d->dst, d->buf + d->off, d->len - d->off);
			if (r < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					return 0;
				io_failed(c, "write");
				return -1;
			}
			d->off += (size_t)r;
		}
		if (d->buf) {
			if (d->wipe)
				explicit_bzero(d->buf, d->len);
			if (d->buf != d->cbuf)
				free(d->buf);
			d->buf = NULL;
			d->len = d->off = 0;
		}
		if (d->inpipe) {
			r = splice(d->pipe[0], NULL, d->dst, NULL, d->inpipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (r < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN)
					return 0;
				set_reason(c, "write failed: %s", strerror(errno));
				return -1;
			}
			d->inpipe -= (size_t)r;
			continue;
		}
		if (d->eof || d->left == 0)
			return 1;
		if (d->chunked || c->tls || d->scan) {
			r = read_copy(c, d, limit_name);
			if (r < 0)
				return -1;
			if (r == 0)
				return 0;
			continue;
		}
		n = PIPE_BYTES;
		if (n > d->left)
			n = (size_t)d->left;
		/* One byte past the limit is enough to know it was crossed;
		 * that byte stays in the pipe and is never delivered. */
		if (d->limit - d->count + 1 < n)
			n = (size_t)(d->limit - d->count + 1);
		if (d->pipe[0] < 0) {
			/* Idle tunnels are the common case: the pipe (two
			 * fds, kernel buffers) waits for the first byte. */
			char b;
			r = recv(d->src, &b, 1, MSG_PEEK | MSG_DONTWAIT);
			if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return 0;
			if (r < 0 && errno == EINTR)
				continue;
			if (r == 0) {
				d->eof = 1; /* ended without a byte: no pipe needed */
				continue;
			}
			if (pipe2(d->pipe, O_NONBLOCK | O_CLOEXEC) < 0) {
				set_reason(c, "unable to create a pipe: %s", strerror(errno));
				return -1;
			}
			(void)fcntl(d->pipe[1], F_SETPIPE_SZ, PIPE_BYTES);
		}
		r = splice(d->src, NULL, d->pipe[1], NULL, n, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (r == 0) {
			d->eof = 1;
			continue;
		}
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			set_reason(c, "read failed: %s", strerror(errno));
			return -1;
		}
		d->count += (uint64_t)r;
		d->inpipe += (size_t)r;
		if (d->left != UINT64_MAX)
			d->left -= (uint64_t)r;
		if (d->count > d->limit) {
			set_reason(c, "%s exceeded", limit_name);
			return -1;
		}
	}
}

void dir_init(struct dir *d, int src, int dst, uint64_t limit)
{
	d->src = src;
	d->dst = dst;
	d->limit = limit;
	d->left = UINT64_MAX;
}

/* A plaintext TLS alert is all a client that is mid-handshake can read. */
static void tls_refuse(struct loop *L, struct conn *c, int alert, const char *why)
{
	unsigned char rec[7] = { 21, 3, 1, 0, 2, 2, (unsigned char)alert };

	c->decision = "refused";
	set_reason(c, "%s", why);
	log_conn(L, c);
	(void)!send(c->cfd, rec, sizeof rec, MSG_NOSIGNAL | MSG_DONTWAIT);
	conn_close(L, c);
}

int read_hello(struct loop *L, struct conn *c)
{
	struct sbx_tls_hello th;
	int r = fill(c, c->cfd, &c->in, &c->inlen, &c->incap, SBX_TLS_HELLO_MAX);
	int p = sbx_tls_hello_parse((const unsigned char *)c->in, c->inlen, &th);

	const struct broker_service *s = L->cfg->nsvc ? service_ph_find(L->cfg, c->in, c->inlen) : NULL;

	if (!r)
		c->client_eof = 1;
	/* Everything the broker reads before it splices: after the hello
	 * the bytes are encrypted under keys the client chose. First, for
	 * the refusals below would name what the hello says. */
	if (s) {
		service_ph_refused(c, s, "in the ClientHello");
		tls_refuse(L, c, SBX_TLS_ALERT_ACCESS, c->reason);
		return -1;
	}
	if (p == SBX_TLS_BAD) {
		tls_refuse(L, c, th.alert, th.why);
		return -1;
	}
	if (p == SBX_TLS_INCOMPLETE) {
		if (c->inlen == SBX_TLS_HELLO_MAX) {
			tls_refuse(L, c, SBX_TLS_ALERT_DECODE, "ClientHello larger than 64 KiB");
			return -1;
		}
		if (r <= 0) {
			c->decision = "refused";
			set_reason(c, "client closed before a full ClientHello");
			conn_close(L, c);
			return -1;
		}
		return 0;
	}
	if (strcmp(th.sni, c->host)) {
		char why[600];
		snprintf(why, sizeof why, "server name %s does not match %s %s", th.sni,
			 c->captured ? "the name connected to," : "CONNECT host", c->host);
		tls_refuse(L, c, SBX_TLS_ALERT_NAME, why);
		return -1;
	}
	/* A captured connection's hello is checked before the name is
	 * resolved: the origin is not even dialled for a refused one. */
	if (c->captured && c->ofd < 0)
		return resolve_start(L, c);
	return hello_passed(L, c);
}

/* Checked: from here on every byte passes unchanged, starting with the
 * hello itself. */
int hello_passed(struct loop *L, struct conn *c)
{
	c->up.buf = c->in;
	c->up.len = c->inlen;
	c->up.count = c->inlen;
	c->in = NULL;
	c->inlen = c->incap = 0;
	if (c->up.count > c->up.limit) {
		set_reason(c, "--max-request-bytes exceeded");
		conn_close(L, c);
		return -1;
	}
	c->st = S_TUNNEL;
	return run(L, c);
}

int tunnel(struct loop *L, struct conn *c)
{
	struct dir *ds[2] = { &c->up, &c->down };
	const char *names[2] = { "--max-request-bytes", "--max-response-bytes" };

	for (int i = 0; i < 2; i++) {
		struct dir *d = ds[i];
		int r;
		if (d->done)
			continue;
		r = pump(c, d, names[i]);
		if (r < 0) {
			conn_close(L, c);
			return -1;
		}
		if (r == 1) {
			d->done = 1;
			shutdown(d->dst, SHUT_WR);
		}
	}
	if (c->up.done && c->down.done) {
		conn_close(L, c);
		return -1;
	}
	return 0;
}

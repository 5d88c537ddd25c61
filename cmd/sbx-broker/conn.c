/* A connection's life in the loop: made (or reused), given its reason,
 * refused with an answer the client can read, closed, and the reads every
 * step shares. */
#include "conn.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define SPARE_MAX 256

struct broker_req *req_new(struct loop *L)
{
	struct broker_req *q = L->spare_reqs;

	if (!q)
		return calloc(1, sizeof *q);
	L->spare_reqs = q->next;
	L->nspare_reqs--;
	memset(q, 0, offsetof(struct broker_req, addrs));
	q->naddrs = 0;
	q->next = NULL;
	return q;
}

void req_free(struct loop *L, struct broker_req *q)
{
	if (L->nspare_reqs >= SPARE_MAX) {
		free(q);
		return;
	}
	q->next = L->spare_reqs;
	L->spare_reqs = q;
	L->nspare_reqs++;
}

/* A spare connection keeps its first read buffer: most connections
 * never need a larger one. */
struct conn *conn_new(struct loop *L)
{
	struct conn *c = L->spare_conns;
	char *in;
	size_t incap;

	if (!c)
		return calloc(1, sizeof *c);
	L->spare_conns = c->next_dead;
	L->nspare_conns--;
	in = c->in;
	incap = c->incap;
	memset(c, 0, sizeof *c);
	c->in = in;
	c->incap = incap;
	return c;
}

void conn_free(struct loop *L, struct conn *c)
{
	if (L->nspare_conns >= SPARE_MAX) {
		free(c->in);
		free(c);
		return;
	}
	c->next_dead = L->spare_conns;
	L->spare_conns = c;
	L->nspare_conns++;
}

/* A route's reasons say which route: "service NAME: ...". */
static void put_reason(struct conn *c, const char *fmt, va_list ap)
{
	size_t n = 0;

	if (c->svc)
		n = (size_t)snprintf(c->reason, sizeof c->reason, "service %s: ", c->svc->name);
	vsnprintf(c->reason + n, sizeof c->reason - n, fmt, ap);
}

void set_reason(struct conn *c, const char *fmt, ...)
{
	va_list ap;
	if (c->reason[0])
		return; /* the first cause is the one worth reporting */
	va_start(ap, fmt);
	put_reason(c, fmt, ap);
	va_end(ap);
}

static void close_pipe(int p[2])
{
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	p[0] = p[1] = -1;
}

/* A sandbox's listeners are set to reset their connections on close (by
 * sbx-ns, before the handoff), so that the broker's death resets every
 * open one. The broker's own, orderly, closes undo that first. Unread
 * bytes would turn the close into a reset, so they are drained first,
 * unless the peer has already ended and everything was read. */
void drain_close(int fd, int abortive, int read_all)
{
	static const struct linger orderly = { .l_onoff = 0 };
	char junk[4096];

	if (abortive)
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &orderly, sizeof orderly);
	if (read_all) {
		close(fd);
		return;
	}
	shutdown(fd, SHUT_WR);
	for (int i = 0; i < 16 && recv(fd, junk, sizeof junk, MSG_DONTWAIT) > 0; i++)
		;
	close(fd);
}

void conn_close(struct loop *L, struct conn *c)
{
	log_conn(L, c);
	if (c->rq)
		c->rq->conn = NULL; /* the worker's answer is dropped on arrival */
	if (c->st != S_RESOLVE && c->rq)
		req_free(L, c->rq);
	/* Logged before the client sees its connection end, so that the log
	 * is complete when the client learns the outcome. */
	if (c->cfd >= 0)
		drain_close(c->cfd, c->sb != NULL, c->client_eof);
	tls_free(c);
	if (c->ofd >= 0)
		close(c->ofd);
	close_pipe(c->up.pipe);
	close_pipe(c->down.pipe);
	if (c->up.buf && c->up.wipe)
		explicit_bzero(c->up.buf, c->up.len);
	if (c->up.buf != c->up.cbuf)
		free(c->up.buf);
	if (c->down.buf != c->down.cbuf)
		free(c->down.buf);
	free(c->up.cbuf);
	free(c->down.cbuf);
	if (c->incap > READ_FIRST) {
		free(c->in);
		c->in = NULL;
		c->incap = 0;
	}
	c->inlen = 0;
	free(c->rin);
	if (c->prev)
		c->prev->next = c->next;
	else
		L->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		L->tail = c->prev;
	L->nconns--;
	if (c->sb)
		c->sb->nconns--;
	if (c->peer)
		c->peer->nconns--;

	/* Freed after the current batch of events, which may still name it. */
	c->dead = 1;
	c->cfd = c->ofd = -1;
	c->next_dead = L->dead;
	L->dead = c;
}

static const char *status_text(int st)
{
	switch (st) {
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 405: return "Method Not Allowed";
	case 413: return "Content Too Large";
	case 431: return "Request Header Fields Too Large";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Error";
	}
}

/* Answer and close. The reason travels in one header line (and as the
 * body, for people reading curl's output). Whatever the client still had
 * queued is read away first, so that closing does not turn into a reset
 * that could destroy the answer before the client reads it. */
void send_error(int fd, int status, const char *reason)
{
	char buf[640];
	int n = snprintf(buf, sizeof buf,
			 "HTTP/1.1 %d %s\r\nSbx-Broker-Reason: %s\r\nContent-Type: text/plain\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\nsbx-broker: %s\n",
			 status, status_text(status), reason, strlen(reason) + 13, reason);

	if (n > 0 && (size_t)n < sizeof buf)
		(void)!send(fd, buf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* End a connection with a status for the client if it has had none yet. */
void refuse(struct loop *L, struct conn *c, int status, const char *fmt, ...)
{
	va_list ap;

	if (!c->reason[0]) {
		va_start(ap, fmt);
		put_reason(c, fmt, ap);
		va_end(ap);
	}
	if (!c->answered)
		c->status = status;
	/* The log, and the sandbox, learn of it before the client does. */
	log_conn(L, c);
	if (!c->answered)
		send_error(c->cfd, status, c->reason);
	conn_close(L, c);
}

int ep_add(struct loop *L, int fd, struct handle *h, uint32_t ev)
{
	struct epoll_event e = { .events = ev, .data.ptr = h };
	return epoll_ctl(L->ep, EPOLL_CTL_ADD, fd, &e);
}

/* Read from fd into a growing buffer, at most max bytes in all.
 * 1: would block or full, 0: end of stream, -1: error. */
int fill(struct conn *c, int fd, char **buf, size_t *len, size_t *cap, size_t max)
{
	for (;;) {
		ssize_t r;
		if (*len == max)
			return 1;
		if (*len == *cap) {
			size_t ncap = *cap ? *cap * 2 : READ_FIRST;
			char *nb;
			if (ncap > max)
				ncap = max;
			nb = realloc(*buf, ncap);
			if (!nb)
				return -1;
			*buf = nb;
			*cap = ncap;
		}
		r = origin_recv(c, fd, *buf + *len, *cap - *len);
		if (r > 0) {
			*len += (size_t)r;
			continue;
		}
		if (r == 0)
			return 0;
		if (errno == EINTR)
			continue;
		return errno == EAGAIN || errno == EWOULDBLOCK ? 1 : -1;
	}
}

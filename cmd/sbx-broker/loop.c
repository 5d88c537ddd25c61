/* The event loop: one thread, non-blocking sockets, edge-triggered epoll.
 * A connection walks through the states below; every step that waits for
 * the network returns to the loop, and every event on either socket runs
 * the connection's current step again until it would block. Tunnelled
 * bytes move with splice(2) through a pipe per direction, so they are never
 * copied into the broker's memory. */
#include "broker.h"
#include "clock.h"
#include "die.h"
#include "dns.h"
#include "exitcodes.h"
#include "fd.h"
#include "handoff.h"
#include "http1.h"
#include "json.h"
#include "netaddr.h"
#include "tlshello.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HEAD_MAX (32 * 1024)     /* request head, 431 past it */
#define READ_FIRST 2048          /* a read buffer's first size */
#define RESP_HEAD_MAX (64 * 1024) /* response head, 502 past it */
#define PIPE_BYTES (256 * 1024)
#define RESOLVER_THREADS 4

enum kind { K_LISTEN = 1, K_SIGNAL, K_RESOLVER, K_CLIENT, K_ORIGIN, K_SB_LISTEN, K_SB_CHANNEL, K_SB_DNS };

struct handle {
	enum kind kind;
	struct conn *c;
	struct sandbox *sb;
};

/* A sandbox's listening sockets, handed over by sbx-ns (see handoff()):
 * the broker accepts the sandbox's connections itself, so no process
 * copies bytes between the sandbox and the broker. The channel they came
 * on stays open for as long as the sandbox lives; its end closes the
 * listeners and every connection accepted from them. */
#define SB_MAX 64                /* sandboxes at once */
#define SB_FDS SBX_HANDOFF_FDS   /* 127.0.0.1 and ::1; transparent: DNS and captured ports too */

/* What a sandbox's socket is for (transparent.c, lib/handoff.h). */
enum role { R_PROXY = 0, R_DNS_UDP, R_DNS_TCP, R_CAPTURE };

struct sandbox {
	struct handle hch, hl[SB_FDS];
	int ch, lfd[SB_FDS];
	size_t nl;
	unsigned char role[SB_FDS];
	struct broker_synth *synth;  /* transparent: its names' addresses */
	char where[160];             /* the listeners' addresses, for the log */
	uint64_t unreported;         /* decision lines the channel had no room for */
	char *out;                   /* decision lines not yet sent */
	size_t outlen;
	int queued;                  /* on the loop's list of channels to flush */
	struct sandbox *next_flush;
	size_t nconns;               /* its connections open now */
	int dead;
	struct sandbox *prev, *next, *next_dead;
};

enum state {
	S_HEAD,      /* reading the client's request head */
	S_RESOLVE,   /* a worker resolves and checks the name */
	S_DIAL,      /* connecting to the checked address (or the upstream) */
	S_UPSTREAM,  /* proxy mode: the upstream's answer to our CONNECT */
	S_HELLO,     /* after 200: reading and checking the ClientHello */
	S_TUNNEL,    /* checked: bytes flow both ways unchanged */
	S_HTTP,      /* one plain HTTP request and its response */
	S_DNS,       /* transparent: DNS queries over TCP */
};

/* One direction of a connection: a small queue of bytes the broker itself
 * produced or already read (a request head, a ClientHello), then whatever
 * the source still sends, spliced through a pipe. */
struct dir {
	int src, dst;
	char *buf;
	size_t len, off;
	int pipe[2];
	size_t inpipe;
	uint64_t count, limit, left; /* left: bytes the framing still allows */
	int eof, done;
	int chunked;                /* a chunked body: read in memory, cut after its end */
	struct sbx_chunked ck;
};

struct conn {
	struct handle hc, ho;
	int cfd, ofd;
	enum state st;
	struct conn *prev, *next;   /* ordered by deadline */
	uint64_t start_ms, deadline_ms;
	char *in;                   /* client bytes: the head, then the hello */
	size_t inlen, incap;
	char *rin;                  /* the upstream's or origin's head */
	size_t rinlen, rincap;
	struct broker_req *rq;      /* resolving, or the answer while dialling */
	size_t ai;                  /* address being dialled */
	char method[16];
	char host[SBX_HOST_MAX + 1];
	unsigned port;
	int is_connect, is_head, resp_head_done, answered, dead, cut;
	size_t head_len;            /* the request head's length, once parsed */
	int client_eof;             /* a read on cfd returned 0: nothing left unread */
	int logged;                 /* its line is written (and told to its sandbox) */
	int quiet;                  /* sbx-ns's probe: not a request, not logged */
	struct conn *next_dead;
	struct sandbox *sb;         /* accepted on a sandbox's listener */
	int captured, opaque;       /* transparent: on a captured port; --allow-tcp */
	unsigned nq;                /* S_DNS: queries answered */
	char addr[64];
	struct dir up, down;
	int status;
	const char *decision;
	char reason[200];
};

struct loop {
	const struct broker_cfg *cfg;
	int ep, lfd, sfd, reserve_fd;
	struct broker_resolver res;
	struct broker_answers answers;
	struct handle hl, hs, hr;
	struct conn *head, *tail, *dead;
	size_t nconns;
	struct sandbox *sbs, *dead_sbs, *flush;
	size_t nsbs;
	/* Names read in this batch of events, handed to the resolver at
	 * once before the loop waits again. */
	struct broker_req *sub_first, *sub_last;
	unsigned nsub;
	/* Freed connections and requests kept for reuse: musl's allocator
	 * gives emptied groups back to the kernel, and with resolver threads
	 * running every unmap is a TLB shootdown across CPUs. */
	struct conn *spare_conns;
	struct broker_req *spare_reqs;
	size_t nspare_conns, nspare_reqs;
};

#define SPARE_MAX 256

static struct broker_req *req_new(struct loop *L)
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

static void req_free(struct loop *L, struct broker_req *q)
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
static struct conn *conn_new(struct loop *L)
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

static void conn_free(struct loop *L, struct conn *c)
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

/* UTC to the millisecond. The seconds are formatted once per second:
 * every log line has a time. */
static void iso_time(char *buf, size_t sz)
{
	static time_t last = -1;
	static char sec[24];
	static size_t n;
	struct timespec ts;
	unsigned ms;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (ts.tv_sec != last) {
		struct tm tm;
		gmtime_r(&ts.tv_sec, &tm);
		n = strftime(sec, sizeof sec, "%Y-%m-%dT%H:%M:%S", &tm);
		last = ts.tv_sec;
	}
	ms = (unsigned)(ts.tv_nsec / 1000000);
	if (sz < n + 6)
		return;
	memcpy(buf, sec, n);
	buf[n] = '.';
	buf[n + 1] = (char)('0' + ms / 100);
	buf[n + 2] = (char)('0' + ms / 10 % 10);
	buf[n + 3] = (char)('0' + ms % 10);
	buf[n + 4] = 'Z';
	buf[n + 5] = '\0';
}

static void log_line(struct loop *L, struct sbx_json *j)
{
	/* The log is the record of what left the machine: a failed write is
	 * reported, never silently dropped. */
	if (sbx_json_write(j, L->cfg->log_fd) < 0)
		sbx_warn_errno("unable to write the log");
}

/* A decision goes back to the sandbox it concerns, on the channel the
 * sandbox's listeners came over: the same line as the log's. Never
 * waited for: a line the channel has no room for is counted, and the
 * count goes out before the next line that fits. */
#define SB_OUT (32 * 1024)

/* Send what the channel takes now; the rest waits for the next flush. */
static void sandbox_flush(struct sandbox *sb)
{
	ssize_t n;

	if (!sb->outlen)
		return;
	n = send(sb->ch, sb->out, sb->outlen, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n <= 0)
		return;
	memmove(sb->out, sb->out + n, sb->outlen - (size_t)n);
	sb->outlen -= (size_t)n;
}

static int sandbox_queue(struct sandbox *sb, const char *line, size_t len)
{
	if (!sb->out && !(sb->out = malloc(SB_OUT)))
		return -1;
	if (len > SB_OUT - sb->outlen)
		return -1;
	memcpy(sb->out + sb->outlen, line, len);
	sb->outlen += len;
	return 0;
}

/* Lines are queued and sent once per batch of events (one send for
 * many connections); a sandbox's end sends what is queued before its
 * channel closes. */
static void tell_sandbox(struct loop *L, struct sandbox *sb, const char *line, size_t len)
{
	if (sb->unreported) {
		char u[96];
		int n = snprintf(u, sizeof u, "{\"tool\":\"sbx-broker\",\"event\":\"unreported\",\"count\":%llu}\n",
				 (unsigned long long)sb->unreported);
		if (sandbox_queue(sb, u, (size_t)n) == 0)
			sb->unreported = 0;
	}
	if (sb->unreported || sandbox_queue(sb, line, len) < 0)
		sb->unreported++;
	if (!sb->queued) {
		sb->queued = 1;
		sb->next_flush = L->flush;
		L->flush = sb;
	}
}

static void log_conn(struct loop *L, struct conn *c)
{
	struct sbx_json j;
	char t[40];
	const char *line;
	size_t len = 0;

	if (c->logged || c->quiet)
		return;
	c->logged = 1;

	iso_time(t, sizeof t);
	sbx_json_begin(&j, "sbx-broker", "connection");
	sbx_json_str(&j, "time", t);
	sbx_json_str(&j, "method", c->method[0] ? c->method : NULL);
	sbx_json_str(&j, "host", c->host[0] ? c->host : NULL);
	if (c->port)
		sbx_json_uint(&j, "port", c->port);
	else
		sbx_json_null(&j, "port");
	sbx_json_str(&j, "address", c->addr[0] ? c->addr : NULL);
	sbx_json_str(&j, "decision", c->decision);
	if (c->status)
		sbx_json_int(&j, "status", c->status);
	else
		sbx_json_null(&j, "status");
	sbx_json_str(&j, "reason", c->reason[0] ? c->reason : NULL);
	sbx_json_uint(&j, "bytes_up", c->up.count);
	sbx_json_uint(&j, "bytes_down", c->down.count);
	sbx_json_uint(&j, "duration_ms", sbx_now_ms() - c->start_ms);
	line = sbx_json_end(&j, &len);
	if (line && c->sb && !c->sb->dead)
		tell_sandbox(L, c->sb, line, len);
	if (!line || sbx_write_all(L->cfg->log_fd, line, len) < 0)
		sbx_warn_errno("unable to write the log");
	sbx_json_free(&j);
}

static void set_reason(struct conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_reason(struct conn *c, const char *fmt, ...)
{
	va_list ap;
	if (c->reason[0])
		return; /* the first cause is the one worth reporting */
	va_start(ap, fmt);
	vsnprintf(c->reason, sizeof c->reason, fmt, ap);
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
static void drain_close(int fd, int abortive, int read_all)
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

static void conn_close(struct loop *L, struct conn *c)
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
	if (c->ofd >= 0)
		close(c->ofd);
	close_pipe(c->up.pipe);
	close_pipe(c->down.pipe);
	free(c->up.buf);
	free(c->down.buf);
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
static void send_error(int fd, int status, const char *reason)
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
static void refuse(struct loop *L, struct conn *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void refuse(struct loop *L, struct conn *c, int status, const char *fmt, ...)
{
	va_list ap;

	if (!c->reason[0]) {
		va_start(ap, fmt);
		vsnprintf(c->reason, sizeof c->reason, fmt, ap);
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

static int ep_add(struct loop *L, int fd, struct handle *h, uint32_t ev)
{
	struct epoll_event e = { .events = ev, .data.ptr = h };
	return epoll_ctl(L->ep, EPOLL_CTL_ADD, fd, &e);
}

/* Read from fd into a growing buffer, at most max bytes in all.
 * 1: would block or full, 0: end of stream, -1: error. */
static int fill(int fd, char **buf, size_t *len, size_t *cap, size_t max)
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
		r = recv(fd, *buf + *len, *cap - *len, MSG_DONTWAIT);
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

#define CHUNKED_READ (16 * 1024)

/* A chunked body cannot be spliced blind: its end is in its framing. The
 * bytes are read into memory and scanned; whatever follows the last chunk
 * and its trailer is never delivered, and the response ends there, as one
 * framed by Content-Length does. 1: bytes queued (or the end), 0: would
 * block, -1: failed, reason set. */
static int read_chunked(struct conn *c, struct dir *d)
{
	size_t n = CHUNKED_READ;
	ssize_t r;
	long k;

	if (d->limit - d->count + 1 < n)
		n = (size_t)(d->limit - d->count + 1);
	d->buf = malloc(n);
	if (!d->buf) {
		set_reason(c, "out of memory");
		return -1;
	}
	do
		r = recv(d->src, d->buf, n, MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	if (r <= 0) {
		free(d->buf);
		d->buf = NULL;
		if (r == 0) {
			d->eof = 1;
			return 1;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		set_reason(c, "read failed: %s", strerror(errno));
		return -1;
	}
	k = sbx_chunked_scan(&d->ck, d->buf, (size_t)r);
	if (k < 0) {
		set_reason(c, "broken chunked framing from the origin");
		return -1;
	}
	d->len = (size_t)k;
	d->off = 0;
	d->count += (uint64_t)k;
	if (sbx_chunked_done(&d->ck))
		d->left = 0;
	if (d->count > d->limit) {
		set_reason(c, "--max-response-bytes exceeded");
		return -1;
	}
	return 1;
}

/* Move what one direction can move now. 1: the source ended (or its
 * framing is complete) and everything was delivered; 0: would block;
 * -1: failed, reason set. */
static int pump(struct conn *c, struct dir *d, const char *limit_name)
{
	for (;;) {
		ssize_t r;
		size_t n;

		while (d->off < d->len) {
			r = send(d->dst, d->buf + d->off, d->len - d->off, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (r < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					return 0;
				set_reason(c, "write failed: %s", strerror(errno));
				return -1;
			}
			d->off += (size_t)r;
		}
		if (d->buf) {
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
		if (d->chunked) {
			r = read_chunked(c, d);
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

static void dir_init(struct dir *d, int src, int dst, uint64_t limit)
{
	d->src = src;
	d->dst = dst;
	d->limit = limit;
	d->left = UINT64_MAX;
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

static int run(struct loop *L, struct conn *c);
static int dns_tcp(struct loop *L, struct conn *c);

/* --- sandboxes handed over by sbx-ns --- */

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
static void sandbox_end(struct loop *L, struct sandbox *sb, const char *why)
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

static void on_channel(struct loop *L, struct sandbox *sb)
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
static int first_read(struct loop *L, struct conn *c)
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

/* --- request head -> policy -> resolver --- */

/* sbx-ns checks that the broker answers before it builds a sandbox: it
 * connects to the broker's own socket, writes this line and closes. It
 * is neither a request nor a refusal, and is not logged. */
/* In transparent mode the probe asks for the ports to capture, and the
 * answer comes before the close. */

/* 1: the probe's first bytes, wait for the rest; -1: a probe, c is gone;
 * 0: not a probe. */
static int probe(struct loop *L, struct conn *c, int r)
{
	size_t n = sizeof SBX_PROBE - 1;
	int ports;

	/* Both probe lines have the same length and differ in their last
	 * digit only. */
	if (c->sb || !c->inlen || c->inlen > n ||
	    (memcmp(c->in, SBX_PROBE, c->inlen) && memcmp(c->in, SBX_PROBE_PORTS, c->inlen)))
		return 0;
	if (c->inlen < n)
		return r > 0 ? 1 : 0;
	ports = !memcmp(c->in, SBX_PROBE_PORTS, n);
	if (ports) {
		char line[SBX_CAPTURE_MAX * 6 + 16];
		size_t len = broker_ports_line(L->cfg, line, sizeof line);
		if (len)
			(void)!send(c->cfd, line, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	c->quiet = 1;
	conn_close(L, c);
	return -1;
}

static int dial(struct loop *L, struct conn *c);

/* A proxy request names its destination; a captured one (port 80) is in
 * origin form and its Host must be the name connected to. */
static int parse_head(const struct conn *c, struct sbx_http_head *h)
{
	if (c->captured)
		return sbx_http_parse_origin(c->in, c->inlen, HEAD_MAX, c->host, h);
	return sbx_http_parse_request(c->in, c->inlen, HEAD_MAX, h);
}

static int resolve_start(struct loop *L, struct conn *c);

static int read_head(struct loop *L, struct conn *c)
{
	struct sbx_http_head hh, *h = &hh;
	int r = 1, p = SBX_HTTP_INCOMPLETE;
	size_t parsed = c->inlen; /* what earlier events read was no whole head */

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
	if (r > 0 && p != SBX_HTTP_BAD && !(p == SBX_HTTP_DONE && h->is_connect))
		r = fill(c->cfd, &c->in, &c->inlen, &c->incap, HEAD_MAX);
	if (c->inlen != parsed)
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
	c->is_head = h->mlen == 4 && !memcmp(h->method, "HEAD", 4);
	c->decision = "refused";
	if (!broker_port_allowed(L->cfg, h->port)) {
		refuse(L, c, 403, "port %u not allowed (--allow-port)", c->port);
		return -1;
	}
	if (!broker_host_allowed(L->cfg, h->host)) {
		refuse(L, c, 403, "host %s not on the allowlist (--allow-host)", c->host);
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
	}
	return resolve_start(L, c);
}

/* The name is allowed: resolve it and check every address (or take an
 * answer checked this second), then dial. */
static int resolve_start(struct loop *L, struct conn *c)
{
	c->rq = req_new(L);
	if (!c->rq) {
		refuse(L, c, 502, "out of memory");
		return -1;
	}
	c->rq->conn = c;
	c->rq->port = c->port;
	c->rq->allow_private = L->cfg->allow_private;
	snprintf(c->rq->host, sizeof c->rq->host, "%s", c->host);
	if (broker_answers_get(&L->answers, c->rq)) {
		c->st = S_DIAL;
		c->decision = "allowed";
		return dial(L, c);
	}
	c->st = S_RESOLVE;
	if (L->sub_last)
		L->sub_last->next = c->rq;
	else
		L->sub_first = c->rq;
	L->sub_last = c->rq;
	L->nsub++;
	return 0;
}

/* --- dialling the checked address --- */

static int dial(struct loop *L, struct conn *c)
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

static int established(struct loop *L, struct conn *c);
static int hello_passed(struct loop *L, struct conn *c);

static int dial_done(struct loop *L, struct conn *c)
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
	return established(L, c);
}

static int read_upstream(struct loop *L, struct conn *c)
{
	struct sbx_http_head *h;
	int r, p;

	r = fill(c->ofd, &c->rin, &c->rinlen, &c->rincap, 16 * 1024);
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
	return established(L, c);
}

/* --- the connection is open: CONNECT or one plain request --- */

static int hop_by_hop(const struct sbx_http_field *f)
{
	static const char *const names[] = { "connection", "proxy-connection", "keep-alive",
		"proxy-authorization", "proxy-authenticate", "te", "trailer", "expect", NULL };
	for (size_t i = 0; names[i]; i++)
		if (f->nlen == strlen(names[i]) && !strncasecmp(f->name, names[i], f->nlen))
			return 1;
	return 0;
}

static int established(struct loop *L, struct conn *c)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	struct sbx_http_head *h;
	size_t n, cap, body;
	char *out;

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
	/* Plain HTTP: the request is rebuilt from what was parsed, in origin
	 * form, without hop-by-hop fields, and closes after one response. */
	h = malloc(sizeof *h);
	if (!h || parse_head(c, h) != SBX_HTTP_DONE) {
		free(h);
		refuse(L, c, 502, "internal error");
		return -1;
	}
	/* Every field may grow by the ": " the client left out; the request
	 * line only shrinks (origin form); then "Connection: close". */
	cap = h->head_len + 2 * h->nfields + 64 + (c->inlen - h->head_len);
	out = malloc(cap);
	if (!out) {
		free(h);
		refuse(L, c, 502, "out of memory");
		return -1;
	}
	n = (size_t)snprintf(out, cap, "%.*s %.*s HTTP/1.1\r\n", (int)h->mlen, h->method, (int)h->plen, h->path);
	for (size_t i = 0; i < h->nfields; i++) {
		const struct sbx_http_field *f = &h->f[i];
		if (hop_by_hop(f))
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
	c->up.count = n;
	c->up.limit = UINT64_MAX; /* checked whole, against the framing, before dialling */
	c->up.left = (h->has_length ? h->length : 0) - body;
	if (h->expect_continue && c->up.left) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		(void)!send(c->cfd, cont, sizeof cont - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	free(h);
	free(c->in);
	c->in = NULL;
	c->inlen = c->incap = 0;
	c->st = S_HTTP;
	return run(L, c);
}

static int read_hello(struct loop *L, struct conn *c)
{
	struct sbx_tls_hello th;
	int r = fill(c->cfd, &c->in, &c->inlen, &c->incap, SBX_TLS_HELLO_MAX);
	int p = sbx_tls_hello_parse((const unsigned char *)c->in, c->inlen, &th);

	if (!r)
		c->client_eof = 1;
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
static int hello_passed(struct loop *L, struct conn *c)
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

static int tunnel(struct loop *L, struct conn *c)
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

/* The origin's response head, checked before any of it is passed on. */
static int read_response(struct loop *L, struct conn *c)
{
	struct sbx_http_head *h;
	int r, p;

	r = fill(c->ofd, &c->rin, &c->rinlen, &c->rincap, RESP_HEAD_MAX);
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

static int http(struct loop *L, struct conn *c)
{
	int r;

	if (!c->up.done) {
		r = pump(c, &c->up, "--max-request-bytes");
		if (r < 0) {
			refuse(L, c, 502, "unable to forward the request");
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
		conn_close(L, c);
		return -1;
	}
	return 0;
}

/* --- transparent mode: DNS and captured connections --- */

#define DNS_BATCH 64      /* UDP queries per wakeup: one sandbox's flood waits its turn */
#define DNS_TCP_QUERIES 16 /* per connection */

/* One line per refused query and per name given an address, in the
 * connection's format: method DNS, port 53. The sandbox is told of the
 * refusals; the names it was given are the broker's log's. */
static void dns_log(struct loop *L, struct sandbox *sb, const struct broker_dns_result *res)
{
	struct conn tmp = { .decision = res->decision, .start_ms = sbx_now_ms(), .port = SBX_DNS_PORT };

	if (strcmp(res->decision, "allowed"))
		tmp.sb = sb;

	snprintf(tmp.method, sizeof tmp.method, "DNS");
	snprintf(tmp.host, sizeof tmp.host, "%s", res->name);
	snprintf(tmp.addr, sizeof tmp.addr, "%s", res->addr);
	snprintf(tmp.reason, sizeof tmp.reason, "%s", res->reason);
	log_conn(L, &tmp);
}

static void on_dns(struct loop *L, struct sandbox *sb, int fd)
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
static int dns_tcp(struct loop *L, struct conn *c)
{
	unsigned char a[2 + SBX_DNS_ANSWER_MAX];
	int r = fill(c->cfd, &c->in, &c->inlen, &c->incap, 2 * (2 + SBX_DNS_MSG_MAX));

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
static int capture_start(struct loop *L, struct conn *c)
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
		refuse(L, c, 403, "host %s not on the allowlist (--allow-host)", c->host);
		return -1;
	}
	c->st = S_HELLO;
	return run(L, c);
}

/* Run the current step until it would block. -1: c is gone. */
static int run(struct loop *L, struct conn *c)
{
	switch (c->st) {
	case S_HEAD: return read_head(L, c);
	case S_RESOLVE: return 0;
	case S_DIAL: return dial_done(L, c);
	case S_UPSTREAM: return read_upstream(L, c);
	case S_HELLO: return read_hello(L, c);
	case S_TUNNEL: return tunnel(L, c);
	case S_HTTP: return http(L, c);
	case S_DNS: return dns_tcp(L, c);
	}
	return 0;
}

static void on_event(struct loop *L, struct handle *h, uint32_t ev)
{
	struct conn *c = h->c;

	if (c->dead)
		return;
	/* A client that hangs up before its tunnel exists is gone for good. */
	if (h->kind == K_CLIENT && (ev & (EPOLLHUP | EPOLLERR)) &&
	    (c->st == S_RESOLVE || c->st == S_DIAL || c->st == S_UPSTREAM)) {
		set_reason(c, "client went away");
		conn_close(L, c);
		return;
	}
	run(L, c);
}

static void on_resolved(struct loop *L)
{
	struct broker_req *q, *next;

	for (q = broker_resolver_take(&L->res); q; q = next) {
		struct conn *c = q->conn;
		next = q->next;
		if (!c) {
			req_free(L, q);
			continue;
		}
		c->st = S_DIAL; /* the answer now belongs to the connection */
		if (q->refused) {
			snprintf(c->addr, sizeof c->addr, "%s", q->addr_text);
			c->decision = q->status == 403 ? "refused" : "failed";
			if (q->addr_text[0])
				refuse(L, c, q->status, "address %s refused: %s%s", q->addr_text, q->refused,
				       q->closed_private ? "; --allow-private-networks opens private ranges" : "");
			else
				refuse(L, c, q->status, "%s: %s", c->host, q->refused);
			continue;
		}
		c->decision = "allowed";
		broker_answers_put(&L->answers, q);
		dial(L, c);
	}
}

static void on_accept(struct loop *L, int lfd, struct sandbox *sb, enum role role)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct conn *c;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if ((errno == EMFILE || errno == ENFILE) && L->reserve_fd >= 0) {
				/* Out of fds: use the reserve to say so and let go
				 * of the caller rather than spin on a readable
				 * listener. */
				close(L->reserve_fd);
				fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
				if (fd >= 0) {
					send_error(fd, 503, "out of file descriptors");
					drain_close(fd, sb != NULL, 0);
				}
				L->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
				continue;
			}
			return;
		}
		if (L->nconns >= L->cfg->max_conns || (sb && sb->nconns >= L->cfg->max_sb_conns)) {
			struct conn tmp = { .decision = "refused", .status = 503, .start_ms = sbx_now_ms(), .sb = sb };
			snprintf(tmp.reason, sizeof tmp.reason, "%s",
				 L->nconns >= L->cfg->max_conns ? "connection limit reached (--max-connections)" :
				 "this sandbox's connection limit reached (--max-sandbox-connections)");
			log_conn(L, &tmp);
			send_error(fd, 503, tmp.reason);
			drain_close(fd, sb != NULL, 0);
			continue;
		}
		c = conn_new(L);
		if (!c) {
			send_error(fd, 503, "out of memory");
			drain_close(fd, sb != NULL, 0);
			continue;
		}
		c->cfd = fd;
		c->sb = sb;
		if (sb)
			sb->nconns++;
		c->ofd = -1;
		c->up.pipe[0] = c->up.pipe[1] = c->down.pipe[0] = c->down.pipe[1] = -1;
		c->hc = (struct handle){ K_CLIENT, c, NULL };
		c->ho = (struct handle){ K_ORIGIN, c, NULL };
		c->start_ms = sbx_now_ms();
		c->deadline_ms = c->start_ms + L->cfg->wall_ms;
		c->decision = "refused";
		c->st = role == R_DNS_TCP ? S_DNS : S_HEAD;
		c->quiet = role == R_DNS_TCP; /* each query has its own line */
		/* Every connection has the same wall time, so appending keeps
		 * the list sorted by deadline. */
		c->prev = L->tail;
		if (L->tail)
			L->tail->next = c;
		else
			L->head = c;
		L->tail = c;
		L->nconns++;
		if (ep_add(L, fd, &c->hc, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) < 0) {
			set_reason(c, "unable to watch a socket: %s", strerror(errno));
			conn_close(L, c);
			continue;
		}
		if (role == R_CAPTURE)
			capture_start(L, c);
		else
			run(L, c);
	}
}

static void expire(struct loop *L, uint64_t now)
{
	while (L->head && L->head->deadline_ms <= now) {
		struct conn *c = L->head;
		refuse(L, c, 504, "--max-wall-time exceeded");
	}
}

static void terminate(struct loop *L, int sig)
{
	struct sbx_json j;
	char t[40];

	close(L->lfd);
	if (L->cfg->listen_path)
		broker_unlink_path(L->cfg->listen_path, &L->cfg->listen_made);
	while (L->sbs)
		sandbox_end(L, L->sbs, "broker terminated");
	while (L->head) {
		set_reason(L->head, "broker terminated");
		refuse(L, L->head, 503, "broker terminated");
	}
	iso_time(t, sizeof t);
	sbx_json_begin(&j, "sbx-broker", "exit");
	sbx_json_str(&j, "time", t);
	sbx_json_int(&j, "code", 0);
	sbx_json_int(&j, "signal", sig);
	log_line(L, &j);
}

int broker_loop(const struct broker_cfg *cfg)
{
	struct loop L = { .cfg = cfg, .lfd = cfg->listen_fd };
	struct epoll_event evs[256];
	sigset_t ss;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	if (sigprocmask(SIG_BLOCK, &ss, NULL) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to block signals");
	L.sfd = signalfd(-1, &ss, SFD_NONBLOCK | SFD_CLOEXEC);
	if (L.sfd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create a signalfd");
	/* Threads started after the mask is set inherit it, so the signals
	 * reach only the signalfd. */
	broker_resolver_start(&L.res, cfg, RESOLVER_THREADS);
	L.reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	L.ep = epoll_create1(EPOLL_CLOEXEC);
	if (L.ep < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create an epoll instance");
	L.hl.kind = K_LISTEN;
	L.hs.kind = K_SIGNAL;
	L.hr.kind = K_RESOLVER;
	if (fcntl(L.lfd, F_SETFL, fcntl(L.lfd, F_GETFL) | O_NONBLOCK) < 0 ||
	    ep_add(&L, L.lfd, &L.hl, EPOLLIN) < 0 || ep_add(&L, L.sfd, &L.hs, EPOLLIN) < 0 ||
	    ep_add(&L, L.res.result_fd, &L.hr, EPOLLIN) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to watch the listening socket");
	{
		struct sbx_json j;
		char t[40];
		iso_time(t, sizeof t);
		sbx_json_begin(&j, "sbx-broker", "listening");
		sbx_json_str(&j, "time", t);
		sbx_json_uint(&j, "max_connections", cfg->max_conns);
		sbx_json_uint(&j, "max_sandbox_connections", cfg->max_sb_conns);
		log_line(&L, &j);
	}
	sbx_ready_fd(cfg->ready_fd);

	for (;;) {
		uint64_t now = sbx_now_ms();
		int timeout = -1, n;

		expire(&L, now);
		if (L.head)
			timeout = (int)(L.head->deadline_ms - now);
		n = epoll_wait(L.ep, evs, sizeof evs / sizeof evs[0], timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			sbx_die_errno(SBX_EXIT_SYS, "unable to wait for events");
		}
		for (int i = 0; i < n; i++) {
			struct handle *h = evs[i].data.ptr;
			switch (h->kind) {
			case K_LISTEN:
				on_accept(&L, L.lfd, NULL, R_PROXY);
				break;
			case K_SB_LISTEN:
				if (!h->sb->dead)
					on_accept(&L, h->sb->lfd[h - h->sb->hl], h->sb, h->sb->role[h - h->sb->hl]);
				break;
			case K_SB_DNS:
				if (!h->sb->dead)
					on_dns(&L, h->sb, h->sb->lfd[h - h->sb->hl]);
				break;
			case K_SB_CHANNEL:
				if (!h->sb->dead)
					on_channel(&L, h->sb);
				break;
			case K_SIGNAL: {
				struct signalfd_siginfo si;
				if (read(L.sfd, &si, sizeof si) == sizeof si) {
					terminate(&L, (int)si.ssi_signo);
					return SBX_EXIT_OK;
				}
				break;
			}
			case K_RESOLVER:
				on_resolved(&L);
				break;
			default:
				on_event(&L, h, evs[i].events);
				break;
			}
		}
		while (L.flush) {
			struct sandbox *sb = L.flush;
			L.flush = sb->next_flush;
			sb->queued = 0;
			if (!sb->dead)
				sandbox_flush(sb);
		}
		while (L.dead) {
			struct conn *c = L.dead;
			L.dead = c->next_dead;
			conn_free(&L, c);
		}
		while (L.dead_sbs) {
			struct sandbox *sb = L.dead_sbs;
			L.dead_sbs = sb->next_dead;
			free(sb->out);
			free(sb);
		}
		if (L.sub_first) {
			broker_resolver_submit(&L.res, L.sub_first, L.sub_last, L.nsub);
			L.sub_first = L.sub_last = NULL;
			L.nsub = 0;
		}
	}
}

/* The event loop's shared state: a connection and its two directions,
 * the sandboxes handed over by sbx-ns, and the loop itself; and the steps
 * the files of the loop call across each other:
 *
 *   loop.c     the loop: accept, dispatch events, expire, terminate
 *   conn.c     a connection's life: new, reason, refusal, close, reads
 *   log.c      decision lines: the log and the sandbox's channel
 *   http.c     the request head, the policy, one plain HTTP exchange
 *   dial.c     dialling the checked address (or the upstream proxy)
 *   relay.c    the ClientHello check and bytes moved both ways
 *   handoff.c  sandboxes' listeners handed over by sbx-ns
 *   capture.c  transparent sandboxes: DNS and captured connections
 *   service.c  service routes: their options, a request rebuilt for one
 *   rules.c    a route's method, path and placeholder rules
 *   tls.c      TLS to a route's service: the handshake, the origin's reads
 *              and writes; tlsmem.c its memory
 *
 * A connection walks through the states below; every step that waits for
 * the network returns to the loop, and every event on either socket runs
 * the connection's current step again until it would block. */
#ifndef SBX_BROKER_CONN_H
#define SBX_BROKER_CONN_H

#include "broker.h"
#include "handoff.h"
#include "http1.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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

/* One budget of log lines (log.c): a sandbox's, or a client's of the
 * broker's own sockets (by uid). At most LOG_LINES_PER_SEC lines in any
 * one second; the rest are counted, and the count goes out in one
 * "dropped" line when the second is over (or the sandbox ends). */
#define LOG_LINES_PER_SEC 50
#define LOG_LINES_ALL_PER_SEC 1000 /* every budget together: the log's ceiling */
#define LOG_LINE_MAX 4096        /* every line is shorter (log.c) */
enum log_kind { LOG_CONNECTION, LOG_DNS, LOG_SANDBOX, LOG_KINDS };
struct log_budget {
	uint64_t sec;                /* the second lines are counted in */
	unsigned lines, limit;       /* written in it, and at most */
	uint64_t dropped[LOG_KINDS]; /* not written since the last summary */
	int pending;                 /* on the loop's list: a summary is due */
	struct log_budget *next_pending;
	char who[176];               /* whose lines: "sandbox ..." or "uid N on ..." */
};

/* A client of the broker's own sockets, by uid: from SO_PEERCRED on the
 * Unix socket, from the kernel's socket table (sock_diag) on --listen-tcp,
 * each kept apart. Kept for the broker's life (its log budget must outlive
 * its connections, or opening and closing would reset it). */
#define PEERS_MAX 4096
struct peer {
	int tcp;
	uid_t uid;
	size_t nconns;               /* open now */
	struct log_budget log;
	struct peer *next;
};

/* A sandbox's listening sockets, handed over by sbx-ns (see handoff()):
 * the broker accepts the sandbox's connections itself, so no process
 * copies bytes between the sandbox and the broker. The channel they came
 * on stays open for as long as the sandbox lives; its end closes the
 * listeners and every connection accepted from them. */
#define SB_MAX 64                /* sandboxes at once */
#define SB_FDS SBX_HANDOFF_FDS   /* 127.0.0.1 and ::1; transparent: DNS and captured ports too */

/* What a sandbox's socket is for (lib/handoff.h). */
enum role { R_PROXY = 0, R_DNS_UDP, R_DNS_TCP, R_CAPTURE };

struct sandbox {
	struct handle hch, hl[SB_FDS];
	int ch, lfd[SB_FDS];
	size_t nl;
	unsigned char role[SB_FDS];
	struct broker_synth *synth;  /* transparent: its names' addresses */
	struct broker_lane *lane;    /* its lookups (resolve.c), made at the first */
	struct log_budget log;       /* its lines in the broker's log */
	struct peer *owner;          /* who handed it over: its attached and detached lines */
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
	S_TLS,       /* a service route: the TLS handshake with the service */
};

/* One direction of a connection: a small queue of bytes the broker itself
 * produced or already read (a request head, a ClientHello), then whatever
 * the source still sends, spliced through a pipe (copied through memory
 * when it is chunked or one end is a route's TLS). */
struct dir {
	int src, dst;
	char *buf;
	size_t len, off;
	char *cbuf;                 /* COPY_READ bytes for reads into memory, kept */
	int pipe[2];
	size_t inpipe;
	uint64_t count, limit, left; /* left: bytes the framing still allows */
	int eof, done;
	int chunked;                /* a chunked body: read in memory, cut after its end */
	int wipe;                   /* buf holds a route's header lines: zeroed when freed */
	struct sbx_chunked ck;
	/* A plain HTTP request's body, when a route has a placeholder: read
	 * in memory and searched (relay.c), its last keep bytes held back
	 * until the next read has been searched. */
	const struct broker_cfg *scan;
	const struct broker_service *found;
	size_t keep, nhold;
	char hold[sizeof ((struct broker_service *)0)->placeholder];
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
	int is_connect, resp_head_done, answered, dead, cut;
	size_t head_len;            /* the request head's length, once parsed */
	/* Plain HTTP: the request to forward is built when its head is
	 * parsed, the only parse (up.buf holds it until the origin is
	 * reached); these say what the head asked of the body. */
	uint64_t body_left;         /* body bytes still with the client */
	int expect_continue;
	int client_eof;             /* a read on cfd returned 0: nothing left unread */
	int logged;                 /* its line is written (and told to its sandbox) */
	int quiet;                  /* sbx-ns's probe: not a request, not logged */
	int untold;                 /* logged, not told to its sandbox */
	struct peer *peer;          /* accepted on the broker's own socket: whose */
	struct conn *next_dead;
	struct sandbox *sb;         /* accepted on a sandbox's listener */
	int captured, opaque;       /* transparent: on a captured port; --allow-tcp */
	unsigned nq;                /* S_DNS: queries answered */
	char addr[64];
	struct dir up, down;
	int status;
	const char *decision;
	char reason[256];
	const struct broker_service *svc; /* a service route's request */
	char path[65];              /* ... its path, to the query, cut at 64 bytes: what it was asked for */
	struct tls_link *tls;       /* ... and its TLS to the service on ofd (tls.c) */
};

struct loop {
	const struct broker_cfg *cfg;
	int ep, lfd, tfd, sfd, reserve_fd;
	struct broker_resolver res;
	struct broker_answers answers;
	struct handle hl, ht, hs, hr;
	struct conn *head, *tail, *dead;
	size_t nconns;
	struct peer *peers, anon;   /* anon: past PEERS_MAX, or not known */
	size_t npeers;
	struct log_budget *log_pending, log_all; /* log_all: the ceiling */
	int diag_fd;                /* NETLINK_SOCK_DIAG: the uid behind a TCP peer */
	struct sandbox *sbs, *dead_sbs, *flush;
	size_t nsbs;
	/* Freed connections and requests kept for reuse: musl's allocator
	 * gives emptied groups back to the kernel, and with resolver threads
	 * running every unmap is a TLB shootdown across CPUs. */
	struct conn *spare_conns;
	struct broker_req *spare_reqs;
	size_t nspare_conns, nspare_reqs;
};

/* conn.c */
struct broker_req *req_new(struct loop *L);
void req_free(struct loop *L, struct broker_req *q);
struct conn *conn_new(struct loop *L);
void conn_free(struct loop *L, struct conn *c);
void set_reason(struct conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void drain_close(int fd, int abortive, int read_all);
void conn_close(struct loop *L, struct conn *c);
void send_error(int fd, int status, const char *reason);
void refuse(struct loop *L, struct conn *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int ep_add(struct loop *L, int fd, struct handle *h, uint32_t ev);
/* Reads c's fd, the origin's through origin_recv(). */
int fill(struct conn *c, int fd, char **buf, size_t *len, size_t *cap, size_t max);

/* log.c */
struct sbx_json;
void iso_time(char *buf, size_t sz);
/* A line of the broker's own (NULL budget: never dropped) or one charged
 * to budget b as kind. */
void log_line(struct loop *L, struct log_budget *b, enum log_kind kind, struct sbx_json *j);
void sandbox_flush(struct sandbox *sb);
void log_conn(struct loop *L, struct conn *c);
void log_budget_init(struct log_budget *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The summary of b's dropped lines now, and b off the loop's list. */
void log_budget_flush(struct loop *L, struct log_budget *b);
/* Summaries due at this second; the ms until the next is due, or -1. */
int log_tick(struct loop *L);

/* http.c */
int read_head(struct loop *L, struct conn *c);
/* The name is allowed: resolve it and check every address, then dial. */
int resolve_start(struct loop *L, struct conn *c);
/* c->rq is answered: dial the checked address, or refuse. */
int resolved(struct loop *L, struct conn *c);
int established(struct loop *L, struct conn *c);
int http(struct loop *L, struct conn *c);

/* dial.c */
int dial(struct loop *L, struct conn *c);
int dial_done(struct loop *L, struct conn *c);
int read_upstream(struct loop *L, struct conn *c);

/* relay.c */
void dir_init(struct dir *d, int src, int dst, uint64_t limit);
int pump(struct conn *c, struct dir *d, const char *limit_name);
int read_hello(struct loop *L, struct conn *c);
int hello_passed(struct loop *L, struct conn *c);
int tunnel(struct loop *L, struct conn *c);

/* service.c: a request for route s (refused: -1), then rebuilt. */
int service_check(struct loop *L, struct conn *c, const struct broker_service *s);
int service_forward(struct loop *L, struct conn *c, const struct sbx_http_head *h);

/* rules.c */
int service_placeholders(struct loop *L, struct conn *c, const struct sbx_http_head *h);
int service_rules(struct loop *L, struct conn *c, const struct sbx_http_head *h);
size_t service_ph_keep(const struct broker_cfg *cfg);
const struct broker_service *service_ph_find(const struct broker_cfg *cfg, const char *buf, size_t n);
/* c's reason, refused for s's placeholder where ("in a request body"):
 * the place it has, on s's own route (c->svc), or its route, on any other. */
void service_ph_refused(struct conn *c, const struct broker_service *s, const char *where);

/* tlsmem.c: the TLS library's large blocks kept for reuse, set before
 * its first allocation. */
void broker_tls_mem(void);

/* tls.c */
int tls_start(struct loop *L, struct conn *c);
int tls_handshake(struct loop *L, struct conn *c);
void tls_free(struct conn *c);
/* The bytes of fd as recv(2) and send(2) give them (nonblocking, no
 * SIGPIPE): fd itself, or the TLS on it when fd is a route's origin.
 * EPROTO: a TLS error, in tls_why()'s words (NULL: none). */
ssize_t origin_recv(struct conn *c, int fd, void *buf, size_t n);
ssize_t origin_send(struct conn *c, int fd, const void *buf, size_t n);
const char *tls_why(const struct conn *c);
int tls_unclean(const struct conn *c); /* the service ended without close_notify */

/* http.c */
int http_hop_by_hop(const struct sbx_http_field *f);

/* handoff.c */
int first_read(struct loop *L, struct conn *c);
void sandbox_end(struct loop *L, struct sandbox *sb, const char *why);
void on_channel(struct loop *L, struct sandbox *sb);

/* capture.c */
void on_dns(struct loop *L, struct sandbox *sb, int fd);
int dns_tcp(struct loop *L, struct conn *c);
int capture_start(struct loop *L, struct conn *c);

/* loop.c: run the current step until it would block. -1: c is gone. */
int run(struct loop *L, struct conn *c);

#endif

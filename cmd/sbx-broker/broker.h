/* sbx-broker's pieces: the configuration built by main, the resolver pool
 * that keeps getaddrinfo off the event loop, and the loop itself. */
#ifndef SBX_BROKER_H
#define SBX_BROKER_H

#include "hostpat.h"
#include "netaddr.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>

#define BROKER_MAX_PORTS 64
#define BROKER_MAX_ADDRS 16
#define BROKER_MAX_TCP 16

/* A service route (service.c): --service NAME=https://HOST[:PORT][/PREFIX].
 * A sandbox asks http://NAME/... in plain HTTP; the broker opens TLS to
 * HOST itself, verifies it, and adds the route's header lines, which
 * never reach the sandbox. */
#define BROKER_MAX_SERVICES 32
#define SERVICE_PREFIX_MAX 1024
#define SERVICE_HEADERS_MAX 32
#define SERVICE_HEADER_BYTES 8192
#define SERVICE_METHODS_MAX 8
#define SERVICE_PATHS_MAX 16
struct broker_service {
	char name[64];
	char host[SBX_HOST_MAX + 1];   /* dialled and verified: a name, or an address */
	int host_is_ip;
	unsigned port;
	char prefix[SERVICE_PREFIX_MAX + 1]; /* "" or "/a/b": prepended to the path */
	char authority[SBX_HOST_MAX + 10];   /* the Host field sent: HOST[:PORT] */
	const char *header_path, *ca_path;
	char *hdr;                     /* "Name: value" CRLF lines: locked memory, never logged */
	size_t hdrlen, hdrcap;
	size_t nh;
	struct { size_t off, len; } hname[SERVICE_HEADERS_MAX]; /* the names, within hdr */
	void *tls;                     /* the SSL_CTX that verifies it (tls.c) */
	/* rules.c */
	char methods[SERVICE_METHODS_MAX][16];
	size_t nmethods;
	char paths[SERVICE_PATHS_MAX][256];
	size_t npaths;
	char placeholder[129];         /* stands for the one header line's value */
	size_t phlen;
};

/* One pinned answer: --resolve NAME=ADDR (pins.c). */
struct broker_pin {
	char name[SBX_HOST_MAX + 1];  /* normal form */
	struct sockaddr_storage addr; /* port 0 */
};

struct broker_cfg {
	int listen_fd;
	int tcp_fd;                /* --listen-tcp alongside a Unix socket, else -1 */
	const char *listen_path;   /* set when the broker created the socket */
	struct stat listen_made;   /* ... and which file it made */
	int proxy;                 /* --mode proxy */
	struct sbx_hostpat *hosts;
	size_t nhosts;
	const char *hosts_from;    /* what a refusal names: "--allow-host", or "--allow-policy FILE" */
	unsigned ports[BROKER_MAX_PORTS];
	size_t nports;
	struct {                   /* --allow-tcp NAME:PORT */
		char name[SBX_HOST_MAX + 1];
		unsigned port;
	} tcp[BROKER_MAX_TCP];
	size_t ntcp;
	struct sockaddr_storage upstream;
	socklen_t upstream_len;
	int allow_private;
	struct sbx_cidr *deny;     /* --deny-address */
	size_t ndeny;
	struct sbx_cidr *allow;    /* --allow-address */
	size_t nallow;
	struct broker_pin *pins;   /* --resolve, --resolve-file */
	size_t npins;
	uint64_t wall_ms, max_req, max_resp;
	size_t max_conns;
	size_t max_sb_conns;       /* per handed-off sandbox */
	size_t max_sb_lookups;     /* names being resolved, per sandbox */
	size_t max_peer_conns;     /* per uid on --listen-tcp */
	size_t reserved_conns;     /* the last slots: the broker's own Unix socket only */
	int listen_is_tcp;         /* listen_fd is the --listen-tcp socket */
	int log_fd, ready_fd;
	struct broker_service *svc;  /* --service */
	size_t nsvc;
};

/* One name to resolve. The worker fills the answer; the loop owns the
 * struct before and after (conn is cleared when the connection goes away
 * while the name is being resolved). */
struct broker_lane;
struct broker_req {
	void *conn;
	struct broker_lane *lane;  /* whose lookup it is, until it is answered */
	uint64_t lane_id;          /* ... and for kept answers */
	char host[SBX_HOST_MAX + 1];
	unsigned port;
	int allow_private;
	/* answer */
	const char *refused;       /* NULL: every address passed */
	char why[160];             /* an address's refusal (refused points here) */
	int status;                /* the HTTP status for a refusal */
	char addr_text[64];        /* the address that decided */
	struct sockaddr_storage addrs[BROKER_MAX_ADDRS];
	size_t naddrs;
	long checked_sec;          /* the monotonic second of the address check */
	struct broker_req *next;
};

struct broker_own;

/* One sandbox's lookups (the clients of the broker's own sockets share
 * one): its queue, and how many of them workers have. The loop's alone;
 * it outlives its sandbox until the workers have given back all of its
 * lookups. */
struct broker_lane {
	uint64_t id;
	struct broker_req *head, *tail;  /* waiting for a worker, oldest first */
	size_t pending;                  /* waiting, or with a worker */
	unsigned inflight;               /* with a worker */
	int listed, released;            /* on the resolver's turn list; its sandbox is gone */
	struct broker_lane *prev, *next; /* the turn list */
};

struct broker_resolver {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct broker_req *head, *tail;  /* handed to the workers: never more than they can take at once */
	unsigned idle;                   /* workers asleep on cv */
	struct broker_req *done, *done_tail; /* answered, for the loop */
	int result_fd;                   /* eventfd: done became non-empty */
	/* The loop's alone: */
	pthread_attr_t attr;
	unsigned nthreads, max_threads;  /* started; at most */
	unsigned busy;                   /* lookups handed to workers, not yet taken back */
	unsigned extra;                  /* of those, the ones beyond their lane's first */
	size_t max_pending;              /* per lane */
	uint64_t lane_ids;
	struct broker_lane own_sockets;  /* the clients of the broker's own sockets */
	struct broker_lane *turn_head, *turn_tail; /* lanes with lookups waiting, in turn order */
	/* the host's own addresses, refreshed once a second (own.c) */
	pthread_mutex_t own_mu;
	struct broker_own *own;          /* NULL: not read, or not readable */
	long own_sec;
	const struct broker_cfg *cfg;    /* read-only while the workers run */
};

void broker_resolver_start(struct broker_resolver *r, const struct broker_cfg *cfg, unsigned nthreads);
/* A new sandbox's lane (NULL: out of memory), and its end: the lane goes
 * once the workers have given back its lookups. */
struct broker_lane *broker_lane_new(struct broker_resolver *r);
void broker_lane_release(struct broker_resolver *r, struct broker_lane *l);
/* q's name is pinned (--resolve): its answer, checked now, on the
 * caller's thread. 1, or 0 when the name is not pinned. */
int broker_resolve_pinned(struct broker_resolver *r, struct broker_req *q);
/* Queue q in lane l: 0, or -1 when l already has max_pending lookups. */
int broker_resolver_queue(struct broker_resolver *r, struct broker_lane *l, struct broker_req *q);
/* Give waiting lookups to the workers, lanes in turn. */
void broker_resolver_dispatch(struct broker_resolver *r);
/* Take every answered request (a list linked by next, oldest first). */
struct broker_req *broker_resolver_take(struct broker_resolver *r);

/* The host's own addresses, the whole list (own.c): a reference to the
 * list of this second, or NULL when it cannot be read whole (refuse).
 * *sec: the second it was read in. Give it back with broker_own_put. */
const struct broker_own *broker_own_get(struct broker_resolver *r, long *sec);
void broker_own_put(struct broker_resolver *r, const struct broker_own *o);
const struct sockaddr_storage *broker_own_addrs(const struct broker_own *o, size_t *n);

/* Answers that passed the check, reusable within the second of the check
 * (answers.c). */
struct answer;
struct broker_answers {
	struct answer *tab;        /* made at the first answer */
};
/* The monotonic second: the unit of both the own-address list and kept
 * answers, from one clock. */
long broker_answers_second(void);
/* Fill q's addresses (with q's port) from a kept answer: 1, or 0 when
 * there is none for this second. */
int broker_answers_get(const struct broker_answers *t, struct broker_req *q);
/* Keep q's answer if it passed and was checked in this second. */
void broker_answers_put(struct broker_answers *t, const struct broker_req *q);

/* The broker's own socket (listen.c). */
int broker_listening_unix_stream(int fd);
int broker_activation_fd(void);
int broker_parse_mode(const char *s);
gid_t broker_parse_group(const char *s);
/* Bind and listen at path (replacing only a stale socket); mode -1 and
 * gid -1 leave the file as bind(2) makes it. made: the file's identity. */
int broker_listen_path(const char *path, int mode, gid_t gid, struct stat *made);
void broker_unlink_path(const char *path, const struct stat *made);

/* --listen-tcp ADDR:PORT, a loopback address only (tcp.c). */
struct broker_tcp {
	union {
		struct sockaddr sa;
		struct sockaddr_in a4;
		struct sockaddr_in6 a6;
	};
	socklen_t len;
};
void broker_parse_tcp(struct broker_tcp *t, const char *arg);
int broker_listen_tcp(const struct broker_tcp *t, const char *arg);
/* The NETLINK_SOCK_DIAG socket, and the uid that owns the peer's end of
 * a connection accepted on --listen-tcp: 0, or -1 when it is not known. */
int broker_diag_open(void);
int broker_tcp_peer_uid(int diag, int fd, uid_t *uid);

/* Pinned names (pins.c). */
void broker_add_resolve(struct broker_cfg *cfg, const char *arg);
void broker_add_resolve_file(struct broker_cfg *cfg, const char *path);
/* allowpol.c: --allow-policy FILE, the allowed names of a policy */
void broker_allow_policy(struct broker_cfg *cfg, const char *path);
/* The pinned addresses of host (at most max): 0 when it is not pinned. */
size_t broker_pinned(const struct broker_cfg *cfg, const char *host, struct sockaddr_storage *out, size_t max);

/* Transparent mode (transparent.c). */
void broker_add_allow_tcp(struct broker_cfg *cfg, const char *arg);
/* 1 if --allow-tcp names host:port. */
int broker_opaque(const struct broker_cfg *cfg, const char *host, unsigned port);
/* The ports a transparent sandbox captures (at most SBX_CAPTURE_MAX). */
size_t broker_capture_ports(const struct broker_cfg *cfg, unsigned *out);
/* The answer to SBX_PROBE_PORTS; 0 if it does not fit. */
size_t broker_ports_line(const struct broker_cfg *cfg, char *buf, size_t sz);
/* A sandbox's synthetic names. */
struct broker_synth;
void broker_synth_free(struct broker_synth *t);
/* The name behind a synthetic address (host order), or NULL. */
const char *broker_synth_name(const struct broker_synth *t, uint32_t addr);
struct broker_dns_result {
	const char *decision;      /* "allowed" or "refused" */
	char reason[200];
	char name[SBX_HOST_MAX + 1];
	char addr[16];             /* the synthetic address given, if any */
	int log;                   /* worth a line: a refusal or a new name */
};
/* Answer one query (msg[0..len)) of a sandbox into out (at least
 * SBX_DNS_ANSWER_MAX bytes): the answer's length, 0 to send nothing. */
size_t broker_dns(const struct broker_cfg *cfg, struct broker_synth **t, const unsigned char *msg,
		  size_t len, unsigned char *out, struct broker_dns_result *res);

/* The allowlist (loop.c). */
int broker_host_allowed(const struct broker_cfg *cfg, const char *host);
int broker_port_allowed(const struct broker_cfg *cfg, unsigned port);

/* Service routes (service.c, tls.c). */
void broker_add_service(struct broker_cfg *cfg, const char *arg);
/* --service-header (ca 0) or --service-ca (ca 1) NAME=FILE. */
void broker_add_service_file(struct broker_cfg *cfg, int ca, const char *arg);
/* After every option: the names checked against the allowlist, the files
 * read, each route's TLS context made. */
void broker_services_finish(struct broker_cfg *cfg);
/* --service-method (0), --service-path (1), --service-placeholder (2). */
void broker_add_service_rule(struct broker_cfg *cfg, int kind, const char *arg);
void broker_service_rules_finish(struct broker_cfg *cfg);
const struct broker_service *broker_service_find(const struct broker_cfg *cfg, const char *name);
/* The TLS context of s, verifying against pem[0..len) (tls.c); dies on failure. */
void *broker_tls_ctx(const struct broker_service *s, const char *pem, size_t len, const char *what);

/* Run until SIGTERM or SIGINT; returns the exit code. */
int broker_loop(const struct broker_cfg *cfg);

#endif

/* The event loop: one thread, non-blocking sockets, edge-triggered epoll.
 * It accepts, hands every event to the connection's current step (see
 * conn.h), passes names to the resolver in batches, expires connections
 * past their wall time and ends on SIGTERM or SIGINT. */
#include "conn.h"
#include "clock.h"
#include "die.h"
#include "exitcodes.h"
#include "fd.h"
#include "json.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

/* Run the current step until it would block. -1: c is gone. */
int run(struct loop *L, struct conn *c)
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
	case S_TLS: return tls_handshake(L, c);
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
	    (c->st == S_RESOLVE || c->st == S_DIAL || c->st == S_UPSTREAM || c->st == S_TLS)) {
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
		next = q->next;
		if (q->conn)
			resolved(L, q->conn);
		else
			req_free(L, q);
	}
}

/* The client of a connection on the broker's own sockets, by uid: NULL
 * when a TCP peer's uid cannot be found (the connection is refused). */
static struct peer *peer_of(struct loop *L, int fd, int tcp)
{
	struct peer *p;
	uid_t uid;

	if (tcp) {
		if (broker_tcp_peer_uid(L->diag_fd, fd, &uid) < 0)
			return NULL;
	} else {
		struct ucred cr;
		socklen_t l = sizeof cr;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) < 0)
			return &L->anon;
		uid = cr.uid;
	}
	for (p = L->peers; p; p = p->next)
		if (p->uid == uid && p->tcp == tcp)
			return p;
	if (L->npeers >= PEERS_MAX || !(p = calloc(1, sizeof *p)))
		return &L->anon;
	p->uid = uid;
	p->tcp = tcp;
	log_budget_init(&p->log, "uid %u on %s", (unsigned)uid, tcp ? "--listen-tcp" : "the broker's socket");
	p->next = L->peers;
	L->peers = p;
	L->npeers++;
	return p;
}

/* Why a new connection may not be served, or NULL. The last
 * --reserved-connections slots are only for the broker's own Unix socket
 * (sbx-ns's handoffs and probes come there); --listen-tcp clients and
 * sandboxes' connections stop short of them, and each uid on --listen-tcp
 * holds at most --max-peer-connections. */
static const char *over_limit(const struct loop *L, const struct sandbox *sb, const struct peer *peer, int tcp)
{
	const struct broker_cfg *cfg = L->cfg;
	size_t shared = cfg->max_conns - cfg->reserved_conns;

	if (L->nconns >= cfg->max_conns)
		return "connection limit reached (--max-connections)";
	if (tcp && !peer)
		return "unable to find the uid of this --listen-tcp client";
	if (sb && sb->nconns >= cfg->max_sb_conns)
		return "this sandbox's connection limit reached (--max-sandbox-connections)";
	if (tcp && peer->nconns >= cfg->max_peer_conns)
		return "this uid's connection limit on --listen-tcp reached (--max-peer-connections)";
	if ((sb || tcp) && L->nconns >= shared)
		return "connection limit reached (--max-connections; the rest is reserved for handoffs "
		       "and probes, --reserved-connections)";
	return NULL;
}

static void on_accept(struct loop *L, int lfd, struct sandbox *sb, enum role role, int tcp)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct peer *peer = NULL;
		const char *why;
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
		if (!sb)
			peer = peer_of(L, fd, tcp);
		if ((why = over_limit(L, sb, peer, tcp))) {
			struct conn tmp = { .decision = "refused", .status = 503, .start_ms = sbx_now_ms(), .sb = sb,
					    .peer = peer ? peer : &L->anon };
			if (tcp && peer)
				snprintf(tmp.reason, sizeof tmp.reason, "%s (uid %u)", why, (unsigned)peer->uid);
			else
				snprintf(tmp.reason, sizeof tmp.reason, "%s", why);
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
		c->peer = peer;
		if (peer)
			peer->nconns++;

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
		if (c->st == S_TLS)
			refuse(L, c, 504, "TLS handshake with %s timed out (--max-wall-time)", c->addr);
		else
			refuse(L, c, 504, "--max-wall-time exceeded");
	}
}

static void terminate(struct loop *L, int sig)
{
	struct sbx_json j;
	char t[40];

	close(L->lfd);
	if (L->tfd >= 0)
		close(L->tfd);
	if (L->cfg->listen_path)
		broker_unlink_path(L->cfg->listen_path, &L->cfg->listen_made);
	while (L->sbs)
		sandbox_end(L, L->sbs, "broker terminated");
	while (L->head) {
		set_reason(L->head, "broker terminated");
		refuse(L, L->head, 503, "broker terminated");
	}
	while (L->log_pending)
		log_budget_flush(L, L->log_pending);
	iso_time(t, sizeof t);
	sbx_json_begin(&j, "sbx-broker", "exit");
	sbx_json_str(&j, "time", t);
	sbx_json_int(&j, "code", 0);
	sbx_json_int(&j, "signal", sig);
	log_line(L, NULL, LOG_SANDBOX, &j);
}

int broker_loop(const struct broker_cfg *cfg)
{
	struct loop L = { .cfg = cfg, .lfd = cfg->listen_fd, .tfd = cfg->tcp_fd };
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
	log_budget_init(&L.log_all, "all clients together");
	L.log_all.limit = LOG_LINES_ALL_PER_SEC;
	log_budget_init(&L.anon.log, "clients not told apart (no uid known, or more than %d uids)", PEERS_MAX);
	L.diag_fd = -1;
	if (cfg->tcp_fd >= 0 || cfg->listen_is_tcp) {
		L.diag_fd = broker_diag_open();
		if (L.diag_fd < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to open NETLINK_SOCK_DIAG (it finds the uid of each "
				      "--listen-tcp client, for --max-peer-connections)");
	}
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
	L.ht.kind = K_LISTEN;
	if (L.tfd >= 0 && (fcntl(L.tfd, F_SETFL, fcntl(L.tfd, F_GETFL) | O_NONBLOCK) < 0 ||
			   ep_add(&L, L.tfd, &L.ht, EPOLLIN) < 0))
		sbx_die_errno(SBX_EXIT_SYS, "unable to watch the --listen-tcp socket");
	{
		struct sbx_json j;
		char t[40];
		iso_time(t, sizeof t);
		sbx_json_begin(&j, "sbx-broker", "listening");
		sbx_json_str(&j, "time", t);
		sbx_json_uint(&j, "max_wall_time_ms", cfg->wall_ms);
		sbx_json_uint(&j, "max_request_bytes", cfg->max_req);
		sbx_json_uint(&j, "max_response_bytes", cfg->max_resp);
		sbx_json_uint(&j, "max_connections", cfg->max_conns);
		sbx_json_uint(&j, "max_sandbox_connections", cfg->max_sb_conns);
		sbx_json_uint(&j, "max_sandbox_lookups", cfg->max_sb_lookups);
		sbx_json_uint(&j, "max_peer_connections", cfg->max_peer_conns);
		sbx_json_uint(&j, "reserved_connections", cfg->reserved_conns);
		sbx_json_uint(&j, "log_lines_per_second", LOG_LINES_PER_SEC);
		sbx_json_uint(&j, "log_lines_per_second_all", LOG_LINES_ALL_PER_SEC);
		log_line(&L, NULL, LOG_SANDBOX, &j);
	}
	sbx_ready_fd(cfg->ready_fd);

	for (;;) {
		uint64_t now = sbx_now_ms();
		int timeout = -1, n, t;

		expire(&L, now);
		if (L.head)
			timeout = (int)(L.head->deadline_ms - now);
		/* A budget's summary is due when its second is over. */
		t = log_tick(&L);
		if (t >= 0 && (timeout < 0 || t < timeout))
			timeout = t;
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
				on_accept(&L, h == &L.ht ? L.tfd : L.lfd, NULL, R_PROXY,
					  h == &L.ht || cfg->listen_is_tcp);
				break;
			case K_SB_LISTEN:
				if (!h->sb->dead)
					on_accept(&L, h->sb->lfd[h - h->sb->hl], h->sb, h->sb->role[h - h->sb->hl], 0);
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
		/* Names read in this batch of events go to the workers at once,
		 * before the loop waits again. */
		broker_resolver_dispatch(&L.res);
	}
}

/* TLS to a service route's origin, on the event loop (OpenSSL, nonblocking).
 *
 * Once the TCP connection to the checked address is up, the handshake is
 * driven by the connection's events (S_TLS): TLS 1.2 at least, the chain
 * verified against the route's CA bundle (or the host's store), the host
 * name (or address) verified by the library, SNI set for a name. Any
 * failure is a 502 with the library's reason; there is no fallback to
 * plain HTTP. Once verified, a socket pair stands between the plain HTTP
 * step and TLS: http.c reads and writes c->ofd as with any origin (the
 * same framing, limits and hop-by-hop rules), and the relay below moves
 * the bytes between the pair's other end and the TLS connection. The
 * sandbox's own CONNECT tunnels never come here: the broker never
 * terminates or opens TLS for them.
 *
 * Sessions are resumed, as a reverse proxy does, within one route only:
 * each route has its SSL_CTX, made once at start with the CA read then (a
 * changed CA file counts from the next start), and keeps the latest
 * session the service gave on a connection whose chain and name verified
 * (TLS 1.2: at the end of the handshake; TLS 1.3: the tickets that come
 * after it, read by the relay). The next connection of that route offers
 * it while it is younger than its own lifetime and SESSION_MAX seconds;
 * no other route ever sees it (another host, port, SNI or CA is another
 * route, another context). A resumed connection is held to the verdict
 * of the session's full handshake, checked again once it is up; a failed
 * handshake forgets the route's session. */
#include "conn.h"
#include "die.h"
#include "exitcodes.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TLS_BUF (16 * 1024)
#define SESSION_MAX 300 /* seconds a session is offered again, at most */

/* A route's resumable session: its SSL_CTX's app data. */
struct tls_resume {
	SSL_SESSION *sess;
	time_t until; /* CLOCK_MONOTONIC seconds */
};

struct tls_link {
	SSL *ssl;
	int net;                    /* TCP to the service */
	int plain;                  /* the pair's end the relay uses; http.c has c->ofd */
	char up[TLS_BUF], down[TLS_BUF];
	size_t uplen, upoff, downlen, downoff;
	int plain_eof, tls_eof, shut, unclean;
	int failed;                 /* a TLS error: its session is not resumed */
};

/* Links of ended connections, wiped, for the next ones: 32 KiB each, which
 * the allocator would otherwise map and unmap per connection. */
#define SPARE_MAX 16
static struct tls_link *spare[SPARE_MAX];
static size_t nspare;

static time_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

static void forget(struct tls_resume *k)
{
	SSL_SESSION_free(k->sess);
	k->sess = NULL;
}

/* The library's word on a new session of a route's connection: kept (1,
 * the reference is ours) when the connection's chain and name verified. */
static int keep_session(SSL *ssl, SSL_SESSION *sess)
{
	struct tls_resume *k = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
	long life = SSL_SESSION_get_timeout(sess);
	unsigned long hint = SSL_SESSION_get_ticket_lifetime_hint(sess);

	if (SSL_get_verify_result(ssl) != X509_V_OK || !SSL_SESSION_get0_peer(sess) ||
	    !SSL_SESSION_is_resumable(sess))
		return 0;
	if (life <= 0)
		return 0;
	if (hint && hint < (unsigned long)life)
		life = (long)hint;
	if (life > SESSION_MAX)
		life = SESSION_MAX;
	forget(k);
	k->sess = sess;
	k->until = mono() + life;
	return 1;
}

void *broker_tls_ctx(const struct broker_service *s, const char *pem, size_t len, const char *what)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	BIO *bio = BIO_new_mem_buf(pem, (int)len);
	struct tls_resume *k = calloc(1, sizeof *k);
	STACK_OF(X509_INFO) *infos;
	X509_STORE *store;
	int n = 0;

	if (!ctx || !bio || !k)
		sbx_die(SBX_EXIT_SYS, "--service: %s: unable to make a TLS context: out of memory", s->name);
	store = SSL_CTX_get_cert_store(ctx);
	infos = PEM_X509_INFO_read_bio(bio, NULL, NULL, NULL);
	for (int i = 0; infos && i < sk_X509_INFO_num(infos); i++) {
		X509_INFO *xi = sk_X509_INFO_value(infos, i);
		if (xi->x509 && X509_STORE_add_cert(store, xi->x509) == 1)
			n++;
	}
	sk_X509_INFO_pop_free(infos, X509_INFO_free);
	BIO_free(bio);
	ERR_clear_error();
	if (!n)
		sbx_die_usage("--service-ca: %s: %s holds no PEM certificate", s->name, what);
	if (!SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION))
		sbx_die(SBX_EXIT_SYS, "--service: %s: unable to require TLS 1.2", s->name);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_security_level(ctx, 2);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_app_data(ctx, k);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(ctx, keep_session);
	return ctx;
}

/* One line on why TLS failed: the certificate's verdict first. */
static void why(SSL *ssl, int ret, int err, char *buf, size_t sz)
{
	long v = SSL_get_verify_result(ssl);
	unsigned long e = ERR_peek_error();

	if (v != X509_V_OK)
		snprintf(buf, sz, "certificate verify failed: %s", X509_verify_cert_error_string(v));
	else if (e && ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING)
		snprintf(buf, sz, "the service closed the connection");
	else if (e && ERR_reason_error_string(e))
		snprintf(buf, sz, "%s", ERR_reason_error_string(e));
	else if (err == SSL_ERROR_SYSCALL && ret == 0 && !errno)
		snprintf(buf, sz, "the service closed the connection");
	else if (err == SSL_ERROR_SYSCALL || err == SSL_ERROR_ZERO_RETURN)
		snprintf(buf, sz, "%s", errno ? strerror(errno) : "the service closed the connection");
	else
		snprintf(buf, sz, "TLS error %d", err);
	ERR_clear_error();
}

/* Whether the handshake failed on the protocol version: the service
 * answered our TLS 1.2 and 1.3 with an alert, or chose an older version.
 * (A "wrong version number" is left to why(): it is what a service that
 * speaks no TLS at all, plain HTTP on the port, gives.) */
static int version_refused(SSL *ssl)
{
	unsigned long e = ERR_peek_error();
	int r = ERR_GET_REASON(e);

	if (SSL_get_verify_result(ssl) != X509_V_OK || !e)
		return 0;
	if (r != SSL_R_TLSV1_ALERT_PROTOCOL_VERSION && r != SSL_R_UNSUPPORTED_PROTOCOL)
		return 0;
	ERR_clear_error();
	return 1;
}

int tls_start(struct loop *L, struct conn *c)
{
	const struct broker_service *s = c->svc;
	struct tls_link *t = nspare ? spare[--nspare] : calloc(1, sizeof *t);
	SSL *ssl = t ? SSL_new(s->tls) : NULL;
	struct tls_resume *k = SSL_CTX_get_app_data(s->tls);
	int ok;

	if (!ssl) {
		free(t);
		refuse(L, c, 502, "out of memory");
		return -1;
	}
	t->ssl = ssl;
	t->net = c->ofd; /* stays watched with c->ho */
	t->plain = -1;
	c->ofd = -1;
	c->tls = t;
	if (s->host_is_ip)
		ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), s->host);
	else
		ok = SSL_set_tlsext_host_name(ssl, s->host) && SSL_set1_host(ssl, s->host);
	SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	if (k->sess && mono() >= k->until)
		forget(k);
	if (k->sess && !SSL_set_session(ssl, k->sess))
		ok = 0;
	if (!ok || !SSL_set_fd(ssl, t->net)) {
		ERR_clear_error();
		refuse(L, c, 502, "unable to set up TLS");
		return -1;
	}
	SSL_set_connect_state(ssl);
	c->st = S_TLS;
	return run(L, c);
}

int tls_handshake(struct loop *L, struct conn *c)
{
	struct tls_link *t = c->tls;
	char buf[200];
	int sp[2], r, e;

	ERR_clear_error();
	errno = 0;
	r = SSL_do_handshake(t->ssl);
	if (r != 1) {
		e = SSL_get_error(t->ssl, r);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
			return 0;
		t->failed = 1;
		forget(SSL_CTX_get_app_data(SSL_get_SSL_CTX(t->ssl)));
		if (version_refused(t->ssl)) {
			const struct broker_service *s = c->svc;
			int v6 = s->host_is_ip && strchr(s->host, ':');

			refuse(L, c, 502, "%s%s%s:%u offers no TLS 1.2 or 1.3 (protocol version refused)",
			       v6 ? "[" : "", s->host, v6 ? "]" : "", s->port);
			return -1;
		}
		why(t->ssl, r, e, buf, sizeof buf);
		refuse(L, c, 502, "TLS with %s: %s", c->addr, buf);
		return -1;
	}
	/* Resumed or not, the connection stands on a verified chain. */
	if (SSL_get_verify_result(t->ssl) != X509_V_OK || !SSL_get0_peer_certificate(t->ssl)) {
		t->failed = 1;
		forget(SSL_CTX_get_app_data(SSL_get_SSL_CTX(t->ssl)));
		refuse(L, c, 502, "TLS with %s: the session holds no verified certificate", c->addr);
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp) < 0) {
		refuse(L, c, 502, "unable to create a socket pair: %s", strerror(errno));
		return -1;
	}
	c->ofd = sp[0];
	t->plain = sp[1];
	if (ep_add(L, c->ofd, &c->ho, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) < 0 ||
	    ep_add(L, t->plain, &c->ho, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) < 0) {
		refuse(L, c, 502, "unable to watch a socket: %s", strerror(errno));
		return -1;
	}
	return established(L, c);
}

/* Move what can move now, both ways. 0, or -1 with buf set. */
static int relay(struct tls_link *t, char *buf, size_t sz)
{
	for (;;) {
		int progress = 0, r, e;
		ssize_t n;

		if (t->upoff == t->uplen && !t->plain_eof) {
			n = recv(t->plain, t->up, sizeof t->up, MSG_DONTWAIT);
			if (n > 0) {
				t->uplen = (size_t)n;
				t->upoff = 0;
				progress = 1;
			} else if (n == 0)
				t->plain_eof = 1;
			else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
				snprintf(buf, sz, "read failed: %s", strerror(errno));
				return -1;
			}
		}
		if (t->upoff < t->uplen) {
			ERR_clear_error();
			r = SSL_write(t->ssl, t->up + t->upoff, (int)(t->uplen - t->upoff));
			if (r > 0) {
				t->upoff += (size_t)r;
				progress = 1;
				if (t->upoff == t->uplen) {
					explicit_bzero(t->up, t->uplen); /* the route's header lines */
					t->upoff = t->uplen = 0;
				}
			} else if ((e = SSL_get_error(t->ssl, r)) != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
				why(t->ssl, r, e, buf, sz);
				return -1;
			}
		}
		if (t->downoff == t->downlen && !t->tls_eof) {
			ERR_clear_error();
			errno = 0;
			r = SSL_read(t->ssl, t->down, sizeof t->down);
			if (r > 0) {
				t->downlen = (size_t)r;
				t->downoff = 0;
				progress = 1;
			} else if ((e = SSL_get_error(t->ssl, r)) == SSL_ERROR_ZERO_RETURN) {
				t->tls_eof = progress = 1;
			} else if (e == SSL_ERROR_SSL &&
				   ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
				/* An end without close_notify: HTTP's framing still
				 * tells a cut body; a close-delimited one is noted. */
				ERR_clear_error();
				t->tls_eof = t->unclean = progress = 1;
			} else if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
				why(t->ssl, r, e, buf, sz);
				return -1;
			}
		}
		if (t->downoff < t->downlen) {
			n = send(t->plain, t->down + t->downoff, t->downlen - t->downoff, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n > 0) {
				t->downoff += (size_t)n;
				progress = 1;
			} else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
				snprintf(buf, sz, "write failed: %s", strerror(errno));
				return -1;
			}
		}
		if (t->tls_eof && t->downoff == t->downlen && !t->shut) {
			shutdown(t->plain, SHUT_WR);
			t->shut = 1;
		}
		if (!progress)
			return 0;
	}
}

int tls_relay(struct loop *L, struct conn *c)
{
	struct tls_link *t = c->tls;
	char buf[200];

	if (relay(t, buf, sizeof buf) < 0) {
		t->failed = 1;
		forget(SSL_CTX_get_app_data(SSL_get_SSL_CTX(t->ssl)));
		if (!c->resp_head_done) {
			refuse(L, c, 502, "TLS with %s: %s", c->addr, buf);
			return -1;
		}
		set_reason(c, "TLS with %s: %s", c->addr, buf);
		conn_close(L, c);
		return -1;
	}
	if (t->unclean && c->resp_head_done && c->down.left == UINT64_MAX && !c->down.chunked)
		set_reason(c, "TLS with %s: closed without close_notify; the body may be cut", c->addr);
	return 0;
}

void tls_free(struct conn *c)
{
	struct tls_link *t = c->tls;

	if (!t)
		return;
	/* No close_notify is sent (the socket may be gone; the HTTP framing
	 * ends the exchange), yet a connection without a TLS error leaves its
	 * session resumable: the library drops sessions not shut down. */
	if (!t->failed && SSL_is_init_finished(t->ssl))
		SSL_set_shutdown(t->ssl, SSL_SENT_SHUTDOWN);
	SSL_free(t->ssl);
	if (t->net >= 0)
		close(t->net);
	if (t->plain >= 0)
		close(t->plain);
	explicit_bzero(t, sizeof *t);
	if (nspare < SPARE_MAX)
		spare[nspare++] = t;
	else
		free(t);
	c->tls = NULL;
}

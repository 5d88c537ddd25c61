/* TLS to a service route's origin, on the event loop (OpenSSL, nonblocking).
 *
 * Once the TCP connection to the checked address is up, the handshake is
 * driven by the connection's events (S_TLS): TLS 1.2 at least, the chain
 * verified against the route's CA bundle (or the host's store), the host
 * name (or address) verified by the library, SNI set for a name. Any
 * failure is a 502 with the library's reason; there is no fallback to
 * plain HTTP. Once verified, the plain HTTP step itself (http.c, relay.c)
 * reads and writes the TLS connection through origin_recv() and
 * origin_send(), the same framing, limits and hop-by-hop rules as any
 * origin's, and the same code: only the calls that move the origin's
 * bytes differ. The sandbox's own CONNECT tunnels never come here: the
 * broker never
 * terminates or opens TLS for them.
 *
 * Sessions are resumed, as a reverse proxy does, within one route only:
 * each route has its SSL_CTX, made once at start with the CA read then (a
 * changed CA file counts from the next start), and keeps the latest
 * sessions (SESSIONS) the service gave on connections whose chain and
 * name verified (TLS 1.2: at the end of the handshake; TLS 1.3: the
 * tickets that come after it, read with the response). The next
 * connection of that route offers the newest while it is younger than
 * its own lifetime and SESSION_MAX seconds, a TLS 1.3 ticket to one
 * connection only (see offer()); no other route ever sees them (another
 * host, port, SNI or CA is another route, another context). A resumed
 * connection is held to the verdict of the session's full handshake,
 * checked again once it is up; a failed handshake forgets the route's
 * sessions. */
#include "conn.h"
#include "die.h"
#include "exitcodes.h"

#include <errno.h>
#include <limits.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SESSION_MAX 300 /* seconds a session is offered again, at most */

#define SESSIONS 8        /* kept per route, the newest */

/* A route's resumable sessions, newest last: its SSL_CTX's app data. */
struct tls_resume {
	SSL_SESSION *sess[SESSIONS];
	time_t until[SESSIONS]; /* CLOCK_MONOTONIC seconds */
	size_t n;
};

struct tls_link {
	SSL *ssl;                   /* on c->ofd, the TCP connection to the service */
	int eof, unclean;           /* the service ended; without close_notify */
	int failed;                 /* a TLS error: its session is not resumed */
	char why[200];              /* that error's words */
};

/* Links of ended connections, for the next ones. */
#define SPARE_MAX 16
static struct tls_link *spare[SPARE_MAX];
static size_t nspare;

static time_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

static void drop(struct tls_resume *k, size_t i)
{
	SSL_SESSION_free(k->sess[i]);
	memmove(k->sess + i, k->sess + i + 1, (k->n - i - 1) * sizeof k->sess[0]);
	memmove(k->until + i, k->until + i + 1, (k->n - i - 1) * sizeof k->until[0]);
	k->n--;
}

static void forget(struct tls_resume *k)
{
	while (k->n)
		drop(k, k->n - 1);
}

/* The session to offer, NULL for none: the newest one still young enough
 * and resumable. A TLS 1.3 session is offered once: the library marks it
 * used when the handshake ends (each ticket is for one connection), and
 * the service sends new ones on every connection; a TLS 1.2 session is
 * offered until it ages. The reference is the caller's. */
static SSL_SESSION *offer(struct tls_resume *k)
{
	time_t now = mono();
	SSL_SESSION *s;

	for (size_t i = k->n; i-- > 0;)
		if (now >= k->until[i] || !SSL_SESSION_is_resumable(k->sess[i]))
			drop(k, i);
	if (!k->n)
		return NULL;
	s = k->sess[k->n - 1];
	if (SSL_SESSION_get_protocol_version(s) == TLS1_3_VERSION)
		k->n--; /* the reference goes with it */
	else
		SSL_SESSION_up_ref(s);
	return s;
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
	if (k->n == SESSIONS)
		drop(k, 0);
	k->sess[k->n] = sess;
	k->until[k->n++] = mono() + life;
	return 1;
}

void *broker_tls_ctx(const struct broker_service *s, const char *pem, size_t len, const char *what)
{
	SSL_CTX *ctx;
	BIO *bio;
	struct tls_resume *k = calloc(1, sizeof *k);
	STACK_OF(X509_INFO) *infos;
	X509_STORE *store;
	int n = 0;

	broker_tls_mem(); /* before the library's first allocation */
	ctx = SSL_CTX_new(TLS_client_method());
	bio = BIO_new_mem_buf(pem, (int)len);
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

	if (v == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY || v == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT ||
	    v == X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN)
		snprintf(buf, sz, "certificate verify failed: %s; a service with a private CA needs it named "
			 "(--service-ca NAME=FILE)", X509_verify_cert_error_string(v));
	else if (v != X509_V_OK)
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
	SSL_SESSION *sess;
	int ok;

	if (!ssl) {
		free(t);
		refuse(L, c, 502, "out of memory");
		return -1;
	}
	t->ssl = ssl;
	c->tls = t; /* c->ofd stays the TCP connection, watched with c->ho */
	if (s->host_is_ip)
		ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), s->host);
	else
		ok = SSL_set_tlsext_host_name(ssl, s->host) && SSL_set1_host(ssl, s->host);
	SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	if ((sess = offer(k))) {
		if (!SSL_set_session(ssl, sess))
			ok = 0;
		SSL_SESSION_free(sess);
	}
	if (!ok || !SSL_set_fd(ssl, c->ofd)) {
		ERR_clear_error();
		refuse(L, c, 502, "unable to set up TLS");
		return -1;
	}
	SSL_set_connect_state(ssl);
	c->st = S_TLS;
	return run(L, c);
}

/* A TLS error: its words kept, the route's session forgotten. */
static void failed(struct tls_link *t, int r, int e)
{
	t->failed = 1;
	why(t->ssl, r, e, t->why, sizeof t->why);
	forget(SSL_CTX_get_app_data(SSL_get_SSL_CTX(t->ssl)));
}

int tls_handshake(struct loop *L, struct conn *c)
{
	struct tls_link *t = c->tls;
	int r, e;

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
		failed(t, r, e);
		refuse(L, c, 502, "TLS with %s: %s", c->addr, t->why);
		return -1;
	}
	/* Resumed or not, the connection stands on a verified chain. */
	if (SSL_get_verify_result(t->ssl) != X509_V_OK || !SSL_get0_peer_certificate(t->ssl)) {
		t->failed = 1;
		forget(SSL_CTX_get_app_data(SSL_get_SSL_CTX(t->ssl)));
		refuse(L, c, 502, "TLS with %s: the session holds no verified certificate", c->addr);
		return -1;
	}
	return established(L, c);
}

/* The library's results as recv(2)'s and send(2)'s: a would-block either
 * way (a read that must write first, or a write that must read: every
 * event of either socket runs the whole step again) is EAGAIN; a TLS
 * error is EPROTO, its words in tls_why(). */
static ssize_t tls_result(struct tls_link *t, int r)
{
	int e = SSL_get_error(t->ssl, r);

	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		errno = EAGAIN;
		return -1;
	}
	if (e == SSL_ERROR_ZERO_RETURN) {
		t->eof = 1;
		return 0;
	}
	if (e == SSL_ERROR_SSL && ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
		/* An end without close_notify: HTTP's framing still tells a
		 * cut body; a close-delimited one is noted (http.c). */
		ERR_clear_error();
		t->eof = t->unclean = 1;
		return 0;
	}
	failed(t, r, e);
	errno = EPROTO;
	return -1;
}

ssize_t origin_recv(struct conn *c, int fd, void *buf, size_t n)
{
	struct tls_link *t = c->tls;
	int r;

	if (!t || fd != c->ofd)
		return recv(fd, buf, n, MSG_DONTWAIT);
	if (t->eof)
		return 0;
	if (t->failed) {
		errno = EPROTO;
		return -1;
	}
	ERR_clear_error();
	errno = 0;
	r = SSL_read(t->ssl, buf, n > INT_MAX ? INT_MAX : (int)n);
	return r > 0 ? r : tls_result(t, r);
}

ssize_t origin_send(struct conn *c, int fd, const void *buf, size_t n)
{
	struct tls_link *t = c->tls;
	int r;

	if (!t || fd != c->ofd)
		return send(fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (t->failed) {
		errno = EPROTO;
		return -1;
	}
	ERR_clear_error();
	errno = 0;
	r = SSL_write(t->ssl, buf, n > INT_MAX ? INT_MAX : (int)n);
	if (r > 0)
		return r;
	r = (int)tls_result(t, r);
	if (!r) {
		errno = EPIPE; /* ended: nothing more can be written */
		r = -1;
	}
	return r;
}

const char *tls_why(const struct conn *c)
{
	return c->tls && c->tls->failed && c->tls->why[0] ? c->tls->why : NULL;
}

int tls_unclean(const struct conn *c)
{
	return c->tls && c->tls->unclean;
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
	explicit_bzero(t, sizeof *t);
	if (nspare < SPARE_MAX)
		spare[nspare++] = t;
	else
		free(t);
	c->tls = NULL;
}

#include "tlshello.h"
#include "hostpat.h"

#include <stdint.h>
#include <string.h>

static int bad(struct sbx_tls_hello *h, int alert, const char *why)
{
	h->why = why;
	h->alert = alert;
	return SBX_TLS_BAD;
}

static unsigned be16(const unsigned char *p) { return (unsigned)p[0] << 8 | p[1]; }

/* A bounds-checked reader over the reassembled ClientHello body. */
struct rd {
	const unsigned char *p;
	size_t n;
	int err;
};

static const unsigned char *take(struct rd *r, size_t n)
{
	const unsigned char *p = r->p;
	if (r->err || n > r->n) {
		r->err = 1;
		return NULL;
	}
	r->p += n;
	r->n -= n;
	return p;
}

static unsigned u8(struct rd *r) { const unsigned char *p = take(r, 1); return p ? p[0] : 0; }
static unsigned u16(struct rd *r) { const unsigned char *p = take(r, 2); return p ? be16(p) : 0; }

static int sub(struct rd *r, size_t n, struct rd *out)
{
	out->p = take(r, n);
	out->n = n;
	out->err = r->err;
	return r->err ? -1 : 0;
}

static int server_name(struct rd *ext, struct sbx_tls_hello *h)
{
	struct rd list, name;
	unsigned type;
	const char *why;

	if (sub(ext, u16(ext), &list) || ext->n)
		return bad(h, SBX_TLS_ALERT_DECODE, "malformed server_name extension");
	type = u8(&list);
	if (sub(&list, u16(&list), &name))
		return bad(h, SBX_TLS_ALERT_DECODE, "malformed server_name extension");
	if (type != 0)
		return bad(h, SBX_TLS_ALERT_NAME, "server_name is not a host_name");
	if (list.n)
		return bad(h, SBX_TLS_ALERT_NAME, "more than one server name");
	why = sbx_host_normalize((const char *)name.p, name.n, h->sni);
	if (why) {
		h->sni[0] = '\0';
		return bad(h, SBX_TLS_ALERT_NAME, !strcmp(why, "IP literals not allowed") ||
			   !strncmp(why, "ports and IPv6", 14) ? "server name is an IP literal" :
			   "server name is not a valid host name");
	}
	return 0;
}

static int client_hello(const unsigned char *body, size_t n, struct sbx_tls_hello *h)
{
	struct rd r = { body, n, 0 }, tmp, exts;
	unsigned seen_types[64];
	size_t nseen = 0;
	int have_sni = 0;

	take(&r, 2 + 32);                       /* legacy_version, random */
	if (sub(&r, u8(&r), &tmp) || tmp.n > 32) /* legacy_session_id */
		return bad(h, SBX_TLS_ALERT_DECODE, "malformed ClientHello");
	if (sub(&r, u16(&r), &tmp) || tmp.n < 2 || tmp.n % 2)
		return bad(h, SBX_TLS_ALERT_DECODE, "malformed ClientHello");
	if (sub(&r, u8(&r), &tmp) || tmp.n < 1)
		return bad(h, SBX_TLS_ALERT_DECODE, "malformed ClientHello");
	if (r.n == 0)
		return bad(h, SBX_TLS_ALERT_NAME, "no server_name in the ClientHello");
	if (sub(&r, u16(&r), &exts) || r.n)
		return bad(h, SBX_TLS_ALERT_DECODE, "malformed ClientHello extensions");
	while (exts.n) {
		unsigned type = u16(&exts);
		struct rd ext;
		if (sub(&exts, u16(&exts), &ext))
			return bad(h, SBX_TLS_ALERT_DECODE, "malformed ClientHello extensions");
		for (size_t i = 0; i < nseen; i++)
			if (seen_types[i] == type)
				return bad(h, SBX_TLS_ALERT_DECODE, "duplicate ClientHello extension");
		if (nseen == sizeof seen_types / sizeof seen_types[0])
			return bad(h, SBX_TLS_ALERT_DECODE, "too many ClientHello extensions");
		seen_types[nseen++] = type;
		if (type == 0xfe0d)
			return bad(h, SBX_TLS_ALERT_ACCESS, "encrypted ClientHello not supported");
		if (type == 0xffce)
			return bad(h, SBX_TLS_ALERT_ACCESS, "encrypted server name (ESNI) not supported");
		if (type == 0) {
			if (server_name(&ext, h))
				return SBX_TLS_BAD;
			have_sni = 1;
		}
	}
	if (!have_sni)
		return bad(h, SBX_TLS_ALERT_NAME, "no server_name in the ClientHello");
	return SBX_TLS_DONE;
}

int sbx_tls_hello_parse(const unsigned char *buf, size_t len, struct sbx_tls_hello *h)
{
	unsigned char msg[4 + SBX_TLS_HELLO_MAX];
	size_t have = 0, want = 0, off = 0;

	memset(h, 0, sizeof *h);
	/* Records: type 22 (handshake), version 3.x, length 1..2^14. The
	 * fragments join into one handshake message. */
	while (off + 5 <= len) {
		const unsigned char *rec = buf + off;
		size_t rlen = be16(rec + 3);
		if (rec[0] != 22)
			return bad(h, SBX_TLS_ALERT_DECODE, off == 0 && (rec[0] & 0x80) ?
				   "SSLv2-compatible ClientHello not supported" :
				   "not a TLS handshake record");
		if (rec[1] != 3)
			return bad(h, SBX_TLS_ALERT_DECODE, "not a TLS record version");
		if (rlen == 0 || rlen > 16384)
			return bad(h, SBX_TLS_ALERT_DECODE, "invalid TLS record length");
		if (off + 5 + rlen > len) {
			/* Copy what arrived so the message header can be
			 * checked early; the record is not complete yet. */
			size_t part = len - off - 5;
			if (have + part > sizeof msg)
				return bad(h, SBX_TLS_ALERT_DECODE, "ClientHello too large");
			memcpy(msg + have, rec + 5, part);
			have += part;
			if (have >= 4 && !want && msg[0] == 1) {
				want = 4 + ((size_t)msg[1] << 16 | (size_t)msg[2] << 8 | msg[3]);
				if (want > sizeof msg)
					return bad(h, SBX_TLS_ALERT_DECODE, "ClientHello too large");
			}
			break;
		}
		if (have + rlen > sizeof msg)
			return bad(h, SBX_TLS_ALERT_DECODE, "ClientHello too large");
		memcpy(msg + have, rec + 5, rlen);
		have += rlen;
		off += 5 + rlen;
		if (have >= 4 && !want) {
			if (msg[0] != 1)
				return bad(h, SBX_TLS_ALERT_DECODE, "first handshake message is not a ClientHello");
			want = 4 + ((size_t)msg[1] << 16 | (size_t)msg[2] << 8 | msg[3]);
			if (want > sizeof msg)
				return bad(h, SBX_TLS_ALERT_DECODE, "ClientHello too large");
		}
		if (want && have >= want) {
			/* A second handshake message before the server has spoken
			 * is never legitimate; refusing keeps the check simple. */
			if (have > want)
				return bad(h, SBX_TLS_ALERT_DECODE, "data after the ClientHello in its record");
			h->used = off;
			return client_hello(msg + 4, want - 4, h);
		}
	}
	if (len > 0 && buf[0] != 22)
		return bad(h, SBX_TLS_ALERT_DECODE, (buf[0] & 0x80) ?
			   "SSLv2-compatible ClientHello not supported" : "not a TLS handshake record");
	if (have >= 1 && msg[0] != 1)
		return bad(h, SBX_TLS_ALERT_DECODE, "first handshake message is not a ClientHello");
	if (len >= 4 + SBX_TLS_HELLO_MAX + 5 * (SBX_TLS_HELLO_MAX + 4))
		return bad(h, SBX_TLS_ALERT_DECODE, "ClientHello too large");
	return SBX_TLS_INCOMPLETE;
}

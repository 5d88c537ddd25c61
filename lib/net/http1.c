#include "http1.h"
#include "hostpat.h"
#include "parse.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static int bad(struct sbx_http_head *h, int status, const char *why)
{
	h->status_out = status;
	h->why = why;
	return SBX_HTTP_BAD;
}

int sbx_http_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return 1;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Find the end of the head. Every line must end in CRLF: a bare LF or a CR
 * not followed by LF is refused wherever it appears, so there is exactly
 * one way to split the head into lines. Returns the head length, 0 if not
 * yet complete, or -1 with h set. */
static long head_end(const char *buf, size_t len, size_t max_head, struct sbx_http_head *h, int status_bad)
{
	size_t lim = len < max_head ? len : max_head;

	for (size_t i = 0; i < lim; i++) {
		if (buf[i] == '\n')
			return bad(h, status_bad, "bare LF in the head"), -1;
		if (buf[i] != '\r')
			continue;
		if (i + 1 >= len)
			return 0;
		if (buf[i + 1] != '\n')
			return bad(h, status_bad, "bare CR in the head"), -1;
		if (i + 3 < len && buf[i + 2] == '\r' && buf[i + 3] == '\n')
			return (long)(i + 4);
		if (i + 2 < len && buf[i + 2] == '\n')
			return bad(h, status_bad, "bare LF in the head"), -1;
		if (i + 3 < len && buf[i + 2] == '\r' && buf[i + 3] != '\n')
			return bad(h, status_bad, "bare CR in the head"), -1;
		i++;
	}
	if (len >= max_head)
		return bad(h, status_bad == 400 ? 431 : status_bad, "head too large"), -1;
	return 0;
}

/* The head's bounds: its length into h, where it ends (before the last
 * CRLF) and where its first line ends. Returns 1 when a whole head is
 * there, else SBX_HTTP_INCOMPLETE or SBX_HTTP_BAD (status and why set). */
static int head_bounds(const char *buf, size_t len, size_t max_head, struct sbx_http_head *h,
		       int status_bad, const char **end, const char **eol)
{
	long hl = head_end(buf, len, max_head, h, status_bad);

	if (hl <= 0)
		return hl < 0 ? SBX_HTTP_BAD : SBX_HTTP_INCOMPLETE;
	h->head_len = (size_t)hl;
	*end = buf + hl - 2;
	*eol = memchr(buf, '\r', (size_t)hl);
	return 1;
}

static int eq_ci(const char *a, size_t alen, const char *b)
{
	return alen == strlen(b) && !strncasecmp(a, b, alen);
}

/* Does a comma-separated field value contain token tok? */
static int list_has(const char *v, size_t n, const char *tok)
{
	size_t i = 0;

	while (i < n) {
		size_t s, e;
		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		s = i;
		while (i < n && v[i] != ',')
			i++;
		e = i;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e > s && eq_ci(v + s, e - s, tok))
			return 1;
	}
	return 0;
}

/* The header lines between the start line and the empty line. */
static int parse_fields(const char *p, const char *end, struct sbx_http_head *h, int st)
{
	while (p < end) {
		const char *eol = p, *colon, *v, *ve;
		struct sbx_http_field *f;

		while (eol[0] != '\r')
			eol++;
		if (*p == ' ' || *p == '\t')
			return bad(h, st, "obsolete line folding");
		colon = memchr(p, ':', (size_t)(eol - p));
		if (!colon)
			return bad(h, st, "header line without a colon");
		if (colon == p)
			return bad(h, st, "empty header name");
		for (const char *q = p; q < colon; q++) {
			if (*q == ' ' || *q == '\t')
				return bad(h, st, "whitespace before a colon");
			if (!sbx_http_tchar((unsigned char)*q))
				return bad(h, st, "invalid character in a header name");
		}
		v = colon + 1;
		ve = eol;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		for (const char *q = v; q < ve; q++) {
			unsigned char c = (unsigned char)*q;
			if ((c < 0x20 && c != '\t') || c == 0x7f)
				return bad(h, st, "control character in a header value");
		}
		if (h->nfields >= SBX_HTTP_MAX_HEADERS)
			return bad(h, st == 400 ? 431 : st, "too many header fields");
		f = &h->f[h->nfields++];
		f->name = p;
		f->nlen = (size_t)(colon - p);
		f->value = v;
		f->vlen = (size_t)(ve - v);
		p = eol + 2;
	}
	return 0;
}

const struct sbx_http_field *sbx_http_field(const struct sbx_http_head *h, const char *name)
{
	for (size_t i = 0; i < h->nfields; i++)
		if (eq_ci(h->f[i].name, h->f[i].nlen, name))
			return &h->f[i];
	return NULL;
}

static size_t count(const struct sbx_http_head *h, const char *name)
{
	size_t n = 0;
	for (size_t i = 0; i < h->nfields; i++)
		n += eq_ci(h->f[i].name, h->f[i].nlen, name);
	return n;
}

/* Content-Length: once, plain digits, no list, no sign. */
static int content_length(struct sbx_http_head *h, int st)
{
	const struct sbx_http_field *f = sbx_http_field(h, "content-length");
	char num[24];

	if (!f)
		return 0;
	if (count(h, "content-length") > 1)
		return bad(h, st, "Content-Length repeated");
	if (f->vlen == 0 || f->vlen >= sizeof num)
		return bad(h, st, "invalid Content-Length");
	memcpy(num, f->value, f->vlen);
	num[f->vlen] = '\0';
	for (size_t i = 0; i < f->vlen; i++)
		if (num[i] < '0' || num[i] > '9')
			return bad(h, st, "invalid Content-Length");
	if (sbx_parse_u64(num, 0, UINT64_MAX / 2, &h->length))
		return bad(h, st, "invalid Content-Length");
	h->has_length = 1;
	return 0;
}

static int parse_port(const char *s, size_t n, unsigned *port)
{
	unsigned v = 0;

	if (n == 0 || n > 5 || s[0] == '0')
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -1;
	*port = v;
	return 0;
}

/* "host[:port]" into normal form; the port defaults to dflt (0: required). */
static const char *authority(const char *s, size_t n, unsigned dflt, char *host, unsigned *port)
{
	const char *colon = memchr(s, ':', n);
	size_t hl = colon ? (size_t)(colon - s) : n;

	if (n && s[0] == '[')
		return "IP literals not allowed";
	if (memchr(s, '@', n))
		return "user information not allowed";
	if (colon) {
		if (parse_port(colon + 1, n - hl - 1, port))
			return "invalid port";
	} else if (dflt) {
		*port = dflt;
	} else {
		return "port missing";
	}
	return sbx_host_normalize(s, hl, host);
}

static int known_method(const char *m, size_t n)
{
	static const char *const ok[] = { "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", NULL };
	for (size_t i = 0; ok[i]; i++)
		if (strlen(ok[i]) == n && !memcmp(ok[i], m, n))
			return 1;
	return 0;
}

/* The request line, buf up to eol (its CR). Checked as soon as the line
 * is complete, before the rest of the head: a line that can never become
 * a request is refused at once rather than at the wall time. */
static int request_line(const char *buf, const char *eol, struct sbx_http_head *h)
{
	const char *p, *sp1, *sp2;

	if (eol == buf)
		return bad(h, 400, "empty request line");
	sp1 = memchr(buf, ' ', (size_t)(eol - buf));
	if (!sp1)
		return bad(h, 400, "HTTP/0.9 or malformed request line");
	sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1));
	if (!sp2)
		return bad(h, 400, "HTTP/0.9 or malformed request line");
	if (memchr(sp2 + 1, ' ', (size_t)(eol - sp2 - 1)) || sp2 == sp1 + 1)
		return bad(h, 400, "malformed request line");
	h->method = buf;
	h->mlen = (size_t)(sp1 - buf);
	for (size_t i = 0; i < h->mlen; i++)
		if (!sbx_http_tchar((unsigned char)buf[i]))
			return bad(h, 400, "invalid method");
	h->target = sp1 + 1;
	h->tlen = (size_t)(sp2 - sp1 - 1);
	for (size_t i = 0; i < h->tlen; i++) {
		unsigned char c = (unsigned char)h->target[i];
		if (c <= 0x20 || c >= 0x7f)
			return bad(h, 400, "invalid character in the request target");
	}
	p = sp2 + 1;
	if (eol - p == 8 && !memcmp(p, "HTTP/1.1", 8))
		h->version = 11;
	else if (eol - p == 8 && !memcmp(p, "HTTP/1.0", 8))
		h->version = 10;
	else if (eol - p == 8 && !memcmp(p, "HTTP/2.0", 8))
		return bad(h, 400, "HTTP/2 is not supported");
	else
		return bad(h, 400, "unsupported HTTP version");
	return SBX_HTTP_DONE;
}

/* origin: NULL for a proxy request, else the name a captured connection
 * went to (normal form; the port is 80). */
static int parse_request(const char *buf, size_t len, size_t max_head, const char *origin,
			 struct sbx_http_head *h)
{
	int rc;
	const char *eol, *end;
	const struct sbx_http_field *f;
	const char *why;

	memset(h, 0, sizeof *h);
	/* Refuse TLS and HTTP/2 spoken at a proxy port before waiting for a
	 * line end that may never come. */
	if (len > 0 && (buf[0] == 0x16 || buf[0] == (char)0x80))
		return bad(h, 400, "TLS sent without CONNECT");
	/* RFC 9112 lets a server skip empty lines before a request; a proxy
	 * that did so would read a different stream than a strict peer. */
	if (len > 0 && (buf[0] == '\r' || buf[0] == '\n'))
		return bad(h, 400, "empty request line");
	rc = head_bounds(buf, len, max_head, h, 400, &end, &eol);
	if (rc == SBX_HTTP_INCOMPLETE) {
		/* head_end() has seen no bare CR or LF: a CRLF ends line one. */
		eol = NULL;
		for (size_t i = 0; i + 1 < len && !eol; i++)
			if (buf[i] == '\r' && buf[i + 1] == '\n')
				eol = buf + i;
		if (eol && request_line(buf, eol, h) == SBX_HTTP_BAD)
			return SBX_HTTP_BAD;
		memset(h, 0, sizeof *h);
		return SBX_HTTP_INCOMPLETE;
	}
	if (rc != 1)
		return rc;
	if (request_line(buf, eol, h) == SBX_HTTP_BAD)
		return SBX_HTTP_BAD;
	if (parse_fields(eol + 2, end, h, 400))
		return SBX_HTTP_BAD;

	if (origin) {
		if (!known_method(h->method, h->mlen) || (h->mlen == 7 && !memcmp(h->method, "CONNECT", 7)))
			return bad(h, 405, "method not supported");
		if (h->tlen < 1 || h->target[0] != '/')
			return bad(h, 400, "origin-form /path target required");
		{
			const char *q = memchr(h->target, '#', h->tlen);
			if (q)
				return bad(h, 400, "fragment in the request target");
		}
		snprintf(h->host, sizeof h->host, "%s", origin);
		h->port = 80;
		h->path = h->target;
		h->plen = h->tlen;
	} else if (eq_ci(h->method, h->mlen, "CONNECT") && h->mlen == 7 && !memcmp(h->method, "CONNECT", 7)) {
		h->is_connect = 1;
		why = authority(h->target, h->tlen, 0, h->host, &h->port);
		if (why)
			return bad(h, why[0] == 'I' ? 403 : 400, why);
	} else {
		const char *t = h->target, *slash;
		size_t n = h->tlen;
		if (!known_method(h->method, h->mlen))
			return bad(h, 405, "method not supported");
		if (n >= 8 && !strncasecmp(t, "https://", 8))
			return bad(h, 400, "https:// needs CONNECT: send it with CONNECT (curl's default, GNU wget's) or run the sandbox with sbx-ns --net broker:PATH,transparent");
		if (n < 7 || strncasecmp(t, "http://", 7))
			return bad(h, 400, "absolute-form http:// target required");
		t += 7;
		n -= 7;
		slash = memchr(t, '/', n);
		{
			const char *q = memchr(t, '?', n);
			if (q && (!slash || q < slash))
				return bad(h, 400, "query without a path");
			if (memchr(t, '#', n))
				return bad(h, 400, "fragment in the request target");
		}
		why = authority(t, slash ? (size_t)(slash - t) : n, 80, h->host, &h->port);
		if (why)
			return bad(h, why[0] == 'I' ? 403 : 400, why);
		h->path = slash ? slash : "/";
		h->plen = slash ? n - (size_t)(slash - t) : 1;
	}

	/* Framing and hop-by-hop semantics that the broker will not carry. */
	if (sbx_http_field(h, "transfer-encoding"))
		return bad(h, 400, "Transfer-Encoding on a request");
	if (content_length(h, 400))
		return SBX_HTTP_BAD;
	if (sbx_http_field(h, "upgrade"))
		return bad(h, 400, "Upgrade not supported");
	if (sbx_http_field(h, "http2-settings"))
		return bad(h, 400, "h2c not supported");
	for (size_t i = 0; i < h->nfields; i++)
		if (eq_ci(h->f[i].name, h->f[i].nlen, "connection") &&
		    (list_has(h->f[i].value, h->f[i].vlen, "upgrade") ||
		     list_has(h->f[i].value, h->f[i].vlen, "http2-settings")))
			return bad(h, 400, "Connection: upgrade not supported");
	f = sbx_http_field(h, "expect");
	if (f) {
		if (count(h, "expect") > 1 || !eq_ci(f->value, f->vlen, "100-continue"))
			return bad(h, 400, "unsupported Expect");
		h->expect_continue = 1;
	}
	if (h->is_connect && h->has_length && h->length)
		return bad(h, 400, "CONNECT with a body");
	/* Host: exactly one, naming what the target names. */
	f = sbx_http_field(h, "host");
	if (!f) {
		if (!h->is_connect)
			return bad(h, 400, "Host missing");
	} else {
		char host[254];
		unsigned port = 0;
		if (count(h, "host") > 1)
			return bad(h, 400, "Host repeated");
		if (authority(f->value, f->vlen, h->is_connect ? h->port : 80, host, &port) ||
		    strcmp(host, h->host) || port != h->port)
			return bad(h, 400, origin ? "Host does not match the name connected to"
						  : "Host does not match the request target");
	}
	return SBX_HTTP_DONE;
}

int sbx_http_parse_request(const char *buf, size_t len, size_t max_head, struct sbx_http_head *h)
{
	return parse_request(buf, len, max_head, NULL, h);
}

int sbx_http_parse_origin(const char *buf, size_t len, size_t max_head, const char *host,
			  struct sbx_http_head *h)
{
	return parse_request(buf, len, max_head, host, h);
}

int sbx_http_parse_response(const char *buf, size_t len, size_t max_head, struct sbx_http_head *h)
{
	int rc;
	const char *eol, *end, *p;
	const struct sbx_http_field *te;

	memset(h, 0, sizeof *h);
	rc = head_bounds(buf, len, max_head, h, 502, &end, &eol);
	if (rc != 1)
		return rc;
	p = buf;
	if (eol - p < 12 || memcmp(p, "HTTP/1.", 7) || (p[7] != '0' && p[7] != '1') || p[8] != ' ')
		return bad(h, 502, "malformed status line from the origin");
	h->version = p[7] == '1' ? 11 : 10;
	for (int i = 9; i < 12; i++)
		if (p[i] < '0' || p[i] > '9')
			return bad(h, 502, "malformed status line from the origin");
	h->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	if (h->status < 100 || (eol - p > 12 && p[12] != ' '))
		return bad(h, 502, "malformed status line from the origin");
	for (p = buf + 12; p < eol; p++)
		if ((unsigned char)*p < 0x20 && *p != '\t')
			return bad(h, 502, "malformed status line from the origin");
	if (parse_fields(eol + 2, end, h, 502))
		return SBX_HTTP_BAD;
	if (content_length(h, 502))
		return SBX_HTTP_BAD;
	te = sbx_http_field(h, "transfer-encoding");
	if (te) {
		if (h->has_length)
			return bad(h, 502, "Content-Length with Transfer-Encoding from the origin");
		if (count(h, "transfer-encoding") > 1)
			return bad(h, 502, "Transfer-Encoding repeated by the origin");
		h->chunked = 1;
	}
	if (h->status == 101)
		return bad(h, 502, "protocol switch from the origin");
	return SBX_HTTP_DONE;
}

int sbx_http_no_body(const struct sbx_http_head *req, int status)
{
	return (req->mlen == 4 && !memcmp(req->method, "HEAD", 4)) ||
	       (status >= 100 && status < 200) || status == 204 || status == 304;
}

/* RFC 9112 section 7.1, strictly: CRLF only, hex sizes of at most 15
 * digits, extensions and trailer fields passed on unchecked but bounded by
 * their line ends. */
enum { CK_SIZE, CK_EXT, CK_SIZE_LF, CK_DATA, CK_DATA_CR, CK_DATA_LF, CK_TRAILER, CK_TRAILER_LINE,
       CK_TRAILER_LF, CK_LAST_LF, CK_DONE };

long sbx_chunked_scan(struct sbx_chunked *c, const char *p, size_t n)
{
	size_t i = 0;

	while (i < n && c->st != CK_DONE) {
		unsigned char b = (unsigned char)p[i];
		switch (c->st) {
		case CK_SIZE: {
			int v = b >= '0' && b <= '9' ? b - '0' : b >= 'a' && b <= 'f' ? b - 'a' + 10 :
				b >= 'A' && b <= 'F' ? b - 'A' + 10 : -1;
			if (v >= 0) {
				if (++c->digits > 15)
					return -1;
				c->size = c->size * 16 + (uint64_t)v;
			} else if (!c->digits) {
				return -1;
			} else if (b == ';' || b == ' ' || b == '\t') {
				c->st = CK_EXT;
			} else if (b == '\r') {
				c->st = CK_SIZE_LF;
			} else {
				return -1;
			}
			i++;
			break;
		}
		case CK_EXT:
			if (b == '\n' || (b < 0x20 && b != '\t' && b != '\r') || b == 0x7f)
				return -1;
			if (b == '\r')
				c->st = CK_SIZE_LF;
			i++;
			break;
		case CK_SIZE_LF:
			if (b != '\n')
				return -1;
			i++;
			c->st = c->size ? CK_DATA : CK_TRAILER;
			c->digits = 0;
			break;
		case CK_DATA: {
			size_t k = n - i;
			if (k > c->size)
				k = (size_t)c->size;
			c->size -= k;
			i += k;
			if (!c->size)
				c->st = CK_DATA_CR;
			break;
		}
		case CK_DATA_CR:
			if (b != '\r')
				return -1;
			c->st = CK_DATA_LF;
			i++;
			break;
		case CK_DATA_LF:
			if (b != '\n')
				return -1;
			c->st = CK_SIZE;
			i++;
			break;
		case CK_TRAILER:
			if (b == '\r')
				c->st = CK_LAST_LF;
			else if (b == '\n')
				return -1;
			else
				c->st = CK_TRAILER_LINE;
			i++;
			break;
		case CK_TRAILER_LINE:
			if (b == '\n')
				return -1;
			if (b == '\r')
				c->st = CK_TRAILER_LF;
			i++;
			break;
		case CK_TRAILER_LF:
		case CK_LAST_LF:
			if (b != '\n')
				return -1;
			c->st = c->st == CK_LAST_LF ? CK_DONE : CK_TRAILER;
			i++;
			break;
		}
	}
	return (long)i;
}

int sbx_chunked_done(const struct sbx_chunked *c)
{
	return c->st == CK_DONE;
}

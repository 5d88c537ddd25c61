/* A strict HTTP/1.1 message-head parser (RFC 9112) for the broker: one
 * request per connection, framed by Content-Length alone, and a response
 * whose framing is unambiguous. Anything a lenient parser and a strict one
 * could read differently is refused, because a proxy that frames a message
 * differently from the origin is how requests get smuggled. */
#ifndef SBX_HTTP1_H
#define SBX_HTTP1_H

#include <stddef.h>
#include <stdint.h>

#define SBX_HTTP_MAX_HEADERS 100

enum {
	SBX_HTTP_INCOMPLETE = 0, /* need more bytes */
	SBX_HTTP_DONE = 1,       /* a whole head was parsed */
	SBX_HTTP_BAD = -1,       /* refused: status and why are set */
};

struct sbx_http_field {
	const char *name, *value; /* point into the caller's buffer */
	size_t nlen, vlen;        /* value without surrounding whitespace */
};

struct sbx_http_head {
	size_t head_len;          /* bytes up to and including the empty line */
	int version;              /* 10 or 11 */
	/* requests */
	const char *method, *target;
	size_t mlen, tlen;
	int is_connect;
	char host[254];           /* from the target, normal form */
	unsigned port;
	const char *path;         /* origin-form part of an absolute target */
	size_t plen;
	int expect_continue;
	/* responses */
	int status;
	int chunked;              /* response: Transfer-Encoding ends in chunked */
	int has_length;
	uint64_t length;          /* Content-Length */
	size_t nfields;
	struct sbx_http_field f[SBX_HTTP_MAX_HEADERS];
	int status_out;           /* on SBX_HTTP_BAD: the status to answer */
	const char *why;          /* on SBX_HTTP_BAD: one line, no CR/LF */
};

/* Parse a request head in buf[0..len). max_head is the most head bytes
 * accepted (431 past it). A CONNECT needs authority-form "host:port"; every
 * other method needs absolute-form "http://host[:port]/path". */
int sbx_http_parse_request(const char *buf, size_t len, size_t max_head,
			   struct sbx_http_head *h);

/* The same for a request on a captured connection to host (normal form)
 * port 80: origin-form "/path" target, no CONNECT, and a Host (required)
 * naming host. */
int sbx_http_parse_origin(const char *buf, size_t len, size_t max_head, const char *host,
			  struct sbx_http_head *h);

/* Parse a response head; is_head: the request was HEAD (no body). */
int sbx_http_parse_response(const char *buf, size_t len, size_t max_head,
			    struct sbx_http_head *h);

/* 1 if the response to method with status carries no body at all. */
int sbx_http_no_body(const struct sbx_http_head *req, int status);

/* 1 if c is a tchar (RFC 9110 section 5.6.2): what a field name, a
 * method or an auth scheme is made of. */
int sbx_http_tchar(unsigned char c);

/* Find a field by name (case-insensitive); NULL if absent. */
const struct sbx_http_field *sbx_http_field(const struct sbx_http_head *h, const char *name);

/* A chunked body as it passes: where its last chunk (and trailer) ends.
 * Zeroed to start. */
struct sbx_chunked {
	int st, digits;
	uint64_t size;
};

/* Scan the next n bytes of the body: how many of them belong to it (fewer
 * than n once the body has ended), or -1 for broken framing. */
long sbx_chunked_scan(struct sbx_chunked *c, const char *p, size_t n);
/* 1 once the whole body, trailer included, has been scanned. */
int sbx_chunked_done(const struct sbx_chunked *c);

#endif

#include "unit.h"
#include "http1.h"

#include <stdio.h>
#include <stdlib.h>

static struct sbx_http_head H;

/* "DONE", "INCOMPLETE", or "STATUS why". */
static const char *outcome(int r)
{
	static char out[200];
	if (r == SBX_HTTP_DONE)
		return "DONE";
	if (r == SBX_HTTP_INCOMPLETE)
		return "INCOMPLETE";
	snprintf(out, sizeof out, "%d %s", H.status_out, H.why);
	return out;
}

static const char *req(const char *s)
{
	return outcome(sbx_http_parse_request(s, strlen(s), 32768, &H));
}

static const char *resp(const char *s)
{
	return outcome(sbx_http_parse_response(s, strlen(s), 65536, &H));
}

#define HOST "Host: origin.test\r\n"

TEST(http1_accepts_connect_and_absolute_form)
{
	CHECK_STR(req("CONNECT origin.test:443 HTTP/1.1\r\nHost: origin.test:443\r\n\r\n"), "DONE");
	CHECK(H.is_connect);
	CHECK_STR(H.host, "origin.test");
	CHECK(H.port == 443);
	CHECK_STR(req("CONNECT Origin.Test.:443 HTTP/1.1\r\n\r\n"), "DONE");
	CHECK_STR(H.host, "origin.test");
	CHECK_STR(req("GET http://origin.test/a?b=c HTTP/1.1\r\n" HOST "Accept: */*\r\n\r\n"), "DONE");
	CHECK(!H.is_connect);
	CHECK(H.port == 80);
	CHECK(H.plen == 6 && !memcmp(H.path, "/a?b=c", 6));
	CHECK(H.nfields == 2);
	CHECK_STR(req("GET http://origin.test HTTP/1.0\r\n" HOST "\r\n"), "DONE");
	CHECK(H.plen == 1 && H.path[0] == '/');
	CHECK_STR(req("POST http://origin.test:8080/ HTTP/1.1\r\nHost: ORIGIN.test:8080\r\n"
		      "Content-Length: 5\r\n\r\nhello"), "DONE");
	CHECK(H.has_length && H.length == 5 && H.port == 8080);
	CHECK_STR(req("GET http://origin.test/ HTTP/1.1\r\nHost:origin.test \r\nX:\r\n\r\n"), "DONE");
	CHECK_STR(req("PUT http://origin.test/ HTTP/1.1\r\n" HOST "Expect: 100-continue\r\nContent-Length: 1\r\n\r\n"), "DONE");
	CHECK(H.expect_continue);
}

TEST(http1_incomplete_heads)
{
	const char *full = "GET http://origin.test/ HTTP/1.1\r\n" HOST "\r\n";
	char buf[128];
	for (size_t i = 0; i < strlen(full); i++) {
		memcpy(buf, full, i);
		CHECK(sbx_http_parse_request(buf, i, 32768, &H) == SBX_HTTP_INCOMPLETE);
	}
}

TEST(http1_refuses_smuggling_shapes)
{
	CHECK_STR(req("GET http://origin.test/ HTTP/1.1\r\n" HOST " folded\r\n\r\n"), "400 obsolete line folding");
	CHECK_STR(req("GET http://origin.test/ HTTP/1.1\n" HOST "\r\n"), "400 bare LF in the head");
	CHECK_STR(req("GET http://origin.test/ HTTP/1.1\r\n" HOST "\n"), "400 bare LF in the head");
	CHECK_STR(req("GET http://origin.test/ HTTP/1.1\r\nHost: origin.test\rX: y\r\n\r\n"), "400 bare CR in the head");
	CHECK_STR(req("GET http://origin.test/ HTTP/1.1\r\n" HOST "\r\r\n"), "400 bare CR in the head");
	CHECK_STR(req("GET http://origin.test/ HTTP/1.1\r\nHost : origin.test\r\n\r\n"), "400 whitespace before a colon");
	CHECK_STR(req("GET http://origin.test/ HTTP/1.1\r\n" HOST "X(y): 1\r\n\r\n"), "400 invalid character in a header name");
	CHECK_STR(req("GET http://origin.test/ HTTP/1.1\r\n" HOST ": 1\r\n\r\n"), "400 empty header name");
	CHECK_STR(req("GET http://origin.test/ HTTP/1.1\r\n" HOST "X-No-Colon\r\n\r\n"), "400 header line without a colon");
	CHECK_STR(req("GET http://origin.test/ HTTP/1.1\r\n" HOST "X: a\x01" "b\r\n\r\n"), "400 control character in a header value");
	CHECK_STR(req("GET http://origin.test/ HTTP/1.1\r\n" HOST "X: a\x7f\r\n\r\n"), "400 control character in a header value");
	CHECK_STR(req("POST http://origin.test/ HTTP/1.1\r\n" HOST "Transfer-Encoding: chunked\r\n\r\n"), "400 Transfer-Encoding on a request");
	CHECK_STR(req("POST http://origin.test/ HTTP/1.1\r\n" HOST "Transfer-Encoding: identity\r\n\r\n"), "400 Transfer-Encoding on a request");
	CHECK_STR(req("POST http://origin.test/ HTTP/1.1\r\n" HOST "Content-Length: 1\r\nContent-Length: 1\r\n\r\n"), "400 Content-Length repeated");
	CHECK_STR(req("POST http://origin.test/ HTTP/1.1\r\n" HOST "Content-Length: 1, 1\r\n\r\n"), "400 invalid Content-Length");
	CHECK_STR(req("POST http://origin.test/ HTTP/1.1\r\n" HOST "Content-Length: -1\r\n\r\n"), "400 invalid Content-Length");
	CHECK_STR(req("POST http://origin.test/ HTTP/1.1\r\n" HOST "Content-Length: +1\r\n\r\n"), "400 invalid Content-Length");
	CHECK_STR(req("POST http://origin.test/ HTTP/1.1\r\n" HOST "Content-Length: 0x10\r\n\r\n"), "400 invalid Content-Length");
	CHECK_STR(req("POST http://origin.test/ HTTP/1.1\r\n" HOST "Content-Length:\r\n\r\n"), "400 invalid Content-Length");
	CHECK_STR(req("POST http://origin.test/ HTTP/1.1\r\n" HOST "Content-Length: 99999999999999999999\r\n\r\n"), "400 invalid Content-Length");
	CHECK_STR(req("GET http://origin.test/ HTTP/1.1\r\n\r\n"), "400 Host missing");
	CHECK_STR(req("GET http://origin.test/ HTTP/1.1\r\n" HOST HOST "\r\n"), "400 Host repeated");
	CHECK_STR(req("GET http://origin.test/ HTTP/1.1\r\nHost: other.test\r\n\r\n"), "400 Host does not match the request target");
	CHECK_STR(req("GET http://origin.test/ HTTP/1.1\r\nHost: origin.test:81\r\n\r\n"), "400 Host does not match the request target");
	CHECK_STR(req("GET http://origin.test/ HTTP/1.1\r\nHost: \r\n\r\n"), "400 Host does not match the request target");
	CHECK_STR(req("CONNECT origin.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n"), "400 Host does not match the request target");
	CHECK_STR(req("GET http://origin.test/ HTTP/1.1\r\n" HOST "Upgrade: websocket\r\n\r\n"), "400 Upgrade not supported");
	CHECK_STR(req("GET http://origin.test/ HTTP/1.1\r\n" HOST "Connection: keep-alive, Upgrade\r\n\r\n"), "400 Connection: upgrade not supported");
	CHECK_STR(req("GET http://origin.test/ HTTP/1.1\r\n" HOST "HTTP2-Settings: AAA\r\n\r\n"), "400 h2c not supported");
	CHECK_STR(req("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), "400 HTTP/2 is not supported");
	CHECK_STR(req("GET /\r\n\r\n"), "400 HTTP/0.9 or malformed request line");
	CHECK_STR(req("GET http://origin.test/ HTTP/1.2\r\n" HOST "\r\n"), "400 unsupported HTTP version");
	CHECK_STR(req("GET  http://origin.test/ HTTP/1.1\r\n" HOST "\r\n"), "400 malformed request line");
	CHECK_STR(req("GET http://origin.test/ HTTP/1.1 \r\n" HOST "\r\n"), "400 malformed request line");
	CHECK_STR(req("\r\n"), "400 empty request line");
	CHECK_STR(req("GET / HTTP/1.1\r\n" HOST "\r\n"), "400 absolute-form http:// target required");
	CHECK_STR(req("GET https://origin.test/ HTTP/1.1\r\n" HOST "\r\n"), "400 https:// needs CONNECT: send it with CONNECT (curl's default, GNU wget's) or run the sandbox with sbx-ns --net broker:PATH,transparent");
	CHECK_STR(req("GET http://u:p@origin.test/ HTTP/1.1\r\n" HOST "\r\n"), "400 user information not allowed");
	CHECK_STR(req("GET http://198.18.0.2/ HTTP/1.1\r\nHost: 198.18.0.2\r\n\r\n"), "403 IP literals not allowed");
	CHECK_STR(req("CONNECT [::1]:443 HTTP/1.1\r\n\r\n"), "403 IP literals not allowed");
	CHECK_STR(req("CONNECT origin.test HTTP/1.1\r\n\r\n"), "400 port missing");
	CHECK_STR(req("CONNECT origin.test:0 HTTP/1.1\r\n\r\n"), "400 invalid port");
	CHECK_STR(req("CONNECT origin.test:65536 HTTP/1.1\r\n\r\n"), "400 invalid port");
	CHECK_STR(req("CONNECT origin.test:0443 HTTP/1.1\r\n\r\n"), "400 invalid port");
	CHECK_STR(req("CONNECT origin.test:443 HTTP/1.1\r\nContent-Length: 3\r\n\r\n"), "400 CONNECT with a body");
	CHECK_STR(req("TRACE http://origin.test/ HTTP/1.1\r\n" HOST "\r\n"), "405 method not supported");
	CHECK_STR(req("get http://origin.test/ HTTP/1.1\r\n" HOST "\r\n"), "405 method not supported");
	CHECK_STR(req("G@T http://origin.test/ HTTP/1.1\r\n" HOST "\r\n"), "400 invalid method");
	CHECK_STR(req("GET http://origin.test/\x01 HTTP/1.1\r\n" HOST "\r\n"), "400 invalid character in the request target");
	CHECK_STR(req("GET http://origin.test/#f HTTP/1.1\r\n" HOST "\r\n"), "400 fragment in the request target");
	CHECK_STR(req("GET http://b\xc3\xbc.test/ HTTP/1.1\r\n" HOST "\r\n"), "400 invalid character in the request target");
	CHECK_STR(req("GET http://origin.test/ HTTP/1.1\r\n" HOST "Expect: bogus\r\n\r\n"), "400 unsupported Expect");
	CHECK_STR(req("\x16\x03\x01"), "400 TLS sent without CONNECT");
}

TEST(http1_limits_head_size_and_field_count)
{
	char *big = malloc(40000);
	size_t n = 0;

	n += (size_t)sprintf(big, "GET http://origin.test/ HTTP/1.1\r\n" HOST);
	while (n < 33000)
		n += (size_t)sprintf(big + n, "X-Pad: %s\r\n", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	CHECK_STR(req(big), "431 head too large");
	n = (size_t)sprintf(big, "GET http://origin.test/ HTTP/1.1\r\n" HOST);
	for (int i = 0; i < 100; i++)
		n += (size_t)sprintf(big + n, "X-%d: 1\r\n", i);
	sprintf(big + n, "\r\n");
	CHECK_STR(req(big), "431 too many header fields");
	free(big);
}

TEST(http1_response_framing)
{
	CHECK_STR(resp("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"), "DONE");
	CHECK(H.status == 200 && H.has_length && H.length == 5);
	CHECK_STR(resp("HTTP/1.0 204\r\n\r\n"), "DONE");
	CHECK_STR(resp("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), "DONE");
	CHECK(H.chunked);
	CHECK_STR(resp("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n"), "502 Content-Length repeated");
	CHECK_STR(resp("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"),
		  "502 Content-Length with Transfer-Encoding from the origin");
	CHECK_STR(resp("HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n"), "502 obsolete line folding");
	CHECK_STR(resp("HTTP/1.1 200 OK\nX: a\r\n\r\n"), "502 bare LF in the head");
	CHECK_STR(resp("HTTP/1.1 101 Switching\r\n\r\n"), "502 protocol switch from the origin");
	CHECK_STR(resp("HTTP/1.1 20 OK\r\n\r\n"), "502 malformed status line from the origin");
	CHECK_STR(resp("HTTP/2 200\r\n\r\n"), "502 malformed status line from the origin");
	CHECK_STR(resp("ICY 200 OK\r\n\r\n"), "502 malformed status line from the origin");
	CHECK_STR(resp("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"), "502 invalid Content-Length");
	CHECK_STR(resp("HTTP/1.1 200 OK\r\n"), "INCOMPLETE");
}

TEST(http1_chunked_body_ends_at_its_last_chunk)
{
	static const char body[] = "6\r\nhello\n\r\n1a;x=y\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nT: 1\r\n\r\nEXTRA";
	struct sbx_chunked c;
	size_t n = sizeof body - 1, want = n - 5;
	long k;

	memset(&c, 0, sizeof c);
	CHECK(sbx_chunked_scan(&c, body, n) == (long)want);
	CHECK(sbx_chunked_done(&c));
	/* byte by byte: the same end */
	memset(&c, 0, sizeof c);
	for (size_t i = 0; i < n; i++) {
		k = sbx_chunked_scan(&c, body + i, 1);
		if (i < want)
			CHECK(k == 1);
		else
			CHECK(k == 0);
	}
	CHECK(sbx_chunked_done(&c));
	static const char *const bad[] = { "zz\r\n", "6\nhello\n", "\r\n", "1\r\nab", "1\r\na\n", "0\r\n\n",
					   "1234567890abcdef0\r\n", "0\r\nT: 1\n", NULL };
	for (size_t i = 0; bad[i]; i++) {
		memset(&c, 0, sizeof c);
		CHECK(sbx_chunked_scan(&c, bad[i], strlen(bad[i])) == -1);
	}
	memset(&c, 0, sizeof c);
	CHECK(sbx_chunked_scan(&c, "5\r\nab", 5) == 5);
	CHECK(!sbx_chunked_done(&c));
}

TEST(http1_bad_request_line_before_the_head_ends)
{
	struct sbx_http_head h;

	CHECK(sbx_http_parse_request("GET http://a.test/\r\n", 20, 32768, &h) == SBX_HTTP_BAD);
	CHECK_STR(h.why, "HTTP/0.9 or malformed request line");
	CHECK(sbx_http_parse_request("GET http://a.test/ HTTP/1.1\r\n", 29, 32768, &h) == SBX_HTTP_INCOMPLETE);
	CHECK(sbx_http_parse_request("GET http://a.test/ HTTP/1.1", 27, 32768, &h) == SBX_HTTP_INCOMPLETE);
}

/* A captured connection's request: origin form, Host equal to the name. */
static const char *orig(const char *s)
{
	return outcome(sbx_http_parse_origin(s, strlen(s), 32768, "origin.test", &H));
}

TEST(http1_origin_form_for_a_captured_name)
{
	CHECK_STR(orig("GET /a?b HTTP/1.1\r\nHost: Origin.TEST.\r\n\r\n"), "DONE");
	CHECK_STR(H.host, "origin.test");
	CHECK(H.port == 80 && H.plen == 4 && !memcmp(H.path, "/a?b", 4) && !H.is_connect);
	CHECK_STR(orig("GET / HTTP/1.1\r\nHost: origin.test:80\r\n\r\n"), "DONE");
	CHECK_STR(orig("GET / HTTP/1.1\r\n\r\n"), "400 Host missing");
	CHECK_STR(orig("GET / HTTP/1.1\r\nHost: other.test\r\n\r\n"), "400 Host does not match the name connected to");
	CHECK_STR(orig("GET / HTTP/1.1\r\nHost: origin.test:8080\r\n\r\n"), "400 Host does not match the name connected to");
	CHECK_STR(orig("GET / HTTP/1.1\r\nHost: origin.test\r\nHost: origin.test\r\n\r\n"), "400 Host repeated");
	CHECK_STR(orig("GET http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\n\r\n"),
		  "400 origin-form /path target required");
	CHECK_STR(orig("CONNECT origin.test:443 HTTP/1.1\r\nHost: origin.test\r\n\r\n"), "405 method not supported");
	CHECK_STR(orig("GET /#x HTTP/1.1\r\nHost: origin.test\r\n\r\n"), "400 fragment in the request target");
	CHECK_STR(orig("GET / HTTP/1.1\r\nHost: origin.test\r\nTransfer-Encoding: chunked\r\n\r\n"),
		  "400 Transfer-Encoding on a request");
	CHECK_STR(orig("\x16\x03\x01"), "400 TLS sent without CONNECT");
}

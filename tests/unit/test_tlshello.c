#include "unit.h"
#include "tlshello.h"
#include "tlshello_samples.h"

#include <stdlib.h>

static int parse(const unsigned char *b, size_t n, struct sbx_tls_hello *h)
{
	return sbx_tls_hello_parse(b, n, h);
}

/* The same handshake bytes re-cut into records of rec bytes each. */
static size_t resplit(const unsigned char *in, size_t n, size_t rec, unsigned char *out)
{
	const unsigned char *hs = in + 5;
	size_t hl = n - 5, o = 0;

	for (size_t i = 0; i < hl; i += rec) {
		size_t k = hl - i < rec ? hl - i : rec;
		out[o++] = 22;
		out[o++] = 3;
		out[o++] = 1;
		out[o++] = (unsigned char)(k >> 8);
		out[o++] = (unsigned char)k;
		memcpy(out + o, hs + i, k);
		o += k;
	}
	return o;
}

TEST(tlshello_recorded_hellos_name_origin_test)
{
	struct sbx_tls_hello h;
	CHECK(parse(openssl_bin, openssl_bin_len, &h) == SBX_TLS_DONE);
	CHECK_STR(h.sni, "origin.test");
	CHECK(h.used == openssl_bin_len);
	CHECK(parse(curl_bin, curl_bin_len, &h) == SBX_TLS_DONE);
	CHECK_STR(h.sni, "origin.test");
}

TEST(tlshello_every_prefix_is_incomplete)
{
	struct sbx_tls_hello h;
	for (size_t i = 0; i < curl_bin_len; i++)
		CHECK(parse(curl_bin, i, &h) == SBX_TLS_INCOMPLETE);
}

TEST(tlshello_one_byte_records_reassemble)
{
	unsigned char *buf = malloc(curl_bin_len * 6);
	const unsigned char *samples[2] = { openssl_bin, curl_bin };
	unsigned lens[2] = { openssl_bin_len, curl_bin_len };
	struct sbx_tls_hello h;

	for (int s = 0; s < 2; s++) {
		for (size_t rec = 1; rec < 40; rec += 7) {
			size_t n = resplit(samples[s], lens[s], rec, buf);
			/* and delivered one byte at a time */
			for (size_t i = 0; i < n; i++)
				CHECK(parse(buf, i, &h) == SBX_TLS_INCOMPLETE);
			CHECK(parse(buf, n, &h) == SBX_TLS_DONE);
			CHECK_STR(h.sni, "origin.test");
		}
	}
	free(buf);
}

/* A minimal ClientHello with the given extensions block. */
static size_t build(unsigned char *out, const unsigned char *ext, size_t extlen)
{
	unsigned char body[4096];
	size_t b = 0, o = 0;

	body[b++] = 3; body[b++] = 3;
	memset(body + b, 0xaa, 32); b += 32;
	body[b++] = 0;                              /* session id */
	body[b++] = 0; body[b++] = 2; body[b++] = 0x13; body[b++] = 0x01;
	body[b++] = 1; body[b++] = 0;               /* compression */
	body[b++] = (unsigned char)(extlen >> 8); body[b++] = (unsigned char)extlen;
	memcpy(body + b, ext, extlen); b += extlen;
	out[o++] = 22; out[o++] = 3; out[o++] = 1;
	out[o++] = (unsigned char)((b + 4) >> 8); out[o++] = (unsigned char)(b + 4);
	out[o++] = 1; out[o++] = 0; out[o++] = (unsigned char)(b >> 8); out[o++] = (unsigned char)b;
	memcpy(out + o, body, b);
	return o + b;
}

static size_t sni_ext(unsigned char *p, const char *name)
{
	size_t n = strlen(name);
	p[0] = 0; p[1] = 0;
	p[2] = (unsigned char)((n + 5) >> 8); p[3] = (unsigned char)(n + 5);
	p[4] = (unsigned char)((n + 3) >> 8); p[5] = (unsigned char)(n + 3);
	p[6] = 0; p[7] = (unsigned char)(n >> 8); p[8] = (unsigned char)n;
	memcpy(p + 9, name, n);
	return 9 + n;
}

static const char *why_of(const unsigned char *ext, size_t n)
{
	static unsigned char buf[8192];
	static struct sbx_tls_hello h;
	size_t len = build(buf, ext, n);
	int r = parse(buf, len, &h);
	if (r == SBX_TLS_DONE)
		return h.sni;
	return r == SBX_TLS_BAD ? h.why : "incomplete";
}

TEST(tlshello_refuses_names_it_cannot_bind)
{
	unsigned char e[1024];
	size_t n;

	n = sni_ext(e, "Origin.Test.");
	CHECK_STR(why_of(e, n), "origin.test");
	CHECK_STR(why_of(e, 0), "no server_name in the ClientHello");
	n = sni_ext(e, "198.18.0.2");
	CHECK_STR(why_of(e, n), "server name is an IP literal");
	n = sni_ext(e, "::1");
	CHECK_STR(why_of(e, n), "server name is an IP literal");
	n = sni_ext(e, "bad_name.test");
	CHECK_STR(why_of(e, n), "server name is not a valid host name");
	n = sni_ext(e, "");
	CHECK_STR(why_of(e, n), "server name is not a valid host name");
	/* two server_name extensions */
	n = sni_ext(e, "origin.test");
	n += sni_ext(e + n, "origin.test");
	CHECK_STR(why_of(e, n), "duplicate ClientHello extension");
	/* two names in one extension */
	{
		unsigned char t[64];
		size_t k = sni_ext(t, "a.test");
		memcpy(e, t, k);
		memcpy(e + k, t + 6, k - 6); /* append a second entry */
		e[3] = (unsigned char)(k - 4 + k - 6); e[5] = (unsigned char)(k - 6 + k - 6);
		CHECK_STR(why_of(e, k + k - 6), "more than one server name");
	}
	/* a name type other than host_name */
	n = sni_ext(e, "origin.test");
	e[6] = 1;
	CHECK_STR(why_of(e, n), "server_name is not a host_name");
}

TEST(tlshello_refuses_encrypted_client_hello)
{
	unsigned char e[256];
	size_t n = sni_ext(e, "origin.test");
	e[n++] = 0xfe; e[n++] = 0x0d; e[n++] = 0; e[n++] = 1; e[n++] = 0;
	CHECK_STR(why_of(e, n), "encrypted ClientHello not supported");
	n = sni_ext(e, "origin.test");
	e[n++] = 0xff; e[n++] = 0xce; e[n++] = 0; e[n++] = 0;
	CHECK_STR(why_of(e, n), "encrypted server name (ESNI) not supported");
}

TEST(tlshello_refuses_malformed_records)
{
	struct sbx_tls_hello h;
	unsigned char b[8192];
	static const unsigned char sslv2[] = { 0x80, 0x2e, 0x01, 0x03, 0x01 };
	static const unsigned char appdata[] = { 23, 3, 3, 0, 1, 0 };
	static const unsigned char http[] = "GET / HTTP/1.1\r\n";
	static const unsigned char empty_rec[] = { 22, 3, 1, 0, 0 };
	static const unsigned char big_rec[] = { 22, 3, 1, 0x40, 0x01 };
	static const unsigned char server_hello[] = { 22, 3, 3, 0, 4, 2, 0, 0, 0 };
	static const unsigned char bad_ver[] = { 22, 2, 0, 0, 4, 1, 0, 0, 0 };

	CHECK(parse(sslv2, sizeof sslv2, &h) == SBX_TLS_BAD);
	CHECK_STR(h.why, "SSLv2-compatible ClientHello not supported");
	CHECK(parse(sslv2, 1, &h) == SBX_TLS_BAD);
	CHECK(parse(appdata, sizeof appdata, &h) == SBX_TLS_BAD);
	CHECK_STR(h.why, "not a TLS handshake record");
	CHECK(parse(http, 1, &h) == SBX_TLS_BAD);
	CHECK(parse(empty_rec, sizeof empty_rec, &h) == SBX_TLS_BAD);
	CHECK_STR(h.why, "invalid TLS record length");
	CHECK(parse(big_rec, sizeof big_rec, &h) == SBX_TLS_BAD);
	CHECK(parse(server_hello, sizeof server_hello, &h) == SBX_TLS_BAD);
	CHECK_STR(h.why, "first handshake message is not a ClientHello");
	CHECK(parse(bad_ver, sizeof bad_ver, &h) == SBX_TLS_BAD);
	/* an alert record between two fragments of the hello */
	memcpy(b, curl_bin, 5 + 10);
	b[3] = 0; b[4] = 10;
	memcpy(b + 15, appdata, sizeof appdata);
	CHECK(parse(b, 15 + sizeof appdata, &h) == SBX_TLS_BAD);
	/* a hello declaring more than 64 KiB */
	memcpy(b, curl_bin, 9);
	b[6] = 0x01; b[7] = 0x00; b[8] = 0x01;
	CHECK(parse(b, 9, &h) == SBX_TLS_BAD);
	CHECK_STR(h.why, "ClientHello too large");
	/* truncated inner lengths: a record that ends inside the hello */
	memcpy(b, openssl_bin, openssl_bin_len);
	b[6] = 0; b[7] = 0; b[8] = 10; b[3] = 0; b[4] = 14;
	CHECK(parse(b, 19, &h) == SBX_TLS_BAD);
	CHECK_STR(h.why, "malformed ClientHello");
}

TEST(tlshello_refuses_data_after_hello_in_its_record)
{
	unsigned char b[1024];
	struct sbx_tls_hello h;
	size_t n = openssl_bin_len;

	memcpy(b, openssl_bin, n);
	b[n] = 0x14; /* one more byte inside the same record */
	b[4]++;
	if (b[4] == 0)
		b[3]++;
	CHECK(parse(b, n + 1, &h) == SBX_TLS_BAD);
	CHECK_STR(h.why, "data after the ClientHello in its record");
}

TEST(tlshello_bytes_after_the_hello_record_are_not_read)
{
	unsigned char b[1024];
	struct sbx_tls_hello h;

	memcpy(b, openssl_bin, openssl_bin_len);
	memcpy(b + openssl_bin_len, "\x17\x03\x03\x00\x01\x00", 6);
	CHECK(parse(b, openssl_bin_len + 6, &h) == SBX_TLS_DONE);
	CHECK(h.used == openssl_bin_len);
}

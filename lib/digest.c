/* SHA-256 and HMAC-SHA-256 through nettle: see digest.h. The NIST and RFC 4231
 * vectors in tests/unit/test_digest.c check the wrapper and the library build. */
#include "digest.h"
#include "fd.h"

#include <errno.h>
#include <nettle/memops.h>
#include <unistd.h>

void sbx_sha256_init(struct sbx_sha256 *c)
{
	sha256_init(&c->ctx);
}

void sbx_sha256_update(struct sbx_sha256 *c, const void *data, size_t len)
{
	sha256_update(&c->ctx, len, data);
}

void sbx_sha256_final(struct sbx_sha256 *c, unsigned char out[SBX_SHA256_LEN])
{
	sha256_digest(&c->ctx, SBX_SHA256_LEN, out);
}

void sbx_digest_hex(const unsigned char *d, size_t len, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[2 * len] = '\0';
}

int sbx_sha256_fd(int fd, unsigned char out[SBX_SHA256_LEN])
{
	struct sbx_sha256 c;
	unsigned char buf[65536];
	long r;

	sbx_sha256_init(&c);
	while ((r = sbx_read_full(fd, buf, sizeof buf)) > 0)
		sbx_sha256_update(&c, buf, (size_t)r);
	if (r < 0)
		return -1;
	sbx_sha256_final(&c, out);
	return 0;
}

void sbx_hmac_sha256_init(struct sbx_hmac_sha256 *c, const void *key, size_t keylen)
{
	hmac_sha256_set_key(&c->ctx, keylen, key);
}

void sbx_hmac_sha256_update(struct sbx_hmac_sha256 *c, const void *data, size_t len)
{
	hmac_sha256_update(&c->ctx, len, data);
}

void sbx_hmac_sha256_final(struct sbx_hmac_sha256 *c, unsigned char out[SBX_SHA256_LEN])
{
	hmac_sha256_digest(&c->ctx, SBX_SHA256_LEN, out);
}

int sbx_digest_equal(const void *a, const void *b, size_t n)
{
	return memeql_sec(a, b, n) ? 1 : 0;
}

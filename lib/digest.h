/* SHA-256 and HMAC-SHA-256 for the suite, from nettle (built from Debian's
 * pinned source like the other dependencies), behind this small interface so
 * callers never include nettle themselves. */
#ifndef SBX_DIGEST_H
#define SBX_DIGEST_H

#include <stddef.h>
#include <stdint.h>
#include <nettle/hmac.h>
#include <nettle/sha2.h>

#define SBX_SHA256_LEN SHA256_DIGEST_SIZE
#define SBX_SHA256_HEX (2 * SBX_SHA256_LEN + 1)

struct sbx_sha256 {
	struct sha256_ctx ctx;
};

void sbx_sha256_init(struct sbx_sha256 *c);
void sbx_sha256_update(struct sbx_sha256 *c, const void *data, size_t len);
/* Writes the digest and resets c (as nettle does). */
void sbx_sha256_final(struct sbx_sha256 *c, unsigned char out[SBX_SHA256_LEN]);

/* Lower-case hex of a digest, NUL-terminated. */
void sbx_digest_hex(const unsigned char *d, size_t len, char *out);

/* SHA-256 of everything readable from fd (read to EOF, EINTR retried).
 * Returns 0, or -1 with errno from read(2). */
int sbx_sha256_fd(int fd, unsigned char out[SBX_SHA256_LEN]);

/* HMAC-SHA-256 (RFC 2104), nettle's hmac_sha256_*. The key may be any
 * length (longer than a block is hashed first, as the RFC says). */
struct sbx_hmac_sha256 {
	struct hmac_sha256_ctx ctx;
};

void sbx_hmac_sha256_init(struct sbx_hmac_sha256 *c, const void *key, size_t keylen);
void sbx_hmac_sha256_update(struct sbx_hmac_sha256 *c, const void *data, size_t len);
/* Writes the MAC and resets c for another message under the same key. */
void sbx_hmac_sha256_final(struct sbx_hmac_sha256 *c, unsigned char out[SBX_SHA256_LEN]);

/* Constant-time comparison of two secrets of n bytes (nettle's
 * memeql_sec): the time taken does not depend on where they differ.
 * Returns 1 when equal, 0 otherwise. */
int sbx_digest_equal(const void *a, const void *b, size_t n);

#endif

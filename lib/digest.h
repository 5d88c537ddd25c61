/* SHA-256 for the suite, from nettle (built from Debian's pinned source like
 * the other dependencies), behind this small interface so callers never
 * include nettle themselves. */
#ifndef SBX_DIGEST_H
#define SBX_DIGEST_H

#include <stddef.h>
#include <stdint.h>
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

#endif

/* SHA-256, behind a small interface so the implementation can be swapped
 * for a crypto library without touching its callers. */
#ifndef SBX_DIGEST_H
#define SBX_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#define SBX_SHA256_LEN 32
#define SBX_SHA256_HEX (2 * SBX_SHA256_LEN + 1)

struct sbx_sha256 {
	uint32_t h[8];
	uint64_t bytes;      /* total length fed so far */
	unsigned char buf[64];
	size_t fill;         /* bytes waiting in buf */
};

void sbx_sha256_init(struct sbx_sha256 *c);
void sbx_sha256_update(struct sbx_sha256 *c, const void *data, size_t len);
void sbx_sha256_final(struct sbx_sha256 *c, unsigned char out[SBX_SHA256_LEN]);

/* Lower-case hex of a digest, NUL-terminated. */
void sbx_digest_hex(const unsigned char *d, size_t len, char *out);

/* SHA-256 of everything readable from fd (read to EOF, EINTR retried).
 * Returns 0, or -1 with errno from read(2). */
int sbx_sha256_fd(int fd, unsigned char out[SBX_SHA256_LEN]);

#endif

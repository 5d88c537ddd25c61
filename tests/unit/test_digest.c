#include "unit.h"
#include "digest.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static const char *hexof(const void *msg, size_t len, size_t chunk)
{
	static char out[SBX_SHA256_HEX];
	unsigned char d[SBX_SHA256_LEN];
	struct sbx_sha256 c;
	const unsigned char *p = msg;

	sbx_sha256_init(&c);
	while (len) {
		size_t n = len < chunk ? len : chunk;
		sbx_sha256_update(&c, p, n);
		p += n;
		len -= n;
	}
	sbx_sha256_final(&c, d);
	sbx_digest_hex(d, sizeof d, out);
	return out;
}

/* FIPS 180-2 appendix B and the NIST CAVS short-message examples. */
TEST(sha256_nist_vectors)
{
	static const char m448[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	static const char m896[] = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
		"hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
	CHECK_STR(hexof("", 0, 64),
		  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	CHECK_STR(hexof("abc", 3, 64),
		  "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	CHECK_STR(hexof(m448, strlen(m448), 64),
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	CHECK_STR(hexof(m896, strlen(m896), 64),
		  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
	/* Same messages fed in odd pieces: buffering must not change the result. */
	CHECK_STR(hexof(m448, strlen(m448), 1),
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	CHECK_STR(hexof(m896, strlen(m896), 7),
		  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(sha256_one_million_a)
{
	char *m = malloc(1000000);
	CHECK(m != NULL);
	if (!m)
		return;
	memset(m, 'a', 1000000);
	CHECK_STR(hexof(m, 1000000, 4096),
		  "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	CHECK_STR(hexof(m, 1000000, 1000000),
		  "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(m);
}

TEST(sha256_block_boundaries)
{
	/* 55, 56 and 64 bytes: padding fits, spills over, or takes a whole block. */
	char m[64];
	memset(m, 'a', sizeof m);
	CHECK_STR(hexof(m, 55, 64),
		  "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
	CHECK_STR(hexof(m, 56, 64),
		  "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
	CHECK_STR(hexof(m, 64, 64),
		  "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

TEST(sha256_fd_reads_to_eof)
{
	char path[] = "/tmp/sbx-unit-sha.XXXXXX";
	unsigned char d[SBX_SHA256_LEN];
	char hex[SBX_SHA256_HEX];
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	unlink(path);
	CHECK(write(fd, "abc", 3) == 3);
	CHECK(lseek(fd, 0, SEEK_SET) == 0);
	CHECK(sbx_sha256_fd(fd, d) == 0);
	sbx_digest_hex(d, sizeof d, hex);
	CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	close(fd);
	CHECK(sbx_sha256_fd(fd, d) == -1);
}

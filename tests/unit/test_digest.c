#include "unit.h"
#include "digest.h"

#include <cpuid.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
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

static const char *hmacof(const void *key, size_t klen, const void *msg, size_t len, size_t chunk)
{
	static char out[SBX_SHA256_HEX];
	unsigned char d[SBX_SHA256_LEN];
	struct sbx_hmac_sha256 c;
	const unsigned char *p = msg;

	sbx_hmac_sha256_init(&c, key, klen);
	while (len) {
		size_t n = len < chunk ? len : chunk;
		sbx_hmac_sha256_update(&c, p, n);
		p += n;
		len -= n;
	}
	sbx_hmac_sha256_final(&c, d);
	sbx_digest_hex(d, sizeof d, out);
	return out;
}

/* RFC 4231 test cases 1-7 (case 5 compares the 128-bit truncation). */
TEST(hmac_sha256_rfc4231)
{
	unsigned char k[131], m[50];
	static const char m6[] = "Test Using Larger Than Block-Size Key - Hash Key First";
	static const char m7[] = "This is a test using a larger than block-size key and a larger "
		"than block-size data. The key needs to be hashed before being used by the HMAC "
		"algorithm.";
	int i;

	memset(k, 0x0b, 20);
	CHECK_STR(hmacof(k, 20, "Hi There", 8, 64),
		  "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
	CHECK_STR(hmacof("Jefe", 4, "what do ya want for nothing?", 28, 5),
		  "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	memset(k, 0xaa, 20);
	memset(m, 0xdd, 50);
	CHECK_STR(hmacof(k, 20, m, 50, 64),
		  "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
	for (i = 0; i < 25; i++)
		k[i] = (unsigned char)(i + 1);
	memset(m, 0xcd, 50);
	CHECK_STR(hmacof(k, 25, m, 50, 1),
		  "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
	memset(k, 0x0c, 20);
	CHECK(!strncmp(hmacof(k, 20, "Test With Truncation", 20, 64),
		       "a3b6167473100ee06e0c796c2955552b", 32));
	memset(k, 0xaa, 131);
	CHECK_STR(hmacof(k, 131, m6, strlen(m6), 64),
		  "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
	CHECK_STR(hmacof(k, 131, m7, strlen(m7), 13),
		  "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

TEST(hmac_sha256_reuse_after_final)
{
	/* final resets the message, not the key: a second MAC under the same key. */
	unsigned char d1[SBX_SHA256_LEN], d2[SBX_SHA256_LEN];
	struct sbx_hmac_sha256 c;

	sbx_hmac_sha256_init(&c, "Jefe", 4);
	sbx_hmac_sha256_update(&c, "x", 1);
	sbx_hmac_sha256_final(&c, d1);
	sbx_hmac_sha256_update(&c, "what do ya want for nothing?", 28);
	sbx_hmac_sha256_final(&c, d2);
	CHECK(!sbx_digest_equal(d1, d2, sizeof d1));
	CHECK_STR(hmacof("Jefe", 4, "what do ya want for nothing?", 28, 64),
		  "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	{
		char hex[SBX_SHA256_HEX];
		sbx_digest_hex(d2, sizeof d2, hex);
		CHECK_STR(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	}
}

TEST(digest_equal_constant_time_answers)
{
	unsigned char a[32], b[32];

	memset(a, 7, sizeof a);
	memset(b, 7, sizeof b);
	CHECK(sbx_digest_equal(a, b, sizeof a) == 1);
	b[31] ^= 1;
	CHECK(sbx_digest_equal(a, b, sizeof a) == 0);
	b[31] ^= 1;
	b[0] ^= 0x80;
	CHECK(sbx_digest_equal(a, b, sizeof a) == 0);
	CHECK(sbx_digest_equal(a, b, 0) == 1);
}

/* This binary's SHA-256 tests (every test named "sha256_": the vectors
 * above, HMAC's included) in a fresh process with nettle's fat dispatch
 * forced to override (NULL: what CPUID picks), saying what it picked.
 * Returns the exit status; out and err get what it wrote. */
static int digest_tests_with(const char *override, char *out, char *err, size_t n)
{
	int po[2], pe[2], st;
	ssize_t r;
	size_t k;
	pid_t pid;

	if (pipe(po) < 0 || pipe(pe) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(po[1], 1);
		dup2(pe[1], 2);
		setenv("NETTLE_FAT_VERBOSE", "1", 1);
		if (override)
			setenv("NETTLE_FAT_OVERRIDE", override, 1);
		else
			unsetenv("NETTLE_FAT_OVERRIDE");
		execl("/proc/self/exe", "unit-tests", "sha256_", (char *)NULL);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	for (k = 0; k + 1 < n && (r = read(po[0], out + k, n - 1 - k)) > 0; k += (size_t)r)
		;
	out[k] = '\0';
	for (k = 0; k + 1 < n && (r = read(pe[0], err + k, n - 1 - k)) > 0; k += (size_t)r)
		;
	err[k] = '\0';
	close(po[0]);
	close(pe[0]);
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return st;
}

/* nettle (built with --enable-fat) picks its SHA-256 compression function
 * once at start: SHA-NI where CPUID has it, else its x86-64 assembly; a
 * NETTLE_FAT_OVERRIDE naming the features picks instead. Every one this
 * CPU can run passes the vectors, and the one picked without an override
 * is SHA-NI exactly when the CPU has it (the build that hashes a granted
 * interpreter at memory speed is the one shipped). Its own name must not
 * hold "sha256_": the child would run it again. */
TEST(digest_dispatch_each_path_this_cpu_runs)
{
	static const char used[] = "libnettle: using sha_ni instructions.\n";
	static const char unused[] = "libnettle: not using sha_ni instructions.\n";
	unsigned a, b = 0, c, d;
	int sha_ni = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b >> 29 & 1);
	const struct {
		const char *override;
		int ni;
	} cases[] = { { NULL, sha_ni }, { "", 0 }, { "sha_ni", 1 } };
	char out[4096], err[4096];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		if (cases[i].ni && !sha_ni)
			continue; /* not a path this CPU can take */
		CHECK(digest_tests_with(cases[i].override, out, err, sizeof out) == 0);
		CHECK(strstr(out, "\nunit: 6 passed, 0 failed\n") != NULL);
		CHECK(strstr(err, cases[i].ni ? used : unused) != NULL);
		if (!strstr(err, cases[i].ni ? used : unused))
			fprintf(stderr, "  override %s: %s", cases[i].override ? cases[i].override : "(none)", err);
	}
}

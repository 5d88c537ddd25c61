/* Grants: see grant.h for the record and its text form.
 *
 * Encodings (all integers are 64-bit big-endian; every byte string is
 * preceded by its length; each digest starts with its own NUL-terminated
 * tag, so a field digest never equals another field's or the MAC input):
 *
 *   argv   = SHA-256("sbx-grant-v1 argv\0" || n || (len || bytes) * n)
 *   cwd    = SHA-256("sbx-grant-v1 cwd\0"  || len || bytes)
 *   env    = SHA-256("sbx-grant-v1 env\0"  || n || (len || bytes) * n),
 *            entries sorted by bytes (strcmp: unsigned char order),
 *            duplicates kept
 *   mac    = HMAC-SHA-256(key, "sbx-grant-v1 mac\0" || argv || cwd || env
 *                               || stdin-sha256 || timeout-ms) */
#include "parse.h"
#include "grant.h"
#include "fd.h"
#include "die.h"
#include "exitcodes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MFD_ALLOW_SEALING
#define MFD_ALLOW_SEALING 0x0002U
#endif
#ifndef F_ADD_SEALS
#define F_ADD_SEALS 1033
#define F_SEAL_SEAL 0x0001
#define F_SEAL_SHRINK 0x0002
#define F_SEAL_GROW 0x0004
#define F_SEAL_WRITE 0x0008
#endif

static const char tag_argv[] = "sbx-grant-v1 argv";
static const char tag_cwd[] = "sbx-grant-v1 cwd";
static const char tag_env[] = "sbx-grant-v1 env";
static const char tag_mac[] = "sbx-grant-v1 mac";

void sbx_grant_key_load(const char *opt, const char *path, struct sbx_grant_key *key)
{
	struct stat st;
	size_t got = 0;
	int fd;

	fd = open(sbx_opt_abspath(opt, path), O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ELOOP)
		sbx_die(SBX_EXIT_POLICY, "grant key %s is unsafe: a symlink", path);
	if (fd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open grant key %s", path);
	if (fstat(fd, &st) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to stat grant key %s", path);
	if (!S_ISREG(st.st_mode))
		sbx_die(SBX_EXIT_POLICY, "grant key %s is unsafe: not a regular file", path);
	if (st.st_uid != 0 && st.st_uid != getuid())
		sbx_die(SBX_EXIT_POLICY, "grant key %s is unsafe: owned by uid %u (not root or the caller)",
			path, (unsigned)st.st_uid);
	if (st.st_mode & 077)
		sbx_die(SBX_EXIT_POLICY, "grant key %s is unsafe: mode %04o gives group or others access",
			path, (unsigned)(st.st_mode & 07777));
	/* Read one byte past the maximum: a longer file is refused, not cut. */
	{
		unsigned char extra;
		long n = sbx_read_full(fd, key->k, sizeof key->k), more = 0;

		if (n == (long)sizeof key->k)
			more = sbx_read_full(fd, &extra, 1);
		if (n < 0 || more < 0) {
			sbx_grant_key_wipe(key);
			sbx_die_errno(SBX_EXIT_SYS, "unable to read grant key %s", path);
		}
		if (more > 0) {
			sbx_grant_key_wipe(key);
			sbx_die(SBX_EXIT_POLICY, "grant key %s is unusable: longer than %d bytes",
				path, SBX_GRANT_KEY_MAX);
		}
		got = (size_t)n;
	}
	close(fd);
	if (got < SBX_GRANT_KEY_MIN) {
		sbx_grant_key_wipe(key);
		sbx_die(SBX_EXIT_POLICY, "grant key %s is unusable: %zu bytes, at least %d needed",
			path, got, SBX_GRANT_KEY_MIN);
	}
	key->len = got;
}

void sbx_grant_key_wipe(struct sbx_grant_key *key)
{
	explicit_bzero(key, sizeof *key);
}

static void put_u64(unsigned char b[8], uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		b[i] = (unsigned char)(v & 0xff);
		v >>= 8;
	}
}

static void hash_u64(struct sbx_sha256 *c, uint64_t v)
{
	unsigned char b[8];

	put_u64(b, v);
	sbx_sha256_update(c, b, sizeof b);
}

static void hash_bytes(struct sbx_sha256 *c, const char *s)
{
	size_t n = strlen(s);

	hash_u64(c, n);
	sbx_sha256_update(c, s, n);
}

static void hash_list(const char *tag, char *const *v, size_t n, unsigned char out[SBX_SHA256_LEN])
{
	struct sbx_sha256 c;

	sbx_sha256_init(&c);
	sbx_sha256_update(&c, tag, strlen(tag) + 1);
	hash_u64(&c, n);
	for (size_t i = 0; i < n; i++)
		hash_bytes(&c, v[i]);
	sbx_sha256_final(&c, out);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void sbx_grant_fields(const struct sbx_grant_input *in, struct sbx_grant *g)
{
	struct sbx_sha256 c;
	char **sorted;
	size_t n = 0;

	while (in->argv[n])
		n++;
	hash_list(tag_argv, in->argv, n, g->argv);

	sbx_sha256_init(&c);
	sbx_sha256_update(&c, tag_cwd, sizeof tag_cwd);
	hash_bytes(&c, in->cwd);
	sbx_sha256_final(&c, g->cwd);

	for (n = 0; in->envp && in->envp[n]; n++)
		;
	sorted = sbx_need(malloc((n + 1) * sizeof *sorted));
	if (n)
		memcpy(sorted, in->envp, n * sizeof *sorted);
	qsort(sorted, n, sizeof *sorted, cmp_str);
	hash_list(tag_env, sorted, n, g->env);
	free(sorted);

	memcpy(g->stdin_sha, in->stdin_sha, sizeof g->stdin_sha);
	g->timeout_ms = in->timeout_ms;
}

static void mac_of(const struct sbx_grant *g, const struct sbx_grant_key *key,
		   unsigned char out[SBX_SHA256_LEN])
{
	struct sbx_hmac_sha256 h;
	unsigned char t[8];

	sbx_hmac_sha256_init(&h, key->k, key->len);
	sbx_hmac_sha256_update(&h, tag_mac, sizeof tag_mac);
	sbx_hmac_sha256_update(&h, g->argv, sizeof g->argv);
	sbx_hmac_sha256_update(&h, g->cwd, sizeof g->cwd);
	sbx_hmac_sha256_update(&h, g->env, sizeof g->env);
	sbx_hmac_sha256_update(&h, g->stdin_sha, sizeof g->stdin_sha);
	put_u64(t, g->timeout_ms);
	sbx_hmac_sha256_update(&h, t, sizeof t);
	sbx_hmac_sha256_final(&h, out);
	explicit_bzero(&h, sizeof h);
}

void sbx_grant_sign(struct sbx_grant *g, const struct sbx_grant_key *key)
{
	mac_of(g, key, g->mac);
}

size_t sbx_grant_format(const struct sbx_grant *g, char *out)
{
	char a[SBX_SHA256_HEX], c[SBX_SHA256_HEX], e[SBX_SHA256_HEX], s[SBX_SHA256_HEX],
	     m[SBX_SHA256_HEX];
	int n;

	sbx_digest_hex(g->argv, SBX_SHA256_LEN, a);
	sbx_digest_hex(g->cwd, SBX_SHA256_LEN, c);
	sbx_digest_hex(g->env, SBX_SHA256_LEN, e);
	sbx_digest_hex(g->stdin_sha, SBX_SHA256_LEN, s);
	sbx_digest_hex(g->mac, SBX_SHA256_LEN, m);
	n = snprintf(out, SBX_GRANT_MAX,
		     "sbx-grant-v1\nargv=%s\ncwd=%s\nenv=%s\nstdin-sha256=%s\ntimeout-ms=%llu\nmac=%s\n",
		     a, c, e, s, (unsigned long long)g->timeout_ms, m);
	return (size_t)n;
}

static int unhex(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

/* One line "name=value\n" starting at *p; returns the value and its length. */
static const char *line(const char **p, const char *end, const char *name, size_t *vlen)
{
	size_t nl = strlen(name);
	const char *eol;

	if ((size_t)(end - *p) < nl + 1 || memcmp(*p, name, nl) || (*p)[nl] != '=')
		return NULL;
	eol = memchr(*p, '\n', (size_t)(end - *p));
	if (!eol)
		return NULL;
	*vlen = (size_t)(eol - (*p + nl + 1));
	{
		const char *v = *p + nl + 1;
		*p = eol + 1;
		return v;
	}
}

static int hex32(const char *v, size_t n, unsigned char out[SBX_SHA256_LEN])
{
	if (n != 2 * SBX_SHA256_LEN)
		return -1;
	for (size_t i = 0; i < SBX_SHA256_LEN; i++) {
		int hi = unhex(v[2 * i]), lo = unhex(v[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

static int dec64(const char *v, size_t n, uint64_t *out)
{
	uint64_t x = 0;

	if (!n || n > 20 || (n > 1 && v[0] == '0'))
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned d;
		if (v[i] < '0' || v[i] > '9')
			return -1;
		d = (unsigned)(v[i] - '0');
		if (x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*out = x;
	return 0;
}

int sbx_grant_parse(const char *buf, size_t len, struct sbx_grant *g, const char **why)
{
	static const char head[] = "sbx-grant-v1\n";
	static const struct { const char *name; const char *expect; const char *bad; } f[] = {
		{ "argv", "line 2: expected 'argv='", "line 2: argv is not 64 lower-case hex digits" },
		{ "cwd", "line 3: expected 'cwd='", "line 3: cwd is not 64 lower-case hex digits" },
		{ "env", "line 4: expected 'env='", "line 4: env is not 64 lower-case hex digits" },
		{ "stdin-sha256", "line 5: expected 'stdin-sha256='",
		  "line 5: stdin-sha256 is not 64 lower-case hex digits" },
		{ "timeout-ms", "line 6: expected 'timeout-ms='",
		  "line 6: timeout-ms is not a decimal number of milliseconds" },
		{ "mac", "line 7: expected 'mac='", "line 7: mac is not 64 lower-case hex digits" },
	};
	unsigned char *dst[] = { g->argv, g->cwd, g->env, g->stdin_sha, NULL, g->mac };
	const char *p = buf, *end = buf + len, *v;
	size_t vlen;

	if (len > SBX_GRANT_MAX) {
		*why = "longer than the largest grant";
		return -1;
	}
	if (!len) {
		*why = "empty";
		return -1;
	}
	if (memchr(buf, '\0', len)) {
		*why = "contains a NUL byte";
		return -1;
	}
	if (len < sizeof head - 1 || memcmp(buf, head, sizeof head - 1)) {
		*why = "line 1: expected 'sbx-grant-v1'";
		return -1;
	}
	p += sizeof head - 1;
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
		v = line(&p, end, f[i].name, &vlen);
		if (!v) {
			*why = f[i].expect;
			return -1;
		}
		if (dst[i] ? hex32(v, vlen, dst[i]) : dec64(v, vlen, &g->timeout_ms)) {
			*why = f[i].bad;
			return -1;
		}
	}
	if (p != end) {
		*why = "line 8: trailing data after 'mac='";
		return -1;
	}
	return 0;
}

int sbx_grant_verify(const struct sbx_grant *g, const struct sbx_grant_key *key,
		     const struct sbx_grant_input *in)
{
	unsigned char mac[SBX_SHA256_LEN];
	struct sbx_grant run;
	int mask = 0;

	/* Authenticate first: the stated fields are not believed before. */
	mac_of(g, key, mac);
	if (!sbx_digest_equal(mac, g->mac, sizeof mac))
		return SBX_GRANT_FORGED;
	sbx_grant_fields(in, &run);
	if (memcmp(run.argv, g->argv, sizeof g->argv))
		mask |= SBX_GRANT_ARGV;
	if (memcmp(run.cwd, g->cwd, sizeof g->cwd))
		mask |= SBX_GRANT_CWD;
	if (memcmp(run.env, g->env, sizeof g->env))
		mask |= SBX_GRANT_ENV;
	if (memcmp(run.stdin_sha, g->stdin_sha, sizeof g->stdin_sha))
		mask |= SBX_GRANT_STDIN;
	if (run.timeout_ms != g->timeout_ms)
		mask |= SBX_GRANT_TIMEOUT;
	return mask;
}

const char *sbx_grant_field_name(int bit)
{
	switch (bit) {
	case SBX_GRANT_ARGV: return "argv";
	case SBX_GRANT_CWD: return "cwd";
	case SBX_GRANT_ENV: return "env";
	case SBX_GRANT_STDIN: return "stdin";
	case SBX_GRANT_TIMEOUT: return "timeout";
	}
	return "?";
}

void sbx_grant_describe(int mask, char *out, size_t n)
{
	size_t k = 0;

	if (n)
		out[0] = '\0';
	for (int bit = 1; bit <= SBX_GRANT_TIMEOUT; bit <<= 1) {
		int w;
		if (!(mask & bit))
			continue;
		w = snprintf(out + k, n - k, "%s%s", k ? ", " : "", sbx_grant_field_name(bit));
		if (w < 0 || (size_t)w >= n - k)
			return;
		k += (size_t)w;
	}
}

void sbx_grant_enforce(int fd, const struct sbx_grant_key *key, const struct sbx_grant_input *in)
{
	char buf[SBX_GRANT_MAX + 1], names[64];
	struct sbx_grant g;
	const char *why;
	size_t got;
	long n;
	int rc;

	/* One byte past the maximum tells an oversized grant from a full one. */
	n = sbx_read_eof(fd, buf, sizeof buf);
	if (n < 0 && errno == ETIMEDOUT)
		sbx_die_usage("--grant-fd %d: " SBX_FD_NO_EOF, fd, SBX_FD_WAIT_MS / 1000);
	if (n < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read the grant from fd %d", fd);
	got = (size_t)n;
	close(fd);
	if (sbx_grant_parse(buf, got, &g, &why) < 0)
		sbx_die(SBX_EXIT_POLICY, "grant refused: malformed (%s)", why);
	rc = sbx_grant_verify(&g, key, in);
	if (rc == SBX_GRANT_FORGED)
		sbx_die(SBX_EXIT_POLICY,
			"grant refused: the signature does not verify (forged, or made with another key)");
	if (rc) {
		sbx_grant_describe(rc, names, sizeof names);
		sbx_die(SBX_EXIT_POLICY, "grant refused: %s differ%s from the grant", names,
			(rc & (rc - 1)) ? "" : "s");
	}
}

int sbx_grant_stdin(int fd, uint64_t max, unsigned char sha[SBX_SHA256_LEN])
{
	enum { BUFSZ = 65536 };
	struct sbx_sha256 c;
	uint64_t total = 0;
	unsigned char *buf = malloc(BUFSZ);
	int mfd, e;

	if (!buf)
		return -1;
	mfd = memfd_create("sbx-stdin", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0) {
		free(buf);
		return -1;
	}
	sbx_sha256_init(&c);
	for (;;) {
		ssize_t r = read(fd, buf, BUFSZ);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto fail;
		if (r == 0)
			break;
		total += (uint64_t)r;
		if (total > max) {
			errno = EFBIG;
			goto fail;
		}
		sbx_sha256_update(&c, buf, (size_t)r);
		for (ssize_t off = 0; off < r;) {
			ssize_t w = write(mfd, buf + off, (size_t)(r - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				goto fail;
			off += w;
		}
	}
	if (fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
		goto fail;
	if (lseek(mfd, 0, SEEK_SET) != 0)
		goto fail;
	sbx_sha256_final(&c, sha);
	free(buf);
	return mfd;
fail:
	e = errno;
	free(buf);
	close(mfd);
	errno = e;
	return -1;
}

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
 *   plan groups: see grant_doc.c
 *   mac    = HMAC-SHA-256(key, "sbx-grant-v2 mac\0" || every line of the
 *            text form before "mac=", as sbx_grant_format writes them)
 *
 * The argv, cwd and env encodings keep their v1 tags: what they hash did
 * not change. The MAC covers the text, which the strict parser maps one
 * to one onto the fields, so every field (kind, expiry, nonce included)
 * is authenticated. */
#include "parse.h"
#include "grant.h"
#include "fd.h"
#include "private.h"
#include "die.h"
#include "exitcodes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/random.h>
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
static const char tag_mac[] = "sbx-grant-v2 mac";

/* The names of the fields, bit by bit (SBX_GRANT_ARGV ...), as the text
 * form spells them (stdin and timeout excepted) and as refusals say. */
static const char *const names[] = {
	"argv", "cwd", "env", "stdin", "timeout", "identity", "mounts", "deny-write", "net",
	"filters", "landlock", "policy", "program",
};

void sbx_grant_key_load(const char *opt, const char *path, struct sbx_grant_key *key)
{
	struct sbx_private_why w;
	size_t got = 0;
	int fd;

	fd = sbx_open_private(sbx_opt_abspath(opt, path), &w);
	if (fd < 0 && w.why[0])
		sbx_die(SBX_EXIT_POLICY, "grant key %s is unsafe: %s", path, w.why);
	if (fd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open grant key %s", path);
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
	if (in->have_plan)
		memcpy(g->plan, in->plan, sizeof g->plan);
}

__attribute__((format(printf, 4, 5)))
static void put(char *out, size_t cap, size_t *n, const char *fmt, ...)
{
	va_list ap;
	int w;

	va_start(ap, fmt);
	w = vsnprintf(out + *n, cap - *n, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= cap - *n)
		sbx_need(NULL);
	*n += (size_t)w;
}

/* The text form up to (not including) the "mac=" line; returns its length. */
static size_t body(const struct sbx_grant *g, char *out, size_t cap)
{
	char h[SBX_SHA256_HEX];
	size_t n = 0;

#define PUT(...) put(out, cap, &n, __VA_ARGS__)
#define HEX(name, d) do { sbx_digest_hex(d, SBX_SHA256_LEN, h); PUT("%s=%s\n", name, h); } while (0)
	PUT("sbx-grant-v2\nkind=%s\n", g->kind == SBX_GRANT_KIND_PLAN ? "plan" : "argv");
	if (g->expires)
		PUT("expires=%llu\n", (unsigned long long)g->expires);
	else
		PUT("expires=never\n");
	if (g->have_nonce) {
		char nh[2 * SBX_GRANT_NONCE + 1];
		sbx_digest_hex(g->nonce, SBX_GRANT_NONCE, nh);
		PUT("nonce=%s\n", nh);
	} else {
		PUT("nonce=none\n");
	}
	HEX("argv", g->argv);
	HEX("cwd", g->cwd);
	HEX("env", g->env);
	HEX("stdin-sha256", g->stdin_sha);
	PUT("timeout-ms=%llu\n", (unsigned long long)g->timeout_ms);
	if (g->kind == SBX_GRANT_KIND_PLAN)
		for (int i = 0; i < SBX_GRANT_NGROUPS; i++)
			HEX(names[5 + i], g->plan[i]);
#undef HEX
#undef PUT
	return n;
}

static void mac_of(const struct sbx_grant *g, const struct sbx_grant_key *key,
		   unsigned char out[SBX_SHA256_LEN])
{
	struct sbx_hmac_sha256 h;
	char text[SBX_GRANT_MAX];
	size_t n = body(g, text, sizeof text);

	sbx_hmac_sha256_init(&h, key->k, key->len);
	sbx_hmac_sha256_update(&h, tag_mac, sizeof tag_mac);
	sbx_hmac_sha256_update(&h, text, n);
	sbx_hmac_sha256_final(&h, out);
	explicit_bzero(&h, sizeof h);
}

void sbx_grant_sign(struct sbx_grant *g, const struct sbx_grant_key *key)
{
	mac_of(g, key, g->mac);
}

size_t sbx_grant_format(const struct sbx_grant *g, char *out)
{
	char m[SBX_SHA256_HEX];
	size_t n = body(g, out, SBX_GRANT_MAX);
	int w;

	sbx_digest_hex(g->mac, SBX_SHA256_LEN, m);
	w = snprintf(out + n, SBX_GRANT_MAX - n, "mac=%s\n", m);
	if (w < 0 || (size_t)w >= SBX_GRANT_MAX - n)
		sbx_need(NULL);
	return n + (size_t)w;
}

int sbx_grant_new_nonce(struct sbx_grant *g)
{
	size_t got = 0;

	while (got < sizeof g->nonce) {
		ssize_t r = getrandom(g->nonce + got, sizeof g->nonce - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		got += (size_t)r;
	}
	g->have_nonce = 1;
	return 0;
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

static int hexn(const char *v, size_t n, unsigned char *out, size_t len)
{
	if (n != 2 * len)
		return -1;
	for (size_t i = 0; i < len; i++) {
		int hi = unhex(v[2 * i]), lo = unhex(v[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

/* The reasons, static: "line N: expected 'NAME='" and "line N: NAME is not ...". */
static const char *reason(int lineno, const char *name, int expect, const char *what)
{
	static char buf[128];

	if (expect)
		snprintf(buf, sizeof buf, "line %d: expected '%s='", lineno, name);
	else
		snprintf(buf, sizeof buf, "line %d: %s is not %s", lineno, name, what);
	return buf;
}

int sbx_grant_parse(const char *buf, size_t len, struct sbx_grant *g, const char **why)
{
	static const char head[] = "sbx-grant-v2\n", old[] = "sbx-grant-v1\n";
	static const char hexd[] = "64 lower-case hex digits";
	const char *p = buf, *end = buf + len, *v;
	unsigned char *hexes[] = { g->argv, g->cwd, g->env, g->stdin_sha };
	static const char *const hexnames[] = { "argv", "cwd", "env", "stdin-sha256" };
	size_t vlen;
	int ln = 2;

	memset(g, 0, sizeof *g);
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
	if (len >= sizeof old - 1 && !memcmp(buf, old, sizeof old - 1)) {
		*why = "v1";
		return -2;
	}
	if (len < sizeof head - 1 || memcmp(buf, head, sizeof head - 1)) {
		*why = "line 1: expected 'sbx-grant-v2'";
		return -1;
	}
	p += sizeof head - 1;
	if (!(v = line(&p, end, "kind", &vlen)))
		return *why = reason(ln, "kind", 1, NULL), -1;
	if (vlen == 4 && !memcmp(v, "plan", 4))
		g->kind = SBX_GRANT_KIND_PLAN;
	else if (vlen == 4 && !memcmp(v, "argv", 4))
		g->kind = SBX_GRANT_KIND_ARGV;
	else
		return *why = reason(ln, "kind", 0, "'plan' or 'argv'"), -1;
	ln++;
	if (!(v = line(&p, end, "expires", &vlen)))
		return *why = reason(ln, "expires", 1, NULL), -1;
	if (!(vlen == 5 && !memcmp(v, "never", 5)) && (dec64(v, vlen, &g->expires) || !g->expires))
		return *why = reason(ln, "expires", 0, "'never' or a time in seconds since 1970"), -1;
	ln++;
	if (!(v = line(&p, end, "nonce", &vlen)))
		return *why = reason(ln, "nonce", 1, NULL), -1;
	if (!(vlen == 4 && !memcmp(v, "none", 4))) {
		if (hexn(v, vlen, g->nonce, sizeof g->nonce))
			return *why = reason(ln, "nonce", 0, "'none' or 64 lower-case hex digits"), -1;
		g->have_nonce = 1;
	}
	ln++;
	for (size_t i = 0; i < 4; i++, ln++) {
		if (!(v = line(&p, end, hexnames[i], &vlen)))
			return *why = reason(ln, hexnames[i], 1, NULL), -1;
		if (hex32(v, vlen, hexes[i]))
			return *why = reason(ln, hexnames[i], 0, hexd), -1;
	}
	if (!(v = line(&p, end, "timeout-ms", &vlen)))
		return *why = reason(ln, "timeout-ms", 1, NULL), -1;
	if (dec64(v, vlen, &g->timeout_ms))
		return *why = reason(ln, "timeout-ms", 0, "a decimal number of milliseconds"), -1;
	ln++;
	if (g->kind == SBX_GRANT_KIND_PLAN)
		for (int i = 0; i < SBX_GRANT_NGROUPS; i++, ln++) {
			if (!(v = line(&p, end, names[5 + i], &vlen)))
				return *why = reason(ln, names[5 + i], 1, NULL), -1;
			if (hex32(v, vlen, g->plan[i]))
				return *why = reason(ln, names[5 + i], 0, hexd), -1;
		}
	if (!(v = line(&p, end, "mac", &vlen)))
		return *why = reason(ln, "mac", 1, NULL), -1;
	if (hex32(v, vlen, g->mac))
		return *why = reason(ln, "mac", 0, hexd), -1;
	ln++;
	if (p != end) {
		static char buf2[64];
		snprintf(buf2, sizeof buf2, "line %d: trailing data after 'mac='", ln);
		*why = buf2;
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

	memset(&run, 0, sizeof run);

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
	if (g->kind == SBX_GRANT_KIND_PLAN)
		for (int i = 0; i < SBX_GRANT_NGROUPS; i++)
			if (!in->have_plan || memcmp(run.plan[i], g->plan[i], SBX_SHA256_LEN))
				mask |= SBX_GRANT_IDENTITY << i;
	return mask;
}

const char *sbx_grant_field_name(int bit)
{
	for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
		if (bit == 1 << i)
			return names[i];
	return "?";
}

void sbx_grant_describe(int mask, char *out, size_t n)
{
	size_t k = 0;

	if (n)
		out[0] = '\0';
	for (int bit = 1; bit <= SBX_GRANT_LAST; bit <<= 1) {
		int w;
		if (!(mask & bit))
			continue;
		w = snprintf(out + k, n - k, "%s%s", k ? ", " : "", sbx_grant_field_name(bit));
		if (w < 0 || (size_t)w >= n - k)
			return;
		k += (size_t)w;
	}
}

static const char reissue[] =
	"reissue it: sbx-ns OPTIONS --dry-run -- PROG ARGS >PLAN; sbx-check grant --key FILE --plan PLAN";

void sbx_grant_utc(uint64_t t, char *out, size_t n)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) || !strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, n, "%llu", (unsigned long long)t);
}

__attribute__((format(printf, 3, 4)))
static int refused(struct sbx_grant_refusal *no, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(no->msg, sizeof no->msg, fmt, ap);
	va_end(ap);
	no->code = code;
	return 0;
}

/* A single-use grant that expires is refused once the records of grants
 * expiring when it does may have been removed (grantnonce.c): 1 fine, 0
 * refused (no). */
static int not_pruned(const struct sbx_grant *g, const struct sbx_grant_use *use, struct sbx_grant_refusal *no)
{
	char when[40], upto[40];
	uint64_t mark;

	if (!g->expires)
		return 1;
	if (sbx_grant_nonce_pruned(use->nonce_dirfd, &mark) < 0)
		return refused(no, SBX_EXIT_SYS, "unable to read %s/expiring/pruned (up to which expiry its "
			       "nonces were removed): %s", use->nonce_dir, errno == EINVAL ?
			       "not one line 'pruned SECONDS'; " SBX_GRANT_MARK_FIX : strerror(errno));
	if (g->expires > mark)
		return 1;
	sbx_grant_utc(g->expires, when, sizeof when);
	sbx_grant_utc(mark, upto, sizeof upto);
	return refused(no, SBX_EXIT_POLICY, "grant refused: single-use and expiring at %s, and %s holds no "
		       "nonces of grants expiring up to %s any more (is the clock set back?); make a new one: "
		       "sbx-check grant --single-use ...", when, use->nonce_dir, upto);
}

/* A single-use grant's nonce: recorded under the directory (grantnonce.c),
 * so of any number of runs racing exactly one runs; a dry run only looks.
 * A run that recorded one then removes a few records of grants that have
 * expired. 1: fine; 0: refused (no). */
static int use_nonce(const struct sbx_grant *g, const struct sbx_grant_use *use, uint64_t now,
		     struct sbx_grant_refusal *no)
{
	char name[2 * SBX_GRANT_NONCE + 1];
	struct sbx_grant_prune pr;
	struct stat st;
	int rc;

	if (!g->have_nonce)
		return 1;
	if (!use || use->nonce_dirfd < 0)
		return refused(no, SBX_EXIT_POLICY, "grant refused: single-use (it carries a nonce) and no "
			       "--grant-nonce-dir names where to record it");
	sbx_digest_hex(g->nonce, SBX_GRANT_NONCE, name);
	if (!not_pruned(g, use, no))
		return 0;
	if (!use->record) {
		if (fstatat(use->nonce_dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			goto used;
		if (errno != ENOENT)
			return refused(no, SBX_EXIT_SYS, "unable to look for the grant's nonce %s/%s: %s",
				       use->nonce_dir, name, strerror(errno));
		return 1;
	}
	rc = sbx_grant_nonce_put(use->nonce_dirfd, g->nonce, g->expires, now);
	if (rc > 0)
		goto used;
	if (rc < 0)
		return refused(no, SBX_EXIT_SYS, "unable to record the grant's nonce in %s: %s", use->nonce_dir,
			       strerror(errno));
	/* Recorded: unless a prune had just removed its earlier record, and
	 * then raised the mark before it did. */
	if (!not_pruned(g, use, no))
		return 0;
	sbx_grant_nonce_prune(use->nonce_dirfd, now, SBX_GRANT_PRUNE_RUN, 0, &pr);
	return 1;
used:
	return refused(no, SBX_EXIT_POLICY, "grant refused: already used (single-use: its nonce is recorded in "
		       "%s/%s); make a new one: sbx-check grant --single-use ...", use->nonce_dir, name);
}

size_t sbx_grant_read(int fd, char buf[SBX_GRANT_MAX + 1])
{
	/* One byte past the maximum tells an oversized grant from a full one. */
	long n = sbx_read_eof(fd, buf, SBX_GRANT_MAX + 1);

	if (n < 0 && errno == ETIMEDOUT)
		sbx_die_usage("--grant-fd %d: " SBX_FD_NO_EOF, fd, SBX_FD_WAIT_MS / 1000);
	if (n < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read the grant from fd %d", fd);
	close(fd);
	return (size_t)n;
}

int sbx_grant_check(const char *text, size_t len, const struct sbx_grant_key *key,
		    const struct sbx_grant_input *in, const struct sbx_grant_use *use, uint64_t now,
		    struct sbx_grant_refusal *no)
{
	char names_[160], when[40];
	struct sbx_grant g;
	const char *why;
	int rc;

	rc = sbx_grant_parse(text, len, &g, &why);
	if (rc == -2)
		return refused(no, SBX_EXIT_POLICY, "grant refused: an sbx-grant-v1 grant binds only the command, "
			       "not the sandbox; %s (or --kind argv for a grant of the command only)", reissue);
	if (rc < 0)
		return refused(no, SBX_EXIT_POLICY, "grant refused: malformed (%s)", why);
	rc = sbx_grant_verify(&g, key, in);
	if (rc == SBX_GRANT_FORGED)
		return refused(no, SBX_EXIT_POLICY,
			       "grant refused: the signature does not verify (forged, or made with another key)");
	if (g.expires && now >= g.expires) {
		sbx_grant_utc(g.expires, when, sizeof when);
		return refused(no, SBX_EXIT_POLICY, "grant refused: expired at %s (%llu s ago); %s --expires SEC",
			       when, (unsigned long long)(now - g.expires), reissue);
	}
	if (g.expires && g.expires - now > SBX_GRANT_MAX_EXPIRY) {
		sbx_grant_utc(g.expires, when, sizeof when);
		return refused(no, SBX_EXIT_POLICY, "grant refused: it expires at %s, more than %llu days ahead "
			       "(made on a clock set wrong?); %s --expires SEC", when,
			       SBX_GRANT_MAX_EXPIRY / 86400, reissue);
	}
	if (rc) {
		sbx_grant_describe(rc, names_, sizeof names_);
		return refused(no, SBX_EXIT_POLICY, "grant refused: %s differ%s from the grant", names_,
			       (rc & (rc - 1)) ? "" : "s");
	}
	if (!use_nonce(&g, use, now, no))
		return 0;
	return (int)g.kind;
}

enum sbx_grant_kind sbx_grant_enforce(int fd, const struct sbx_grant_key *key,
				      const struct sbx_grant_input *in,
				      const struct sbx_grant_use *use, uint64_t now)
{
	char buf[SBX_GRANT_MAX + 1];
	struct sbx_grant_refusal no;
	size_t got = sbx_grant_read(fd, buf);
	int kind = sbx_grant_check(buf, got, key, in, use, now, &no);

	if (!kind)
		sbx_die(no.code, "%s", no.msg);
	return (enum sbx_grant_kind)kind;
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

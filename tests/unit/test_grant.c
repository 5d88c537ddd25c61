#include "unit.h"
#include "die.h"
#include "grant.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char *g_argv[] = { "echo", "a b", "", NULL };
static char *g_env[] = { "PATH=/bin", "A=1", NULL };

static void fixed_key(struct sbx_grant_key *k)
{
	for (int i = 0; i < 32; i++)
		k->k[i] = (unsigned char)i;
	k->len = 32;
}

static void fixed_input(struct sbx_grant_input *in)
{
	struct sbx_sha256 c;

	memset(in, 0, sizeof *in);
	in->argv = g_argv;
	in->cwd = "/ws";
	in->envp = g_env;
	in->timeout_ms = 30000;
	sbx_sha256_init(&c);
	sbx_sha256_update(&c, "hello", 5);
	sbx_sha256_final(&c, in->stdin_sha);
}

/* The encoding is a contract with grants already issued: pinned by values
 * computed independently (Python's hashlib/hmac over the encoding that
 * grant.c documents). */
TEST(grant_known_answer)
{
	static const char want[] =
		"sbx-grant-v1\n"
		"argv=957a3caac1a2bb0a5eac38afdc94ec2b84a512d094e43d9a0d5072356f7a5d9b\n"
		"cwd=ec9f2111d2b6f99fb12f730b924602a3ef1992633de7f030e3485b29a1a570fb\n"
		"env=2723e3ca87ef2829dcdad6121959bb859e506bf9b5d35b84f67fa042fdde5a93\n"
		"stdin-sha256=2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824\n"
		"timeout-ms=30000\n"
		"mac=3849ffb495a38d43348e4f1b662143a91df67bedb96f16ddb6c84e50cac5d58c\n";
	struct sbx_grant_key k;
	struct sbx_grant_input in;
	struct sbx_grant g, back;
	char out[SBX_GRANT_MAX];
	const char *why = NULL;
	size_t n;

	fixed_key(&k);
	fixed_input(&in);
	sbx_grant_fields(&in, &g);
	sbx_grant_sign(&g, &k);
	n = sbx_grant_format(&g, out);
	CHECK(n == strlen(want));
	CHECK_STR(out, want);
	CHECK(sbx_grant_parse(out, n, &back, &why) == 0);
	CHECK(!memcmp(&back.argv, &g.argv, sizeof g.argv) && !memcmp(back.mac, g.mac, sizeof g.mac));
	CHECK(back.timeout_ms == 30000);
	CHECK(sbx_grant_verify(&back, &k, &in) == 0);
}

TEST(grant_environment_order_does_not_matter)
{
	static char *swapped[] = { "A=1", "PATH=/bin", NULL };
	struct sbx_grant a, b;
	struct sbx_grant_input in;

	fixed_input(&in);
	sbx_grant_fields(&in, &a);
	in.envp = swapped;
	sbx_grant_fields(&in, &b);
	CHECK(!memcmp(a.env, b.env, sizeof a.env));
}

/* Each field changed by one byte is named; several at once are listed. */
TEST(grant_names_the_field_that_differs)
{
	static char *argv2[] = { "echo", "a c", "", NULL };
	static char *argv3[] = { "echo", "a b", NULL };       /* one fewer */
	static char *argv4[] = { "echo", "a", "b", "", NULL }; /* same bytes, split */
	static char *env2[] = { "PATH=/bin", "A=2", NULL };
	static char *env3[] = { "PATH=/bin", "A=1", "B=", NULL };
	struct sbx_grant_key k;
	struct sbx_grant_input in;
	struct sbx_grant g;
	char names[64];

	fixed_key(&k);
	fixed_input(&in);
	sbx_grant_fields(&in, &g);
	sbx_grant_sign(&g, &k);

	in.argv = argv2;
	CHECK(sbx_grant_verify(&g, &k, &in) == SBX_GRANT_ARGV);
	in.argv = argv3;
	CHECK(sbx_grant_verify(&g, &k, &in) == SBX_GRANT_ARGV);
	in.argv = argv4;
	CHECK(sbx_grant_verify(&g, &k, &in) == SBX_GRANT_ARGV);
	fixed_input(&in);
	in.cwd = "/wS";
	CHECK(sbx_grant_verify(&g, &k, &in) == SBX_GRANT_CWD);
	in.cwd = "/ws/";
	CHECK(sbx_grant_verify(&g, &k, &in) == SBX_GRANT_CWD);
	fixed_input(&in);
	in.envp = env2;
	CHECK(sbx_grant_verify(&g, &k, &in) == SBX_GRANT_ENV);
	in.envp = env3;
	CHECK(sbx_grant_verify(&g, &k, &in) == SBX_GRANT_ENV);
	in.envp = NULL;
	CHECK(sbx_grant_verify(&g, &k, &in) == SBX_GRANT_ENV);
	fixed_input(&in);
	in.stdin_sha[31] ^= 1;
	CHECK(sbx_grant_verify(&g, &k, &in) == SBX_GRANT_STDIN);
	fixed_input(&in);
	in.timeout_ms = 30001;
	CHECK(sbx_grant_verify(&g, &k, &in) == SBX_GRANT_TIMEOUT);
	in.timeout_ms = 0;
	CHECK(sbx_grant_verify(&g, &k, &in) == SBX_GRANT_TIMEOUT);
	in.argv = argv2;
	in.envp = env2;
	CHECK(sbx_grant_verify(&g, &k, &in) == (SBX_GRANT_ARGV | SBX_GRANT_ENV | SBX_GRANT_TIMEOUT));
	sbx_grant_describe(SBX_GRANT_ARGV | SBX_GRANT_ENV | SBX_GRANT_TIMEOUT, names, sizeof names);
	CHECK_STR(names, "argv, env, timeout");
	sbx_grant_describe(31, names, sizeof names);
	CHECK_STR(names, "argv, cwd, env, stdin, timeout");
	sbx_grant_describe(31, names, 10);
	CHECK_STR(names, "argv, cwd");
}

/* A grant altered anywhere, or made with another key, is refused as a
 * forgery, whatever the run looks like. */
TEST(grant_forgery_is_refused_as_such)
{
	struct sbx_grant_key k, other;
	struct sbx_grant_input in;
	struct sbx_grant g, f;

	fixed_key(&k);
	fixed_input(&in);
	sbx_grant_fields(&in, &g);
	sbx_grant_sign(&g, &k);

	f = g;
	f.mac[0] ^= 1;
	CHECK(sbx_grant_verify(&f, &k, &in) == SBX_GRANT_FORGED);
	f = g;
	f.argv[5] ^= 0x40;
	CHECK(sbx_grant_verify(&f, &k, &in) == SBX_GRANT_FORGED);
	f = g;
	f.timeout_ms++;
	CHECK(sbx_grant_verify(&f, &k, &in) == SBX_GRANT_FORGED);
	/* Fields swapped between positions: the MAC input is positional. */
	f = g;
	memcpy(f.cwd, g.env, sizeof f.cwd);
	memcpy(f.env, g.cwd, sizeof f.env);
	CHECK(sbx_grant_verify(&f, &k, &in) == SBX_GRANT_FORGED);
	other = k;
	other.k[31] ^= 1;
	CHECK(sbx_grant_verify(&g, &other, &in) == SBX_GRANT_FORGED);
	/* A longer key (HMAC pads keys with zero bytes, so the extra byte is
	 * not zero: a key file that differs only by trailing NULs is the same
	 * key to HMAC, which costs nothing, as the bytes are still secret). */
	other = k;
	other.len = 33;
	other.k[32] = 1;
	CHECK(sbx_grant_verify(&g, &other, &in) == SBX_GRANT_FORGED);
}

/* Domain tags: argv ["A=1", "PATH=/bin"] and the same strings as the
 * environment never share a digest; nor do an argv of one string and a cwd. */
TEST(grant_fields_are_domain_separated)
{
	static char *as_argv[] = { "A=1", "PATH=/bin", NULL };
	static char *one[] = { "/ws", NULL };
	struct sbx_grant_input in;
	struct sbx_grant g;

	fixed_input(&in);
	in.argv = as_argv;
	sbx_grant_fields(&in, &g);
	CHECK(memcmp(g.argv, g.env, sizeof g.argv));
	in.argv = one;
	sbx_grant_fields(&in, &g);
	CHECK(memcmp(g.argv, g.cwd, sizeof g.argv));
}

static const char *parse_why(const char *text)
{
	struct sbx_grant g;
	const char *why = NULL;

	if (sbx_grant_parse(text, strlen(text), &g, &why) == 0)
		return "accepted";
	return why;
}

#define H64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define GOOD "sbx-grant-v1\nargv=" H64 "\ncwd=" H64 "\nenv=" H64 "\nstdin-sha256=" H64 \
	"\ntimeout-ms=0\nmac=" H64 "\n"

TEST(grant_parse_is_strict)
{
	struct sbx_grant g;
	const char *why;
	char big[SBX_GRANT_MAX + 2];

	CHECK_STR(parse_why(GOOD), "accepted");
	CHECK_STR(parse_why(""), "empty");
	CHECK_STR(parse_why("sbx-grant-v2\n"), "line 1: expected 'sbx-grant-v1'");
	CHECK_STR(parse_why("sbx-grant-v1"), "line 1: expected 'sbx-grant-v1'");
	CHECK_STR(parse_why("sbx-grant-v1\r\nargv="), "line 1: expected 'sbx-grant-v1'");
	CHECK_STR(parse_why("sbx-grant-v1\ncwd=" H64 "\n"), "line 2: expected 'argv='");
	CHECK_STR(parse_why("sbx-grant-v1\nargv=" H64), "line 2: expected 'argv='");
	CHECK_STR(parse_why("sbx-grant-v1\nargv=" H64 "0\n"),
		  "line 2: argv is not 64 lower-case hex digits");
	CHECK_STR(parse_why("sbx-grant-v1\nargv=0123456789ABCDEF0123456789abcdef0123456789abcdef"
			    "0123456789abcdef\n"), "line 2: argv is not 64 lower-case hex digits");
	CHECK_STR(parse_why("sbx-grant-v1\nargv=" H64 "\r\n"),
		  "line 2: argv is not 64 lower-case hex digits");
	CHECK_STR(parse_why("sbx-grant-v1\nargv =" H64 "\n"), "line 2: expected 'argv='");
	CHECK_STR(parse_why("sbx-grant-v1\nargv=" H64 "\ncwd=" H64 "\nenv=" H64 "\nstdin-sha256="
			    H64 "\ntimeout-ms=007\nmac=" H64 "\n"),
		  "line 6: timeout-ms is not a decimal number of milliseconds");
	CHECK_STR(parse_why("sbx-grant-v1\nargv=" H64 "\ncwd=" H64 "\nenv=" H64 "\nstdin-sha256="
			    H64 "\ntimeout-ms=18446744073709551616\nmac=" H64 "\n"),
		  "line 6: timeout-ms is not a decimal number of milliseconds");
	CHECK_STR(parse_why("sbx-grant-v1\nargv=" H64 "\ncwd=" H64 "\nenv=" H64 "\nstdin-sha256="
			    H64 "\ntimeout-ms=-1\nmac=" H64 "\n"),
		  "line 6: timeout-ms is not a decimal number of milliseconds");
	CHECK_STR(parse_why("sbx-grant-v1\nargv=" H64 "\ncwd=" H64 "\nenv=" H64 "\nstdin-sha256="
			    H64 "\ntimeout-ms=\nmac=" H64 "\n"),
		  "line 6: timeout-ms is not a decimal number of milliseconds");
	CHECK_STR(parse_why("sbx-grant-v1\nargv=" H64 "\ncwd=" H64 "\nenv=" H64 "\nstdin-sha256="
			    H64 "\ntimeout-ms=18446744073709551615\nmac=" H64 "\n"), "accepted");
	CHECK_STR(parse_why(GOOD "\n"), "line 8: trailing data after 'mac='");
	CHECK_STR(parse_why(GOOD "mac=" H64 "\n"), "line 8: trailing data after 'mac='");
	CHECK_STR(parse_why("sbx-grant-v1\nargv=" H64 "\nenv=" H64 "\n"), "line 3: expected 'cwd='");
	/* A NUL anywhere, and anything longer than the bound. */
	CHECK(sbx_grant_parse(GOOD, sizeof GOOD, &g, &why) == -1);
	CHECK_STR(why, "contains a NUL byte");
	memset(big, 'a', sizeof big);
	CHECK(sbx_grant_parse(big, SBX_GRANT_MAX + 1, &g, &why) == -1);
	CHECK_STR(why, "longer than the largest grant");
}

/* Every prefix of a valid grant is refused: truncation never passes. */
TEST(grant_parse_refuses_every_truncation)
{
	struct sbx_grant g;
	const char *why;
	size_t n = strlen(GOOD);

	for (size_t i = 0; i < n; i++)
		CHECK(sbx_grant_parse(GOOD, i, &g, &why) == -1);
	CHECK(sbx_grant_parse(GOOD, n, &g, &why) == 0);
}

struct keycase {
	const char *path;
	mode_t mode;
	size_t len;
};

static void load_key(void *arg)
{
	struct keycase *kc = arg;
	struct sbx_grant_key k;

	sbx_setprog("sbx-t");
	sbx_grant_key_load("--grant-key", kc->path, &k);
	_exit(k.len == kc->len ? 0 : 1);
}

static void write_key(const char *path, size_t len, mode_t mode)
{
	unsigned char b[5000];
	int fd;

	unlink(path);
	memset(b, 0x5a, sizeof b);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd >= 0) {
		if (write(fd, b, len) != (ssize_t)len)
			abort();
		fchmod(fd, mode);
		close(fd);
	}
}

TEST(grant_key_file_rules)
{
	char dir[] = "/tmp/sbx-unit-key.XXXXXX", p[128], l[160], msg[512], err[512];
	struct keycase kc = { p, 0600, 32 };

	CHECK(mkdtemp(dir) != NULL);
	snprintf(p, sizeof p, "%s/key", dir);
	snprintf(l, sizeof l, "%s/link", dir);

	write_key(p, 32, 0600);
	CHECK(unit_capture(load_key, &kc, err, sizeof err) == 0);
	CHECK_STR(err, "");
	write_key(p, 4096, 0400);
	kc.len = 4096;
	CHECK(unit_capture(load_key, &kc, err, sizeof err) == 0);

	write_key(p, 4097, 0600);
	CHECK(unit_capture(load_key, &kc, err, sizeof err) == 102);
	snprintf(msg, sizeof msg, "sbx-t: fatal: grant key %s is unusable: longer than 4096 bytes\n", p);
	CHECK_STR(err, msg);
	write_key(p, 31, 0600);
	CHECK(unit_capture(load_key, &kc, err, sizeof err) == 102);
	snprintf(msg, sizeof msg, "sbx-t: fatal: grant key %s is unusable: 31 bytes, at least 32 needed\n", p);
	CHECK_STR(err, msg);
	write_key(p, 0, 0600);
	CHECK(unit_capture(load_key, &kc, err, sizeof err) == 102);
	snprintf(msg, sizeof msg, "sbx-t: fatal: grant key %s is unusable: 0 bytes, at least 32 needed\n", p);
	CHECK_STR(err, msg);

	write_key(p, 32, 0640);
	CHECK(unit_capture(load_key, &kc, err, sizeof err) == 102);
	snprintf(msg, sizeof msg, "sbx-t: fatal: grant key %s is unsafe: mode 0640 gives group or others access\n", p);
	CHECK_STR(err, msg);
	write_key(p, 32, 0604);
	CHECK(unit_capture(load_key, &kc, err, sizeof err) == 102);
	snprintf(msg, sizeof msg, "sbx-t: fatal: grant key %s is unsafe: mode 0604 gives group or others access\n", p);
	CHECK_STR(err, msg);
	write_key(p, 32, 0602);
	CHECK(unit_capture(load_key, &kc, err, sizeof err) == 102);

	write_key(p, 32, 0600);
	CHECK(symlink(p, l) == 0);
	kc.path = l;
	CHECK(unit_capture(load_key, &kc, err, sizeof err) == 102);
	snprintf(msg, sizeof msg, "sbx-t: fatal: grant key %s is unsafe: a symlink\n", l);
	CHECK_STR(err, msg);
	kc.path = dir;
	CHECK(unit_capture(load_key, &kc, err, sizeof err) == 102);
	snprintf(msg, sizeof msg, "sbx-t: fatal: grant key %s is unsafe: not a regular file\n", dir);
	CHECK_STR(err, msg);
	unlink(l);
	unlink(p);
	kc.path = p;
	CHECK(unit_capture(load_key, &kc, err, sizeof err) == 111);
	snprintf(msg, sizeof msg, "sbx-t: fatal: unable to open grant key %s: No such file or directory\n", p);
	CHECK_STR(err, msg);
	kc.path = "";
	CHECK(unit_capture(load_key, &kc, err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: --grant-key: invalid path '': empty\n");
	kc.path = "key";
	CHECK(unit_capture(load_key, &kc, err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: --grant-key: invalid path 'key': not absolute\n");
	/* A FIFO would block a plain open: O_NONBLOCK, then refused by type. */
	CHECK(mkfifo(p, 0600) == 0);
	kc.path = p;
	CHECK(unit_capture(load_key, &kc, err, sizeof err) == 102);
	snprintf(msg, sizeof msg, "sbx-t: fatal: grant key %s is unsafe: not a regular file\n", p);
	CHECK_STR(err, msg);
	unlink(p);
	rmdir(dir);
}

/* Stdin: the bytes hashed are the bytes kept, and the copy cannot change. */
TEST(grant_stdin_is_captured_sealed)
{
	unsigned char sha[SBX_SHA256_LEN];
	char hex[SBX_SHA256_HEX], buf[16];
	int p[2], m;

	CHECK(pipe(p) == 0);
	CHECK(write(p[1], "hello", 5) == 5);
	close(p[1]);
	m = sbx_grant_stdin(p[0], 5, sha);
	close(p[0]);
	CHECK(m >= 0);
	sbx_digest_hex(sha, sizeof sha, hex);
	CHECK_STR(hex, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
	CHECK(read(m, buf, sizeof buf) == 5 && !memcmp(buf, "hello", 5));
	CHECK(lseek(m, 0, SEEK_SET) == 0);
	CHECK(write(m, "J", 1) == -1);
	CHECK(ftruncate(m, 0) == -1);
	CHECK(fcntl(m, F_GETFD) & FD_CLOEXEC);
	close(m);

	/* Over the limit: refused, not cut. */
	CHECK(pipe(p) == 0);
	CHECK(write(p[1], "hello", 5) == 5);
	close(p[1]);
	errno = 0;
	CHECK(sbx_grant_stdin(p[0], 4, sha) == -1);
	CHECK(errno == EFBIG);
	close(p[0]);

	/* Empty stdin: the digest of nothing. */
	CHECK(pipe(p) == 0);
	close(p[1]);
	m = sbx_grant_stdin(p[0], 0, sha);
	CHECK(m >= 0);
	sbx_digest_hex(sha, sizeof sha, hex);
	CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	close(m);
	close(p[0]);
}

/* Every single-bit change of a valid grant's text is refused: by the
 * parser, or as a forgery (never accepted, never blamed on a field). */
TEST(grant_every_bit_flip_is_refused)
{
	struct sbx_grant_key k;
	struct sbx_grant_input in;
	struct sbx_grant g, back;
	char text[SBX_GRANT_MAX], mut[SBX_GRANT_MAX];
	const char *why;
	size_t n;
	int accepted = 0, blamed = 0;

	fixed_key(&k);
	fixed_input(&in);
	sbx_grant_fields(&in, &g);
	sbx_grant_sign(&g, &k);
	n = sbx_grant_format(&g, text);
	for (size_t i = 0; i < n; i++) {
		for (int bit = 0; bit < 8; bit++) {
			int rc;
			memcpy(mut, text, n);
			mut[i] = (char)(mut[i] ^ (1 << bit));
			if (sbx_grant_parse(mut, n, &back, &why) < 0)
				continue;
			rc = sbx_grant_verify(&back, &k, &in);
			if (rc == 0)
				accepted++;
			else if (rc != SBX_GRANT_FORGED)
				blamed++;
		}
	}
	CHECK(accepted == 0);
	CHECK(blamed == 0);
}

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

/* An argv-kind grant of in: no expiry, no nonce. */
static void fields(const struct sbx_grant_input *in, struct sbx_grant *g)
{
	memset(g, 0, sizeof *g);
	g->kind = SBX_GRANT_KIND_ARGV;
	sbx_grant_fields(in, g);
}

/* The encoding is a contract with grants already issued: pinned by values
 * computed independently (Python's hashlib/hmac over the encoding that
 * grant.c documents). */
TEST(grant_known_answer)
{
	static const char want[] =
		"sbx-grant-v2\n"
		"kind=argv\n"
		"expires=never\n"
		"nonce=none\n"
		"argv=957a3caac1a2bb0a5eac38afdc94ec2b84a512d094e43d9a0d5072356f7a5d9b\n"
		"cwd=ec9f2111d2b6f99fb12f730b924602a3ef1992633de7f030e3485b29a1a570fb\n"
		"env=2723e3ca87ef2829dcdad6121959bb859e506bf9b5d35b84f67fa042fdde5a93\n"
		"stdin-sha256=2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824\n"
		"timeout-ms=30000\n"
		"mac=898c8f8ab05c84c3ddb6d722ce2136228d790731b0c2b370f426a2bb280223ff\n";
	struct sbx_grant_key k;
	struct sbx_grant_input in;
	struct sbx_grant g, back;
	char out[SBX_GRANT_MAX];
	const char *why = NULL;
	size_t n;

	fixed_key(&k);
	fixed_input(&in);
	fields(&in, &g);
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
	fields(&in, &a);
	in.envp = swapped;
	fields(&in, &b);
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
	fields(&in, &g);
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
	{
		char all[160];
		sbx_grant_describe(2 * SBX_GRANT_LAST - 1, all, sizeof all);
		CHECK_STR(all, "argv, cwd, env, stdin, timeout, identity, mounts, deny-write, net, "
			  "filters, landlock, policy, program");
	}
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
	fields(&in, &g);
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
	fields(&in, &g);
	CHECK(memcmp(g.argv, g.env, sizeof g.argv));
	in.argv = one;
	fields(&in, &g);
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
#define HEAD "sbx-grant-v2\nkind=argv\nexpires=never\nnonce=none\n"
#define CMD "argv=" H64 "\ncwd=" H64 "\nenv=" H64 "\nstdin-sha256=" H64 "\n"
#define GOOD HEAD CMD "timeout-ms=0\nmac=" H64 "\n"
#define PLANL "identity=" H64 "\nmounts=" H64 "\ndeny-write=" H64 "\nnet=" H64 "\nfilters=" H64 \
	"\nlandlock=" H64 "\npolicy=" H64 "\nprogram=" H64 "\n"
#define GOODPLAN "sbx-grant-v2\nkind=plan\nexpires=1800000000\nnonce=" H64 "\n" CMD \
	"timeout-ms=0\n" PLANL "mac=" H64 "\n"

TEST(grant_parse_is_strict)
{
	struct sbx_grant g;
	const char *why;
	char big[SBX_GRANT_MAX + 2];

	CHECK_STR(parse_why(GOOD), "accepted");
	CHECK_STR(parse_why(GOODPLAN), "accepted");
	CHECK(sbx_grant_parse(GOODPLAN, strlen(GOODPLAN), &g, &why) == 0);
	CHECK(g.kind == SBX_GRANT_KIND_PLAN && g.expires == 1800000000 && g.have_nonce);
	CHECK(g.nonce[0] == 0x01 && g.nonce[31] == 0xef && g.plan[7][1] == 0x23);
	CHECK_STR(parse_why(""), "empty");
	/* An old grant is told apart, so the verifier can say how to reissue it. */
	CHECK(sbx_grant_parse("sbx-grant-v1\nargv=", 18, &g, &why) == -2);
	CHECK_STR(parse_why("sbx-grant-v3\n"), "line 1: expected 'sbx-grant-v2'");
	CHECK_STR(parse_why("sbx-grant-v2"), "line 1: expected 'sbx-grant-v2'");
	CHECK_STR(parse_why("sbx-grant-v2\r\nkind=argv\n"), "line 1: expected 'sbx-grant-v2'");
	CHECK_STR(parse_why("sbx-grant-v2\nargv=" H64 "\n"), "line 2: expected 'kind='");
	CHECK_STR(parse_why("sbx-grant-v2\nkind=full\n"), "line 2: kind is not 'plan' or 'argv'");
	CHECK_STR(parse_why("sbx-grant-v2\nkind=argv\nexpires=0\n"),
		  "line 3: expires is not 'never' or a time in seconds since 1970");
	CHECK_STR(parse_why("sbx-grant-v2\nkind=argv\nexpires=-5\n"),
		  "line 3: expires is not 'never' or a time in seconds since 1970");
	CHECK_STR(parse_why("sbx-grant-v2\nkind=argv\nexpires=18446744073709551616\n"),
		  "line 3: expires is not 'never' or a time in seconds since 1970");
	CHECK_STR(parse_why("sbx-grant-v2\nkind=argv\nexpires=never\nnonce=\n"),
		  "line 4: nonce is not 'none' or 64 lower-case hex digits");
	CHECK_STR(parse_why("sbx-grant-v2\nkind=argv\nexpires=never\nnonce=" H64 "0\n"),
		  "line 4: nonce is not 'none' or 64 lower-case hex digits");
	CHECK_STR(parse_why(HEAD "cwd=" H64 "\n"), "line 5: expected 'argv='");
	CHECK_STR(parse_why(HEAD "argv=" H64), "line 5: expected 'argv='");
	CHECK_STR(parse_why(HEAD "argv=" H64 "0\n"), "line 5: argv is not 64 lower-case hex digits");
	CHECK_STR(parse_why(HEAD "argv=0123456789ABCDEF0123456789abcdef0123456789abcdef"
			    "0123456789abcdef\n"), "line 5: argv is not 64 lower-case hex digits");
	CHECK_STR(parse_why(HEAD "argv=" H64 "\r\n"), "line 5: argv is not 64 lower-case hex digits");
	CHECK_STR(parse_why(HEAD "argv =" H64 "\n"), "line 5: expected 'argv='");
	CHECK_STR(parse_why(HEAD CMD "timeout-ms=007\nmac=" H64 "\n"),
		  "line 9: timeout-ms is not a decimal number of milliseconds");
	CHECK_STR(parse_why(HEAD CMD "timeout-ms=18446744073709551616\nmac=" H64 "\n"),
		  "line 9: timeout-ms is not a decimal number of milliseconds");
	CHECK_STR(parse_why(HEAD CMD "timeout-ms=-1\nmac=" H64 "\n"),
		  "line 9: timeout-ms is not a decimal number of milliseconds");
	CHECK_STR(parse_why(HEAD CMD "timeout-ms=\nmac=" H64 "\n"),
		  "line 9: timeout-ms is not a decimal number of milliseconds");
	CHECK_STR(parse_why(HEAD CMD "timeout-ms=18446744073709551615\nmac=" H64 "\n"), "accepted");
	CHECK_STR(parse_why(GOOD "\n"), "line 11: trailing data after 'mac='");
	CHECK_STR(parse_why(GOOD "mac=" H64 "\n"), "line 11: trailing data after 'mac='");
	CHECK_STR(parse_why(HEAD "argv=" H64 "\nenv=" H64 "\n"), "line 6: expected 'cwd='");
	/* The kinds' line sets: an argv grant with plan lines, a plan grant without. */
	CHECK_STR(parse_why(HEAD CMD "timeout-ms=0\n" PLANL "mac=" H64 "\n"), "line 10: expected 'mac='");
	CHECK_STR(parse_why("sbx-grant-v2\nkind=plan\nexpires=never\nnonce=none\n" CMD
			    "timeout-ms=0\nmac=" H64 "\n"), "line 10: expected 'identity='");
	CHECK_STR(parse_why("sbx-grant-v2\nkind=plan\nexpires=never\nnonce=none\n" CMD
			    "timeout-ms=0\nidentity=" H64 "\nmounts=" H64 "\nnet=" H64 "\n"),
		  "line 12: expected 'deny-write='");
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
	size_t n = strlen(GOOD), m = strlen(GOODPLAN);

	for (size_t i = 0; i < n; i++)
		CHECK(sbx_grant_parse(GOOD, i, &g, &why) == -1);
	CHECK(sbx_grant_parse(GOOD, n, &g, &why) == 0);
	for (size_t i = 0; i < m; i++)
		CHECK(sbx_grant_parse(GOODPLAN, i, &g, &why) == -1);
	CHECK(sbx_grant_parse(GOODPLAN, m, &g, &why) == 0);
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

/* Each single-bit change of g's text, parsed and verified against in:
 * counts the ones accepted and the ones blamed on a field (not refused
 * as a forgery). */
static void flip_every_bit(const struct sbx_grant *g, const struct sbx_grant_key *k,
			   const struct sbx_grant_input *in, int *accepted, int *blamed)
{
	char text[SBX_GRANT_MAX], mut[SBX_GRANT_MAX];
	struct sbx_grant back;
	const char *why;
	size_t n = sbx_grant_format(g, text);

	for (size_t i = 0; i < n; i++)
		for (int bit = 0; bit < 8; bit++) {
			int rc;
			memcpy(mut, text, n);
			mut[i] = (char)(mut[i] ^ (1 << bit));
			if (sbx_grant_parse(mut, n, &back, &why) < 0)
				continue;
			rc = sbx_grant_verify(&back, k, in);
			if (rc == 0)
				(*accepted)++;
			else if (rc != SBX_GRANT_FORGED)
				(*blamed)++;
		}
}

/* Every single-bit change of a valid grant's text is refused: by the
 * parser, or as a forgery (never accepted, never blamed on a field). */
TEST(grant_every_bit_flip_is_refused)
{
	struct sbx_grant_key k;
	struct sbx_grant_input in;
	struct sbx_grant g;
	int accepted = 0, blamed = 0;

	fixed_key(&k);
	fixed_input(&in);
	fields(&in, &g);
	sbx_grant_sign(&g, &k);
	flip_every_bit(&g, &k, &in, &accepted, &blamed);
	CHECK(accepted == 0);
	CHECK(blamed == 0);
}

/* The plan groups: pinned by values computed independently (Python's
 * json.dumps(sort_keys=True, separators=(',', ':'), ensure_ascii=True)
 * and hashlib over the tags grant_doc.c documents). */
#define PLAN_DOC "{\"tool\":\"sbx-ns\",\"event\":\"plan\",\"argv\":[\"true\"],\"uid\":5,\"gid\":6," \
	"\"mounts\":[{\"kind\":\"scratch\",\"destination\":\"/tmp\",\"dev\":1,\"ino\":2}," \
	"{\"kind\":\"ro\",\"source\":\"/usr\",\"dev\":3,\"ino\":4}],\"mount_api\":\"new\"," \
	"\"deny_write\":{\"globs\":[]},\"net\":{\"mode\":\"none\"},\"seccomp\":{\"filter\":\"offline\"}," \
	"\"landlock\":{\"abi\":7,\"required\":false},\"policy\":false,\"program\":{\"path\":\"/bin/true\"}}"

static const char *const plan_want[SBX_GRANT_NGROUPS] = {
	"14e80902a008a2e9dcc4c6f72298cc29f14f4943f0331ad5a093f0c207e797c9",
	"4b68070ce6aec1f63bb4d671b9510b07038ada652139663e774e73703ac6b4e7",
	"8a0c206a871a1838978c6cac0bc1e3057cbace5adea8bbd88a5e7e8f08410492",
	"73145dfb37979d45959e2bd9aca9e889fe8967d4ed546da71d8c066448209893",
	"01194bc5cb2420c3e5ca630675836f4da34c2fa72cb5e99aa11627aaa1d1ef36",
	"53d79244717d5f90c43ac3bd02f90891d2519139e82bad517d80b15032810bd6",
	"250c15ad4bb66c0ade84c037cb74a00418dc481bcf65ef45c0f0ff56ab6b376d",
	"0c12c6ea9ad201cc536f46a494af0cb7b84f5c39062b948f4a3d15d01614fd94",
};

TEST(grant_plan_groups_known_answer)
{
	unsigned char d[SBX_GRANT_NGROUPS][SBX_SHA256_LEN];
	char hex[SBX_SHA256_HEX];
	const char *why = NULL;

	CHECK(sbx_grant_plan_text(PLAN_DOC, strlen(PLAN_DOC), d, &why) == 0);
	for (int i = 0; i < SBX_GRANT_NGROUPS; i++) {
		sbx_digest_hex(d[i], SBX_SHA256_LEN, hex);
		CHECK_STR(hex, plan_want[i]);
	}
}

/* Spacing and key order do not matter; a value changed by one byte
 * changes exactly its own group; a scratch bind's identity is not bound,
 * any other bind's is. */
TEST(grant_plan_groups_change_alone)
{
	static const struct { const char *from, *to; int group; } cases[] = {
		{ "\"uid\":5", "\"uid\":4", 0 },
		{ "\"dev\":3", "\"dev\":9", 1 },
		{ "\"mount_api\":\"new\"", "\"mount_api\":\"old\"", 1 },
		{ "\"globs\":[]", "\"globs\":[\"x\"]", 2 },
		{ "\"mode\":\"none\"", "\"mode\":\"host\"", 3 },
		{ "\"filter\":\"offline\"", "\"filter\":\"host\"", 4 },
		{ "\"abi\":7", "\"abi\":6", 5 },
		{ "\"policy\":false", "\"policy\":true", 6 },
		{ "\"/bin/true\"", "\"/bin/tru\"", 7 },
	};
	unsigned char base[SBX_GRANT_NGROUPS][SBX_SHA256_LEN], d[SBX_GRANT_NGROUPS][SBX_SHA256_LEN];
	const char *why;
	char doc[2048];

	CHECK(sbx_grant_plan_text(PLAN_DOC, strlen(PLAN_DOC), base, &why) == 0);
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		const char *at = strstr(PLAN_DOC, cases[c].from);
		int n;

		CHECK(at != NULL);
		n = snprintf(doc, sizeof doc, "%.*s%s%s", (int)(at - PLAN_DOC), PLAN_DOC, cases[c].to,
			     at + strlen(cases[c].from));
		CHECK(sbx_grant_plan_text(doc, (size_t)n, d, &why) == 0);
		for (int g = 0; g < SBX_GRANT_NGROUPS; g++)
			CHECK((memcmp(d[g], base[g], SBX_SHA256_LEN) != 0) == (g == cases[c].group));
	}
	/* Reordered and spaced: the same digests. */
	strcpy(doc, "{ \"program\" : {\"path\":\"/bin/true\"}, \"policy\":false, \"landlock\":{\"required\":false,"
		    "\"abi\":7}, \"seccomp\":{\"filter\":\"offline\"}, \"net\":{\"mode\":\"none\"},"
		    "\"deny_write\":{\"globs\":[]}, \"mount_api\":\"new\", \"mounts\":[{\"ino\":2,\"dev\":1,"
		    "\"destination\":\"/tmp\",\"kind\":\"scratch\"},{\"ino\":4,\"dev\":3,\"source\":\"/usr\","
		    "\"kind\":\"ro\"}], \"gid\":6, \"uid\":5, \"argv\":[\"true\"], \"event\":\"plan\","
		    "\"tool\":\"sbx-ns\" }");
	CHECK(sbx_grant_plan_text(doc, strlen(doc), d, &why) == 0);
	CHECK(!memcmp(d, base, sizeof d));
	/* The scratch bind as a dry run shows it (to be created): the same. */
	{
		const char *at = strstr(PLAN_DOC, "\"dev\":1,\"ino\":2");
		int n = snprintf(doc, sizeof doc, "%.*s\"create\":true%s", (int)(at - PLAN_DOC), PLAN_DOC,
				 at + strlen("\"dev\":1,\"ino\":2"));
		CHECK(sbx_grant_plan_text(doc, (size_t)n, d, &why) == 0);
		CHECK(!memcmp(d, base, sizeof d));
	}
}

/* A key no group covers is refused, so nothing the plan says goes unbound;
 * so are a duplicate key, garbage and a non-object. */
TEST(grant_plan_groups_refuse_unknown_keys)
{
	unsigned char d[SBX_GRANT_NGROUPS][SBX_SHA256_LEN];
	const char *why = NULL;

	CHECK(sbx_grant_plan_text("{\"uid\":1,\"capabilities\":[]}", 27, d, &why) == -1);
	CHECK_STR(why, "the plan has a key no grant field covers: \"capabilities\"");
	CHECK(sbx_grant_plan_text("{\"uid\":1,\"uid\":2}", 17, d, &why) == -1);
	CHECK_STR(why, "the plan is not JSON");
	CHECK(sbx_grant_plan_text("[1]", 3, d, &why) == -1);
	CHECK_STR(why, "the plan is not a JSON object");
	CHECK(sbx_grant_plan_text("{", 1, d, &why) == -1);
}

/* A plan grant: every field of it authenticated (the kind, the expiry and
 * the nonce too); against a run without a plan every group differs. */
TEST(grant_plan_kind_binds_everything)
{
	struct sbx_grant_key k;
	struct sbx_grant_input in;
	struct sbx_grant g, f;
	const char *why;
	int accepted = 0, blamed = 0;

	fixed_key(&k);
	fixed_input(&in);
	CHECK(sbx_grant_plan_text(PLAN_DOC, strlen(PLAN_DOC), in.plan, &why) == 0);
	in.have_plan = 1;
	memset(&g, 0, sizeof g);
	g.kind = SBX_GRANT_KIND_PLAN;
	g.expires = 1800000000;
	CHECK(sbx_grant_new_nonce(&g) == 0);
	sbx_grant_fields(&in, &g);
	sbx_grant_sign(&g, &k);
	CHECK(sbx_grant_verify(&g, &k, &in) == 0);
	f = g;
	f.kind = SBX_GRANT_KIND_ARGV;
	CHECK(sbx_grant_verify(&f, &k, &in) == SBX_GRANT_FORGED);
	f = g;
	f.expires++;
	CHECK(sbx_grant_verify(&f, &k, &in) == SBX_GRANT_FORGED);
	f = g;
	f.have_nonce = 0;
	CHECK(sbx_grant_verify(&f, &k, &in) == SBX_GRANT_FORGED);
	f = g;
	f.nonce[3] ^= 1;
	CHECK(sbx_grant_verify(&f, &k, &in) == SBX_GRANT_FORGED);
	f = g;
	f.plan[4][0] ^= 1;
	CHECK(sbx_grant_verify(&f, &k, &in) == SBX_GRANT_FORGED);
	in.plan[1][0] ^= 1;
	CHECK(sbx_grant_verify(&g, &k, &in) == SBX_GRANT_MOUNTS);
	in.have_plan = 0;
	CHECK(sbx_grant_verify(&g, &k, &in) == 0x1fe0);
	in.have_plan = 1;
	in.plan[1][0] ^= 1;
	/* Two nonces drawn never match. */
	f = g;
	CHECK(sbx_grant_new_nonce(&f) == 0);
	CHECK(memcmp(f.nonce, g.nonce, sizeof g.nonce));
	flip_every_bit(&g, &k, &in, &accepted, &blamed);
	CHECK(accepted == 0);
	CHECK(blamed == 0);
}

/* A file of text at dir/name (made anew). */
static void put_file(const char *dir, const char *name, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof p, "%s/%s", dir, name);
	unlink(p);
	f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* The mark a prune leaves, read back strictly: one line "pruned N", N
 * decimal without a leading zero, nothing else; anything else is EINVAL,
 * and a missing directory or file is 0 (nothing pruned yet). */
TEST(grant_nonce_mark_is_read_strictly)
{
	static const char *const bad[] = {
		"", "pruned\n", "pruned 1", "pruned 01\n", "pruned -1\n", "pruned 1x\n", "pruned  1\n",
		"pruned 1\npruned 2\n", "pruned 18446744073709551616\n", "Pruned 1\n", "pruned 1\n\n", NULL,
	};
	char dir[] = "/tmp/sbx-unit-nonce.XXXXXX", sub[64];
	uint64_t m = 7;
	int fd;

	CHECK(mkdtemp(dir) != NULL);
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(sbx_grant_nonce_pruned(fd, &m) == 0 && m == 0);
	snprintf(sub, sizeof sub, "%s/expiring", dir);
	CHECK(mkdir(sub, 0700) == 0);
	CHECK(sbx_grant_nonce_pruned(fd, &m) == 0 && m == 0);
	put_file(sub, "pruned", "pruned 18446744073709551615\n");
	CHECK(sbx_grant_nonce_pruned(fd, &m) == 0 && m == UINT64_MAX);
	for (const char *const *b = bad; *b; b++) {
		put_file(sub, "pruned", *b);
		errno = 0;
		CHECK(sbx_grant_nonce_pruned(fd, &m) == -1 && errno == EINVAL);
	}
	/* Not through a link, not of another type. */
	put_file(sub, "target", "pruned 5\n");
	{
		char p[128], t[128];
		snprintf(p, sizeof p, "%s/pruned", sub);
		snprintf(t, sizeof t, "%s/target", sub);
		unlink(p);
		CHECK(symlink(t, p) == 0);
		CHECK(sbx_grant_nonce_pruned(fd, &m) == -1 && errno == ELOOP);
		unlink(p);
		CHECK(mkdir(p, 0700) == 0);
		CHECK(sbx_grant_nonce_pruned(fd, &m) == -1 && errno == EINVAL);
		rmdir(p);
		unlink(t);
	}
	rmdir(sub);
	close(fd);
	rmdir(dir);
}

/* --prune's reading of records: only "used N pid P expires T\n" with T a
 * plain positive decimal is an expiry; every other text (an older
 * sbx-ns's record, a damaged one) stays, counted as unreadable. */
TEST(grant_nonce_records_of_unknown_expiry_stay)
{
	static const char *const unknown[] = {
		"used 1 pid 1\n", "used 1 pid 1 expires\n", "used 1 pid 1 expires 01\n", "used 1 pid 1 expires 0\n",
		"used 1 pid 1 expires -5\n", "used 1 pid 1 expires 5x\n", "used 1 pid 1 expires 5",
		"used 1 pid 1 expires 5\nused 1 pid 1 expires 5\n", "used 1 pid 1 expires 99999999999999999999\n",
		"x", "", NULL,
	};
	char dir[] = "/tmp/sbx-unit-nonce.XXXXXX", name[80], cmd[128];
	struct sbx_grant_prune pr;
	size_t n = 0;
	int fd;

	CHECK(mkdtemp(dir) != NULL);
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	for (const char *const *u = unknown; *u; u++, n++) {
		snprintf(name, sizeof name, "%064zu", n);
		put_file(dir, name, *u);
	}
	put_file(dir, "1000000000000000000000000000000000000000000000000000000000000001", "used 1 pid 1 expires 5\n");
	put_file(dir, "1000000000000000000000000000000000000000000000000000000000000002", "used 1 pid 1 expires never\n");
	/* Not a record's name: not looked at. */
	put_file(dir, "notes", "used 1 pid 1 expires 5\n");
	CHECK(sbx_grant_nonce_prune(fd, 1800000000, UINT64_MAX, 1, &pr) == 0);
	CHECK_U64(pr.removed, 1);
	CHECK_U64(pr.never, 1);
	CHECK_U64(pr.live, 0);
	CHECK_U64(pr.unknown, n);
	snprintf(name, sizeof name, "%s/notes", dir);
	CHECK(access(name, F_OK) == 0);
	close(fd);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

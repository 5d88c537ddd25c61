#include "unit.h"
#include "sbpl.h"

#include <limits.h>
#include <stdlib.h>

static const char *canon(const char *in, size_t len, char *out, size_t outsz)
{
	char *c = NULL;
	const char *why = sbx_sbpl_canon(in, len, &c);
	if (why)
		return why;
	snprintf(out, outsz, "=%s", c);
	free(c);
	return out;
}

#define CANON(in, want) do { char buf_[4200];                                  \
	CHECK_STR(canon(in, sizeof in - 1, buf_, sizeof buf_), want); } while (0)

TEST(sbpl_canon_rewrites_the_private_links)
{
	CANON("/var/tmp/ws", "=/private/var/tmp/ws");
	CANON("/tmp", "=/private/tmp");
	CANON("//etc//hosts/", "=/private/etc/hosts");
	CANON("/variable/x", "=/variable/x");
	CANON("/private/var/x", "=/private/var/x");
	CANON("/Users/me/var", "=/Users/me/var");
	CANON("/", "=/");
	CANON("/Users/zo\xc3\xab/\xe6\x97\xa5\xe6\x9c\xac ws", "=/Users/zo\xc3\xab/\xe6\x97\xa5\xe6\x9c\xac ws");
	CANON("/a \"b\" \\c (d) [e]", "=/a \"b\" \\c (d) [e]");
}

TEST(sbpl_canon_refuses_what_cannot_be_named)
{
	char big[PATH_MAX + 2];
	char *c = (char *)1;
	CANON("", "empty");
	CANON("ws", "not absolute");
	CANON("./ws", "not absolute");
	CANON("/a\0b", "contains NUL");
	CANON("/a\nb", "contains a newline");
	CANON("/a\rb", "contains a newline");
	CANON("/a/\xff", "not valid UTF-8");
	CANON("/a/\xc0\xaf", "not valid UTF-8");      /* overlong "/" */
	CANON("/a/\xed\xa0\x80", "not valid UTF-8");  /* surrogate */
	CANON("/a/\xe6\x97", "not valid UTF-8");      /* truncated */
	CANON("/a/../b", "'..' component");
	CANON("/a/./b", "'.' component");
	CANON("/a/..", "'..' component");
	memset(big, 'a', sizeof big);
	big[0] = '/';
	CHECK_STR(sbx_sbpl_canon(big, PATH_MAX, &c), "too long");
	CHECK(c == NULL);
}

static const char *glob(const char *ws, const char *in, char *out, size_t outsz)
{
	char *re, *pre;
	const char *why = sbx_sbpl_glob(ws, in, strlen(in), &re, &pre);
	if (why)
		return why;
	snprintf(out, outsz, "%s %s", re, pre);
	free(re);
	free(pre);
	return out;
}

#define GLOB(in, want) do { char buf_[4200];                                   \
	CHECK_STR(glob("/private/var/ws", in, buf_, sizeof buf_), want); } while (0)

TEST(sbpl_glob_becomes_an_anchored_escaped_regex)
{
	/* Every regex metacharacter a name may hold is escaped. */
	GLOB("a.b+c(d)e[h]i{j}k|l^m$n\\o \"p\" \xc3\xab",
	     "^/private/var/ws/a\\.b\\+c\\(d\\)e\\[h\\]i\\{j\\}k\\|l\\^m\\$n\\\\o \"p\" \xc3\xab(/.*)?$ /private/var/ws");
	GLOB(".env", "^/private/var/ws/\\.env(/.*)?$ /private/var/ws");
	GLOB(".git/hooks/*", "^/private/var/ws/\\.git/hooks/[^/]*(/.*)?$ /private/var/ws/.git/hooks");
	GLOB("**/.env", "^/private/var/ws(/.*)?/\\.env(/.*)?$ /private/var/ws");
	GLOB("src/**", "^/private/var/ws/src(/.*)?(/.*)?$ /private/var/ws/src");
	GLOB("*.pem", "^/private/var/ws/[^/]*\\.pem(/.*)?$ /private/var/ws");
	GLOB("a?c/d", "^/private/var/ws/a[^/]c/d(/.*)?$ /private/var/ws");
	GLOB("a b/\"q\"/x\\y(1)+[2]", "^/private/var/ws/a b/\"q\"/x\\\\y\\(1\\)\\+\\[2\\](/.*)?$ "
	     "/private/var/ws/a b/\"q\"");
	GLOB("caf\xc3\xa9/$HOME", "^/private/var/ws/caf\xc3\xa9/\\$HOME(/.*)?$ /private/var/ws/caf\xc3\xa9");
	GLOB("/var/ws/x", "^/private/var/ws/x(/.*)?$ /private/var/ws");
	GLOB("/private/var/ws//x/y/", "^/private/var/ws/x/y(/.*)?$ /private/var/ws/x");
}

TEST(sbpl_glob_refusals)
{
	GLOB("", "empty");
	GLOB("/etc/passwd", "outside the workspace");
	GLOB("/var/ws", "outside the workspace");
	GLOB("/var/wsx/a", "outside the workspace");
	GLOB("../x", "'..' component");
	GLOB("a/./b", "'.' component");
	GLOB("a**b", "'**' must be a whole component");
	GLOB("a\nb", "contains a newline");
	GLOB("\xff", "not valid UTF-8");
}

TEST(sbpl_profile_never_contains_a_caller_path)
{
	const char *ro[] = { "/opt/(evil\")", "/var/ro" };
	const char *deny[] = { "evil\"glob*", ".git" };
	struct sbx_sbpl_cfg cfg = { "/var/tmp/ws\") (allow default) (\"evil", ro, 2, deny, 2, 0 };
	struct sbx_sbpl s;
	const char *bad, *badval;

	CHECK(sbx_sbpl_build(&cfg, &s, &bad, &badval) == NULL);
	CHECK(!strstr(s.profile, "evil"));
	CHECK(!strstr(s.profile, "(allow default)"));
	CHECK(!strstr(s.profile, "network"));
	CHECK(strstr(s.profile, "(deny default)\n"));
	CHECK_STR(s.workspace, "/private/var/tmp/ws\") (allow default) (\"evil");
	CHECK_STR(s.tmpdir, "/private/var/tmp/ws\") (allow default) (\"evil/.tmp");
	CHECK_STR(s.params[0], "WS=/private/var/tmp/ws\") (allow default) (\"evil");
	CHECK_STR(s.params[1], "RO0=/opt/(evil\")");
	CHECK_STR(s.params[2], "RO1=/private/var/ro");
	sbx_sbpl_free(&s);
}

TEST(sbpl_broker_port_allows_one_loopback_port_only)
{
	struct sbx_sbpl_cfg cfg = { "/w", NULL, 0, NULL, 0, 8080 };
	struct sbx_sbpl s;
	const char *bad, *badval;

	CHECK(sbx_sbpl_build(&cfg, &s, &bad, &badval) == NULL);
	CHECK(strstr(s.profile, "(allow network-outbound (remote ip \"localhost:8080\"))\n"));
	CHECK(!strstr(s.profile, "local ip"));
	CHECK(!strstr(s.profile, "network-bind"));
	CHECK(!strstr(s.profile, "mach-lookup"));
	sbx_sbpl_free(&s);
}

TEST(sbpl_build_names_the_bad_option)
{
	const char *ro[] = { "/ok", "rel" };
	struct sbx_sbpl_cfg cfg = { "/w", ro, 2, NULL, 0, 0 };
	struct sbx_sbpl s;
	const char *bad, *badval;

	CHECK_STR(sbx_sbpl_build(&cfg, &s, &bad, &badval), "not absolute");
	CHECK_STR(bad, "--ro");
	CHECK_STR(badval, "rel");
	cfg.workspace = "/";
	CHECK_STR(sbx_sbpl_build(&cfg, &s, &bad, &badval), "the root cannot be the workspace");
	CHECK_STR(bad, "--workspace");
}

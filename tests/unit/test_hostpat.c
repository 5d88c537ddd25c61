#include "unit.h"
#include "hostpat.h"

static const char *norm(const char *s, char *out)
{
	const char *why = sbx_host_normalize(s, strlen(s), out);
	return why ? why : out;
}

TEST(hostpat_normal_form)
{
	char o[SBX_HOST_MAX + 1];
	CHECK_STR(norm("Example.COM", o), "example.com");
	CHECK_STR(norm("example.com.", o), "example.com");
	CHECK_STR(norm("xn--bcher-kva.example", o), "xn--bcher-kva.example");
	CHECK_STR(norm("a-b.c0", o), "a-b.c0");
	CHECK_STR(norm("localhost", o), "localhost");
}

TEST(hostpat_refuses_bad_names)
{
	char o[SBX_HOST_MAX + 1];
	char lab[80], name[400];

	CHECK_STR(norm("", o), "empty name");
	CHECK_STR(norm(".", o), "empty label");
	CHECK_STR(norm("example.com..", o), "empty label");
	CHECK_STR(norm("a..b", o), "empty label");
	CHECK_STR(norm(".a.b", o), "empty label");
	CHECK_STR(norm("a b.com", o), "whitespace not allowed");
	CHECK_STR(norm("a.com\t", o), "whitespace not allowed");
	CHECK_STR(norm("a.com:443", o), "ports and IPv6 literals not allowed");
	CHECK_STR(norm("[::1]", o), "ports and IPv6 literals not allowed");
	CHECK_STR(norm("a.com/x", o), "paths not allowed");
	CHECK_STR(norm("b\xc3\xbc" "cher.de", o), "not ASCII (write international names in punycode)");
	CHECK_STR(norm("a_b.com", o), "invalid character");
	CHECK_STR(norm("u@a.com", o), "user names not allowed");
	CHECK_STR(norm("-a.com", o), "label starts or ends with a hyphen");
	CHECK_STR(norm("a-.com", o), "label starts or ends with a hyphen");
	CHECK_STR(norm("1.2.3.4", o), "IP literals not allowed");
	CHECK_STR(norm("127.1", o), "IP literals not allowed");
	CHECK_STR(norm("2130706433", o), "IP literals not allowed");
	CHECK_STR(norm("0x7f000001", o), "IP literals not allowed");
	CHECK_STR(norm("0x7f.1", o), "IP literals not allowed");
	CHECK_STR(norm("a.b*", o), "wildcard only as the whole first label");
	/* 63 and 64 byte labels; 253 and 254 byte names */
	memset(lab, 'a', 63); lab[63] = 0;
	snprintf(name, sizeof name, "%s.com", lab);
	CHECK_STR(norm(name, o), name);
	memset(lab, 'a', 64); lab[64] = 0;
	snprintf(name, sizeof name, "%s.com", lab);
	CHECK_STR(norm(name, o), "label longer than 63 bytes");
	memset(lab, 'a', 63); lab[63] = 0;
	snprintf(name, sizeof name, "%s.%s.%s.%.61s", lab, lab, lab, lab);
	CHECK(strlen(name) == 253);
	CHECK_STR(norm(name, o), name);
	{
		char dotted[500];
		snprintf(dotted, sizeof dotted, "%s.", name);
		CHECK_STR(norm(dotted, o), name);
	}
	snprintf(name, sizeof name, "%s.%s.%s.%.62s", lab, lab, lab, lab);
	CHECK_STR(norm(name, o), "name longer than 253 bytes");
}

TEST(hostpat_patterns)
{
	struct sbx_hostpat p;
	CHECK(!sbx_hostpat_parse("Example.com", &p));
	CHECK(!p.wildcard);
	CHECK(sbx_hostpat_match(&p, "example.com"));
	CHECK(!sbx_hostpat_match(&p, "www.example.com"));
	CHECK(!sbx_hostpat_match(&p, "example.co"));
	CHECK(!sbx_hostpat_match(&p, "xexample.com"));
	CHECK(!sbx_hostpat_parse("*.example.com", &p));
	CHECK(p.wildcard);
	CHECK(!sbx_hostpat_match(&p, "example.com"));
	CHECK(sbx_hostpat_match(&p, "a.example.com"));
	CHECK(sbx_hostpat_match(&p, "a.b.example.com"));
	CHECK(!sbx_hostpat_match(&p, "aexample.com"));
	CHECK(!sbx_hostpat_match(&p, ".example.com"));
	CHECK_STR(sbx_hostpat_parse("", &p), "empty name");
	CHECK_STR(sbx_hostpat_parse("*", &p), "a bare * would allow every name");
	CHECK_STR(sbx_hostpat_parse("*.", &p), "a bare * would allow every name");
	CHECK_STR(sbx_hostpat_parse("*.com", &p), "wildcard covers a whole top-level domain");
	CHECK_STR(sbx_hostpat_parse("*.com.", &p), "wildcard covers a whole top-level domain");
	CHECK_STR(sbx_hostpat_parse("*.*.com", &p), "wildcard only as the whole first label");
	CHECK_STR(sbx_hostpat_parse("a.*.com", &p), "wildcard only as the whole first label");
	CHECK_STR(sbx_hostpat_parse("*a.com", &p), "wildcard only as the whole first label");
	CHECK_STR(sbx_hostpat_parse("*.10.0.0.1", &p), "IP literals not allowed");
	CHECK_STR(sbx_hostpat_parse("10.0.0.1", &p), "IP literals not allowed");
}

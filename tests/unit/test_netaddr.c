#include "unit.h"
#include "netaddr.h"

#include <arpa/inet.h>

/* "G" global, "P" private, "F" forbidden, for an address in text form. */
static const char *cls(const char *text)
{
	struct in_addr a4;
	struct in6_addr a6;
	const char *why;
	enum sbx_addr_class c;

	if (inet_pton(AF_INET, text, &a4) == 1)
		c = sbx_addr4_class(&a4, &why);
	else if (inet_pton(AF_INET6, text, &a6) == 1)
		c = sbx_addr6_class(&a6, &why);
	else
		return "?";
	return c == SBX_ADDR_GLOBAL ? "G" : c == SBX_ADDR_PRIVATE ? "P" : "F";
}

/* Each range: the address just below, its first, its last, the one just
 * above. */
static void edges(int *unit_failed, const char *below, const char *first, const char *last,
		  const char *above, const char *want_in, const char *want_out_lo, const char *want_out_hi)
{
	if (below)
		CHECK_STR(cls(below), want_out_lo);
	CHECK_STR(cls(first), want_in);
	CHECK_STR(cls(last), want_in);
	if (above)
		CHECK_STR(cls(above), want_out_hi);
}

/* The decision with only the private switch and the host's own addresses. */
static const char *addr_check(const struct sockaddr *sa, int allow_private,
			      const struct sockaddr_storage *own, size_t n)
{
	struct sbx_addr_rule r = { .allow_private = allow_private, .own = own, .nown = n };
	int closed;

	return sbx_addr_decide(sa, &r, &closed);
}

TEST(netaddr_ipv4_ranges_and_their_edges)
{
	edges(unit_failed, NULL, "0.0.0.0", "0.255.255.255", "1.0.0.0", "F", "G", "G");
	edges(unit_failed, "9.255.255.255", "10.0.0.0", "10.255.255.255", "11.0.0.0", "P", "G", "G");
	edges(unit_failed, "100.63.255.255", "100.64.0.0", "100.127.255.255", "100.128.0.0", "P", "G", "G");
	edges(unit_failed, "126.255.255.255", "127.0.0.0", "127.255.255.255", "128.0.0.0", "F", "G", "G");
	edges(unit_failed, "169.253.255.255", "169.254.0.0", "169.254.255.255", "169.255.0.0", "F", "G", "G");
	edges(unit_failed, "172.15.255.255", "172.16.0.0", "172.31.255.255", "172.32.0.0", "P", "G", "G");
	edges(unit_failed, "191.255.255.255", "192.0.0.0", "192.0.0.255", "192.0.1.0", "F", "G", "G");
	edges(unit_failed, "192.0.1.255", "192.0.2.0", "192.0.2.255", "192.0.3.0", "F", "G", "G");
	edges(unit_failed, "192.88.98.255", "192.88.99.0", "192.88.99.255", "192.88.100.0", "F", "G", "G");
	edges(unit_failed, "192.167.255.255", "192.168.0.0", "192.168.255.255", "192.169.0.0", "P", "G", "G");
	edges(unit_failed, "198.17.255.255", "198.18.0.0", "198.19.255.255", "198.20.0.0", "P", "G", "G");
	edges(unit_failed, "198.51.99.255", "198.51.100.0", "198.51.100.255", "198.51.101.0", "F", "G", "G");
	edges(unit_failed, "203.0.112.255", "203.0.113.0", "203.0.113.255", "203.0.114.0", "F", "G", "G");
	edges(unit_failed, "223.255.255.255", "224.0.0.0", "239.255.255.255", NULL, "F", "G", NULL);
	edges(unit_failed, NULL, "240.0.0.0", "255.255.255.254", NULL, "F", NULL, NULL);
	CHECK_STR(cls("255.255.255.255"), "F");
	CHECK_STR(cls("1.1.1.1"), "G");
	CHECK_STR(cls("93.184.216.34"), "G");
}

TEST(netaddr_ipv6_ranges_and_their_edges)
{
	CHECK_STR(cls("::"), "F");
	CHECK_STR(cls("::1"), "F");
	CHECK_STR(cls("::2"), "F"); /* IPv4-compatible 0.0.0.2 */
	CHECK_STR(cls("::ffff:127.0.0.1"), "F");
	CHECK_STR(cls("::ffff:10.1.2.3"), "P");
	CHECK_STR(cls("::ffff:8.8.8.8"), "G");
	CHECK_STR(cls("::127.0.0.1"), "F");
	CHECK_STR(cls("::8.8.8.8"), "G");
	CHECK_STR(cls("::ffff:198.18.0.1"), "P");
	CHECK_STR(cls("64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff"), "F"); /* outside 2000::/3 */
	CHECK_STR(cls("64:ff9b::"), "F");
	CHECK_STR(cls("64:ff9b::ffff:ffff"), "F");
	CHECK_STR(cls("64:ff9b:1::"), "F");
	CHECK_STR(cls("64:ff9b:1:ffff:ffff:ffff:ffff:ffff"), "F");
	CHECK_STR(cls("100::"), "F");
	CHECK_STR(cls("100::ffff:ffff:ffff:ffff"), "F");
	CHECK_STR(cls("1ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), "F");
	CHECK_STR(cls("1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), "F");
	CHECK_STR(cls("2000::"), "G");
	CHECK_STR(cls("2001::"), "F");
	CHECK_STR(cls("2001:0:ffff:ffff:ffff:ffff:ffff:ffff"), "F");
	CHECK_STR(cls("2001:1::"), "G");
	CHECK_STR(cls("2001:db7:ffff:ffff:ffff:ffff:ffff:ffff"), "G");
	CHECK_STR(cls("2001:db8::"), "F");
	CHECK_STR(cls("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff"), "F");
	CHECK_STR(cls("2001:db9::"), "G");
	CHECK_STR(cls("2001:4860:4860::8888"), "G");
	CHECK_STR(cls("2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), "G");
	CHECK_STR(cls("2002::"), "F");
	CHECK_STR(cls("2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), "F");
	CHECK_STR(cls("2003::"), "G");
	CHECK_STR(cls("3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), "G");
	CHECK_STR(cls("4000::"), "F");
	CHECK_STR(cls("fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), "F");
	CHECK_STR(cls("fc00::"), "P");
	CHECK_STR(cls("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), "P");
	CHECK_STR(cls("fe00::"), "F");
	CHECK_STR(cls("fe80::"), "F");
	CHECK_STR(cls("febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), "F");
	CHECK_STR(cls("fec0::"), "P");
	CHECK_STR(cls("feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), "P");
	CHECK_STR(cls("ff00::"), "F");
	CHECK_STR(cls("ff02::1"), "F");
}

static void sin4(struct sockaddr_storage *ss, const char *t)
{
	struct sockaddr_in *s = (struct sockaddr_in *)ss;
	memset(ss, 0, sizeof *ss);
	s->sin_family = AF_INET;
	inet_pton(AF_INET, t, &s->sin_addr);
}

static void sin6(struct sockaddr_storage *ss, const char *t)
{
	struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;
	memset(ss, 0, sizeof *ss);
	s->sin6_family = AF_INET6;
	inet_pton(AF_INET6, t, &s->sin6_addr);
}

TEST(netaddr_check_private_flag_and_own_addresses)
{
	struct sockaddr_storage a, own[2];
	const struct sockaddr *sa = (const struct sockaddr *)&a;

	sin4(&own[0], "198.18.0.1");
	sin6(&own[1], "2001:4860::1");
	sin4(&a, "10.1.1.1");
	CHECK_STR(addr_check(sa, 0, own, 2), "private (10.0.0.0/8)");
	CHECK(addr_check(sa, 1, own, 2) == NULL);
	sin4(&a, "198.18.0.2");
	CHECK_STR(addr_check(sa, 0, own, 2), "benchmarking or fake-IP DNS (198.18.0.0/15)");
	CHECK(addr_check(sa, 1, own, 2) == NULL);
	sin4(&a, "198.18.0.1");
	CHECK_STR(addr_check(sa, 1, own, 2), "an address of this host");
	sin6(&a, "::ffff:198.18.0.1");
	CHECK_STR(addr_check(sa, 1, own, 2), "an address of this host");
	sin6(&a, "2001:4860::1");
	CHECK_STR(addr_check(sa, 1, own, 2), "an address of this host");
	sin6(&a, "2001:4860::2");
	CHECK(addr_check(sa, 0, own, 2) == NULL);
	/* never opened by the flag */
	sin4(&a, "127.0.0.1");
	CHECK_STR(addr_check(sa, 1, own, 2), "loopback (127.0.0.0/8)");
	sin4(&a, "169.254.169.254");
	CHECK_STR(addr_check(sa, 1, own, 2), "link-local (169.254.0.0/16)");
	sin4(&a, "224.0.0.1");
	CHECK_STR(addr_check(sa, 1, own, 2), "multicast (224.0.0.0/4)");
	sin4(&a, "0.0.0.0");
	CHECK_STR(addr_check(sa, 1, own, 2), "unspecified (0.0.0.0/8)");
	sin6(&a, "::1");
	CHECK_STR(addr_check(sa, 1, own, 2), "loopback (::1)");
	sin6(&a, "::");
	CHECK_STR(addr_check(sa, 1, own, 2), "unspecified (::)");
	sin6(&a, "fe80::1");
	CHECK_STR(addr_check(sa, 1, own, 2), "link-local (fe80::/10)");
	sin6(&a, "ff02::1");
	CHECK_STR(addr_check(sa, 1, own, 2), "multicast (ff00::/8)");
	sin6(&a, "::ffff:127.0.0.1");
	CHECK_STR(addr_check(sa, 1, own, 2), "loopback (127.0.0.0/8)");
	sin4(&a, "192.0.2.1");
	CHECK_STR(addr_check(sa, 1, own, 2), "documentation (192.0.2.0/24)");
	sin4(&a, "8.8.8.8");
	CHECK(addr_check(sa, 0, NULL, 0) == NULL);
}

TEST(netaddr_metadata_and_denied_ranges)
{
	struct sockaddr_storage a;
	const struct sockaddr *sa = (const struct sockaddr *)&a;
	struct sbx_cidr d[2];
	struct sbx_addr_rule r = { .allow_private = 1, .deny = d, .ndeny = 2 };
	int closed;

	CHECK(sbx_cidr_parse("10.1.0.0/16", &d[0]) == NULL);
	snprintf(d[0].why, sizeof d[0].why, "denied 0");
	CHECK(sbx_cidr_parse("2a00:1450::/32", &d[1]) == NULL);
	snprintf(d[1].why, sizeof d[1].why, "denied 1");
	CHECK_STR(d[1].text, "2a00:1450::/32");
	sin4(&a, "168.63.129.16");
	CHECK_STR(sbx_addr_decide(sa, &r, &closed), "cloud metadata: Azure wire server (168.63.129.16)");
	sin4(&a, "168.63.129.17");
	CHECK(sbx_addr_decide(sa, &r, &closed) == NULL);
	sin4(&a, "100.100.100.200");
	CHECK_STR(sbx_addr_decide(sa, &r, &closed), "cloud metadata: Alibaba Cloud (100.100.100.200)");
	sin6(&a, "fd00:ec2::254");
	CHECK_STR(sbx_addr_decide(sa, &r, &closed), "cloud metadata: AWS (fd00:ec2::254)");
	sin4(&a, "10.1.255.255");
	CHECK_STR(sbx_addr_decide(sa, &r, &closed), "denied 0");
	sin6(&a, "::ffff:10.1.2.3");
	CHECK_STR(sbx_addr_decide(sa, &r, &closed), "denied 0");
	sin4(&a, "10.2.0.0");
	CHECK(sbx_addr_decide(sa, &r, &closed) == NULL);
	sin6(&a, "2a00:1450:4001::1");
	CHECK_STR(sbx_addr_decide(sa, &r, &closed), "denied 1");
	r.allow_private = 0;
	sin4(&a, "10.2.0.0");
	CHECK_STR(sbx_addr_decide(sa, &r, &closed), "private (10.0.0.0/8)");
	CHECK(closed == 1);
	sin4(&a, "127.0.0.1");
	CHECK_STR(sbx_addr_decide(sa, &r, &closed), "loopback (127.0.0.0/8)");
	CHECK(closed == 0);
	CHECK_STR(sbx_cidr_parse("10.0.0.0/33", &d[0]), "prefix longer than 32");
	CHECK_STR(sbx_cidr_parse("::/129", &d[0]), "prefix longer than 128");
	CHECK_STR(sbx_cidr_parse("10.0.0.1/8", &d[0]), "host bits set after the prefix");
	CHECK_STR(sbx_cidr_parse("", &d[0]), "empty");
	CHECK_STR(sbx_cidr_parse("10.0.0.0/99999999999", &d[0]), "invalid prefix length");
	CHECK(sbx_cidr_parse("0.0.0.0/0", &d[0]) == NULL);
}

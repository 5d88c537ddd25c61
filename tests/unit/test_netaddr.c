#include "unit.h"
#include "netaddr.h"

#include <arpa/inet.h>

/* "G" global, "P" private, "R" reserved, "E" exact only, "N" never, for
 * an address in text form. */
static const char *cls(const char *text)
{
	static const char *const names[] = { "G", "P", "R", "E", "N" };
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
	return names[c];
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

static void sa_of(struct sockaddr_storage *ss, const char *t)
{
	memset(ss, 0, sizeof *ss);
	if (inet_pton(AF_INET, t, &((struct sockaddr_in *)ss)->sin_addr) == 1)
		ss->ss_family = AF_INET;
	else if (inet_pton(AF_INET6, t, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1)
		ss->ss_family = AF_INET6;
}

/* The rule's verdict on an address: "" (open) or why not. */
static const char *verdict(const struct sbx_addr_rule *r, const char *t)
{
	static char why[160];
	struct sockaddr_storage ss;

	sa_of(&ss, t);
	if (!sbx_addr_decide((const struct sockaddr *)&ss, r, why, sizeof why))
		return "";
	return why;
}

/* Ranges parsed into a[], each with its refusal "denied N". */
static size_t cidrs(int *unit_failed, struct sbx_cidr *a, const char *const *texts)
{
	size_t n = 0;

	for (; texts[n]; n++) {
		CHECK(sbx_cidr_parse(texts[n], &a[n]) == NULL);
		snprintf(a[n].why, sizeof a[n].why, "denied %zu", n);
	}
	return n;
}

TEST(netaddr_ipv4_ranges_and_their_edges)
{
	edges(unit_failed, NULL, "0.0.0.0", "0.255.255.255", "1.0.0.0", "N", "G", "G");
	edges(unit_failed, "9.255.255.255", "10.0.0.0", "10.255.255.255", "11.0.0.0", "P", "G", "G");
	edges(unit_failed, "100.63.255.255", "100.64.0.0", "100.127.255.255", "100.128.0.0", "P", "G", "G");
	edges(unit_failed, "126.255.255.255", "127.0.0.0", "127.255.255.255", "128.0.0.0", "N", "G", "G");
	edges(unit_failed, "169.253.255.255", "169.254.0.0", "169.254.255.255", "169.255.0.0", "E", "G", "G");
	edges(unit_failed, "172.15.255.255", "172.16.0.0", "172.31.255.255", "172.32.0.0", "P", "G", "G");
	edges(unit_failed, "191.255.255.255", "192.0.0.0", "192.0.0.255", "192.0.1.0", "R", "G", "G");
	edges(unit_failed, "192.0.1.255", "192.0.2.0", "192.0.2.255", "192.0.3.0", "R", "G", "G");
	edges(unit_failed, "192.88.98.255", "192.88.99.0", "192.88.99.255", "192.88.100.0", "R", "G", "G");
	edges(unit_failed, "192.167.255.255", "192.168.0.0", "192.168.255.255", "192.169.0.0", "P", "G", "G");
	edges(unit_failed, "198.17.255.255", "198.18.0.0", "198.19.255.255", "198.20.0.0", "P", "G", "G");
	edges(unit_failed, "198.51.99.255", "198.51.100.0", "198.51.100.255", "198.51.101.0", "R", "G", "G");
	edges(unit_failed, "203.0.112.255", "203.0.113.0", "203.0.113.255", "203.0.114.0", "R", "G", "G");
	edges(unit_failed, "223.255.255.255", "224.0.0.0", "239.255.255.255", NULL, "N", "G", NULL);
	edges(unit_failed, NULL, "240.0.0.0", "255.255.255.254", NULL, "R", NULL, NULL);
	CHECK_STR(cls("255.255.255.255"), "N");
	CHECK_STR(cls("169.254.169.254"), "E");
	CHECK_STR(cls("168.63.129.16"), "E");
	CHECK_STR(cls("168.63.129.17"), "G");
	CHECK_STR(cls("100.100.100.200"), "E");
	CHECK_STR(cls("100.100.100.201"), "P");
	CHECK_STR(cls("1.1.1.1"), "G");
	CHECK_STR(cls("93.184.216.34"), "G");
}

TEST(netaddr_ipv6_ranges_and_their_edges)
{
	CHECK_STR(cls("::"), "N");
	CHECK_STR(cls("::1"), "N");
	CHECK_STR(cls("::2"), "N"); /* IPv4-compatible 0.0.0.2 */
	CHECK_STR(cls("::ffff:127.0.0.1"), "N");
	CHECK_STR(cls("::ffff:10.1.2.3"), "P");
	CHECK_STR(cls("::ffff:8.8.8.8"), "G");
	CHECK_STR(cls("::127.0.0.1"), "N");
	CHECK_STR(cls("::8.8.8.8"), "G");
	CHECK_STR(cls("::ffff:198.18.0.1"), "P");
	CHECK_STR(cls("::ffff:203.0.113.7"), "R");
	CHECK_STR(cls("64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff"), "R"); /* outside 2000::/3 */
	CHECK_STR(cls("64:ff9b::"), "R");
	CHECK_STR(cls("64:ff9b::ffff:ffff"), "R");
	CHECK_STR(cls("64:ff9b:1::"), "E");
	CHECK_STR(cls("64:ff9b:1:ffff:ffff:ffff:ffff:ffff"), "E");
	CHECK_STR(cls("100::"), "R");
	CHECK_STR(cls("100::ffff:ffff:ffff:ffff"), "R");
	CHECK_STR(cls("1ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), "R");
	CHECK_STR(cls("1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), "R");
	CHECK_STR(cls("2000::"), "G");
	CHECK_STR(cls("2001::"), "R");
	CHECK_STR(cls("2001:0:ffff:ffff:ffff:ffff:ffff:ffff"), "R");
	CHECK_STR(cls("2001:1::"), "G");
	CHECK_STR(cls("2001:1:ffff:ffff:ffff:ffff:ffff:ffff"), "G");
	CHECK_STR(cls("2001:2::"), "R");
	CHECK_STR(cls("2001:2:0:ffff:ffff:ffff:ffff:ffff"), "R");
	CHECK_STR(cls("2001:2:1::"), "G");
	CHECK_STR(cls("2001:db7:ffff:ffff:ffff:ffff:ffff:ffff"), "G");
	CHECK_STR(cls("2001:db8::"), "R");
	CHECK_STR(cls("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff"), "R");
	CHECK_STR(cls("2001:db9::"), "G");
	CHECK_STR(cls("2001:4860:4860::8888"), "G");
	CHECK_STR(cls("2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), "G");
	CHECK_STR(cls("2002::"), "R");
	CHECK_STR(cls("2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), "R");
	CHECK_STR(cls("2003::"), "G");
	CHECK_STR(cls("3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), "G");
	CHECK_STR(cls("3fff::"), "R");
	CHECK_STR(cls("3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff"), "R");
	CHECK_STR(cls("3fff:1000::"), "G");
	CHECK_STR(cls("4000::"), "R");
	CHECK_STR(cls("fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), "R");
	CHECK_STR(cls("fc00::"), "P");
	CHECK_STR(cls("fd00:ec2::253"), "P");
	CHECK_STR(cls("fd00:ec2::254"), "E");
	CHECK_STR(cls("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), "P");
	CHECK_STR(cls("fe00::"), "R");
	CHECK_STR(cls("fe80::"), "E");
	CHECK_STR(cls("febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), "E");
	CHECK_STR(cls("fec0::"), "P");
	CHECK_STR(cls("feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), "P");
	CHECK_STR(cls("ff00::"), "N");
	CHECK_STR(cls("ff02::1"), "N");
}

TEST(netaddr_reasons_name_what_opens_each_address)
{
	struct sockaddr_storage own[2];
	struct sbx_addr_rule r = { .own = own, .nown = 2 };

	sa_of(&own[0], "198.18.0.1");
	sa_of(&own[1], "2001:4860::1");
	CHECK_STR(verdict(&r, "8.8.8.8"), "");
	CHECK_STR(verdict(&r, "2001:4860::2"), "");
	CHECK_STR(verdict(&r, "10.1.1.1"), "private (10.0.0.0/8); --allow-address 10.0.0.0/8 or --allow-private-networks opens it");
	CHECK_STR(verdict(&r, "198.18.0.2"),
		  "benchmarking or fake-IP DNS (198.18.0.0/15); --allow-address 198.18.0.0/15 or --allow-private-networks opens it");
	CHECK_STR(verdict(&r, "203.0.113.7"), "documentation (203.0.113.0/24); --allow-address 203.0.113.0/24 opens it");
	CHECK_STR(verdict(&r, "::ffff:203.0.113.7"), "documentation (203.0.113.0/24); --allow-address 203.0.113.0/24 opens it");
	CHECK_STR(verdict(&r, "2001:db8::7"), "documentation (2001:db8::/32); --allow-address 2001:db8::/32 opens it");
	CHECK_STR(verdict(&r, "240.0.0.1"), "reserved (240.0.0.0/4); --allow-address 240.0.0.0/4 opens it");
	CHECK_STR(verdict(&r, "4000::1"), "reserved (4000::/2); --allow-address 4000::/2 opens it");
	CHECK_STR(verdict(&r, "127.0.0.1"), "loopback (127.0.0.0/8); no option opens it");
	CHECK_STR(verdict(&r, "::ffff:127.0.0.1"), "loopback (127.0.0.0/8); no option opens it");
	CHECK_STR(verdict(&r, "::1"), "loopback (::1); no option opens it");
	CHECK_STR(verdict(&r, "::"), "unspecified (::); no option opens it");
	CHECK_STR(verdict(&r, "0.0.0.0"), "unspecified (0.0.0.0/8); no option opens it");
	CHECK_STR(verdict(&r, "224.0.0.1"), "multicast (224.0.0.0/4); no option opens it");
	CHECK_STR(verdict(&r, "ff02::1"), "multicast (ff00::/8); no option opens it");
	CHECK_STR(verdict(&r, "169.254.169.254"),
		  "cloud metadata (169.254.169.254); only --allow-address 169.254.169.254/32 opens it");
	CHECK_STR(verdict(&r, "169.254.1.1"), "link-local (169.254.0.0/16); only --allow-address 169.254.1.1/32 opens it");
	CHECK_STR(verdict(&r, "fd00:ec2::254"), "cloud metadata: AWS (fd00:ec2::254); only --allow-address fd00:ec2::254/128 opens it");
	CHECK_STR(verdict(&r, "fe80::1"), "link-local (fe80::/10); only --allow-address fe80::1/128 opens it");
	CHECK_STR(verdict(&r, "2001:4860::1"), "an address of this host; only --allow-address 2001:4860::1/128 opens it");
	r.allow_private = 1;
	CHECK_STR(verdict(&r, "10.1.1.1"), "");
	CHECK_STR(verdict(&r, "198.18.0.1"), "an address of this host; only --allow-address 198.18.0.1/32 opens it");
	CHECK_STR(verdict(&r, "::ffff:198.18.0.1"), "an address of this host; only --allow-address 198.18.0.1/32 opens it");
	CHECK_STR(verdict(&r, "203.0.113.7"), "documentation (203.0.113.0/24); --allow-address 203.0.113.0/24 opens it");
	CHECK_STR(verdict(&r, "100.100.100.200"),
		  "cloud metadata: Alibaba Cloud (100.100.100.200); only --allow-address 100.100.100.200/32 opens it");
	CHECK_STR(verdict(&r, "168.63.129.16"),
		  "cloud metadata: Azure wire server (168.63.129.16); only --allow-address 168.63.129.16/32 opens it");
}

TEST(netaddr_allow_address_opens_covered_ranges_never_loopback_metadata_or_own_unless_exact)
{
	static const char *const all[] = { "0.0.0.0/0", "::/0", NULL };
	static const char *const exact[] = { "169.254.169.254", "198.18.0.1/32", "fd00:ec2::254/128", "fe80::1",
					     "2001:4860::1", NULL };
	struct sbx_cidr a[8];
	struct sockaddr_storage own[2];
	struct sbx_addr_rule r = { .own = own, .nown = 2, .allow = a };

	sa_of(&own[0], "198.18.0.1");
	sa_of(&own[1], "2001:4860::1");
	r.nallow = cidrs(unit_failed, a, all);
	CHECK_STR(verdict(&r, "203.0.113.7"), "");
	CHECK_STR(verdict(&r, "10.1.1.1"), "");
	CHECK_STR(verdict(&r, "198.18.0.2"), "");
	CHECK_STR(verdict(&r, "2001:db8::7"), "");
	CHECK_STR(verdict(&r, "fd00::1"), "");
	CHECK_STR(verdict(&r, "::ffff:203.0.113.7"), "");
	CHECK_STR(verdict(&r, "127.0.0.1"), "loopback (127.0.0.0/8); no option opens it");
	CHECK_STR(verdict(&r, "::ffff:127.0.0.1"), "loopback (127.0.0.0/8); no option opens it");
	CHECK_STR(verdict(&r, "::127.0.0.1"), "loopback (127.0.0.0/8); no option opens it");
	CHECK_STR(verdict(&r, "::1"), "loopback (::1); no option opens it");
	CHECK_STR(verdict(&r, "::"), "unspecified (::); no option opens it");
	CHECK_STR(verdict(&r, "0.0.0.0"), "unspecified (0.0.0.0/8); no option opens it");
	CHECK_STR(verdict(&r, "255.255.255.255"), "broadcast (255.255.255.255); no option opens it");
	CHECK_STR(verdict(&r, "169.254.169.254"),
		  "cloud metadata (169.254.169.254); only --allow-address 169.254.169.254/32 opens it");
	CHECK_STR(verdict(&r, "100.100.100.200"),
		  "cloud metadata: Alibaba Cloud (100.100.100.200); only --allow-address 100.100.100.200/32 opens it");
	CHECK_STR(verdict(&r, "fd00:ec2::254"), "cloud metadata: AWS (fd00:ec2::254); only --allow-address fd00:ec2::254/128 opens it");
	CHECK_STR(verdict(&r, "64:ff9b:1::1"), "local NAT64 (64:ff9b:1::/48); only --allow-address 64:ff9b:1::1/128 opens it");
	CHECK_STR(verdict(&r, "198.18.0.1"), "an address of this host; only --allow-address 198.18.0.1/32 opens it");
	/* Addresses that carry IPv4 addresses: each carried one is judged too. */
	CHECK_STR(verdict(&r, "64:ff9b::808:808"), "");
	CHECK_STR(verdict(&r, "64:ff9b::7f00:1"), "NAT64 (64:ff9b::/96) carries 127.0.0.1: loopback (127.0.0.0/8); no option opens it");
	CHECK_STR(verdict(&r, "64:ff9b::a9fe:a9fe"), "NAT64 (64:ff9b::/96) carries 169.254.169.254: cloud metadata (169.254.169.254); "
		  "only --allow-address 169.254.169.254/32 opens it");
	CHECK_STR(verdict(&r, "2002:7f00:1::1"), "6to4 (2002::/16) carries 127.0.0.1: loopback (127.0.0.0/8); no option opens it");
	CHECK_STR(verdict(&r, "2002:c612:1::1"),
		  "6to4 (2002::/16) carries 198.18.0.1: an address of this host; only --allow-address 198.18.0.1/32 opens it");
	CHECK_STR(verdict(&r, "2002:a00:1::1"), "");
	/* Teredo: the server 8.8.8.8, the client 127.0.0.1 inverted. */
	CHECK_STR(verdict(&r, "2001:0:808:808::80ff:fffe"), "Teredo (2001::/32) carries 127.0.0.1: loopback (127.0.0.0/8); no option opens it");
	CHECK_STR(verdict(&r, "2001:0:808:808::f7f7:f7f7"), "");
	/* Without ::/0 the 6to4 range itself stays closed. */
	r.nallow = 1;
	CHECK_STR(verdict(&r, "2002:a00:1::1"), "6to4 (2002::/16); --allow-address 2002::/16 opens it");
	/* Named exactly: metadata, link-local and own addresses open. */
	r.nallow = cidrs(unit_failed, a, exact);
	CHECK_STR(verdict(&r, "169.254.169.254"), "");
	CHECK_STR(verdict(&r, "::ffff:169.254.169.254"), "");
	CHECK_STR(verdict(&r, "169.254.169.253"), "link-local (169.254.0.0/16); only --allow-address 169.254.169.253/32 opens it");
	CHECK_STR(verdict(&r, "198.18.0.1"), "");
	CHECK_STR(verdict(&r, "198.18.0.2"),
		  "benchmarking or fake-IP DNS (198.18.0.0/15); --allow-address 198.18.0.0/15 or --allow-private-networks opens it");
	CHECK_STR(verdict(&r, "fd00:ec2::254"), "");
	CHECK_STR(verdict(&r, "fe80::1"), "");
	CHECK_STR(verdict(&r, "2001:4860::1"), "");
	/* A v6 range never covers an IPv4 address in its mapped form. */
	CHECK(sbx_cidr_parse("::/64", &a[0]) == NULL);
	r.nallow = 1;
	CHECK_STR(verdict(&r, "::ffff:203.0.113.7"), "documentation (203.0.113.0/24); --allow-address 203.0.113.0/24 opens it");
}

TEST(netaddr_deny_wins_over_allow_and_overlapping_ranges_are_a_union)
{
	static const char *const allow[] = { "10.0.0.0/8", "10.1.0.0/16", "203.0.113.0/25", "203.0.113.128/25",
					     "2001:db8::/32", NULL };
	static const char *const deny[] = { "10.1.2.0/24", "2001:db8:1::/48", NULL };
	struct sbx_cidr a[8], d[4];
	struct sbx_addr_rule r = { .allow = a, .deny = d };

	r.nallow = cidrs(unit_failed, a, allow);
	r.ndeny = cidrs(unit_failed, d, deny);
	CHECK_STR(verdict(&r, "10.1.1.1"), "");
	CHECK_STR(verdict(&r, "10.9.1.1"), "");
	CHECK_STR(verdict(&r, "10.1.2.3"), "denied 0");
	CHECK_STR(verdict(&r, "::ffff:10.1.2.3"), "denied 0");
	CHECK_STR(verdict(&r, "203.0.113.0"), "");
	CHECK_STR(verdict(&r, "203.0.113.255"), "");
	CHECK_STR(verdict(&r, "2001:db8::1"), "");
	CHECK_STR(verdict(&r, "2001:db8:1::1"), "denied 1");
	CHECK_STR(verdict(&r, "192.0.2.1"), "documentation (192.0.2.0/24); --allow-address 192.0.2.0/24 opens it");
	/* A NAT64 address carrying a denied IPv4 address is refused by it. */
	CHECK(sbx_cidr_parse("64:ff9b::/96", &a[0]) == NULL);
	CHECK_STR(verdict(&r, "64:ff9b::a01:203"), "NAT64 (64:ff9b::/96) carries 10.1.2.3: denied 0");
	/* Metadata stays exact even when a deny names it: deny still wins. */
	CHECK(sbx_cidr_parse("168.63.129.16", &a[0]) == NULL);
	CHECK(sbx_cidr_parse("168.63.129.16", &d[0]) == NULL);
	snprintf(d[0].why, sizeof d[0].why, "denied 0");
	CHECK_STR(verdict(&r, "168.63.129.16"), "denied 0");
}

TEST(netaddr_cidr_parse_is_strict)
{
	struct sbx_cidr c;

	CHECK(sbx_cidr_parse("0.0.0.0/0", &c) == NULL);
	CHECK_STR(c.text, "0.0.0.0/0");
	CHECK(sbx_cidr_parse("203.0.113.7", &c) == NULL);
	CHECK_STR(c.text, "203.0.113.7/32");
	CHECK(sbx_cidr_parse("2001:DB8:0::/32", &c) == NULL);
	CHECK_STR(c.text, "2001:db8::/32");
	CHECK(sbx_cidr_parse("fe80::1", &c) == NULL);
	CHECK_STR(c.text, "fe80::1/128");
	CHECK_STR(sbx_cidr_parse("", &c), "empty");
	CHECK_STR(sbx_cidr_parse("10.0.0.0/33", &c), "prefix longer than 32");
	CHECK_STR(sbx_cidr_parse("::/129", &c), "prefix longer than 128");
	CHECK_STR(sbx_cidr_parse("10.0.0.1/8", &c), "host bits set after the prefix");
	CHECK_STR(sbx_cidr_parse("2001:db8::1/32", &c), "host bits set after the prefix");
	CHECK_STR(sbx_cidr_parse("10.0.0.0/99999999999", &c), "invalid prefix length");
	CHECK_STR(sbx_cidr_parse("10.0.0.0/08", &c), "leading zero in the prefix length");
	CHECK_STR(sbx_cidr_parse("10.0.0.0/00", &c), "leading zero in the prefix length");
	CHECK_STR(sbx_cidr_parse("10.0.0.0/", &c), "prefix length missing");
	CHECK_STR(sbx_cidr_parse("10.0.0.0/8/8", &c), "invalid prefix length");
	CHECK_STR(sbx_cidr_parse("10.0.0.0/+8", &c), "invalid prefix length");
	CHECK_STR(sbx_cidr_parse("10.0.0.0/ 8", &c), "invalid prefix length");
	CHECK_STR(sbx_cidr_parse("010.0.0.0/8", &c), "not an address");
	CHECK_STR(sbx_cidr_parse("10.0.0/24", &c), "not an address");
	CHECK_STR(sbx_cidr_parse("0x0a.0.0.0/8", &c), "not an address");
	CHECK_STR(sbx_cidr_parse("167772160/8", &c), "not an address");
	CHECK_STR(sbx_cidr_parse("fe80::1%lo/128", &c), "not an address");
	CHECK_STR(sbx_cidr_parse(" 10.0.0.0/8", &c), "not an address");
	CHECK_STR(sbx_cidr_parse("10.0.0.0/8\n", &c), "control character");
	CHECK_STR(sbx_cidr_parse("10.0.0.0\t/8", &c), "control character");
	CHECK_STR(sbx_cidr_parse("::ffff:10.0.0.0/104", &c), "an IPv4-mapped range: give it in IPv4 form");
	CHECK_STR(sbx_cidr_parse("::ffff:10.0.0.1", &c), "an IPv4-mapped range: give it in IPv4 form");
	CHECK_STR(sbx_cidr_parse("::/96", &c), "an IPv4-compatible range: give it in IPv4 form");
	CHECK_STR(sbx_cidr_parse("::a00:0/104", &c), "an IPv4-compatible range: give it in IPv4 form");
	CHECK_STR(sbx_cidr_parse("::10.0.0.1", &c), "an IPv4-compatible range: give it in IPv4 form");
	CHECK(sbx_cidr_parse("::/95", &c) == NULL);
	CHECK(sbx_cidr_parse("::1", &c) == NULL);
	CHECK(sbx_cidr_parse("::/128", &c) == NULL);
	CHECK(sbx_cidr_parse("::fffe:0:0/95", &c) == NULL);
}

static const char *opens(const char *t)
{
	static char why[160];
	struct sbx_cidr c;

	if (sbx_cidr_parse(t, &c))
		return "?";
	return sbx_cidr_opens(&c, why, sizeof why) ? why : "";
}

TEST(netaddr_an_allowed_range_must_open_something)
{
	CHECK_STR(opens("203.0.113.0/24"), "");
	CHECK_STR(opens("203.0.113.0/25"), "");
	CHECK_STR(opens("203.0.0.0/16"), "");
	CHECK_STR(opens("0.0.0.0/0"), "");
	CHECK_STR(opens("::/0"), "");
	CHECK_STR(opens("2001:db8::/32"), "");
	CHECK_STR(opens("2001::/16"), "");
	CHECK_STR(opens("64:ff9b::/96"), "");
	CHECK_STR(opens("169.254.169.254"), "");
	CHECK_STR(opens("fd00:ec2::254/128"), "");
	CHECK_STR(opens("8.8.8.8/32"), ""); /* the host's own, maybe */
	CHECK_STR(opens("8.0.0.0/8"), "every address in it is global (open without it) or never opened");
	CHECK_STR(opens("2a00::/16"), "every address in it is global (open without it) or never opened");
	CHECK_STR(opens("127.0.0.0/8"), "loopback (127.0.0.0/8) is never opened");
	CHECK_STR(opens("127.0.0.1"), "loopback (127.0.0.0/8) is never opened");
	CHECK_STR(opens("::1"), "loopback (::1) is never opened");
	CHECK_STR(opens("::/128"), "unspecified (::) is never opened");
	CHECK_STR(opens("224.0.0.0/8"), "multicast (224.0.0.0/4) is never opened");
	CHECK_STR(opens("169.254.0.0/16"), "link-local (169.254.0.0/16) opens only address by address (ADDR/32)");
	CHECK_STR(opens("169.254.169.0/24"), "link-local (169.254.0.0/16) opens only address by address (ADDR/32)");
	CHECK_STR(opens("fe80::/64"), "link-local (fe80::/10) opens only address by address (ADDR/128)");
	CHECK_STR(opens("64:ff9b::7f00:1/128"), "it carries 127.0.0.1, loopback (127.0.0.0/8), which is never opened");
}

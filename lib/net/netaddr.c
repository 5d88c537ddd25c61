#include "netaddr.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct range4 {
	uint32_t net;
	unsigned bits;
	enum sbx_addr_class cls;
	const char *name;
};

#define IP4(a, b, c, d) (((uint32_t)(a) << 24) | ((b) << 16) | ((c) << 8) | (d))

/* The special-purpose registry (RFC 6890 and successors), reduced to the
 * entries that are not globally reachable. Order matters only where ranges
 * nest: the first match wins. */
static const struct range4 ranges4[] = {
	/* Globally routable, or inside a range --allow-private-networks
	 * opens, yet a cloud's metadata or control service: never. */
	{ IP4(168, 63, 129, 16), 32, SBX_ADDR_FORBIDDEN, "cloud metadata: Azure wire server (168.63.129.16)" },
	{ IP4(100, 100, 100, 200), 32, SBX_ADDR_FORBIDDEN, "cloud metadata: Alibaba Cloud (100.100.100.200)" },
	{ IP4(0, 0, 0, 0), 8, SBX_ADDR_FORBIDDEN, "unspecified (0.0.0.0/8)" },
	{ IP4(10, 0, 0, 0), 8, SBX_ADDR_PRIVATE, "private (10.0.0.0/8)" },
	{ IP4(100, 64, 0, 0), 10, SBX_ADDR_PRIVATE, "shared address space (100.64.0.0/10)" },
	{ IP4(127, 0, 0, 0), 8, SBX_ADDR_FORBIDDEN, "loopback (127.0.0.0/8)" },
	{ IP4(169, 254, 0, 0), 16, SBX_ADDR_FORBIDDEN, "link-local (169.254.0.0/16)" },
	{ IP4(172, 16, 0, 0), 12, SBX_ADDR_PRIVATE, "private (172.16.0.0/12)" },
	{ IP4(192, 0, 0, 0), 24, SBX_ADDR_FORBIDDEN, "IETF protocol assignments (192.0.0.0/24)" },
	{ IP4(192, 0, 2, 0), 24, SBX_ADDR_FORBIDDEN, "documentation (192.0.2.0/24)" },
	{ IP4(192, 88, 99, 0), 24, SBX_ADDR_FORBIDDEN, "6to4 relay anycast (192.88.99.0/24)" },
	{ IP4(192, 168, 0, 0), 16, SBX_ADDR_PRIVATE, "private (192.168.0.0/16)" },
	/* Also where fake-IP DNS resolvers hand out their mappings. */
	{ IP4(198, 18, 0, 0), 15, SBX_ADDR_PRIVATE, "benchmarking or fake-IP DNS (198.18.0.0/15)" },
	{ IP4(198, 51, 100, 0), 24, SBX_ADDR_FORBIDDEN, "documentation (198.51.100.0/24)" },
	{ IP4(203, 0, 113, 0), 24, SBX_ADDR_FORBIDDEN, "documentation (203.0.113.0/24)" },
	{ IP4(224, 0, 0, 0), 4, SBX_ADDR_FORBIDDEN, "multicast (224.0.0.0/4)" },
	{ IP4(255, 255, 255, 255), 32, SBX_ADDR_FORBIDDEN, "broadcast (255.255.255.255)" },
	{ IP4(240, 0, 0, 0), 4, SBX_ADDR_FORBIDDEN, "reserved (240.0.0.0/4)" },
};

enum sbx_addr_class sbx_addr4_class(const struct in_addr *a, const char **why)
{
	uint32_t ip = ntohl(a->s_addr);

	for (size_t i = 0; i < sizeof ranges4 / sizeof ranges4[0]; i++) {
		uint32_t mask = ranges4[i].bits ? ~0U << (32 - ranges4[i].bits) : 0;
		if ((ip & mask) == ranges4[i].net) {
			*why = ranges4[i].name;
			return ranges4[i].cls;
		}
	}
	*why = "global";
	return SBX_ADDR_GLOBAL;
}

struct range6 {
	uint8_t net[16];
	unsigned bits;
	enum sbx_addr_class cls;
	const char *name;
};

static const struct range6 ranges6[] = {
	{ { 0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54 }, 128, SBX_ADDR_FORBIDDEN,
	  "cloud metadata: AWS (fd00:ec2::254)" },
	{ { 0 }, 128, SBX_ADDR_FORBIDDEN, "unspecified (::)" },
	{ { [15] = 1 }, 128, SBX_ADDR_FORBIDDEN, "loopback (::1)" },
	{ { 0, 0x64, 0xff, 0x9b }, 96, SBX_ADDR_FORBIDDEN, "NAT64 (64:ff9b::/96)" },
	{ { 0, 0x64, 0xff, 0x9b, 0, 1 }, 48, SBX_ADDR_FORBIDDEN, "local NAT64 (64:ff9b:1::/48)" },
	{ { 0x01, 0x00 }, 64, SBX_ADDR_FORBIDDEN, "discard (100::/64)" },
	{ { 0x20, 0x01, 0x0d, 0xb8 }, 32, SBX_ADDR_FORBIDDEN, "documentation (2001:db8::/32)" },
	{ { 0x20, 0x01, 0x00, 0x00 }, 32, SBX_ADDR_FORBIDDEN, "Teredo (2001::/32)" },
	{ { 0x20, 0x02 }, 16, SBX_ADDR_FORBIDDEN, "6to4 (2002::/16)" },
	{ { 0xfc }, 7, SBX_ADDR_PRIVATE, "unique local (fc00::/7)" },
	{ { 0xfe, 0x80 }, 10, SBX_ADDR_FORBIDDEN, "link-local (fe80::/10)" },
	{ { 0xfe, 0xc0 }, 10, SBX_ADDR_PRIVATE, "site-local (fec0::/10)" },
	{ { 0xff }, 8, SBX_ADDR_FORBIDDEN, "multicast (ff00::/8)" },
};

static int prefix_eq(const uint8_t *a, const uint8_t *net, unsigned bits)
{
	unsigned full = bits / 8, rest = bits % 8;

	if (memcmp(a, net, full))
		return 0;
	if (rest) {
		uint8_t mask = (uint8_t)(0xff << (8 - rest));
		if ((a[full] & mask) != (net[full] & mask))
			return 0;
	}
	return 1;
}

int sbx_addr6_embedded4(const struct in6_addr *a, struct in_addr *v4)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	static const uint8_t compat[12] = { 0 };
	const uint8_t *b = a->s6_addr;

	if (memcmp(b, mapped, 12) && memcmp(b, compat, 12))
		return 0;
	/* :: and ::1 are IPv6's own unspecified and loopback addresses. */
	if (!memcmp(b, compat, 12) && !b[12] && !b[13] && !b[14] && b[15] <= 1)
		return 0;
	memcpy(&v4->s_addr, b + 12, 4);
	return 1;
}

enum sbx_addr_class sbx_addr6_class(const struct in6_addr *a, const char **why)
{
	struct in_addr v4;

	if (sbx_addr6_embedded4(a, &v4))
		return sbx_addr4_class(&v4, why);
	for (size_t i = 0; i < sizeof ranges6 / sizeof ranges6[0]; i++) {
		if (prefix_eq(a->s6_addr, ranges6[i].net, ranges6[i].bits)) {
			*why = ranges6[i].name;
			return ranges6[i].cls;
		}
	}
	/* Only 2000::/3 is allocated for global unicast; the rest is unused. */
	if ((a->s6_addr[0] & 0xe0) != 0x20) {
		*why = "reserved (outside 2000::/3)";
		return SBX_ADDR_FORBIDDEN;
	}
	*why = "global";
	return SBX_ADDR_GLOBAL;
}

/* Compare as the address actually dialled: mapped forms as IPv4. */
static int same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
	struct in_addr x, y;
	int ax = 0, bx = 0;

	if (a->sa_family == AF_INET) {
		x = ((const struct sockaddr_in *)a)->sin_addr;
		ax = 1;
	} else if (a->sa_family == AF_INET6) {
		ax = sbx_addr6_embedded4(&((const struct sockaddr_in6 *)a)->sin6_addr, &x);
	}
	if (b->sa_family == AF_INET) {
		y = ((const struct sockaddr_in *)b)->sin_addr;
		bx = 1;
	} else if (b->sa_family == AF_INET6) {
		bx = sbx_addr6_embedded4(&((const struct sockaddr_in6 *)b)->sin6_addr, &y);
	}
	if (ax || bx)
		return ax && bx && x.s_addr == y.s_addr;
	if (a->sa_family != AF_INET6 || b->sa_family != AF_INET6)
		return 0;
	return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
}

/* The address as dialled: IPv4 for the mapped and compatible forms. */
static int dialled(const struct sockaddr *sa, uint8_t out[16])
{
	struct in_addr v4;

	if (sa->sa_family == AF_INET) {
		memcpy(out, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return AF_INET;
	}
	if (sa->sa_family != AF_INET6)
		return 0;
	if (sbx_addr6_embedded4(&((const struct sockaddr_in6 *)sa)->sin6_addr, &v4)) {
		memcpy(out, &v4, 4);
		return AF_INET;
	}
	memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	return AF_INET6;
}

const char *sbx_cidr_parse(const char *s, struct sbx_cidr *c)
{
	char a[INET6_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	unsigned max;

	memset(c, 0, sizeof *c);
	if (!*s)
		return "empty";
	if (n == 0 || n >= sizeof a)
		return "not an address";
	memcpy(a, s, n);
	a[n] = '\0';
	if (inet_pton(AF_INET, a, c->addr) == 1)
		c->family = AF_INET;
	else if (inet_pton(AF_INET6, a, c->addr) == 1)
		c->family = AF_INET6;
	else
		return "not an address";
	max = c->family == AF_INET ? 32 : 128;
	c->bits = max;
	if (slash) {
		const char *d = slash + 1;
		unsigned v = 0;
		if (!*d)
			return "prefix length missing";
		for (; *d; d++) {
			if (*d < '0' || *d > '9' || v > 1000)
				return "invalid prefix length";
			v = v * 10 + (unsigned)(*d - '0');
		}
		if ((slash[1] == '0' && slash[2]) || v > max)
			return c->family == AF_INET ? "prefix longer than 32" : "prefix longer than 128";
		c->bits = v;
	}
	/* Host bits set would make the range mean something else than it
	 * reads: say so rather than guess. */
	for (unsigned i = c->bits; i < max; i++)
		if (c->addr[i / 8] & (0x80 >> (i % 8)))
			return "host bits set after the prefix";
	if (c->family == AF_INET6) {
		struct in_addr v4;
		if (sbx_addr6_embedded4((const struct in6_addr *)c->addr, &v4) && c->bits >= 96)
			return "an IPv4-mapped range: give it in IPv4 form";
	}
	inet_ntop(c->family, c->addr, a, sizeof a);
	snprintf(c->text, sizeof c->text, "%s/%u", a, c->bits);
	return NULL;
}

int sbx_cidr_same(const struct sbx_cidr *a, const struct sbx_cidr *b)
{
	return a->family == b->family && a->bits == b->bits && !memcmp(a->addr, b->addr, 16);
}

static int cidr_match(const struct sbx_cidr *c, int fam, const uint8_t *a)
{
	return fam == c->family && prefix_eq(a, c->addr, c->bits);
}

const char *sbx_addr_decide(const struct sockaddr *sa, const struct sbx_addr_rule *r, int *closed_private)
{
	enum sbx_addr_class c;
	const char *why;
	uint8_t a[16];
	int fam;

	*closed_private = 0;
	if (sa->sa_family == AF_INET)
		c = sbx_addr4_class(&((const struct sockaddr_in *)sa)->sin_addr, &why);
	else if (sa->sa_family == AF_INET6)
		c = sbx_addr6_class(&((const struct sockaddr_in6 *)sa)->sin6_addr, &why);
	else
		return "not an internet address";
	if (c == SBX_ADDR_FORBIDDEN)
		return why;
	fam = dialled(sa, a);
	for (size_t i = 0; i < r->ndeny; i++)
		if (cidr_match(&r->deny[i], fam, a))
			return r->deny[i].why;
	if (c == SBX_ADDR_PRIVATE && !r->allow_private) {
		*closed_private = 1;
		return why;
	}
	for (size_t i = 0; i < r->nown; i++)
		if (same_addr(sa, (const struct sockaddr *)&r->own[i]))
			return "an address of this host";
	return NULL;
}

void sbx_addr_text(const struct sockaddr *sa, char *buf, size_t sz)
{
	const void *p = NULL;

	if (sa->sa_family == AF_INET)
		p = &((const struct sockaddr_in *)sa)->sin_addr;
	else if (sa->sa_family == AF_INET6)
		p = &((const struct sockaddr_in6 *)sa)->sin6_addr;
	if (!p || !inet_ntop(sa->sa_family, p, buf, (socklen_t)sz))
		snprintf(buf, sz, "?");
}

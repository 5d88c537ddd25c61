#include "netaddr.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Where an IPv6 range carries IPv4 addresses. */
enum { CARRY_NONE, CARRY_NAT64, CARRY_6TO4, CARRY_TEREDO };

struct range {
	int family;
	uint8_t net[16];
	unsigned bits;
	enum sbx_addr_class cls;
	const char *name;
	int carries;
};

#define V4(a, b, c, d) AF_INET, { a, b, c, d }
#define V6(...) AF_INET6, { __VA_ARGS__ }

/* The special-purpose registries (RFC 6890 and successors), reduced to the
 * entries that are not globally reachable, and the cloud metadata
 * services. The first match wins, so a range nested in another comes
 * before it. The addresses a range holds pass or not by its class (see
 * netaddr.h). */
static const struct range ranges[] = {
	/* Cloud metadata and control services: globally routable or inside
	 * an openable range, yet only ever opened one by one. */
	{ V4(168, 63, 129, 16), 32, SBX_ADDR_EXACT, "cloud metadata: Azure wire server (168.63.129.16)", 0 },
	{ V4(100, 100, 100, 200), 32, SBX_ADDR_EXACT, "cloud metadata: Alibaba Cloud (100.100.100.200)", 0 },
	{ V4(169, 254, 169, 254), 32, SBX_ADDR_EXACT, "cloud metadata (169.254.169.254)", 0 },
	{ V6(0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54), 128, SBX_ADDR_EXACT,
	  "cloud metadata: AWS (fd00:ec2::254)", 0 },

	{ V4(0, 0, 0, 0), 8, SBX_ADDR_NEVER, "unspecified (0.0.0.0/8)", 0 },
	{ V4(10, 0, 0, 0), 8, SBX_ADDR_PRIVATE, "private (10.0.0.0/8)", 0 },
	{ V4(100, 64, 0, 0), 10, SBX_ADDR_PRIVATE, "shared address space (100.64.0.0/10)", 0 },
	{ V4(127, 0, 0, 0), 8, SBX_ADDR_NEVER, "loopback (127.0.0.0/8)", 0 },
	{ V4(169, 254, 0, 0), 16, SBX_ADDR_EXACT, "link-local (169.254.0.0/16)", 0 },
	{ V4(172, 16, 0, 0), 12, SBX_ADDR_PRIVATE, "private (172.16.0.0/12)", 0 },
	{ V4(192, 0, 0, 0), 24, SBX_ADDR_RESERVED, "IETF protocol assignments (192.0.0.0/24)", 0 },
	{ V4(192, 0, 2, 0), 24, SBX_ADDR_RESERVED, "documentation (192.0.2.0/24)", 0 },
	{ V4(192, 88, 99, 0), 24, SBX_ADDR_RESERVED, "6to4 relay anycast (192.88.99.0/24)", 0 },
	{ V4(192, 168, 0, 0), 16, SBX_ADDR_PRIVATE, "private (192.168.0.0/16)", 0 },
	/* Also where fake-IP DNS resolvers hand out their mappings. */
	{ V4(198, 18, 0, 0), 15, SBX_ADDR_PRIVATE, "benchmarking or fake-IP DNS (198.18.0.0/15)", 0 },
	{ V4(198, 51, 100, 0), 24, SBX_ADDR_RESERVED, "documentation (198.51.100.0/24)", 0 },
	{ V4(203, 0, 113, 0), 24, SBX_ADDR_RESERVED, "documentation (203.0.113.0/24)", 0 },
	{ V4(224, 0, 0, 0), 4, SBX_ADDR_NEVER, "multicast (224.0.0.0/4)", 0 },
	{ V4(255, 255, 255, 255), 32, SBX_ADDR_NEVER, "broadcast (255.255.255.255)", 0 },
	{ V4(240, 0, 0, 0), 4, SBX_ADDR_RESERVED, "reserved (240.0.0.0/4)", 0 },

	{ V6(0), 128, SBX_ADDR_NEVER, "unspecified (::)", 0 },
	{ V6([15] = 1), 128, SBX_ADDR_NEVER, "loopback (::1)", 0 },
	{ V6(0, 0x64, 0xff, 0x9b), 96, SBX_ADDR_RESERVED, "NAT64 (64:ff9b::/96)", CARRY_NAT64 },
	/* Its IPv4 address sits where the network's prefix length puts it,
	 * which the broker cannot know. */
	{ V6(0, 0x64, 0xff, 0x9b, 0, 1), 48, SBX_ADDR_EXACT, "local NAT64 (64:ff9b:1::/48)", 0 },
	{ V6(0x01, 0x00), 64, SBX_ADDR_RESERVED, "discard (100::/64)", 0 },
	{ V6(0x20, 0x01, 0x0d, 0xb8), 32, SBX_ADDR_RESERVED, "documentation (2001:db8::/32)", 0 },
	{ V6(0x20, 0x01, 0x00, 0x02, 0x00, 0x00), 48, SBX_ADDR_RESERVED, "benchmarking (2001:2::/48)", 0 },
	{ V6(0x20, 0x01, 0x00, 0x00), 32, SBX_ADDR_RESERVED, "Teredo (2001::/32)", CARRY_TEREDO },
	{ V6(0x20, 0x02), 16, SBX_ADDR_RESERVED, "6to4 (2002::/16)", CARRY_6TO4 },
	{ V6(0x3f, 0xff, 0x00), 20, SBX_ADDR_RESERVED, "documentation (3fff::/20)", 0 },
	{ V6(0xfc), 7, SBX_ADDR_PRIVATE, "unique local (fc00::/7)", 0 },
	{ V6(0xfe, 0x80), 10, SBX_ADDR_EXACT, "link-local (fe80::/10)", 0 },
	{ V6(0xfe, 0xc0), 10, SBX_ADDR_PRIVATE, "site-local (fec0::/10)", 0 },
	{ V6(0xff), 8, SBX_ADDR_NEVER, "multicast (ff00::/8)", 0 },
	/* Only 2000::/3 is allocated for global unicast; the rest is unused. */
	{ V6(0x00), 3, SBX_ADDR_RESERVED, "reserved (::/3)", 0 },
	{ V6(0x40), 2, SBX_ADDR_RESERVED, "reserved (4000::/2)", 0 },
	{ V6(0x80), 1, SBX_ADDR_RESERVED, "reserved (8000::/1)", 0 },
};

#define NRANGES (sizeof ranges / sizeof ranges[0])

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

static unsigned max_bits(int family)
{
	return family == AF_INET ? 32 : 128;
}

/* The range of an address as dialled (4 or 16 bytes), NULL: global. */
static const struct range *range_of(int family, const uint8_t *a)
{
	for (size_t i = 0; i < NRANGES; i++)
		if (ranges[i].family == family && prefix_eq(a, ranges[i].net, ranges[i].bits))
			return &ranges[i];
	return NULL;
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

enum sbx_addr_class sbx_addr4_class(const struct in_addr *a, const char **why)
{
	const struct range *g = range_of(AF_INET, (const uint8_t *)&a->s_addr);

	*why = g ? g->name : "global";
	return g ? g->cls : SBX_ADDR_GLOBAL;
}

enum sbx_addr_class sbx_addr6_class(const struct in6_addr *a, const char **why)
{
	struct in_addr v4;
	const struct range *g;

	if (sbx_addr6_embedded4(a, &v4))
		return sbx_addr4_class(&v4, why);
	g = range_of(AF_INET6, a->s6_addr);
	*why = g ? g->name : "global";
	return g ? g->cls : SBX_ADDR_GLOBAL;
}

/* The address as dialled: IPv4 for the mapped and compatible forms. */
static int dialled(const struct sockaddr *sa, uint8_t out[16])
{
	struct in_addr v4;

	memset(out, 0, 16);
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

/* The IPv4 addresses an address of range g carries: how many (0 to 2). */
static size_t carried(const struct range *g, const uint8_t *a, uint8_t out[2][4])
{
	switch (g->carries) {
	case CARRY_NAT64:
		memcpy(out[0], a + 12, 4);
		return 1;
	case CARRY_6TO4:
		memcpy(out[0], a + 2, 4);
		return 1;
	case CARRY_TEREDO:
		/* The server's address, and the client's, inverted. */
		memcpy(out[0], a + 4, 4);
		for (int i = 0; i < 4; i++)
			out[1][i] = (uint8_t)~a[12 + i];
		return 2;
	}
	return 0;
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
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return "control character";
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
	max = max_bits(c->family);
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
		/* "/08" could be read as octal by other tools: refuse it. */
		if (slash[1] == '0' && slash[2])
			return "leading zero in the prefix length";
		if (v > max)
			return c->family == AF_INET ? "prefix longer than 32" : "prefix longer than 128";
		c->bits = v;
	}
	/* Host bits set would make the range mean something else than it
	 * reads: say so rather than guess. */
	for (unsigned i = c->bits; i < max; i++)
		if (c->addr[i / 8] & (0x80 >> (i % 8)))
			return "host bits set after the prefix";
	/* Such addresses are judged, and dialled, as IPv4: an IPv6 range
	 * of them would match nothing. */
	if (c->family == AF_INET6 && c->bits >= 96) {
		static const uint8_t zero[12];
		struct in_addr v4;
		if (sbx_addr6_embedded4((const struct in6_addr *)c->addr, &v4) && memcmp(c->addr, zero, 12))
			return "an IPv4-mapped range: give it in IPv4 form";
		if (!memcmp(c->addr, zero, 12) && (c->bits < 127 || sbx_addr6_embedded4((const struct in6_addr *)c->addr, &v4)))
			return "an IPv4-compatible range: give it in IPv4 form";
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

/* A range in CIDR form: "203.0.113.0/24". */
static void range_cidr(const struct range *g, char *buf, size_t sz)
{
	char t[INET6_ADDRSTRLEN];

	inet_ntop(g->family, g->net, t, sizeof t);
	snprintf(buf, sz, "%s/%u", t, g->bits);
}

int sbx_cidr_opens(const struct sbx_cidr *c, char *why, size_t sz)
{
	uint8_t in[2][4];
	const struct range *g;

	if (c->bits == max_bits(c->family)) {
		/* One address, named exactly: it opens whatever it is, unless
		 * nothing opens it. */
		g = range_of(c->family, c->addr);
		if (g && g->cls == SBX_ADDR_NEVER) {
			snprintf(why, sz, "%s is never opened", g->name);
			return -1;
		}
		for (size_t i = 0, n = g ? carried(g, c->addr, in) : 0; i < n; i++) {
			const struct range *h = range_of(AF_INET, in[i]);
			if (h && h->cls == SBX_ADDR_NEVER) {
				char t[INET_ADDRSTRLEN];
				inet_ntop(AF_INET, in[i], t, sizeof t);
				snprintf(why, sz, "it carries %s, %s, which is never opened", t, h->name);
				return -1;
			}
		}
		return 0;
	}
	/* Within one range: that range's class decides. */
	for (size_t i = 0; i < NRANGES; i++) {
		g = &ranges[i];
		if (g->family != c->family || g->bits > c->bits || !prefix_eq(c->addr, g->net, g->bits))
			continue;
		if (g->cls == SBX_ADDR_NEVER) {
			snprintf(why, sz, "%s is never opened", g->name);
			return -1;
		}
		if (g->cls == SBX_ADDR_EXACT) {
			snprintf(why, sz, "%s opens only address by address (ADDR/%u)", g->name, max_bits(c->family));
			return -1;
		}
		return 0;
	}
	/* Wider than the ranges it meets: it opens those it holds. */
	for (size_t i = 0; i < NRANGES; i++) {
		g = &ranges[i];
		if (g->family == c->family && (g->cls == SBX_ADDR_PRIVATE || g->cls == SBX_ADDR_RESERVED) &&
		    prefix_eq(g->net, c->addr, c->bits))
			return 0;
	}
	snprintf(why, sz, "every address in it is global (open without it) or never opened");
	return -1;
}

static int covered(const struct sbx_addr_rule *r, int fam, const uint8_t *a)
{
	for (size_t i = 0; i < r->nallow; i++)
		if (cidr_match(&r->allow[i], fam, a))
			return 1;
	return 0;
}

static int named(const struct sbx_addr_rule *r, int fam, const uint8_t *a)
{
	for (size_t i = 0; i < r->nallow; i++)
		if (r->allow[i].bits == max_bits(fam) && cidr_match(&r->allow[i], fam, a))
			return 1;
	return 0;
}

static int own(const struct sbx_addr_rule *r, int fam, const uint8_t *a)
{
	uint8_t o[16];

	for (size_t i = 0; i < r->nown; i++)
		if (dialled((const struct sockaddr *)&r->own[i], o) == fam && !memcmp(o, a, fam == AF_INET ? 4 : 16))
			return 1;
	return 0;
}

/* The rule for one address as dialled; carried IPv4 addresses are judged
 * by the same rule (they carry nothing further). */
static int judge(int fam, const uint8_t *a, const struct sbx_addr_rule *r, char *why, size_t sz)
{
	const struct range *g = range_of(fam, a);
	enum sbx_addr_class c = g ? g->cls : SBX_ADDR_GLOBAL;
	char t[INET6_ADDRSTRLEN], net[64];
	uint8_t in[2][4];

	if (c == SBX_ADDR_NEVER) {
		snprintf(why, sz, "%s; no option opens it", g->name);
		return -1;
	}
	for (size_t i = 0; i < r->ndeny; i++)
		if (cidr_match(&r->deny[i], fam, a)) {
			snprintf(why, sz, "%s", r->deny[i].why);
			return -1;
		}
	inet_ntop(fam, a, t, sizeof t);
	switch (c) {
	case SBX_ADDR_PRIVATE:
		if (r->allow_private || covered(r, fam, a))
			break;
		range_cidr(g, net, sizeof net);
		snprintf(why, sz, "%s; --allow-address %s or --allow-private-networks opens it", g->name, net);
		return -1;
	case SBX_ADDR_RESERVED:
		if (covered(r, fam, a))
			break;
		range_cidr(g, net, sizeof net);
		snprintf(why, sz, "%s; --allow-address %s opens it", g->name, net);
		return -1;
	case SBX_ADDR_EXACT:
		if (named(r, fam, a))
			break;
		snprintf(why, sz, "%s; only --allow-address %s/%u opens it", g->name, t, max_bits(fam));
		return -1;
	default:
		break;
	}
	if (own(r, fam, a) && !named(r, fam, a)) {
		snprintf(why, sz, "an address of this host; only --allow-address %s/%u opens it", t, max_bits(fam));
		return -1;
	}
	for (size_t i = 0, n = g ? carried(g, a, in) : 0; i < n; i++) {
		char inner[160], t4[INET_ADDRSTRLEN];
		if (!judge(AF_INET, in[i], r, inner, sizeof inner))
			continue;
		inet_ntop(AF_INET, in[i], t4, sizeof t4);
		snprintf(why, sz, "%s carries %s: %s", g->name, t4, inner);
		return -1;
	}
	return 0;
}

int sbx_addr_decide(const struct sockaddr *sa, const struct sbx_addr_rule *r, char *why, size_t sz)
{
	uint8_t a[16];
	int fam = dialled(sa, a);

	if (!fam) {
		snprintf(why, sz, "not an internet address");
		return -1;
	}
	return judge(fam, a, r, why, sz);
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

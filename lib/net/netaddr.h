/* Which resolved addresses the broker may connect to: the one address
 * rule, for every destination the broker dials (a name's DNS answer, a
 * --resolve pin, in allowlist, proxy and transparent mode alike).
 *
 * Global unicast addresses pass. The rest belong to a range of the
 * special-purpose registries, and each range is of one class:
 *   private   --allow-private-networks, or an --allow-address covering it;
 *   reserved  an --allow-address covering it (documentation, benchmarking,
 *             6to4, NAT64, Teredo, 240.0.0.0/4, ...);
 *   exact     only an --allow-address naming that one address (/32,
 *             /128): cloud metadata, link-local, local-use NAT64;
 *   never     no option: loopback, unspecified, multicast, broadcast.
 * The host's own addresses also open only when named exactly. An address
 * that carries an IPv4 address (NAT64, 6to4, Teredo) passes only if each
 * IPv4 address it carries passes too. --deny-address refuses whatever it
 * covers, before any --allow-address is looked at. */
#ifndef SBX_NETADDR_H
#define SBX_NETADDR_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

enum sbx_addr_class {
	SBX_ADDR_GLOBAL = 0,  /* open */
	SBX_ADDR_PRIVATE,     /* --allow-private-networks or a covering --allow-address */
	SBX_ADDR_RESERVED,    /* a covering --allow-address */
	SBX_ADDR_EXACT,       /* --allow-address naming the address exactly */
	SBX_ADDR_NEVER,       /* nothing opens it */
};

/* Class of an IPv4 address (network byte order) or IPv6 address; why gets
 * the name of the range ("loopback (127.0.0.0/8)", ...) or "global".
 * IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d) IPv6
 * addresses are classified by the IPv4 address they carry. */
enum sbx_addr_class sbx_addr4_class(const struct in_addr *a, const char **why);
enum sbx_addr_class sbx_addr6_class(const struct in6_addr *a, const char **why);

/* If a carries an IPv4 address (mapped or compatible), write it to v4 and
 * return 1. The broker dials that IPv4 address, never the IPv6 form. */
int sbx_addr6_embedded4(const struct in6_addr *a, struct in_addr *v4);

/* A range an administrator names (--allow-address, --deny-address CIDR). */
struct sbx_cidr {
	int family;                /* AF_INET or AF_INET6 */
	unsigned char addr[16];
	unsigned bits;
	char text[64];             /* normal form: "10.1.0.0/16" */
	char why[96];              /* --deny-address: the refusal, filled by the caller */
};

/* "ADDR" (one address: /32 or /128) or "ADDR/LEN": NULL, or why not (c
 * unusable). */
const char *sbx_cidr_parse(const char *s, struct sbx_cidr *c);
/* The same range, however written ("fd00::/8" and "FD00:0::/8"). */
int sbx_cidr_same(const struct sbx_cidr *a, const struct sbx_cidr *b);
/* Does --allow-address c open anything? 0, or -1 with why (sz bytes)
 * saying why it opens nothing (global only, never opened, exact only). */
int sbx_cidr_opens(const struct sbx_cidr *c, char *why, size_t sz);

/* Everything one address is checked against. */
struct sbx_addr_rule {
	int allow_private;
	const struct sockaddr_storage *own; /* the host's interface addresses */
	size_t nown;
	const struct sbx_cidr *deny;        /* --deny-address */
	size_t ndeny;
	const struct sbx_cidr *allow;       /* --allow-address */
	size_t nallow;
};

/* The one address rule: 0 when sa may be dialled, else -1 with why (sz
 * bytes, 160 are always enough) naming the range and what would open it:
 * "documentation (203.0.113.0/24); --allow-address 203.0.113.0/24 opens
 * it". Mapped IPv6 forms are judged as their IPv4. */
int sbx_addr_decide(const struct sockaddr *sa, const struct sbx_addr_rule *r, char *why, size_t sz);

/* "a.b.c.d" or an IPv6 text form, without the port. */
void sbx_addr_text(const struct sockaddr *sa, char *buf, size_t sz);

#endif

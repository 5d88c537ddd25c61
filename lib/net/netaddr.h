/* Which resolved addresses the broker may connect to. Only global unicast
 * addresses pass by default; --allow-private-networks also opens the
 * private ranges, never loopback, link-local, multicast, unspecified or the
 * host's own addresses, nor the reserved and documentation ranges. */
#ifndef SBX_NETADDR_H
#define SBX_NETADDR_H

#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>

enum sbx_addr_class {
	SBX_ADDR_GLOBAL = 0,  /* allowed */
	SBX_ADDR_PRIVATE,     /* allowed only with --allow-private-networks */
	SBX_ADDR_FORBIDDEN,   /* never allowed */
};

/* Class of an IPv4 address (network byte order) or IPv6 address; why gets
 * the name of the range ("loopback", "private", ...) or "global".
 * IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d) IPv6
 * addresses are classified by the IPv4 address they carry. */
enum sbx_addr_class sbx_addr4_class(const struct in_addr *a, const char **why);
enum sbx_addr_class sbx_addr6_class(const struct in6_addr *a, const char **why);

/* If a carries an IPv4 address (mapped or compatible), write it to v4 and
 * return 1. The broker dials that IPv4 address, never the IPv6 form. */
int sbx_addr6_embedded4(const struct in6_addr *a, struct in_addr *v4);

/* A range an administrator denies (--deny-address CIDR). */
struct sbx_cidr {
	int family;                /* AF_INET or AF_INET6 */
	unsigned char addr[16];
	unsigned bits;
	char text[64];             /* normal form: "10.1.0.0/16" */
	char why[96];              /* the refusal, filled by the caller */
};

/* "ADDR" or "ADDR/LEN": NULL, or why not (c unusable). */
const char *sbx_cidr_parse(const char *s, struct sbx_cidr *c);
/* The same range (after parsing, so "10.0.0.0/8" equals "10.0.0.0/08"). */
int sbx_cidr_same(const struct sbx_cidr *a, const struct sbx_cidr *b);

/* Everything one address is checked against. */
struct sbx_addr_rule {
	int allow_private;
	const struct sockaddr_storage *own; /* the host's interface addresses */
	size_t nown;
	const struct sbx_cidr *deny;        /* added by the administrator */
	size_t ndeny;
};

/* The one address rule: NULL when sa may be dialled, else why not.
 * Forbidden ranges first, then the denied ones, then the private ranges
 * (closed_private set: --allow-private-networks would open it), then the
 * host's own addresses. Mapped IPv6 forms are judged as their IPv4. */
const char *sbx_addr_decide(const struct sockaddr *sa, const struct sbx_addr_rule *r, int *closed_private);

/* "a.b.c.d" or an IPv6 text form, without the port. */
void sbx_addr_text(const struct sockaddr *sa, char *buf, size_t sz);

#endif

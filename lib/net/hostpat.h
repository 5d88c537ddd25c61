/* Host names as the broker sees them: in an allowlist pattern, a CONNECT
 * authority, a Host header and a TLS server_name. One normal form (ASCII,
 * lower case, no trailing dot) so that every comparison is a plain strcmp. */
#ifndef SBX_HOSTPAT_H
#define SBX_HOSTPAT_H

#include <stddef.h>

#define SBX_HOST_MAX 253

struct sbx_hostpat {
	char name[SBX_HOST_MAX + 1]; /* normal form, without the "*." */
	int wildcard;                /* "*.name": subdomains only, any depth */
};

/* Normalise the len bytes at s into out (SBX_HOST_MAX + 1 bytes): lower
 * case, one trailing dot dropped. Refuses (returns a reason) empty names,
 * empty labels, labels over 63 and names over 253 bytes, non-ASCII bytes
 * (IDNs must be given as punycode), whitespace, ports, paths, and anything
 * but letters, digits and inner hyphens. IP literals are refused too: an
 * IPv6 literal by its ':' or '[', an IPv4 one (in any inet_aton spelling,
 * e.g. "127.1" or "0x7f000001") because its last label is numeric. */
const char *sbx_host_normalize(const char *s, size_t len, char *out);

/* An allowlist entry: an exact name, or "*." followed by a name of at least
 * two labels (a wildcard over a whole top-level domain is refused). */
const char *sbx_hostpat_parse(const char *s, struct sbx_hostpat *p);

/* host must be in normal form. */
int sbx_hostpat_match(const struct sbx_hostpat *p, const char *host);

#endif

#include "hostpat.h"

#include <string.h>

static int is_alnum(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* Reasons for bytes that can never be part of a host name, named for what
 * the writer probably meant, so a refusal reads as an explanation. */
static const char *bad_byte(unsigned char c)
{
	if (c >= 0x80)
		return "not ASCII (write international names in punycode)";
	if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f')
		return "whitespace not allowed";
	if (c == ':' || c == '[' || c == ']')
		return "ports and IPv6 literals not allowed";
	if (c == '/' || c == '?' || c == '#' || c == '\\')
		return "paths not allowed";
	if (c == '*')
		return "wildcard only as the whole first label";
	if (c == '@')
		return "user names not allowed";
	return "invalid character";
}

const char *sbx_host_normalize(const char *s, size_t len, char *out)
{
	size_t i, label = 0, n;
	int numeric = 1;

	if (len == 0)
		return "empty name";
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 'A' && c <= 'Z')
			c = (unsigned char)(c + 32);
		if (!is_alnum(c) && c != '-' && c != '.')
			return bad_byte(c);
	}
	n = len;
	if (s[n - 1] == '.')
		n--;
	if (n == 0)
		return "empty label";
	if (n > SBX_HOST_MAX)
		return "name longer than 253 bytes";
	for (i = 0; i <= n; i++) {
		unsigned char c = i < n ? (unsigned char)s[i] : '.';
		if (c >= 'A' && c <= 'Z')
			c = (unsigned char)(c + 32);
		if (c == '.') {
			if (label == 0)
				return "empty label";
			if (label > 63)
				return "label longer than 63 bytes";
			if (out[i - 1] == '-' || out[i - label] == '-')
				return "label starts or ends with a hyphen";
			if (i < n) {
				label = 0;
				numeric = 1;
			}
		} else {
			label++;
			if (c < '0' || c > '9')
				numeric = 0;
		}
		if (i < n)
			out[i] = (char)c;
	}
	out[n] = '\0';
	/* "1.2.3.4", "127.1", "2130706433", "0x7f.1": inet_aton reads all of
	 * them as addresses. Top-level domains are never numeric or hex. */
	{
		const char *last = strrchr(out, '.');
		last = last ? last + 1 : out;
		if (numeric || (last[0] == '0' && last[1] == 'x'))
			return "IP literals not allowed";
	}
	return NULL;
}

const char *sbx_hostpat_parse(const char *s, struct sbx_hostpat *p)
{
	const char *why;
	size_t len = strlen(s);

	memset(p, 0, sizeof *p);
	if (len == 0)
		return "empty name";
	if (!strcmp(s, "*") || !strcmp(s, "*."))
		return "a bare * would allow every name";
	if (s[0] == '*' && s[1] == '.') {
		why = sbx_host_normalize(s + 2, len - 2, p->name);
		if (why)
			return why;
		if (!strchr(p->name, '.'))
			return "wildcard covers a whole top-level domain";
		p->wildcard = 1;
		return NULL;
	}
	return sbx_host_normalize(s, len, p->name);
}

int sbx_hostpat_match(const struct sbx_hostpat *p, const char *host)
{
	size_t hl, pl;

	if (!p->wildcard)
		return strcmp(p->name, host) == 0;
	hl = strlen(host);
	pl = strlen(p->name);
	return hl > pl + 1 && host[hl - pl - 1] == '.' && !strcmp(host + hl - pl, p->name);
}

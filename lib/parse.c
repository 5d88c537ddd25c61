#include "parse.h"
#include "die.h"

#include <string.h>
#include <stdlib.h>
#include <strings.h>

/* Leading digits into *v; returns the number of digits, or -1 on overflow. */
static int digits(const char *s, uint64_t *v)
{
	uint64_t x = 0;
	int n = 0;

	while (s[n] >= '0' && s[n] <= '9') {
		unsigned d = (unsigned)(s[n] - '0');
		if (x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
		n++;
	}
	*v = x;
	return n;
}

/* Reasons shared by every parser for what is wrong before the digits. */
static const char *bad_start(const char *s)
{
	if (!s || !*s)
		return "empty";
	if (*s == '-')
		return "negative";
	if (*s == '+')
		return "sign not allowed";
	if (*s == ' ' || *s == '\t' || *s == '\n')
		return "whitespace not allowed";
	if (*s < '0' || *s > '9')
		return "not a number";
	return NULL;
}

/* The digits every number starts with, into *v; *n is how many. */
static const char *leading(const char *s, uint64_t *v, int *n)
{
	const char *why = bad_start(s);

	if (why)
		return why;
	*n = digits(s, v);
	return *n < 0 ? "overflow" : NULL;
}

const char *sbx_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;
	int n;
	const char *why = leading(s, &v, &n);

	if (why)
		return why;
	if (s[n])
		return "trailing garbage";
	if (v > max)
		return "too large";
	if (v < min)
		return v == 0 ? "zero not allowed" : "too small";
	*out = v;
	return NULL;
}

static int suffix_shift(const char *p, unsigned *shift)
{
	static const char units[] = "KMGT";
	const char *u;

	if (!*p) {
		*shift = 0;
		return 0;
	}
	u = strchr(units, *p >= 'a' ? *p - 32 : *p);
	if (!u || !*p)
		return -1;
	*shift = 10 * (unsigned)(u - units + 1);
	p++;
	if (!*p || !strcasecmp(p, "B") || !strcasecmp(p, "iB"))
		return 0;
	return -1;
}

const char *sbx_parse_size(const char *s, uint64_t max, uint64_t *out)
{
	unsigned shift;
	uint64_t v;
	int n;
	const char *why = leading(s, &v, &n);

	if (why)
		return why;
	if (s[n] == '.')
		return "fractions not allowed";
	if (suffix_shift(s + n, &shift) < 0)
		return s[n] == ' ' ? "whitespace not allowed" : "trailing garbage";
	if (v == 0)
		return "zero not allowed";
	if (shift && v > (UINT64_MAX >> shift))
		return "overflow";
	v <<= shift;
	if (v > max)
		return "too large";
	*out = v;
	return NULL;
}

const char *sbx_parse_percent(const char *s, uint64_t max, uint64_t *out)
{
	size_t len = s ? strlen(s) : 0;
	char buf[32];

	/* "50%" is how people write it; accept the sign and nothing else. */
	if (len > 1 && len < sizeof buf && s[len - 1] == '%') {
		memcpy(buf, s, len - 1);
		buf[len - 1] = '\0';
		return sbx_parse_u64(buf, 1, max, out);
	}
	return sbx_parse_u64(s, 1, max, out);
}

const char *sbx_parse_seconds(const char *s, uint64_t max_ms, uint64_t *out_ms)
{
	uint64_t whole, ms = 0;
	int n, i;
	const char *why = leading(s, &whole, &n);

	if (why)
		return why;
	s += n;
	if (*s == '.') {
		s++;
		if (*s < '0' || *s > '9')
			return "trailing garbage";
		for (i = 0; i < 3 && *s >= '0' && *s <= '9'; i++, s++)
			ms = ms * 10 + (uint64_t)(*s - '0');
		for (; i < 3; i++)
			ms *= 10;
		if (*s >= '0' && *s <= '9')
			return "more than three decimals";
	}
	if (*s)
		return "trailing garbage";
	if (whole > (UINT64_MAX - ms) / 1000)
		return "overflow";
	whole = whole * 1000 + ms;
	if (whole == 0)
		return "zero not allowed";
	if (whole > max_ms)
		return "too large";
	*out_ms = whole;
	return NULL;
}

/* The option-level forms share one way of dying. */
static uint64_t checked(const char *opt, const char *what, const char *s,
			const char *why, const uint64_t *v)
{
	if (why)
		sbx_die_usage("%s: invalid %s '%s': %s", opt, what, s, why);
	return *v;
}

uint64_t sbx_opt_u64(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	uint64_t v = 0;
	const char *why = sbx_parse_u64(s, min, max, &v);
	return checked(opt, "number", s, why, &v);
}

uint64_t sbx_opt_size(const char *opt, const char *s, uint64_t max)
{
	uint64_t v = 0;
	const char *why = sbx_parse_size(s, max, &v);
	return checked(opt, "size", s, why, &v);
}

uint64_t sbx_opt_percent(const char *opt, const char *s, uint64_t max)
{
	uint64_t v = 0;
	const char *why = sbx_parse_percent(s, max, &v);
	return checked(opt, "percentage", s, why, &v);
}

uint64_t sbx_opt_seconds(const char *opt, const char *s, uint64_t max_ms)
{
	uint64_t v = 0;
	const char *why = sbx_parse_seconds(s, max_ms, &v);
	return checked(opt, "duration", s, why, &v);
}

const char *sbx_env_name_invalid(const char *name, size_t len)
{
	if (!len)
		return "empty name";
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		int ok = c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			 (i && c >= '0' && c <= '9');
		if (!ok)
			return "bad name";
	}
	return NULL;
}

const char *sbx_opt_abspath(const char *opt, const char *s)
{
	if (!*s)
		sbx_die_usage("%s: invalid path '': empty", opt);
	if (s[0] != '/')
		sbx_die_usage("%s: invalid path '%s': not absolute", opt, s);
	return s;
}

const char *sbx_opt_canon_dir(const char *opt, const char *s)
{
	sbx_opt_abspath(opt, s);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			sbx_die_usage("%s: invalid path: control character", opt);
	for (const char *c = s; *c; c = strchrnul(c + 1, '/'))
		if (!strncmp(c, "/./", 3) || !strcmp(c, "/.") || !strncmp(c, "/../", 4) || !strcmp(c, "/.."))
			sbx_die_usage("%s: invalid path '%s': not canonical", opt, s);
	if (!strcmp(s, "/"))
		sbx_die_usage("%s: invalid path '/': the root", opt);
	return s;
}

char *sbx_path_squash(const char *s)
{
	char *out = sbx_need(malloc(strlen(s) + 1)), *w = out;

	for (; *s; s++)
		if (!(*s == '/' && w > out && w[-1] == '/'))
			*w++ = *s;
	if (w - out > 1 && w[-1] == '/')
		w--;
	*w = '\0';
	return out;
}

const char *sbx_opt_path(const char *opt, const char *s)
{
	return sbx_path_squash(sbx_opt_abspath(opt, s));
}

#include "quote.h"

#include "json.h"

#include <string.h>

/* How many bytes the character at s (n left) keeps as it is: 1 for
 * printable ASCII (but the backslash and the quote in a name, the
 * backslash when asked; a tab, a form feed and a newline in lines), the
 * length of a UTF-8 sequence of a printable code point (sbx_cp_printable, the rule
 * JSON escapes by too) when utf8, else 0 (escaped). */
static size_t kept(const unsigned char *s, size_t n, unsigned flags, int utf8)
{
	uint32_t cp;
	size_t k;

	if (s[0] < 0x80) {
		if (s[0] == '\\')
			return !(flags & (SBX_QUOTE_NAME | SBX_QUOTE_BACKSLASH));
		if (s[0] == '\'')
			return !(flags & SBX_QUOTE_NAME);
		if (s[0] == '\t' || s[0] == '\n' || s[0] == '\f')
			return (flags & SBX_QUOTE_LINES) != 0;
		return sbx_cp_printable(s[0]);
	}
	if (!utf8)
		return 0;
	k = sbx_utf8_decode(s, n, &cp);
	return k && sbx_cp_printable(cp) ? k : 0;
}

static int valid_utf8(const unsigned char *s, size_t n)
{
	for (size_t i = 0, k; i < n; i += k)
		if (!(k = s[i] < 0x80 ? 1 : sbx_utf8_len(s + i, n - i)))
			return 0;
	return 1;
}

/* Whether a character from 0x80 may stay: always for text, for a name
 * only when the whole name is valid UTF-8. */
static int utf8_kept(const unsigned char *u, size_t len, unsigned flags)
{
	return (flags & SBX_QUOTE_TEXT) || ((flags & SBX_QUOTE_UTF8) && valid_utf8(u, len));
}

char *sbx_quote(char *out, size_t outsz, const char *s, size_t len, size_t max, unsigned flags)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	int utf8 = utf8_kept(u, len, flags);
	size_t o = 0, i = 0, room;

	if (outsz < 4) {
		if (outsz)
			out[0] = '\0';
		return out;
	}
	room = outsz - 4; /* always leaves space for "...\0" */
	while (i < len) {
		size_t k = kept(u + i, len - i, flags, utf8);
		if (i + (k ? k : 1) > max || o + (k ? k : 4) > room) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		if (k) {
			memcpy(out + o, s + i, k);
			o += k;
			i += k;
			continue;
		}
		out[o++] = '\\';
		out[o++] = 'x';
		out[o++] = hex[u[i] >> 4];
		out[o++] = hex[u[i] & 15];
		i++;
	}
	out[o] = '\0';
	return out;
}

int sbx_quote_needed(const char *s, size_t len, unsigned flags)
{
	const unsigned char *u = (const unsigned char *)s;
	int utf8 = utf8_kept(u, len, flags);

	for (size_t i = 0, k; i < len; i += k)
		if (!(k = kept(u + i, len - i, flags, utf8)))
			return 1;
	return 0;
}

void sbx_quote_put(FILE *f, const char *s, size_t len, unsigned flags)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	int utf8 = utf8_kept(u, len, flags);
	size_t i = 0;

	while (i < len) {
		size_t run = i, k;
		/* what stays goes out in one piece */
		while (run < len && (k = kept(u + run, len - run, flags, utf8)))
			run += k;
		fwrite(s + i, 1, run - i, f);
		if (run == len)
			break;
		fputc('\\', f);
		fputc('x', f);
		fputc(hex[u[run] >> 4], f);
		fputc(hex[u[run] & 15], f);
		i = run + 1;
	}
}

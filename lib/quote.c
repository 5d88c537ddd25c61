#include "quote.h"

#include "json.h"

#include <string.h>

/* How many bytes the character at s (n left) keeps as it is: 1 for
 * printable ASCII (but the backslash and the quote in a name), the length
 * of a UTF-8 sequence of a printable code point (sbx_cp_printable, the
 * rule JSON escapes by too) when utf8, else 0 (escaped). */
static size_t kept(const unsigned char *s, size_t n, int name, int utf8)
{
	uint32_t cp;
	size_t k;

	if (s[0] < 0x80)
		return sbx_cp_printable(s[0]) && !(name && (s[0] == '\\' || s[0] == '\''));
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

char *sbx_quote(char *out, size_t outsz, const char *s, size_t len, size_t max, unsigned flags)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	int utf8 = (flags & SBX_QUOTE_TEXT) || ((flags & SBX_QUOTE_UTF8) && valid_utf8(u, len));
	size_t o = 0, i = 0, room;

	if (outsz < 4) {
		if (outsz)
			out[0] = '\0';
		return out;
	}
	room = outsz - 4; /* always leaves space for "...\0" */
	while (i < len) {
		size_t k = kept(u + i, len - i, (flags & SBX_QUOTE_NAME) != 0, utf8);
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

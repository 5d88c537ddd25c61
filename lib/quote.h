/* Untrusted names in messages: a file name from a workspace, a path or a
 * host name from argv or a client, a key or a parser's note from a policy
 * file. One function makes them safe for a terminal and a status line;
 * die.c escapes whatever else reaches stderr the same way. */
#ifndef SBX_QUOTE_H
#define SBX_QUOTE_H

#include <stddef.h>

/* The text goes between single quotes: the backslash and the quote are
 * escaped too, so that neither an escape nor the end of the name can be
 * faked by the name itself. */
#define SBX_QUOTE_NAME 1u
/* A name that is valid UTF-8 keeps its characters (C1 controls are still
 * escaped); one that is not has every byte from 0x80 escaped. */
#define SBX_QUOTE_UTF8 2u
/* Text, not one name: each valid UTF-8 character stays (C1 controls
 * escaped), each byte of an invalid sequence is escaped (die.c's lines). */
#define SBX_QUOTE_TEXT 4u

/* s[0..len) into out: control bytes (below 0x20, 0x7f) and every byte
 * from 0x80 become \xNN (see the flags); the rest stays. At most max bytes
 * of s are shown and the result, terminated, fits outsz; a name cut short
 * ends in "...". Returns out. */
char *sbx_quote(char *out, size_t outsz, const char *s, size_t len, size_t max, unsigned flags);

#endif

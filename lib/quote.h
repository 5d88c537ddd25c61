/* Untrusted names in messages: a file name from a workspace, a path or a
 * host name from argv or a client, a key or a parser's note from a policy
 * file. One function makes them safe for a terminal and a status line;
 * die.c escapes whatever else reaches stderr the same way, and a file's
 * text shown for review (sbx-changes diff) is escaped by the same rule. */
#ifndef SBX_QUOTE_H
#define SBX_QUOTE_H

#include <stddef.h>
#include <stdio.h>

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

/* A file's lines: a tab, a newline and a form feed stay too (they only
 * move the cursor on, as a newline does; GNU sources hold form feeds). */
#define SBX_QUOTE_LINES 8u
/* The backslash is escaped (not the quote): text shown escaped, where a
 * literal "\x1b" must not read as the byte it names. */
#define SBX_QUOTE_BACKSLASH 16u

/* s[0..len) into out: control bytes (below 0x20, 0x7f) and every byte
 * from 0x80 become \xNN (see the flags); the rest stays. At most max bytes
 * of s are shown and the result, terminated, fits outsz; a name cut short
 * ends in "...". Returns out. */
char *sbx_quote(char *out, size_t outsz, const char *s, size_t len, size_t max, unsigned flags);

/* 1 if sbx_quote would escape a byte of s[0..len) with these flags. */
int sbx_quote_needed(const char *s, size_t len, unsigned flags);

/* s[0..len) to f by the same rule, whole, however long (a file's text);
 * a write error is f's (ferror). */
void sbx_quote_put(FILE *f, const char *s, size_t len, unsigned flags);

#endif

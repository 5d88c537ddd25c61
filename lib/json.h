/* JSON lines for --status-fd and logs: one object per event, built in
 * memory and written with a single write(2) so that several tools sharing
 * one status fd never interleave. Every string is escaped: quotes,
 * backslashes, every non-printing code point (sbx_cp_printable: C0, DEL,
 * C1, U+2028/2029, bidi controls) as \uXXXX, and invalid UTF-8 (each bad
 * byte becomes U+FFFD), so a hostile file name cannot break or forge a line,
 * nor drive the terminal of whoever reads the log. */
#ifndef SBX_JSON_H
#define SBX_JSON_H

#include <stdint.h>
#include <stddef.h>

struct sbx_json {
	char *buf;
	size_t len, cap;
	int failed;   /* an allocation failed: the line is dropped, not truncated */
	int nested;   /* depth of open objects/arrays */
	int need_comma;
	int is_exit;  /* an "exit" event: the status contract notes it (status.h) */
	size_t head;  /* end of "tool" and "event": where a first status line's "version" goes */
};

/* Starts `{"tool":TOOL,"event":EVENT` (tool/event may be NULL to omit). */
void sbx_json_begin(struct sbx_json *j, const char *tool, const char *event);
void sbx_json_str(struct sbx_json *j, const char *key, const char *val);
/* val of length len, may contain NUL and invalid UTF-8. */
void sbx_json_strn(struct sbx_json *j, const char *key, const char *val, size_t len);
void sbx_json_int(struct sbx_json *j, const char *key, int64_t val);
void sbx_json_uint(struct sbx_json *j, const char *key, uint64_t val);
void sbx_json_bool(struct sbx_json *j, const char *key, int val);
void sbx_json_null(struct sbx_json *j, const char *key);
/* A value that is already JSON, one line, made by the caller's own
 * serializer (never text from outside: it is not escaped). */
void sbx_json_raw(struct sbx_json *j, const char *key, const char *json);
/* Nested object/array under key (key NULL inside an array). */
void sbx_json_open_obj(struct sbx_json *j, const char *key);
void sbx_json_open_arr(struct sbx_json *j, const char *key);
void sbx_json_close_obj(struct sbx_json *j);
void sbx_json_close_arr(struct sbx_json *j);

/* Closes the object, appends '\n'. Returns the finished line (owned by j)
 * or NULL if building failed. */
const char *sbx_json_end(struct sbx_json *j, size_t *len);
/* sbx_json_end + one write(2) to fd (fd < 0: nothing). Frees j.
 * The first line this process writes to its status fd gets
 * "version":SBX_VERSION right after "event" (status.h).
 * Returns 0, or -1 with errno (EPIPE etc.) for the caller to judge. */
int sbx_json_write(struct sbx_json *j, int fd);
void sbx_json_free(struct sbx_json *j);

/* Length of a valid UTF-8 sequence at p (max n bytes, n > 0), or 0 if
 * invalid. Rejects overlong forms, surrogates and code points past U+10FFFF.
 * The one decoder behind JSON escaping and the messages' escaping (die.c). */
size_t sbx_utf8_len(const unsigned char *p, size_t n);
/* The same, with the code point in *cp. */
size_t sbx_utf8_decode(const unsigned char *p, size_t n, uint32_t *cp);
/* 1 if code point cp is shown as it is, 0 if it is escaped: the one rule
 * for JSON (\uXXXX) and for messages (lib/quote.c, \xNN per byte).
 * Escaped: C0 and DEL, C1 (U+0080-U+009F), U+2028 and U+2029, the bidi
 * controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), U+FEFF
 * and U+FFF9-U+FFFB. Every one is in the BMP. */
int sbx_cp_printable(uint32_t cp);

#endif

/* Growing arrays: one rule for every list in lib/ (double, check for
 * overflow, keep the old array when realloc fails). */
#ifndef SBX_GROW_H
#define SBX_GROW_H

#include <stddef.h>

/* Makes room for element n in *v (capacity *cap elements of size elem,
 * starting at first). Returns 0, or -1 with errno ENOMEM, *v unchanged. */
int sbx_grow(void **v, size_t *cap, size_t n, size_t elem, size_t first);

/* Appends n bytes of src to the string *s (length *len, capacity *cap)
 * and keeps it NUL-terminated. Once an append fails, *failed is set and
 * every later one does nothing, so a builder checks once at the end. */
void sbx_grow_append(char **s, size_t *len, size_t *cap, int *failed,
		     const char *src, size_t n);

#endif

#include "grow.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int sbx_grow(void **v, size_t *cap, size_t n, size_t elem, size_t first)
{
	size_t c;
	void *p;

	if (n < *cap)
		return 0;
	c = *cap ? *cap : first;
	while (c <= n) {
		if (c > SIZE_MAX / 2)
			goto nomem;
		c *= 2;
	}
	if (c > SIZE_MAX / elem)
		goto nomem;
	p = realloc(*v, c * elem);
	if (!p)
		goto nomem;
	*v = p;
	*cap = c;
	return 0;
nomem:
	errno = ENOMEM;
	return -1;
}

void sbx_grow_append(char **s, size_t *len, size_t *cap, int *failed,
		     const char *src, size_t n)
{
	if (*failed)
		return;
	if (n > SIZE_MAX - *len - 1 || sbx_grow((void **)s, cap, *len + n, 1, 512) < 0) {
		*failed = 1;
		return;
	}
	/* Most appends are a quote, a comma or a short word: a byte loop
	 * beats memcpy's set-up there. */
	if (n < 16)
		for (size_t i = 0; i < n; i++)
			(*s)[*len + i] = src[i];
	else
		memcpy(*s + *len, src, n);
	*len += n;
	(*s)[*len] = '\0';
}

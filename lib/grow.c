#include "grow.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

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

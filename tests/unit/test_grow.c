#include "unit.h"
#include "grow.h"

#include <errno.h>
#include <stdlib.h>

TEST(grow_doubles_and_keeps_contents)
{
	int *v = NULL;
	size_t cap = 0, n;

	for (n = 0; n < 1000; n++) {
		CHECK(sbx_grow((void **)&v, &cap, n, sizeof *v, 4) == 0);
		v[n] = (int)n;
	}
	CHECK(cap >= 1000 && cap < 2048);
	for (n = 0; n < 1000; n++)
		CHECK(v[n] == (int)n);
	CHECK(sbx_grow((void **)&v, &cap, 10, sizeof *v, 4) == 0); /* room already */
	free(v);
}

TEST(grow_refuses_overflow_and_keeps_the_array)
{
	char *v = malloc(8);
	size_t cap = 8;

	CHECK(v != NULL);
	errno = 0;
	CHECK(sbx_grow((void **)&v, &cap, SIZE_MAX / 2 + 1, 1, 8) == -1);
	CHECK(errno == ENOMEM);
	CHECK(cap == 8);
	CHECK(sbx_grow((void **)&v, &cap, 8, SIZE_MAX / 4, 8) == -1);
	CHECK(cap == 8);
	free(v);
}

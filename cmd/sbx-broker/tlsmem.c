/* The TLS library's memory (tls.c): its large blocks, kept for reuse.
 *
 * Every route connection has the library allocate its record buffers
 * (about 17 KiB each way) and free them at its end. musl's allocator
 * gives a group of such blocks back to the kernel as soon as it is empty,
 * so each connection would map, fault in and unmap them again (with the
 * resolver's threads running, every unmap is a TLB shootdown across
 * CPUs). Blocks from 4 KiB to 64 KiB are rounded up to a power of two and
 * a few of each size are kept, per thread, for the next allocation.
 * Smaller and larger ones go to the allocator as they are. Nothing is
 * kept that the library would not have left in freed memory anyway: it
 * wipes what it must (OPENSSL_clear_free) before freeing. */
#include "conn.h"

#include <openssl/crypto.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HDR 16                /* the block's size, keeping malloc's alignment */
#define CLASS_MIN 12          /* 4 KiB */
#define CLASS_MAX 16          /* 64 KiB */
#define KEEP 32               /* blocks kept per class and thread */

struct spare {
	struct spare *next;
};

static __thread struct spare *kept[CLASS_MAX + 1];
static __thread unsigned nkept[CLASS_MAX + 1];

/* The class of a block of n bytes with its header (its room is 1 << the
 * class), or 0: the allocator's own, of n + HDR bytes. */
static unsigned class_of(size_t n)
{
	unsigned k = CLASS_MIN;

	if (n + HDR <= ((size_t)1 << (CLASS_MIN - 1)) || n + HDR > ((size_t)1 << CLASS_MAX))
		return 0;
	while (((size_t)1 << k) < n + HDR)
		k++;
	return k;
}

static void *mem_alloc(size_t n, const char *file, int line)
{
	unsigned k = class_of(n);
	unsigned char *p;

	(void)file;
	(void)line;
	if (n > SIZE_MAX - HDR)
		return NULL;
	if (k && kept[k]) {
		p = (unsigned char *)kept[k];
		kept[k] = kept[k]->next;
		nkept[k]--;
	} else if (!(p = malloc(k ? (size_t)1 << k : n + HDR)))
		return NULL;
	*(size_t *)p = n;
	return p + HDR;
}

static void mem_free(void *v, const char *file, int line)
{
	unsigned char *p = v;
	unsigned k;

	(void)file;
	(void)line;
	if (!p)
		return;
	p -= HDR;
	k = class_of(*(size_t *)p);
	if (k && nkept[k] < KEEP) {
		struct spare *s = (struct spare *)p;
		s->next = kept[k];
		kept[k] = s;
		nkept[k]++;
		return;
	}
	free(p);
}

static void *mem_realloc(void *v, size_t n, const char *file, int line)
{
	unsigned char *p = v, *q;
	size_t old;
	unsigned k;

	if (!p)
		return mem_alloc(n, file, line);
	old = *(size_t *)(p - HDR);
	k = class_of(old);
	if (n > SIZE_MAX - HDR)
		return NULL;
	if (k && n + HDR <= ((size_t)1 << k) && class_of(n) == k) {
		*(size_t *)(p - HDR) = n; /* it fits where it is */
		return p;
	}
	if (!k && !class_of(n)) {
		q = realloc(p - HDR, n + HDR);
		if (!q)
			return NULL;
		*(size_t *)q = n;
		return q + HDR;
	}
	q = mem_alloc(n, file, line);
	if (!q)
		return NULL;
	memcpy(q, p, old < n ? old : n);
	mem_free(p, file, line);
	return q;
}

void broker_tls_mem(void)
{
	/* Refused once the library has allocated: it then keeps its own. */
	(void)CRYPTO_set_mem_functions(mem_alloc, mem_realloc, mem_free);
}

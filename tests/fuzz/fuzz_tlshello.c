/* libFuzzer target: the ClientHello parser, on the whole input and on
 * every cut of it (a hello arrives in pieces), which must never decide
 * differently from the whole once it has decided. */
#include "tlshello.h"
#include "hostpat.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx_tls_hello whole, part;
	unsigned char *buf;
	int r;

	if (size > 70000)
		return 0;
	buf = malloc(size ? size : 1);
	memcpy(buf, data, size);
	r = sbx_tls_hello_parse(buf, size, &whole);
	if (r == SBX_TLS_DONE) {
		char norm[SBX_HOST_MAX + 1];
		/* The name handed on is in normal form and within the input. */
		if (whole.used > size || sbx_host_normalize(whole.sni, strlen(whole.sni), norm) ||
		    strcmp(norm, whole.sni))
			abort();
	}
	if (r == SBX_TLS_BAD && (!whole.why || !whole.alert))
		abort();
	/* A prefix that already decides must decide the same way. */
	for (size_t cut = size / 2; cut < size; cut += 1 + size / 8) {
		int p = sbx_tls_hello_parse(buf, cut, &part);
		if (p == SBX_TLS_DONE && r != SBX_TLS_DONE)
			abort();
		if (p == SBX_TLS_DONE && strcmp(part.sni, whole.sni))
			abort();
	}
	free(buf);
	return 0;
}

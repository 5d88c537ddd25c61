/* libFuzzer target: the HTTP/1.1 head parser, as a proxy request, as a
 * captured connection's request and as a response,
 * with a head limit taken from the first input byte so that the "too
 * large" paths are reached as well. */
#include "http1.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sbx_http_head h;
	size_t max;
	char *buf;

	if (size < 1)
		return 0;
	max = data[0] < 16 ? (size_t)data[0] * 64 + 1 : 32768;
	/* An exact-size heap copy: ASan catches any read past the end. */
	buf = malloc(size - 1 ? size - 1 : 1);
	memcpy(buf, data + 1, size - 1);
	if (sbx_http_parse_request(buf, size - 1, max, &h) == SBX_HTTP_DONE) {
		if (h.head_len > size - 1 || !h.host[0] || !h.port)
			abort();
		if (!h.is_connect && (h.path < buf || h.path + h.plen > buf + size - 1) &&
		    !(h.plen == 1 && h.path[0] == '/'))
			abort();
		for (size_t i = 0; i < h.nfields; i++)
			if (h.f[i].name < buf || h.f[i].value + h.f[i].vlen > buf + size - 1)
				abort();
	}
	/* A captured connection's request: its host is the name given. */
	if (sbx_http_parse_origin(buf, size - 1, max, "origin.test", &h) == SBX_HTTP_DONE) {
		if (h.head_len > size - 1 || strcmp(h.host, "origin.test") || h.port != 80 || h.is_connect ||
		    h.path < buf || h.path + h.plen > buf + size - 1 || h.path[0] != '/')
			abort();
	}
	if (sbx_http_parse_response(buf, size - 1, max, &h) == SBX_HTTP_DONE) {
		if (h.head_len > size - 1 || h.status < 100 || h.status > 999)
			abort();
	}
	free(buf);
	return 0;
}

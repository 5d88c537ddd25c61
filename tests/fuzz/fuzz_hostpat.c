/* libFuzzer target: host names and allowlist patterns. Whatever is
 * accepted is in normal form, normalising it again changes nothing, and a
 * pattern matches what its own definition says. */
#include "hostpat.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx_hostpat p;
	char norm[SBX_HOST_MAX + 1], again[SBX_HOST_MAX + 1];
	char *s = malloc(size + 1);
	const char *nul;

	memcpy(s, data, size);
	s[size] = '\0';
	if (!sbx_host_normalize(s, size, norm)) {
		size_t n = strlen(norm);
		if (n == 0 || n > SBX_HOST_MAX || sbx_host_normalize(norm, n, again) || strcmp(norm, again))
			abort();
		for (size_t i = 0; i < n; i++)
			if (norm[i] >= 'A' && norm[i] <= 'Z')
				abort();
	}
	nul = memchr(s, '\0', size);
	if (!nul && !sbx_hostpat_parse(s, &p)) {
		if (p.wildcard) {
			char sub[SBX_HOST_MAX + 3];
			if (!strchr(p.name, '.') || sbx_hostpat_match(&p, p.name))
				abort();
			if (strlen(p.name) + 2 <= SBX_HOST_MAX) {
				sub[0] = 'a';
				sub[1] = '.';
				strcpy(sub + 2, p.name);
				if (!sbx_hostpat_match(&p, sub))
					abort();
			}
		} else if (!sbx_hostpat_match(&p, p.name)) {
			abort();
		}
	}
	free(s);
	return 0;
}

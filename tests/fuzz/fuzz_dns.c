/* libFuzzer target: the DNS query parser and the answer built from what
 * it accepted. The name handed on is short, lower case and well formed;
 * an answer never exceeds its bound; a refusal always says why. */
#include "dns.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned char a16[16] = { 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
	struct sbx_dns_query q;
	unsigned char out[SBX_DNS_ANSWER_MAX];
	int r = sbx_dns_parse(data, size, &q);
	size_t n;

	if (r == SBX_DNS_DROP)
		return 0;
	if (r != SBX_DNS_OK && !q.why)
		abort();
	if (q.qlen > sizeof q.q || q.qlen + 12 > size)
		abort();
	if (r == SBX_DNS_OK) {
		size_t l = strlen(q.name);
		if (!l || l > SBX_DNS_NAME_MAX || q.name[0] == '.' || q.name[l - 1] == '.' || strstr(q.name, ".."))
			abort();
		for (size_t i = 0; i < l; i++)
			if (q.name[i] >= 'A' && q.name[i] <= 'Z')
				abort();
	}
	n = sbx_dns_answer(&q, r == SBX_DNS_OK ? SBX_DNS_NOERROR : r, a16, 60, out);
	if (n > sizeof out || n < 12)
		abort();
	/* Its answer parses as a response: dropped, never answered. */
	{
		struct sbx_dns_query back;
		if (sbx_dns_parse(out, n, &back) != SBX_DNS_DROP)
			abort();
	}
	return 0;
}

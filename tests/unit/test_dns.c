#include "unit.h"
#include "dns.h"

/* A query for name (dotted) with type, built by hand; extra bytes after. */
static size_t mkq(unsigned char *b, const char *name, unsigned type, unsigned flags, unsigned ar)
{
	size_t n = 12;
	const char *s = name;

	memset(b, 0, 12);
	b[0] = 0x12;
	b[1] = 0x34;
	b[2] = (unsigned char)(flags >> 8);
	b[3] = (unsigned char)flags;
	b[5] = 1;
	b[11] = (unsigned char)ar;
	while (*s) {
		const char *dot = strchr(s, '.');
		size_t l = dot ? (size_t)(dot - s) : strlen(s);
		b[n++] = (unsigned char)l;
		memcpy(b + n, s, l);
		n += l;
		s += l + (dot ? 1 : 0);
	}
	b[n++] = 0;
	b[n++] = (unsigned char)(type >> 8);
	b[n++] = (unsigned char)type;
	b[n++] = 0;
	b[n++] = 1;
	return n;
}

TEST(dns_parses_a_query_in_lower_case)
{
	unsigned char b[600];
	struct sbx_dns_query q;
	size_t n = mkq(b, "Allowed.TEST", SBX_DNS_TYPE_A, 0x0100, 0);

	CHECK(sbx_dns_parse(b, n, &q) == SBX_DNS_OK);
	CHECK_STR(q.name, "allowed.test");
	CHECK(q.id == 0x1234 && q.rd == 1 && q.qtype == 1 && q.qclass == 1);
	CHECK(q.qlen == n - 12);
}

TEST(dns_answer_carries_one_address_and_echoes_the_question)
{
	unsigned char b[600], out[SBX_DNS_ANSWER_MAX];
	static const unsigned char a[4] = { 240, 0, 0, 7 };
	struct sbx_dns_query q;
	size_t n = mkq(b, "Allowed.TEST", SBX_DNS_TYPE_A, 0x0100, 0), k;

	CHECK(sbx_dns_parse(b, n, &q) == SBX_DNS_OK);
	k = sbx_dns_answer(&q, SBX_DNS_NOERROR, a, 5, out);
	CHECK(k == n + 16);
	CHECK(out[0] == 0x12 && out[1] == 0x34 && out[2] == 0x85 && out[3] == 0x80);
	CHECK(out[5] == 1 && out[7] == 1 && out[9] == 0 && out[11] == 0);
	CHECK(!memcmp(out + 12, b + 12, n - 12)); /* the case as asked */
	CHECK(out[n] == 0xc0 && out[n + 1] == 0x0c && out[n + 3] == 1 && out[n + 9] == 5);
	CHECK(out[n + 11] == 4 && !memcmp(out + n + 12, a, 4));
	/* AAAA without an address: NOERROR, no record. */
	n = mkq(b, "allowed.test", SBX_DNS_TYPE_AAAA, 0, 0);
	CHECK(sbx_dns_parse(b, n, &q) == SBX_DNS_OK);
	k = sbx_dns_answer(&q, SBX_DNS_NOERROR, NULL, 5, out);
	CHECK(k == n && out[7] == 0 && out[3] == 0x80 && out[2] == 0x84);
	k = sbx_dns_answer(&q, SBX_DNS_REFUSED, NULL, 5, out);
	CHECK(k == n && out[3] == 0x85);
}

TEST(dns_drops_short_messages_and_responses)
{
	unsigned char b[600];
	struct sbx_dns_query q;
	size_t n = mkq(b, "a.test", 1, 0x8000, 0);

	CHECK(sbx_dns_parse(b, 11, &q) == SBX_DNS_DROP);
	CHECK(sbx_dns_parse(b, 0, &q) == SBX_DNS_DROP);
	CHECK(sbx_dns_parse(NULL, 0, &q) == SBX_DNS_DROP);
	CHECK(sbx_dns_parse(b, n, &q) == SBX_DNS_DROP);
}

TEST(dns_refuses_malformed_headers)
{
	unsigned char b[600];
	struct sbx_dns_query q;
	size_t n;

	n = mkq(b, "a.test", 1, 0x2800, 0); /* opcode UPDATE */
	CHECK(sbx_dns_parse(b, n, &q) == SBX_DNS_NOTIMP);
	n = mkq(b, "a.test", 1, 0, 0);
	b[5] = 2;
	CHECK(sbx_dns_parse(b, n, &q) == SBX_DNS_FORMERR);
	CHECK_STR(q.why, "not exactly one question");
	b[5] = 0;
	CHECK(sbx_dns_parse(b, n, &q) == SBX_DNS_FORMERR);
	b[5] = 1;
	b[7] = 1;
	CHECK(sbx_dns_parse(b, n, &q) == SBX_DNS_FORMERR);
	b[7] = 0;
	b[9] = 1;
	CHECK(sbx_dns_parse(b, n, &q) == SBX_DNS_FORMERR);
	b[9] = 0;
	b[11] = 2;
	CHECK(sbx_dns_parse(b, n, &q) == SBX_DNS_FORMERR);
	b[11] = 0;
	CHECK(sbx_dns_parse(b, n, &q) == SBX_DNS_OK);
	/* Bytes after the question only with an additional record (EDNS). */
	b[n] = 0;
	CHECK(sbx_dns_parse(b, n + 1, &q) == SBX_DNS_FORMERR);
	CHECK_STR(q.why, "bytes after the question");
	b[11] = 1;
	CHECK(sbx_dns_parse(b, n + 11, &q) == SBX_DNS_OK);
	CHECK(sbx_dns_parse(b, 513, &q) == SBX_DNS_FORMERR);
	CHECK_STR(q.why, "query longer than 512 bytes");
	CHECK(q.id == 0x1234);
}

TEST(dns_refuses_pointers_cuts_and_bad_names)
{
	unsigned char b[600];
	struct sbx_dns_query q;
	size_t n;

	n = mkq(b, "a.test", 1, 0, 0);
	for (size_t cut = 12; cut < n; cut++)
		CHECK(sbx_dns_parse(b, cut, &q) == SBX_DNS_FORMERR);
	/* A pointer to itself: refused, never followed. */
	b[12] = 0xc0;
	b[13] = 12;
	CHECK(sbx_dns_parse(b, n, &q) == SBX_DNS_FORMERR);
	CHECK_STR(q.why, "compression pointer in the question");
	b[12] = 0x40;
	CHECK(sbx_dns_parse(b, n, &q) == SBX_DNS_FORMERR);
	CHECK_STR(q.why, "unknown label type");
	n = mkq(b, "a\x01" "b.test", 1, 0, 0);
	CHECK(sbx_dns_parse(b, n, &q) == SBX_DNS_REFUSED);
	n = mkq(b, "a b.test", 1, 0, 0);
	CHECK(sbx_dns_parse(b, n, &q) == SBX_DNS_REFUSED);
	CHECK(q.qlen == n - 12); /* echoed in the refusal */
	n = mkq(b, "", 1, 0, 0);
	CHECK(sbx_dns_parse(b, n, &q) == SBX_DNS_REFUSED);
	CHECK_STR(q.why, "the root name");
	n = mkq(b, "a.test", 1, 0, 0);
	b[n - 1] = 3; /* class CH */
	CHECK(sbx_dns_parse(b, n, &q) == SBX_DNS_REFUSED);
}

TEST(dns_bounds_name_and_label_lengths)
{
	unsigned char b[600];
	char name[400];
	struct sbx_dns_query q;
	size_t n;

	memset(name, 'a', 63);
	strcpy(name + 63, ".test");
	n = mkq(b, name, 1, 0, 0);
	CHECK(sbx_dns_parse(b, n, &q) == SBX_DNS_OK);
	memset(name, 'a', 64);
	strcpy(name + 64, ".test");
	n = mkq(b, name, 1, 0, 0);
	CHECK(sbx_dns_parse(b, n, &q) == SBX_DNS_FORMERR);
	/* 4 labels of 63 and a 1-byte one: 253 characters, the most. */
	for (int i = 0; i < 4; i++) {
		memset(name + i * 64, 'b', 63);
		name[i * 64 + 63] = '.';
	}
	strcpy(name + 256, "c");
	n = mkq(b, name, 1, 0, 0);
	CHECK(sbx_dns_parse(b, n, &q) == SBX_DNS_FORMERR);
	strcpy(name + 255, "");
	name[254] = '\0';
	name[253] = 'x';
	name[252] = '.';
	n = mkq(b, name + 1, 1, 0, 0); /* "bbb…b.x": 253 characters */
	CHECK(sbx_dns_parse(b, n, &q) == SBX_DNS_OK);
	CHECK(strlen(q.name) == 253);
	n = mkq(b, name, 1, 0, 0); /* 254 */
	CHECK(sbx_dns_parse(b, n, &q) == SBX_DNS_FORMERR);
	CHECK_STR(q.why, "name longer than 253 characters");
	/* 128 one-byte labels: too many (and too long). */
	for (int i = 0; i < 128; i++) {
		name[2 * i] = 'x';
		name[2 * i + 1] = '.';
	}
	name[255] = '\0';
	n = mkq(b, name, 1, 0, 0);
	CHECK(sbx_dns_parse(b, n, &q) == SBX_DNS_FORMERR);
}

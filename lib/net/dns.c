#include "dns.h"

#include <string.h>

static int fail(struct sbx_dns_query *q, int rcode, const char *why)
{
	q->why = why;
	return rcode;
}

static uint16_t be16(const unsigned char *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static int name_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

int sbx_dns_parse(const unsigned char *m, size_t len, struct sbx_dns_query *q)
{
	size_t p = 12, n = 0, labels = 0;
	int bad_byte = 0;

	memset(q, 0, sizeof *q);
	if (!m || len < 12)
		return SBX_DNS_DROP;
	q->id = be16(m);
	q->rd = m[2] & 1;
	if (m[2] & 0x80)
		return SBX_DNS_DROP; /* a response: answering it could loop */
	if (len > SBX_DNS_MSG_MAX)
		return fail(q, SBX_DNS_FORMERR, "query longer than 512 bytes");
	if ((m[2] >> 3 & 0xf) != 0)
		return fail(q, SBX_DNS_NOTIMP, "opcode other than QUERY");
	if (be16(m + 4) != 1)
		return fail(q, SBX_DNS_FORMERR, "not exactly one question");
	if (be16(m + 6) || be16(m + 8))
		return fail(q, SBX_DNS_FORMERR, "answer or authority records in a query");
	if (be16(m + 10) > 1)
		return fail(q, SBX_DNS_FORMERR, "more than one additional record");
	for (;;) {
		unsigned l;
		if (p >= len)
			return fail(q, SBX_DNS_FORMERR, "question cut short");
		l = m[p];
		if (l == 0)
			break;
		if (l & 0xc0)
			return fail(q, SBX_DNS_FORMERR, (l & 0xc0) == 0xc0 ? "compression pointer in the question"
									: "unknown label type");
		if (++labels > SBX_DNS_LABELS_MAX)
			return fail(q, SBX_DNS_FORMERR, "too many labels");
		if (p + 1 + l > len)
			return fail(q, SBX_DNS_FORMERR, "question cut short");
		if (n + (n ? 1 : 0) + l > SBX_DNS_NAME_MAX)
			return fail(q, SBX_DNS_FORMERR, "name longer than 253 characters");
		if (n)
			q->name[n++] = '.';
		for (unsigned i = 0; i < l; i++) {
			unsigned char c = m[p + 1 + i];
			if (!name_byte(c))
				bad_byte = 1;
			q->name[n++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
		}
		p += 1 + l;
	}
	q->name[n] = '\0';
	if (p + 5 > len)
		return fail(q, SBX_DNS_FORMERR, "question cut short");
	q->qtype = be16(m + p + 1);
	q->qclass = be16(m + p + 3);
	p += 5;
	if (be16(m + 10) == 0 && p != len)
		return fail(q, SBX_DNS_FORMERR, "bytes after the question");
	/* From here on the question is whole and can be echoed. */
	q->qlen = p - 12;
	memcpy(q->q, m + 12, q->qlen);
	if (q->qclass != 1)
		return fail(q, SBX_DNS_REFUSED, "class other than IN");
	if (!n)
		return fail(q, SBX_DNS_REFUSED, "the root name");
	if (bad_byte)
		return fail(q, SBX_DNS_REFUSED, "a byte other than a letter, digit, '-' or '_' in the name");
	return SBX_DNS_OK;
}

static unsigned char *put16(unsigned char *p, unsigned v)
{
	p[0] = (unsigned char)(v >> 8);
	p[1] = (unsigned char)v;
	return p + 2;
}

size_t sbx_dns_answer(const struct sbx_dns_query *q, int rcode, const unsigned char *addr, uint32_t ttl,
		      unsigned char *out)
{
	unsigned char *p = out;
	size_t alen = q->qtype == SBX_DNS_TYPE_AAAA ? 16 : 4;
	int an = rcode == SBX_DNS_NOERROR && addr && q->qlen &&
		 (q->qtype == SBX_DNS_TYPE_A || q->qtype == SBX_DNS_TYPE_AAAA);

	p = put16(p, q->id);
	/* QR, AA, RD as asked; RA: stub resolvers want recursion. */
	*p++ = (unsigned char)(0x84 | q->rd);
	*p++ = (unsigned char)(0x80 | (rcode & 0xf));
	p = put16(p, q->qlen ? 1 : 0);
	p = put16(p, an ? 1 : 0);
	p = put16(p, 0);
	p = put16(p, 0);
	memcpy(p, q->q, q->qlen);
	p += q->qlen;
	if (an) {
		p = put16(p, 0xc00c); /* the question's name */
		p = put16(p, q->qtype);
		p = put16(p, 1);
		p = put16(p, ttl >> 16);
		p = put16(p, ttl & 0xffff);
		p = put16(p, (unsigned)alen);
		memcpy(p, addr, alen);
		p += alen;
	}
	return (size_t)(p - out);
}

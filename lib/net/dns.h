/* One DNS query from an untrusted client, and the few answers sbx-broker
 * gives (RFC 1035). The parser is strict and bounded: a message of at most
 * SBX_DNS_MSG_MAX bytes, QR 0, opcode QUERY, exactly one question of class
 * IN, no answer or authority records, at most one additional record (an
 * EDNS OPT, not read), a name of at most 253 characters in labels of 1 to
 * 63 bytes drawn from letters, digits, '-' and '_', and no compression
 * pointer in the question (nothing is followed, so nothing can loop). The
 * same parser serves UDP payloads and TCP messages (after their 2-byte
 * length). */
#ifndef SBX_DNS_H
#define SBX_DNS_H

#include <stddef.h>
#include <stdint.h>

#define SBX_DNS_MSG_MAX 512      /* a query longer than this is not read */
#define SBX_DNS_NAME_MAX 253     /* text form, without the trailing dot */
#define SBX_DNS_LABELS_MAX 127
#define SBX_DNS_ANSWER_MAX (12 + 255 + 4 + 16 + 16) /* header, question, one A or AAAA */

/* Response codes. */
#define SBX_DNS_NOERROR 0
#define SBX_DNS_FORMERR 1
#define SBX_DNS_NXDOMAIN 3
#define SBX_DNS_NOTIMP 4
#define SBX_DNS_REFUSED 5

#define SBX_DNS_TYPE_A 1
#define SBX_DNS_TYPE_AAAA 28

/* sbx_dns_parse's results besides an rcode to answer with. */
#define SBX_DNS_OK 0             /* q is a well-formed query */
#define SBX_DNS_DROP -1          /* no header, or a response: never answered */

struct sbx_dns_query {
	uint16_t id;
	int rd;                   /* recursion desired, echoed */
	uint16_t qtype, qclass;
	char name[SBX_DNS_NAME_MAX + 1]; /* lower case, no trailing dot */
	unsigned char q[255 + 4]; /* the question as sent (echoed in answers) */
	size_t qlen;              /* 0: no question to echo */
	const char *why;          /* on an rcode result: one line */
};

/* Parse m[0..len). SBX_DNS_OK; SBX_DNS_DROP; or an rcode to answer with
 * (FORMERR, NOTIMP, REFUSED), why set and id and rd filled. */
int sbx_dns_parse(const unsigned char *m, size_t len, struct sbx_dns_query *q);

/* Build the answer to q into out (at least SBX_DNS_ANSWER_MAX bytes):
 * rcode, and with NOERROR one address record when addr is not NULL (4
 * bytes for A, 16 for AAAA, by q->qtype) with ttl, else none (NOERROR
 * without records: the name exists, not with this type). Its length. */
size_t sbx_dns_answer(const struct sbx_dns_query *q, int rcode, const unsigned char *addr, uint32_t ttl,
		      unsigned char *out);

#endif

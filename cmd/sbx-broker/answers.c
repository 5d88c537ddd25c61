/* Checked answers kept for the rest of the second they were checked in.
 * The resolver checks every address of a name against the host's own
 * addresses as they were read in that second; within the same second the
 * loop may hand the same answer to the next request for the name instead
 * of sending it to a worker again. Nothing else is relaxed: only answers
 * that passed every check are kept, an answer is never used in a later
 * second than the one its check was made in (so an address added to an
 * interface is refused from the next second on, as before), and a name is
 * still never resolved between the check and the dial. An answer serves
 * only the lane (the sandbox) whose lookup made it: another sandbox's
 * request for the name goes to its own lookup, so the broker's speed
 * never tells a sandbox what another resolved in the same second. The
 * table belongs to the loop thread alone. */
#include "broker.h"
#include "clock.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ANSWERS 64

struct answer {
	long sec;                  /* -1: empty */
	uint64_t lane_id;
	char host[SBX_HOST_MAX + 1];
	int allow_private;
	size_t naddrs;
	struct sockaddr_storage addrs[BROKER_MAX_ADDRS];
};

long broker_answers_second(void)
{
	return (long)(sbx_now_ms() / 1000);
}

static size_t slot(uint64_t lane_id, const char *host)
{
	uint32_t h = 2166136261u;

	for (int i = 0; i < 8; i++)
		h = (h ^ (unsigned char)(lane_id >> (8 * i))) * 16777619u;
	for (; *host; host++)
		h = (h ^ (unsigned char)*host) * 16777619u;
	return h % ANSWERS;
}

static void set_port(struct sockaddr_storage *a, unsigned port)
{
	if (a->ss_family == AF_INET)
		((struct sockaddr_in *)a)->sin_port = htons((uint16_t)port);
	else
		((struct sockaddr_in6 *)a)->sin6_port = htons((uint16_t)port);
}

int broker_answers_get(const struct broker_answers *t, struct broker_req *q)
{
	const struct answer *a;

	if (!t->tab)
		return 0;
	a = &t->tab[slot(q->lane_id, q->host)];
	if (a->sec != broker_answers_second() || a->allow_private != q->allow_private ||
	    a->lane_id != q->lane_id || strcmp(a->host, q->host))
		return 0;
	memcpy(q->addrs, a->addrs, a->naddrs * sizeof a->addrs[0]);
	q->naddrs = a->naddrs;
	for (size_t i = 0; i < q->naddrs; i++)
		set_port(&q->addrs[i], q->port);
	q->checked_sec = a->sec;
	return 1;
}

void broker_answers_put(struct broker_answers *t, const struct broker_req *q)
{
	struct answer *a;

	if (q->refused || !q->naddrs || q->checked_sec != broker_answers_second())
		return;
	if (!t->tab) {
		t->tab = malloc(ANSWERS * sizeof *t->tab);
		if (!t->tab)
			return; /* no table: every name goes to the resolver */
		for (size_t i = 0; i < ANSWERS; i++)
			t->tab[i].sec = -1;
	}
	a = &t->tab[slot(q->lane_id, q->host)];
	a->sec = q->checked_sec;
	a->lane_id = q->lane_id;
	a->allow_private = q->allow_private;
	memcpy(a->host, q->host, sizeof a->host);
	a->naddrs = q->naddrs;
	memcpy(a->addrs, q->addrs, q->naddrs * sizeof q->addrs[0]);
}

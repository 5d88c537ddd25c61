/* Name resolution off the event loop: a few threads around getaddrinfo
 * (thread-safe in musl and glibc). Each answer is checked in the worker,
 * every address of it, against the host's interface addresses as they are
 * (read again when the copy is over a second old, so an address added
 * after start-up is refused from the next second on). Finished requests
 * go back to the loop on a list; an eventfd wakes the loop only when that
 * list stops being empty, so a burst of answers costs one wake-up and one
 * read, not one pipe write and one read per name. */
#include "broker.h"
#include "die.h"
#include "exitcodes.h"
#include "netaddr.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <string.h>
#include <unistd.h>


/* What gets dialled: IPv4 for the mapped and compatible IPv6 forms. */
static void dial_form(const struct sockaddr *sa, unsigned port, struct sockaddr_storage *out)
{
	struct in_addr v4;

	memset(out, 0, sizeof *out);
	if (sa->sa_family == AF_INET6 &&
	    sbx_addr6_embedded4(&((const struct sockaddr_in6 *)sa)->sin6_addr, &v4)) {
		struct sockaddr_in *s = (struct sockaddr_in *)out;
		s->sin_family = AF_INET;
		s->sin_addr = v4;
		s->sin_port = htons((uint16_t)port);
		return;
	}
	if (sa->sa_family == AF_INET) {
		memcpy(out, sa, sizeof(struct sockaddr_in));
		((struct sockaddr_in *)out)->sin_port = htons((uint16_t)port);
	} else {
		memcpy(out, sa, sizeof(struct sockaddr_in6));
		((struct sockaddr_in6 *)out)->sin6_port = htons((uint16_t)port);
	}
}

/* The answer for q's name: its pinned addresses, or what getaddrinfo
 * says. 0, or -1 (name did not resolve). */
static int lookup(struct broker_resolver *r, struct broker_req *q, struct sockaddr_storage *out, size_t *n)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC };
	struct addrinfo *res, *a;
	size_t max = *n;

	*n = broker_pinned(r->cfg, q->host, out, max);
	if (*n)
		return 0;
	if (getaddrinfo(q->host, NULL, &hints, &res))
		return -1;
	for (a = res; a && *n < max; a = a->ai_next) {
		if (a->ai_family == AF_INET)
			memcpy(&out[(*n)++], a->ai_addr, sizeof(struct sockaddr_in));
		else if (a->ai_family == AF_INET6)
			memcpy(&out[(*n)++], a->ai_addr, sizeof(struct sockaddr_in6));
	}
	freeaddrinfo(res);
	return 0;
}

#define ANSWER_MAX 64

static void resolve_one(struct broker_resolver *r, struct broker_req *q)
{
	struct sockaddr_storage ans[ANSWER_MAX];
	const struct broker_own *own;
	size_t nown, nans = ANSWER_MAX;
	struct sbx_addr_rule rule;

	if (lookup(r, q, ans, &nans) < 0) {
		q->refused = "name did not resolve";
		q->status = 502;
		return;
	}
	own = broker_own_get(r, &q->checked_sec);
	if (!own) {
		/* Without the host's own addresses the check cannot be made:
		 * fail closed. */
		q->refused = "unable to list this host's addresses";
		q->status = 502;
		return;
	}
	rule = (struct sbx_addr_rule){ .allow_private = q->allow_private, .own = broker_own_addrs(own, &nown),
				       .deny = r->cfg->deny, .ndeny = r->cfg->ndeny };
	rule.nown = nown;
	/* One refused address refuses the name: an attacker who controls a
	 * name's DNS can mix a public answer with an internal one. */
	for (size_t i = 0; i < nans; i++) {
		const struct sockaddr *sa = (const struct sockaddr *)&ans[i];
		const char *why = sbx_addr_decide(sa, &rule, &q->closed_private);
		if (why) {
			sbx_addr_text(sa, q->addr_text, sizeof q->addr_text);
			q->refused = why;
			q->status = 403;
			q->naddrs = 0;
			broker_own_put(r, own);
			return;
		}
		if (q->naddrs < BROKER_MAX_ADDRS) {
			struct sockaddr_storage d;
			size_t k;
			dial_form(sa, q->port, &d);
			for (k = 0; k < q->naddrs && memcmp(&q->addrs[k], &d, sizeof d); k++)
				;
			if (k == q->naddrs)
				q->addrs[q->naddrs++] = d;
		}
	}
	broker_own_put(r, own);
	if (!q->naddrs) {
		q->refused = "name has no internet address";
		q->status = 502;
	}
}

static void *worker(void *arg)
{
	struct broker_resolver *r = arg;

	for (;;) {
		struct broker_req *q;
		int wake;
		pthread_mutex_lock(&r->mu);
		while (!r->head) {
			r->idle++;
			pthread_cond_wait(&r->cv, &r->mu);
			r->idle--;
		}
		q = r->head;
		r->head = q->next;
		if (!r->head)
			r->tail = NULL;
		pthread_mutex_unlock(&r->mu);
		resolve_one(r, q);
		q->next = NULL;
		pthread_mutex_lock(&r->mu);
		wake = r->done == NULL;
		if (r->done_tail)
			r->done_tail->next = q;
		else
			r->done = q;
		r->done_tail = q;
		pthread_mutex_unlock(&r->mu);
		/* The loop reads the eventfd before it takes the list, so an
		 * answer added after its take always brings a new wake-up. */
		if (wake) {
			uint64_t one = 1;
			while (write(r->result_fd, &one, sizeof one) < 0 && errno == EINTR)
				;
		}
	}
	return NULL;
}

void broker_resolver_start(struct broker_resolver *r, const struct broker_cfg *cfg, unsigned nthreads)
{
	pthread_attr_t at;

	memset(r, 0, sizeof *r);
	r->cfg = cfg;
	pthread_mutex_init(&r->mu, NULL);
	pthread_mutex_init(&r->own_mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	r->result_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (r->result_fd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create the resolver eventfd");
	pthread_attr_init(&at);
	/* musl's default thread stack is small; getaddrinfo and a list of
	 * interface addresses want more. */
	pthread_attr_setstacksize(&at, 256 * 1024);
	for (unsigned i = 0; i < nthreads; i++) {
		pthread_t t;
		int e = pthread_create(&t, &at, worker, r);
		if (e) {
			errno = e;
			sbx_die_errno(SBX_EXIT_SYS, "unable to start a resolver thread");
		}
		pthread_detach(t);
	}
	pthread_attr_destroy(&at);
}

void broker_resolver_submit(struct broker_resolver *r, struct broker_req *first, struct broker_req *last,
			    unsigned n)
{
	last->next = NULL;
	pthread_mutex_lock(&r->mu);
	if (r->tail)
		r->tail->next = first;
	else
		r->head = first;
	r->tail = last;
	/* Wake only as many sleepers as there is work for; a busy worker
	 * takes the rest when it comes back to the queue. */
	if (r->idle) {
		if (n >= r->idle)
			pthread_cond_broadcast(&r->cv);
		else
			while (n--)
				pthread_cond_signal(&r->cv);
	}
	pthread_mutex_unlock(&r->mu);
}

struct broker_req *broker_resolver_take(struct broker_resolver *r)
{
	struct broker_req *q;
	uint64_t v;

	(void)!read(r->result_fd, &v, sizeof v);
	pthread_mutex_lock(&r->mu);
	q = r->done;
	r->done = r->done_tail = NULL;
	pthread_mutex_unlock(&r->mu);
	return q;
}

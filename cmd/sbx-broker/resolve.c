/* Name resolution off the event loop: threads around getaddrinfo
 * (thread-safe in musl and glibc). Each answer is checked in the worker,
 * every address of it, against the host's interface addresses as they are
 * (read again when the copy is over a second old, so an address added
 * after start-up is refused from the next second on). Finished requests
 * go back to the loop on a list; an eventfd wakes the loop only when that
 * list stops being empty, so a burst of answers costs one wake-up and one
 * read, not one pipe write and one read per name.
 *
 * Sandboxes share the workers, and a lookup can take as long as the
 * slowest DNS server an allowed name leads to: so no sandbox may keep
 * another's names waiting. Each sandbox has a lane (the clients of the
 * broker's own sockets share one): its own queue, at most max_pending
 * lookups in it (the excess is refused by the caller), and at most
 * LANE_INFLIGHT of them with workers at once. Lanes take turns: each
 * hand-out goes to the lane that has waited longest, and a lane that has
 * no lookup with a worker gets one even when every worker is busy (a
 * thread is started for it, up to THREADS_MAX), while second and later
 * lookups of a lane share SHARED_EXTRA workers. So one sandbox's flood
 * delays another's lookups by none of its own, and many sandboxes'
 * floods delay a newcomer's first lookup only past THREADS_MAX lookups
 * at once. Pinned names never queue: their answer is checked on the
 * loop's thread. The lanes and the turns are the loop's alone; workers
 * see only what was handed to them. */
#include "broker.h"
#include "die.h"
#include "exitcodes.h"
#include "netaddr.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
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

#define LANE_INFLIGHT 4  /* lookups of one lane with workers at once */
#define SHARED_EXTRA 32  /* lookups beyond their lane's first, all lanes together */
#define THREADS_MAX 128

/* The answer for q's name from getaddrinfo. 0, or -1 (name did not
 * resolve). */
static int lookup(struct broker_req *q, struct sockaddr_storage *out, size_t *n)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC };
	struct addrinfo *res, *a;
	size_t max = *n;

	*n = 0;
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

/* Check every address of an answer; q gets the verdict and the
 * addresses to dial. */
static void check(struct broker_resolver *r, struct broker_req *q, const struct sockaddr_storage *ans, size_t nans)
{
	const struct broker_own *own;
	size_t nown;
	struct sbx_addr_rule rule;

	own = broker_own_get(r, &q->checked_sec);
	if (!own) {
		/* Without the host's own addresses the check cannot be made:
		 * fail closed. */
		q->refused = "unable to list this host's addresses";
		q->status = 502;
		return;
	}
	rule = (struct sbx_addr_rule){ .allow_private = q->allow_private, .own = broker_own_addrs(own, &nown),
				       .deny = r->cfg->deny, .ndeny = r->cfg->ndeny,
				       .allow = r->cfg->allow, .nallow = r->cfg->nallow };
	rule.nown = nown;
	/* One refused address refuses the name: an attacker who controls a
	 * name's DNS can mix a public answer with an internal one. */
	for (size_t i = 0; i < nans; i++) {
		const struct sockaddr *sa = (const struct sockaddr *)&ans[i];
		if (sbx_addr_decide(sa, &rule, q->why, sizeof q->why) < 0) {
			sbx_addr_text(sa, q->addr_text, sizeof q->addr_text);
			q->refused = q->why;
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

static void resolve_one(struct broker_resolver *r, struct broker_req *q)
{
	struct sockaddr_storage ans[ANSWER_MAX];
	size_t nans = ANSWER_MAX;

	if (lookup(q, ans, &nans) < 0) {
		q->refused = "name did not resolve";
		q->status = 502;
		return;
	}
	check(r, q, ans, nans);
}

int broker_resolve_pinned(struct broker_resolver *r, struct broker_req *q)
{
	struct sockaddr_storage ans[BROKER_MAX_ADDRS];
	size_t n = broker_pinned(r->cfg, q->host, ans, BROKER_MAX_ADDRS);

	if (!n)
		return 0;
	check(r, q, ans, n);
	return 1;
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

/* One more worker: 0, or -1 (none could be started; the lookups wait). */
static int grow(struct broker_resolver *r)
{
	pthread_t t;
	int e;

	if (r->nthreads >= r->max_threads)
		return -1;
	e = pthread_create(&t, &r->attr, worker, r);
	if (e) {
		/* Capacity, not a check: the lookups wait for the workers there
		 * are. Said once. */
		errno = e;
		sbx_warn_errno("unable to start resolver thread %u (names wait for the %u running)", r->nthreads + 1,
			       r->nthreads);
		r->max_threads = r->nthreads;
		return -1;
	}
	pthread_detach(t);
	r->nthreads++;
	return 0;
}

void broker_resolver_start(struct broker_resolver *r, const struct broker_cfg *cfg, unsigned nthreads)
{
	memset(r, 0, sizeof *r);
	r->cfg = cfg;
	pthread_mutex_init(&r->mu, NULL);
	pthread_mutex_init(&r->own_mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	r->result_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (r->result_fd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create the resolver eventfd");
	r->max_pending = cfg->max_sb_lookups;
	r->max_threads = THREADS_MAX;
	pthread_attr_init(&r->attr);
	/* musl's default thread stack is small; getaddrinfo and a list of
	 * interface addresses want more. */
	pthread_attr_setstacksize(&r->attr, 256 * 1024);
	for (unsigned i = 0; i < nthreads; i++) {
		pthread_t t;
		int e = pthread_create(&t, &r->attr, worker, r);
		if (e) {
			errno = e;
			sbx_die_errno(SBX_EXIT_SYS, "unable to start a resolver thread");
		}
		pthread_detach(t);
		r->nthreads++;
	}
}

struct broker_lane *broker_lane_new(struct broker_resolver *r)
{
	struct broker_lane *l = calloc(1, sizeof *l);

	if (l)
		l->id = ++r->lane_ids;
	return l;
}

static void turn_add(struct broker_resolver *r, struct broker_lane *l)
{
	l->next = NULL;
	l->prev = r->turn_tail;
	if (r->turn_tail)
		r->turn_tail->next = l;
	else
		r->turn_head = l;
	r->turn_tail = l;
	l->listed = 1;
}

static void turn_remove(struct broker_resolver *r, struct broker_lane *l)
{
	if (!l->listed)
		return;
	if (l->prev)
		l->prev->next = l->next;
	else
		r->turn_head = l->next;
	if (l->next)
		l->next->prev = l->prev;
	else
		r->turn_tail = l->prev;
	l->prev = l->next = NULL;
	l->listed = 0;
}

static void lane_free_if_done(struct broker_resolver *r, struct broker_lane *l)
{
	if (l->released && !l->pending && l != &r->own_sockets) {
		turn_remove(r, l);
		free(l);
	}
}

/* Drop the waiting lookups whose connection has gone (conn_close clears
 * conn): nobody wants their answer. The requests are the loop's
 * (conn.c's req_new); free() is what req_free does past its cache. */
static void purge(struct broker_resolver *r, struct broker_lane *l)
{
	struct broker_req **pp = &l->head, *q;

	l->tail = NULL;
	while ((q = *pp)) {
		if (q->conn) {
			l->tail = q;
			pp = &q->next;
			continue;
		}
		*pp = q->next;
		l->pending--;
		free(q);
	}
	if (!l->head)
		turn_remove(r, l);
}

void broker_lane_release(struct broker_resolver *r, struct broker_lane *l)
{
	if (!l)
		return;
	l->released = 1;
	purge(r, l);
	lane_free_if_done(r, l);
}

int broker_resolver_queue(struct broker_resolver *r, struct broker_lane *l, struct broker_req *q)
{
	if (l->pending >= r->max_pending) {
		purge(r, l);
		if (l->pending >= r->max_pending)
			return -1;
	}
	q->lane = l;
	q->next = NULL;
	if (l->tail)
		l->tail->next = q;
	else
		l->head = q;
	l->tail = q;
	l->pending++;
	if (!l->listed)
		turn_add(r, l);
	return 0;
}

/* May l hand one more lookup to a worker now? */
static int may_take(const struct broker_resolver *r, const struct broker_lane *l)
{
	if (l->inflight >= LANE_INFLIGHT)
		return 0;
	return l->inflight == 0 || r->extra < SHARED_EXTRA;
}

void broker_resolver_dispatch(struct broker_resolver *r)
{
	struct broker_req *first = NULL, *last = NULL;
	unsigned n = 0;

	for (;;) {
		struct broker_lane *l;
		struct broker_req *q;

		/* The lane that has waited longest and may take one. */
		for (l = r->turn_head; l && !may_take(r, l); l = l->next)
			;
		if (!l)
			break;
		q = l->head;
		if (!q->conn) {
			purge(r, l);
			lane_free_if_done(r, l);
			continue;
		}
		if (r->busy >= r->nthreads && grow(r) < 0)
			break;
		l->head = q->next;
		if (!l->head)
			l->tail = NULL;
		q->next = NULL;
		if (l->inflight++)
			r->extra++;
		r->busy++;
		if (last)
			last->next = q;
		else
			first = q;
		last = q;
		n++;
		/* Its turn is over: to the back of the list, or off it. */
		turn_remove(r, l);
		if (l->head)
			turn_add(r, l);
	}
	if (!n)
		return;
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
	/* Their workers are free again, and so is their lanes' room. */
	for (struct broker_req *p = q; p; p = p->next) {
		struct broker_lane *l = p->lane;
		p->lane = NULL;
		r->busy--;
		if (--l->inflight)
			r->extra--;
		l->pending--;
		lane_free_if_done(r, l);
	}
	return q;
}

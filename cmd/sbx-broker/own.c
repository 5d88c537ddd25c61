/* The host's own addresses, which no name may resolve to: every address of
 * every interface, read with one rtnetlink dump (RTM_GETADDR) and kept as
 * a whole list, however long. A dump that cannot be read whole (an error,
 * a message cut short, no memory, or a list that changed while it was
 * read, NLM_F_DUMP_INTR, three times in a row) gives no list: the worker
 * refuses the name (fail closed), never checks against part of the list.
 *
 * The workers share one list, read again at most once a second; a worker
 * holds a reference while it checks, so a new list never frees the one a
 * check is using. */
#include "broker.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct broker_own {
	size_t refs;
	size_t n, cap;
	struct sockaddr_storage a[];
};

static struct broker_own *own_add(struct broker_own *o, int family, const void *addr, uint32_t scope)
{
	struct sockaddr_storage *s;

	if (o->n == o->cap) {
		size_t cap = o->cap * 2;
		struct broker_own *b = realloc(o, sizeof *o + cap * sizeof o->a[0]);
		if (!b) {
			free(o);
			return NULL;
		}
		o = b;
		o->cap = cap;
	}
	s = &o->a[o->n++];
	memset(s, 0, sizeof *s);
	if (family == AF_INET) {
		struct sockaddr_in *a4 = (struct sockaddr_in *)s;
		a4->sin_family = AF_INET;
		memcpy(&a4->sin_addr, addr, 4);
	} else {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)s;
		a6->sin6_family = AF_INET6;
		memcpy(&a6->sin6_addr, addr, 16);
		a6->sin6_scope_id = scope;
	}
	return o;
}

/* One dump. 0: *out is the whole list; 1: the list changed while it was
 * read (try again); -1: it cannot be read. */
static int dump(int fd, unsigned seq, struct broker_own **out)
{
	struct {
		struct nlmsghdr h;
		struct ifaddrmsg m;
	} req = {
		.h = { .nlmsg_len = sizeof req, .nlmsg_type = RTM_GETADDR,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = seq },
		.m = { .ifa_family = AF_UNSPEC },
	};
	static char buf[32768] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct broker_own *o = malloc(sizeof *o + 64 * sizeof o->a[0]);
	int intr = 0;

	if (!o)
		return -1;
	o->refs = 1;
	o->n = 0;
	o->cap = 64;
	if (send(fd, &req, sizeof req, 0) != (ssize_t)sizeof req)
		goto fail;
	for (;;) {
		struct iovec iov = { buf, sizeof buf };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t r = recvmsg(fd, &mh, 0);
		struct nlmsghdr *h;
		size_t left;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || (mh.msg_flags & MSG_TRUNC))
			goto fail;
		left = (size_t)r;
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			struct ifaddrmsg *m;
			struct rtattr *a;
			size_t al;
			const void *addr = NULL, *local = NULL;

			if (h->nlmsg_seq != seq)
				continue;
			if (h->nlmsg_flags & NLM_F_DUMP_INTR)
				intr = 1;
			if (h->nlmsg_type == NLMSG_DONE) {
				if (intr) {
					free(o);
					return 1;
				}
				*out = o;
				return 0;
			}
			if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type != RTM_NEWADDR ||
			    h->nlmsg_len < NLMSG_LENGTH(sizeof *m))
				goto fail;
			m = NLMSG_DATA(h);
			if (m->ifa_family != AF_INET && m->ifa_family != AF_INET6)
				continue;
			al = h->nlmsg_len - NLMSG_LENGTH(sizeof *m);
			for (a = IFA_RTA(m); RTA_OK(a, al); a = RTA_NEXT(a, al)) {
				size_t want = m->ifa_family == AF_INET ? 4 : 16;
				if (RTA_PAYLOAD(a) != want)
					continue;
				if (a->rta_type == IFA_ADDRESS)
					addr = RTA_DATA(a);
				else if (a->rta_type == IFA_LOCAL)
					local = RTA_DATA(a);
			}
			/* IFA_LOCAL is the interface's own address where there is
			 * one (IFA_ADDRESS is then the peer's, on a point-to-point
			 * link), as getifaddrs takes it. */
			if (!local)
				local = addr;
			if (!local)
				goto fail;
			if (!(o = own_add(o, m->ifa_family, local, m->ifa_index)))
				return -1;
		}
		if (left)
			goto fail; /* a message cut short */
	}
fail:
	free(o);
	return -1;
}

static struct broker_own *read_own(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	static unsigned seq;
	struct broker_own *o = NULL;
	int r = -1;

	if (fd < 0)
		return NULL;
	for (int i = 0; i < 3; i++) {
		r = dump(fd, ++seq, &o);
		if (r != 1)
			break;
	}
	close(fd);
	return r == 0 ? o : NULL;
}

static void own_put_locked(struct broker_own *o)
{
	if (o && --o->refs == 0)
		free(o);
}

const struct broker_own *broker_own_get(struct broker_resolver *r, long *sec)
{
	long now = broker_answers_second();
	struct broker_own *o;

	pthread_mutex_lock(&r->own_mu);
	if (!r->own || now != r->own_sec) {
		/* A list that cannot be read replaces the old one with
		 * nothing: the next check fails closed rather than use a
		 * list that may be missing an address added since. */
		own_put_locked(r->own);
		r->own = read_own();
		r->own_sec = now;
	}
	o = r->own;
	if (o)
		o->refs++;
	*sec = r->own_sec;
	pthread_mutex_unlock(&r->own_mu);
	return o;
}

void broker_own_put(struct broker_resolver *r, const struct broker_own *o)
{
	pthread_mutex_lock(&r->own_mu);
	own_put_locked((struct broker_own *)o);
	pthread_mutex_unlock(&r->own_mu);
}

const struct sockaddr_storage *broker_own_addrs(const struct broker_own *o, size_t *n)
{
	*n = o->n;
	return o->a;
}

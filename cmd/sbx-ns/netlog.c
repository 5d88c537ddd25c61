/* --net broker: the broker's decisions on the sandbox's connections,
 * brought to the caller.
 *
 * The channel the sandbox's listeners were handed over on (net.c) carries
 * them back: after "SBX-HANDOFF OK", the broker writes, for every
 * connection it accepted from the sandbox, its log line for that
 * connection (one JSON object, event "connection", when the connection
 * ends; a refusal before the client sees it), and
 * {"event":"unreported","count":N} for lines it had no room for. When the
 * sandbox is over, sbx-ns shuts its side of the channel down; the broker
 * then ends the sandbox's connections, writes their lines and closes the
 * channel, and sbx-ns reads it to its end (at most NET_DRAIN_MS).
 *
 * On the status fd, bounded like the seccomp denial lines: one
 * {"event":"net"} line per destination and outcome (decision, host, port,
 * reason), a refusal's first at once and then at most one a second while
 * more come, allowed connections summarised at the end (count, bytes each
 * way); the count is always the running total, and past NET_KEYS distinct
 * outcomes the rest share one line per kind, host "other". At the end,
 * one stderr note sums up the refusals. */
#include "ns.h"

#include "clock.h"

#include "die.h"
#include "json.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define NET_KEYS 64
#define NET_EVERY_MS 1000
#define NET_LINE 4096
#define NET_DRAIN_MS 3000
#define NET_NOTE_MAX 3

struct net_ent {
	char decision[16];
	int other;           /* the shared entry past NET_KEYS outcomes */
	char host[256];      /* "": refused before a request was read */
	unsigned port;
	int status;
	char reason[256];
	uint64_t count, reported, last_ms, up, down;
};

static struct {
	char buf[NET_LINE];
	size_t len;
	int skipping;        /* a line longer than buf: dropped to its end */
	size_t n;
	struct net_ent ent[NET_KEYS + 2]; /* + "other" refused, "other" allowed */
	uint64_t unreported;
} nl;

static int allowed(const struct net_ent *e)
{
	return !strcmp(e->decision, "allowed");
}

/* Bounded like the denial lines (ns_status_due). */
static void report(const struct ns_run *r, struct net_ent *e, uint64_t now, int final)
{
	struct sbx_json j;

	if (!ns_status_due(r, final, e->count, &e->reported, &e->last_ms, now))
		return;
	sbx_json_begin(&j, NS_PROG, "net");
	sbx_json_str(&j, "host", e->other ? "other" : e->host[0] ? e->host : NULL);
	if (e->port)
		sbx_json_uint(&j, "port", e->port);
	else
		sbx_json_null(&j, "port");
	sbx_json_str(&j, "decision", e->decision);
	if (e->status)
		sbx_json_int(&j, "status", e->status);
	sbx_json_str(&j, "reason", e->reason[0] ? e->reason : NULL);
	sbx_json_uint(&j, "count", e->count);
	sbx_json_uint(&j, "bytes_up", e->up);
	sbx_json_uint(&j, "bytes_down", e->down);
	sbx_json_write(&j, r->a->status_fd);
}

static const char *jstr(json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	return v ? v : "";
}

/* Copy a field for the note and the status: the names in it come from
 * the sandbox's requests, so no control character reaches the caller's
 * terminal. */
static void field(char *dst, size_t sz, json_t *o, const char *k)
{
	snprintf(dst, sz, "%s", jstr(o, k));
	for (char *p = dst; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

static uint64_t juint(json_t *o, const char *k)
{
	json_int_t v = json_integer_value(json_object_get(o, k));
	return v > 0 ? (uint64_t)v : 0;
}

static void take_line(const struct ns_run *r, const char *line, size_t len)
{
	json_t *o = json_loadb(line, len, 0, NULL);
	struct net_ent k = { 0 }, *e = NULL;
	const char *ev;
	uint64_t now = sbx_now_ms();

	if (!json_is_object(o)) {
		json_decref(o);
		return;
	}
	ns_observe_conn(r, o);
	ev = jstr(o, "event");
	if (!strcmp(ev, "unreported")) {
		nl.unreported += juint(o, "count");
		json_decref(o);
		return;
	}
	if (strcmp(ev, "connection")) {
		json_decref(o);
		return;
	}
	field(k.decision, sizeof k.decision, o, "decision");
	field(k.host, sizeof k.host, o, "host");
	field(k.reason, sizeof k.reason, o, "reason");
	k.port = (unsigned)juint(o, "port");
	k.status = (int)juint(o, "status");
	for (size_t i = 0; i < nl.n && !e; i++)
		if (!strcmp(nl.ent[i].decision, k.decision) && !strcmp(nl.ent[i].host, k.host) &&
		    nl.ent[i].port == k.port && nl.ent[i].status == k.status && !strcmp(nl.ent[i].reason, k.reason))
			e = &nl.ent[i];
	if (!e && nl.n < NET_KEYS) {
		e = &nl.ent[nl.n++];
		*e = k;
	}
	if (!e) {
		e = &nl.ent[NET_KEYS + allowed(&k)];
		if (!e->count)
			snprintf(e->decision, sizeof e->decision, "%s", k.decision);
		e->other = 1;
	}
	e->count++;
	e->up += juint(o, "bytes_up");
	e->down += juint(o, "bytes_down");
	json_decref(o);
	if (!allowed(e) && (!e->reported || now - e->last_ms >= NET_EVERY_MS))
		report(r, e, now, 0);
}

int ns_net_fd(const struct ns_run *r)
{
	if (r->p->net != NET_BROKER)
		return -1;
	return r->x.broker_chan >= 0 ? r->x.broker_chan : r->x.net_pending;
}

/* A new broker's lines start afresh: a line the last one cut is dropped. */
void ns_net_reset_lines(void)
{
	nl.len = 0;
	nl.skipping = 0;
}

/* The channel is readable (or ended): take every whole line. */
void ns_net_handle(struct ns_run *r)
{
	if (ns_net_pending(r))
		return;
	for (;;) {
		ssize_t n = recv(r->x.broker_chan, nl.buf + nl.len, sizeof nl.buf - nl.len, MSG_DONTWAIT);
		char *nlp;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			/* The broker is gone, or has said everything. */
			ns_net_lost(r);
			return;
		}
		nl.len += (size_t)n;
		while ((nlp = memchr(nl.buf, '\n', nl.len))) {
			size_t l = (size_t)(nlp - nl.buf) + 1;
			if (!nl.skipping)
				take_line(r, nl.buf, l - 1);
			nl.skipping = 0;
			memmove(nl.buf, nl.buf + l, nl.len - l);
			nl.len -= l;
		}
		if (nl.len == sizeof nl.buf) {
			nl.skipping = 1;
			nl.len = 0;
		}
	}
}

static void note(void)
{
	char text[1024], more[128] = "";
	size_t off = 0, shown = 0, kinds = 0;
	uint64_t total = 0;

	for (size_t i = 0; i < NET_KEYS + 2; i++)
		if (nl.ent[i].count && !allowed(&nl.ent[i])) {
			total += nl.ent[i].count;
			kinds++;
		}
	if (nl.unreported)
		snprintf(more, sizeof more, "; %llu more connection%s not reported in detail (the "
			 "broker's log has them)", (unsigned long long)nl.unreported,
			 nl.unreported == 1 ? "" : "s");
	if (!total) {
		if (nl.unreported)
			sbx_note("the broker's decisions on %llu connection%s were not reported in detail "
				 "(its log has them)", (unsigned long long)nl.unreported,
				 nl.unreported == 1 ? "" : "s");
		return;
	}
	text[0] = '\0';
	for (size_t i = 0; i < NET_KEYS + 2 && shown < NET_NOTE_MAX; i++) {
		const struct net_ent *e = &nl.ent[i];
		int w;
		if (!e->count || allowed(e))
			continue;
		if (e->other)
			w = snprintf(text + off, sizeof text - off, "%sother destinations (%llu)", shown ? "; " : "",
				     (unsigned long long)e->count);
		else if (e->host[0])
			w = snprintf(text + off, sizeof text - off, "%s%s:%u: %s (%llu)", shown ? "; " : "", e->host,
				     e->port, e->reason, (unsigned long long)e->count);
		else
			w = snprintf(text + off, sizeof text - off, "%s%s (%llu)", shown ? "; " : "", e->reason,
				     (unsigned long long)e->count);
		if (w < 0 || (size_t)w >= sizeof text - off)
			break;
		off += (size_t)w;
		shown++;
	}
	sbx_note("the broker refused %llu connection%s: %s%s%s", (unsigned long long)total, total == 1 ? "" : "s",
		 text, kinds > shown ? "; and more (see the status fd)" : "", more);
}

/* The sandbox is over: let the broker end its connections, read their
 * lines, then the totals not yet reported and the note. */
void ns_net_finish(struct ns_run *r)
{
	uint64_t until = sbx_now_ms() + NET_DRAIN_MS;

	if (r->p->net != NET_BROKER)
		return;
	r->x.net_ending = 1;
	if (r->x.broker_chan >= 0)
		shutdown(r->x.broker_chan, SHUT_WR);
	while (r->x.broker_chan >= 0) {
		struct pollfd p = { .fd = r->x.broker_chan, .events = POLLIN };
		uint64_t now = sbx_now_ms();
		if (now >= until || (poll(&p, 1, (int)(until - now)) < 0 && errno != EINTR))
			break;
		ns_net_handle(r);
	}
	if (r->x.broker_chan >= 0) {
		close(r->x.broker_chan);
		r->x.broker_chan = -1;
	}
	for (size_t i = 0; i < NET_KEYS + 2; i++)
		if (nl.ent[i].count > nl.ent[i].reported)
			report(r, &nl.ent[i], sbx_now_ms(), 1);
	if (nl.unreported && r->a->status_fd >= 0) {
		struct sbx_json j;
		sbx_json_begin(&j, NS_PROG, "net");
		sbx_json_str(&j, "decision", "unreported");
		sbx_json_uint(&j, "count", nl.unreported);
		sbx_json_write(&j, r->a->status_fd);
	}
	note();
}

/* Decision lines: one JSON line per connection in the log, and the same
 * line to the sandbox the connection came from, never waited for.
 *
 * Every line of the log passes through one budget here: a sandbox's (its
 * connections, its DNS queries) or a client's of the broker's own sockets
 * (by uid), at most LOG_LINES_PER_SEC lines in each second of the
 * monotonic clock each. The
 * lines past it are not written but counted by kind, and one "dropped"
 * line says how many when the second is over (or the sandbox ends). Each
 * line is shorter than LOG_LINE_MAX: its strings are bounded (a host of
 * 253 bytes, a reason of 255, a method of 15, a route's path of 64, each
 * byte at most 6 once escaped), so a flood grows the log by at most
 * (LOG_LINES_PER_SEC + 1) * LOG_LINE_MAX bytes a second per budget. All
 * budgets together write at most LOG_LINES_ALL_PER_SEC lines a second
 * (their summaries included) and one summary of their own: however many
 * sandboxes and uids, the log grows by at most
 * (LOG_LINES_ALL_PER_SEC + 1) * LOG_LINE_MAX bytes a second. The
 * sandbox's channel is not the log: it gets every line it has room for. */
#include "conn.h"
#include "clock.h"
#include "die.h"
#include "fd.h"
#include "json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>


/* UTC to the millisecond. The seconds are formatted once per second:
 * every log line has a time. */
void iso_time(char *buf, size_t sz)
{
	static time_t last = -1;
	static char sec[24];
	static size_t n;
	struct timespec ts;
	unsigned ms;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (ts.tv_sec != last) {
		struct tm tm;
		gmtime_r(&ts.tv_sec, &tm);
		n = strftime(sec, sizeof sec, "%Y-%m-%dT%H:%M:%S", &tm);
		last = ts.tv_sec;
	}
	ms = (unsigned)(ts.tv_nsec / 1000000);
	if (sz < n + 6)
		return;
	memcpy(buf, sec, n);
	buf[n] = '.';
	buf[n + 1] = (char)('0' + ms / 100);
	buf[n + 2] = (char)('0' + ms / 10 % 10);
	buf[n + 3] = (char)('0' + ms % 10);
	buf[n + 4] = 'Z';
	buf[n + 5] = '\0';
}

static void write_log(struct loop *L, const char *line, size_t len)
{
	/* The log is the record of what left the machine: a failed write is
	 * reported, never silently dropped. */
	if (!line || sbx_write_all(L->cfg->log_fd, line, len) < 0)
		sbx_warn_errno("unable to write the log");
}

void log_budget_init(struct log_budget *b, const char *fmt, ...)
{
	va_list ap;

	memset(b, 0, sizeof *b);
	b->limit = LOG_LINES_PER_SEC;
	va_start(ap, fmt);
	vsnprintf(b->who, sizeof b->who, fmt, ap);
	va_end(ap);
}

static uint64_t dropped(const struct log_budget *b)
{
	uint64_t n = 0;
	for (int k = 0; k < LOG_KINDS; k++)
		n += b->dropped[k];
	return n;
}

static void pend(struct loop *L, struct log_budget *b)
{
	if (b->pending)
		return;
	b->pending = 1;
	b->next_pending = L->log_pending;
	L->log_pending = b;
}

static void unpend(struct loop *L, struct log_budget *b)
{
	struct log_budget **p;

	if (!b->pending)
		return;
	for (p = &L->log_pending; *p && *p != b; p = &(*p)->next_pending)
		;
	if (*p)
		*p = b->next_pending;
	b->pending = 0;
}

static void summary(struct loop *L, struct log_budget *b);

/* A new second: b's count of the last one goes out first. */
static void roll(struct loop *L, struct log_budget *b)
{
	uint64_t sec = sbx_now_ms() / 1000;

	if (sec == b->sec)
		return;
	summary(L, b);
	unpend(L, b);
	b->sec = sec;
	b->lines = 0;
}

/* Room for one more line of the broker's ceiling (all budgets together). */
static int all_room(struct loop *L)
{
	roll(L, &L->log_all);
	if (L->log_all.lines >= L->log_all.limit)
		return 0;
	L->log_all.lines++;
	return 1;
}

/* The summary of b's dropped lines. A budget's own summary is a line of
 * the ceiling too: past it, its counts become the ceiling's, said in the
 * ceiling's summary (which is never dropped: one a second at most). */
static void summary(struct loop *L, struct log_budget *b)
{
	struct sbx_json j;
	char t[40], why[120];

	if (!dropped(b))
		return;
	if (b != &L->log_all && !all_room(L)) {
		for (int k = 0; k < LOG_KINDS; k++)
			L->log_all.dropped[k] += b->dropped[k];
		memset(b->dropped, 0, sizeof b->dropped);
		pend(L, &L->log_all);
		return;
	}
	iso_time(t, sizeof t);
	if (b == &L->log_all)
		snprintf(why, sizeof why, "more than %u lines in one second from all clients together (the "
			 "log's ceiling)", b->limit);
	else
		snprintf(why, sizeof why, "more than %u lines in one second (the log's budget)", b->limit);
	sbx_json_begin(&j, "sbx-broker", "dropped");
	sbx_json_str(&j, "time", t);
	sbx_json_str(&j, "who", b->who);
	sbx_json_uint(&j, "lines", dropped(b));
	sbx_json_uint(&j, "connection", b->dropped[LOG_CONNECTION]);
	sbx_json_uint(&j, "dns", b->dropped[LOG_DNS]);
	sbx_json_uint(&j, "sandbox", b->dropped[LOG_SANDBOX]);
	sbx_json_str(&j, "reason", why);
	if (sbx_json_write(&j, L->cfg->log_fd) < 0)
		sbx_warn_errno("unable to write the log");
	memset(b->dropped, 0, sizeof b->dropped);
}

void log_budget_flush(struct loop *L, struct log_budget *b)
{
	summary(L, b);
	unpend(L, b);
}

int log_tick(struct loop *L)
{
	uint64_t now = sbx_now_ms();
	struct log_budget **p = &L->log_pending;

	while (*p) {
		struct log_budget *b = *p;
		if (b->sec != now / 1000) {
			*p = b->next_pending;
			b->pending = 0;
			summary(L, b); /* may put the ceiling on the list again */
			p = &L->log_pending;
			continue;
		}
		p = &b->next_pending;
	}
	return L->log_pending ? (int)(1000 - now % 1000) : -1;
}

/* 1: the line may be written; 0: it is counted instead, in b's count or,
 * past the ceiling, in the ceiling's. */
static int admit(struct loop *L, struct log_budget *b, enum log_kind kind)
{
	if (!b)
		return 1;
	roll(L, b);
	if (b->lines >= b->limit) {
		b->dropped[kind]++;
		pend(L, b);
		return 0;
	}
	if (!all_room(L)) {
		L->log_all.dropped[kind]++;
		pend(L, &L->log_all);
		return 0;
	}
	b->lines++;
	return 1;
}

void log_line(struct loop *L, struct log_budget *b, enum log_kind kind, struct sbx_json *j)
{
	if (!admit(L, b, kind)) {
		sbx_json_free(j);
		return;
	}
	if (sbx_json_write(j, L->cfg->log_fd) < 0)
		sbx_warn_errno("unable to write the log");
}

/* A decision goes back to the sandbox it concerns, on the channel the
 * sandbox's listeners came over: the same line as the log's. Never
 * waited for: a line the channel has no room for is counted, and the
 * count goes out before the next line that fits. */
#define SB_OUT (32 * 1024)

/* Send what the channel takes now; the rest waits for the next flush. */
void sandbox_flush(struct sandbox *sb)
{
	ssize_t n;

	if (!sb->outlen)
		return;
	n = send(sb->ch, sb->out, sb->outlen, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n <= 0)
		return;
	memmove(sb->out, sb->out + n, sb->outlen - (size_t)n);
	sb->outlen -= (size_t)n;
}

static int sandbox_queue(struct sandbox *sb, const char *line, size_t len)
{
	if (!sb->out && !(sb->out = malloc(SB_OUT)))
		return -1;
	if (len > SB_OUT - sb->outlen)
		return -1;
	memcpy(sb->out + sb->outlen, line, len);
	sb->outlen += len;
	return 0;
}

/* Lines are queued and sent once per batch of events (one send for
 * many connections); a sandbox's end sends what is queued before its
 * channel closes. */
static void tell_sandbox(struct loop *L, struct sandbox *sb, const char *line, size_t len)
{
	if (sb->unreported) {
		char u[96];
		int n = snprintf(u, sizeof u, "{\"tool\":\"sbx-broker\",\"event\":\"unreported\",\"count\":%llu}\n",
				 (unsigned long long)sb->unreported);
		if (sandbox_queue(sb, u, (size_t)n) == 0)
			sb->unreported = 0;
	}
	if (sb->unreported || sandbox_queue(sb, line, len) < 0)
		sb->unreported++;
	if (!sb->queued) {
		sb->queued = 1;
		sb->next_flush = L->flush;
		L->flush = sb;
	}
}

void log_conn(struct loop *L, struct conn *c)
{
	struct sbx_json j;
	char t[40];
	const char *line;
	size_t len = 0;

	if (c->logged || c->quiet)
		return;
	c->logged = 1;

	iso_time(t, sizeof t);
	sbx_json_begin(&j, "sbx-broker", "connection");
	sbx_json_str(&j, "time", t);
	sbx_json_str(&j, "method", c->method[0] ? c->method : NULL);
	if (c->svc)
		sbx_json_str(&j, "service", c->svc->name); /* the route's name, never its header values */
	if (c->svc && c->path[0])
		sbx_json_str(&j, "path", c->path);
	sbx_json_str(&j, "host", c->host[0] ? c->host : NULL);
	if (c->port)
		sbx_json_uint(&j, "port", c->port);
	else
		sbx_json_null(&j, "port");
	sbx_json_str(&j, "address", c->addr[0] ? c->addr : NULL);
	sbx_json_str(&j, "decision", c->decision);
	if (c->status)
		sbx_json_int(&j, "status", c->status);
	else
		sbx_json_null(&j, "status");
	sbx_json_str(&j, "reason", c->reason[0] ? c->reason : NULL);
	sbx_json_uint(&j, "bytes_up", c->up.count);
	sbx_json_uint(&j, "bytes_down", c->down.count);
	sbx_json_uint(&j, "duration_ms", sbx_now_ms() - c->start_ms);
	line = sbx_json_end(&j, &len);
	if (line && c->sb && !c->sb->dead && !c->untold)
		tell_sandbox(L, c->sb, line, len);
	if (!line || len < LOG_LINE_MAX) {
		if (admit(L, c->sb ? &c->sb->log : c->peer ? &c->peer->log : &L->anon.log,
			  !strcmp(c->method, "DNS") ? LOG_DNS : LOG_CONNECTION))
			write_log(L, line, len);
	} else {
		sbx_warn("a log line of %zu bytes was not written (lines are shorter than %d)", len,
			 LOG_LINE_MAX);
	}
	sbx_json_free(&j);
}

/* --shadow-policy FILE: a candidate policy carried beside the real one.
 * The baseline and the request are enforced as always; the candidate
 * refuses nothing. What it would have refused, had it been the baseline,
 * is reported: one {"event":"shadow","shadow":"would-refuse"} line on the
 * status fd per field and value (a refused request field at the start, an
 * allowed broker destination the candidate's allowlist does not admit as
 * it happens, a peak above the candidate's limit at the end), a summary
 * line and a note on stderr with the count.
 *
 * The candidate must be no wider than the baseline in any field
 * (sbx_policy_meet_holds: candidate ⊓ baseline = candidate): one that is
 * wider could only report less than the baseline refuses, so it is refused
 * for shadow use (102), naming the field. */
#include "ns.h"

#include "clock.h"
#include "die.h"
#include "exitcodes.h"
#include "hostpat.h"
#include "json.h"
#include "quote.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHADOW_DESTS 64

struct ns_shadow_plan {
	const char *path;
	struct sbx_policy cand;       /* roots resolved against the workspace */
	struct sbx_pol_clamped cl;    /* what it refuses of the request */
};

struct shadow_dest {
	char host[256];
	unsigned port;
	uint64_t count, reported, last_ms;
};

struct ns_shadow_run {
	struct shadow_dest d[SHADOW_DESTS + 1]; /* + "other" */
	size_t n;
	uint64_t total;               /* actions that would be refused */
	uint64_t not_checked;
};

void ns_shadow_check(const struct ns_args *a, const struct ns_plan *p)
{
	(void)p;
	if (!a->shadow)
		return;
	if (!sbx_policy_opts_baseline(&a->pol))
		sbx_die_usage("--shadow-policy needs --baseline or --baseline-fd: a candidate is held to a baseline");
	if (a->pol.clamp)
		sbx_die_usage("--shadow-policy and --clamp are exclusive: under the candidate a clamped request "
			      "would be narrowed, not refused");
}

static void line(int fd, const char *what, const char *field, const char *value, int port, uint64_t count,
		 const char *why)
{
	struct sbx_json j;

	if (fd < 0)
		return;
	sbx_json_begin(&j, NS_PROG, "shadow");
	sbx_json_str(&j, "shadow", what);
	sbx_json_str(&j, "field", field);
	if (value)
		sbx_json_str(&j, "value", value);
	if (port >= 0)
		sbx_json_uint(&j, "port", (unsigned)port);
	if (count)
		sbx_json_uint(&j, "count", count);
	if (why)
		sbx_json_str(&j, "why", why);
	sbx_json_write(&j, fd);
}

/* Plan time, once the effective policy is made from req (roots resolved)
 * and the baseline is in p->base. */
void ns_shadow_plan(const struct ns_args *a, struct ns_plan *p, const struct sbx_policy *req)
{
	struct ns_shadow_plan *s;
	struct sbx_policy eff;
	struct sbx_err e;
	char label[4200];

	if (!a->shadow)
		return;
	s = p->shadow = sbx_need(calloc(1, sizeof *s));
	s->path = a->shadow;
	memcpy(label, "--shadow-policy ", 16);
	sbx_quote(label + 16, sizeof label - 16, a->shadow, strlen(a->shadow), 4096, 0);
	sbx_policy_init(&s->cand, label);
	if (sbx_policy_load_file(&s->cand, a->shadow, &e) < 0 ||
	    sbx_policy_resolve_roots(&s->cand, p->ops[p->ws].src, &e) < 0)
		sbx_err_die(&e);
	if (sbx_policy_meet_holds(&p->base, &s->cand, &e) < 0)
		sbx_die(SBX_EXIT_POLICY, "shadow policy refused: %s is wider than the baseline: %s", label,
			!strncmp(e.msg, "policy refused: ", 16) ? e.msg + 16 : e.msg);
	/* The request under the candidate, clamped: each field it narrows is
	 * one the candidate would refuse. */
	if (sbx_policy_merge(&s->cand, req, SBX_PSCOPE_NS, 1, &eff, &s->cl, &e) < 0)
		sbx_err_die(&e);
	sbx_policy_free(&eff);
	for (size_t i = 0; i < s->cl.n; i++)
		line(a->status_fd, "would-refuse", s->cl.field[i], s->cl.value[i], -1, 0, NULL);
}

static int admitted(const struct sbx_policy *c, const char *host)
{
	struct sbx_hostpat hp;

	if (c->net.set && c->net.v == SBX_PNET_HOST)
		return 1;
	if (!c->net.set || c->net.v != SBX_PNET_BROKER)
		return 0;
	for (size_t i = 0; i < c->allow.n; i++)
		if (!sbx_hostpat_parse(c->allow.it[i].val, &hp) && sbx_hostpat_match(&hp, host))
			return 1;
	return 0;
}

/* Made before the clone, with the observation's state. */
struct ns_shadow_run *ns_shadow_run_new(const struct ns_plan *p)
{
	return p->shadow ? sbx_need(calloc(1, sizeof(struct ns_shadow_run))) : NULL;
}

/* An allowed destination of the broker's: would the candidate's
 * allowlist have let it through? */
void ns_shadow_conn(const struct ns_run *r, const char *host, unsigned port, uint64_t count)
{
	const struct ns_shadow_plan *s = r->p->shadow;
	struct ns_shadow_run *sr = r->x.shadow;
	struct shadow_dest *d = NULL;
	uint64_t now = sbx_now_ms();

	if (!s || !sr || admitted(&s->cand, host))
		return;
	for (size_t i = 0; i < sr->n && !d; i++)
		if (sr->d[i].port == port && !strcmp(sr->d[i].host, host))
			d = &sr->d[i];
	if (!d && sr->n < SHADOW_DESTS) {
		d = &sr->d[sr->n++];
		snprintf(d->host, sizeof d->host, "%s", host);
		d->port = port;
	}
	if (!d) {
		d = &sr->d[SHADOW_DESTS];
		snprintf(d->host, sizeof d->host, "other");
	}
	d->count += count;
	sr->total += count;
	/* Bounded like the denial lines: the first at once, then at most one
	 * a second, the rest at the end. */
	if ((!d->reported || now - d->last_ms >= 1000) &&
	    ns_status_due(r, 0, d->count, &d->reported, &d->last_ms, now))
		line(r->a->status_fd, "would-refuse", "sandbox.network.allowlist", d->host, (int)d->port, d->count,
		     NULL);
}

/* A limit narrower than the baseline's, against the run's peak. */
static void limit(const struct ns_run *r, struct ns_shadow_run *sr, const char *field,
		  const struct sbx_pol_u64 *c, const struct sbx_pol_u64 *b, int have, uint64_t peak,
		  const char *why)
{
	char v[64];

	if (!c->set || (b->set && c->v >= b->v))
		return;
	if (!have) {
		sr->not_checked++;
		line(r->a->status_fd, "not-checked", field, NULL, -1, 0, why);
		return;
	}
	if (peak <= c->v)
		return;
	sbx_policy_fmt_u64(v, sizeof v, field, peak);
	sr->total++;
	line(r->a->status_fd, "would-refuse", field, v, -1, 0, NULL);
}

/* The end, before the exit line: the peaks, the totals not yet
 * reported, the summary and the note. */
void ns_shadow_end(struct ns_run *r, const struct ns_peak *pk)
{
	const struct ns_shadow_plan *s = r->p->shadow;
	struct ns_shadow_run *sr = r->x.shadow;
	const struct sbx_policy *c, *b = &r->p->base;
	char text[1024] = "", q[600], v[600];
	size_t off = 0;
	struct sbx_json j;

	if (!s || !sr)
		return;
	c = &s->cand;
	limit(r, sr, "resources.memory_mb", &c->memory, &b->memory, pk->have_mem, pk->mem, pk->why);
	limit(r, sr, "resources.max_processes", &c->pids, &b->pids, pk->have_pids, pk->pids, pk->why);
	limit(r, sr, "resources.cpu_percent", &c->cpu, &b->cpu, 0, 0,
	      "a CPU limit slows a command and refuses nothing");
	limit(r, sr, "resources.disk_mb", &c->disk, &b->disk, 0, 0, "disk and inodes are sbx-quota's");
	limit(r, sr, "resources.max_inodes", &c->inodes, &b->inodes, 0, 0, "disk and inodes are sbx-quota's");
	for (size_t i = 0; i <= SHADOW_DESTS; i++)
		if (sr->d[i].count > sr->d[i].reported &&
		    ns_status_due(r, 1, sr->d[i].count, &sr->d[i].reported, &sr->d[i].last_ms, sbx_now_ms()))
			line(r->a->status_fd, "would-refuse", "sandbox.network.allowlist", sr->d[i].host,
			     (int)sr->d[i].port, sr->d[i].count, NULL);
	sr->total += s->cl.n;
	/* The note names what it would refuse, escaped: hosts and paths may
	 * hold any byte. */
	for (size_t i = 0; i < s->cl.n && off < sizeof text - 200; i++) {
		sbx_quote(v, sizeof v, s->cl.value[i], strlen(s->cl.value[i]), 128, 0);
		off += (size_t)snprintf(text + off, sizeof text - off, "%s%s %s", off ? "; " : "", s->cl.field[i], v);
	}
	for (size_t i = 0; i <= SHADOW_DESTS && off < sizeof text - 300; i++)
		if (sr->d[i].count) {
			sbx_quote(v, sizeof v, sr->d[i].host, strlen(sr->d[i].host), 128, 0);
			off += (size_t)snprintf(text + off, sizeof text - off, "%ssandbox.network.allowlist %s:%u (%llu)",
						off ? "; " : "", v, sr->d[i].port, (unsigned long long)sr->d[i].count);
		}
	if (r->a->status_fd >= 0) {
		sbx_json_begin(&j, NS_PROG, "shadow");
		sbx_json_str(&j, "shadow", "summary");
		sbx_json_str(&j, "policy", s->path);
		sbx_json_uint(&j, "would_refuse", sr->total);
		sbx_json_uint(&j, "not_checked", sr->not_checked);
		sbx_json_write(&j, r->a->status_fd);
	}
	sbx_quote(q, sizeof q, s->path, strlen(s->path), 512, 0);
	if (!sr->total)
		sbx_note("shadow policy %s: nothing would be refused%s", q,
			 sr->not_checked ? " (some limits not checked: see the status fd)" : "");
	else
		sbx_note("shadow policy %s: %llu action%s would be refused: %s", q, (unsigned long long)sr->total,
			 sr->total == 1 ? "" : "s", text);
	free(sr);
	r->x.shadow = NULL;
}

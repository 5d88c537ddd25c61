/* The policy model and the merge: a baseline and a request become the
 * effective policy, never wider than the baseline. See policy.h. */
#include "policy.h"
#include "grow.h"

#include "die.h"
#include "exitcodes.h"
#include "fd.h"
#include "hostpat.h"
#include "json.h"
#include "quote.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1ULL << 20)

/* What git reads configuration and hooks from, also for worktrees and
 * submodules, and the usual secrets file. */
const char *const sbx_policy_default_deny[] = {
	".env", ".env.*", ".git/config", ".git/config.worktree", ".git/hooks/**",
	".git/worktrees/*/config.worktree", ".git/modules/**/config", ".git/modules/**/hooks/**",
	NULL
};

/* A value for a message (a path of any bytes), in buf. */
static const char *q(char *buf, size_t sz, const char *s)
{
	sbx_quote(buf, sz, s, strlen(s), 256, 0);
	return buf;
}

static int nomem(struct sbx_err *e)
{
	return sbx_err_set(e, SBX_EXIT_SYS, "unable to allocate memory: %s", strerror(ENOMEM));
}

void sbx_policy_init(struct sbx_policy *p, const char *source)
{
	memset(p, 0, sizeof *p);
	p->source = source ? strdup(source) : NULL;
}

static void list_free(struct sbx_pol_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->it[i].val);
		free(l->it[i].origin);
	}
	free(l->it);
	free(l->origin);
	memset(l, 0, sizeof *l);
}

void sbx_policy_free(struct sbx_policy *p)
{
	struct sbx_pol_int *ints[] = { &p->mode, &p->net, &p->fallback, &p->unsafe, &p->tier_deny,
				       &p->host_ca, &p->hard, &p->statfs_ok };
	struct sbx_pol_u64 *nums[] = { &p->cpu, &p->memory, &p->pids, &p->disk, &p->inodes };
	struct sbx_pol_list *lists[] = { &p->allow, &p->ro, &p->rw, &p->deny };

	for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
		free(ints[i]->origin);
	for (size_t i = 0; i < sizeof nums / sizeof *nums; i++)
		free(nums[i]->origin);
	for (size_t i = 0; i < sizeof lists / sizeof *lists; i++)
		list_free(lists[i]);
	free(p->source);
	memset(p, 0, sizeof *p);
}

int sbx_policy_has_sandbox(const struct sbx_policy *p)
{
	return p->mode.set || p->net.set || p->allow.set || p->ro.set || p->rw.set ||
	       p->deny.set || p->fallback.set || p->unsafe.set || p->tier_deny.set || p->host_ca.set;
}

int sbx_policy_has_resources(const struct sbx_policy *p)
{
	return p->cpu.set || p->memory.set || p->pids.set || p->disk.set || p->inodes.set ||
	       p->hard.set || p->statfs_ok.set;
}

const char *const sbx_pol_fallbacks[] = { "?", "fail-closed", "landlock", "unsafe-host-process", NULL };
const char *const sbx_pol_tier_deny[] = { "?", "refuse", "unenforced", NULL };

int sbx_policy_unsafe_fallback(const struct sbx_policy *p)
{
	return p->fallback.set && p->fallback.v == SBX_PFB_UNSAFE_HOST &&
	       p->unsafe.set && p->unsafe.v;
}

const char *sbx_policy_net_name(int net)
{
	static const char *const n[] = { "?", "none", "localhost", "allowlist", "all" };
	return net >= SBX_PNET_NONE && net <= SBX_PNET_HOST ? n[net] : "?";
}

/* Replace a field's origin (an owned copy). */
static int set_origin(char **dst, const char *origin)
{
	char *o = origin ? strdup(origin) : NULL;

	if (origin && !o)
		return -1;
	free(*dst);
	*dst = o;
	return 0;
}

/* ---- scalar fields ---- */

static uint64_t u64_max(const struct sbx_policy *p, const struct sbx_pol_u64 *f)
{
	if (f == &p->cpu)
		return SBX_POL_MAX_CPU_PCT;
	if (f == &p->memory)
		return SBX_POL_MAX_MEMORY;
	if (f == &p->pids)
		return SBX_POL_MAX_PIDS;
	if (f == &p->disk)
		return SBX_POL_MAX_DISK;
	return SBX_POL_MAX_INODES;
}

int sbx_policy_set_u64(struct sbx_policy *p, struct sbx_pol_u64 *f, uint64_t v,
		       const char *origin, struct sbx_err *e)
{
	uint64_t max = u64_max(p, f);

	if (f->set)
		return sbx_err_set(e, SBX_EXIT_USAGE, "%s: given twice", origin);
	if (v == 0)
		return sbx_err_set(e, SBX_EXIT_USAGE, "%s: zero is not a limit", origin);
	if (v > max)
		return sbx_err_set(e, SBX_EXIT_USAGE, "%s: %llu is above the maximum %llu",
				    origin, (unsigned long long)v, (unsigned long long)max);
	if (set_origin(&f->origin, origin) < 0)
		return nomem(e);
	f->v = v;
	f->set = 1;
	return 0;
}

int sbx_policy_set_int(struct sbx_policy *p, struct sbx_pol_int *f, int v,
		       const char *origin, struct sbx_err *e)
{
	int lo = 0, hi = 1;

	if (f == &p->net)
		lo = SBX_PNET_NONE, hi = SBX_PNET_HOST;
	else if (f == &p->mode)
		lo = SBX_PMODE_NATIVE, hi = SBX_PMODE_OFF;
	else if (f == &p->fallback)
		lo = SBX_PFB_FAIL_CLOSED, hi = SBX_PFB_UNSAFE_HOST;
	else if (f == &p->tier_deny)
		lo = SBX_PTDW_REFUSE, hi = SBX_PTDW_UNENFORCED;
	if (f->set)
		return sbx_err_set(e, SBX_EXIT_USAGE, "%s: given twice", origin);
	if (v < lo || v > hi)
		return sbx_err_set(e, SBX_EXIT_USAGE, "%s: invalid value %d", origin, v);
	if (set_origin(&f->origin, origin) < 0)
		return nomem(e);
	f->v = v;
	f->set = 1;
	return 0;
}

/* ---- lists ---- */

static int list_has(const struct sbx_pol_list *l, const char *val)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->it[i].val, val))
			return 1;
	return 0;
}

/* Append a copy (duplicates dropped). 0, or -1 (ENOMEM). A merged list
 * is bounded by its inputs, which push_checked bounds. */
static int list_push(struct sbx_pol_list *l, const char *val, const char *origin)
{
	struct sbx_pol_item it;

	l->set = 1;
	if (list_has(l, val))
		return 0;
	if (sbx_grow((void **)&l->it, &l->cap, l->n, sizeof *l->it, 8) < 0)
		return -1;
	it.val = strdup(val);
	it.origin = origin ? strdup(origin) : NULL;
	if (!it.val || (origin && !it.origin)) {
		free(it.val);
		free(it.origin);
		errno = ENOMEM;
		return -1;
	}
	l->it[l->n++] = it;
	return 0;
}

static int push_checked(struct sbx_pol_list *l, const char *val, const char *origin,
			struct sbx_err *e)
{
	sbx_policy_list_given(l, origin);
	if (l->n >= SBX_POL_MAX_ITEMS && !list_has(l, val))
		return sbx_err_set(e, SBX_EXIT_USAGE, "%s: more than %d entries", origin,
				    SBX_POL_MAX_ITEMS);
	return list_push(l, val, origin) == 0 ? 0 : nomem(e);
}

void sbx_policy_list_given(struct sbx_pol_list *l, const char *origin)
{
	l->set = 1;
	if (!l->origin && origin)
		l->origin = strdup(origin);
}

/* Lexical normal form of a root: "." and empty components dropped, ".."
 * refused (a root is a place, not a walk; canonical paths never hold one).
 * A relative root keeps its relative form ("." for the workspace itself). */
static const char *norm_path(const char *in, char *out, size_t outsz)
{
	const char *p = in;
	size_t n = 0;
	int abs = in[0] == '/';

	if (!*in)
		return "empty";
	if (strlen(in) >= PATH_MAX)
		return "too long";
	if (abs)
		out[n++] = '/';
	while (*p) {
		const char *end = strchrnul(p, '/');
		size_t len = (size_t)(end - p);

		if (len == 2 && p[0] == '.' && p[1] == '.')
			return "'..' is not allowed";
		if (len && !(len == 1 && p[0] == '.')) {
			if (n && out[n - 1] != '/')
				out[n++] = '/';
			if (n + len + 1 > outsz)
				return "too long";
			memcpy(out + n, p, len);
			n += len;
		}
		p = *end ? end + 1 : end;
	}
	if (!n)
		out[n++] = '.';
	out[n] = '\0';
	return NULL;
}

int sbx_policy_add_root(struct sbx_policy *p, struct sbx_pol_list *l, const char *path,
			const char *origin, struct sbx_err *e)
{
	char norm[PATH_MAX], qb[1100];
	const char *why = norm_path(path, norm, sizeof norm);

	(void)p;
	if (why)
		return sbx_err_set(e, SBX_EXIT_USAGE, "%s: invalid path \"%s\": %s", origin,
				    q(qb, sizeof qb, path), why);
	return push_checked(l, norm, origin, e);
}

/* The globs sbx-ns takes: relative to the workspace, no empty, "." or ".."
 * component, "**" a whole component and never twice in a row. */
const char *sbx_policy_glob_invalid(const char *g)
{
	const char *p = g;

	if (!*g)
		return "empty";
	if (g[0] == '/')
		return "absolute (globs are relative to the workspace)";
	if (strlen(g) >= PATH_MAX)
		return "too long";
	for (;;) {
		const char *end = strchrnul(p, '/');
		size_t len = (size_t)(end - p);

		if (!len)
			return "empty component";
		if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
			return "'.' and '..' are not allowed";
		if (len == 2 && p[0] == '*' && p[1] == '*' && *end && !strncmp(end + 1, "**", 2) &&
		    (end[3] == '/' || end[3] == '\0'))
			return "'**/**'";
		if (len > 2 && memmem(p, len, "**", 2))
			return "'**' must be a whole component";
		if (!*end)
			return NULL;
		p = end + 1;
	}
}

int sbx_policy_add_glob(struct sbx_policy *p, const char *glob, const char *origin,
			struct sbx_err *e)
{
	const char *why = sbx_policy_glob_invalid(glob);
	char qb[1100];

	if (why)
		return sbx_err_set(e, SBX_EXIT_USAGE, "%s: invalid glob \"%s\": %s", origin,
				    q(qb, sizeof qb, glob), why);
	return push_checked(&p->deny, glob, origin, e);
}

int sbx_policy_add_host(struct sbx_policy *p, const char *pattern, const char *origin,
			struct sbx_err *e)
{
	struct sbx_hostpat hp;
	char norm[SBX_HOST_MAX + 3], qb[1100];
	const char *why = sbx_hostpat_parse(pattern, &hp);

	if (why)
		return sbx_err_set(e, SBX_EXIT_USAGE, "%s: invalid host pattern \"%s\": %s",
				    origin, q(qb, sizeof qb, pattern), why);
	snprintf(norm, sizeof norm, "%s%s", hp.wildcard ? "*." : "", hp.name);
	return push_checked(&p->allow, norm, origin, e);
}

static void default_int(struct sbx_pol_int *f, int v, const char *origin)
{
	if (f->set)
		return;
	f->v = v;
	f->set = 1;
	set_origin(&f->origin, origin);
}

static void default_list(struct sbx_pol_list *l, const char *const *vals, const char *origin)
{
	if (l->set)
		return;
	for (; *vals; vals++)
		list_push(l, *vals, origin);
	sbx_policy_list_given(l, origin);
}

void sbx_policy_sandbox_defaults(struct sbx_policy *p)
{
	static const char *const dot[] = { ".", NULL }, *const none[] = { NULL };
	char origin[512];

	snprintf(origin, sizeof origin, "%s: default", p->source ? p->source : "policy");
	default_int(&p->mode, SBX_PMODE_NATIVE, origin);
	default_int(&p->net, SBX_PNET_NONE, origin);
	default_list(&p->allow, none, origin);
	default_list(&p->ro, dot, origin);
	default_list(&p->rw, dot, origin);
	default_list(&p->deny, sbx_policy_default_deny, origin);
	default_int(&p->fallback, SBX_PFB_FAIL_CLOSED, origin);
	default_int(&p->unsafe, 0, origin);
}

static int resolve_list(struct sbx_pol_list *l, const char *ws, struct sbx_err *e)
{
	char qb[1100];

	for (size_t i = 0; i < l->n; i++) {
		char *v = l->it[i].val, *abs;

		if (v[0] == '/')
			continue;
		if (!ws)
			return sbx_err_set(e, SBX_EXIT_USAGE,
					    "%s: relative root \"%s\" needs a workspace",
					    l->it[i].origin ? l->it[i].origin : "policy", q(qb, sizeof qb, v));
		if (!strcmp(v, "."))
			abs = strdup(ws);
		else if (asprintf(&abs, "%s%s%s", ws, strcmp(ws, "/") ? "/" : "", v) < 0)
			abs = NULL;
		if (!abs)
			return nomem(e);
		if (strlen(abs) >= PATH_MAX) {
			free(abs);
			return sbx_err_set(e, SBX_EXIT_USAGE, "%s: root \"%s\": too long under the workspace",
					    l->it[i].origin ? l->it[i].origin : "policy", q(qb, sizeof qb, v));
		}
		free(v);
		l->it[i].val = abs;
	}
	/* Two spellings may now name one place ("." and the workspace). */
	for (size_t i = 0; i < l->n; i++)
		for (size_t j = i + 1; j < l->n; j++)
			if (!strcmp(l->it[i].val, l->it[j].val)) {
				free(l->it[j].val);
				free(l->it[j].origin);
				memmove(l->it + j, l->it + j + 1, (l->n - j - 1) * sizeof *l->it);
				l->n--;
				j--;
			}
	return 0;
}

int sbx_policy_resolve_roots(struct sbx_policy *p, const char *ws, struct sbx_err *e)
{
	char norm[PATH_MAX];

	if (ws) {
		const char *why = ws[0] != '/' ? "not absolute" : norm_path(ws, norm, sizeof norm);
		if (!why && strcmp(norm, ws))
			why = "not in normal form";
		char qb[1100];
		if (why)
			return sbx_err_set(e, SBX_EXIT_USAGE, "workspace \"%s\": %s", q(qb, sizeof qb, ws), why);
	}
	if (resolve_list(&p->ro, ws, e) < 0 || resolve_list(&p->rw, ws, e) < 0)
		return -1;
	return 0;
}

int sbx_policy_check(const struct sbx_policy *p, struct sbx_err *e)
{
	int fb = p->fallback.set && p->fallback.v == SBX_PFB_UNSAFE_HOST;
	int allow = p->unsafe.set && p->unsafe.v;

	if (fb && !allow)
		return sbx_err_set(e, SBX_EXIT_USAGE,
				    "%s: \"unsafe-host-process\" needs \"unsafeAllowHostProcess\": true as well",
				    p->fallback.origin ? p->fallback.origin : "fallback");
	if (allow && !fb)
		return sbx_err_set(e, SBX_EXIT_USAGE,
				    "%s: true needs \"fallback\": \"unsafe-host-process\" as well",
				    p->unsafe.origin ? p->unsafe.origin : "unsafeAllowHostProcess");
	return 0;
}

/* ---- containment ---- */

int sbx_path_within(const char *path, const char *root)
{
	size_t n = strlen(root);

	if (!strcmp(root, "/"))
		return path[0] == '/';
	return !strncmp(path, root, n) && (path[n] == '\0' || path[n] == '/');
}

int sbx_policy_within(const struct sbx_pol_list *l, const char *path)
{
	for (size_t i = 0; i < l->n; i++)
		if (sbx_path_within(path, l->it[i].val))
			return 1;
	return 0;
}

/* Host patterns in normal form ("name" or "*.name"): every host r admits,
 * b admits too. */
static int host_within(const char *r, const char *b)
{
	int rw = !strncmp(r, "*.", 2), bw = !strncmp(b, "*.", 2);
	const char *rn = rw ? r + 2 : r, *bn = bw ? b + 2 : b;
	size_t rl = strlen(rn), bl = strlen(bn);

	if (!bw)
		return !rw && !strcmp(rn, bn);
	/* b = *.bn admits strict subdomains of bn: r's names all are when rn
	 * is bn itself and r is a wildcard, or rn is a subdomain of bn. */
	if (rw && !strcmp(rn, bn))
		return 1;
	return rl > bl + 1 && rn[rl - bl - 1] == '.' && !strcmp(rn + rl - bl, bn);
}

/* ---- merge ---- */

struct mctx {
	int clamp;
	struct sbx_pol_clamped *cl;
	struct sbx_err *e;
};

/* A field narrowed, each once, with the first value that was (for a
 * report: a shadow policy's would-refuse lines name it). */
static void note(struct mctx *c, const char *field, const char *value)
{
	if (!c->cl)
		return;
	for (size_t i = 0; i < c->cl->n; i++)
		if (!strcmp(c->cl->field[i], field))
			return;
	if (c->cl->n < SBX_POL_NFIELDS) {
		snprintf(c->cl->value[c->cl->n], SBX_POL_VALUE_MAX, "%s", value);
		c->cl->field[c->cl->n++] = field;
	}
}

static const char *orig(const char *o)
{
	return o ? o : "policy";
}

static int copy_u64(struct sbx_pol_u64 *o, const struct sbx_pol_u64 *s)
{
	o->v = s->v;
	o->set = s->set;
	return set_origin(&o->origin, s->origin);
}

static int copy_int(struct sbx_pol_int *o, const struct sbx_pol_int *s)
{
	o->v = s->v;
	o->set = s->set;
	return set_origin(&o->origin, s->origin);
}

static int copy_list(struct sbx_pol_list *o, const struct sbx_pol_list *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (list_push(o, s->it[i].val, s->it[i].origin) < 0)
			return -1;
	o->set = s->set;
	return set_origin(&o->origin, s->origin);
}

void sbx_policy_fmt_u64(char *buf, size_t sz, const char *field, uint64_t v)
{
	if (!strcmp(field, "resources.memory_mb") || !strcmp(field, "resources.disk_mb")) {
		if (v % MIB == 0)
			snprintf(buf, sz, "%llu MiB", (unsigned long long)(v / MIB));
		else
			snprintf(buf, sz, "%llu bytes", (unsigned long long)v);
	} else if (!strcmp(field, "resources.cpu_percent")) {
		snprintf(buf, sz, "%llu%%", (unsigned long long)v);
	} else if (!strcmp(field, "resources.max_processes")) {
		snprintf(buf, sz, "%llu processes", (unsigned long long)v);
	} else {
		snprintf(buf, sz, "%llu inodes", (unsigned long long)v);
	}
}

static int merge_u64(struct mctx *c, const char *field, const struct sbx_pol_u64 *b,
		     const struct sbx_pol_u64 *r, struct sbx_pol_u64 *o)
{
	char rv[64], bv[64];

	if (!b->set || (r->set && r->v <= b->v))
		return copy_u64(o, r->set ? r : b) < 0 ? nomem(c->e) : 0;
	if (!r->set || c->clamp) {
		if (r->set) {
			sbx_policy_fmt_u64(rv, sizeof rv, field, r->v);
			note(c, field, rv);
		}
		return copy_u64(o, b) < 0 ? nomem(c->e) : 0;
	}
	sbx_policy_fmt_u64(rv, sizeof rv, field, r->v);
	sbx_policy_fmt_u64(bv, sizeof bv, field, b->v);
	return sbx_err_set(c->e, SBX_EXIT_POLICY,
			    "policy refused: %s: %s is more than the baseline's %s (%s)",
			    orig(r->origin), rv, bv, orig(b->origin));
}

/* Enumerations and booleans ordered narrow to wide; wider is refused.
 * names[v] spells a value for messages. */
static int merge_ord(struct mctx *c, const char *field, const struct sbx_pol_int *b,
		     const struct sbx_pol_int *r, struct sbx_pol_int *o,
		     const char *const *names, int narrow_is_high)
{
	int wider;

	if (!b->set || !r->set)
		return copy_int(o, r->set ? r : b) < 0 ? nomem(c->e) : 0;
	wider = narrow_is_high ? r->v < b->v : r->v > b->v;
	if (!wider)
		return copy_int(o, r) < 0 ? nomem(c->e) : 0;
	if (c->clamp) {
		note(c, field, names[r->v]);
		return copy_int(o, b) < 0 ? nomem(c->e) : 0;
	}
	return sbx_err_set(c->e, SBX_EXIT_POLICY,
			    "policy refused: %s: %s is wider than the baseline's %s (%s)",
			    orig(r->origin), names[r->v], names[b->v], orig(b->origin));
}

/* A request entry must lie within one of the baseline's (bs[1], when set,
 * is a second list that counts too: a readable root may lie within a
 * writable one). Clamped, a wider entry becomes the baseline entries
 * inside it. within(a, b): a lies within b. */
static int merge_within(struct mctx *c, const char *field, const char *what,
			const struct sbx_pol_list *const bs[2], const struct sbx_pol_list *r,
			struct sbx_pol_list *o, int (*within)(const char *, const char *))
{
	char qb[1100];

	sbx_policy_list_given(o, r->origin);
	for (size_t i = 0; i < r->n; i++) {
		const struct sbx_pol_item *it = &r->it[i];
		int ok = 0;

		for (int k = 0; k < 2 && !ok; k++)
			for (size_t j = 0; bs[k] && j < bs[k]->n && !ok; j++)
				ok = within(it->val, bs[k]->it[j].val);
		if (ok) {
			if (list_push(o, it->val, it->origin) < 0)
				return nomem(c->e);
			continue;
		}
		if (!c->clamp)
			return sbx_err_set(c->e, SBX_EXIT_POLICY,
					    "policy refused: %s: %s is not within the baseline's %s (%s)",
					    orig(it->origin), q(qb, sizeof qb, it->val), what,
					    orig(bs[0] ? bs[0]->origin : bs[1]->origin));
		note(c, field, it->val);
		for (int k = 0; k < 2; k++)
			for (size_t j = 0; bs[k] && j < bs[k]->n; j++)
				if (within(bs[k]->it[j].val, it->val) &&
				    list_push(o, bs[k]->it[j].val, bs[k]->it[j].origin) < 0)
					return nomem(c->e);
	}
	return 0;
}

/* Roots: within a baseline root of the same kind (or, for a readable
 * root, b1: a writable one). */
static int merge_roots(struct mctx *c, const char *field, const char *what,
		       const struct sbx_pol_list *b0, const struct sbx_pol_list *b1,
		       const struct sbx_pol_list *r, struct sbx_pol_list *o)
{
	const struct sbx_pol_list *bs[2] = { b0 && b0->set ? b0 : NULL, b1 && b1->set ? b1 : NULL };

	if (!bs[0] && !bs[1])
		return copy_list(o, r) < 0 ? nomem(c->e) : 0;
	if (!r->set)
		return copy_list(o, b0) < 0 ? nomem(c->e) : 0;
	return merge_within(c, field, what, bs, r, o, sbx_path_within);
}

static int merge_hosts(struct mctx *c, const struct sbx_pol_list *b,
		       const struct sbx_pol_list *r, struct sbx_pol_list *o)
{
	const struct sbx_pol_list *bs[2] = { b, NULL };

	return merge_within(c, "sandbox.network.allowlist", "allowlist", bs, r, o, host_within);
}

static int merge_net(struct mctx *c, const struct sbx_policy *b, const struct sbx_policy *r,
		     struct sbx_policy *o)
{
	/* Both spellings: the file's and sbx-ns --net's. */
	static const char *const names[] = { "?", "none", "localhost (loopback)",
					     "allowlist (broker)", "all (host)" };

	if (merge_ord(c, "sandbox.network.mode", &b->net, &r->net, &o->net, names, 0) < 0)
		return -1;
	if (!b->net.set || !r->net.set) {
		const struct sbx_policy *s = r->net.set ? r : b;
		return copy_list(&o->allow, &s->allow) < 0 ? nomem(c->e) : 0;
	}
	sbx_policy_list_given(&o->allow, r->allow.origin ? r->allow.origin : b->allow.origin);
	if (o->net.v != SBX_PNET_BROKER)
		return 0;   /* the hosts matter only to the broker */
	/* The host's whole network admits every name: the request's list
	 * stands. A request of "all" clamped to "allowlist" gets the
	 * baseline's list. */
	if (b->net.v == SBX_PNET_HOST)
		return copy_list(&o->allow, &r->allow) < 0 ? nomem(c->e) : 0;
	if (r->net.v == SBX_PNET_HOST)
		return copy_list(&o->allow, &b->allow) < 0 ? nomem(c->e) : 0;
	return merge_hosts(c, &b->allow, &r->allow, &o->allow);
}

static int merge_deny(struct mctx *c, const struct sbx_pol_list *b, const struct sbx_pol_list *r,
		      struct sbx_pol_list *o)
{
	if (copy_list(o, r) < 0 || copy_list(o, b) < 0)
		return nomem(c->e);
	o->set = b->set || r->set;
	return 0;
}

/* Ordered like the others (fail-closed < landlock < unsafe-host-process),
 * except that only the baseline may name the Landlock tier: a request may
 * keep it or narrow it to fail-closed. */
static int merge_fallback(struct mctx *c, const struct sbx_policy *b, const struct sbx_policy *r,
			  struct sbx_policy *o, const char *const *fbs)
{
	int base_ll = b->fallback.set && b->fallback.v == SBX_PFB_LANDLOCK;
	const char *ro = r->fallback.origin;
	size_t n = ro ? strlen(ro) : 0;

	/* A request that does not name a fallback (its default) keeps the tier. */
	if (base_ll && r->fallback.set && n >= 9 && !strcmp(ro + n - 9, ": default"))
		return copy_int(&o->fallback, &b->fallback) < 0 ? nomem(c->e) : 0;

	if (r->fallback.set && r->fallback.v == SBX_PFB_LANDLOCK && !base_ll) {
		if (!c->clamp && !b->fallback.set)
			return sbx_err_set(c->e, SBX_EXIT_POLICY,
					    "policy refused: %s: landlock comes only from a baseline",
					    orig(r->fallback.origin));
		if (!c->clamp)
			return sbx_err_set(c->e, SBX_EXIT_POLICY,
					    "policy refused: %s: landlock comes only from the baseline, "
					    "which says %s (%s)", orig(r->fallback.origin),
					    fbs[b->fallback.v], orig(b->fallback.origin));
		note(c, "sandbox.fallback", "landlock");
		if (copy_int(&o->fallback, &b->fallback) < 0)
			return nomem(c->e);
		o->fallback.v = SBX_PFB_FAIL_CLOSED;
		return 0;
	}
	return merge_ord(c, "sandbox.fallback", &b->fallback, &r->fallback, &o->fallback, fbs, 0);
}

/* tierDenyWrite: "unenforced" gives up a protection, so only the
 * baseline may say it (a request saying it is refused, or dropped when
 * clamped); a request may always say "refuse". */
static int merge_tier_deny(struct mctx *c, const struct sbx_policy *b, const struct sbx_policy *r,
			   struct sbx_policy *o)
{
	const struct sbx_pol_int *from = &b->tier_deny;

	if (r->tier_deny.set && r->tier_deny.v == SBX_PTDW_UNENFORCED &&
	    !(b->tier_deny.set && b->tier_deny.v == SBX_PTDW_UNENFORCED)) {
		if (!c->clamp)
			return sbx_err_set(c->e, SBX_EXIT_POLICY, "policy refused: %s: only a baseline may "
					   "leave deny-write unenforced in the landlock tier",
					   orig(r->tier_deny.origin));
		note(c, "sandbox.tierDenyWrite", "unenforced");
	} else if (r->tier_deny.set) {
		from = &r->tier_deny;
	}
	return from->set && copy_int(&o->tier_deny, from) < 0 ? nomem(c->e) : 0;
}

static int merge_sandbox(struct mctx *c, const struct sbx_policy *b, const struct sbx_policy *r,
			 struct sbx_policy *o)
{
	static const char *const modes[] = { "?", "native", "off" };
	const char *const *fbs = sbx_pol_fallbacks;
	static const char *const bools[] = { "false", "true" };

	if (merge_ord(c, "sandbox.mode", &b->mode, &r->mode, &o->mode, modes, 0) < 0 ||
	    merge_net(c, b, r, o) < 0 ||
	    merge_roots(c, "sandbox.readableRoots", "readable roots", &b->ro, &b->rw, &r->ro, &o->ro) < 0 ||
	    merge_roots(c, "sandbox.writableRoots", "writable roots", &b->rw, NULL, &r->rw, &o->rw) < 0 ||
	    merge_deny(c, &b->deny, &r->deny, &o->deny) < 0 ||
	    merge_fallback(c, b, r, o, fbs) < 0 ||
	    merge_ord(c, "sandbox.unsafeAllowHostProcess", &b->unsafe, &r->unsafe, &o->unsafe, bools, 0) < 0 ||
	    merge_tier_deny(c, b, r, o) < 0 ||
	    merge_ord(c, "sandbox.hostCA", &b->host_ca, &r->host_ca, &o->host_ca, bools, 0) < 0)
		return -1;
	return 0;
}

int sbx_policy_merge(const struct sbx_policy *base, const struct sbx_policy *req,
		     unsigned scope, int clamp, struct sbx_policy *eff,
		     struct sbx_pol_clamped *cl, struct sbx_err *e)
{
	static const char *const hard[] = { "false", "true" };
	struct sbx_policy none;
	struct mctx c = { clamp, cl, e };
	int rc = -1;

	sbx_policy_init(&none, NULL);
	sbx_policy_init(eff, "effective");
	if (cl)
		cl->n = 0;
	if (!base)
		base = &none;
	if ((scope & SBX_PSCOPE_NS) && merge_sandbox(&c, base, req, eff) < 0)
		goto out;
	if ((scope & SBX_PSCOPE_CGROUP) &&
	    (merge_u64(&c, "resources.cpu_percent", &base->cpu, &req->cpu, &eff->cpu) < 0 ||
	     merge_u64(&c, "resources.memory_mb", &base->memory, &req->memory, &eff->memory) < 0 ||
	     merge_u64(&c, "resources.max_processes", &base->pids, &req->pids, &eff->pids) < 0))
		goto out;
	if ((scope & SBX_PSCOPE_QUOTA) &&
	    (merge_u64(&c, "resources.disk_mb", &base->disk, &req->disk, &eff->disk) < 0 ||
	     merge_u64(&c, "resources.max_inodes", &base->inodes, &req->inodes, &eff->inodes) < 0))
		goto out;
	/* require_hard_limits: true wins, so "false" is the wider value. */
	if ((scope & (SBX_PSCOPE_CGROUP | SBX_PSCOPE_QUOTA)) &&
	    merge_ord(&c, "resources.require_hard_limits", &base->hard, &req->hard, &eff->hard,
		      hard, 1) < 0)
		goto out;
	/* accept_statfs_quota weakens what sbx-quota proves: only the
	 * administrator's baseline may say it, never a request (clamped, the
	 * request's word is dropped and listed). */
	if ((scope & SBX_PSCOPE_QUOTA) && req->statfs_ok.set && req->statfs_ok.v) {
		if (!clamp) {
			sbx_err_set(e, SBX_EXIT_POLICY,
				     "policy refused: %s: only a baseline may accept statfs-level quota assurance",
				     orig(req->statfs_ok.origin));
			goto out;
		}
		note(&c, "resources.accept_statfs_quota", "true");
	}
	if ((scope & SBX_PSCOPE_QUOTA) && base->statfs_ok.set && copy_int(&eff->statfs_ok, &base->statfs_ok) < 0) {
		nomem(e);
		goto out;
	}
	rc = 0;
out:
	if (rc < 0) {
		sbx_policy_free(eff);
		sbx_policy_init(eff, "effective");
	}
	sbx_policy_free(&none);
	return rc;
}

int sbx_policy_status(int fd, const char *tool, int have_baseline, const struct sbx_policy *eff,
		      const struct sbx_pol_clamped *cl)
{
	struct sbx_json j;

	if (fd < 0)
		return 0;
	sbx_json_begin(&j, tool, "policy");
	sbx_json_bool(&j, "baseline", have_baseline);
	sbx_policy_clamped_json(&j, cl);
	sbx_json_bool(&j, "unsafe_fallback", sbx_policy_unsafe_fallback(eff));
	return sbx_json_write(&j, fd);
}

void sbx_policy_unsafe_notice(int fd, const char *tool, int err)
{
	struct sbx_json j;
	char line[512];
	int n;

	/* Not through sbx_warn: this line must stand out, and says WARNING. */
	n = snprintf(line, sizeof line,
		     "%s: WARNING: the sandbox cannot be set up (%s) and the policy allows the unsafe "
		     "host-process fallback: the command runs unconfined, with no root, deny-write, "
		     "network or seccomp restriction\n", tool, strerror(err));
	if (n > 0)
		sbx_write_all(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
	if (fd < 0)
		return;
	sbx_json_begin(&j, tool, "unsafe_fallback");
	sbx_json_bool(&j, "unsafe_fallback", 1);
	sbx_json_str(&j, "reason", strerror(err));
	sbx_json_write(&j, fd);
}

/* A service route's request rules and placeholder:
 *
 *   --service-method NAME=GET,HEAD   the only methods on the route (405)
 *   --service-path NAME=/simple/     a path prefix the route allows (403);
 *                                    repeatable, any one of them
 *   --service-placeholder NAME=VALUE the stand-in the sandbox may hold for
 *                                    the route's one header value
 *
 * The broker rebuilds every request of a route (it opens the TLS), so it
 * can hold it to a method and a path; a CONNECT tunnel is opaque, which is
 * why --allow-method and the like stay refused there.
 *
 * A placeholder has one place: the value of its route's one header line
 * (the field its header file names), in a request on that route, where
 * the sandbox's field is the placeholder itself or an auth scheme, one
 * space and the placeholder. That field never goes out as the sandbox
 * wrote it: the route's line goes in its place (service.c), so the real
 * value is never put where the sandbox chose. Anywhere else the request
 * is refused with 403 and logged, since that is how the credential, or
 * its stand-in, would be walked out: another field of its own route
 * (which a service may reflect: CORS, a redirect built from
 * X-Forwarded-Host), inside a longer value, twice, a repeated field, the
 * request target, another route or host, a CONNECT's target or Host. The
 * same holds past the head: the body of a plain HTTP request, and a
 * tunnel's first flight (its ClientHello), are searched too (relay.c). */
#include "conn.h"
#include "die.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PLACEHOLDER_MIN 8
#define PLACEHOLDER_MAX 128

static struct { int kind; char name[64]; const char *val; } rules[3 * BROKER_MAX_SERVICES * 4];
static size_t nrules;

static const char *const opts[] = { "--service-method", "--service-path", "--service-placeholder" };

void broker_add_service_rule(struct broker_cfg *cfg, int kind, const char *arg)
{
	const char *opt = opts[kind], *eq = strchr(arg, '=');
	size_t n = eq ? (size_t)(eq - arg) : 0;

	(void)cfg;
	for (const char *p = arg; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			sbx_die_usage("%s: invalid value: control character", opt);
	if (!eq || !n || n > 63 || !eq[1])
		sbx_die_usage("%s: invalid value '%s': not NAME=...", opt, kind == 2 ? "(hidden)" : arg);
	if (nrules == sizeof rules / sizeof rules[0])
		sbx_die_usage("%s: too many", opt);
	rules[nrules].kind = kind;
	memcpy(rules[nrules].name, arg, n);
	rules[nrules].name[n] = '\0';
	rules[nrules++].val = eq + 1;
}

static void add_methods(struct broker_service *s, const char *v)
{
	if (s->nmethods)
		sbx_die_usage("--service-method: %s given twice (list the methods in one, comma-separated)", s->name);
	while (*v) {
		size_t n = strcspn(v, ",");
		if (!n || n >= sizeof s->methods[0])
			sbx_die_usage("--service-method: %s: an empty or over-long method", s->name);
		for (size_t i = 0; i < n; i++)
			if (v[i] < 'A' || v[i] > 'Z')
				sbx_die_usage("--service-method: %s: invalid method '%.*s' (upper case letters)",
					      s->name, (int)n, v);
		if (n == 7 && !strncmp(v, "CONNECT", 7))
			sbx_die_usage("--service-method: %s: CONNECT is never a route's", s->name);
		for (size_t i = 0; i < s->nmethods; i++)
			if (strlen(s->methods[i]) == n && !strncmp(s->methods[i], v, n))
				sbx_die_usage("--service-method: %s: %.*s given twice", s->name, (int)n, v);
		if (s->nmethods == SERVICE_METHODS_MAX)
			sbx_die_usage("--service-method: %s: more than %d methods", s->name, SERVICE_METHODS_MAX);
		memcpy(s->methods[s->nmethods], v, n);
		s->methods[s->nmethods++][n] = '\0';
		v += n;
		if (*v == ',' && !*++v)
			sbx_die_usage("--service-method: %s: an empty method", s->name);
	}
}

static void add_path(struct broker_service *s, const char *v)
{
	if (v[0] != '/')
		sbx_die_usage("--service-path: %s: '%s' does not start with /", s->name, v);
	if (strlen(v) >= sizeof s->paths[0])
		sbx_die_usage("--service-path: %s: longer than %zu bytes", s->name, sizeof s->paths[0] - 1);
	for (const char *p = v; *p; p++)
		if (*p == '%' || *p == '?' || *p == '#' || *p == '\\' || *p == ' ')
			sbx_die_usage("--service-path: %s: '%s' has %%, ?, #, \\ or a space", s->name, v);
	if (strstr(v, "//") || strstr(v, "/./") || strstr(v, "/../"))
		sbx_die_usage("--service-path: %s: '%s' has an empty, . or .. segment", s->name, v);
	for (size_t i = 0; i < s->npaths; i++)
		if (!strcmp(s->paths[i], v))
			sbx_die_usage("--service-path: %s: '%s' given twice", s->name, v);
	if (s->npaths == SERVICE_PATHS_MAX)
		sbx_die_usage("--service-path: %s: more than %d", s->name, SERVICE_PATHS_MAX);
	snprintf(s->paths[s->npaths++], sizeof s->paths[0], "%s", v);
}

/* VALUE stands for the value of the route's one header line. */
static void add_placeholder(struct broker_cfg *cfg, struct broker_service *s, const char *v)
{
	size_t n = strlen(v);
	const char *line, *colon;

	if (s->phlen)
		sbx_die_usage("--service-placeholder: %s given twice", s->name);
	if (n < PLACEHOLDER_MIN || n > PLACEHOLDER_MAX)
		sbx_die_usage("--service-placeholder: %s: %d to %d characters", s->name, PLACEHOLDER_MIN,
			      PLACEHOLDER_MAX);
	for (size_t i = 0; i < n; i++)
		if (!((v[i] >= 'a' && v[i] <= 'z') || (v[i] >= 'A' && v[i] <= 'Z') || (v[i] >= '0' && v[i] <= '9') ||
		      strchr("-._~", v[i])))
			sbx_die_usage("--service-placeholder: %s: only A-Z, a-z, 0-9 and -._~", s->name);
	if (s->nh != 1)
		sbx_die_usage("--service-placeholder: %s: the route needs --service-header with exactly one line, "
			      "whose value the placeholder stands for", s->name);
	for (size_t i = 0; i < cfg->nsvc; i++)
		if (cfg->svc[i].phlen && (strstr(cfg->svc[i].placeholder, v) || strstr(v, cfg->svc[i].placeholder)))
			sbx_die_usage("--service-placeholder: %s: overlaps the placeholder of %s", s->name,
				      cfg->svc[i].name);
	line = s->hdr;
	colon = memchr(line, ':', s->hdrlen);
	if (memmem(colon + 2, s->hdrlen - (size_t)(colon + 2 - line) - 2, v, n))
		sbx_die_usage("--service-placeholder: %s: the placeholder is part of the real value", s->name);
	memcpy(s->placeholder, v, n + 1);
	s->phlen = n;
}

void broker_service_rules_finish(struct broker_cfg *cfg)
{
	for (size_t i = 0; i < nrules; i++) {
		struct broker_service *s = (struct broker_service *)broker_service_find(cfg, rules[i].name);
		if (!s)
			sbx_die_usage("%s: %s is no route (--service %s=https://...)", opts[rules[i].kind],
				      rules[i].name, rules[i].name);
		switch (rules[i].kind) {
		case 0: add_methods(s, rules[i].val); break;
		case 1: add_path(s, rules[i].val); break;
		case 2: add_placeholder(cfg, s, rules[i].val); break;
		}
	}
}

/* Is f's value, surrounding whitespace aside (the parser's), the
 * placeholder, or an auth scheme (a token), one space and it? */
static int ph_shape(const struct broker_service *s, const struct sbx_http_field *f)
{
	size_t t;

	if (f->vlen < s->phlen || memcmp(f->value + f->vlen - s->phlen, s->placeholder, s->phlen))
		return 0;
	if (f->vlen == s->phlen)
		return 1;
	t = f->vlen - s->phlen - 1;
	if (!t || f->value[t] != ' ')
		return 0;
	for (size_t i = 0; i < t; i++)
		if (!sbx_http_tchar((unsigned char)f->value[i]))
			return 0;
	return 1;
}

/* A request on s's own route, buf[0..n) its head and the body bytes read
 * with it: 0 when s's placeholder is there once, in its place, else -1
 * with where it is, in where. */
static int ph_placed(const struct broker_service *s, const struct sbx_http_head *h, const char *buf, size_t n,
		     char *where, size_t wsize)
{
	const char *name = s->hdr + s->hname[0].off, *p;
	int nl = (int)s->hname[0].len;
	const struct sbx_http_field *cred = NULL;
	size_t copies = 0;

	if (memmem(h->target, h->tlen, s->placeholder, s->phlen)) {
		snprintf(where, wsize, "in the request target");
		return -1;
	}
	if (memmem(buf + h->head_len, n - h->head_len, s->placeholder, s->phlen)) {
		snprintf(where, wsize, "in a request body");
		return -1;
	}
	for (size_t i = 0; i < h->nfields; i++) {
		const struct sbx_http_field *f = &h->f[i];
		if (f->nlen == (size_t)nl && !strncasecmp(f->name, name, f->nlen)) {
			cred = f;
			copies++;
		} else if (memmem(f->name, (size_t)(f->value + f->vlen - f->name), s->placeholder, s->phlen)) {
			snprintf(where, wsize, "in a field other than %.*s", nl, name);
			return -1;
		}
	}
	if (copies > 1) {
		snprintf(where, wsize, "in a repeated %.*s field", nl, name);
		return -1;
	}
	/* Once in the whole of it, at the end of that value: a second one
	 * anywhere (the scheme, overlapping) is refused too. */
	p = memmem(buf, n, s->placeholder, s->phlen);
	if (!cred || !ph_shape(s, cred) || p != cred->value + cred->vlen - s->phlen ||
	    memmem(p + 1, (size_t)(buf + n - p - 1), s->placeholder, s->phlen)) {
		snprintf(where, wsize, "in %.*s beside other text", nl, name);
		return -1;
	}
	return 0;
}

/* c's reason as it is, without set_reason's "service NAME: " of the
 * route c is for: the route a refusal here names is the placeholder's. */
__attribute__((format(printf, 2, 3))) static void own_reason(struct conn *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->reason, sizeof c->reason, fmt, ap);
	va_end(ap);
}

void service_ph_refused(struct conn *c, const struct broker_service *s, const char *where)
{
	const struct broker_service *to = c->svc;

	if (c->reason[0])
		return;
	c->decision = "refused";
	if (to == s)
		own_reason(c, "service %s: its placeholder %s refused: it is swapped only as the whole value of %.*s "
			   "or as its token after a scheme", s->name, where, (int)s->hname[0].len,
			   s->hdr + s->hname[0].off);
	else
		own_reason(c, "service %s: its placeholder %s for %s refused: it is swapped only on http://%s/",
			   s->name, where, to ? to->name : c->host, s->name);
}

/* Every request head, before anything else is decided. */
int service_placeholders(struct loop *L, struct conn *c, const struct sbx_http_head *h)
{
	const struct broker_cfg *cfg = L->cfg;
	char where[128];

	for (size_t i = 0; i < cfg->nsvc; i++) {
		const struct broker_service *s = &cfg->svc[i];
		int own = !h->is_connect && !strcmp(h->host, s->name);
		/* The body bytes read with the head, too, but a CONNECT's:
		 * those are its ClientHello's, searched with the rest of it. */
		size_t n = h->is_connect ? h->head_len : c->inlen;
		if (!s->phlen || !memmem(c->in, n, s->placeholder, s->phlen))
			continue;
		if (own) {
			if (!ph_placed(s, h, c->in, n, where, sizeof where))
				continue;
			c->svc = s;
		} else
			snprintf(where, sizeof where, "in a %s",
				 memmem(c->in, h->head_len, s->placeholder, s->phlen) ?
					 (h->is_connect ? "CONNECT" : "request") : "request body");
		service_ph_refused(c, s, where);
		refuse(L, c, 403, "%s", c->reason); /* the reason just set */
		return -1;
	}
	return 0;
}

/* What a body or a first flight is searched for: every placeholder, its
 * own route's too (a body is no place of it). The longest one's length
 * less one is how many bytes a search holds back until the next read, so
 * that no part of a placeholder split across reads goes out; 0: nothing
 * to search for. */
size_t service_ph_keep(const struct broker_cfg *cfg)
{
	size_t keep = 0;

	for (size_t i = 0; i < cfg->nsvc; i++)
		if (cfg->svc[i].phlen > keep)
			keep = cfg->svc[i].phlen;
	return keep ? keep - 1 : 0;
}

/* The route whose placeholder is in buf, or NULL. */
const struct broker_service *service_ph_find(const struct broker_cfg *cfg, const char *buf, size_t n)
{
	for (size_t i = 0; i < cfg->nsvc; i++) {
		const struct broker_service *s = &cfg->svc[i];
		if (s->phlen && memmem(buf, n, s->placeholder, s->phlen))
			return s;
	}
	return NULL;
}

/* Method and path against the route's rules: 0, or -1 refused. */
int service_rules(struct loop *L, struct conn *c, const struct sbx_http_head *h)
{
	const struct broker_service *s = c->svc;
	size_t i;

	for (i = 0; i < s->nmethods; i++)
		if (strlen(s->methods[i]) == h->mlen && !strncmp(s->methods[i], h->method, h->mlen))
			break;
	if (s->nmethods && i == s->nmethods) {
		refuse(L, c, 405, "method %s not allowed on this route (--service-method)", c->method);
		return -1;
	}
	if (!s->npaths)
		return 0;
	/* A path that a server could read as another: none of it. */
	for (i = 0; i + 1 < h->plen; i++)
		if (h->path[i] == '%' || h->path[i] == '\\' ||
		    (h->path[i] == '/' && (h->path[i + 1] == '/' || h->path[i + 1] == '.')))
			break;
	if (i + 1 >= h->plen && h->path[h->plen - 1] != '%' && h->path[h->plen - 1] != '\\')
		for (i = 0; i < s->npaths; i++)
			if (h->plen >= strlen(s->paths[i]) && !memcmp(h->path, s->paths[i], strlen(s->paths[i])))
				return 0;
	refuse(L, c, 403, "path not allowed on this route (--service-path)");
	return -1;
}

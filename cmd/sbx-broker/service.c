/* Service routes: --service NAME=https://HOST[:PORT][/PREFIX], the header
 * lines of --service-header and the CA bundle of --service-ca, checked at
 * start; and a sandbox's plain HTTP request to http://NAME/... rebuilt for
 * the service. The secret header values are read once, kept in locked
 * memory that core dumps leave out, and never written to the log, the
 * status or an error: a refusal names the file and the line, not what
 * the line says. The TLS to the service is tls.c's. */
#include "conn.h"
#include "die.h"
#include "exitcodes.h"
#include "fd.h"
#include "parse.h"
#include "private.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define HOST_STORE "/etc/ssl/certs/ca-certificates.crt"
#define CA_MAX (4 << 20)

/* The file options, matched to their routes once every option is read. */
static struct { int ca; char name[64]; const char *path; } files[2 * BROKER_MAX_SERVICES];
static size_t nfiles;

static void no_controls(const char *opt, const char *s)
{
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			sbx_die_usage("%s: invalid value: control character", opt);
	if (!*s)
		sbx_die_usage("%s: invalid value '': empty", opt);
}

/* NAME=REST: NAME a lower-case DNS label (it is what the sandbox asks
 * for, http://NAME/), copied to name; returns REST. */
static const char *route_name(const char *opt, const char *s, char name[64])
{
	const char *eq = strchr(s, '=');
	size_t n;

	no_controls(opt, s);
	if (!eq)
		sbx_die_usage("%s: invalid value '%s': not NAME=...", opt, s);
	n = (size_t)(eq - s);
	if (n == 0 || n > 63)
		sbx_die_usage("%s: invalid route name in '%s': 1 to 63 characters", opt, s);
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			sbx_die_usage("%s: invalid route name in '%s': only a-z, 0-9 and -", opt, s);
	if (s[0] == '-' || s[n - 1] == '-')
		sbx_die_usage("%s: invalid route name in '%s': - at an end", opt, s);
	memcpy(name, s, n);
	name[n] = '\0';
	if (!eq[1])
		sbx_die_usage("%s: invalid value '%s': nothing after =", opt, s);
	return eq + 1;
}

static int prefix_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       strchr("-._~!$&'()*+,;=:@/%", ch);
}

void broker_add_service(struct broker_cfg *cfg, const char *arg)
{
	struct broker_service s = { 0 };
	const char *url = route_name("--service", arg, s.name), *hp, *end;
	size_t hl;

	for (size_t i = 0; i < cfg->nsvc; i++)
		if (!strcmp(cfg->svc[i].name, s.name))
			sbx_die_usage("--service: route %s given twice", s.name);
	if (cfg->nsvc == BROKER_MAX_SERVICES)
		sbx_die_usage("--service: more than %d routes", BROKER_MAX_SERVICES);
	if (strncmp(url, "https://", 8))
		sbx_die_usage("--service: invalid URL '%s': only https://HOST[:PORT][/PREFIX] (the broker "
			      "speaks TLS to the service)", url);
	hp = url + 8;
	if (strpbrk(hp, "@?#"))
		sbx_die_usage("--service: invalid URL '%s': no credentials, query or fragment (credentials "
			      "go in --service-header)", url);
	if (*hp == '[') {
		end = strchr(hp, ']');
		if (!end)
			sbx_die_usage("--service: invalid URL '%s': unclosed [", url);
		hl = (size_t)(end - hp - 1);
		if (hl >= sizeof s.host)
			sbx_die_usage("--service: invalid URL '%s': invalid address", url);
		memcpy(s.host, hp + 1, hl);
		s.host[hl] = '\0';
		struct in6_addr a6;
		if (inet_pton(AF_INET6, s.host, &a6) != 1)
			sbx_die_usage("--service: invalid URL '%s': invalid IPv6 address", url);
		s.host_is_ip = 1;
		end++;
	} else {
		struct in_addr a4;
		const char *why;
		end = hp + strcspn(hp, ":/");
		hl = (size_t)(end - hp);
		/* An address in dotted decimal (inet_pton's one spelling); a
		 * name otherwise, where other spellings of an address, like
		 * 127.1, are refused. */
		if (hl < sizeof s.host) {
			memcpy(s.host, hp, hl);
			s.host[hl] = '\0';
			s.host_is_ip = inet_pton(AF_INET, s.host, &a4) == 1;
		}
		why = s.host_is_ip ? NULL : sbx_host_normalize(hp, hl, s.host);
		if (why)
			sbx_die_usage("--service: invalid host in '%s': %s", url, why);
	}
	s.port = 443;
	if (*end == ':') {
		char port[8];
		size_t pl = strcspn(end + 1, "/");
		if (pl == 0 || pl >= sizeof port)
			sbx_die_usage("--service: invalid port in '%s'", url);
		memcpy(port, end + 1, pl);
		port[pl] = '\0';
		s.port = (unsigned)sbx_opt_u64("--service: port", port, 1, 65535);
		end += 1 + pl;
	} else if (*end && *end != '/')
		sbx_die_usage("--service: invalid URL '%s'", url);
	if (*end) {
		size_t pl = strlen(end);
		while (pl > 1 && end[pl - 1] == '/')
			pl--;
		if (pl >= sizeof s.prefix)
			sbx_die_usage("--service: invalid URL '%s': a prefix over %d bytes", url, SERVICE_PREFIX_MAX);
		for (size_t i = 0; i < pl; i++)
			if (!prefix_char(end[i]))
				sbx_die_usage("--service: invalid URL '%s': the prefix has a character a path "
					      "cannot carry", url);
		if (strstr(end, "/../") || (pl >= 3 && !strncmp(end + pl - 3, "/..", 3)) || strstr(end, "//"))
			sbx_die_usage("--service: invalid URL '%s': the prefix has an empty or .. segment", url);
		if (pl > 1)
			memcpy(s.prefix, end, pl);
	}
	{
		int v6 = strchr(s.host, ':') != NULL;
		size_t al = (size_t)snprintf(s.authority, sizeof s.authority, "%s%s%s", v6 ? "[" : "", s.host,
					     v6 ? "]" : "");
		if (s.port != 443)
			snprintf(s.authority + al, sizeof s.authority - al, ":%u", s.port);
	}
	cfg->svc = sbx_need(realloc(cfg->svc, (cfg->nsvc + 1) * sizeof *cfg->svc));
	cfg->svc[cfg->nsvc++] = s;
}

void broker_add_service_file(struct broker_cfg *cfg, int ca, const char *arg)
{
	const char *opt = ca ? "--service-ca" : "--service-header";
	char name[64];
	const char *path = route_name(opt, arg, name);

	sbx_opt_abspath(opt, path);
	for (size_t i = 0; i < nfiles; i++)
		if (files[i].ca == ca && !strcmp(files[i].name, name))
			sbx_die_usage("%s: route %s given twice", opt, name);
	if (nfiles == sizeof files / sizeof files[0])
		sbx_die_usage("%s: more than %d", opt, BROKER_MAX_SERVICES);
	files[nfiles].ca = ca;
	memcpy(files[nfiles].name, name, sizeof name);
	files[nfiles++].path = path;
	(void)cfg;
}

/* The whole file, at most max bytes, opened without following a symlink.
 * private: the header file's rule, that of every secret the tools read
 * (lib/private.h). */
static char *read_file(const char *opt, const char *name, const char *path, size_t max, int private,
		       int follow, size_t *len)
{
	struct sbx_private_why w;
	struct stat st;
	char *buf;
	long n;
	int fd;

	if (private) {
		fd = sbx_open_private(path, &w);
		if (fd < 0 && w.why[0])
			sbx_die_usage("%s: %s: %s is unsafe: %s%s%s", opt, name, path, w.why, w.fix ? "; " : "",
				      w.fix ? w.fix : "");
	} else {
		fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
		if (fd < 0 && errno == ELOOP && !follow)
			sbx_die_usage("%s: %s: %s is a symlink; name the file itself", opt, name, path);
	}
	if (fd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "%s: %s: unable to open %s", opt, name, path);
	if (fstat(fd, &st) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "%s: %s: unable to stat %s", opt, name, path);
	if (!S_ISREG(st.st_mode))
		sbx_die_usage("%s: %s: %s is not a regular file", opt, name, path);
	buf = sbx_need(malloc(max + 1));
	n = sbx_read_full(fd, buf, max + 1);
	if (n < 0)
		sbx_die_errno(SBX_EXIT_SYS, "%s: %s: unable to read %s", opt, name, path);
	close(fd);
	if ((size_t)n > max)
		sbx_die_usage("%s: %s: %s is larger than %zu bytes", opt, name, path, max);
	if (n == 0)
		sbx_die_usage("%s: %s: %s is empty", opt, name, path);
	*len = (size_t)n;
	return buf;
}

/* Fields the broker itself writes or that frame the message. */
static int reserved(const char *name, size_t n)
{
	static const char *const names[] = { "host", "content-length", "transfer-encoding", "upgrade", NULL };
	struct sbx_http_field f = { .name = name, .nlen = n };

	if (http_hop_by_hop(&f))
		return 1;
	for (size_t i = 0; names[i]; i++)
		if (n == strlen(names[i]) && !strncasecmp(name, names[i], n))
			return 1;
	return 0;
}

/* The header lines into locked memory that core dumps leave out; the
 * file's bytes are wiped. Refusals name the line, never its value. */
static void load_headers(struct broker_service *s, const char *path)
{
	const char *opt = "--service-header";
	size_t len, line = 0;
	char *buf = read_file(opt, s->name, path, SERVICE_HEADER_BYTES, 1, 0, &len), *p = buf, *e = buf + len;

	s->hdrcap = (SERVICE_HEADER_BYTES + 2 * SERVICE_HEADERS_MAX + 4095) & ~(size_t)4095;
	s->hdr = mmap(NULL, s->hdrcap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->hdr == MAP_FAILED)
		sbx_die_errno(SBX_EXIT_SYS, "%s: %s: unable to map memory", opt, s->name);
	(void)madvise(s->hdr, s->hdrcap, MADV_DONTDUMP);
	(void)mlock(s->hdr, s->hdrcap); /* best effort: RLIMIT_MEMLOCK may be small */
	while (p < e) {
		char *nl = memchr(p, '\n', (size_t)(e - p)), *end = nl ? nl : e, *colon, *v, *ve;
		line++;
		if (end > p && end[-1] == '\r')
			end--;
		if (end == p)
			sbx_die_usage("%s: %s: %s line %zu is empty", opt, s->name, path, line);
		if (s->nh == SERVICE_HEADERS_MAX)
			sbx_die_usage("%s: %s: %s has more than %d lines", opt, s->name, path, SERVICE_HEADERS_MAX);
		colon = memchr(p, ':', (size_t)(end - p));
		if (!colon || colon == p)
			sbx_die_usage("%s: %s: %s line %zu is not Name: value", opt, s->name, path, line);
		for (char *q = p; q < colon; q++)
			if (!sbx_http_tchar((unsigned char)*q))
				sbx_die_usage("%s: %s: %s line %zu: invalid field name", opt, s->name, path, line);
		if (reserved(p, (size_t)(colon - p)))
			sbx_die_usage("%s: %s: %s line %zu: %.*s is the broker's to write", opt, s->name, path,
				      line, (int)(colon - p), p);
		for (size_t i = 0; i < s->nh; i++)
			if (s->hname[i].len == (size_t)(colon - p) &&
			    !strncasecmp(s->hdr + s->hname[i].off, p, s->hname[i].len))
				sbx_die_usage("%s: %s: %s line %zu: %.*s given twice", opt, s->name, path, line,
					      (int)(colon - p), p);
		for (v = colon + 1; v < end && (*v == ' ' || *v == '\t'); v++)
			;
		for (ve = end; ve > v && (ve[-1] == ' ' || ve[-1] == '\t'); ve--)
			;
		if (v == ve)
			sbx_die_usage("%s: %s: %s line %zu: empty value", opt, s->name, path, line);
		for (char *q = v; q < ve; q++)
			if (((unsigned char)*q < 0x20 && *q != '\t') || *q == 0x7f)
				sbx_die_usage("%s: %s: %s line %zu: control character in the value", opt, s->name,
					      path, line);
		s->hname[s->nh].off = s->hdrlen;
		s->hname[s->nh++].len = (size_t)(colon - p);
		memcpy(s->hdr + s->hdrlen, p, (size_t)(colon - p));
		s->hdrlen += (size_t)(colon - p);
		memcpy(s->hdr + s->hdrlen, ": ", 2);
		memcpy(s->hdr + s->hdrlen + 2, v, (size_t)(ve - v));
		s->hdrlen += 2 + (size_t)(ve - v);
		memcpy(s->hdr + s->hdrlen, "\r\n", 2);
		s->hdrlen += 2;
		p = nl ? nl + 1 : e;
	}
	explicit_bzero(buf, len);
	free(buf);
}

void broker_services_finish(struct broker_cfg *cfg)
{
	for (size_t i = 0; i < nfiles; i++) {
		struct broker_service *s = (struct broker_service *)broker_service_find(cfg, files[i].name);
		if (!s)
			sbx_die_usage("%s: %s is no route (--service %s=https://...)",
				      files[i].ca ? "--service-ca" : "--service-header", files[i].name, files[i].name);
		if (files[i].ca)
			s->ca_path = files[i].path;
		else
			s->header_path = files[i].path;
	}
	for (size_t i = 0; i < cfg->nsvc; i++) {
		struct broker_service *s = &cfg->svc[i];
		size_t len;
		char *pem;

		for (size_t j = 0; j < cfg->nhosts; j++)
			if (sbx_hostpat_match(&cfg->hosts[j], s->name))
				sbx_die_usage("--service: route %s is also an allowed host (--allow-host): a name is "
					      "either a route or a host; rename the route", s->name);
		for (size_t j = 0; j < cfg->ntcp; j++)
			if (!strcmp(cfg->tcp[j].name, s->name))
				sbx_die_usage("--service: route %s is also an --allow-tcp name; rename the route",
					      s->name);
		if (s->header_path)
			load_headers(s, s->header_path);
		pem = read_file("--service-ca", s->name, s->ca_path ? s->ca_path : HOST_STORE, CA_MAX, 0,
				!s->ca_path, &len);
		s->tls = broker_tls_ctx(s, pem, len, s->ca_path ? s->ca_path : HOST_STORE);
		free(pem);
	}
	broker_service_rules_finish(cfg);
}

const struct broker_service *broker_service_find(const struct broker_cfg *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->nsvc; i++)
		if (!strcmp(cfg->svc[i].name, name))
			return &cfg->svc[i];
	return NULL;
}

/* A request to http://NAME/: plain HTTP on port 80, never CONNECT (the
 * broker would be asked to tunnel TLS it must not see). */
int service_check(struct loop *L, struct conn *c, const struct broker_service *s)
{
	c->svc = s;
	if (c->is_connect) {
		refuse(L, c, 403, "CONNECT refused: ask http://%s/ in plain HTTP; the broker adds the TLS", s->name);
		return -1;
	}
	if (c->port != 80) {
		refuse(L, c, 403, "port %u refused: a route is asked on port 80 (http://%s/)", c->port, s->name);
		return -1;
	}
	return 0;
}

static int route_field(const struct broker_service *s, const struct sbx_http_field *f)
{
	if (f->nlen == 4 && !strncasecmp(f->name, "host", 4))
		return 1;
	for (size_t i = 0; i < s->nh; i++)
		if (s->hname[i].len == f->nlen && !strncasecmp(s->hdr + s->hname[i].off, f->name, f->nlen))
			return 1;
	return 0;
}

/* The request as the service gets it: the prefix before the path, Host
 * the service's, the route's lines in place of the sandbox's same-named
 * ones, no hop-by-hop field, closed after one response. */
int service_forward(struct loop *L, struct conn *c, const struct sbx_http_head *h)
{
	const struct broker_service *s = c->svc;
	size_t n, cap, body = c->inlen - h->head_len;
	char *out;

	if (!h->plen || h->path[0] != '/') {
		refuse(L, c, 400, "a route's request needs a path starting with /");
		return -1;
	}
	if (service_rules(L, c, h) < 0)
		return -1;
	/* The log's record of the route's use: no query, where secrets go. */
	for (n = 0; n < h->plen && h->path[n] != '?' && h->path[n] != '#'; n++)
		;
	snprintf(c->path, sizeof c->path, "%.*s", (int)(n < sizeof c->path - 1 ? n : sizeof c->path - 1), h->path);
	cap = h->head_len + 2 * h->nfields + strlen(s->prefix) + strlen(s->authority) + s->hdrlen + 96 + body;
	out = malloc(cap);
	if (!out) {
		refuse(L, c, 502, "out of memory");
		return -1;
	}
	n = (size_t)snprintf(out, cap, "%.*s %s%.*s HTTP/1.1\r\nHost: %s\r\n", (int)h->mlen, h->method,
			     s->prefix, (int)h->plen, h->path, s->authority);
	for (size_t i = 0; i < h->nfields; i++) {
		const struct sbx_http_field *f = &h->f[i];
		if (http_hop_by_hop(f) || route_field(s, f))
			continue;
		memcpy(out + n, f->name, f->nlen);
		memcpy(out + n + f->nlen, ": ", 2);
		n += f->nlen + 2;
		memcpy(out + n, f->value, f->vlen);
		n += f->vlen;
		memcpy(out + n, "\r\n", 2);
		n += 2;
	}
	memcpy(out + n, s->hdr, s->hdrlen);
	n += s->hdrlen;
	memcpy(out + n, "Connection: close\r\n\r\n", 21);
	n += 21;
	memcpy(out + n, c->in + h->head_len, body);
	n += body;
	c->up.buf = out;
	c->up.len = n;
	c->up.wipe = 1;
	c->body_left = (h->has_length ? h->length : 0) - body;
	c->expect_continue = h->expect_continue;
	free(c->in);
	c->in = NULL;
	c->inlen = c->incap = 0;
	snprintf(c->host, sizeof c->host, "%s", s->host);
	c->port = s->port;
	return 0;
}

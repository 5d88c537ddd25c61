#include "sbpl.h"
#include "cmdpath.h"
#include "grow.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growable string; once an allocation fails it stays failed, so callers
 * check once at the end. */
struct buf {
	char *s;
	size_t len, cap;
	int failed;
};

static void put(struct buf *b, const char *s, size_t n)
{
	sbx_grow_append(&b->s, &b->len, &b->cap, &b->failed, s, n);
}

static void puts_(struct buf *b, const char *s) { put(b, s, strlen(s)); }

static void printf_(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void printf_(struct buf *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof tmp)
		b->failed = 1;
	else
		put(b, tmp, (size_t)n);
}

static char *done(struct buf *b)
{
	if (b->failed || !b->s) {
		free(b->s);
		return b->failed ? NULL : strdup("");
	}
	return b->s;
}

/* Valid UTF-8 (no overlong forms, surrogates or code points past U+10FFFF). */
static int utf8_ok(const unsigned char *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint32_t cp;
		size_t len, k;
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		if (p[i] >= 0xc2 && p[i] <= 0xdf)
			len = 2, cp = p[i] & 0x1f;
		else if (p[i] >= 0xe0 && p[i] <= 0xef)
			len = 3, cp = p[i] & 0x0f;
		else if (p[i] >= 0xf0 && p[i] <= 0xf4)
			len = 4, cp = p[i] & 0x07;
		else
			return 0;
		if (len > n - i)
			return 0;
		for (k = 1; k < len; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (p[i + k] & 0x3f);
		}
		if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += len;
	}
	return 1;
}

/* The checks every path-like input passes before anything else. */
static const char *check_bytes(const char *in, size_t len)
{
	if (!len)
		return "empty";
	if (memchr(in, '\0', len))
		return "contains NUL";
	if (memchr(in, '\n', len) || memchr(in, '\r', len))
		return "contains a newline";
	if (!utf8_ok((const unsigned char *)in, len))
		return "not valid UTF-8";
	if (len >= PATH_MAX)
		return "too long";
	return NULL;
}

/* The macOS top-level symlinks into /private. */
static const char *const private_links[] = { "/var", "/tmp", "/etc" };

/* The shape every tool asks of a path (cmdpath.h), then collapse slashes, rewrite /var, /tmp, /etc. in is
 * already checked; the result is absolute, without a trailing slash
 * (except "/" itself). */
static const char *normalise(const char *in, size_t len, struct buf *b)
{
	const char *why = sbx_path_shape(in, len);
	size_t i = 0;

	if (why)
		return why;
	while (i < len) {
		size_t j;
		while (i < len && in[i] == '/')
			i++;
		if (i == len)
			break;
		for (j = i; j < len && in[j] != '/'; j++)
			;
		if (b->len == 0) {
			/* First component: is it one of the /private links? */
			for (size_t k = 0; k < sizeof private_links / sizeof *private_links; k++)
				if (j - i == 3 && !memcmp(in + i, private_links[k] + 1, 3))
					puts_(b, "/private");
		}
		put(b, "/", 1);
		put(b, in + i, j - i);
		i = j;
	}
	if (b->len == 0)
		put(b, "/", 1);
	return NULL;
}

const char *sbx_sbpl_canon(const char *in, size_t len, char **out)
{
	struct buf b = { 0 };
	const char *why;

	*out = NULL;
	if ((why = check_bytes(in, len)))
		return why;
	if ((why = normalise(in, len, &b))) {
		free(b.s);
		return why;
	}
	if (!(*out = done(&b)))
		return "out of memory";
	return NULL;
}

static void quote(struct buf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (strchr(".[]()*+?{}|^$\\", s[i]) && s[i])
			put(b, "\\", 1);
		put(b, s + i, 1);
	}
}

static int wild(const char *s, size_t n)
{
	return memchr(s, '*', n) || memchr(s, '?', n);
}

const char *sbx_sbpl_glob(const char *ws, const char *in, size_t len,
			  char **regex, char **prefix)
{
	struct buf path = { 0 }, re = { 0 }, pre = { 0 };
	const char *why;
	size_t wslen = strlen(ws), i;
	int fixed = 1;

	*regex = *prefix = NULL;
	if ((why = check_bytes(in, len)))
		return why;
	if (in[0] == '/') {
		why = normalise(in, len, &path);
	} else {
		/* Relative to the workspace: normalise "WS/glob". */
		struct buf t = { 0 };
		puts_(&t, ws);
		put(&t, "/", 1);
		put(&t, in, len);
		why = t.failed ? "out of memory" : normalise(t.s, t.len, &path);
		free(t.s);
	}
	if (!why && path.failed)
		why = "out of memory";
	if (!why && (path.len <= wslen || strncmp(path.s, ws, wslen) ||
		     (path.s[wslen] != '/' && strcmp(ws, "/"))))
		why = "outside the workspace";
	if (why) {
		free(path.s);
		return why;
	}
	/* path = WS "/" components; translate the part after the workspace. */
	i = strcmp(ws, "/") ? wslen : 0;
	puts_(&re, "^");
	quote(&re, ws, strcmp(ws, "/") ? wslen : 0);
	puts_(&pre, ws);
	while (i < path.len) {
		size_t j, k;
		i++; /* the slash */
		for (j = i; j < path.len && path.s[j] != '/'; j++)
			;
		if (j - i == 2 && path.s[i] == '*' && path.s[i + 1] == '*') {
			puts_(&re, "(/.*)?");
			fixed = 0;
		} else if (memmem(path.s + i, j - i, "**", 2)) {
			why = "'**' must be a whole component";
			break;
		} else {
			puts_(&re, "/");
			for (k = i; k < j; k++) {
				if (path.s[k] == '*')
					puts_(&re, "[^/]*");
				else if (path.s[k] == '?')
					puts_(&re, "[^/]");
				else
					quote(&re, path.s + k, 1);
			}
			if (fixed && !wild(path.s + i, j - i)) {
				if (strcmp(pre.s, "/"))
					put(&pre, "/", 1);
				put(&pre, path.s + i, j - i);
			} else {
				fixed = 0;
			}
		}
		i = j;
	}
	puts_(&re, "(/.*)?$");
	/* A glob without wildcards denies its own path: what needs
	 * protecting is its parent. */
	if (fixed && !pre.failed && strlen(pre.s) > wslen)
		*strrchr(pre.s, '/') = '\0', pre.len = strlen(pre.s);
	free(path.s);
	if (!why && (re.failed || pre.failed))
		why = "out of memory";
	if (why) {
		free(re.s);
		free(pre.s);
		return why;
	}
	*regex = re.s;
	*prefix = pre.s;
	return NULL;
}

/* Parameters: a growing array of "NAME=VALUE" strings. */
struct params {
	char **v;
	size_t n;
	int failed;
};

static void param(struct params *p, const char *name, size_t idx, int indexed,
		  const char *val)
{
	struct buf b = { 0 };
	char **v;

	if (p->failed)
		return;
	if (indexed)
		printf_(&b, "%s%zu=", name, idx);
	else
		printf_(&b, "%s=", name);
	puts_(&b, val);
	v = realloc(p->v, (p->n + 1) * sizeof *v);
	if (!v || b.failed) {
		free(b.s);
		if (v)
			p->v = v;
		p->failed = 1;
		return;
	}
	p->v = v;
	p->v[p->n++] = b.s;
}

/* Strings, deduplicated, in first-seen order. */
struct set {
	char **v;
	size_t n;
	int failed;
};

static void set_add(struct set *s, const char *str, size_t len)
{
	char **v, *c;

	for (size_t i = 0; i < s->n; i++)
		if (strlen(s->v[i]) == len && !memcmp(s->v[i], str, len))
			return;
	c = strndup(str, len);
	v = c ? realloc(s->v, (s->n + 1) * sizeof *v) : NULL;
	if (!v) {
		free(c);
		s->failed = 1;
		return;
	}
	s->v = v;
	s->v[s->n++] = c;
}

static void set_free(struct set *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
}

/* Every proper ancestor of an absolute canonical path, "/" excluded. */
static void ancestors(struct set *s, const char *path)
{
	for (const char *p = path + 1; (p = strchr(p, '/')); p++)
		set_add(s, path, (size_t)(p - path));
}

/* Reads a command-line program needs on macOS, fixed by this tool (never
 * caller input, so they may appear as literals). Never the home directory.
 * The dyld shared cache lives under /System/Library/dyld or, since macOS
 * 13, in the OS cryptex; /private/var/select/sh is what /bin/sh runs. */
#define RUNTIME_CODE \
	"  (subpath \"/usr/lib\")\n" \
	"  (subpath \"/System/Library\")\n" \
	"  (subpath \"/System/Volumes/Preboot/Cryptexes/OS\")\n" \
	"  (subpath \"/Library/Apple/System/Library\")\n" \
	"  (subpath \"/Library/Apple/usr/lib\")\n" \
	"  (subpath \"/bin\")\n" \
	"  (subpath \"/usr/bin\")\n" \
	"  (subpath \"/Applications/Xcode.app/Contents/Developer\")\n" \
	"  (subpath \"/Library/Developer/CommandLineTools\")"

static const char runtime_reads[] =
	"(allow file-read*\n"
	RUNTIME_CODE "\n"
	"  (subpath \"/usr/share\")\n"
	"  (literal \"/etc\")\n"
	"  (subpath \"/private/etc\")\n"
	"  (literal \"/var\")\n"
	"  (literal \"/tmp\")\n"
	"  (literal \"/private/var/select/sh\")\n"
	"  (literal \"/dev/null\")\n"
	"  (literal \"/dev/zero\")\n"
	"  (literal \"/dev/random\")\n"
	"  (literal \"/dev/urandom\"))\n"
	"(allow file-map-executable\n"
	RUNTIME_CODE ")\n"
	"(allow file-write-data (literal \"/dev/null\"))\n";

const char *sbx_sbpl_build(const struct sbx_sbpl_cfg *cfg, struct sbx_sbpl *out,
			   const char **bad, const char **badval)
{
	struct buf prof = { 0 };
	struct params par = { 0 };
	struct set up = { 0 }, prot = { 0 }, regexes = { 0 }, ro = { 0 };
	const char *why = NULL;
	size_t i;

	memset(out, 0, sizeof *out);
	*bad = "--workspace";
	*badval = cfg->workspace;
	if ((why = sbx_sbpl_canon(cfg->workspace, strlen(cfg->workspace), &out->workspace)))
		goto fail;
	if (!strcmp(out->workspace, "/")) {
		why = "the root cannot be the workspace";
		goto fail;
	}
	for (i = 0; i < cfg->nro; i++) {
		char *c;
		*bad = "--ro";
		*badval = cfg->ro[i];
		if ((why = sbx_sbpl_canon(cfg->ro[i], strlen(cfg->ro[i]), &c)))
			goto fail;
		set_add(&ro, c, strlen(c));
		free(c);
	}
	for (i = 0; i < cfg->ndeny; i++) {
		char *re, *pre;
		*bad = "--deny-write";
		*badval = cfg->deny[i];
		if ((why = sbx_sbpl_glob(out->workspace, cfg->deny[i], strlen(cfg->deny[i]),
					 &re, &pre)))
			goto fail;
		set_add(&regexes, re, strlen(re));
		/* The fixed prefix and its ancestors down to the workspace. */
		if (strlen(pre) > strlen(out->workspace))
			ancestors(&prot, pre);
		set_add(&prot, pre, strlen(pre));
		free(re);
		free(pre);
	}
	*bad = *badval = NULL;

	/* Only ancestors at or below the workspace can be written at all. */
	ancestors(&up, out->workspace);
	for (i = 0; i < ro.n; i++)
		ancestors(&up, ro.v[i]);

	param(&par, "WS", 0, 0, out->workspace);
	for (i = 0; i < ro.n; i++)
		param(&par, "RO", i, 1, ro.v[i]);
	for (i = 0; i < up.n; i++)
		param(&par, "UP", i, 1, up.v[i]);
	for (i = 0; i < regexes.n; i++)
		param(&par, "DENY", i, 1, regexes.v[i]);
	{
		size_t k = 0;
		for (i = 0; i < prot.n; i++) {
			if (strlen(prot.v[i]) < strlen(out->workspace))
				continue;
			param(&par, "KEEP", k++, 1, prot.v[i]);
		}
	}

	puts_(&prof,
	      "(version 1)\n"
	      "(deny default)\n"
	      "(allow process-exec)\n"
	      "(allow process-fork)\n"
	      "(allow signal (target same-sandbox))\n"
	      "(allow process-info* (target same-sandbox))\n"
	      "(allow sysctl-read)\n");
	puts_(&prof, runtime_reads);
	/* Resolving a path (realpath, getcwd) stats each ancestor. */
	puts_(&prof, "(allow file-read-metadata\n  (literal \"/\")");
	for (i = 0; i < up.n; i++)
		printf_(&prof, "\n  (literal (param \"UP%zu\"))", i);
	puts_(&prof, ")\n");
	for (i = 0; i < ro.n; i++)
		printf_(&prof, "(allow file-read* file-map-executable (subpath (param \"RO%zu\")))\n", i);
	puts_(&prof, "(allow file-read* file-write* file-map-executable (subpath (param \"WS\")))\n");
	/* Later rules win in SBPL: the denials come after the allowance. */
	for (i = 0; i < regexes.n; i++)
		printf_(&prof, "(deny file-write* (regex (param \"DENY%zu\")))\n", i);
	{
		size_t k = 0;
		for (i = 0; i < prot.n; i++) {
			if (strlen(prot.v[i]) < strlen(out->workspace))
				continue;
			/* file-write* on the directory itself: unlink, rename,
			 * mode and owner changes; creating entries inside it is
			 * checked against the new path and stays allowed. */
			printf_(&prof, "(deny file-write* (literal (param \"KEEP%zu\")))\n", k++);
		}
	}
	if (cfg->broker_port)
		/* Exactly one loopback port; a (local ip ...) rule would open
		 * every outbound connection, and no DNS is allowed. */
		printf_(&prof, "(allow network-outbound (remote ip \"localhost:%u\"))\n",
			cfg->broker_port);

	{
		struct buf t = { 0 };
		puts_(&t, out->workspace);
		puts_(&t, "/" SBX_SBPL_TMPDIR);
		out->tmpdir = done(&t);
	}
	out->profile = done(&prof);
	out->params = par.v;
	out->nparams = par.n;
	set_free(&up);
	set_free(&prot);
	set_free(&regexes);
	set_free(&ro);
	if (par.failed || !out->profile || !out->tmpdir) {
		sbx_sbpl_free(out);
		return "out of memory";
	}
	return NULL;
fail:
	free(prof.s);
	for (i = 0; i < par.n; i++)
		free(par.v[i]);
	free(par.v);
	set_free(&up);
	set_free(&prot);
	set_free(&regexes);
	set_free(&ro);
	free(out->workspace);
	out->workspace = NULL;
	return why;
}

void sbx_sbpl_free(struct sbx_sbpl *s)
{
	for (size_t i = 0; i < s->nparams; i++)
		free(s->params[i]);
	free(s->params);
	free(s->workspace);
	free(s->tmpdir);
	free(s->profile);
	memset(s, 0, sizeof *s);
}

/* Policies as JSON: the `sandbox` block of one sandbox system and the
 * `resources` block of another, loaded strictly with jansson (a parser
 * with a nesting limit and duplicate-key detection, built from Debian's
 * pinned source like the other dependencies), and the effective policy
 * written back in the same shape. See policy.h. */
#include "policy.h"

#include "exitcodes.h"
#include "json.h"
#include "quote.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1ULL << 20)

/* ---- messages ---- */

/* A key as a path step: ".name" for identifiers, else ["..."]. */
static void path_key(char *path, size_t sz, const char *key, size_t klen)
{
	size_t n = strlen(path), i;
	int ident = klen > 0 && klen <= 64;
	char q[300];

	for (i = 0; i < klen && ident; i++) {
		char ch = key[i];
		ident = ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			(i && ch >= '0' && ch <= '9');
	}
	if (n >= sz)
		return;
	if (ident) {
		snprintf(path + n, sz - n, ".%.*s", (int)klen, key);
		return;
	}
	sbx_quote(q, sizeof q, key, klen, 64, 0);
	snprintf(path + n, sz - n, "[\"%s\"]", q);
}

static void path_index(char *path, size_t sz, size_t idx)
{
	size_t n = strlen(path);

	if (n < sz)
		snprintf(path + n, sz - n, "[%zu]", idx);
}

/* ---- where a syntax error is ----
 *
 * jansson reports a line, a column and a byte position, not a path. The
 * path is found by walking the text before that position, which jansson
 * has already read as valid JSON up to the offending token: a flat loop
 * with an explicit stack (no recursion), tolerant of any bytes. */

struct frame {
	char kind;          /* '{' or '[' */
	size_t idx;         /* arrays: index of the current element */
	const char *key;    /* objects: the current key (raw, between quotes) */
	size_t klen;
	int want_key;
};

#define SCAN_DEPTH 4100   /* above jansson's 2048: deeper frames are counted, not kept */
#define PATH_SHOW 12      /* steps shown of a deep path */

static void error_path(const char *buf, size_t len, size_t pos, char *path, size_t sz)
{
	struct frame *st = calloc(SCAN_DEPTH, sizeof *st);
	size_t depth = 0, i = 0, kept, d;

	snprintf(path, sz, "$");
	if (!st)
		return;
	if (pos > len)
		pos = len;
	while (i < pos) {
		char ch = buf[i];
		size_t start = i, end;
		struct frame *top = depth && depth <= SCAN_DEPTH ? &st[depth - 1] : NULL;

		if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
			i++;
			continue;
		}
		if (ch == '"') {
			for (end = i + 1; end < len && buf[end] != '"'; end++)
				if (buf[end] == '\\')
					end++;
			end = end < len ? end + 1 : len;
		} else if (strchr("{}[],:", ch)) {
			end = i + 1;
		} else {
			for (end = i; end < len && !strchr(" \t\n\r{}[],:\"", buf[end]); end++)
				;
			if (end == i)
				end = i + 1;
		}
		if (end >= pos) {
			/* The offending token: a key names its own place. */
			if (ch == '"' && top && top->kind == '{' && top->want_key) {
				top->key = buf + start + 1;
				top->klen = end - start >= 2 ? end - start - 2 : 0;
				top->want_key = 0;
			}
			break;
		}
		i = end;
		switch (ch) {
		case '{':
		case '[':
			if (depth < SCAN_DEPTH)
				st[depth] = (struct frame){ ch, 0, NULL, 0, ch == '{' };
			depth++;
			break;
		case '}':
		case ']':
			if (depth)
				depth--;
			break;
		case ',':
			if (top && top->kind == '[')
				top->idx++;
			else if (top)
				top->want_key = 1, top->key = NULL;
			break;
		case ':':
			if (top)
				top->want_key = 0;
			break;
		case '"':
			if (top && top->kind == '{' && top->want_key) {
				top->key = buf + start + 1;
				top->klen = end - start >= 2 ? end - start - 2 : 0;
			}
			break;
		}
	}
	kept = depth < SCAN_DEPTH ? depth : SCAN_DEPTH;
	for (d = 0; d < kept; d++) {
		if (kept > 2 * PATH_SHOW && d == PATH_SHOW) {
			size_t n = strlen(path);
			if (n < sz)
				snprintf(path + n, sz - n, "...(%zu levels)...", depth - 2 * PATH_SHOW);
			d = kept - PATH_SHOW - 1;
			continue;
		}
		if (st[d].kind == '[')
			path_index(path, sz, st[d].idx);
		else if (st[d].key)
			path_key(path, sz, st[d].key, st[d].klen);
	}
	free(st);
}

/* ---- the schema ---- */

struct ld {
	struct sbx_policy *p;
	struct sbx_err *e;
	const char *src;
};

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a real number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}

static int bad(struct ld *l, const char *path, const char *msg)
{
	return sbx_err_set(l->e, SBX_EXIT_USAGE, "%s: %s: %s", l->src, path, msg);
}

static int want(struct ld *l, const char *path, const json_t *v, json_type t, const char *what)
{
	char msg[200];

	if (json_typeof(v) == t || (t == JSON_TRUE && json_is_boolean(v)))
		return 0;
	snprintf(msg, sizeof msg, "expected %s, got %s", what, type_name(v));
	return bad(l, path, msg);
}

static void origin(const struct ld *l, const char *path, char *out, size_t sz)
{
	snprintf(out, sz, "%s: %s", l->src, path);
}

static int unknown_key(struct ld *l, const char *parent, const char *key)
{
	char path[512];

	snprintf(path, sizeof path, "%s", parent);
	path_key(path, sizeof path, key, strlen(key));
	return bad(l, path, "unknown key");
}

static int get_enum(struct ld *l, const char *path, const json_t *v, const char *const *names,
		    const char *list, struct sbx_pol_int *f)
{
	char o[600], q[200];
	const char *s;

	if (want(l, path, v, JSON_STRING, "a string") < 0)
		return -1;
	s = json_string_value(v);
	for (int i = 1; names[i]; i++)
		if (!strcmp(s, names[i])) {
			origin(l, path, o, sizeof o);
			return sbx_policy_set_int(l->p, f, i, o, l->e);
		}
	sbx_quote(q, sizeof q, s, json_string_length(v), 64, 0);
	snprintf(o, sizeof o, "unknown value \"%s\" (%s)", q, list);
	return bad(l, path, o);
}

static int get_bool(struct ld *l, const char *path, const json_t *v, struct sbx_pol_int *f)
{
	char o[600];

	if (want(l, path, v, JSON_TRUE, "a boolean") < 0)
		return -1;
	origin(l, path, o, sizeof o);
	return sbx_policy_set_int(l->p, f, json_is_true(v), o, l->e);
}

/* A positive integer at most max, times unit. */
static int get_u64(struct ld *l, const char *path, const json_t *v, uint64_t max, uint64_t unit,
		   struct sbx_pol_u64 *f)
{
	char o[600], msg[100];
	json_int_t n;

	if (json_is_real(v))
		return bad(l, path, "expected an integer, got a real number");
	if (want(l, path, v, JSON_INTEGER, "an integer") < 0)
		return -1;
	n = json_integer_value(v);
	if (n == 0)
		return bad(l, path, "zero is not a limit");
	if (n < 0)
		return bad(l, path, "negative");
	if ((uint64_t)n > max) {
		snprintf(msg, sizeof msg, "%lld is above the maximum %llu", (long long)n,
			 (unsigned long long)max);
		return bad(l, path, msg);
	}
	origin(l, path, o, sizeof o);
	return sbx_policy_set_u64(l->p, f, (uint64_t)n * unit, o, l->e);
}

/* A size given either in MiB (NAME_mb) or in bytes (NAME_bytes), never
 * both: max is in bytes. */
static int get_size(struct ld *l, const char *path, const json_t *v, const char *name, int mb,
		    uint64_t max, struct sbx_pol_u64 *f)
{
	char msg[100];

	if (f->set) {
		snprintf(msg, sizeof msg, "%s_mb and %s_bytes are exclusive", name, name);
		return bad(l, path, msg);
	}
	return get_u64(l, path, v, mb ? max / MIB : max, mb ? MIB : 1, f);
}

enum listkind { L_ROOT, L_GLOB, L_HOST };

static int get_list(struct ld *l, const char *path, const json_t *v, enum listkind k,
		    struct sbx_pol_list *list)
{
	char ipath[600], o[700];
	size_t i;
	json_t *it;

	if (want(l, path, v, JSON_ARRAY, "an array of strings") < 0)
		return -1;
	if (json_array_size(v) > SBX_POL_MAX_ITEMS)
		return bad(l, path, "more than 4096 entries");
	origin(l, path, o, sizeof o);
	sbx_policy_list_given(list, o);
	json_array_foreach(v, i, it) {
		int rc;

		snprintf(ipath, sizeof ipath, "%s", path);
		path_index(ipath, sizeof ipath, i);
		if (want(l, ipath, it, JSON_STRING, "a string") < 0)
			return -1;
		if (strlen(json_string_value(it)) != json_string_length(it))
			return bad(l, ipath, "NUL in string");
		origin(l, ipath, o, sizeof o);
		if (k == L_ROOT)
			rc = sbx_policy_add_root(l->p, list, json_string_value(it), o, l->e);
		else if (k == L_GLOB)
			rc = sbx_policy_add_glob(l->p, json_string_value(it), o, l->e);
		else
			rc = sbx_policy_add_host(l->p, json_string_value(it), o, l->e);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int load_network(struct ld *l, const json_t *net)
{
	static const char *const modes[] = { "?", "none", "localhost", "allowlist", "all", NULL };
	const char *key;
	json_t *v;

	if (want(l, "$.sandbox.network", net, JSON_OBJECT, "an object") < 0)
		return -1;
	json_object_foreach((json_t *)net, key, v) {
		if (!strcmp(key, "mode")) {
			if (get_enum(l, "$.sandbox.network.mode", v, modes,
				     "none, localhost, allowlist, all", &l->p->net) < 0)
				return -1;
		} else if (!strcmp(key, "allowlist")) {
			if (get_list(l, "$.sandbox.network.allowlist", v, L_HOST, &l->p->allow) < 0)
				return -1;
		} else {
			return unknown_key(l, "$.sandbox.network", key);
		}
	}
	return 0;
}

static int load_sandbox(struct ld *l, const json_t *sb)
{
	static const char *const modes[] = { "?", "native", "off", NULL };
	const char *const *fbs = sbx_pol_fallbacks;
	struct sbx_policy *p = l->p;
	const char *key;
	json_t *v;
	int rc;

	if (want(l, "$.sandbox", sb, JSON_OBJECT, "an object") < 0)
		return -1;
	json_object_foreach((json_t *)sb, key, v) {
		if (!strcmp(key, "mode"))
			rc = get_enum(l, "$.sandbox.mode", v, modes, "native, off", &p->mode);
		else if (!strcmp(key, "network"))
			rc = load_network(l, v);
		else if (!strcmp(key, "readableRoots"))
			rc = get_list(l, "$.sandbox.readableRoots", v, L_ROOT, &p->ro);
		else if (!strcmp(key, "writableRoots"))
			rc = get_list(l, "$.sandbox.writableRoots", v, L_ROOT, &p->rw);
		else if (!strcmp(key, "denyWrite"))
			rc = get_list(l, "$.sandbox.denyWrite", v, L_GLOB, &p->deny);
		else if (!strcmp(key, "fallback"))
			rc = get_enum(l, "$.sandbox.fallback", v, fbs,
				      "fail-closed, landlock, unsafe-host-process", &p->fallback);
		else if (!strcmp(key, "unsafeAllowHostProcess"))
			rc = get_bool(l, "$.sandbox.unsafeAllowHostProcess", v, &p->unsafe);
		else if (!strcmp(key, "tierDenyWrite"))
			rc = get_enum(l, "$.sandbox.tierDenyWrite", v, sbx_pol_tier_deny, "refuse, unenforced",
				      &p->tier_deny);
		else if (!strcmp(key, "hostCA"))
			rc = get_bool(l, "$.sandbox.hostCA", v, &p->host_ca);
		else
			rc = unknown_key(l, "$.sandbox", key);
		if (rc < 0)
			return -1;
	}
	sbx_policy_sandbox_defaults(p);
	return 0;
}

/* One resource key at prefix ("$.resources" or "$" for the bare block).
 * 1: not a resource key. */
static int load_resource(struct ld *l, const char *prefix, const char *key, const json_t *v)
{
	struct sbx_policy *p = l->p;
	char path[512];

	snprintf(path, sizeof path, "%s.%s", prefix, key);
	if (!strcmp(key, "cpu_percent"))
		return get_u64(l, path, v, SBX_POL_MAX_CPU_PCT, 1, &p->cpu);
	if (!strcmp(key, "memory_mb") || !strcmp(key, "memory_bytes"))
		return get_size(l, path, v, "memory", key[7] == 'm', SBX_POL_MAX_MEMORY, &p->memory);
	if (!strcmp(key, "disk_mb") || !strcmp(key, "disk_bytes"))
		return get_size(l, path, v, "disk", key[5] == 'm', SBX_POL_MAX_DISK, &p->disk);
	if (!strcmp(key, "max_processes"))
		return get_u64(l, path, v, SBX_POL_MAX_PIDS, 1, &p->pids);
	if (!strcmp(key, "max_inodes"))
		return get_u64(l, path, v, SBX_POL_MAX_INODES, 1, &p->inodes);
	if (!strcmp(key, "require_hard_limits"))
		return get_bool(l, path, v, &p->hard);
	if (!strcmp(key, "accept_statfs_quota"))
		return get_bool(l, path, v, &p->statfs_ok);
	return 1;
}

static int load_resources(struct ld *l, const json_t *res)
{
	const char *key;
	json_t *v;

	if (want(l, "$.resources", res, JSON_OBJECT, "an object") < 0)
		return -1;
	json_object_foreach((json_t *)res, key, v) {
		int rc = load_resource(l, "$.resources", key, v);
		if (rc > 0)
			return unknown_key(l, "$.resources", key);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int load_top(struct ld *l, const json_t *top)
{
	const char *key;
	json_t *v;
	int bare = 0, block = 0;

	if (want(l, "$", top, JSON_OBJECT, "an object") < 0)
		return -1;
	/* The resources block may also be the whole document, as one of the
	 * specs prints it; not both ways at once. */
	json_object_foreach((json_t *)top, key, v) {
		int rc;

		if (!strcmp(key, "sandbox")) {
			rc = load_sandbox(l, v);
		} else if (!strcmp(key, "resources")) {
			if (bare)
				return bad(l, "$.resources", "resource fields given at the top level as well");
			block = 1;
			rc = load_resources(l, v);
		} else {
			rc = load_resource(l, "$", key, v);
			if (rc > 0)
				return unknown_key(l, "$", key);
			if (!rc && block) {
				char path[300];
				snprintf(path, sizeof path, "$.%s", key);
				return bad(l, path, "given in $.resources as well");
			}
			bare = 1;
		}
		if (rc < 0)
			return -1;
	}
	/* Resource limits are hard unless the block says otherwise. */
	if ((bare || block) && !l->p->hard.set) {
		char o[600];
		origin(l, "default", o, sizeof o);
		if (sbx_policy_set_int(l->p, &l->p->hard, 1, o, l->e) < 0)
			return -1;
	}
	return 0;
}

int sbx_policy_parse(struct sbx_policy *p, const char *buf, size_t len, struct sbx_err *e)
{
	struct ld l = { p, e, p->source ? p->source : "policy" };
	json_error_t err;
	json_t *top;
	char path[600], text[400];
	int rc;

	if (len > SBX_POL_MAX_BYTES)
		return sbx_err_set(e, SBX_EXIT_USAGE, "%s: larger than %u bytes", l.src,
				    SBX_POL_MAX_BYTES);
	if (len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
		return sbx_err_set(e, SBX_EXIT_USAGE,
				    "%s: $: invalid JSON at line 1, column 1: a byte order mark is not allowed",
				    l.src);
	/* No JSON_DECODE_ANY (the top is an object or an array), no
	 * JSON_DISABLE_EOF_CHECK (nothing may follow it), no JSON_ALLOW_NUL. */
	top = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
	if (!top) {
		error_path(buf, len, (size_t)(err.position < 0 ? 0 : err.position), path, sizeof path);
		sbx_quote(text, sizeof text, err.text, strlen(err.text), 160, 0);
		return sbx_err_set(e, SBX_EXIT_USAGE, "%s: %s: invalid JSON at line %d, column %d: %s",
				    l.src, path, err.line, err.column, text);
	}
	rc = load_top(&l, top);
	json_decref(top);
	if (rc < 0)
		return -1;
	return sbx_policy_check(p, e);
}

/* ---- writing ---- */

static void put_list(struct sbx_json *j, const char *key, const struct sbx_pol_list *l)
{
	if (!l->set)
		return;
	sbx_json_open_arr(j, key);
	for (size_t i = 0; i < l->n; i++)
		sbx_json_str(j, NULL, l->it[i].val);
	sbx_json_close_arr(j);
}

static void put_size(struct sbx_json *j, const char *mb, const char *bytes, const struct sbx_pol_u64 *f)
{
	if (!f->set)
		return;
	if (f->v % MIB == 0)
		sbx_json_uint(j, mb, f->v / MIB);
	else
		sbx_json_uint(j, bytes, f->v);
}

char *sbx_policy_to_json(const struct sbx_policy *p, unsigned scope)
{
	static const char *const modes[] = { "?", "native", "off" };
	const char *const *fbs = sbx_pol_fallbacks;
	struct sbx_json j;
	const char *line;
	size_t len;
	char *out;

	sbx_json_begin(&j, NULL, NULL);
	if ((scope & SBX_PSCOPE_NS) && sbx_policy_has_sandbox(p)) {
		sbx_json_open_obj(&j, "sandbox");
		if (p->mode.set)
			sbx_json_str(&j, "mode", modes[p->mode.v]);
		if (p->net.set || p->allow.set) {
			sbx_json_open_obj(&j, "network");
			if (p->net.set)
				sbx_json_str(&j, "mode", sbx_policy_net_name(p->net.v));
			put_list(&j, "allowlist", &p->allow);
			sbx_json_close_obj(&j);
		}
		put_list(&j, "readableRoots", &p->ro);
		put_list(&j, "writableRoots", &p->rw);
		put_list(&j, "denyWrite", &p->deny);
		if (p->fallback.set)
			sbx_json_str(&j, "fallback", fbs[p->fallback.v]);
		if (p->unsafe.set)
			sbx_json_bool(&j, "unsafeAllowHostProcess", p->unsafe.v);
		if (p->tier_deny.set)
			sbx_json_str(&j, "tierDenyWrite", sbx_pol_tier_deny[p->tier_deny.v]);
		if (p->host_ca.set)
			sbx_json_bool(&j, "hostCA", p->host_ca.v);
		sbx_json_close_obj(&j);
	}
	if ((scope & (SBX_PSCOPE_CGROUP | SBX_PSCOPE_QUOTA)) && sbx_policy_has_resources(p)) {
		sbx_json_open_obj(&j, "resources");
		if ((scope & SBX_PSCOPE_CGROUP) && p->cpu.set)
			sbx_json_uint(&j, "cpu_percent", p->cpu.v);
		if (scope & SBX_PSCOPE_CGROUP)
			put_size(&j, "memory_mb", "memory_bytes", &p->memory);
		if (scope & SBX_PSCOPE_QUOTA)
			put_size(&j, "disk_mb", "disk_bytes", &p->disk);
		if ((scope & SBX_PSCOPE_CGROUP) && p->pids.set)
			sbx_json_uint(&j, "max_processes", p->pids.v);
		if ((scope & SBX_PSCOPE_QUOTA) && p->inodes.set)
			sbx_json_uint(&j, "max_inodes", p->inodes.v);
		if (p->hard.set)
			sbx_json_bool(&j, "require_hard_limits", p->hard.v);
		if ((scope & SBX_PSCOPE_QUOTA) && p->statfs_ok.set)
			sbx_json_bool(&j, "accept_statfs_quota", p->statfs_ok.v);
		sbx_json_close_obj(&j);
	}
	line = sbx_json_end(&j, &len);
	out = line ? strndup(line, len) : NULL;
	sbx_json_free(&j);
	return out;
}

void sbx_policy_clamped_json(struct sbx_json *j, const struct sbx_pol_clamped *cl)
{
	sbx_json_open_arr(j, "clamped");
	for (size_t i = 0; cl && i < cl->n; i++)
		sbx_json_str(j, NULL, cl->field[i]);
	sbx_json_close_arr(j);
}

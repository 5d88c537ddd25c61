/* Reading an observation record (sbx-ns --observe, sbx-ns(1)) for
 * `sbx-check policy narrow`: its own format and nothing else.
 *
 * The file is trusted as a baseline is (lib/policy's open: owned by root
 * or the caller, written by no one else, no symlink on its path), read
 * whole up to OBS_MAX bytes, and checked in this order, each refusal one
 * line naming the file and the line:
 *   - the first line is a record's start ("record":"sbx-observe-v1"), or
 *     the file is not a record at all (100);
 *   - it ends with a newline and its last line is the end line, or it was
 *     cut short (102: truncated);
 *   - every line is one JSON object of the grammar, no key unknown, none
 *     twice, each of its type (100);
 *   - the end line counts the lines before it and holds the SHA-256 of
 *     every byte before it (102: edited since it was written).
 * The digest finds a record that was cut, joined or edited; it is not a
 * signature: whoever may write the file may write a new digest too, which
 * is why the file must be one only the administrator writes. */
#include "check.h"
#include "obs.h"

#include "die.h"
#include "digest.h"
#include "exitcodes.h"
#include "fd.h"
#include "policy.h"
#include "quote.h"

#include <errno.h>
#include <stdio.h>
#include <stdnoreturn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OBS_MAX (64u << 20)

static const char *const start_keys[] = { "tool", "event", "record", "run", "serve", "time", "caller", "uid",
					  "gid", "workspace", "plan", "baseline_sha256", "policy", NULL };
static const char *const net_keys[] = { "event", "decision", "host", "port", "method", "service", "path",
					"reason", "count", NULL };
static const char *const exec_keys[] = { "event", "path", "by", "dev", "ino", "size", "sha256", "count",
					 "more", NULL };
static const char *const write_keys[] = { "event", "path", "more", "error", NULL };
static const char *const denied_keys[] = { "event", "syscall", "family", "count", NULL };
static const char *const res_keys[] = { "event", "cgroup", "memory_peak", "pids_peak", "cpu_usec", "cpu_from",
					"wall_ms", "why", NULL };
static const char *const end_keys[] = { "event", "code", "lines", "sha256", NULL };

noreturn static void bad(const struct chk_obs *o, size_t line, const char *why)
{
	sbx_die_usage("%s:%zu: not an observation record line: %s", o->label, line, why);
}

static void keys(const struct chk_obs *o, size_t line, json_t *j, const char *const *allowed)
{
	const char *k;
	json_t *v;
	char q[200], why[300];

	json_object_foreach(j, k, v) {
		size_t i;
		for (i = 0; allowed[i] && strcmp(allowed[i], k); i++)
			;
		if (!allowed[i]) {
			sbx_quote(q, sizeof q, k, strlen(k), 64, 0);
			snprintf(why, sizeof why, "unknown key \"%s\"", q);
			bad(o, line, why);
		}
	}
}

static void need(const struct chk_obs *o, size_t line, json_t *j, const char *key, json_type type, int nullable)
{
	json_t *v = json_object_get(j, key);
	char why[160];

	if (v && (json_typeof(v) == type || (nullable && json_is_null(v))))
		return;
	if (v && type == JSON_INTEGER && json_is_integer(v))
		return;
	snprintf(why, sizeof why, "\"%s\" %s", key, v ? "has the wrong type" : "is missing");
	bad(o, line, why);
}

static int is_hex(const char *s, size_t n)
{
	if (!s || strlen(s) != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static void start_line(const struct chk_obs *o, json_t *j)
{
	json_t *plan = json_object_get(j, "plan"), *caller = json_object_get(j, "caller"), *v;
	const char *k;

	keys(o, 1, j, start_keys);
	need(o, 1, j, "run", JSON_STRING, 0);
	need(o, 1, j, "serve", json_is_true(json_object_get(j, "serve")) ? JSON_TRUE : JSON_FALSE, 0);
	need(o, 1, j, "time", JSON_INTEGER, 0);
	need(o, 1, j, "caller", JSON_OBJECT, 0);
	need(o, 1, j, "uid", JSON_INTEGER, 0);
	need(o, 1, j, "gid", JSON_INTEGER, 0);
	need(o, 1, j, "workspace", JSON_STRING, 0);
	need(o, 1, j, "plan", JSON_OBJECT, 0);
	need(o, 1, j, "baseline_sha256", JSON_STRING, 1);
	need(o, 1, j, "policy", JSON_OBJECT, 1);
	if (!is_hex(json_string_value(json_object_get(j, "run")), 32))
		bad(o, 1, "\"run\" is not 32 hex digits");
	if (json_object_size(caller) != 2 || !json_is_integer(json_object_get(caller, "uid")) ||
	    !json_is_integer(json_object_get(caller, "gid")))
		bad(o, 1, "\"caller\" is not {\"uid\",\"gid\"}");
	if (json_object_size(plan) != CHK_OBS_PLAN_KEYS)
		bad(o, 1, "\"plan\" does not hold one digest per part of the plan");
	json_object_foreach(plan, k, v)
		if (!is_hex(json_string_value(v), 64))
			bad(o, 1, "a digest of \"plan\" is not 64 hex digits");
	if (json_is_string(json_object_get(j, "baseline_sha256")) &&
	    !is_hex(json_string_value(json_object_get(j, "baseline_sha256")), 64))
		bad(o, 1, "\"baseline_sha256\" is not 64 hex digits");
}

static void body_line(const struct chk_obs *o, size_t line, json_t *j)
{
	const char *ev = json_string_value(json_object_get(j, "event"));

	if (!ev)
		bad(o, line, "no \"event\"");
	if (!strcmp(ev, "net")) {
		keys(o, line, j, net_keys);
		need(o, line, j, "decision", JSON_STRING, 0);
		need(o, line, j, "count", JSON_INTEGER, 0);
		if (json_object_get(j, "host"))
			need(o, line, j, "host", JSON_STRING, 1);
		if (json_object_get(j, "port"))
			need(o, line, j, "port", JSON_INTEGER, 1);
	} else if (!strcmp(ev, "exec")) {
		keys(o, line, j, exec_keys);
		if (!json_object_get(j, "more")) {
			need(o, line, j, "path", JSON_STRING, 0);
			need(o, line, j, "dev", JSON_INTEGER, 0);
			need(o, line, j, "ino", JSON_INTEGER, 0);
			need(o, line, j, "sha256", JSON_STRING, 1);
			need(o, line, j, "count", JSON_INTEGER, 0);
		}
	} else if (!strcmp(ev, "write")) {
		keys(o, line, j, write_keys);
		if (!json_object_get(j, "more"))
			need(o, line, j, "path", JSON_STRING, 0);
	} else if (!strcmp(ev, "denied")) {
		keys(o, line, j, denied_keys);
		need(o, line, j, "syscall", JSON_STRING, 0);
		need(o, line, j, "count", JSON_INTEGER, 0);
	} else if (!strcmp(ev, "resources")) {
		keys(o, line, j, res_keys);
		need(o, line, j, "cgroup", json_is_true(json_object_get(j, "cgroup")) ? JSON_TRUE : JSON_FALSE, 0);
		need(o, line, j, "memory_peak", JSON_INTEGER, 1);
		need(o, line, j, "pids_peak", JSON_INTEGER, 1);
		need(o, line, j, "wall_ms", JSON_INTEGER, 0);
	} else {
		bad(o, line, "unknown event");
	}
}

static char *read_file(const char *path, const char *label, size_t *len)
{
	struct sbx_err e;
	char *buf = sbx_need(malloc(OBS_MAX + 1));
	int fd = sbx_policy_open_trusted(path, label, &e);
	long n;

	if (fd < 0)
		sbx_err_die(&e);
	n = sbx_read_eof(fd, buf, OBS_MAX + 1);
	if (n < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read %s", label);
	if ((size_t)n > OBS_MAX)
		sbx_die_usage("%s: larger than %u bytes: not an observation record", label, OBS_MAX);
	close(fd);
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

void chk_obs_read(const char *path, struct chk_obs *o)
{
	char q[1100], *buf;
	size_t len, off = 0, line = 0, cap = 0, end_at = 0;
	json_t *last = NULL;
	struct sbx_sha256 c;
	unsigned char d[SBX_SHA256_LEN];
	char hex[SBX_SHA256_HEX];

	memset(o, 0, sizeof *o);
	sbx_quote(q, sizeof q, path, strlen(path), 1024, 0);
	o->label = sbx_need(strdup(q));
	buf = read_file(path, o->label, &len);
	/* What it is, first: a record starts with its start line. */
	{
		const char *nl = memchr(buf, '\n', len);
		json_t *h = json_loadb(buf, nl ? (size_t)(nl - buf) : len, JSON_REJECT_DUPLICATES, NULL);
		if (!json_is_object(h) || !json_is_string(json_object_get(h, "record")) ||
		    strcmp(json_string_value(json_object_get(h, "record")), "sbx-observe-v1") ||
		    !json_is_string(json_object_get(h, "tool")) ||
		    strcmp(json_string_value(json_object_get(h, "tool")), "sbx-ns") ||
		    !json_is_string(json_object_get(h, "event")) ||
		    strcmp(json_string_value(json_object_get(h, "event")), "observe"))
			sbx_die_usage("%s: not an observation record (its first line is not the start of sbx-ns "
				      "--observe's record, sbx-observe-v1)", o->label);
		json_decref(h);
	}
	/* Whole: the last line is the end. */
	if (len && buf[len - 1] == '\n') {
		const char *p = len >= 2 ? memrchr(buf, '\n', len - 1) : NULL;
		end_at = p ? (size_t)(p - buf) + 1 : 0;
		last = json_loadb(buf + end_at, len - 1 - end_at, JSON_REJECT_DUPLICATES, NULL);
	}
	if (!json_is_object(last) || !json_is_string(json_object_get(last, "event")) ||
	    strcmp(json_string_value(json_object_get(last, "event")), "end") || end_at == 0)
		sbx_die(SBX_EXIT_POLICY, "%s: refused: truncated: the record has no end line (its run was "
			"killed, or the file was cut)", o->label);
	while (off < end_at) {
		const char *nl = memchr(buf + off, '\n', end_at - off);
		json_error_t err;
		json_t *j;

		line++;
		j = json_loadb(buf + off, (size_t)(nl - (buf + off)), JSON_REJECT_DUPLICATES, &err);
		if (!json_is_object(j))
			bad(o, line, j ? "not an object" : err.text);
		if (line == 1) {
			start_line(o, j);
			o->head = j;
		} else {
			body_line(o, line, j);
			if (o->n == cap)
				o->lines = sbx_need(realloc(o->lines, (cap = cap ? 2 * cap : 64) * sizeof *o->lines));
			o->lines[o->n++] = j;
		}
		off = (size_t)(nl - buf) + 1;
	}
	keys(o, line + 1, last, end_keys);
	need(o, line + 1, last, "code", JSON_INTEGER, 0);
	need(o, line + 1, last, "lines", JSON_INTEGER, 0);
	need(o, line + 1, last, "sha256", JSON_STRING, 0);
	sbx_sha256_init(&c);
	sbx_sha256_update(&c, buf, end_at);
	sbx_sha256_final(&c, d);
	sbx_digest_hex(d, SBX_SHA256_LEN, hex);
	if (json_integer_value(json_object_get(last, "lines")) != (json_int_t)line ||
	    strcmp(json_string_value(json_object_get(last, "sha256")), hex))
		sbx_die(SBX_EXIT_POLICY, "%s: refused: its end line does not match the %zu lines before it (the "
			"record was edited, or lines were added or repeated)", o->label, line);
	o->code = (int)json_integer_value(json_object_get(last, "code"));
	json_decref(last);
	free(buf);
}

void chk_obs_free(struct chk_obs *o)
{
	for (size_t i = 0; i < o->n; i++)
		json_decref(o->lines[i]);
	free(o->lines);
	json_decref(o->head);
	free((char *)o->label);
}

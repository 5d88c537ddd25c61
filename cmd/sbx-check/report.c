/* Collecting and printing sbx-check's items. Precedence of the exit code,
 * most serious first: a corrupt or unsafe tool (108) makes every other
 * answer untrustworthy; a failed proof (107) means something believed
 * enforced is not; isolation unavailable (106) means no command can run
 * sandboxed; hard limits unavailable (101) means commands can run isolated
 * but without the cgroup or quota limits. "not configured" and "absent"
 * items change nothing: they were not asked for. */
#include "check.h"
#include "die.h"
#include "exitcodes.h"
#include "json.h"
#include "quote.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const status_word[] = {
	[CHK_OK] = "ok", [CHK_NOTCONF] = "not-configured", [CHK_ABSENT] = "absent",
	[CHK_MISSING] = "missing", [CHK_UNSUPPORTED] = "unsupported", [CHK_FAIL] = "FAIL",
	[CHK_UNSAFE] = "unsafe", [CHK_CORRUPT] = "corrupt",
};
static const char *const class_word[] = {
	[CLS_ISOLATION] = "isolation", [CLS_LIMITS] = "limits",
	[CLS_EXTRA] = "extra", [CLS_TOOL] = "tool",
};

struct chk_item *chk_add(struct chk_report *r, enum chk_class cls, const char *name,
			 enum chk_status st, const char *fmt, ...)
{
	struct chk_item *it;
	va_list ap;

	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 32;
		struct chk_item *n = sbx_need(realloc(r->items, cap * sizeof *n));
		r->items = n;
		r->cap = cap;
	}
	it = &r->items[r->n++];
	memset(it, 0, sizeof *it);
	snprintf(it->name, sizeof it->name, "%s", name);
	it->cls = cls;
	it->st = st;
	va_start(ap, fmt);
	vsnprintf(it->detail, sizeof it->detail, fmt, ap);
	va_end(ap);
	return it;
}

void chk_fix(struct chk_item *it, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(it->fix, sizeof it->fix, fmt, ap);
	va_end(ap);
}

void chk_field(struct chk_item *it, const char *key, int num, const char *fmt, ...)
{
	va_list ap;
	struct chk_field *f;

	if (it->nf == CHK_MAXFIELDS)
		return;
	f = &it->f[it->nf++];
	f->key = key;
	f->num = num;
	va_start(ap, fmt);
	vsnprintf(f->val, sizeof f->val, fmt, ap);
	va_end(ap);
}

void chk_appendf(char *buf, size_t n, const char *fmt, ...)
{
	size_t k = strlen(buf);
	va_list ap;

	if (k + 1 >= n)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + k, n - k, fmt, ap);
	va_end(ap);
}

static int exit_code(const struct chk_report *r, const char **why)
{
	int code = SBX_EXIT_OK;
	size_t i;

	*why = "all checks passed";
	for (i = 0; i < r->n; i++) {
		const struct chk_item *it = &r->items[i];
		int c = SBX_EXIT_OK;
		if (it->st == CHK_UNSAFE || it->st == CHK_CORRUPT)
			c = SBX_EXIT_CORRUPT;
		else if (it->st == CHK_FAIL)
			c = SBX_EXIT_PROOF;
		else if (it->st == CHK_MISSING || it->st == CHK_UNSUPPORTED) {
			if (it->cls == CLS_ISOLATION)
				c = SBX_EXIT_NOISOLATION;
			else if (it->cls == CLS_LIMITS)
				c = SBX_EXIT_UNSUPPORTED;
		}
		/* Rank: 108 > 107 > 106 > 101 > 0. */
		if ((c == SBX_EXIT_CORRUPT) ||
		    (c == SBX_EXIT_PROOF && code != SBX_EXIT_CORRUPT) ||
		    (c == SBX_EXIT_NOISOLATION && code != SBX_EXIT_CORRUPT && code != SBX_EXIT_PROOF) ||
		    (c == SBX_EXIT_UNSUPPORTED && code == SBX_EXIT_OK))
			code = c;
	}
	switch (code) {
	case SBX_EXIT_CORRUPT: *why = "an sbx tool is corrupt or unsafe"; break;
	case SBX_EXIT_PROOF: *why = "a proof failed"; break;
	case SBX_EXIT_NOISOLATION: *why = "isolation unavailable"; break;
	case SBX_EXIT_UNSUPPORTED: *why = "hard limits unavailable"; break;
	}
	return code;
}

/* sbx-check proof's verdict when nothing failed: what was proven and what
 * was not, counted and the latter named ("11 proven, 3 not proven
 * (pids-limit, memory-limit, quota-limit)"), never "all checks passed"
 * over lines that proved nothing. */
static const char *proof_verdict(const struct chk_report *r, char *buf, size_t n)
{
	size_t ok = 0, not = 0, i;
	char names[768] = "";

	for (i = 0; i < r->n; i++) {
		if (r->items[i].st == CHK_OK) {
			ok++;
			continue;
		}
		chk_appendf(names, sizeof names, "%s%s", not ? ", " : "", r->items[i].name);
		not++;
	}
	if (!not)
		snprintf(buf, n, "all %zu proven", ok);
	else
		snprintf(buf, n, "%zu proven, %zu not proven (%s)", ok, not, names);
	return buf;
}

/* Text lines carry names from the filesystem: escaped as every message is
 * (lib/quote.h), so that a newline cannot forge a line of the report and
 * no escape sequence reaches the terminal. */
static const char *clean(char *buf, size_t n, const char *s)
{
	return sbx_quote(buf, n, s, strlen(s), SIZE_MAX, SBX_QUOTE_TEXT);
}

static void put_clean(const char *s)
{
	char q[4 * sizeof ((struct chk_item *)0)->detail + 8];

	fputs(clean(q, sizeof q, s), stdout);
}

static void print_text(const struct chk_report *r, int code, const char *why)
{
	size_t i;
	int k;

	for (i = 0; i < r->n; i++) {
		const struct chk_item *it = &r->items[i];
		char name[4 * sizeof it->name + 8];
		printf("%-18s %-14s ", clean(name, sizeof name, it->name), status_word[it->st]);
		put_clean(it->detail);
		for (k = 0; k < it->nf; k++) {
			printf("%s%s=", (k || it->detail[0]) ? " " : "", it->f[k].key);
			put_clean(it->f[k].val);
		}
		if (it->fix[0]) {
			fputs("; to fix: ", stdout);
			put_clean(it->fix);
		}
		putchar('\n');
	}
	printf("result: %s (exit %d)\n", why, code);
}

static void print_json(const struct chk_report *r, int code, const char *why)
{
	struct sbx_json j;
	size_t i;
	int k;

	sbx_json_begin(&j, "sbx-check", r->mode);
	sbx_json_open_arr(&j, "checks");
	for (i = 0; i < r->n; i++) {
		const struct chk_item *it = &r->items[i];
		sbx_json_open_obj(&j, NULL);
		sbx_json_str(&j, "name", it->name);
		sbx_json_str(&j, "class", class_word[it->cls]);
		sbx_json_str(&j, "status", status_word[it->st]);
		sbx_json_str(&j, "detail", it->detail);
		if (it->fix[0])
			sbx_json_str(&j, "fix", it->fix);
		for (k = 0; k < it->nf; k++) {
			if (it->f[k].num)
				sbx_json_uint(&j, it->f[k].key, strtoull(it->f[k].val, NULL, 10));
			else
				sbx_json_str(&j, it->f[k].key, it->f[k].val);
		}
		sbx_json_close_obj(&j);
	}
	sbx_json_close_arr(&j);
	sbx_json_str(&j, "result", why);
	sbx_json_int(&j, "code", code);
	fflush(stdout);
	if (sbx_json_write(&j, STDOUT_FILENO) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to write the report");
}

int chk_finish(struct chk_report *r, int json)
{
	const char *why;
	char verdict[1024];
	int code = exit_code(r, &why);

	if (code == SBX_EXIT_OK && r->mode && !strcmp(r->mode, "proof"))
		why = proof_verdict(r, verdict, sizeof verdict);

	if (json)
		print_json(r, code, why);
	else
		print_text(r, code, why);
	if (fflush(stdout) != 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to write the report");
	free(r->items);
	return code;
}

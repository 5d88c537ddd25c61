/* sbx-check policy narrow --baseline FILE [--headroom X] OBS...: the
 * narrowest policy, in the baseline's own format, that admits what the
 * observed runs did (sbx-ns --observe), never wider than the baseline.
 *
 * The records must be of one job: one identity, one plan (each digest of
 * it the same: the command, the sandbox's groups, the effective policy),
 * one baseline (FILE's), distinct runs, each ended with 0. Then:
 *   - the sandbox block is the runs' effective policy (their request met
 *     with the baseline), with network.allowlist the names the broker let
 *     through, sorted, each as it was asked for (never a wildcard), and
 *     the network mode "none" when no run connected anywhere;
 *   - resources are the baseline's, with memory_mb and max_processes the
 *     largest peak of the runs' own cgroups times the headroom (rounded up,
 *     at most the baseline's) when every record measured them;
 *   - accept_statfs_quota is left out (a baseline's word, narrower without).
 * What is printed is parsed back and proven within the baseline by the
 * merge before a byte goes out: printed ⊓ baseline = printed
 * (sbx_policy_meet_holds). What is learned and what is not, and why, is
 * in sbx-check(1). */
#include "check.h"
#include "obs.h"

#include "die.h"
#include "digest.h"
#include "exitcodes.h"
#include "fd.h"
#include "opts.h"
#include "parse.h"
#include "policy.h"
#include "quote.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1ULL << 20)
#define HEADROOM_DEFAULT 150   /* hundredths */
#define HEADROOM_MAX 10000

enum { N_BASELINE = 1, N_HEADROOM, N_HELP };

/* 1, 1.5, 2.25: hundredths, 1 to 100. */
static unsigned headroom(const char *s)
{
	const char *dot = strchr(s, '.');
	uint64_t whole, frac = 0;
	size_t fl = dot ? strlen(dot + 1) : 0;
	char w[24];

	if (!*s)
		sbx_die_usage("--headroom: invalid value '': empty");
	if ((dot ? (size_t)(dot - s) : strlen(s)) >= sizeof w || fl > 2 || (dot && !fl))
		sbx_die_usage("--headroom: invalid value '%s': a number from 1 to 100 with at most two decimals", s);
	snprintf(w, sizeof w, "%.*s", (int)(dot ? (size_t)(dot - s) : strlen(s)), s);
	if (sbx_parse_u64(w, 0, 1000000, &whole) || (fl && sbx_parse_u64(dot + 1, 0, 99, &frac)) || !w[0] ||
	    (fl && (dot[1] < '0' || dot[1] > '9')))
		sbx_die_usage("--headroom: invalid value '%s': a number from 1 to 100 with at most two decimals", s);
	if (fl == 1)
		frac *= 10;
	whole = whole * 100 + frac;
	if (whole < 100 || whole > HEADROOM_MAX)
		sbx_die_usage("--headroom: invalid value '%s': from 1 to 100 (a limit below the peak would "
			      "refuse what the runs did)", s);
	return (unsigned)whole;
}

static const char *str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* The records are of one job, under FILE's baseline (whose digest, as
 * sbx-ns takes it, is bsha). */
static void same_job(struct chk_obs *obs, size_t n, const char *bsha, const char *blabel)
{
	const char *k;
	json_t *v;

	for (size_t i = 0; i < n; i++) {
		json_t *h = obs[i].head, *h0 = obs[0].head, *c = json_object_get(h, "caller"),
		       *c0 = json_object_get(h0, "caller");
		char differ[256] = "";

		if (!json_is_string(json_object_get(h, "baseline_sha256")))
			sbx_die(SBX_EXIT_POLICY, "%s: refused: its run had no baseline; observe runs under the "
				"baseline that narrowing starts from (%s)", obs[i].label, blabel);
		if (strcmp(str(h, "baseline_sha256"), bsha))
			sbx_die(SBX_EXIT_POLICY, "%s: refused: its run had another baseline than %s", obs[i].label,
				blabel);
		if (obs[i].code)
			sbx_die(SBX_EXIT_POLICY, "%s: refused: its run ended with code %d; narrow from runs that "
				"did their job", obs[i].label, obs[i].code);
		if (!i)
			continue;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(str(obs[j].head, "run"), str(h, "run")))
				sbx_die(SBX_EXIT_POLICY, "%s: refused: the same run as %s (run %s): a record given "
					"twice", obs[i].label, obs[j].label, str(h, "run"));
		if (!json_equal(json_object_get(h, "uid"), json_object_get(h0, "uid")) ||
		    !json_equal(json_object_get(h, "gid"), json_object_get(h0, "gid")) || !json_equal(c, c0))
			sbx_die(SBX_EXIT_POLICY, "%s: refused: another identity: the command ran as uid %lld gid "
				"%lld (started by uid %lld), in %s as uid %lld gid %lld (started by uid %lld)",
				obs[i].label, json_integer_value(json_object_get(h, "uid")),
				json_integer_value(json_object_get(h, "gid")),
				json_integer_value(json_object_get(c, "uid")), obs[0].label,
				json_integer_value(json_object_get(h0, "uid")),
				json_integer_value(json_object_get(h0, "gid")),
				json_integer_value(json_object_get(c0, "uid")));
		json_object_foreach(json_object_get(h0, "plan"), k, v)
			if (!json_equal(v, json_object_get(json_object_get(h, "plan"), k)))
				chk_appendf(differ, sizeof differ, "%s%s", differ[0] ? ", " : "", k);
		if (differ[0] || strcmp(str(h, "workspace"), str(h0, "workspace")))
			sbx_die(SBX_EXIT_POLICY, "%s: refused: another plan: %s differ%s from %s's", obs[i].label,
				differ[0] ? differ : "workspace", strchr(differ, ',') ? "" : "s", obs[0].label);
	}
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names the broker let through in any run, sorted and unique; *any:
 * a connection was allowed at all (a route too). */
static json_t *hosts(struct chk_obs *obs, size_t n, int *any)
{
	char **v = NULL;
	size_t k = 0, cap = 0;
	json_t *out = json_array();

	*any = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t l = 0; l < obs[i].n; l++) {
			json_t *j = obs[i].lines[l];
			const char *ev = str(j, "event"), *d = str(j, "decision"), *m = str(j, "method");
			if (strcmp(ev, "net"))
				continue;
			if (!strcmp(d, "other") || !strcmp(d, "unreported"))
				sbx_die(SBX_EXIT_POLICY, "%s: refused: %lld connections are not named in it (%s): the "
					"names its run needed cannot be learned from it", obs[i].label,
					json_integer_value(json_object_get(j, "count")),
					!strcmp(d, "other") ? "more destinations than a record holds"
							    : "the broker did not report them in detail");
			if (strcmp(d, "allowed") || (m && !strcmp(m, "DNS")))
				continue;
			*any = 1;
			if (json_object_get(j, "service") || !str(j, "host"))
				continue;
			if (k == cap)
				v = sbx_need(realloc(v, (cap = cap ? 2 * cap : 16) * sizeof *v));
			v[k++] = (char *)str(j, "host");
		}
	qsort(v, k, sizeof *v, cmp);
	for (size_t i = 0; i < k; i++)
		if (!i || strcmp(v[i], v[i - 1]))
			json_array_append_new(out, json_string(v[i]));
	free(v);
	return out;
}

/* The largest peak of key over the runs; 0 when a record lacks it. */
static int peak(struct chk_obs *obs, size_t n, const char *key, uint64_t *out)
{
	*out = 0;
	for (size_t i = 0; i < n; i++) {
		int found = 0;
		for (size_t l = 0; l < obs[i].n; l++) {
			json_t *v = json_object_get(obs[i].lines[l], key);
			if (strcmp(str(obs[i].lines[l], "event"), "resources") || !json_is_integer(v))
				continue;
			found = 1;
			if ((uint64_t)json_integer_value(v) > *out)
				*out = (uint64_t)json_integer_value(v);
		}
		if (!found)
			return 0;
	}
	return 1;
}

static uint64_t with_headroom(uint64_t v, unsigned h, uint64_t unit, uint64_t max)
{
	unsigned __int128 x = ((unsigned __int128)v * h + 99) / 100;

	x = (x + unit - 1) / unit * unit;
	return x > max ? max : (uint64_t)x;
}

/* A root R of the runs' (absolute, under the workspace ws) is written
 * relative when the baseline's own list (or, for a readable root, the
 * writable one) holds a relative root that covers it: in every workspace
 * R then stays within what the baseline grants there. */
static void relative_roots(json_t *list, const struct sbx_pol_list *a, const struct sbx_pol_list *b,
			   const char *ws)
{
	size_t i, wl = strlen(ws);
	json_t *v;

	json_array_foreach(list, i, v) {
		const char *r = json_string_value(v);
		int ok = 0;
		if (!r || !sbx_path_within(r, ws))
			continue;
		for (int k = 0; k < 2 && !ok; k++) {
			const struct sbx_pol_list *l = k ? b : a;
			for (size_t j = 0; l && j < l->n && !ok; j++) {
				const char *root = l->it[j].val;
				char *abs;
				if (root[0] == '/')
					continue;
				abs = !strcmp(root, ".") ? sbx_need(strdup(ws)) : sbx_needf("%s/%s", ws, root);
				ok = sbx_path_within(r, abs);
				free(abs);
			}
		}
		if (ok)
			json_array_set_new(list, i, json_string(r[wl] ? r + wl + 1 : "."));
	}
}

static void load(struct sbx_policy *p, const char *label, const char *path, const char *ws)
{
	struct sbx_err e;

	sbx_policy_init(p, label);
	if (sbx_policy_load_file(p, path, &e) < 0 || (ws && sbx_policy_resolve_roots(p, ws, &e) < 0))
		sbx_err_die(&e);
}

static void parse(struct sbx_policy *p, const char *label, const char *text, const char *ws)
{
	struct sbx_err e;

	sbx_policy_init(p, label);
	if (sbx_policy_parse(p, text, strlen(text), &e) < 0 || (ws && sbx_policy_resolve_roots(p, ws, &e) < 0))
		sbx_err_die(&e);
}

static int narrow(const char *bpath, unsigned h, char **paths, size_t n)
{
	struct chk_obs *obs = sbx_need(calloc(n, sizeof *obs));
	struct sbx_policy raw, base, out1, out2;
	char bl[1100], label[1200], bhex[SBX_SHA256_HEX], *btext, *text, *printed;
	unsigned char bsha[SBX_SHA256_LEN];
	struct sbx_sha256 c;
	struct sbx_err e;
	const char *ws;
	json_t *doc, *sb, *res, *net;
	uint64_t mem, pids;
	int any, have_mem, have_pids;

	for (size_t i = 0; i < n; i++)
		chk_obs_read(paths[i], &obs[i]);
	ws = str(obs[0].head, "workspace");
	sbx_quote(bl, sizeof bl, bpath, strlen(bpath), 1024, 0);
	snprintf(label, sizeof label, "--baseline %s", bl);
	load(&raw, label, bpath, NULL);
	load(&base, label, bpath, ws);
	/* The baseline's digest as sbx-ns took it: its roots resolved against
	 * the run's workspace. */
	btext = sbx_need(sbx_policy_to_json(&base, SBX_PSCOPE_ALL));
	sbx_sha256_init(&c);
	sbx_sha256_update(&c, btext, strlen(btext));
	sbx_sha256_final(&c, bsha);
	sbx_digest_hex(bsha, SBX_SHA256_LEN, bhex);
	free(btext);
	same_job(obs, n, bhex, bl);

	/* The sandbox block: the runs' effective policy, the names they
	 * reached. */
	doc = json_object();
	sb = json_deep_copy(json_object_get(json_object_get(obs[0].head, "policy"), "sandbox"));
	if (!json_is_object(sb))
		sbx_die(SBX_EXIT_POLICY, "%s: refused: its effective policy has no sandbox block", obs[0].label);
	json_object_set_new(doc, "sandbox", sb);
	net = json_object_get(sb, "network");
	if (json_is_object(net) && str(net, "mode") && !strcmp(str(net, "mode"), "allowlist")) {
		json_t *names = hosts(obs, n, &any);
		json_object_set_new(net, "allowlist", names);
		if (!any)
			json_object_set_new(net, "mode", json_string("none"));
	}
	relative_roots(json_object_get(sb, "readableRoots"), &raw.ro, &raw.rw, ws);
	relative_roots(json_object_get(sb, "writableRoots"), &raw.rw, NULL, ws);

	/* The resources block: the baseline's, the peaks with headroom. */
	text = sbx_need(sbx_policy_to_json(&raw, SBX_PSCOPE_CGROUP | SBX_PSCOPE_QUOTA));
	res = json_loads(text, 0, NULL);
	free(text);
	{
		json_t *r0 = json_object_get(res, "resources");
		r0 = r0 ? json_deep_copy(r0) : json_object();
		json_decref(res);
		res = r0;
	}
	json_object_del(res, "accept_statfs_quota");
	if ((have_mem = peak(obs, n, "memory_peak", &mem))) {
		uint64_t v = with_headroom(mem, h, MIB, SBX_POL_MAX_MEMORY);
		if (base.memory.set && v > base.memory.v)
			v = base.memory.v;
		json_object_del(res, "memory_bytes");
		json_object_del(res, "memory_mb");
		if (v % MIB)
			json_object_set_new(res, "memory_bytes", json_integer((json_int_t)v));
		else
			json_object_set_new(res, "memory_mb", json_integer((json_int_t)(v / MIB)));
	}
	if ((have_pids = peak(obs, n, "pids_peak", &pids))) {
		uint64_t v = with_headroom(pids, h, 1, SBX_POL_MAX_PIDS);
		if (base.pids.set && v > base.pids.v)
			v = base.pids.v;
		json_object_set_new(res, "max_processes", json_integer((json_int_t)(v ? v : 1)));
	}
	if (json_object_size(res))
		json_object_set_new(doc, "resources", res);
	else
		json_decref(res);
	text = sbx_need(json_dumps(doc, JSON_PRESERVE_ORDER));
	json_decref(doc);

	/* In the format's own spelling, then proven on exactly those bytes:
	 * printed ⊓ baseline = printed. */
	parse(&out1, "the narrowed policy", text, NULL);
	printed = sbx_need(sbx_policy_to_json(&out1, SBX_PSCOPE_ALL));
	parse(&out2, "the narrowed policy", printed, ws);
	if (sbx_policy_meet_holds(&base, &out2, &e) < 0)
		sbx_die(SBX_EXIT_POLICY, "the narrowed policy would be wider than %s, so it is not printed: %s", bl,
			!strncmp(e.msg, "policy refused: ", 16) ? e.msg + 16 : e.msg);
	if (sbx_write_all(1, printed, strlen(printed)) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to write the policy");
	{
		char peaks[256] = "";
		if (have_mem)
			chk_appendf(peaks, sizeof peaks, "; memory_mb from the peak %llu bytes", (unsigned long long)mem);
		if (have_pids)
			chk_appendf(peaks, sizeof peaks, "; max_processes from the peak %llu", (unsigned long long)pids);
		sbx_note("narrowed from %zu observation%s: network.allowlist %zu name%s%s%s (headroom %u.%02u); "
			 "%s", n, n == 1 ? "" : "s", out1.allow.n, out1.allow.n == 1 ? "" : "s",
			 out1.net.set && out1.net.v == SBX_PNET_NONE ? ", network none (no run connected)" : "", peaks,
			 h / 100, h % 100,
			 have_mem && have_pids ? "the rest as the runs had it (sbx-check(1): what is learned)"
					       : "limits not learned: a record has no peaks of a cgroup of its run's own");
	}
	sbx_policy_free(&raw);
	sbx_policy_free(&base);
	sbx_policy_free(&out1);
	sbx_policy_free(&out2);
	free(text);
	free(printed);
	for (size_t i = 0; i < n; i++)
		chk_obs_free(&obs[i]);
	free(obs);
	return SBX_EXIT_OK;
}

int chk_policy(int argc, char **argv)
{
	static const struct sbx_opt tab[] = {
		{ "baseline", SBX_ARG, SBX_ONCE, N_BASELINE },
		{ "headroom", SBX_ARG, SBX_ONCE, N_HEADROOM },
		{ "help", SBX_NOARG, SBX_ONCE, N_HELP },
		{ 0 },
	};
	struct sbx_optstate st;
	const char *arg, *bpath = NULL;
	unsigned h = HEADROOM_DEFAULT;
	int id;

	if (argc >= 3 && !strcmp(argv[2], "--help"))
		sbx_opt_help(chk_usage);
	if (argc < 3)
		sbx_die_usage("policy: missing action (narrow)");
	if (strcmp(argv[2], "narrow"))
		sbx_die_usage("policy: unknown action '%s' (narrow)", argv[2]);
	sbx_opt_init(&st, 3);
	while ((id = sbx_opt_next(&st, tab, argc, argv, &arg))) {
		switch (id) {
		case N_HELP: sbx_opt_help(chk_usage);
		case N_BASELINE: bpath = sbx_opt_abspath("--baseline", arg); break;
		case N_HEADROOM: h = headroom(arg); break;
		}
	}
	if (!bpath)
		sbx_die_usage("policy narrow: missing --baseline FILE (a narrowed policy is held to it)");
	if (st.ind >= argc)
		sbx_die_usage("policy narrow: missing observation records (sbx-ns --observe FILE)");
	for (int i = st.ind; i < argc; i++)
		sbx_opt_abspath("policy narrow", argv[i]);
	return narrow(bpath, h, argv + st.ind, (size_t)(argc - st.ind));
}

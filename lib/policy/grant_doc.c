/* What a plan grant binds of the sandbox: one digest per group of the plan
 * document `sbx-ns --dry-run` prints (see grant.h). sbx-check grant hashes
 * the document it is given; sbx-ns hashes the document of its real plan,
 * built by the same code that prints it (cmd/sbx-ns/plan.c), right after
 * the plan is final. This file is the one place that says which keys a
 * group holds and how they are hashed:
 *
 *   group = SHA-256("sbx-grant-v2 GROUP\0" || json)
 *
 * where json is the object of the group's keys (those present) dumped by
 * jansson with sorted keys, compact, ASCII-only: the same bytes for the
 * same values, whatever order or spacing the document had. */
#include "grant.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	const char *keys[3];
} groups[SBX_GRANT_NGROUPS] = {
	{ "identity", { "uid", "gid" } },
	{ "mounts", { "mounts", "mount_api" } },
	{ "deny-write", { "deny_write" } },
	{ "net", { "net" } },
	{ "filters", { "seccomp" } },
	{ "landlock", { "landlock" } },
	{ "policy", { "policy", "policy_sha256" } },
	{ "program", { "program" } },
};

/* Bound by the command's own fields (argv, cwd, env, timeout), or saying
 * something of the plan, not of the sandbox: whether this plan was made
 * under a grant, and a hint derived from the mounts. */
static const char *const other[] = {
	"tool", "event", "argv", "cwd", "env", "timeout_ms", "grant_checked", "hint",
};

static int known(const char *key)
{
	for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
		if (!strcmp(key, other[i]))
			return 1;
	for (size_t g = 0; g < SBX_GRANT_NGROUPS; g++)
		for (size_t k = 0; k < 3 && groups[g].keys[k]; k++)
			if (!strcmp(key, groups[g].keys[k]))
				return 1;
	return 0;
}

/* A --tmp-in-workspace bind is made by the run itself: its identity is not
 * known to a dry run, and the workspace holding it is bound already. */
static json_t *normal_mounts(json_t *mounts)
{
	json_t *copy = json_deep_copy(mounts), *m;
	size_t i;

	if (!copy || !json_is_array(copy))
		return copy;
	json_array_foreach(copy, i, m) {
		json_t *kind = json_object_get(m, "kind");
		if (json_is_string(kind) && !strcmp(json_string_value(kind), "scratch")) {
			json_object_del(m, "dev");
			json_object_del(m, "ino");
			json_object_del(m, "create");
		}
	}
	return copy;
}

int sbx_grant_plan_groups(struct json_t *doc, unsigned char out[SBX_GRANT_NGROUPS][SBX_SHA256_LEN],
			  const char **why)
{
	static char buf[160];
	const char *key;
	json_t *v;

	if (!json_is_object(doc)) {
		*why = "the plan is not a JSON object";
		return -1;
	}
	json_object_foreach(doc, key, v) {
		if (!known(key)) {
			snprintf(buf, sizeof buf, "the plan has a key no grant field covers: \"%.64s\"", key);
			*why = buf;
			return -1;
		}
	}
	for (size_t g = 0; g < SBX_GRANT_NGROUPS; g++) {
		json_t *part = json_object();
		struct sbx_sha256 c;
		char tag[48];
		char *text;
		int bad = !part;

		for (size_t k = 0; !bad && k < 3 && groups[g].keys[k]; k++) {
			json_t *val = json_object_get(doc, groups[g].keys[k]);
			if (!val)
				continue;
			val = !strcmp(groups[g].keys[k], "mounts") ? normal_mounts(val) : json_incref(val);
			bad = !val || json_object_set_new(part, groups[g].keys[k], val) < 0;
		}
		text = bad ? NULL : json_dumps(part, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII |
					       JSON_ENCODE_ANY);
		json_decref(part);
		if (!text) {
			*why = "out of memory hashing the plan";
			return -1;
		}
		snprintf(tag, sizeof tag, "sbx-grant-v2 %s", groups[g].name);
		sbx_sha256_init(&c);
		sbx_sha256_update(&c, tag, strlen(tag) + 1);
		sbx_sha256_update(&c, text, strlen(text));
		sbx_sha256_final(&c, out[g]);
		free(text);
	}
	return 0;
}

int sbx_grant_plan_text(const char *doc, size_t len,
			unsigned char out[SBX_GRANT_NGROUPS][SBX_SHA256_LEN], const char **why)
{
	json_error_t err;
	json_t *j = json_loadb(doc, len, JSON_REJECT_DUPLICATES, &err);
	int rc;

	if (!j) {
		*why = "the plan is not JSON";
		return -1;
	}
	rc = sbx_grant_plan_groups(j, out, why);
	json_decref(j);
	return rc;
}

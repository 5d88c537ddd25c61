/* libFuzzer target: the policy loader and the merge. Any bytes are
 * parsed as a policy; what loads is merged both ways (as the request and
 * as the baseline, refused and clamped) with a fixed policy, printed, and
 * the printed form must load again and print the same. */
#include "policy.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char fixed[] =
	"{\"sandbox\":{\"network\":{\"mode\":\"allowlist\",\"allowlist\":[\"*.example.org\",\"pypi.org\"]},"
	"\"readableRoots\":[\".\",\"/opt\"],\"writableRoots\":[\"out\",\"/tmp/x\"],\"denyWrite\":[\"a/**\"]},"
	"\"resources\":{\"cpu_percent\":100,\"memory_mb\":64,\"disk_mb\":10,\"max_processes\":5,"
	"\"max_inodes\":100,\"require_hard_limits\":true}}";

static int load(struct sbx_policy *p, const char *buf, size_t len)
{
	struct sbx_err e;

	sbx_policy_init(p, "fuzz");
	if (sbx_policy_parse(p, buf, len, &e) < 0 || sbx_policy_resolve_roots(p, "/srv/ws", &e) < 0)
		return -1;
	return 0;
}

static void roundtrip(const struct sbx_policy *eff)
{
	struct sbx_policy q;
	char *a = sbx_policy_to_json(eff, SBX_PSCOPE_ALL), *b;

	if (!a)
		return;
	/* Printed roots are absolute: they load without a workspace too. */
	if (load(&q, a, strlen(a)) < 0)
		abort();
	b = sbx_policy_to_json(&q, SBX_PSCOPE_ALL);
	if (!b || strcmp(a, b))
		abort();
	free(a);
	free(b);
	sbx_policy_free(&q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx_policy in, fx, eff;
	struct sbx_pol_clamped cl;
	struct sbx_err e;

	if (load(&in, (const char *)data, size) < 0) {
		sbx_policy_free(&in);
		return 0;
	}
	if (load(&fx, fixed, sizeof fixed - 1) < 0)
		abort();
	for (int clamp = 0; clamp < 2; clamp++) {
		for (int dir = 0; dir < 2; dir++) {
			const struct sbx_policy *b = dir ? &in : &fx, *r = dir ? &fx : &in;
			if (sbx_policy_merge(b, r, SBX_PSCOPE_ALL, clamp, &eff, &cl, &e) == 0) {
				roundtrip(&eff);
			} else if (clamp) {
				abort();   /* clamping never refuses */
			}
			sbx_policy_free(&eff);
		}
	}
	/* Without a baseline the request stands, except a word only a
	 * baseline may say. */
	if ((sbx_policy_merge(NULL, &in, SBX_PSCOPE_ALL, 0, &eff, &cl, &e) != 0) !=
	    (in.statfs_ok.set && in.statfs_ok.v))
		abort();
	roundtrip(&eff);
	sbx_policy_free(&eff);
	sbx_policy_free(&fx);
	sbx_policy_free(&in);
	return 0;
}

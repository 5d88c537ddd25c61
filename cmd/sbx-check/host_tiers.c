/* `sbx-check host`, item "tiers": which of sbx-ns's isolation tiers this
 * host offers this caller: the full sandbox (user namespaces and every step
 * of building the root, as found by the items before), and the Landlock tier (Landlock,
 * used only where the full one cannot be had and a baseline says
 * "fallback": "landlock"). Runs after the userns and mounts items. */
#include "check.h"
#include "container.h"
#include "probe.h"

#include <stdio.h>
#include <string.h>

static int item_ok(const struct chk_report *r, const char *name)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->items[i].name, name))
			return r->items[i].st == CHK_OK;
	return 0;
}

void chk_host_tiers(struct chk_report *r)
{
	static const char *const steps[] = { "userns", "namespaces", "root-tmpfs", "proc", "pivot_root",
					     "mounts", "apparmor-userns" };
	int full = 1, abi = 0, ll = sbx_probe_landlock(&abi) == 0 && abi > 0;
	char ctr[320];
	struct chk_item *it;
	char lost[256] = "";

	/* What the tier cannot keep with this kernel's Landlock. */
	if (ll && abi < 6)
		snprintf(lost, sizeof lost, "; with ABI %d the tier %scannot keep the command from "
			 "signalling processes of its uid outside, or from reaching abstract sockets "
			 "outside where its network mode allows Unix sockets (ABI 6)", abi,
			 abi < 4 ? "has no TCP rules (ABI 4) and " : "");

	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
		full &= item_ok(r, steps[i]);
	if (full && ll)
		it = chk_add(r, CLS_EXTRA, "tiers", CHK_OK, "full (namespaces, a fresh root, Landlock "
			     "ABI %d, seccomp); the landlock tier would be used only where namespaces "
			     "fail%s", abi, lost);
	else if (full)
		it = chk_add(r, CLS_EXTRA, "tiers", CHK_OK, "full (namespaces, a fresh root, seccomp); "
			     "no landlock tier (no Landlock)");
	else if (ll && item_ok(r, "userns") && item_ok(r, "namespaces") && !item_ok(r, "proc") &&
		 sbx_container(ctr, sizeof ctr) != SBX_CTR_NONE) {
		/* sbx-ns takes the tier where a container masks /proc. */
		it = chk_add(r, CLS_EXTRA, "tiers", CHK_OK, "landlock only (Landlock ABI %d, seccomp, no "
			     "namespaces: the container masks /proc): sbx-ns runs commands only under a "
			     "baseline saying \"fallback\": \"landlock\", with a WARNING each time", abi);
		full = 0;
	} else if (item_ok(r, "userns")) {
		/* sbx-ns takes the tier only where the namespaces cannot be
		 * created; here they can, and a later step fails. */
		it = chk_add(r, CLS_EXTRA, "tiers", CHK_MISSING, "none: user namespaces can be created but "
			     "the full sandbox cannot be built (see the items above), and the landlock tier "
			     "is taken only where they cannot be created or a container masks /proc");
		chk_fix(it, "fix the failing step above");
		full = ll = 0;
	} else if (ll)
		it = chk_add(r, CLS_EXTRA, "tiers", CHK_OK, "landlock only (Landlock ABI %d, seccomp, "
			     "no namespaces): sbx-ns runs commands only under a baseline saying "
			     "\"fallback\": \"landlock\", with a WARNING each time%s", abi, lost);
	else {
		it = chk_add(r, CLS_EXTRA, "tiers", CHK_MISSING, "none: no namespaces and no Landlock");
		chk_fix(it, "see userns and landlock");
	}
	chk_field(it, "tiers", 0, "%s", full && ll ? "full,landlock" : full ? "full" : ll ? "landlock" : "none");
}

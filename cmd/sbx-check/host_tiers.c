/* `sbx-check host`, item "tiers": which of sbx-ns's isolation tiers this
 * host offers this caller: the full sandbox (user namespaces and the mount
 * steps, as found by the items before), and the Landlock tier (Landlock,
 * used only where the full one cannot be had and a baseline says
 * "fallback": "landlock"). Runs after the userns and mounts items. */
#include "check.h"
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
	int full = item_ok(r, "userns") && item_ok(r, "mounts") && item_ok(r, "apparmor-userns");
	int abi = 0, ll = sbx_probe_landlock(&abi) == 0 && abi > 0;
	struct chk_item *it;
	char lost[256] = "";

	/* What the tier cannot keep with this kernel's Landlock. */
	if (ll && abi < 6)
		snprintf(lost, sizeof lost, "; with ABI %d the tier %scannot keep the command from "
			 "signalling processes of its uid outside, or from reaching abstract sockets "
			 "outside where its network mode allows Unix sockets (ABI 6)", abi,
			 abi < 4 ? "has no TCP rules (ABI 4) and " : "");

	if (full && ll)
		it = chk_add(r, CLS_EXTRA, "tiers", CHK_OK, "full (namespaces, a fresh root, Landlock "
			     "ABI %d, seccomp); the landlock tier would be used only where namespaces "
			     "fail%s", abi, lost);
	else if (full)
		it = chk_add(r, CLS_EXTRA, "tiers", CHK_OK, "full (namespaces, a fresh root, seccomp); "
			     "no landlock tier (no Landlock)");
	else if (ll)
		it = chk_add(r, CLS_EXTRA, "tiers", CHK_OK, "landlock only (Landlock ABI %d, seccomp, "
			     "no namespaces): sbx-ns runs commands only under a baseline saying "
			     "\"fallback\": \"landlock\", with a WARNING each time%s", abi, lost);
	else {
		it = chk_add(r, CLS_EXTRA, "tiers", CHK_MISSING, "none: no namespaces and no Landlock");
		chk_fix(it, "see userns and landlock");
	}
	chk_field(it, "tiers", 0, "%s", full && ll ? "full,landlock" : full ? "full" : ll ? "landlock" : "none");
}

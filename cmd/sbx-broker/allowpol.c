/* --allow-policy FILE: the names the broker lets through are a policy's
 * network.allowlist (the baseline format, lib/policy), so that the file
 * an administrator narrows (sbx-check policy narrow) is the very list
 * that is enforced, and a refusal names it: "host X not on the allowlist
 * (--allow-policy FILE)". The file is trusted as a baseline is (owned by
 * root or the caller, no symlink on its path, written by no one else);
 * its network mode must be "allowlist": a policy of "none" or "localhost"
 * lets nothing through a broker, and "all" names no hosts at all. */
#include "broker.h"

#include "die.h"
#include "exitcodes.h"
#include "hostpat.h"
#include "policy.h"
#include "quote.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void broker_allow_policy(struct broker_cfg *cfg, const char *path)
{
	struct sbx_policy p;
	struct sbx_err e;
	char label[4200];

	memcpy(label, "--allow-policy ", 15);
	sbx_quote(label + 15, sizeof label - 15, path, strlen(path), 4096, 0);
	sbx_policy_init(&p, label);
	if (sbx_policy_load_file(&p, path, &e) < 0)
		sbx_err_die(&e);
	if (!p.net.set || p.net.v != SBX_PNET_BROKER)
		sbx_die_usage("%s: its network mode is %s, not allowlist: it names no host for a broker", label,
			      p.net.set ? sbx_policy_net_name(p.net.v) : "unset");
	cfg->hosts = sbx_need(calloc(p.allow.n + 1, sizeof *cfg->hosts));
	for (size_t i = 0; i < p.allow.n; i++) {
		/* The loader checked each pattern as sbx-broker takes them. */
		const char *why = sbx_hostpat_parse(p.allow.it[i].val, &cfg->hosts[cfg->nhosts]);
		if (why)
			sbx_die_usage("%s: invalid host '%s': %s", label, p.allow.it[i].val, why);
		cfg->nhosts++;
	}
	cfg->hosts_from = sbx_need(strdup(label));
	sbx_policy_free(&p);
}

/* The policy options of sbx-ns, sbx-cgroup and sbx-quota, and the step
 * that makes the effective policy from them. See policy.h. */
#include "parse.h"
#include "policy.h"

#include "die.h"
#include "exitcodes.h"
#include "fd.h"
#include "quote.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void sbx_policy_opts_init(struct sbx_policy_opts *o)
{
	memset(o, 0, sizeof *o);
	o->baseline_fd = o->policy_fd = -1;
}

void sbx_policy_opt_baseline(struct sbx_policy_opts *o, const char *arg)
{
	if (o->baseline_fd >= 0)
		sbx_die_usage("--baseline and --baseline-fd are exclusive");
	o->baseline = sbx_opt_abspath("--baseline", arg);
}

void sbx_policy_opt_baseline_fd(struct sbx_policy_opts *o, const char *arg)
{
	if (o->baseline)
		sbx_die_usage("--baseline and --baseline-fd are exclusive");
	o->baseline_fd = sbx_opt_fd("--baseline-fd", arg);
}

void sbx_policy_opt_policy_fd(struct sbx_policy_opts *o, const char *arg)
{
	o->policy_fd = sbx_opt_fd("--policy-fd", arg);
}

int sbx_policy_opts_baseline(const struct sbx_policy_opts *o)
{
	return o->baseline || o->baseline_fd >= 0;
}

int sbx_policy_opts_used(const struct sbx_policy_opts *o)
{
	if (!sbx_policy_opts_baseline(o) && o->policy_fd < 0) {
		if (o->clamp)
			sbx_die_usage("--clamp needs --baseline or --baseline-fd");
		return 0;
	}
	return 1;
}

static void ok(int rc, const struct sbx_err *e)
{
	if (rc < 0)
		sbx_err_die(e);
}

/* The origin of the first field of p in scope, or NULL. */
static const char *first_set(const struct sbx_policy *p, unsigned scope)
{
	const struct sbx_pol_int *ints[] = { &p->mode, &p->net, &p->fallback, &p->unsafe, &p->host_ca };
	const struct sbx_pol_list *lists[] = { &p->allow, &p->ro, &p->rw, &p->deny };
	const struct sbx_pol_u64 *cg[] = { &p->cpu, &p->memory, &p->pids };
	const struct sbx_pol_u64 *qu[] = { &p->disk, &p->inodes };

	if (scope & SBX_PSCOPE_NS) {
		for (size_t i = 0; i < 5; i++)
			if (ints[i]->set)
				return ints[i]->origin ? ints[i]->origin : "argv";
		for (size_t i = 0; i < 4; i++)
			if (lists[i]->set)
				return lists[i]->origin ? lists[i]->origin : "argv";
	}
	for (size_t i = 0; (scope & SBX_PSCOPE_CGROUP) && i < 3; i++)
		if (cg[i]->set)
			return cg[i]->origin ? cg[i]->origin : "argv";
	for (size_t i = 0; (scope & SBX_PSCOPE_QUOTA) && i < 2; i++)
		if (qu[i]->set)
			return qu[i]->origin ? qu[i]->origin : "argv";
	if ((scope & (SBX_PSCOPE_CGROUP | SBX_PSCOPE_QUOTA)) && p->hard.set)
		return p->hard.origin ? p->hard.origin : "argv";
	return NULL;
}

void sbx_policy_effective(const struct sbx_policy_opts *o, struct sbx_policy *req,
			  unsigned scope, const char *ws, const char *tool, int status_fd,
			  struct sbx_policy *eff)
{
	struct sbx_policy base;
	struct sbx_pol_clamped cl;
	struct sbx_err e;
	char label[64];
	int have_base = sbx_policy_opts_baseline(o);

	if (o->clamp && !have_base)
		sbx_die_usage("--clamp needs --baseline or --baseline-fd");
	if (o->policy_fd >= 0) {
		const char *argv_field = first_set(req, scope);
		if (argv_field)
			sbx_die_usage("--policy-fd and %s are exclusive (one source per request)", argv_field);
		sbx_policy_free(req);
		snprintf(label, sizeof label, "--policy-fd %d", o->policy_fd);
		sbx_policy_init(req, label);
		ok(sbx_policy_load_fd(req, o->policy_fd, &e), &e);
		close(o->policy_fd);
	} else if (scope & SBX_PSCOPE_NS) {
		int deny_given = req->deny.set;

		sbx_policy_list_given(&req->ro, "argv");
		sbx_policy_list_given(&req->rw, "argv");
		if (ws)
			ok(sbx_policy_add_root(req, &req->rw, ws, "--workspace", &e), &e);
		if (!deny_given)
			for (const char *const *g = sbx_policy_default_deny; *g; g++)
				ok(sbx_policy_add_glob(req, *g, "default", &e), &e);
		sbx_policy_sandbox_defaults(req);
	}
	if (scope & SBX_PSCOPE_NS)
		ok(sbx_policy_resolve_roots(req, ws, &e), &e);

	if (have_base) {
		if (o->baseline) {
			/* The path labels every message: escaped, as it may hold
			 * any byte. */
			char l[4200];
			memcpy(l, "--baseline ", 11);
			sbx_quote(l + 11, sizeof l - 11, o->baseline, strlen(o->baseline), 4096, 0);
			sbx_policy_init(&base, l);
			ok(sbx_policy_load_file(&base, o->baseline, &e), &e);
		} else {
			snprintf(label, sizeof label, "--baseline-fd %d", o->baseline_fd);
			sbx_policy_init(&base, label);
			ok(sbx_policy_load_fd(&base, o->baseline_fd, &e), &e);
			close(o->baseline_fd);
		}
		if (scope & SBX_PSCOPE_NS)
			ok(sbx_policy_resolve_roots(&base, ws, &e), &e);
	}
	ok(sbx_policy_merge(have_base ? &base : NULL, req, scope, o->clamp, eff, &cl, &e), &e);
	if (have_base && o->keep_base)
		*o->keep_base = base;
	else if (have_base)
		sbx_policy_free(&base);

	if ((scope & SBX_PSCOPE_NS) && ws && eff->rw.set && !sbx_policy_within(&eff->rw, ws)) {
		char qb[1100];
		sbx_quote(qb, sizeof qb, ws, strlen(ws), 256, 0);
		sbx_die(SBX_EXIT_POLICY, "policy refused: the workspace %s is not within the effective "
			"writable roots (%s writes its workspace)", qb, tool);
	}
	if ((have_base || o->policy_fd >= 0) &&
	    sbx_policy_status(status_fd, tool, have_base, eff, &cl) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to write to the status fd %d", status_fd);
}

/* p ⊓ base = p: the proof that a policy made from a baseline (a narrowed
 * policy, a shadow candidate) is no wider than it. The merge is the one
 * rule of what "within" means (policy.c): p, taken as a request under
 * base, must be refused nothing, and what the merge gives back must be p
 * itself, field by field. A field p leaves unset where base sets it comes
 * back as base's value (an unset limit is no limit, wider than any), and a
 * deny-write glob of base that p lacks comes back added: both are named. */
#include "policy.h"

#include "exitcodes.h"
#include "quote.h"

#include <stdio.h>
#include <string.h>

static int list_has(const struct sbx_pol_list *l, const char *val)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->it[i].val, val))
			return 1;
	return 0;
}

static const char *orig(const char *o)
{
	return o ? o : "the baseline";
}

static int ints_differ(struct sbx_err *e, const char *field, const struct sbx_pol_int *m,
		       const struct sbx_pol_int *p, const struct sbx_pol_int *b)
{
	if (m->set == p->set && (!m->set || m->v == p->v))
		return 0;
	if (!p->set)
		return sbx_err_set(e, SBX_EXIT_POLICY, "policy refused: %s: not set, and the baseline sets it (%s)",
				    field, orig(b->origin));
	return sbx_err_set(e, SBX_EXIT_POLICY, "policy refused: %s: the baseline (%s) makes it another value",
			    field, orig(b->origin));
}

static int u64s_differ(struct sbx_err *e, const char *field, const struct sbx_pol_u64 *m,
		       const struct sbx_pol_u64 *p, const struct sbx_pol_u64 *b)
{
	char bv[64];

	if (m->set == p->set && (!m->set || m->v == p->v))
		return 0;
	sbx_policy_fmt_u64(bv, sizeof bv, field, b->v);
	return sbx_err_set(e, SBX_EXIT_POLICY, "policy refused: %s: no limit is wider than the baseline's %s (%s)",
			    field, bv, orig(b->origin));
}

/* The merge keeps a request's list or refuses it, except deny-write,
 * which adds the baseline's: a glob the meet added is one p lacks. */
static int lists_differ(struct sbx_err *e, const char *field, const struct sbx_pol_list *m,
			const struct sbx_pol_list *p, const struct sbx_pol_list *b)
{
	char qb[600];

	if (m->set && !p->set)
		return sbx_err_set(e, SBX_EXIT_POLICY, "policy refused: %s: not set, and the baseline sets it (%s)",
				    field, orig(b->origin));
	for (size_t i = 0; i < m->n; i++)
		if (!list_has(p, m->it[i].val)) {
			sbx_quote(qb, sizeof qb, m->it[i].val, strlen(m->it[i].val), 256, 0);
			return sbx_err_set(e, SBX_EXIT_POLICY, "policy refused: %s: lacks the baseline's %s (%s)",
					    field, qb, orig(b->origin));
		}
	if (m->set != p->set || m->n != p->n)
		return sbx_err_set(e, SBX_EXIT_POLICY, "policy refused: %s: the baseline (%s) makes it another list",
				    field, orig(b->origin));
	return 0;
}

int sbx_policy_meet_holds(const struct sbx_policy *base, const struct sbx_policy *p, struct sbx_err *e)
{
	struct sbx_policy m;
	int rc = -1;

	if (p->statfs_ok.set && p->statfs_ok.v)
		return sbx_err_set(e, SBX_EXIT_POLICY, "policy refused: %s: only a baseline may accept "
				   "statfs-level quota assurance", orig(p->statfs_ok.origin));
	if (sbx_policy_merge(base, p, SBX_PSCOPE_ALL, 0, &m, NULL, e) < 0)
		return -1;
	if (ints_differ(e, "sandbox.mode", &m.mode, &p->mode, &base->mode) < 0 ||
	    ints_differ(e, "sandbox.network.mode", &m.net, &p->net, &base->net) < 0 ||
	    (m.net.set && m.net.v == SBX_PNET_BROKER &&
	     lists_differ(e, "sandbox.network.allowlist", &m.allow, &p->allow, &base->allow) < 0) ||
	    lists_differ(e, "sandbox.readableRoots", &m.ro, &p->ro, &base->ro) < 0 ||
	    lists_differ(e, "sandbox.writableRoots", &m.rw, &p->rw, &base->rw) < 0 ||
	    lists_differ(e, "sandbox.denyWrite", &m.deny, &p->deny, &base->deny) < 0 ||
	    ints_differ(e, "sandbox.fallback", &m.fallback, &p->fallback, &base->fallback) < 0 ||
	    ints_differ(e, "sandbox.unsafeAllowHostProcess", &m.unsafe, &p->unsafe, &base->unsafe) < 0 ||
	    ints_differ(e, "sandbox.tierDenyWrite", &m.tier_deny, &p->tier_deny, &base->tier_deny) < 0 ||
	    ints_differ(e, "sandbox.hostCA", &m.host_ca, &p->host_ca, &base->host_ca) < 0 ||
	    u64s_differ(e, "resources.cpu_percent", &m.cpu, &p->cpu, &base->cpu) < 0 ||
	    u64s_differ(e, "resources.memory_mb", &m.memory, &p->memory, &base->memory) < 0 ||
	    u64s_differ(e, "resources.max_processes", &m.pids, &p->pids, &base->pids) < 0 ||
	    u64s_differ(e, "resources.disk_mb", &m.disk, &p->disk, &base->disk) < 0 ||
	    u64s_differ(e, "resources.max_inodes", &m.inodes, &p->inodes, &base->inodes) < 0 ||
	    ints_differ(e, "resources.require_hard_limits", &m.hard, &p->hard, &base->hard) < 0)
		goto out;
	rc = 0;
out:
	sbx_policy_free(&m);
	return rc;
}

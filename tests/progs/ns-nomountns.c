/* ns-nomountns PROG [ARGS...]: run PROG where a user namespace can be
 * created but no mount namespace (unshare with CLONE_NEWNS fails with
 * EPERM), as when AppArmor's user namespace restriction denies what the new
 * namespace needs. sbx-check's tier proof must say so and still take the
 * namespaces away from sbx-ns itself. */
#include "filter-exec.h"

#include <sched.h>

static int rules(scmp_filter_ctx ctx)
{
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
				SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWNS, CLONE_NEWNS));
}

int main(int argc, char **argv)
{
	return filter_exec("ns-nomountns", argc, argv, rules);
}

/* The deny-write rule in one call, for a tool that judges a tree by it
 * without a sandbox: the start walk (check 0) of sbx_deny_walk over the
 * tree, its protected paths sorted, nothing kept for a later walk. */
#include "deny.h"

#include "die.h"
#include "policy.h"

#include <stdlib.h>
#include <string.h>

const char *const *sbx_deny_default_globs(size_t *n)
{
	const char *const *d = sbx_policy_default_deny;

	for (*n = 0; d[*n]; (*n)++)
		;
	return d;
}

static int cmp_rel(const void *a, const void *b)
{
	const struct deny_op *x = a, *y = b;

	return strcmp(x->rel, y->rel);
}

void sbx_deny_scan(int rootfd, const char *root_path, const char *const *globs, size_t n,
		   struct deny_list *out)
{
	struct deny_walk w = { .check = 0, .ws_path = root_path };

	/* The same refusal as a --deny-write or denyWrite glob gets: a
	 * glob that leaves the tree names nothing of it. */
	for (size_t i = 0; i < n; i++) {
		const char *why = sbx_policy_glob_invalid(globs[i]);
		if (why)
			sbx_die_usage("deny-write: invalid glob '%s': %s", globs[i], why);
	}
	sbx_deny_walk(&w, rootfd, globs, n);
	sbx_deny_restore(&w);
	sbx_deny_tree_free(&w.tree_out);
	qsort(w.found.v, w.found.n, sizeof *w.found.v, cmp_rel);
	*out = w.found;
}

void sbx_deny_list_free(struct deny_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].rel);
	free(l->v);
	memset(l, 0, sizeof *l);
}

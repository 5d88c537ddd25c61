/* sbx_policy_deny_match: the deny-write rule for one workspace path, as
 * sbx-changes apply checks it. */
#include "unit.h"
#include "policy.h"

TEST(denymatch_defaults)
{
	CHECK_STR(sbx_policy_deny_match(NULL, ".env"), ".env");
	CHECK_STR(sbx_policy_deny_match(NULL, ".env.local"), ".env.*");
	CHECK_STR(sbx_policy_deny_match(NULL, ".git/hooks/pre-commit"), ".git/hooks/**");
	CHECK_STR(sbx_policy_deny_match(NULL, ".git/hooks"), ".git/hooks/**");
	CHECK_STR(sbx_policy_deny_match(NULL, ".git/config"), ".git/config");
	CHECK_STR(sbx_policy_deny_match(NULL, ".git/worktrees/w/config.worktree"), ".git/worktrees/*/config.worktree");
	CHECK_STR(sbx_policy_deny_match(NULL, ".git/modules/a/b/hooks/x"), ".git/modules/**/hooks/**");
	/* a write below a protected path is a write to it */
	CHECK_STR(sbx_policy_deny_match(NULL, ".env/x"), ".env");
	/* git's globs in every repository below the workspace */
	CHECK_STR(sbx_policy_deny_match(NULL, "vendor/lib/.git/hooks/post-checkout"), ".git/hooks/**");
	/* git's rule: a .git entry, a redirect */
	CHECK_STR(sbx_policy_deny_match(NULL, "sub/.git"), "git's .git");
	CHECK_STR(sbx_policy_deny_match(NULL, ".git/commondir"), "git's commondir");
	CHECK(!sbx_policy_deny_match(NULL, ".git/objects/ab/cdef"));
	CHECK(!sbx_policy_deny_match(NULL, ".git/index"));
	CHECK(!sbx_policy_deny_match(NULL, "src/env"));
	CHECK(!sbx_policy_deny_match(NULL, "x.env"));
	CHECK(!sbx_policy_deny_match(NULL, ".gitignore"));
}

TEST(denymatch_given_globs)
{
	static const char *const g[] = { "secrets/**", "*.pem", NULL };

	CHECK_STR(sbx_policy_deny_match(g, "secrets/a/b"), "secrets/**");
	CHECK_STR(sbx_policy_deny_match(g, "key.pem"), "*.pem");
	CHECK(!sbx_policy_deny_match(g, "d/key.pem"));
	CHECK(!sbx_policy_deny_match(g, ".env"));
}

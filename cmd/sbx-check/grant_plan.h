/* sbx-check grant: the checks its options share with --plan (grant.c),
 * and the plan reader (grant_plan.c). */
#ifndef SBX_CHECK_GRANT_PLAN_H
#define SBX_CHECK_GRANT_PLAN_H

#include "grant.h"

#include <stddef.h>

/* One week, as sbx-cgroup's --timeout at most. */
#define GRANT_MAX_TIMEOUT_MS (7ULL * 24 * 3600 * 1000)

/* NAME=VALUE as sbx-ns's --setenv takes it, not already among env[0..n). */
void grant_check_env(const char *opt, const char *arg, char **env, size_t n);
/* The working directory in the one shape a verifier writes it. */
const char *grant_check_cwd(const char *opt, const char *arg);
/* An absolute path to a regular file, not a symlink, opened for reading. */
int grant_open_file(const char *opt, const char *arg);
/* --plan FILE or --plan-fd FD: argv, cwd, env, timeout and the plan's
 * group digests into in and envp. */
void grant_plan_load(const char *opt, const char *arg, struct sbx_grant_input *in, char ***envp);

#endif

/* sbx-check policy narrow: observation records (sbx-ns --observe). */
#ifndef SBX_CHECK_OBS_H
#define SBX_CHECK_OBS_H

#include <jansson.h>
#include <stddef.h>

/* The plan's digests a record holds: argv, cwd, env, timeout and the
 * eight groups of a plan grant. */
#define CHK_OBS_PLAN_KEYS 12

struct chk_obs {
	const char *label;     /* the path, escaped, for messages */
	json_t *head;          /* the start line */
	json_t **lines;        /* the lines between it and the end */
	size_t n;
	int code;              /* the run's exit code (the end line) */
};

/* Read and verify path (obsread.c), or die naming it and the line. */
void chk_obs_read(const char *path, struct chk_obs *o);
void chk_obs_free(struct chk_obs *o);

#endif

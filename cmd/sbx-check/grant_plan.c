/* sbx-check grant --plan FILE | --plan-fd FD: the run a grant is for, taken
 * from the plan `sbx-ns --dry-run` printed (its argv, working directory,
 * environment and timeout) and the sandbox (the digest of each group of
 * the plan, lib/policy/grant_doc.c), so the grant matches that run byte for byte
 * without the caller rebuilding sbx-ns's environment by hand. The plan is
 * read whole, at most PLAN_MAX bytes, and parsed strictly (jansson,
 * duplicate keys refused); every value goes through the checks the
 * command-line forms use. */
#include "die.h"
#include "exitcodes.h"
#include "fd.h"
#include "grant.h"
#include "grant_plan.h"

#include <jansson.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PLAN_MAX (1U << 20)

static char *read_plan(const char *opt, const char *name, int fd, size_t *len)
{
	char *buf = sbx_need(malloc(PLAN_MAX + 1));
	long n;

	/* One byte past the maximum: a longer plan is refused, never cut. */
	n = sbx_read_eof(fd, buf, PLAN_MAX + 1);
	if (n < 0 && errno == ETIMEDOUT)
		sbx_die_usage("%s: %s: " SBX_FD_NO_EOF, opt, name, SBX_FD_WAIT_MS / 1000);
	if (n < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read the plan %s", name);
	if ((size_t)n > PLAN_MAX)
		sbx_die_usage("%s: %s: larger than %u bytes", opt, name, PLAN_MAX);
	*len = (size_t)n;
	return buf;
}

/* A string of the plan without NUL bytes (a C string cannot carry them
 * and the grant would differ from what the plan says). */
static const char *text(const char *opt, const char *name, json_t *v, const char *what)
{
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
		sbx_die_usage("%s: %s: %s is not a string", opt, name, what);
	return json_string_value(v);
}

static char *plan_dup(const char *s)
{
	return sbx_need(strdup(s));
}

static json_t *list(const char *opt, const char *name, json_t *doc, const char *key)
{
	json_t *v = json_object_get(doc, key);

	if (!json_is_array(v))
		sbx_die_usage("%s: %s: no \"%s\" list", opt, name, key);
	return v;
}

void grant_plan_load(const char *opt, const char *arg, struct sbx_grant_input *in, char ***envp)
{
	char name[64], *buf;
	const char *shown = arg;
	json_error_t err;
	json_t *doc, *argv, *env, *v;
	char **args;
	size_t len, i;
	int fd;

	if (!strcmp(opt, "--plan-fd")) {
		fd = sbx_opt_fd(opt, arg);
		snprintf(name, sizeof name, "fd %d", fd);
		shown = name;
	} else {
		fd = grant_open_file(opt, arg);
	}
	buf = read_plan(opt, shown, fd, &len);
	close(fd);
	doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
	free(buf);
	if (!doc)
		sbx_die_usage("%s: %s: not JSON: %s (line %d)", opt, shown, err.text, err.line);
	v = json_object_get(doc, "event");
	if (!json_is_object(doc) || !json_is_string(json_object_get(doc, "tool")) ||
	    strcmp(json_string_value(json_object_get(doc, "tool")), "sbx-ns") || !json_is_string(v) ||
	    strcmp(json_string_value(v), "plan"))
		sbx_die_usage("%s: %s: not a plan of sbx-ns --dry-run", opt, shown);

	argv = list(opt, shown, doc, "argv");
	if (!json_array_size(argv))
		sbx_die_usage("%s: %s: empty \"argv\" list", opt, shown);
	args = sbx_need(calloc(json_array_size(argv) + 1, sizeof *args));
	env = list(opt, shown, doc, "env");
	*envp = sbx_need(calloc(json_array_size(env) + 1, sizeof **envp));
	json_array_foreach(argv, i, v)
		args[i] = plan_dup(text(opt, shown, v, "an \"argv\" entry"));
	in->argv = args;
	if (!*args[0])
		sbx_die_usage("%s: %s: empty program name", opt, shown);
	json_array_foreach(env, i, v) {
		const char *e = text(opt, shown, v, "an \"env\" entry");
		grant_check_env(opt, e, *envp, i);
		(*envp)[i] = plan_dup(e);
	}
	v = json_object_get(doc, "cwd");
	in->cwd = plan_dup(grant_check_cwd(opt, text(opt, shown, v, "\"cwd\"")));
	v = json_object_get(doc, "timeout_ms");
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (unsigned long long)json_integer_value(v) > GRANT_MAX_TIMEOUT_MS)
		sbx_die_usage("%s: %s: \"timeout_ms\" is not a timeout", opt, shown);
	in->timeout_ms = (uint64_t)json_integer_value(v);
	/* The sandbox: one digest per group, the way sbx-ns computes them. */
	{
		const char *why;
		if (sbx_grant_plan_groups(doc, in->plan, &why) < 0)
			sbx_die_usage("%s: %s: %s", opt, shown, why);
		in->have_plan = 1;
	}
	json_decref(doc);
}

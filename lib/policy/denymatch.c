/* The deny-write rule for one path of a workspace, as a tool that writes
 * into it checks it (sbx-changes apply). See policy.h. */
#include "policy.h"

#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

/* Component-wise glob match: each component with fnmatch (no FNM_PERIOD:
 * ".env.*" names its dot itself), "**" for any number of components. Both
 * strings are '/'-separated and never start with '/'. */
static int comp_len(const char *s)
{
	const char *e = strchr(s, '/');
	return e ? (int)(e - s) : (int)strlen(s);
}

static int match_at(const char *g, const char *p)
{
	char gc[256], pc[4096];
	int gl, pl;

	if (!*g)
		return !*p;
	gl = comp_len(g);
	if (gl == 2 && g[0] == '*' && g[1] == '*') {
		const char *gn = g[2] ? g + 3 : g + 2;
		for (const char *q = p;; ) {
			if (match_at(gn, q))
				return 1;
			if (!*q)
				return 0;
			q += comp_len(q);
			if (*q == '/')
				q++;
		}
	}
	if (!*p)
		return 0;
	pl = comp_len(p);
	if (gl >= (int)sizeof gc || pl >= (int)sizeof pc)
		return 0;
	memcpy(gc, g, gl);
	gc[gl] = '\0';
	memcpy(pc, p, pl);
	pc[pl] = '\0';
	if (fnmatch(gc, pc, 0))
		return 0;
	return match_at(g[gl] ? g + gl + 1 : g + gl, p[pl] ? p + pl + 1 : p + pl);
}

/* rel or one of its ancestors matches glob (a write below a protected
 * directory is a write to it). */
static int covers(const char *glob, const char *rel)
{
	char buf[4096];
	size_t n = strlen(rel);

	if (n >= sizeof buf)
		n = sizeof buf - 1;
	memcpy(buf, rel, n);
	buf[n] = '\0';
	for (;;) {
		char *s;
		if (match_at(glob, buf))
			return 1;
		s = strrchr(buf, '/');
		if (!s)
			return 0;
		*s = '\0';
	}
}

/* Git's names (cmd/sbx-ns/denygit.c): in any directory of the tree, a ".git"
 * entry itself and what git reads config, hooks and redirects from. */
static const char *const git_names[] = { "config", "config.worktree", "commondir", "gitdir", "hooks", NULL };

static const char *git_rule(const char *rel)
{
	const char *p = rel;

	for (;;) {
		if (!strncmp(p, ".git", 4) && (p[4] == '\0' || p[4] == '/')) {
			const char *r = p + 4;
			if (!*r)
				return ".git";
			r++;
			for (const char *const *n = git_names; *n; n++) {
				size_t l = strlen(*n);
				if (!strncmp(r, *n, l) && (r[l] == '\0' || r[l] == '/'))
					return *n;
			}
		}
		p = strchr(p, '/');
		if (!p)
			return NULL;
		p++;
	}
}

const char *sbx_policy_deny_match(const char *const *globs, const char *rel)
{
	static char why[64];
	const char *g;

	if (!globs)
		globs = sbx_policy_default_deny;
	for (const char *const *p = globs; *p; p++) {
		if (covers(*p, rel))
			return *p;
		/* git's globs hold in every repository below the workspace */
		if (!strncmp(*p, ".git/", 5)) {
			for (const char *s = strchr(rel, '/'); s; s = strchr(s + 1, '/'))
				if (covers(*p, s + 1))
					return *p;
		}
	}
	if (globs == sbx_policy_default_deny && (g = git_rule(rel))) {
		snprintf(why, sizeof why, "git's %s", g);
		return why;
	}
	return NULL;
}

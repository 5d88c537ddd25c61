/* Protected paths: see protect.h. */
#include "protect.h"
#include "cmdpath.h"
#include "die.h"
#include "exitcodes.h"
#include "policy.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *sbx_protect_canon(const char *p)
{
	char buf[PATH_MAX], res[PATH_MAX], *out;
	size_t cut;

	if (strlen(p) >= sizeof buf) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	strcpy(buf, p);
	cut = strlen(buf);
	/* Resolve the longest prefix that exists; what does not exist yet
	 * cannot be a symlink and is appended as given. */
	for (;;) {
		char save = buf[cut];
		buf[cut] = '\0';
		if (realpath(cut ? buf : "/", res)) {
			buf[cut] = save;
			break;
		}
		buf[cut] = save;
		if (errno != ENOENT && errno != ENOTDIR)
			return NULL;
		while (cut > 0 && buf[cut - 1] == '/')
			cut--;
		while (cut > 0 && buf[cut - 1] != '/')
			cut--;
		while (cut > 0 && buf[cut - 1] == '/')
			cut--;
	}
	{
		const char *rest = p + cut;
		size_t rl;
		while (*rest == '/')
			rest++;
		rl = strlen(rest);
		while (rl && rest[rl - 1] == '/')
			rl--;
		if (asprintf(&out, "%s%s%.*s", res, (rl && strcmp(res, "/")) ? "/" : "",
			     (int)rl, rest) < 0)
			return NULL;
	}
	/* Collapse doubled slashes in what was appended. */
	{
		char *r = out, *w = out;
		for (; *r; r++)
			if (!(*r == '/' && w > out && w[-1] == '/'))
				*w++ = *r;
		*w = '\0';
	}
	return out;
}

void sbx_protect_add(struct sbx_protect *p, const char *opt, const char *path)
{
	struct sbx_protect_ent *v, *e;
	const char *bad = sbx_path_shape(path, strlen(path));
	struct stat st;
	char *c;

	if (bad)
		sbx_die_usage("%s: invalid path '%s': %s", opt, path, bad);
	c = sbx_protect_canon(path);
	if (!c)
		sbx_die_usage("%s: invalid path '%s': %s", opt, path, strerror(errno));
	if (!strcmp(c, "/"))
		sbx_die_usage("%s: invalid path '%s': the whole file system", opt, path);
	v = sbx_need(realloc(p->v, (p->n + 1) * sizeof *v));
	p->v = v;
	e = &v[p->n++];
	e->path = c;
	e->arg = path;
	e->exists = stat(c, &st) == 0;
	e->dev = e->exists ? st.st_dev : 0;
	e->ino = e->exists ? st.st_ino : 0;
}

/* Does path or one of its existing ancestors have this identity? */
static int ancestor_is(const char *path, dev_t dev, ino_t ino)
{
	char buf[PATH_MAX];
	struct stat st;
	size_t n = strlen(path);

	if (n >= sizeof buf)
		return 0;
	memcpy(buf, path, n + 1);
	for (;;) {
		if (stat(n ? buf : "/", &st) == 0 && st.st_dev == dev && st.st_ino == ino)
			return 1;
		if (!n)
			return 0;
		while (n > 0 && buf[n - 1] != '/')
			n--;
		while (n > 0 && buf[n - 1] == '/')
			n--;
		buf[n] = '\0';
	}
}

long sbx_protect_exposed(const struct sbx_protect *p, const struct sbx_protect_root *root)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct sbx_protect_ent *e = &p->v[i];
		if (sbx_path_within(e->path, root->path) || sbx_path_within(root->path, e->path))
			return (long)i;
		if (ancestor_is(e->path, root->dev, root->ino))
			return (long)i;
		if (e->exists && ancestor_is(root->path, e->dev, e->ino))
			return (long)i;
	}
	return -1;
}

void sbx_protect_check(const struct sbx_protect *p, const struct sbx_protect_root *roots,
		       const char *const *root_opts, size_t nroots)
{
	for (size_t r = 0; r < nroots; r++) {
		long i = sbx_protect_exposed(p, &roots[r]);
		if (i >= 0)
			sbx_die(SBX_EXIT_POLICY,
				"refusing to start: protected path %s is writable through %s %s",
				p->v[i].path, root_opts[r], roots[r].path);
	}
}

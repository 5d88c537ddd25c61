/* The host's CA settings. A host with a private or corporate CA tells its
 * TLS clients so through a few standard variables; a clean environment
 * would drop them and every TLS connection through the broker would fail
 * with an unknown issuer. So, unless --no-host-ca or the policy's
 * "hostCA": false says otherwise (one decision: ns_host_ca_on), each of
 * them the caller has set to a non-empty value is kept, and what it names
 * is shown read-only at the same path inside the sandbox:
 *
 *   - the value is taken as the caller's shell gave it: absolute, no
 *     control character, shorter than PATH_MAX, not under /proc, /sys or
 *     /dev; SSL_CERT_DIR is a list of directories separated by ':' (as
 *     OpenSSL reads it), the others name one file (REQUESTS_CA_BUNDLE a
 *     file or a directory, as requests takes it);
 *   - symlinks are resolved once, here: the canonical path is checked
 *     (again no symlink in it, its device and inode taken), bound, and is
 *     the value the command gets; pid 1 opens it without following any
 *     symlink and binds that very object by fd only if it is the one
 *     checked (root.c), so a link swapped after the check changes nothing;
 *   - a path the sandbox already shows at the same path (the workspace,
 *     the runtime set, a --ro or --rw root, another CA path) is not bound
 *     again; one under a --bind's destination or around another root, or
 *     under /tmp with --tmp-in-workspace, cannot be bound and is refused;
 *     under a baseline it must lie within the effective readable roots.
 *
 * A variable given by --setenv is the caller's choice and is not looked
 * at; one given by --keep-env is treated as the default would (with
 * --no-host-ca it is only passed, as any --keep-env). A refusal names the
 * variable, the path and the fix, before anything is created. */
#include "ns.h"

#include "die.h"
#include "exitcodes.h"
#include "policy.h"
#include "quote.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { CA_FILE = 1, CA_DIR = 2, CA_ANY = 3 };

static const struct {
	const char *name;
	int type;
	int list;       /* ':'-separated */
} vars[] = {
	{ "SSL_CERT_FILE", CA_FILE, 0 },
	{ "SSL_CERT_DIR", CA_DIR, 1 },
	{ "NODE_EXTRA_CA_CERTS", CA_FILE, 0 },
	{ "REQUESTS_CA_BUNDLE", CA_ANY, 0 },
	{ "CURL_CA_BUNDLE", CA_FILE, 0 },
	{ "GIT_SSL_CAINFO", CA_FILE, 0 },
	{ "PIP_CERT", CA_FILE, 0 },
};
#define NVARS (sizeof vars / sizeof vars[0])
#define CA_MAX_DIRS 64

static const char *const never[] = { "/proc", "/sys", "/dev", NULL };

int ns_host_ca_on(const struct ns_args *a, const struct ns_plan *p)
{
	if (p->pol_on)
		return !p->eff.host_ca.set || p->eff.host_ca.v;
	return !a->no_host_ca;
}

int ns_host_ca_kept(const struct ns_plan *p, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; i < p->nca; i++)
		if (!strncmp(p->ca_env[i], name, len) && p->ca_env[i][len] == '=')
			return 1;
	return 0;
}

static int set_by_setenv(const struct ns_args *a, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; i < a->nsetenv; i++)
		if (!strncmp(a->setenv[i], name, len) && a->setenv[i][len] == '=')
			return 1;
	return 0;
}

static char *quoted(const char *s)
{
	static char q[2][1100];
	static int k;

	k ^= 1;
	return sbx_quote(q[k], sizeof q[k], s, strlen(s), 256, 0);
}

noreturn static void refuse(const char *name, const char *path, const char *why)
{
	sbx_die_usage("host CA variable %s: invalid path '%s': %s (correct or unset %s, or give --no-host-ca)",
		      name, quoted(path), why, name);
}

static const char *under_never(const char *path)
{
	for (const char *const *d = never; *d; d++)
		if (sbx_path_within(path, *d))
			return *d;
	return NULL;
}

/* One path a variable names: checked, resolved; its canonical form and
 * identity in *out and *st. */
struct ca_ent {
	size_t var;
	char *path;     /* canonical */
	struct stat st;
};

static void check_one(size_t v, const char *val, struct ca_ent *e)
{
	const char *name = vars[v].name, *why, *d;
	char real[PATH_MAX], msg[PATH_MAX + 128];

	if (!*val)
		refuse(name, val, "empty");
	if (strlen(val) >= PATH_MAX)
		refuse(name, val, "too long");
	if (val[0] != '/')
		refuse(name, val, "not absolute");
	if ((d = under_never(val))) {
		snprintf(msg, sizeof msg, "under %s", d);
		refuse(name, val, msg);
	}
	if (!realpath(val, real))
		refuse(name, val, errno == ENOENT ? "does not exist" :
			      errno == ELOOP ? "a symlink loop" : strerror(errno));
	if (!strcmp(real, "/"))
		refuse(name, val, strcmp(val, real) ? "resolves to the root" : "the root");
	if ((d = under_never(real))) {
		snprintf(msg, sizeof msg, "resolves to '%s', under %s", quoted(real), d);
		refuse(name, val, msg);
	}
	/* The resolved path, component by component: a symlink in it now
	 * means it changed since realpath looked. */
	why = ns_canonical(real, 0, &e->st);
	if (why)
		sbx_die(SBX_EXIT_POLICY, "unable to bind host CA variable %s: '%s' changed while it was "
			"checked (%s; race)", name, quoted(real), why);
	if ((vars[v].type == CA_DIR && !S_ISDIR(e->st.st_mode)) ||
	    (vars[v].type == CA_FILE && !S_ISREG(e->st.st_mode)) ||
	    (!S_ISREG(e->st.st_mode) && !S_ISDIR(e->st.st_mode))) {
		const char *t = vars[v].type == CA_DIR ? "not a directory" :
				vars[v].type == CA_FILE ? "not a regular file" : "not a file or directory";
		if (strcmp(val, real)) {
			snprintf(msg, sizeof msg, "resolves to '%s', %s", quoted(real), t);
			refuse(name, val, msg);
		}
		refuse(name, val, t);
	}
	e->var = v;
	e->path = sbx_need(strdup(real));
}

/* The root that shows path at the same path inside, or NULL. */
static const struct mount_op *shown_by(const struct ns_plan *p, const char *path)
{
	for (size_t i = 0; i < p->nops; i++) {
		const struct mount_op *op = &p->ops[i];
		if (op->kind != MNT_BIND && op->kind != MNT_SYMLINK && op->kind != MNT_SCRATCH &&
		    sbx_path_within(path, op->src))
			return op;
	}
	return NULL;
}

/* Bind e's path, or find it shown already; refuse where it cannot go. */
static void place(const struct ns_args *a, struct ns_plan *p, const struct ca_ent *e)
{
	const char *name = vars[e->var].name;
	char msg[PATH_MAX + 256];
	struct mount_op *op;

	if (shown_by(p, e->path))
		return;
	for (size_t i = 0; i < p->nops; i++) {
		const struct mount_op *o = &p->ops[i];
		if (o->kind == MNT_SYMLINK)
			continue;
		if (sbx_path_within(e->path, o->dest)) {
			snprintf(msg, sizeof msg, "lies inside %s, where %s shows another path", o->dest, o->opt);
			refuse(name, e->path, msg);
		}
		if (sbx_path_within(o->dest, e->path)) {
			snprintf(msg, sizeof msg, "holds %s (%s%s), which a read-only bind of it would hide",
				 o->dest, o->kind == MNT_WORKSPACE ? "the workspace" : "bound by ",
				 o->kind == MNT_WORKSPACE ? "" : o->opt);
			refuse(name, e->path, msg);
		}
	}
	if (a->tmp_in_ws && (sbx_path_within(e->path, "/tmp") || sbx_path_within(e->path, "/dev/shm")))
		refuse(name, e->path, "under /tmp, which is the workspace's with --tmp-in-workspace");
	/* Under a baseline, what it lets a request read: its readable or
	 * writable roots (a baseline without a sandbox block names none and
	 * limits nothing here). */
	if (sbx_policy_opts_baseline(&a->pol) && (p->base.ro.set || p->base.rw.set) &&
	    !sbx_policy_within(&p->base.ro, e->path) && !sbx_policy_within(&p->base.rw, e->path))
		sbx_die(SBX_EXIT_POLICY, "policy refused: host CA variable %s: '%s' is not within the "
			"baseline's readable roots (unset %s, give --no-host-ca, or add it to the "
			"baseline's readableRoots)", name, quoted(e->path), name);
	op = ns_push_op(p);
	op->kind = MNT_CA;
	op->ro = 1;
	op->opt = name;
	op->src = e->path;
	op->dest = e->path;
	op->dev = e->st.st_dev;
	op->ino = e->st.st_ino;
	op->isdir = S_ISDIR(e->st.st_mode);
}

/* Directories first, shorter first: a file or directory inside one
 * already bound is then shown by it. */
static int order(const void *x, const void *y)
{
	const struct ca_ent *a = x, *b = y;
	int da = S_ISDIR(a->st.st_mode), db = S_ISDIR(b->st.st_mode);
	size_t la = strlen(a->path), lb = strlen(b->path);

	if (da != db)
		return db - da;
	return la < lb ? -1 : la > lb;
}

void ns_plan_host_ca(const struct ns_args *a, struct ns_plan *p)
{
	struct ca_ent *ents = NULL, *sorted;
	size_t n = 0;

	if (!ns_host_ca_on(a, p))
		return;
	p->ca_env = sbx_need(calloc(NVARS + 1, sizeof *p->ca_env));
	for (size_t v = 0; v < NVARS; v++) {
		const char *val = getenv(vars[v].name), *c;
		size_t first = n, len = 0, k = 0;
		char *out;

		/* unset and empty alike: nothing to keep */
		if (!val || !*val || set_by_setenv(a, vars[v].name))
			continue;
		for (c = val; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				refuse(vars[v].name, val, "contains a control character");
		/* the entries of a list, or the one path */
		for (const char *s = val; ; ) {
			const char *end = vars[v].list ? strchrnul(s, ':') : s + strlen(s);
			char *one = sbx_need(strndup(s, (size_t)(end - s)));
			if (vars[v].list && !*one)
				sbx_die_usage("host CA variable %s: invalid list '%s': empty entry "
					      "(correct or unset %s, or give --no-host-ca)",
					      vars[v].name, quoted(val), vars[v].name);
			if (k++ == CA_MAX_DIRS)
				sbx_die_usage("host CA variable %s: invalid list '%s': more than %d entries "
					      "(correct or unset %s, or give --no-host-ca)",
					      vars[v].name, quoted(val), CA_MAX_DIRS, vars[v].name);
			ents = sbx_need(realloc(ents, (n + 1) * sizeof *ents));
			check_one(v, one, &ents[n]);
			len += strlen(ents[n++].path) + 1;
			free(one);
			if (!*end)
				break;
			s = end + 1;
		}
		/* NAME=the canonical paths, in the caller's order */
		out = sbx_need(malloc(strlen(vars[v].name) + 1 + len));
		len = (size_t)sprintf(out, "%s=", vars[v].name);
		for (size_t i = first; i < n; i++)
			len += (size_t)sprintf(out + len, "%s%s", i > first ? ":" : "", ents[i].path);
		p->ca_env[p->nca++] = out;
	}
	if (!n)
		return;
	sorted = sbx_need(malloc(n * sizeof *sorted));
	memcpy(sorted, ents, n * sizeof *sorted);
	qsort(sorted, n, sizeof *sorted, order);
	for (size_t i = 0; i < n; i++)
		place(a, p, &sorted[i]);
	free(sorted);
	free(ents);
}

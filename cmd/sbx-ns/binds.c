/* Binds to a chosen destination (--bind SRC DEST, --ro-bind SRC DEST and
 * the fd forms), so a shared volume appears at /shared and read-only tool
 * trees at fixed places in every sandbox whatever their host paths. The
 * source gets exactly the checks of --rw/--ro (canonical, no symlink, the
 * identity taken now and compared when mounted); only the place inside
 * differs. And the read-path rule: a --ro path inside the workspace is
 * already readable (and writable) there, so it is ignored with a warning
 * on the status fd instead of being bound over part of the workspace. */
#include "ns.h"

#include "die.h"
#include "exitcodes.h"
#include "json.h"
#include "parse.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const never[] = { "/proc", "/sys", "/dev", NULL };

/* NULL when dest is an absolute path naming one place inside the
 * sandbox in one spelling only; else why not. */
static const char *dest_problem(const char *dest)
{
	const char *p;

	if (!*dest)
		return "empty";
	if (dest[0] != '/')
		return "not absolute";
	if (!strcmp(dest, "/"))
		return "the root";
	if (strlen(dest) >= PATH_MAX)
		return "too long";
	for (p = dest; *p; ) {
		const char *c = p + 1, *end = strchrnul(c, '/');
		size_t len = (size_t)(end - c);
		if (!len || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
			return "not canonical (empty, '.' or '..' component)";
		p = end;
	}
	for (const char *const *d = never; *d; d++)
		if (sbx_path_within(dest, *d))
			return !strcmp(*d, "/proc") ? "under /proc" : !strcmp(*d, "/sys") ? "under /sys" : "under /dev";
	return NULL;
}

void ns_add_bind(struct ns_plan *p, int ro, int byfd, const char *opt, const char *src,
		 const char *dest)
{
	const char *why;
	struct mount_op *op;

	/* "--bind SRC -- prog": no destination (none starts with '-'). */
	if (!dest || dest[0] == '-')
		sbx_die_usage("%s: missing destination", opt);
	dest = sbx_path_squash(dest);
	why = dest_problem(dest);
	if (why)
		sbx_die_usage("%s: invalid destination '%s': %s", opt, dest, why);
	if (byfd)
		ns_add_fd(p, ro ? MNT_RO : MNT_RW, ro, opt, src);
	else
		ns_add_path(p, ro ? MNT_RO : MNT_RW, ro, opt, src);
	op = &p->ops[p->nops - 1];
	op->kind = MNT_BIND;
	op->dest = sbx_need(strdup(dest));
}

/* src lies in the workspace: by name, or by identity of one of its
 * directories (the workspace reached through another mount). */
static int in_workspace(const struct mount_op *ws, const char *src)
{
	char dir[PATH_MAX], *slash;
	struct stat st;

	if (sbx_path_within(src, ws->src))
		return 1;
	if (strlen(src) >= sizeof dir)
		return 0;
	strcpy(dir, src);
	while ((slash = strrchr(dir, '/')) && slash != dir) {
		if (stat(dir, &st) == 0 && st.st_dev == ws->dev && st.st_ino == ws->ino)
			return 1;
		*slash = '\0';
	}
	return 0;
}

/* The workspace lies in dir: by name, or by identity of one of the
 * workspace's directories. */
static int holds_workspace(const struct mount_op *ws, const struct mount_op *dir)
{
	char p[PATH_MAX], *slash;
	struct stat st;

	if (sbx_path_within(ws->src, dir->src))
		return 1;
	if (!dir->isdir || strlen(ws->src) >= sizeof p)
		return 0;
	strcpy(p, ws->src);
	for (;;) {
		if (stat(p, &st) == 0 && st.st_dev == dir->dev && st.st_ino == dir->ino)
			return 1;
		slash = strrchr(p, '/');
		if (!slash || slash == p)
			break;
		*slash = '\0';
	}
	return 0;
}

/* The one rule for every writable root, whatever option made it (--rw,
 * --rw-fd, --bind, --bind-fd, a policy's writable roots): it may not be a
 * second view of the workspace, by name or through another mount of it,
 * because the deny-write paths are protected only in the workspace's own
 * view. The workspace itself and its --tmp-in-workspace directory (made
 * by sbx-ns, mounted at /tmp) are the only writable views of it. */
static void check_writable(const struct ns_plan *p)
{
	const struct mount_op *ws = &p->ops[p->ws], *op;

	for (size_t it = 0; (op = ns_next_writable(p, &it)); ) {
		if (op->kind == MNT_WORKSPACE || op->kind == MNT_SCRATCH)
			continue;
		if (in_workspace(ws, op->src) || holds_workspace(ws, op))
			sbx_die_usage("%s: invalid path '%s': overlaps the workspace %s (a writable "
				      "second view of it; %s)", op->opt, op->src, ws->src,
				      !strcmp(op->opt, "--home") ? "give a directory outside the workspace" :
				      op->kind == MNT_BIND ? "use --ro-bind" : "use --ro");
	}
}

/* A chosen destination inside another bind (or another bind inside it)
 * would need its mount point made in a host directory: refused, so every
 * mount point is made on the sandbox's own tmpfs. Runs after the runtime
 * set is known, before ns_check_ops. */
void ns_check_binds(const struct ns_args *a, const struct ns_plan *p)
{
	check_writable(p);
	for (size_t i = 0; i < p->nops; i++) {
		const struct mount_op *b = &p->ops[i];

		if (b->kind != MNT_BIND)
			continue;
		if (a->tmp_in_ws && (sbx_path_within(b->dest, "/tmp") || sbx_path_within(b->dest, "/dev/shm")))
			sbx_die_usage("%s: invalid destination '%s': /tmp is the workspace's with "
				      "--tmp-in-workspace", b->opt, b->dest);
		for (size_t j = 0; j < p->nops; j++) {
			const struct mount_op *o = &p->ops[j];
			if (j == i || !strcmp(o->dest, b->dest))
				continue;
			if (sbx_path_within(b->dest, o->dest))
				sbx_die_usage("%s: invalid destination '%s': inside %s (bound by %s)",
					      b->opt, b->dest, o->dest, o->opt);
			if (sbx_path_within(o->dest, b->dest))
				sbx_die_usage("%s: invalid destination '%s': %s (bound by %s) lies inside it",
					      b->opt, b->dest, o->dest, o->opt);
		}
	}
}

void ns_drop_ro_in_ws(const struct ns_args *a, struct ns_plan *p)
{
	size_t k = 0, wsi = p->ws;
	const struct mount_op ws = p->ops[p->ws];

	for (size_t i = 0; i < p->nops; i++) {
		struct mount_op *op = &p->ops[i];
		if (op->kind == MNT_RO && in_workspace(&ws, op->src)) {
			struct sbx_json j;
			if (a->status_fd >= 0) {
				sbx_json_begin(&j, NS_PROG, "warning");
				sbx_json_str(&j, "option", op->opt);
				sbx_json_str(&j, "path", op->src);
				sbx_json_str(&j, "reason", "inside the workspace: ignored");
				sbx_json_write(&j, a->status_fd);
			}
			if (i < wsi)
				p->ws--;
			continue;
		}
		p->ops[k++] = *op;
	}
	p->nops = k;
}

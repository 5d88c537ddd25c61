#include "quota_tree.h"
#include "exitcodes.h"
#include "quota.h"
#include "quote.h"
#include "walk.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

struct ctx {
	struct sbx_qtree *t;
	unsigned dev_major, dev_minor;
	uint64_t mnt_id;
	int have_mnt_id;
};

static int say(struct sbx_qtree *t, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int say(struct sbx_qtree *t, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sbx_err_vset(&t->err, code, 0, fmt, ap);
	va_end(ap);
	return code;
}

static const char *kind(mode_t m)
{
	if (S_ISFIFO(m))
		return "a fifo";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	return "of an unknown type";
}

static int visit(void *arg, const struct sbx_walk_entry *e)
{
	struct ctx *c = arg;
	struct sbx_qtree *t = c->t;
	const struct sbx_statx *st = e->st;
	char q[1024];
	uint32_t projid;
	int inherit, dir = S_ISDIR(st->stx_mode);

	t->entries++;
	sbx_quote(q, sizeof q, e->path, e->pathlen, SIZE_MAX, SBX_QUOTE_NAME);
	if (S_ISLNK(st->stx_mode))
		return say(t, SBX_EXIT_POLICY, "refusing workspace: '%s' is a symbolic link", q);
	if (!dir && !S_ISREG(st->stx_mode))
		return say(t, SBX_EXIT_POLICY, "refusing workspace: '%s' is %s", q, kind(st->stx_mode));
	if (st->stx_dev_major != c->dev_major || st->stx_dev_minor != c->dev_minor)
		return say(t, SBX_EXIT_POLICY,
			   "refusing workspace: '%s' is on another filesystem", q);
	if (c->have_mnt_id && (st->stx_mask & SBX_STATX_MNT_ID) && st->stx_mnt_id != c->mnt_id)
		return say(t, SBX_EXIT_POLICY,
			   "refusing workspace: '%s' is another mount (a mount point or bind mount)", q);
	if (!dir && st->stx_nlink > 1)
		return say(t, SBX_EXIT_POLICY, "refusing workspace: '%s' has %u hard links",
			   q, (unsigned)st->stx_nlink);
	if (sbx_quota_getattr(e->fd, &projid, &inherit) < 0)
		return say(t, SBX_EXIT_SYS, "unable to read the project id of '%s' in the workspace: %s",
			   q, strerror(errno));
	if (projid == t->projid)
		t->in_project++;
	switch (t->mode) {
	case SBX_QTREE_CHECK:
		if (projid != t->projid)
			return say(t, SBX_EXIT_POLICY,
				   "refusing workspace: '%s' has project id %u, not %u",
				   q, projid, t->projid);
		if (dir && !inherit)
			return say(t, SBX_EXIT_POLICY,
				   "refusing workspace: directory '%s' lacks PROJINHERIT", q);
		break;
	case SBX_QTREE_SCAN:
		break;
	case SBX_QTREE_APPLY:
		if (sbx_quota_setattr(e->fd, t->projid, dir) < 0)
			return say(t, SBX_EXIT_SYS,
				   "unable to set the project id of '%s' in the workspace: %s",
				   q, strerror(errno));
		break;
	}
	return 0;
}

int sbx_qtree_run(int rootfd, struct sbx_qtree *t)
{
	struct ctx c = { .t = t };
	struct sbx_walk_err err;
	struct sbx_statx st;
	char q[1024];
	int r;

	t->entries = t->in_project = 0;
	t->err.msg[0] = '\0';
	if (sbx_statx(rootfd, "", AT_EMPTY_PATH, SBX_STATX_TYPE | SBX_STATX_MNT_ID, &st) < 0)
		return say(t, SBX_EXIT_SYS, "unable to stat the workspace: %s", strerror(errno));
	c.dev_major = st.stx_dev_major;
	c.dev_minor = st.stx_dev_minor;
	c.have_mnt_id = !!(st.stx_mask & SBX_STATX_MNT_ID);
	c.mnt_id = st.stx_mnt_id;
	r = sbx_walk(rootfd, 0, visit, &c, &err);
	if (r == 0 || r == SBX_EXIT_POLICY || r == SBX_EXIT_SYS)
		return r;
	sbx_quote(q, sizeof q, err.path, err.pathlen, SIZE_MAX, SBX_QUOTE_NAME);
	if (r == SBX_WALK_ETOODEEP)
		return say(t, SBX_EXIT_POLICY,
			   "refusing workspace: '%s' is nested deeper than %d directories",
			   q, SBX_WALK_MAX_DEPTH);
	if (err.pathlen)
		return say(t, SBX_EXIT_SYS, "unable to %s '%s' in the workspace: %s",
			   err.step, q, strerror(err.err));
	return say(t, SBX_EXIT_SYS, "unable to %s the workspace: %s", err.step, strerror(err.err));
}

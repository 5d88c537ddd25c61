#include "quota_tree.h"
#include "exitcodes.h"
#include "quota.h"
#include "quote.h"
#include "walk.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct ctx {
	struct sbx_qtree *t;
	unsigned dev_major, dev_minor;
	uint64_t mnt_id;
	int have_mnt_id;
	uint64_t *wo;              /* inodes of whiteouts with more than one link */
	size_t nwo, capwo;
};

/* What the messages call the tree. */
#define WHAT(t) ((t)->what ? (t)->what : "workspace")

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

/* A whiteout of a change set: on this filesystem and mount, counted once
 * per inode. */
static int whiteout(struct ctx *c, const struct sbx_statx *st, const char *q)
{
	struct sbx_qtree *t = c->t;

	if (st->stx_dev_major != c->dev_major || st->stx_dev_minor != c->dev_minor)
		return say(t, SBX_EXIT_POLICY, "refusing %s: '%s' is on another filesystem", WHAT(t), q);
	if (c->have_mnt_id && (st->stx_mask & SBX_STATX_MNT_ID) && st->stx_mnt_id != c->mnt_id)
		return say(t, SBX_EXIT_POLICY,
			   "refusing %s: '%s' is another mount (a mount point or bind mount)", WHAT(t), q);
	if (t->mode != SBX_QTREE_CHECK)
		return say(t, SBX_EXIT_POLICY,
			   "refusing %s: '%s' is a whiteout of an earlier run, whose project id "
			   "cannot be read or set; to fix: prepare a change set before its first run, "
			   "or discard it", WHAT(t), q);
	if (st->stx_nlink < 2)
		return 0;
	for (size_t i = 0; i < c->nwo; i++)
		if (c->wo[i] == st->stx_ino) {
			t->links++;
			return 0;
		}
	if (c->nwo == c->capwo) {
		uint64_t *v = realloc(c->wo, (c->capwo = c->capwo * 2 + 16) * sizeof *v);
		if (!v)
			return say(t, SBX_EXIT_SYS, "unable to count the whiteouts: %s", strerror(errno));
		c->wo = v;
	}
	c->wo[c->nwo++] = st->stx_ino;
	return 0;
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
		return say(t, SBX_EXIT_POLICY, "refusing %s: '%s' is a symbolic link", WHAT(t), q);
	if (t->changeset && S_ISCHR(st->stx_mode) && !st->stx_rdev_major && !st->stx_rdev_minor)
		return whiteout(c, st, q);
	if (!dir && !S_ISREG(st->stx_mode))
		return say(t, SBX_EXIT_POLICY, "refusing %s: '%s' is %s", WHAT(t), q, kind(st->stx_mode));
	if (st->stx_dev_major != c->dev_major || st->stx_dev_minor != c->dev_minor)
		return say(t, SBX_EXIT_POLICY,
			   "refusing %s: '%s' is on another filesystem", WHAT(t), q);
	if (c->have_mnt_id && (st->stx_mask & SBX_STATX_MNT_ID) && st->stx_mnt_id != c->mnt_id)
		return say(t, SBX_EXIT_POLICY,
			   "refusing %s: '%s' is another mount (a mount point or bind mount)", WHAT(t), q);
	if (!dir && st->stx_nlink > 1)
		return say(t, SBX_EXIT_POLICY, "refusing %s: '%s' has %u hard links",
			   WHAT(t), q, (unsigned)st->stx_nlink);
	if (sbx_quota_getattr(e->fd, &projid, &inherit) < 0)
		return say(t, SBX_EXIT_SYS, "unable to read the project id of '%s' in the %s: %s",
			   q, WHAT(t), strerror(errno));
	if (projid == t->projid)
		t->in_project++;
	switch (t->mode) {
	case SBX_QTREE_CHECK:
		if (projid != t->projid)
			return say(t, SBX_EXIT_POLICY,
				   "refusing %s: '%s' has project id %u, not %u",
				   WHAT(t), q, projid, t->projid);
		if (dir && !inherit)
			return say(t, SBX_EXIT_POLICY,
				   "refusing %s: directory '%s' lacks PROJINHERIT", WHAT(t), q);
		break;
	case SBX_QTREE_SCAN:
		break;
	case SBX_QTREE_APPLY:
		if (sbx_quota_setattr(e->fd, t->projid, dir) < 0)
			return say(t, SBX_EXIT_SYS,
				   "unable to set the project id of '%s' in the %s: %s",
				   q, WHAT(t), strerror(errno));
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

	t->entries = t->in_project = t->links = 0;
	t->err.msg[0] = '\0';
	if (sbx_statx(rootfd, "", AT_EMPTY_PATH, SBX_STATX_TYPE | SBX_STATX_MNT_ID, &st) < 0)
		return say(t, SBX_EXIT_SYS, "unable to stat the %s: %s", WHAT(t), strerror(errno));
	c.dev_major = st.stx_dev_major;
	c.dev_minor = st.stx_dev_minor;
	c.have_mnt_id = !!(st.stx_mask & SBX_STATX_MNT_ID);
	c.mnt_id = st.stx_mnt_id;
	r = sbx_walk(rootfd, 0, visit, &c, &err);
	free(c.wo);
	if (r == 0 || r == SBX_EXIT_POLICY || r == SBX_EXIT_SYS)
		return r;
	sbx_quote(q, sizeof q, err.path, err.pathlen, SIZE_MAX, SBX_QUOTE_NAME);
	if (r == SBX_WALK_ETOODEEP)
		return say(t, SBX_EXIT_POLICY,
			   "refusing %s: '%s' is nested deeper than %d directories",
			   WHAT(t), q, SBX_WALK_MAX_DEPTH);
	if (err.pathlen)
		return say(t, SBX_EXIT_SYS, "unable to %s '%s' in the %s: %s",
			   err.step, q, WHAT(t), strerror(err.err));
	return say(t, SBX_EXIT_SYS, "unable to %s the %s: %s", err.step, WHAT(t), strerror(err.err));
}

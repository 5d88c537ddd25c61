/* --changes DIR: a change set under its workspace's project quota (see
 * changeset.h). Its tree is what sbx-ns makes and the overlay fills:
 * changeset, lock, base.jsonl, upper/ (the layer: copies of workspace
 * files, new files, whiteouts for deleted names) and work/ (the overlay's
 * scratch directory, where copy-ups are written before they move into
 * upper/). All of it is charged to the project when DIR's root carries it
 * with PROJINHERIT; the walk proves every inode and directory below does. */
#include "changeset.h"

#include "die.h"
#include "exitcodes.h"
#include "fd.h"
#include "quota.h"
#include "quote.h"
#include "walk.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void qchg_open(struct qchg *c, const char *path, int wsfd, const char *wsname)
{
	struct stat ws, st;
	char q[1024];

	memset(c, 0, sizeof *c);
	c->path = path;
	sbx_quote(q, sizeof q, path, strlen(path), SIZE_MAX, SBX_QUOTE_NAME);
	snprintf(c->name, sizeof c->name, "change set %s", q);
	c->fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (c->fd < 0) {
		struct stat sb;
		if (errno == ELOOP || (errno == ENOTDIR && lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode)))
			sbx_die_usage("--changes: invalid path '%s': a symbolic link", q);
		if (errno == ENOTDIR)
			sbx_die_usage("--changes: invalid path '%s': not a directory", q);
		sbx_die(SBX_EXIT_SYS, "unable to open change set %s: %s", q, strerror(errno));
	}
	if (fstat(c->fd, &st) < 0 || fstat(wsfd, &ws) < 0)
		sbx_die(SBX_EXIT_SYS, "unable to stat change set %s: %s", q, strerror(errno));
	if (st.st_dev != ws.st_dev)
		sbx_die(SBX_EXIT_POLICY, "refusing %s: it is on another filesystem than the workspace %s, "
			"whose project quota cannot hold it; to fix: make it on the workspace's filesystem",
			c->name, wsname);
	if (st.st_ino == ws.st_ino)
		sbx_die(SBX_EXIT_POLICY, "refusing %s: it is the workspace", c->name);
	if (sbx_fd_below(c->fd, ws.st_dev, ws.st_ino))
		sbx_die(SBX_EXIT_POLICY, "refusing %s: it is inside the workspace %s; to fix: make it beside "
			"the workspace", c->name, wsname);
	if (sbx_fd_below(wsfd, st.st_dev, st.st_ino))
		sbx_die(SBX_EXIT_POLICY, "refusing %s: it holds the workspace %s; to fix: make it beside "
			"the workspace", c->name, wsname);
	if (sbx_quota_getattr(c->fd, &c->projid, &c->inherit) < 0)
		sbx_die(SBX_EXIT_SYS, "unable to read the project id of %s: %s", c->name, strerror(errno));
}

static void walk(struct qchg *c, enum sbx_qtree_mode mode, uint32_t projid)
{
	struct sbx_qtree t = { .mode = mode, .projid = projid, .what = c->name, .changeset = 1 };

	if (sbx_qtree_run(c->fd, &t))
		sbx_err_die(&t.err);
	c->inodes = t.entries - t.links + 1;
	c->in_project = t.in_project + (c->projid == projid);
}

void qchg_verify(struct qchg *c, uint32_t projid, const char *wsname)
{
	if (c->projid != projid || !c->inherit)
		sbx_die(SBX_EXIT_POLICY, "refusing %s: it has project id %u%s, not the workspace's %u with "
			"PROJINHERIT, so what the sandbox writes there would escape the quota; to fix: run "
			"sbx-quota prepare --workspace %s --project %u --disk SIZE --changes %s as root",
			c->name, c->projid, c->inherit ? "" : " without PROJINHERIT", projid, wsname,
			projid, c->name + strlen("change set "));
	walk(c, SBX_QTREE_CHECK, projid);
}

void qchg_scan(struct qchg *c, uint32_t projid)
{
	walk(c, SBX_QTREE_SCAN, projid);
}

void qchg_apply(struct qchg *c, uint32_t projid)
{
	if (sbx_quota_setattr(c->fd, projid, 1) < 0)
		sbx_die(SBX_EXIT_SYS, "unable to set the project id of %s: %s", c->name, strerror(errno));
	c->projid = projid;
	c->inherit = 1;
	walk(c, SBX_QTREE_APPLY, projid);
}

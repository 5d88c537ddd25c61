/* The workspace tree under a project quota: every inode below the root must
 * be charged to the root's project and stay charged to it. That holds when
 * the tree has no symbolic link (a way out of the tree), no mount and nothing
 * from another filesystem (not charged at all), no non-directory with a
 * second link (the other name may be outside, or move the inode), only
 * directories and regular files (other types cannot be opened safely to read
 * their project id), every inode with the project id, and every directory
 * with PROJINHERIT (so what is created later joins the project). */
#ifndef SBX_QUOTA_TREE_H
#define SBX_QUOTA_TREE_H

#include "err.h"

#include <stdint.h>

enum sbx_qtree_mode {
	SBX_QTREE_CHECK,   /* refuse any inode not in the project (verify) */
	SBX_QTREE_SCAN,    /* shape only; count inodes already in the project */
	SBX_QTREE_APPLY,   /* shape; put every inode into the project (prepare) */
};

struct sbx_qtree {
	enum sbx_qtree_mode mode;
	uint32_t projid;
	const char *what;  /* the tree in messages ("workspace" when NULL) */
	/* The tree is a change set (sbx-ns --changes DIR): its overlay records
	 * a deleted name as a whiteout, a character device 0/0, often one
	 * inode with a link per name. Those are allowed in CHECK, counted once
	 * per inode, and never opened (a device 0/0 cannot be), so their
	 * project id is not read: they hold no blocks, and a whiteout made by
	 * the overlay in a directory with PROJINHERIT carries the project.
	 * SCAN and APPLY refuse them: prepare cannot give them the project. */
	int changeset;
	/* Results: entries below the root (the root itself not counted), and
	 * of those the ones that carried projid when they were seen; links:
	 * entries that were one more name of a whiteout already counted, so
	 * the tree holds entries - links inodes. */
	uint64_t entries, in_project, links;
	struct sbx_err err; /* why it stopped */
};

/* Walks the tree below rootfd. Returns 0; SBX_EXIT_POLICY when the tree is
 * refused (err names the entry: "refusing workspace: 'a/b' is a symbolic
 * link"); SBX_EXIT_SYS when a call failed (err: "unable to open 'a/b' in the
 * workspace: Permission denied"); what, when set, is said for "workspace".
 * Paths in err are relative to the root and escaped with sbx_quote. */
int sbx_qtree_run(int rootfd, struct sbx_qtree *t);

#endif

/* quota-walk [--changes] DIR: the tree check of `sbx-quota verify` alone,
 * on a host whose kernel has no quotas: every inode below DIR must have
 * DIR's project id, every directory PROJINHERIT, and no link, mount, hard
 * link or special file (with --changes, a change set's: whiteouts allowed,
 * counted once per inode). Prints "N entries" (DIR included) and exits 0,
 * or the refusal and its exit code. Used by the host tests and
 * bench/sbx-quota.sh. */
#include "die.h"
#include "exitcodes.h"
#include "quota.h"
#include "quota_tree.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sbx_qtree t = { .mode = SBX_QTREE_CHECK };
	int fd, inherit, r;

	sbx_setprog("quota-walk");
	if (argc == 3 && !strcmp(argv[1], "--changes")) {
		t.changeset = 1;
		t.what = "change set";
		argv++;
		argc--;
	}
	if (argc != 2)
		sbx_die_usage("quota-walk [--changes] DIR");
	fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open %s", argv[1]);
	if (sbx_quota_getattr(fd, &t.projid, &inherit) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read the project id of %s", argv[1]);
	r = sbx_qtree_run(fd, &t);
	if (r)
		sbx_err_die(&t.err);
	printf("%llu entries\n", (unsigned long long)(t.entries - t.links) + 1);
	return 0;
}

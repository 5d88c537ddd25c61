/* `sbx-check host`, item "mounts": the mount steps sbx-ns takes to build its
 * root, tried for real in a throw-away user and mount namespace, by the
 * interface sbx-ns will choose on this kernel (lib/mount.h). */
#include "check.h"
#include "mount.h"
#include "probe.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

void chk_host_mounts(struct chk_report *r)
{
	enum sbx_mnt_api api = sbx_mnt_probe();
	enum sbx_userns_step ustep = 0;
	const char *src = "/usr", *how;
	struct chk_item *it;
	struct stat st;
	char step[128];
	int e;

	how = api == SBX_MNT_NEW ? "the new mount API (open_tree, mount_setattr, move_mount)"
				 : "the classic mount calls (no mount_setattr here: it came in Linux "
				   "5.12): bind through /proc/self/fd/N, then remount";
	if (stat(src, &st) < 0 || !S_ISDIR(st.st_mode))
		src = "/";
	if (sbx_probe_userns(&ustep) != 0) {
		it = chk_add(r, CLS_ISOLATION, "mounts", CHK_MISSING,
			     "not tried: no user namespace (see userns); sbx-ns would use %s", how);
		chk_fix(it, "make user namespaces work first (see userns)");
	} else if ((e = sbx_probe_mounts(api, src, step, sizeof step)) != 0) {
		it = chk_add(r, CLS_ISOLATION, "mounts", e == ENOSYS ? CHK_UNSUPPORTED : CHK_MISSING,
			     "%s: unable to %s: %s", how, step[0] ? step : "run the probe", strerror(e));
		chk_fix(it, "allow mount(2)%s in user namespaces (a container's seccomp profile or an "
			"LSM is refusing it)", api == SBX_MNT_NEW ? ", open_tree, mount_setattr and move_mount" : "");
	} else {
		it = chk_add(r, CLS_ISOLATION, "mounts", CHK_OK,
			     "%s: a read-only, nosuid, nodev bind of %s and its submounts works", how, src);
	}
	chk_field(it, "api", 0, "%s", sbx_mnt_api_name(api));
}

/* `sbx-check host`, item "apparmor-userns": Ubuntu's AppArmor restriction of
 * unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1),
 * or its symptom, a uid_map write refused right after unshare(CLONE_NEWUSER)
 * succeeded, and the profile sbx ships as the fix (contrib/apparmor/sbx-ns).
 * sbx-check's own probe runs unprofiled: with the restriction on, what counts
 * for sbx-ns is whether its profile is loaded. */
#include "check.h"
#include "probe.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define AA_SYSCTL "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"
#define AA_PROFILES "/sys/kernel/security/apparmor/profiles"
#define AA_FIX "load the profile sbx ships for sbx-ns: apparmor_parser -r /etc/apparmor.d/sbx-ns " \
	"(`make install` puts contrib/apparmor/sbx-ns there with the installed path)"

/* 1 if a profile named sbx-ns is loaded, 0 if not, -1 if the list is unreadable. */
static int profile_loaded(void)
{
	FILE *f = fopen(AA_PROFILES, "re");
	char line[512];
	int found = 0;

	if (!f)
		return -1;
	while (!found && fgets(line, sizeof line, f))
		found = !strncmp(line, "sbx-ns (", 8);
	fclose(f);
	return found;
}

void chk_host_apparmor(struct chk_report *r)
{
	enum sbx_userns_step step = 0;
	struct chk_item *it;
	long aa = -1;
	int e = sbx_probe_sysctl(AA_SYSCTL, &aa), ue, loaded;

	if (e == 0 && aa != 0) {
		loaded = profile_loaded();
		if (loaded == 1) {
			chk_add(r, CLS_ISOLATION, "apparmor-userns", CHK_OK,
				"kernel.apparmor_restrict_unprivileged_userns=%ld, and the sbx-ns profile "
				"is loaded: sbx-ns may create user namespaces", aa);
			return;
		}
		it = chk_add(r, CLS_ISOLATION, "apparmor-userns", CHK_MISSING,
			     "kernel.apparmor_restrict_unprivileged_userns=%ld and %s: sbx-ns cannot "
			     "create its namespaces", aa,
			     loaded == 0 ? "no sbx-ns profile is loaded" : "the loaded profiles cannot be read (" AA_PROFILES ")");
		chk_fix(it, AA_FIX);
		return;
	}
	ue = sbx_probe_userns(&step);
	if (step == SBX_USERNS_MAP && (ue == EPERM || ue == EACCES)) {
		it = chk_add(r, CLS_ISOLATION, "apparmor-userns", CHK_MISSING,
			     "writing uid_map was refused right after unshare(CLONE_NEWUSER) worked (%s), "
			     "what an LSM restricting user namespaces does (Ubuntu's AppArmor), or this "
			     "process is in a user namespace that does not map its uid", strerror(ue));
		chk_fix(it, "if AppArmor restricts user namespaces here: " AA_FIX);
		return;
	}
	if (e == 0)
		chk_add(r, CLS_ISOLATION, "apparmor-userns", CHK_OK,
			"kernel.apparmor_restrict_unprivileged_userns=0: not restricted");
	else
		chk_add(r, CLS_ISOLATION, "apparmor-userns", CHK_OK,
			"no AppArmor user namespace restriction on this kernel (%s: %s)", AA_SYSCTL,
			strerror(e));
}

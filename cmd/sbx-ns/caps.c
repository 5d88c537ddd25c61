/* Capabilities, emptied with libcap: the bounding set (so no later exec can
 * gain any), the ambient set, then inheritable, permitted and effective. */
#include "ns.h"

#include "procstat.h"

#include <errno.h>
#include <stdint.h>
#include <sys/capability.h>
#include <sys/prctl.h>

/* The bounding set as the kernel shows it (CapBnd in /proc/self/status):
 * one read instead of a system call per capability. */
static int bounding(uint64_t *set)
{
	unsigned long long v;

	if (sbx_proc_status("CapBnd", 16, &v) < 0)
		return -1;
	*set = v;
	return 0;
}

/* Each capability of the bounding set dropped, and the set read again to
 * prove it empty; the ambient set cleared in one call (a kernel without
 * ambient capabilities, before 4.3, has none to clear). Without CapBnd to
 * read, one read of each capability, and each one dropped read again. */
int ns_drop_bounding(void)
{
	int max = (int)cap_max_bits();
	uint64_t set;

	if (bounding(&set) == 0) {
		/* One already dropped needs no privilege to stay dropped (the
		 * commands of pid 1's nested namespace inherit an empty set). */
		for (cap_value_t c = 0; c < max && c < 64; c++)
			if (set >> c & 1 && cap_drop_bound(c) < 0 && errno != EINVAL)
				return -1;
		if (set && (bounding(&set) < 0 || set)) {
			errno = EPERM;
			return -1;
		}
	} else {
		for (cap_value_t c = 0; c < max; c++) {
			if (cap_get_bound(c) <= 0)
				continue;
			if (cap_drop_bound(c) < 0 && errno != EINVAL)
				return -1;
			if (cap_get_bound(c) > 0) {
				errno = EPERM;
				return -1;
			}
		}
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -1;
	return 0;
}

int ns_clear_caps(void)
{
	cap_t c = cap_init();
	int rc;

	if (!c)
		return -1;
	rc = cap_set_proc(c);
	cap_free(c);
	return rc;
}

/* Capabilities, emptied with libcap: the bounding set (so no later exec can
 * gain any), the ambient set, then inheritable, permitted and effective. */
#include "ns.h"

#include <errno.h>
#include <sys/capability.h>
#include <sys/prctl.h>

int ns_drop_bounding(void)
{
	int max = (int)cap_max_bits();

	/* One already dropped needs no privilege to stay dropped (the
	 * commands of pid 1's nested namespace inherit an empty set). */
	for (cap_value_t c = 0; c < max; c++)
		if (cap_get_bound(c) > 0 && cap_drop_bound(c) < 0 && errno != EINVAL)
			return -1;
	for (cap_value_t c = 0; c < max; c++)
		if (cap_get_bound(c) > 0) {
			errno = EPERM;
			return -1;
		}
	return cap_reset_ambient();
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

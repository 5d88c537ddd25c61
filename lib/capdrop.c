#include "capdrop.h"

#include <errno.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>

int sbx_cap_drop(int cap, const char **step, int *nnp)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	uint32_t bit = 1u << (cap & 31);
	int i = cap >> 5, r;

	*nnp = 0;
	r = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
	if (r < 0) {
		*step = "PR_CAPBSET_READ";
		return -1;
	}
	if (r == 1 && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
		if (errno != EPERM) {
			*step = "PR_CAPBSET_DROP";
			return -1;
		}
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
			*step = "PR_SET_NO_NEW_PRIVS";
			return -1;
		}
		*nnp = 1;
	}
	/* Lowering the inheritable bit below clears the ambient one too, but
	 * say it on its own: EINVAL only on kernels without ambient sets. */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, cap, 0, 0) < 0 && errno != EINVAL) {
		*step = "PR_CAP_AMBIENT_LOWER";
		return -1;
	}
	if (syscall(SYS_capget, &h, d) < 0) {
		*step = "capget";
		return -1;
	}
	if (!((d[i].effective | d[i].permitted | d[i].inheritable) & bit))
		return 0;
	d[i].effective &= ~bit;
	d[i].permitted &= ~bit;
	d[i].inheritable &= ~bit;
	if (syscall(SYS_capset, &h, d) < 0) {
		*step = "capset";
		return -1;
	}
	return 0;
}

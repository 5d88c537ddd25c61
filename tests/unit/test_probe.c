#include "unit.h"
#include "probe.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

TEST(probe_kernel_parses_release)
{
	unsigned ma = 0, mi = 0;
	char rel[128];
	CHECK(sbx_probe_kernel(&ma, &mi, rel, sizeof rel) == 0);
	CHECK(ma >= 3);
	char want[32];
	snprintf(want, sizeof want, "%u.%u", ma, mi);
	CHECK(strncmp(rel, want, strlen(want)) == 0);
}

TEST(probe_sysctl_reads_numbers_and_reports_absence)
{
	long v = -1;
	CHECK(sbx_probe_sysctl("/proc/sys/kernel/pid_max", &v) == 0);
	CHECK(v > 0);
	CHECK(sbx_probe_sysctl("/proc/sys/kernel/no_such_sysctl", &v) == ENOENT);
	CHECK(sbx_probe_sysctl("/proc/sys/kernel/ostype", &v) == EINVAL);
}

/* The development machines run a kernel with all of these (PLATFORM.md);
 * the probes must say so, and must leave the caller untouched. */
TEST(probe_features_of_this_kernel)
{
	enum sbx_userns_step step = 0;
	int abi = 0;
	CHECK(sbx_probe_userns(&step) == 0);
	CHECK(sbx_probe_seccomp() == 0);
	CHECK(sbx_probe_landlock(&abi) == 0);
	CHECK(abi >= 1);
	CHECK(sbx_probe_clone3_cgroup() == 0);
	CHECK(sbx_probe_pidfd() == 0);
	CHECK(sbx_probe_openat2() == 0);
	CHECK(sbx_probe_quotactl_fd() == 0);
	/* The seccomp probe ran in a child: the caller may still gain privileges. */
	CHECK(access("/proc/self/status", R_OK) == 0);
}

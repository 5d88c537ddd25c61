/* lib/procstat.c: a line of /proc/self/status by name, against what the
 * kernel's own calls say. */
#include "unit.h"
#include "procstat.h"

#include <sys/prctl.h>
#include <unistd.h>

TEST(proc_status_reads_a_line_by_name_and_nothing_else)
{
	unsigned long long bnd = ~0ULL, uid = 0, want = 0, v;

	for (int c = 0; c < 64; c++)
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1)
			want |= 1ULL << c;
	CHECK(sbx_proc_status("CapBnd", 16, &bnd) == 0);
	CHECK_U64(bnd, want);
	/* "Uid:\t1\t1\t1\t1": not one number on its line */
	CHECK(sbx_proc_status("Uid", 10, &uid) == -1);
	/* the first line, and a name that is a prefix of another's */
	CHECK(sbx_proc_status("Name", 10, &v) == -1);
	CHECK(sbx_proc_status("Seccomp", 10, &v) == 0 && v <= 2);
	CHECK(sbx_proc_status("Seccom", 10, &v) == -1);
	CHECK(sbx_proc_status("NoSuchField", 10, &v) == -1);
	CHECK(sbx_proc_status("", 10, &v) == -1);
}

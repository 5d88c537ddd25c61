#include "procstat.h"

#include "fd.h"

#include <stdio.h>
#include <string.h>

int sbx_proc_stat(const char *pid, struct sbx_proc_stat *st)
{
	char path[64], buf[1024], *s;

	snprintf(path, sizeof path, "/proc/%s/stat", pid);
	if (sbx_read_small(path, 0, buf, sizeof buf) <= 0 || !(s = strrchr(buf, ')')))
		return -1;
	if (sscanf(s + 1, " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu"
		   " %*d %*d %*d %*d %*d %*d %llu %*u %lld",
		   &st->state, &st->ppid, &st->utime, &st->stime, &st->start, &st->rss) != 6)
		return -1;
	return 0;
}

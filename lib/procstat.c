#include "procstat.h"

#include "fd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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

int sbx_proc_status(const char *name, int base, unsigned long long *v)
{
	char buf[4096], key[40], *l, *end;

	if ((size_t)snprintf(key, sizeof key, "\n%s:\t", name) >= sizeof key ||
	    sbx_read_small("/proc/self/status", 0, buf + 1, sizeof buf - 1) <= 0)
		return -1;
	buf[0] = '\n'; /* the first line is found like the others */
	if (!(l = strstr(buf, key)))
		return -1;
	l += strlen(key);
	errno = 0;
	*v = strtoull(l, &end, base);
	return errno || end == l || *end != '\n' ? -1 : 0;
}

#include "meter_tree.h"
#include "grow.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static int push(struct sbx_meter_tree *t, const struct sbx_meter_proc *p)
{
	if (sbx_grow((void **)&t->v, &t->cap, t->n, sizeof *t->v, 32) < 0)
		return -1;
	t->v[t->n++] = *p;
	return 0;
}

const struct sbx_meter_proc *sbx_meter_tree_find(const struct sbx_meter_tree *t,
						 pid_t pid, uint64_t start)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].pid == pid && t->v[i].start == start)
			return &t->v[i];
	return NULL;
}

size_t sbx_meter_tree_kill(const struct sbx_meter_tree *t, int sig)
{
	size_t n = 0;
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].pid > 1 && kill(t->v[i].pid, sig) == 0)
			n++;
	return n;
}

void sbx_meter_tree_free(struct sbx_meter_tree *t)
{
	free(t->v);
	free(t->foreign);
	memset(t, 0, sizeof *t);
}

#ifdef __APPLE__
/* macOS: walk down from root with proc_listchildpids. Not built or run by
 * this project's CI (see the README: what has run on macOS). */
#include <libproc.h>
#include <mach/kern_return.h>
#include <mach/mach_time.h>
#include <sys/proc.h>        /* SZOMB */
#include <sys/proc_info.h>

static int known_pid(const struct sbx_meter_tree *t, pid_t pid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].pid == pid)
			return 1;
	return 0;
}

static int sample(pid_t pid, struct sbx_meter_proc *p)
{
	struct proc_taskallinfo ti;
	mach_timebase_info_data_t tb;

	/* Task times are in Mach absolute time units (not ns on arm64). */
	if (mach_timebase_info(&tb) != KERN_SUCCESS || !tb.denom)
		return -1;
	if (proc_pidinfo(pid, PROC_PIDTASKALLINFO, 0, &ti, sizeof ti) != (int)sizeof ti)
		return -1;
	if (ti.pbsd.pbi_status == SZOMB)
		return -1;
	p->pid = pid;
	p->start = (uint64_t)ti.pbsd.pbi_start_tvsec * 1000000u + ti.pbsd.pbi_start_tvusec;
	p->cpu_ns = (ti.ptinfo.pti_total_user + ti.ptinfo.pti_total_system) *
		    tb.numer / tb.denom;
	p->rss = ti.ptinfo.pti_resident_size;
	return 0;
}

static int add_children(struct sbx_meter_tree *q, pid_t pid)
{
	pid_t kids[1024];
	int n = proc_listchildpids(pid, kids, sizeof kids);

	for (int i = 0; i < n && i < (int)(sizeof kids / sizeof *kids); i++) {
		struct sbx_meter_proc p = { .pid = kids[i] };
		if (!known_pid(q, kids[i]) && push(q, &p) < 0)
			return -1;
	}
	return 0;
}

int sbx_meter_tree_scan(struct sbx_meter_tree *t, pid_t root)
{
	struct sbx_meter_tree q = { 0 }, out = { 0 };

	/* Queue: root's children, then every earlier member (start checked
	 * below), then children of whatever is found. */
	if (add_children(&q, root) < 0)
		goto fail;
	for (size_t i = 0; i < t->n; i++)
		if (!known_pid(&q, t->v[i].pid) && push(&q, &t->v[i]) < 0)
			goto fail;
	for (size_t i = 0; i < q.n; i++) {
		struct sbx_meter_proc p;
		const struct sbx_meter_proc *old;
		if (sample(q.v[i].pid, &p) < 0)
			continue;
		/* An earlier member whose pid now names another process. */
		old = sbx_meter_tree_find(t, p.pid, p.start);
		if (!old && q.v[i].start && q.v[i].start != p.start)
			continue;
		if (push(&out, &p) < 0 || add_children(&q, p.pid) < 0)
			goto fail;
	}
	sbx_meter_tree_free(&q);
	sbx_meter_tree_free(t);
	*t = out;
	return 0;
fail:
	sbx_meter_tree_free(&q);
	sbx_meter_tree_free(&out);
	errno = ENOMEM;
	return -1;
}

#else
/* Linux: one pass over /proc, then the closure over parent links. */
#include "procstat.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

struct row {
	pid_t pid, ppid;
	int mark;
	struct sbx_meter_proc p;
};

static int read_stat(pid_t pid, struct row *r, uint64_t tck, uint64_t page)
{
	struct sbx_proc_stat ps;
	char num[24];

	snprintf(num, sizeof num, "%d", (int)pid);
	if (sbx_proc_stat(num, &ps) < 0 || ps.state == 'Z' || ps.state == 'X')
		return -1;
	r->pid = pid;
	r->ppid = ps.ppid;
	r->mark = 0;
	r->p.pid = pid;
	r->p.start = ps.start;
	r->p.cpu_ns = (ps.utime + ps.stime) * (1000000000ull / tck);
	r->p.rss = ps.rss > 0 ? (uint64_t)ps.rss * page : 0;
	return 0;
}

static int by_pid(const void *a, const void *b)
{
	pid_t x = ((const struct row *)a)->pid, y = ((const struct row *)b)->pid;
	return (x > y) - (x < y);
}

static struct row *lookup(struct row *rows, size_t n, pid_t pid)
{
	struct row key = { .pid = pid };
	return bsearch(&key, rows, n, sizeof *rows, by_pid);
}

static int by_pid_t(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

static int is_foreign(const struct sbx_meter_tree *t, pid_t pid)
{
	return t->nforeign && bsearch(&pid, t->foreign, t->nforeign, sizeof pid, by_pid_t);
}

int sbx_meter_tree_scan(struct sbx_meter_tree *t, pid_t root)
{
	uint64_t tck = (uint64_t)sysconf(_SC_CLK_TCK), page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct sbx_meter_tree out = { 0 };
	struct row *rows = NULL, *r;
	pid_t *foreign = NULL;
	size_t n = 0, cap = 0, nf = 0, capf = 0, i;
	struct dirent *e;
	int changed, err = 0;
	DIR *d;

	if (!tck || 1000000000ull % tck)
		tck = 100;
	if (!(d = opendir("/proc")))
		return -1;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		if (is_foreign(t, (pid_t)pid)) {
			if (nf == capf) {
				size_t c = capf ? capf * 2 : 256;
				pid_t *v = realloc(foreign, c * sizeof *v);
				if (!v) {
					err = ENOMEM;
					break;
				}
				foreign = v;
				capf = c;
			}
			foreign[nf++] = (pid_t)pid;
			continue;
		}
		if (n == cap) {
			size_t c = cap ? cap * 2 : 256;
			struct row *v = realloc(rows, c * sizeof *v);
			if (!v) {
				err = ENOMEM;
				break;
			}
			rows = v;
			cap = c;
		}
		if (read_stat((pid_t)pid, &rows[n], tck, page) == 0)
			n++;
	}
	closedir(d);
	if (err)
		goto fail;
	qsort(rows, n, sizeof *rows, by_pid);
	for (i = 0; i < n; i++)
		rows[i].mark = rows[i].ppid == root ||
			       sbx_meter_tree_find(t, rows[i].pid, rows[i].p.start);
	/* Parents before children is not guaranteed by pid order (pids
	 * wrap), so repeat until nothing changes; trees are shallow. */
	do {
		changed = 0;
		for (i = 0; i < n; i++) {
			if (rows[i].mark || rows[i].pid == root)
				continue;
			r = lookup(rows, n, rows[i].ppid);
			if (r && r->mark)
				rows[i].mark = changed = 1;
		}
	} while (changed);
	for (i = 0; i < n; i++) {
		if (rows[i].mark && rows[i].pid != root) {
			if (push(&out, &rows[i].p) < 0) {
				err = ENOMEM;
				goto fail;
			}
			continue;
		}
		/* Outside the tree for sure only when its parent was seen
		 * outside too (or is the kernel's): a parent that exited
		 * mid-scan may have been ours, and its orphan is re-read. */
		if (rows[i].pid != root && rows[i].ppid > 0 &&
		    !lookup(rows, n, rows[i].ppid) && !is_foreign(t, rows[i].ppid))
			continue;
		if (nf == capf) {
			size_t c = capf ? capf * 2 : 256;
			pid_t *v = realloc(foreign, c * sizeof *v);
			if (!v) {
				err = ENOMEM;
				goto fail;
			}
			foreign = v;
			capf = c;
		}
		foreign[nf++] = rows[i].pid;
	}
	qsort(foreign, nf, sizeof *foreign, by_pid_t);
	free(rows);
	free(t->v);
	free(t->foreign);
	t->v = out.v;
	t->n = out.n;
	t->cap = out.cap;
	t->foreign = foreign;
	t->nforeign = nf;
	return 0;
fail:
	free(rows);
	free(foreign);
	sbx_meter_tree_free(&out);
	errno = err;
	return -1;
}
#endif

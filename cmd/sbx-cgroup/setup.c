/* Making, verifying, emptying and removing cgroups, always relative to the
 * --root fd. A limit is never assumed: it is written, then read back. */
#include "sbx-cgroup.h"

#include "cgroup.h"
#include "clock.h"
#include "die.h"
#include "exitcodes.h"
#include "fd.h"
#include "json.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_DEPTH 64
#define RMDIR_TRIES 300        /* x 10 ms: a just-emptied cgroup can stay busy briefly */

void cg_open_root(struct cg *root, const char *path, const char *opt)
{
	size_t len = strlen(path);

	root->fd = sbx_cg_open_root(path);
	if (root->fd < 0) {
		if (errno == ELOOP)
			sbx_die_usage("%s: invalid path '%s': contains a symlink", opt, path);
		if (errno == EMEDIUMTYPE)
			sbx_die(SBX_EXIT_UNSUPPORTED,
				"hard limits unsupported: %s is not on a cgroup v2 file system", path);
		sbx_die_errno(SBX_EXIT_SYS, "unable to open %s", path);
	}
	while (len > 1 && path[len - 1] == '/')
		len--;
	if (len >= sizeof root->path)
		sbx_die_usage("%s: invalid path '%s': too long", opt, path);
	memcpy(root->path, path, len);
	root->path[len] = '\0';
}

int cg_open_child(const struct cg *parent, const char *name, struct cg *out, int flags)
{
	int n = snprintf(out->path, sizeof out->path, "%s/%s", parent->path, name);

	if (n < 0 || (size_t)n >= sizeof out->path) {
		errno = ENAMETOOLONG;
		return -1;
	}
	out->fd = sbx_cg_openat(parent->fd, name, flags | O_DIRECTORY);
	return out->fd;
}

/* The controllers the requested limits need, in a fixed order. */
static size_t needed(const struct limits *lim, const char *out[3])
{
	size_t n = 0;

	if (lim->cpu_pct)
		out[n++] = "cpu";
	if (lim->memory)
		out[n++] = "memory";
	if (lim->pids)
		out[n++] = "pids";
	return n;
}

int cg_need_controllers(const struct cg *cg, const struct limits *lim, struct sbx_err *f)
{
	const char *want[3];
	size_t n = needed(lim, want);
	char have[512];

	if (!n)
		return 0;
	if (sbx_cg_read(cg->fd, "cgroup.controllers", have, sizeof have) < 0)
		return sbx_err_errno(f, SBX_EXIT_SYS, errno, "unable to read %s/cgroup.controllers", cg->path);
	for (size_t i = 0; i < n; i++)
		if (!sbx_cg_list_has(have, want[i]))
			return sbx_err_set(f, SBX_EXIT_UNSUPPORTED,
				     "hard limits unsupported: controller %s is not available in %s",
				     want[i], cg->path);
	return 0;
}

int cg_enable_controllers(const struct cg *cg, const struct limits *lim, struct sbx_err *f)
{
	const char *want[3];
	size_t n = needed(lim, want), i;
	char have[512], add[64] = "";
	int e = 0;

	if (!n)
		return 0;
	if (sbx_cg_read(cg->fd, "cgroup.subtree_control", have, sizeof have) < 0)
		return sbx_err_errno(f, SBX_EXIT_SYS, errno, "unable to read %s/cgroup.subtree_control",
			     cg->path);
	for (i = 0; i < n; i++) {
		if (sbx_cg_list_has(have, want[i]))
			continue;
		strcat(add, *add ? " +" : "+");
		strcat(add, want[i]);
	}
	if (!*add)
		return 0;
	if (sbx_cg_write(cg->fd, "cgroup.subtree_control", add) < 0)
		e = errno;
	if (sbx_cg_read(cg->fd, "cgroup.subtree_control", have, sizeof have) < 0)
		return sbx_err_errno(f, SBX_EXIT_SYS, errno, "unable to read %s/cgroup.subtree_control",
			     cg->path);
	for (i = 0; i < n; i++)
		if (!sbx_cg_list_has(have, want[i]))
			return sbx_err_errno(f, SBX_EXIT_UNSUPPORTED, e,
				     "hard limits unsupported: unable to enable controller %s in %s/cgroup.subtree_control",
				     want[i], cg->path);
	return 0;
}

/* Fail closed: if /proc/swaps cannot be read, assume there is swap. */
static int swap_present(void)
{
	char buf[4096];

	if (sbx_read_small("/proc/swaps", 0, buf, sizeof buf) <= 0)
		return 1;
	/* The header line is always there; any further line is a swap area. */
	char *nl = strchr(buf, '\n');
	return !nl || nl[1] != '\0';
}

static int write_file(const struct cg *cg, const char *file, const char *val, struct sbx_err *f)
{
	if (sbx_cg_write(cg->fd, file, val) < 0)
		return sbx_err_errno(f, SBX_EXIT_SYS, errno, "unable to write %s to %s/%s", val, cg->path, file);
	return 0;
}

static int read_file(const struct cg *cg, const char *file, char *buf, size_t size,
		     struct sbx_err *f)
{
	if (sbx_cg_read(cg->fd, file, buf, size) < 0)
		return sbx_err_errno(f, SBX_EXIT_SYS, errno, "unable to read %s/%s", cg->path, file);
	return 0;
}

static int readback(const struct cg *cg, const char *file, const char *want,
		    const char *wrote, struct sbx_err *f)
{
	char got[128];

	if (read_file(cg, file, got, sizeof got, f) < 0)
		return -1;
	if (strcmp(got, want))
		return sbx_err_set(f, SBX_EXIT_POLICY,
			     "verification failed: %s/%s reads '%s' after writing '%s'",
			     cg->path, file, got, wrote);
	return 0;
}

/* No swap ever: memory.swap.max is 0. Without the file (swap accounting
 * off) that holds only if the host has no swap at all. */
static int no_swap(const struct cg *cg, int write, struct sbx_err *f)
{
	char got[64];

	if (write && sbx_cg_write(cg->fd, "memory.swap.max", "0") < 0 && errno != ENOENT)
		return sbx_err_errno(f, SBX_EXIT_SYS, errno, "unable to write 0 to %s/memory.swap.max",
			     cg->path);
	if (sbx_cg_read(cg->fd, "memory.swap.max", got, sizeof got) < 0) {
		if (errno != ENOENT)
			return sbx_err_errno(f, SBX_EXIT_SYS, errno, "unable to read %s/memory.swap.max",
				     cg->path);
		if (swap_present())
			return sbx_err_set(f, SBX_EXIT_UNSUPPORTED,
				     "hard limits unsupported: %s/memory.swap.max is missing and the host has swap",
				     cg->path);
		return 0;
	}
	if (strcmp(got, "0")) {
		if (write)
			return sbx_err_set(f, SBX_EXIT_POLICY,
				     "verification failed: %s/memory.swap.max reads '%s' after writing '0'",
				     cg->path, got);
		return sbx_err_set(f, SBX_EXIT_POLICY,
			     "refusing looser limits: %s/memory.swap.max is '%s', requested '0'",
			     cg->path, got);
	}
	return 0;
}

/* memory.max keeps whole pages: the kernel rounds a value down. */
static unsigned long long page_floor(unsigned long long v)
{
	long page = sysconf(_SC_PAGESIZE);

	if (page <= 0)
		page = 4096;
	return v - v % (unsigned long long)page;
}

int cg_write_limits(const struct cg *cg, const struct limits *lim, struct sbx_err *f)
{
	char val[64], want[64];

	if (lim->cpu_pct) {
		snprintf(val, sizeof val, "%llu %llu",
			 (unsigned long long)(lim->cpu_pct * (CPU_PERIOD / 100)), CPU_PERIOD);
		if (write_file(cg, "cpu.max", val, f) < 0 || readback(cg, "cpu.max", val, val, f) < 0)
			return -1;
	}
	if (lim->memory) {
		snprintf(val, sizeof val, "%llu", (unsigned long long)lim->memory);
		snprintf(want, sizeof want, "%llu", page_floor(lim->memory));
		if (write_file(cg, "memory.max", val, f) < 0 ||
		    readback(cg, "memory.max", want, val, f) < 0 || no_swap(cg, 1, f) < 0)
			return -1;
	}
	if (lim->pids) {
		snprintf(val, sizeof val, "%llu", (unsigned long long)lim->pids);
		if (write_file(cg, "pids.max", val, f) < 0 || readback(cg, "pids.max", val, val, f) < 0)
			return -1;
	}
	return 0;
}

static int looser(const struct cg *cg, const char *file, const char *got, const char *want,
		  struct sbx_err *f)
{
	return sbx_err_set(f, SBX_EXIT_POLICY, "refusing looser limits: %s/%s is '%s', requested '%s'",
		     cg->path, file, got, want);
}

/* A plain decimal, or -1 for "max" and anything else. */
static int number(const char *s, unsigned long long *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || (*end && *end != ' ') ? -1 : 0;
}

static int cg_check_tighter(const struct cg *cg, const struct limits *lim, struct sbx_err *f)
{
	char got[128], want[64];
	unsigned long long v, period;

	if (lim->cpu_pct) {
		unsigned long long quota = lim->cpu_pct * (CPU_PERIOD / 100);
		snprintf(want, sizeof want, "%llu %llu", quota, CPU_PERIOD);
		if (read_file(cg, "cpu.max", got, sizeof got, f) < 0)
			return -1;
		const char *sp = strchr(got, ' ');
		/* quota_p / period_p <= quota / CPU_PERIOD, without division. */
		if (number(got, &v) < 0 || !sp || number(sp + 1, &period) < 0 ||
		    (unsigned __int128)v * CPU_PERIOD > (unsigned __int128)quota * period)
			return looser(cg, "cpu.max", got, want, f);
	}
	if (lim->memory) {
		snprintf(want, sizeof want, "%llu", page_floor(lim->memory));
		if (read_file(cg, "memory.max", got, sizeof got, f) < 0)
			return -1;
		if (number(got, &v) < 0 || v > page_floor(lim->memory))
			return looser(cg, "memory.max", got, want, f);
		if (no_swap(cg, 0, f) < 0)
			return -1;
	}
	if (lim->pids) {
		snprintf(want, sizeof want, "%llu", (unsigned long long)lim->pids);
		if (read_file(cg, "pids.max", got, sizeof got, f) < 0)
			return -1;
		if (number(got, &v) < 0 || v > lim->pids)
			return looser(cg, "pids.max", got, want, f);
	}
	return 0;
}

/* The sandbox's parent P under root: made with the limits when it does not
 * exist, verified as equal or tighter when it does. Either way its children
 * get the controllers. */
int cg_prepare_parent(const struct cg *root, const char *name, const struct limits *lim,
		      struct cg *out, int *created, struct sbx_err *f)
{
	*created = 0;
	if (cg_open_child(root, name, out, O_PATH) >= 0) {
		if (cg_need_controllers(out, lim, f) < 0 || cg_check_tighter(out, lim, f) < 0 ||
		    cg_enable_controllers(out, lim, f) < 0)
			goto fail;
		return 0;
	}
	if (errno != ENOENT)
		return sbx_err_errno(f, SBX_EXIT_SYS, errno, "unable to open %s", out->path);
	if (cg_need_controllers(root, lim, f) < 0 || cg_enable_controllers(root, lim, f) < 0)
		return -1;
	if (mkdirat(root->fd, name, 0755) < 0) {
		if (errno == EEXIST) /* made meanwhile by another run: verify it */
			return cg_prepare_parent(root, name, lim, out, created, f);
		return sbx_err_errno(f, SBX_EXIT_SYS, errno, "unable to create %s", out->path);
	}
	*created = 1;
	if (cg_open_child(root, name, out, O_PATH) < 0) {
		sbx_err_errno(f, SBX_EXIT_SYS, errno, "unable to open %s", out->path);
		cg_remove(root, name);
		return -1;
	}
	if (cg_write_limits(out, lim, f) < 0 || cg_enable_controllers(out, lim, f) < 0)
		goto fail;
	return 0;
fail:
	close(out->fd);
	out->fd = -1;
	if (*created)
		cg_remove(root, name);
	*created = 0;
	return -1;
}

/* A cgroup removed under us (--destroy): its files are gone (ENOENT), or
 * its directory, held open here, is (ENODEV). Only an empty cgroup can
 * be removed. */
static int removed(int e)
{
	return e == ENOENT || e == ENODEV;
}

int cg_populated(const struct cg *cg)
{
	char ev[256];
	unsigned long long v;

	if (sbx_cg_read(cg->fd, "cgroup.events", ev, sizeof ev) < 0)
		return removed(errno) ? 0 : -1;
	if (sbx_cg_keyed(ev, "populated", &v) < 0)
		return -1;
	return v != 0;
}

static void each_pid(int dirfd, int depth, void (*fn)(void *ctx, pid_t pid), void *ctx)
{
	size_t size = 1 << 20;   /* pids of 7 digits and a newline: 131072 of them */
	char *procs = malloc(size), *p, *end;
	DIR *d;
	struct dirent *e;
	int fd;

	if (procs && sbx_cg_read(dirfd, "cgroup.procs", procs, size) >= 0) {
		for (p = procs; *p; p = end) {
			long pid = strtol(p, &end, 10);
			if (end == p)
				break;
			if (pid > 0)
				fn(ctx, (pid_t)pid);
			while (*end == '\n')
				end++;
		}
	}
	free(procs);
	if (depth >= MAX_DEPTH || (fd = sbx_cg_openat(dirfd, ".", O_RDONLY | O_DIRECTORY)) < 0)
		return;
	if (!(d = fdopendir(fd))) {
		close(fd);
		return;
	}
	while ((e = readdir(d))) {
		if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		int sub = sbx_cg_openat(dirfd, e->d_name, O_PATH | O_DIRECTORY);
		if (sub >= 0) {
			each_pid(sub, depth + 1, fn, ctx);
			close(sub);
		}
	}
	closedir(d);
}

/* fn for every pid listed in dirfd's cgroup.procs and in every cgroup
 * below it (at most MAX_DEPTH levels): the one walk of a cgroup subtree's
 * processes, for the kill fallback here and the ordered end (ending.c). */
void cg_each_pid(int dirfd, void (*fn)(void *ctx, pid_t pid), void *ctx)
{
	each_pid(dirfd, 0, fn, ctx);
}

static void kill_one(void *ctx, pid_t pid)
{
	kill(pid, SIGKILL);
}

/* Kernels before 5.14 have no cgroup.kill: freeze so nothing can fork
 * while the list is walked, kill what is listed, then thaw so the killed
 * processes can die. */
static int kill_frozen(const struct cg *cg)
{
	char ev[256];
	unsigned long long frozen = 0;
	long long end = (long long)sbx_now_ms() + 2000;

	if (sbx_cg_write(cg->fd, "cgroup.freeze", "1") < 0)
		return -1;
	while ((long long)sbx_now_ms() < end) {
		if (sbx_cg_read(cg->fd, "cgroup.events", ev, sizeof ev) >= 0 &&
		    sbx_cg_keyed(ev, "frozen", &frozen) == 0 && frozen)
			break;
		poll(NULL, 0, 10);
	}
	cg_each_pid(cg->fd, kill_one, NULL);
	return sbx_cg_write(cg->fd, "cgroup.freeze", "0");
}

int cg_kill(const struct cg *cg)
{
	if (sbx_cg_write(cg->fd, "cgroup.kill", "1") == 0)
		return 0;
	if (errno != ENOENT)
		return -1;
	return kill_frozen(cg);
}

int cg_wait_empty(const struct cg *cg, unsigned ms)
{
	char path[64];
	long long end = (long long)sbx_now_ms() + ms;
	int in, r;

	/* cgroup.events is modified when populated changes: sleep on that,
	 * with a short poll as a backstop if inotify is unavailable. */
	snprintf(path, sizeof path, "/proc/self/fd/%d/cgroup.events", cg->fd);
	in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (in >= 0 && inotify_add_watch(in, path, IN_MODIFY) < 0) {
		close(in);
		in = -1;
	}
	for (;;) {
		long long left;
		r = cg_populated(cg);
		if (r <= 0)
			break;
		left = end - (long long)sbx_now_ms();
		if (left <= 0) {
			errno = ETIMEDOUT;
			r = -1;
			break;
		}
		if (in >= 0) {
			struct pollfd pfd = { .fd = in, .events = POLLIN };
			char buf[512];
			poll(&pfd, 1, left < 100 ? (int)left : 100);
			while (read(in, buf, sizeof buf) > 0)
				;
		} else {
			poll(NULL, 0, 10);
		}
	}
	if (in >= 0) {
		int e = errno;
		close(in);
		errno = e;
	}
	return r;
}

static int remove_tree(int pfd, const char *name, int depth)
{
	DIR *d;
	struct dirent *e;
	int fd, i;

	if (depth > MAX_DEPTH) {
		errno = ELOOP;
		return -1;
	}
	fd = sbx_cg_openat(pfd, name, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return removed(errno) ? 0 : -1;
	if (!(d = fdopendir(fd))) {
		close(fd);
		return -1;
	}
	/* Sub-cgroups the command made (when it could) go first. */
	while ((e = readdir(d))) {
		if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		remove_tree(dirfd(d), e->d_name, depth + 1);
	}
	closedir(d);
	for (i = 0; i < RMDIR_TRIES; i++) {
		if (unlinkat(pfd, name, AT_REMOVEDIR) == 0 || removed(errno))
			return 0;
		if (errno != EBUSY && errno != ENOTEMPTY)
			return -1;
		poll(NULL, 0, 10);
	}
	return -1;
}

int cg_remove(const struct cg *parent, const char *name)
{
	return remove_tree(parent->fd, name, 0);
}

static void report(const struct opts *o, const char *path, int created, int code)
{
	struct sbx_json j;

	if (o->status_fd < 0)
		return;
	sbx_json_begin(&j, TOOL, "exit");
	sbx_json_int(&j, "code", code);
	sbx_json_str(&j, "cgroup", path);
	if (o->create)
		sbx_json_bool(&j, "created", created);
	else
		sbx_json_bool(&j, "cleanup", code == 0);
	sbx_json_write(&j, o->status_fd);
}

int mode_create(const struct opts *o)
{
	struct cg root, parent;
	struct sbx_err f;
	int created;

	cg_open_root(&root, o->root, "--root");
	if (cg_prepare_parent(&root, o->parent, &o->lim, &parent, &created, &f) < 0)
		sbx_err_die(&f);
	report(o, parent.path, created, SBX_EXIT_OK);
	return SBX_EXIT_OK;
}

int mode_destroy(const struct opts *o)
{
	struct cg root, parent;

	cg_open_root(&root, o->root, "--root");
	if (cg_open_child(&root, o->parent, &parent, O_PATH) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open %s", parent.path);
	if (cg_kill(&parent) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to kill the processes of %s", parent.path);
	if (cg_wait_empty(&parent, 10000) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to empty %s", parent.path);
	if (cg_remove(&root, o->parent) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to remove %s", parent.path);
	report(o, parent.path, 0, SBX_EXIT_OK);
	return SBX_EXIT_OK;
}

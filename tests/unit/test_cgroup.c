#include "unit.h"
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

TEST(cgroup_name)
{
	CHECK(!sbx_cg_name_invalid("job1"));
	CHECK(!sbx_cg_name_invalid("a-b_C9"));
	CHECK(!sbx_cg_name_invalid("x123456789012345678901234567890123456789012345678901234567890123"));
	CHECK_STR(sbx_cg_name_invalid(""), "empty");
	CHECK_STR(sbx_cg_name_invalid("."), "contains '.'");
	CHECK_STR(sbx_cg_name_invalid(".."), "contains '.'");
	CHECK_STR(sbx_cg_name_invalid("cpu.max"), "contains '.'");
	CHECK_STR(sbx_cg_name_invalid("cgroup.procs"), "contains '.'");
	CHECK_STR(sbx_cg_name_invalid("a/b"), "contains '/'");
	CHECK_STR(sbx_cg_name_invalid("-a"), "starts with '-'");
	CHECK_STR(sbx_cg_name_invalid("a b"), "invalid character");
	CHECK_STR(sbx_cg_name_invalid("a\n"), "invalid character");
	CHECK_STR(sbx_cg_name_invalid("\xc3\xa9"), "invalid character");
	CHECK_STR(sbx_cg_name_invalid("x1234567890123456789012345678901234567890123456789012345678901234"),
		  "longer than 64 characters");
}

TEST(cgroup_list_has)
{
	CHECK(sbx_cg_list_has("cpu io memory pids", "cpu"));
	CHECK(sbx_cg_list_has("cpu io memory pids", "pids"));
	CHECK(sbx_cg_list_has("cpu io memory pids\n", "memory"));
	CHECK(!sbx_cg_list_has("cpuset io memory", "cpu"));
	CHECK(!sbx_cg_list_has("hugetlb", "memory"));
	CHECK(!sbx_cg_list_has("", "cpu"));
	CHECK(!sbx_cg_list_has("cpu", ""));
}

TEST(cgroup_keyed)
{
	unsigned long long v = 7;
	const char *ev = "low 0\nhigh 0\nmax 12\noom 1\noom_kill 3\noom_group_kill 0";

	CHECK(sbx_cg_keyed(ev, "oom_kill", &v) == 0);
	CHECK_U64(v, 3);
	CHECK(sbx_cg_keyed(ev, "oom", &v) == 0);
	CHECK_U64(v, 1);
	CHECK(sbx_cg_keyed(ev, "max", &v) == 0);
	CHECK_U64(v, 12);
	CHECK(sbx_cg_keyed(ev, "kill", &v) < 0 && errno == ENOENT);
	CHECK(sbx_cg_keyed("populated 1\nfrozen 0\n", "populated", &v) == 0);
	CHECK_U64(v, 1);
	CHECK(sbx_cg_keyed("populated x", "populated", &v) < 0);
	CHECK(sbx_cg_keyed("populated 1x", "populated", &v) < 0);
	CHECK(sbx_cg_keyed("", "populated", &v) < 0);
}

/* Whose limit the OOM kills were at, from the kernel's own lines. */
TEST(cgroup_oom_whose)
{
	struct sbx_cg_oom o;
	const char *none = "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n";

	/* nothing */
	CHECK(sbx_cg_oom_of(none, none, &o) == 0);
	CHECK(o.kills == 0 && !o.own && !o.reached);
	/* the cgroup's own memory.max, a process of it killed */
	CHECK(sbx_cg_oom_of("max 9\noom 1\noom_kill 1\n", "max 9\noom 1\noom_kill 1\n", &o) == 0);
	CHECK(o.kills == 1 && o.own && o.reached);
	/* its own limit, the victim in a cgroup below */
	CHECK(sbx_cg_oom_of("oom 1\noom_kill 1\n", "oom 1\noom_kill 0\n", &o) == 0);
	CHECK(o.own && o.reached);
	/* a cgroup below ran out: counted in the subtree only */
	CHECK(sbx_cg_oom_of("oom 1\noom_kill 1\n", none, &o) == 0);
	CHECK(o.kills == 1 && !o.own && !o.reached);
	/* an enclosing limit (or the host's) killed a process of it */
	CHECK(sbx_cg_oom_of("oom 0\noom_kill 1\n", "oom 0\noom_kill 1\n", &o) == 0);
	CHECK(!o.own && o.reached);
	/* ... or one below it, no cgroup below having run out */
	CHECK(sbx_cg_oom_of("oom 0\noom_kill 2\n", none, &o) == 0);
	CHECK(o.kills == 2 && !o.own && o.reached);
	/* below and a process of its own killed by an enclosing limit */
	CHECK(sbx_cg_oom_of("oom 1\noom_kill 2\n", "oom 0\noom_kill 1\n", &o) == 0);
	CHECK(!o.own && o.reached);
	/* its limit reached, nothing killed: no OOM kill to report */
	CHECK(sbx_cg_oom_of("oom 1\noom_kill 0\n", "oom 1\noom_kill 0\n", &o) == 0);
	CHECK(!o.own && !o.reached);
	/* before 5.2: memory.events alone, and local */
	CHECK(sbx_cg_oom_of("oom 0\noom_kill 1\n", NULL, &o) == 0);
	CHECK(!o.own && o.reached);
	CHECK(sbx_cg_oom_of("oom 1\noom_kill 1\n", NULL, &o) == 0);
	CHECK(o.own && o.reached);
	/* a key missing is an error, not a zero */
	CHECK(sbx_cg_oom_of("oom_kill 1\n", NULL, &o) < 0 && errno == ENOENT);
	CHECK(sbx_cg_oom_of("oom 1\noom_kill 1\n", "oom 1\n", &o) < 0 && errno == ENOENT);
	CHECK(sbx_cg_oom_of("", "", &o) < 0);
}

TEST(cgroup_open_refuses)
{
	char dir[] = "/tmp/sbx-unit-cg.XXXXXX", link[64];
	int fd;

	CHECK(mkdtemp(dir) != NULL);
	/* not cgroup2 */
	errno = 0;
	CHECK(sbx_cg_open_root("/proc") < 0 && errno == EMEDIUMTYPE);
	CHECK(sbx_cg_open_root(dir) < 0 && errno == EMEDIUMTYPE);
	/* a symlink, last or inner component */
	snprintf(link, sizeof link, "%s/l", dir);
	CHECK(symlink("/proc", link) == 0);
	CHECK(sbx_cg_open_root(link) < 0 && errno == ELOOP);
	snprintf(link, sizeof link, "%s/l/self", dir);
	CHECK(sbx_cg_open_root(link) < 0 && errno == ELOOP);
	/* beneath: no escape, no symlink, never create */
	fd = open(dir, O_PATH | O_DIRECTORY);
	CHECK(fd >= 0);
	CHECK(sbx_cg_openat(fd, "l", O_PATH) < 0 && errno == ELOOP);
	CHECK(sbx_cg_openat(fd, "../", O_PATH) < 0 && errno == EXDEV);
	CHECK(sbx_cg_openat(fd, "new", O_WRONLY | O_CREAT) < 0 && errno == EINVAL);
	CHECK(sbx_cg_openat(fd, "new", O_WRONLY) < 0 && errno == ENOENT);
	CHECK(sbx_cg_openat(fd, ".", O_RDONLY | O_DIRECTORY) >= 0);
	CHECK(sbx_cg_write(fd, "new", "1") < 0 && errno == ENOENT);
	close(fd);
	snprintf(link, sizeof link, "%s/l", dir);
	CHECK(unlink(link) == 0);
	CHECK(rmdir(dir) == 0);
}

TEST(cgroup_read_write)
{
	char dir[] = "/tmp/sbx-unit-cg.XXXXXX", path[64], buf[16];
	int fd, f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof path, "%s/v", dir);
	f = open(path, O_WRONLY | O_CREAT, 0600);
	CHECK(f >= 0);
	close(f);
	fd = open(dir, O_PATH | O_DIRECTORY);
	CHECK(sbx_cg_write(fd, "v", "max\n") == 0);
	CHECK(sbx_cg_read(fd, "v", buf, sizeof buf) == 3);
	CHECK_STR(buf, "max");
	CHECK(sbx_cg_write(fd, "v", "12345678") == 0);
	/* 8 bytes and the NUL: too big for 8, fits 9 (buf has room for both) */
	CHECK(sbx_cg_read(fd, "v", buf, 8) < 0 && errno == ENOSPC);
	CHECK(sbx_cg_read(fd, "v", buf, 9) == 8);
	close(fd);
	CHECK(unlink(path) == 0);
	CHECK(rmdir(dir) == 0);
}

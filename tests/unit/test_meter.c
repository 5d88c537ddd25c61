#include "unit.h"
#include "meter.h"
#include "meter_disk.h"
#include "meter_tree.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void write_file(const char *path, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	char b[1000] = { 0 };
	while (fd >= 0 && n) {
		size_t k = n < sizeof b ? n : sizeof b;
		if (write(fd, b, k) != (ssize_t)k)
			break;
		n -= k;
	}
	close(fd);
}

TEST(meter_du_sums_logical_sizes_without_following_symlinks)
{
	char d[] = "/tmp/sbx-meter-XXXXXX", p[256];
	uint64_t bytes = 0;
	int fd;

	CHECK(mkdtemp(d) != NULL);
	snprintf(p, sizeof p, "%s/a", d); write_file(p, 1000);
	snprintf(p, sizeof p, "%s/sub", d); mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/sub/b", d); write_file(p, 2345);
	/* A sparse file counts with its logical size, not its blocks. */
	snprintf(p, sizeof p, "%s/sub/sparse", d);
	fd = open(p, O_WRONLY | O_CREAT, 0644);
	CHECK(fd >= 0 && ftruncate(fd, 10 << 20) == 0);
	close(fd);
	/* Symlinks to big things count as nothing. */
	snprintf(p, sizeof p, "%s/link", d);
	CHECK(symlink("/proc/kcore", p) == 0);
	snprintf(p, sizeof p, "%s/dirlink", d);
	CHECK(symlink("/usr", p) == 0);
	CHECK(sbx_meter_du(d, &bytes) == 0);
	CHECK_U64(bytes, 1000 + 2345 + (10 << 20));
	snprintf(p, sizeof p, "rm -rf %s", d);
	CHECK(system(p) == 0);
}

TEST(meter_du_refuses_a_tree_deeper_than_the_limit)
{
	char d[] = "/tmp/sbx-meter-XXXXXX", cmd[256];
	uint64_t bytes = 0;
	int fd;

	CHECK(mkdtemp(d) != NULL);
	fd = open(d, O_RDONLY | O_DIRECTORY);
	for (int i = 0; i <= SBX_METER_DISK_MAXDEPTH + 1 && fd >= 0; i++) {
		int nfd;
		mkdirat(fd, "d", 0755);
		nfd = openat(fd, "d", O_RDONLY | O_DIRECTORY);
		close(fd);
		fd = nfd;
	}
	close(fd);
	errno = 0;
	CHECK(sbx_meter_du(d, &bytes) == -1);
	CHECK(errno == ELOOP);
	snprintf(cmd, sizeof cmd, "rm -rf %s", d);
	CHECK(system(cmd) == 0);
}

TEST(meter_du_of_a_symlink_fails)
{
	uint64_t bytes = 0;
	char d[] = "/tmp/sbx-meter-XXXXXX", p[256];

	CHECK(mkdtemp(d) != NULL);
	snprintf(p, sizeof p, "%s/l", d);
	CHECK(symlink("/usr", p) == 0);
	CHECK(sbx_meter_du(p, &bytes) == -1);
	unlink(p);
	rmdir(d);
}

TEST(meter_tree_finds_children_and_grandchildren)
{
	struct sbx_meter_tree t = { 0 };
	int p[2];
	pid_t kid, grand = 0;

	CHECK(pipe(p) == 0);
	kid = fork();
	if (kid == 0) {
		pid_t g = fork();
		if (g == 0) {
			pause();
			_exit(0);
		}
		(void)!write(p[1], &g, sizeof g);
		pause();
		_exit(0);
	}
	CHECK(read(p[0], &grand, sizeof grand) == sizeof grand);
	CHECK(sbx_meter_tree_scan(&t, getpid()) == 0);
	CHECK(t.n == 2);
	int seen = 0;
	for (size_t i = 0; i < t.n; i++) {
		if (t.v[i].pid == kid || t.v[i].pid == grand)
			seen++;
		CHECK(t.v[i].start > 0);
		/* rss may still read 0 for a process just forked: the kernel syncs its counters lazily */
	}
	CHECK(seen == 2);
	CHECK(sbx_meter_tree_kill(&t, SIGKILL) == 2);
	waitpid(kid, NULL, 0);
	sbx_meter_tree_free(&t);
	close(p[0]);
	close(p[1]);
}

TEST(meter_tree_keeps_a_member_whose_parent_exited)
{
	struct sbx_meter_tree t = { 0 };
	int p[2];
	pid_t kid, grand = 0;

	/* Without a subreaper the orphan goes to init; it stays tracked
	 * because it was seen before. */
	CHECK(pipe(p) == 0);
	kid = fork();
	if (kid == 0) {
		pid_t g = fork();
		if (g == 0) {
			pause();
			_exit(0);
		}
		(void)!write(p[1], &g, sizeof g);
		pause();
		_exit(0);
	}
	CHECK(read(p[0], &grand, sizeof grand) == sizeof grand);
	CHECK(sbx_meter_tree_scan(&t, getpid()) == 0);
	CHECK(t.n == 2);
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	CHECK(sbx_meter_tree_scan(&t, getpid()) == 0);
	CHECK(t.n == 1);
	CHECK(t.n == 1 && t.v[0].pid == grand);
	kill(grand, SIGKILL);
	sbx_meter_tree_free(&t);
	close(p[0]);
	close(p[1]);
}

TEST(meter_tree_cache_of_outsiders_never_hides_new_children)
{
	struct sbx_meter_tree t = { 0 };
	pid_t kid;

	/* The first scan reads every process and caches the outsiders. */
	CHECK(sbx_meter_tree_scan(&t, getpid()) == 0);
	CHECK(t.n == 0);
	CHECK(t.nforeign > 0);
	kid = fork();
	if (kid == 0) {
		pause();
		_exit(0);
	}
	CHECK(sbx_meter_tree_scan(&t, getpid()) == 0);
	CHECK(t.n == 1 && t.v[0].pid == kid);
	for (size_t i = 0; i < t.nforeign; i++)
		CHECK(t.foreign[i] != kid);
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	CHECK(sbx_meter_tree_scan(&t, getpid()) == 0);
	CHECK(t.n == 0);
	sbx_meter_tree_free(&t);
}

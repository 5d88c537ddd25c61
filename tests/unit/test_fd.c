#include "unit.h"
#include "fd.h"
#include "die.h"
#include "fdpass.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

TEST(fd_parse)
{
	int fd = -1, p[2];
	CHECK(pipe(p) == 0);
	char s[16];
	snprintf(s, sizeof s, "%d", p[0]);
	CHECK(!sbx_parse_fd(s, &fd)); CHECK(fd == p[0]);
	CHECK_STR(sbx_parse_fd("0", &fd), "0, 1 and 2 are stdio");
	CHECK_STR(sbx_parse_fd("2", &fd), "0, 1 and 2 are stdio");
	CHECK_STR(sbx_parse_fd("999", &fd), "not open");
	CHECK_STR(sbx_parse_fd("-1", &fd), "negative");
	CHECK_STR(sbx_parse_fd("", &fd), "empty");
	CHECK_STR(sbx_parse_fd("3x", &fd), "trailing garbage");
	CHECK_STR(sbx_parse_fd("+3", &fd), "sign not allowed");
	CHECK_STR(sbx_parse_fd("4294967299", &fd), "too large");
	CHECK_STR(sbx_parse_fd("99999999999999999999", &fd), "overflow");
	close(p[0]);
	close(p[1]);
}

static void die_fd(void *arg) { sbx_setprog("sbx-t"); sbx_opt_fd("--status-fd", arg); }

TEST(fd_option_dies_naming_the_option)
{
	char err[256];
	CHECK(unit_capture(die_fd, "77", err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: --status-fd: invalid fd '77': not open; open it for the tool "
		       "(in the shell: 77<FILE or 77>FILE, or a previous tool's --pass-fd 77)\n");
}

static void claim_twice(void *arg)
{
	const char *const *o = arg;
	sbx_setprog("sbx-t");
	sbx_opt_fd(o[0], o[2]);
	sbx_opt_fd(o[1], o[2]);
}

TEST(fd_each_fd_serves_one_option)
{
	char err[256], s[16];
	int p[2];
	CHECK(pipe(p) == 0);
	snprintf(s, sizeof s, "%d", p[1]);
	const char *other[] = { "--status-fd", "--ready-fd", s }, *same[] = { "--ro-fd", "--ro-fd", s };
	char want[128];
	CHECK(unit_capture(claim_twice, other, err, sizeof err) == 100);
	snprintf(want, sizeof want, "sbx-t: usage: --ready-fd: fd %s is also --status-fd\n", s);
	CHECK_STR(err, want);
	CHECK(unit_capture(claim_twice, same, err, sizeof err) == 100);
	snprintf(want, sizeof want, "sbx-t: usage: --ro-fd: fd %s given twice\n", s);
	CHECK_STR(err, want);
	close(p[0]);
	close(p[1]);
}

TEST(fd_pass_and_receive_with_one_too_many_closed)
{
	int sp[2], p[2], got[2], cut = 0;
	size_t n = 9;
	char b = 0;
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0);
	CHECK(pipe(p) == 0);
	CHECK(sbx_send_fds(sp[0], "L", 1, p, 2) == 1);
	CHECK(sbx_recv_fds(sp[1], &b, 1, 0, got, 1, &n, &cut) == 1);
	CHECK(b == 'L');
	CHECK(n == 1);
	CHECK(cut == 1);
	CHECK(fcntl(got[0], F_GETFD) == FD_CLOEXEC);
	close(got[0]);
	CHECK(sbx_send_fds(sp[0], "M", 1, p, 1) == 1);
	CHECK(sbx_recv_fds(sp[1], &b, 1, MSG_DONTWAIT, got, 2, &n, &cut) == 1);
	CHECK(n == 1 && cut == 0 && b == 'M');
	close(got[0]);
	CHECK(sbx_recv_fds(sp[1], &b, 1, MSG_DONTWAIT, got, 2, &n, &cut) == -1 && errno == EAGAIN && n == 0);
	close(sp[0]); close(sp[1]); close(p[0]); close(p[1]);
}

static void close_all(void *arg)
{
	int keep[] = { 9, 7, 7 };
	(void)arg;
	for (int i = 3; i < 12; i++)
		if (fcntl(i, F_GETFD) < 0)
			dup2(0, i);
	if (sbx_close_fds_except(keep, 3) < 0)
		_exit(2);
	for (int i = 3; i < 12; i++) {
		int open_ = fcntl(i, F_GETFD) >= 0;
		if (open_ != (i == 7 || i == 9))
			_exit(10 + i);
	}
	_exit(0);
}

TEST(fd_close_all_but_kept)
{
	char err[64];
	CHECK(unit_capture(close_all, NULL, err, sizeof err) == 0);
}

TEST(fd_cloexec_and_write_all)
{
	int p[2];
	char b[8] = { 0 };
	CHECK(pipe(p) == 0);
	CHECK(sbx_fd_cloexec(p[0], 1) == 0);
	CHECK(fcntl(p[0], F_GETFD) & FD_CLOEXEC);
	CHECK(sbx_fd_cloexec(p[0], 0) == 0);
	CHECK(!(fcntl(p[0], F_GETFD) & FD_CLOEXEC));
	CHECK(sbx_fd_cloexec(999, 1) == -1);
	CHECK(sbx_write_all(p[1], "abc", 3) == 0);
	sbx_ready_fd(p[1]);
	CHECK(read(p[0], b, sizeof b) == 4);
	CHECK_STR(b, "abc\n");
	CHECK(read(p[0], b, sizeof b) == 0); /* ready fd was closed */
	close(p[0]);
}

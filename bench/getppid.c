/* The per-call cost of a seccomp filter, for bench/sbx-ns.sh and
 * bench/sbx-ns-observe.sh: getppid [N] makes N (2,000,000) getppid calls
 * and prints the mean nanoseconds a call. getppid is answered by the kernel
 * at once and sbx-ns allows it, so what a filter adds is all there is
 * beside the call itself. Built with -DFLOOR it first installs the least
 * any filter can be, one instruction that allows all; with
 * -DCLOCK=CLOCK_THREAD_CPUTIME_ID it counts the loop's own CPU time, not
 * the wall time, which on a loaded machine is mostly waiting for a CPU. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#ifdef FLOOR
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#endif
#ifndef CLOCK
#define CLOCK CLOCK_MONOTONIC
#endif
int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000;
	struct timespec a, b;
#ifdef FLOOR
	/* The least any seccomp filter costs: one instruction that allows all. */
	struct sock_filter f[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	struct sock_fprog p = { 1, f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &p))
		return 111;
#endif
	clock_gettime(CLOCK, &a);
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	clock_gettime(CLOCK, &b);
	printf("%.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
	return 0;
}

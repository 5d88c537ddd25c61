/* Where a run's time goes: bench/sbx-ns-steps.sh builds a copy of sbx-ns
 * with -DSBX_MARKS, and each SBX_MARK("step") then writes one line
 * "sbx-mark NS CPU PID STEP" to fd 2 as the step ends: NS the time of
 * CLOCK_MONOTONIC (one clock for every process and namespace of a run),
 * CPU the CPU time the process has used since it was forked (what a step
 * cost it, whatever else the machine ran meanwhile), both in ns. A
 * process marks only while its fd 2 is the caller's stderr (pid 1 closes
 * its own after forking the command). Any other build compiles every mark
 * to nothing: the shipped tools neither read the clock nor write a byte
 * for them. */
#ifndef SBX_MARK_H
#define SBX_MARK_H

#ifdef SBX_MARKS
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static inline void sbx_mark(const char *step)
{
	struct timespec t, c;
	char line[128];
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c);
	n = snprintf(line, sizeof line, "sbx-mark %lld %lld %d %s\n",
		     (long long)t.tv_sec * 1000000000LL + t.tv_nsec,
		     (long long)c.tv_sec * 1000000000LL + c.tv_nsec, (int)getpid(), step);
	if (n > 0 && (size_t)n < sizeof line && write(2, line, (size_t)n) < 0)
		return;
}
#define SBX_MARK(step) sbx_mark(step)
#else
#define SBX_MARK(step) ((void)0)
#endif

#endif

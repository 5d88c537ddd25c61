#!/bin/bash
# Start-up and per-syscall cost of sbx-ns's tiers and mount interfaces, side by side in
# one run (ratios; absolute times on these shared machines mean little):
#   full/new      the full sandbox, new mount API (this kernel)
#   full/classic  the full sandbox with the new mount API hidden (as on Linux < 5.12)
#   landlock      the Landlock tier (user namespaces refused, a baseline allowing it)
# The last two run under a seccomp wrapper from tests/progs; "wrapper" is that wrapper
# running a static `true` alone, the share of their time that is not sbx-ns. Then the cost
# per call inside: getppid (the seccomp filter) and open+close in the workspace (a path
# walk Landlock checks), full sandbox against the tier, in the same run.
#
# With SBX_OLD_BIN (an older build's bin/), the tier of that build runs alongside
# ("old tier"): the cost of the tier's keeper and subreapers, as a ratio.
#
#   bench/sbx-ns-tier.sh [RUNS]   (default 200; as root; needs SBX_BIN, SBX_TESTBIN, musl-gcc, python3)
set -euo pipefail
. "$(dirname "$0")/common.bash"
runs=${1:-200}
case $runs in '' | *[!0-9]* | 0) echo "bench: usage: bench/sbx-ns-tier.sh [RUNS]" >&2; exit 100 ;; esac
: "${SBX_BIN:?set SBX_BIN to the directory of the sbx binaries}"
: "${SBX_TESTBIN:?set SBX_TESTBIN to the directory of the test programs}"
bench_need musl-gcc python3
[ "$(id -u)" = 0 ] || { echo "bench: run as root (the runs drop to uid 65534)" >&2; exit 111; }
bench_work ns-tier-bench
mkdir "$work/ws" "$work/conf"
chown 65534:65534 "$work/ws"
cat >"$work/loop.c" <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
/* loop N [PATH]: ns per getppid, or per open+close of PATH (a path walk
 * Landlock checks). */
int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++) {
		if (argc > 2) {
			int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				return 1;
			close(fd);
		} else {
			syscall(SYS_getppid);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
	return 0;
}
C
musl-gcc -static -O2 "$work/loop.c" -o "$work/bin/loop"
printf '{"sandbox":{"fallback":"landlock","denyWrite":[],"readableRoots":["%s"],"writableRoots":["%s"]}}\n' \
	"$work" "$work" >"$work/conf/base.json"
printf '{"sandbox":{"denyWrite":[],"readableRoots":["%s"]}}\n' "$work/bin" >"$work/conf/req.json"
chmod 0644 "$work/conf/base.json" "$work/conf/req.json"
chmod -R a+rX "$work/bin" "$work/conf"

# Every run gives deny-write up (the tier requires it: an empty denyWrite in the baseline
# and the request, here on fd 4 through a shell), so all three do the same work.
common=(--uid 65534 --gid 65534 --workspace "$work/ws" --policy-fd 4)
full=(sh -c 'exec "$@" 4<"$0"' "$work/conf/req.json" "$SBX_BIN/sbx-ns" "${common[@]}" --)
classic=(sh -c 'exec "$@" 4<"$0"' "$work/conf/req.json" "$SBX_TESTBIN/ns-nomountapi" "$SBX_BIN/sbx-ns" "${common[@]}" --)
tier=(sh -c 'exec "$@" 4<"$0"' "$work/conf/req.json" "$SBX_TESTBIN/ns-nouserns" "$SBX_BIN/sbx-ns" --baseline "$work/conf/base.json" "${common[@]}" --)
wrap=("$SBX_TESTBIN/ns-nouserns")
old=(true)
[ -z "${SBX_OLD_BIN:-}" ] ||
	old=(sh -c 'exec "$@" 4<"$0"' "$work/conf/req.json" "$SBX_TESTBIN/ns-nouserns" "$SBX_OLD_BIN/sbx-ns" --baseline "$work/conf/base.json" "${common[@]}" --)

# Interleaved, so that load drifting during the run hits all alike; medians.
for ((i = 0; i < 10; i++)); do
	"${full[@]}" "$work/bin/true"; "${classic[@]}" "$work/bin/true"
	"${tier[@]}" "$work/bin/true" 2>/dev/null; "${wrap[@]}" "$work/bin/true"
done
for ((i = 0; i < runs; i++)); do
	a=$(us); "${full[@]}" "$work/bin/true"
	b=$(us); "${classic[@]}" "$work/bin/true"
	c=$(us); "${tier[@]}" "$work/bin/true" 2>/dev/null
	d=$(us); "${wrap[@]}" "$work/bin/true"
	e=$(us); "${old[@]}" "$work/bin/true" 2>/dev/null
	f=$(us)
	echo "$((b - a)) $((c - b)) $((d - c)) $((e - d)) $((f - e))"
done >"$work/start.txt"
python3 - "$work/start.txt" "$runs" ${SBX_OLD_BIN:+old} <<'P'
import statistics, sys
rows = [tuple(map(int, l.split())) for l in open(sys.argv[1])]
m = [statistics.median(r[i] for r in rows) / 1000 for i in range(5)]
print("startup median of %s: full/new %.2f ms, full/classic %.2f ms (%.2fx), landlock tier %.2f ms (%.2fx), "
      "wrapper alone %.2f ms" % (sys.argv[2], m[0], m[1], m[1] / m[0], m[2], m[2] / m[0], m[3]))
if len(sys.argv) > 3:
    print("landlock tier start+end: this build %.2f ms, old build %.2f ms (this/old %.2fx)" % (m[2], m[4], m[2] / m[4]))
P

med() { printf '%s\n' "$@" | sort -n | sed -n 5p; }
# Per call: getppid (the seccomp filter alone) and open+close of a file in the workspace
# (a path walk: the filter and Landlock), median of 9 interleaved runs each.
echo data >"$work/ws/f"
chown 65534:65534 "$work/ws/f"
for call in getppid open; do
	args=(2000000) outs=() fulls=() tiers=()
	[ "$call" = open ] && args=(300000 "$work/ws/f")
	for _ in $(seq 9); do
		outs+=("$("$work/bin/loop" "${args[@]}")")
		fulls+=("$("${full[@]}" "$work/bin/loop" "${args[@]}")")
		tiers+=("$("${tier[@]}" "$work/bin/loop" "${args[@]}" 2>/dev/null)")
	done
	out=$(med "${outs[@]}") fullm=$(med "${fulls[@]}") tierm=$(med "${tiers[@]}")
	printf '%s: outside %s ns, full sandbox %s ns, landlock tier %s ns (tier/full %.2f; the tier also carries the wrapper'"'"'s filter)\n' \
		"$call" "$out" "$fullm" "$tierm" "$(python3 -c "print($tierm/$fullm)")"
done

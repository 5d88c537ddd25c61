#!/bin/bash
# The tree walk of `sbx-quota verify` (lib/walk.c + lib/quota/quota_tree.c: every entry opened
# relative to its parent, statx, FS_IOC_FSGETXATTR) on a 100k-entry tree, side by side
# with `xfs_quota -x -c 'project -c'`, which checks the same thing (every inode's project
# id) with nftw. On the host, on a loop-mounted XFS image: this kernel has no XFS quotas,
# but it stores project ids, and both walks only read them, so the host can time the walk
# alone (through the test program quota-walk; sbx-quota verify stops earlier here with
# "hard limits unsupported"). The test VM has no xfs_quota, so no comparison runs there.
# Cold runs (caches dropped) and warm runs, medians, and the ratio sbx / xfs_quota.
#
#   bench/sbx-quota.sh [ENTRIES [RUNS]]     (defaults 100000, 9; root: loop mount)
#
# Needs SBX_TESTBIN (default build/obj-static/testbin) with quota-walk and quota-attr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
entries=${1:-100000}
runs=${2:-9}
for v in "$entries" "$runs"; do
	case $v in '' | *[!0-9]* | 0) echo "bench: usage: bench/sbx-quota.sh [ENTRIES [RUNS]]" >&2; exit 100 ;; esac
done
[ "$(id -u)" = 0 ] || { echo "bench: fatal: needs root (loop mount)" >&2; exit 100; }
tb=${SBX_TESTBIN:-$root/build/obj-static/testbin}
for p in "$tb/quota-walk" "$tb/quota-attr"; do
	[ -x "$p" ] || { echo "bench: fatal: $p missing (make test-progs)" >&2; exit 111; }
done
command -v mkfs.xfs >/dev/null && command -v xfs_quota >/dev/null ||
	{ echo "bench: fatal: xfsprogs missing (apt-get install xfsprogs)" >&2; exit 111; }

work=$(mktemp -d /var/tmp/sbx-quota-bench.XXXXXX)
mnt=$work/mnt
cleanup() { umount "$mnt" 2>/dev/null || :; rm -rf "$work"; }
trap cleanup EXIT
truncate -s 2G "$work/xfs.img"
mkfs.xfs -q "$work/xfs.img"
mkdir "$mnt"
mount -o loop "$work/xfs.img" "$mnt"
ws=$mnt/ws
mkdir "$ws"
"$tb/quota-attr" "$ws" 4242 inherit

# 100 directories of (ENTRIES/100 - 1) files: ENTRIES entries, all inheriting the project.
per=$((entries / 100 - 1))
for d in $(seq 1 100); do
	mkdir "$ws/d$d"
	(cd "$ws/d$d" && seq -f f%g 1 "$per" | xargs touch)
done
n=$("$tb/quota-walk" "$ws")
echo "bench: tree of ${n% entries} entries on XFS (loop), $runs runs each"

# ms CMD...: wall time of one run of CMD in ms (caches dropped first when cold=1).
ms() {
	local t0 t1
	[ "$cold" = 1 ] && { sync; echo 3 >/proc/sys/vm/drop_caches; }
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000))
}
median() { sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}'; }

xq() { xfs_quota -x -c "project -c -p $ws 4242" "$mnt"; }
out=$(xq 2>&1)
grep -q "Checking project 4242" <<<"$out" || { echo "bench: fatal: xfs_quota: $out" >&2; exit 111; }

# The three commands alternate within each run, so that a noisy neighbour slows all three.
for mode in warm cold; do
	cold=0
	[ $mode = cold ] && cold=1
	[ $mode = warm ] && { "$tb/quota-walk" "$ws" >/dev/null; xq >/dev/null 2>&1; }
	: >"$work/s" && : >"$work/x" && : >"$work/f"
	for i in $(seq "$runs"); do
		ms "$tb/quota-walk" "$ws" >>"$work/s"
		ms xq >>"$work/x"
		ms find "$ws" -printf '' >>"$work/f"
	done
	s=$(median <"$work/s") x=$(median <"$work/x") f=$(median <"$work/f")
	echo "bench: $mode: sbx-quota walk ${s} ms, xfs_quota project -c ${x} ms, find (names only) ${f} ms"
	awk -v s="$s" -v x="$x" -v f="$f" -v m="$mode" 'BEGIN {
		printf "bench: %s: ratio sbx / xfs_quota = %.2f, sbx / find = %.2f\n", m, s / x, s / f }'
done

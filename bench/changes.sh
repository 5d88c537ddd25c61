#!/bin/bash
# sbx-changes on a change set of 10,000 changed files (a real overlay over a
# workspace of 10,000 files in 100 directories, every file rewritten, made by
# tests/changes.bash as the tests make theirs): `list` timed alone, and
# `apply` side by side with `rsync -a` of the same upper directory into a
# copy of the same workspace. apply checks every path against its base
# line, writes each file under a temporary name, syncs them (one syncfs),
# renames each into place, syncs again and discards the change set (it
# removes the 10,000 files of its upper directory); before that it judges
# deny-write on the workspace and, in a child with its own mount namespace,
# on the overlay of the change set over it. rsync -a neither checks nor
# syncs nor removes anything (it reads a copy of the upper directory, since
# apply consumes the change set); the same job as apply's is rsync -a and
# then rm -rf of that copy, timed too. Medians of RUNS rounds (warm
# caches), interleaved, and the ratios sbx / rsync.
#
#   bench/changes.sh [FILES [RUNS [DIR]]]  (defaults 10000, 5, /var/tmp: the file system
#                                           it runs on; root: the overlay's namespace)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
files=${1:-10000}
runs=${2:-5}
dir=${3:-/var/tmp}
for v in "$files" "$runs"; do
	case $v in '' | *[!0-9]* | 0) echo "bench: usage: bench/changes.sh [FILES [RUNS [DIR]]]" >&2; exit 100 ;; esac
done
case $dir in /*) ;; *) echo "bench: usage: DIR: not absolute" >&2; exit 100 ;; esac
bin=${SBX_BIN:-$root/bin}
command -v rsync >/dev/null || { echo "bench: fatal: rsync missing (apt-get install rsync)" >&2; exit 111; }
[ -x "$bin/sbx-changes" ] || { echo "bench: fatal: $bin/sbx-changes missing (make)" >&2; exit 111; }

work=$(mktemp -d "$dir/sbx-changes-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
BATS_TEST_TMPDIR=$work
. "$root/tests/changes.bash"

mkdir "$work/ws0"
(cd "$work/ws0" && for d in $(seq 100); do mkdir "d$d"; done &&
	seq "$files" | awk '{ printf "d%d/f%d\n", $1 % 100 + 1, $1 }' | xargs touch)
now() { date +%s%N; }
TIMEFORMAT='%U %S'
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

for i in $(seq "$runs"); do
	cp -a "$work/ws0" "$work/ws"
	cp -a "$work/ws0" "$work/wsr"
	mkcs "$work/ws" "$work/cs" 'for f in d*/f*; do echo changed >"$f"; done'
	# rsync's own copy of the upper directory: apply consumes the change set
	cp -a "$work/cs/upper" "$work/up"
	sync
	t0=$(now); "$bin/sbx-changes" list --workspace "$work/ws" "$work/cs" >"$work/list"; t1=$(now)
	echo $(((t1 - t0) / 1000)) >>"$work/t.list"
	[ "$(wc -l <"$work/list")" = "$files" ] || { echo "bench: fatal: list gave $(wc -l <"$work/list") lines" >&2; exit 1; }
	if [ $((i % 2)) = 1 ]; then order="rsync apply"; else order="apply rsync"; fi
	for what in $order; do
		t0=$(now)
		# wall time, and the CPU time (user + system) of every process it ran
		if [ "$what" = rsync ]; then
			{ time rsync -a "$work/up/" "$work/wsr/"; } 2>>"$work/c.$what"
			t1=$(now)
			echo $(((t1 - t0) / 1000)) >>"$work/t.$what"
			t0=$(now)
			{ time rm -rf "$work/up"; } 2>>"$work/c.rm"
			t1=$(now)
			echo $(((t1 - t0) / 1000)) >>"$work/t.rm"
			continue
		else
			{ time "$bin/sbx-changes" apply --workspace "$work/ws" "$work/cs" >/dev/null; } 2>>"$work/c.$what"
		fi
		t1=$(now)
		echo $(((t1 - t0) / 1000)) >>"$work/t.$what"
	done
	[ "$(cat "$work/ws/d1/f100")" = changed ] && [ ! -e "$work/cs" ] || { echo "bench: fatal: apply did not apply" >&2; exit 1; }
	rm -rf "$work/ws" "$work/wsr" "$work/cs" "$work/up"
done
ca=$(awk '{ print ($1 + $2) * 1000 }' "$work/c.apply" | median)
cr=$(awk '{ print ($1 + $2) * 1000 }' "$work/c.rsync" | median)
cm=$(awk '{ print ($1 + $2) * 1000 }' "$work/c.rm" | median)
m=$(median <"$work/t.rm")
l=$(median <"$work/t.list")
a=$(median <"$work/t.apply")
r=$(median <"$work/t.rsync")
printf 'list of %d paths:            %8.1f ms (target < 1000 ms)\n' "$files" "$(echo "$l / 1000" | bc -l)"
printf 'apply of %d changed files:   %8.1f ms\n' "$files" "$(echo "$a / 1000" | bc -l)"
printf 'rsync -a of the same upper:      %8.1f ms\n' "$(echo "$r / 1000" | bc -l)"
printf 'apply / rsync -a:                %8.2fx wall (target <= 1.5x)\n' "$(echo "$a / $r" | bc -l)"
printf 'CPU, user + system:  apply %.0f ms, rsync -a %.0f ms (all its processes): %.2fx\n' "$ca" "$cr" "$(echo "$ca / $cr" | bc -l)"
printf 'rm -rf of the upper copy:        %8.1f ms wall, %.0f ms CPU\n' "$(echo "$m / 1000" | bc -l)" "$cm"
printf 'apply / (rsync -a + rm -rf), the same job: %.2fx wall, %.2fx CPU\n' \
	"$(echo "$a / ($r + $m)" | bc -l)" "$(echo "$ca / ($cr + $cm)" | bc -l)"

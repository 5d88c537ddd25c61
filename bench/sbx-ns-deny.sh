#!/bin/bash
# Start-up cost of sbx-ns's deny-write handling on a large git checkout,
# beside bubblewrap's start-up, in one run (ratios; absolute times on these
# shared machines mean little).
#
#   bench/sbx-ns-deny.sh [RUNS] [FILES]   (default 200 runs, 50000 files;
#                                          needs SBX_BIN, bwrap, git, musl-gcc, python3;
#                                          SBX_OLD_BIN: another build to compare, e.g. main's bin/)
#
# Workspaces: a git checkout of FILES files in 500 directories (committed,
# so .git/objects holds as many loose objects again; with git init's
# .git/hooks samples, a .git/config, an .env) and the same checkout with 10
# files. Interleaved runs of a static `true`, as root dropping to nobody:
#   sbx big      sbx-ns with the default deny-write list on the big checkout
#   sbx big min  the same with --deny-write naming one missing file: no git
#                rule, the deny-write handling reduced to one failed lookup
#   sbx small    the default list on the small checkout
#   sbx big cold the same with the tree the last run kept removed first:
#                a first run, or one after a day, reads every directory
#   old big      SBX_OLD_BIN's sbx-ns with its defaults on the big checkout
#   bwrap big    bwrap --unshare-all with the same binds on the big checkout
# The deny-write cost is "sbx big" minus "sbx big min": git's rule walks
# the whole tree at the start and again at the end, reading again only the
# directories whose ctime changed (a stat each for the others), so "sbx
# big" minus "sbx small" is what the tree's size adds.
set -euo pipefail
. "$(dirname "$0")/checkout.bash"
. "$(dirname "$0")/common.bash"
runs=${1:-200}
files=${2:-50000}
case $runs$files in *[!0-9]* | '') echo "bench: usage: bench/sbx-ns-deny.sh [RUNS] [FILES]" >&2; exit 100 ;; esac
[ "$runs" -gt 0 ] && [ "$files" -ge 10 ] || { echo "bench: usage: bench/sbx-ns-deny.sh [RUNS] [FILES]" >&2; exit 100; }
: "${SBX_BIN:?set SBX_BIN to the directory of the sbx binaries}"
bench_need bwrap git musl-gcc python3
[ "$(id -u)" = 0 ] || { echo "bench: run as root (the command runs as nobody)" >&2; exit 100; }
bench_work ns-deny-bench

checkout() {
	mkdir "$1"
	echo "KEY=1" >"$1/.env"
	bench_checkout "$1" "$2" 500
	chown -R nobody:nogroup "$1"
}
echo "bench: making a git checkout of $files files..." >&2
checkout "$work/big" "$files"
checkout "$work/small" 10
chmod -R a+rX "$work/bin"

ids="--uid $(id -u nobody) --gid $(id -g nobody)"
old=${SBX_OLD_BIN:-$SBX_BIN}
sbx() { "$SBX_BIN/sbx-ns" $ids --workspace "$1" --ro "$work/bin" "${@:2}" -- "$work/bin/true"; }
sbxold() { "$old/sbx-ns" $ids --workspace "$1" --ro "$work/bin" "${@:2}" -- "$work/bin/true"; }
bw() { bench_bwrap "$1" --uid "$(id -u nobody)" --gid "$(id -g nobody)" "$work/bin/true"; }

tree=/run/sbx-ns/tree-$(stat -c %D "$work/big")-$(printf %x "$(stat -c %i "$work/big")")
# Directories changed less than 2 s before a walk are read again: let the
# new checkout age first.
sleep 3
for ((i = 0; i < 20; i++)); do sbx "$work/big"; bw "$work/big"; done
: >"$work/times"
for ((i = 0; i < runs; i++)); do
	a=$(us); sbx "$work/big"
	b=$(us); sbx "$work/big" --deny-write .sbx-bench-missing
	c=$(us); sbx "$work/small"
	d=$(us); sbxold "$work/big"
	e=$(us); bw "$work/big"
	f=$(us); rm -f "$tree"
	g=$(us); sbx "$work/big"
	h=$(us)
	echo "$((b - a)) $((c - b)) $((d - c)) $((e - d)) $((f - e)) $((h - g))" >>"$work/times"
done
# Nothing of sbx's may be left in the checkout.
st=$(git -c safe.directory='*' -C "$work/big" status --porcelain --ignored)
if [ -n "$st" ]; then
	echo "bench: the checkout changed" >&2
	exit 1
fi
entries=$(find "$work/big" -mindepth 1 | wc -l)
python3 - "$work/times" "$files" "$entries" "$old" <<'PY'
import statistics, sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1])]
med = [statistics.median(c) / 1000 for c in zip(*rows)]
big, mini, small, oldbig, bw, cold = med
print(f"sbx-ns start-up, median of {len(rows)} interleaved runs, checkout of {sys.argv[2]} files "
      f"({sys.argv[3]} entries with .git):")
print(f"  sbx-ns, default deny-write list, big checkout   {big:7.2f} ms")
print(f"  sbx-ns, one missing literal, big checkout       {mini:7.2f} ms")
print(f"  sbx-ns, default deny-write list, 10 files       {small:7.2f} ms")
print(f"  sbx-ns, defaults, big checkout, no kept tree     {cold:7.2f} ms")
print(f"  {sys.argv[4]}/sbx-ns, defaults, big checkout")
print(f"                                                  {oldbig:7.2f} ms")
print(f"  bwrap --unshare-all, big checkout               {bw:7.2f} ms")
print(f"  deny-write defaults cost {big - mini:+.2f} ms (two walks); the big tree adds {big - small:+.2f} ms")
print(f"  against the other build: {big - oldbig:+.2f} ms ({big / oldbig:.2f}x)")
print(f"  ratio sbx-ns / bwrap: {big / bw:.2f}x")
PY

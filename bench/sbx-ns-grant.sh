#!/bin/bash
# Start-up cost of a plan grant in sbx-ns: hashing the program argv[0]
# resolves to, building and hashing the plan document, verifying the grant
# (and recording a nonce), beside the same run without a grant, in one run
# (ratios; absolute times on these shared machines mean little).
#
#   bench/sbx-ns-grant.sh [RUNS]   (default 100; needs SBX_BIN, SBX_TESTBIN, musl-gcc, python3; root)
#
# Programs: a static `true` (a few kB) and python3 (about 6.8 MB, run as
# `python3 -S -c 0`: the interpreter's own start is in every column).
# Interleaved, as root dropping to nobody:
#   plain      sbx-ns without a grant
#   grant      sbx-ns with a plan grant for the same run
#   single     the same with a single-use grant (one fresh grant per run,
#              made beforehand) and --grant-nonce-dir
#   backlog    the same, the nonce directory holding 100,000 records of
#              grants that expired three days ago (tests/progs/grant-nonces):
#              each run also removes 16 of them
set -euo pipefail
. "$(dirname "$0")/common.bash"
runs=${1:-100}
case $runs in *[!0-9]* | '' | 0) echo "bench: usage: bench/sbx-ns-grant.sh [RUNS]" >&2; exit 100 ;; esac
: "${SBX_BIN:?set SBX_BIN to the directory of the sbx binaries}"
: "${SBX_TESTBIN:?set SBX_TESTBIN to the directory of the test programs}"
bench_need musl-gcc python3
[ "$(id -u)" = 0 ] || { echo "bench: run as root (the command runs as nobody)" >&2; exit 100; }
bench_work ns-grant-bench
mkdir "$work/ws" "$work/nonces" "$work/old" "$work/g"
chmod 0700 "$work/nonces" "$work/old"
echo "bench: 100,000 expired records for the backlog column..." >&2
"$SBX_TESTBIN/grant-nonces" "$work/old" $(($(date +%s) - 3 * 86400)) 100000
chmod -R a+rX "$work/bin"
chown nobody:nogroup "$work/ws"
head -c 32 /dev/urandom >"$work/key"
chmod 0600 "$work/key"
# The system python (a shim on PATH would lie outside the sandbox).
py=$(readlink -f /usr/bin/python3)
[ -x "$py" ] || { echo "bench: /usr/bin/python3 is missing" >&2; exit 111; }

ids=(--uid "$(id -u nobody)" --gid "$(id -g nobody)")
sbx() { "$SBX_BIN/sbx-ns" "${ids[@]}" --workspace "$work/ws" --ro "$work/bin" --net none "$@" </dev/null; }

# name: the command's argv
declare -A cmd=([true]="$work/bin/true" [python3]="$py -S -c 0")
for name in true python3; do
	# shellcheck disable=SC2086
	sbx --dry-run -- ${cmd[$name]} >"$work/$name.plan"
	"$SBX_BIN/sbx-check" grant --key "$work/key" --plan "$work/$name.plan" >"$work/$name.grant"
	for ((i = 0; i < 2 * runs; i++)); do
		"$SBX_BIN/sbx-check" grant --key "$work/key" --plan "$work/$name.plan" --single-use \
			>"$work/g/$name.$i"
	done
done
echo "bench: $runs interleaved runs of each case..." >&2
for name in true python3; do
	# shellcheck disable=SC2086
	for ((i = 0; i < 10; i++)); do
		sbx -- ${cmd[$name]}
		sbx --grant-fd 3 --grant-key "$work/key" -- ${cmd[$name]} 3<"$work/$name.grant"
	done
	: >"$work/$name.times"
	for ((i = 0; i < runs; i++)); do
		# shellcheck disable=SC2086
		{
			a=$(us); sbx -- ${cmd[$name]}
			b=$(us); sbx --grant-fd 3 --grant-key "$work/key" -- ${cmd[$name]} 3<"$work/$name.grant"
			c=$(us); sbx --grant-fd 3 --grant-key "$work/key" --grant-nonce-dir "$work/nonces" \
				-- ${cmd[$name]} 3<"$work/g/$name.$i"
			d=$(us); sbx --grant-fd 3 --grant-key "$work/key" --grant-nonce-dir "$work/old" \
				-- ${cmd[$name]} 3<"$work/g/$name.$((runs + i))"
			e=$(us)
		}
		echo "$((b - a)) $((c - b)) $((d - c)) $((e - d))" >>"$work/$name.times"
	done
done
[ "$(ls "$work/nonces" | wc -l)" = $((2 * runs)) ] || { echo "bench: a single-use run did not record its nonce" >&2; exit 1; }
left=$(find "$work/old" -maxdepth 1 -type f | wc -l)
gone=$((2 * runs * 16 < 100000 ? 2 * runs * 16 : 100000))
[ "$left" = $((100000 - gone + 2 * runs)) ] || { echo "bench: the backlog runs left $left records" >&2; exit 1; }
python3 - "$work" "$(stat -c %s "$work/bin/true")" "$(stat -c %s "$py")" <<'PY'
import statistics, sys
work, tsz, psz = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
print("sbx-ns start-up with a plan grant, median of interleaved runs (ms):")
print(f"  {'program':<28} {'plain':>8} {'grant':>8} {'single':>8} {'backlog':>8} {'grant/plain':>12} {'single/plain':>13} {'backlog/single':>15}")
for name, size in (("true", tsz), ("python3", psz)):
    rows = [list(map(int, l.split())) for l in open(f"{work}/{name}.times")]
    plain, grant, single, backlog = (statistics.median(c) / 1000 for c in zip(*rows))
    label = f"{name} ({size / 1e6:.2f} MB)"
    print(f"  {label:<28} {plain:8.2f} {grant:8.2f} {single:8.2f} {backlog:8.2f} {grant / plain:11.2f}x "
          f"{single / plain:12.2f}x {backlog / single:14.2f}x")
    print(f"  {'':<28} grant adds {grant - plain:+.2f} ms, single use {single - plain:+.2f} ms, "
          f"removing 16 of a backlog {backlog - single:+.2f} ms ({len(rows)} runs)")
PY

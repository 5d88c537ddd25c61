#!/bin/bash
# What denial reports cost in sbx-ns: the same runs with the supervisor
# (the default) and with --quiet-denials (plain EPERM), interleaved in one
# run; medians and ratios, since absolute numbers on shared machines mean
# little.
#
#   bench/sbx-ns-denials.sh   (needs SBX_BIN and SBX_TESTBIN with ns-deny-loop)
#
# 1. Start: SBX_BENCH_RUNS (default 100) runs of `true` (no denial at all:
#    what the listener hand-over adds to every start).
# 2. Loop: ns-deny-loop with SBX_BENCH_CALLS (default 200000) mount(2)
#    calls, every one denied (a round trip to the supervisor each, against
#    an EPERM from the filter).
# Each is run SBX_BENCH_ROUNDS (default 5) times per side.
set -euo pipefail
: "${SBX_BIN:?set SBX_BIN to the directory of the sbx binaries}"
: "${SBX_TESTBIN:?set SBX_TESTBIN to the directory of the test programs}"
runs=${SBX_BENCH_RUNS:-100}
calls=${SBX_BENCH_CALLS:-200000}
rounds=${SBX_BENCH_ROUNDS:-5}
for v in "$runs" "$calls" "$rounds"; do
	case $v in '' | *[!0-9]* | 0) echo "bench: usage: SBX_BENCH_RUNS, SBX_BENCH_CALLS and SBX_BENCH_ROUNDS are positive integers" >&2; exit 100 ;; esac
done
W=$(mktemp -d /var/tmp/sbx-ns-deny-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
chmod 0755 "$W"
mkdir "$W/ws" "$W/bin"
cp "$SBX_TESTBIN/ns-deny-loop" "$W/bin/"
chmod -R a+rX "$W"
ns=("$SBX_BIN/sbx-ns")
if [ "$(id -u)" = 0 ]; then
	ns+=(--uid 65534 --gid 65534)
	chown 65534:65534 "$W/ws"
fi
ns+=(--workspace "$W/ws" --ro "$W/bin")

now() { date +%s%N; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

start_ms() { # extra args...
	local t0 t1
	t0=$(now)
	for ((i = 0; i < runs; i++)); do "${ns[@]}" "$@" -- true; done
	t1=$(now)
	echo $(( (t1 - t0) / runs / 1000 ))
}
loop_ms() {
	local t0 t1
	t0=$(now)
	"${ns[@]}" "$@" -- "$W/bin/ns-deny-loop" "$calls" >/dev/null
	t1=$(now)
	echo $(( (t1 - t0) / 1000000 ))
}

: >"$W/s.rep"; : >"$W/s.quiet"; : >"$W/l.rep"; : >"$W/l.quiet"
for ((r = 0; r < rounds; r++)); do
	start_ms >>"$W/s.rep"
	start_ms --quiet-denials >>"$W/s.quiet"
	loop_ms >>"$W/l.rep"
	loop_ms --quiet-denials >>"$W/l.quiet"
done
sr=$(median <"$W/s.rep"); sq=$(median <"$W/s.quiet")
lr=$(median <"$W/l.rep"); lq=$(median <"$W/l.quiet")
printf 'start (true, %d runs):     reported %6d us  quiet %6d us  ratio %.2f\n' "$runs" "$sr" "$sq" "$(echo "$sr / $sq" | bc -l)"
printf 'denied loop (%d calls): reported %6d ms  quiet %6d ms  ratio %.1f  (%.2f us per reported call)\n' \
	"$calls" "$lr" "$lq" "$(echo "$lr / ($lq + 0.5)" | bc -l)" "$(echo "$lr * 1000 / $calls" | bc -l)"

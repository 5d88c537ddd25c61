#!/bin/bash
# What observing a run (sbx-ns --observe) and carrying a shadow policy
# (--shadow-policy) cost, against the same run without, in one run
# (ratios; absolute times on these shared machines mean little).
#
#   bench/sbx-ns-observe.sh [RUNS]   (default 200; as root; needs SBX_BIN,
#                                     musl-gcc, python3 and setpriv; the
#                                     runs are sbxtest's, nobody's where
#                                     there is no such user)
#
# Every run is under the same baseline, one like tests/72-policy-narrow's
# quick jobs' (no network, the workspace readable and writable, the
# static true's directory readable, memory_mb 2048), with --workspace W
# --ro BIN --net none. The candidate of (c) is what sbx-check policy
# narrow derives from one observed run of the same command: the roots
# narrowed to those two, the network to none.
#   start     a static true, RUNS interleaved rounds of bench/steps.c
#             (no shell between the runs; medians, and the median of the
#             rounds' own ratios, which the load drifting between rounds
#             moves less):
#               (a) the baseline alone
#               (b) (a) with --observe to a new file each round; every
#                   record is checked to be whole (its end line, code 0)
#               (c) (a) with --shadow-policy of the narrowed candidate;
#                   every run's note is checked to say nothing would be
#                   refused
#   getppid   CPU ns per call of a loop of 2,000,000 getppid calls
#             (bench/getppid.c, its own CPU time: on a loaded machine the
#             wall time is mostly waiting) inside (a), (b) and (c), 15
#             interleaved rounds, medians: --observe puts five BPF
#             instructions before the filter (execve and execveat to the
#             supervisor); a call the filter allows whatever its
#             arguments is taken from the kernel's seccomp cache without
#             running any of them
# The targets: (b) and (c) at most 1.05x (a); getppid under --observe
# the same as without.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$root/bench/common.bash"
bench_steps_start sbx-ns-observe.sh ns-observe-bench "${1:-200}"
musl-gcc -static -O2 -DCLOCK=CLOCK_THREAD_CPUTIME_ID "$root/bench/getppid.c" -o "$work/bin/loop"
# The records lie outside the workspace, the only writable root.
mkdir "$work/ws" "$work/obs" "$work/out" "$work/pol"
chown "$user:$ugid" "$work/ws" "$work/obs" "$work/out"
chmod -R a+rX "$work/bin"
S=$SBX_BIN/sbx-ns
printf '{"sandbox":{"network":{"mode":"none"},"readableRoots":[".","%s"],"writableRoots":["."]},"resources":{"memory_mb":2048}}\n' \
	"$work/bin" >"$work/pol/base.json"
opts=(--baseline "$work/pol/base.json" --workspace "$work/ws" --ro "$work/bin" --net none)

# The candidate: one observed run, narrowed.
as "$S" "${opts[@]}" --observe "$work/obs/first" -- "$work/bin/true" </dev/null
as "$SBX_BIN/sbx-check" policy narrow --baseline "$work/pol/base.json" "$work/obs/first" \
	>"$work/pol/narrow.json" 2>"$work/narrow.note"
chmod 0644 "$work/pol/"*
note="sbx-ns: note: shadow policy $work/pol/narrow.json: nothing would be refused"

uptime >"$work/load"
echo "bench: start, $runs interleaved rounds..." >&2
# cases P: the three runs, (b)'s records named P and the round's number.
cases() {
	cases=(:: "$S" "${opts[@]}" -- "$work/bin/true"
		:: "$S" "${opts[@]}" --observe "$work/obs/$1{}" -- "$work/bin/true"
		:: "$S" "${opts[@]}" --shadow-policy "$work/pol/narrow.json" -- "$work/bin/true")
}
cases w
as "$work/bin/steps" 10 "$work/out/warm" "${cases[@]}" </dev/null
cases r
as "$work/bin/steps" "$runs" "$work/out/start" "${cases[@]}" </dev/null
# What was measured is what it says: every record whole, every shadow
# note "nothing", and nothing else on any run's stderr.
whole=$(for f in "$work/obs/r"*; do tail -n 1 "$f"; done | grep -c '^{"event":"end","code":0,' || :)
[ "$whole" = "$runs" ] || { echo "bench: $whole of $runs records of (b) have an end line with code 0" >&2; exit 1; }
other=$(grep -v -e '^sbx-mark ' -e "^$note\$" "$work/out/start" || :)
[ -z "$other" ] || { echo "bench: a run wrote to stderr: $other" >&2; exit 1; }
notes=$(grep -c -x -F "$note" "$work/out/start" || :)
[ "$notes" = "$runs" ] || { echo "bench: $notes of $runs runs of (c) said nothing would be refused" >&2; exit 1; }

echo "bench: getppid, 15 interleaved rounds..." >&2
for i in $(seq 15); do
	as "$S" "${opts[@]}" -- "$work/bin/loop" >>"$work/out/call-a"
	as "$S" "${opts[@]}" --observe "$work/obs/loop$i" -- "$work/bin/loop" >>"$work/out/call-b"
	as "$S" "${opts[@]}" --shadow-policy "$work/pol/narrow.json" -- "$work/bin/loop" \
		>>"$work/out/call-c" 2>/dev/null
done </dev/null

python3 - "$work/out" "$runs" "$(cat "$work/load")" "$(uptime)" "$(cat "$work/narrow.note")" <<'PY'
import statistics as st, sys
out, runs, load0, load1, nnote = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
load = lambda u: u.split("load average:")[1].strip()

# the runner's marks: spawn K ... waited K, a round being one of each K
t = {0: [], 1: [], 2: []}
for line in open(f"{out}/start"):
    f = line.split()
    if len(f) == 6 and f[0] == "sbx-mark":
        if f[4] == "spawn":
            start = int(f[1])
        else:
            t[int(f[5])].append((int(f[1]) - start) / 1e6)
a, b, c = (st.median(t[k]) for k in range(3))
q = lambda v: st.quantiles(v, n=4)
own = lambda k: st.median(x / y for x, y in zip(t[k], t[0]))
call = {k: st.median(float(l) for l in open(f"{out}/call-{k}")) for k in "abc"}

print(f"load average before: {load(load0)}; after: {load(load1)}")
print(f"candidate: {nnote}")
print(f"start of a static true, medians of {runs} interleaved rounds (quartiles), ms:")
for name, k, v in (("(a) the baseline alone", 0, a), ("(b) with --observe", 1, b), ("(c) with --shadow-policy", 2, c)):
    lo, _, hi = q(t[k])
    print(f"  {name:<26} {v:7.2f}  ({lo:.2f}-{hi:.2f})")
print(f"  b/a {b / a:.3f} (the rounds' own: {own(1):.3f}), c/a {c / a:.3f} (the rounds' own: {own(2):.3f}); target <= 1.05")
print(f"getppid, CPU per call, medians of 15 rounds: (a) {call['a']:.1f} ns, (b) {call['b']:.1f} ns, (c) {call['c']:.1f} ns: "
      f"b/a {call['b'] / call['a']:.3f}, c/a {call['c'] / call['a']:.3f}; target: b/a 1")
PY

#!/bin/bash
# Where the time of a one-shot sbx-ns run and of a joined command goes,
# step by step, in microseconds (medians of interleaved runs).
#
#   bench/sbx-ns-steps.sh [RUNS]   (default 200; as root; needs SBX_BIN, musl-gcc,
#                                   python3 and setpriv; the runs are sbxtest's,
#                                   nobody's where there is no such user)
#
# This machine's perf has no hardware counters (perf stat -e instructions
# says "not supported" under this hypervisor), and perf trace costs tens
# of microseconds per traced system call, more than most steps take: the
# steps are timed from inside instead. The bench builds a copy of sbx-ns
# from this tree with -DSBX_MARKS (lib/mark.h: each step's end writes
# "sbx-mark NS PID STEP" with CLOCK_MONOTONIC to stderr; every other build
# compiles the marks to nothing) under a directory of its own, and runs it
# unprivileged with bench/steps.c, which marks the fork
# before the run and the return of waitpid after it:
#   one-shot  sbx-ns --workspace W --ro BIN --net none -- BIN/true
#   join      sbx-ns --join SOCK -- BIN/true into a living sandbox of the
#             same options started once (--serve SOCK); its server's marks
#             (s-*) come from the server's stderr, merged by time
# The marks of all processes of a run, sorted by time, make one timeline;
# each step is the time from the mark before it to its own mark, so the
# steps add up to the run. Beside them, interleaved in the same runner,
# SBX_BIN's own sbx-ns (no marks) gives the total the marks cost nothing
# against, and a static true forked and executed by the same runner gives
# the host's floor.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$root/bench/common.bash"
bench_steps_start sbx-ns-steps.sh ns-steps-bench "${1:-200}"
echo "bench: building sbx-ns with -DSBX_MARKS..." >&2
CFLAGS="-O2 -DSBX_MARKS" make -s -C "$root" B="$work/marks" "$work/marks/bin/sbx-ns" >&2
mkdir "$work/ws" "$work/sock" "$work/out"
chown "$user:$ugid" "$work/ws" "$work/sock" "$work/out"
chmod -R a+rX "$work/bin" "$work/marks/bin"
opts=(--workspace "$work/ws" --ro "$work/bin" --net none)
M=$work/marks/bin/sbx-ns

mkfifo "$work/ready"
chown "$user:$ugid" "$work/ready"
as "$M" "${opts[@]}" --serve "$work/sock/s" --ready-fd 3 3>"$work/ready" </dev/null \
	2>"$work/out/serve.marks" >/dev/null &
spid=$!
trap 'as "$M" --join "$work/sock/s" --stop >/dev/null 2>&1 || kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; rm -rf "$work"' EXIT
read -r -t 30 _ <"$work/ready" || { echo "bench: sbx-ns --serve did not become ready" >&2; exit 1; }

echo "bench: $runs interleaved rounds..." >&2
as "$work/bin/steps" 10 "$work/out/warm" :: "$M" "${opts[@]}" -- "$work/bin/true" \
	:: "$M" --join "$work/sock/s" -- "$work/bin/true" </dev/null
: >"$work/out/serve.marks"
as "$work/bin/steps" "$runs" "$work/out/run.marks" \
	:: "$M" "${opts[@]}" -- "$work/bin/true" \
	:: "$M" --join "$work/sock/s" -- "$work/bin/true" \
	:: "$SBX_BIN/sbx-ns" "${opts[@]}" -- "$work/bin/true" \
	:: "$SBX_BIN/sbx-ns" --join "$work/sock/s" -- "$work/bin/true" \
	:: "$work/bin/true" </dev/null

python3 - "$work/out/run.marks" "$work/out/serve.marks" "$runs" "$(uptime)" <<'PY'
import statistics, sys
runs_file, serve_file, nruns, up = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

def read(path):
    out = []
    for line in open(path):
        f = line.split()
        if len(f) >= 5 and f[0] == "sbx-mark":
            out.append((int(f[1]), int(f[2]), f[3], f[4], f[5] if len(f) > 5 else None))
    return out

main, serve = read(runs_file), read(serve_file)
server = {m[2] for m in serve}
# One run: from its spawn to its waited, with the server's marks between.
runs = {k: [] for k in range(5)}
i = 0
while i < len(main):
    if main[i][3] != "spawn":
        i += 1
        continue
    t0, k = main[i][0], int(main[i][4])
    j = i + 1
    while main[j][3] != "waited":
        j += 1
    end = main[j][0]
    marks = sorted(main[i + 1:j] + [m for m in serve if t0 < m[0] < end])
    runs[k].append((t0, marks, end))
    i = j + 1

# Each step: the wall time since the mark before it (any process), and
# the CPU time its own process used since its own mark before (a process
# new in this run counts from its fork).
cpu_last = {}
def steps(rows):
    names, wall, cpu = [], {}, {}
    for t0, marks, end in rows:
        for p in list(cpu_last):
            if p not in server:
                del cpu_last[p]
        prev, seen = t0, {}
        for t, c, pid, s, _ in marks + [(end, None, None, "waited", None)]:
            seen[s] = seen.get(s, 0) + 1
            key = s if seen[s] == 1 else f"{s}#{seen[s]}"
            if key not in wall:
                wall[key], cpu[key] = [], []
                names.append(key)
            wall[key].append((t - prev) / 1000)
            if c is not None:
                cpu[key].append((c - cpu_last.get(pid, 0)) / 1000)
                cpu_last[pid] = c
            prev = t
    return names, wall, cpu

def total(rows):
    return statistics.median((end - t0) / 1000 for t0, _, end in rows)

what = {0: "one-shot", 1: "join"}
plain = {0: total(runs[2]), 1: total(runs[3])}
host = total(runs[4])
print(f"sbx-ns steps, unprivileged, medians of {nruns} interleaved rounds (us); {up.strip()}")
for k in (0, 1):
    names, wall, cpu = steps(runs[k])
    tot = total(runs[k])
    print(f"\n{what[k]}: {tot:.0f} us with marks, {plain[k]:.0f} us without "
          f"(SBX_BIN's sbx-ns), the host's fork+exec of a static true {host:.0f} us")
    print(f"  {'step':<16} {'wall':>8} {'CPU':>8}")
    aw = ac = 0.0
    for n in names:
        if len(wall[n]) != len(runs[k]):
            continue
        w = statistics.median(wall[n])
        c = statistics.median(cpu[n]) if cpu[n] else 0.0
        aw += w
        ac += c
        print(f"  {n:<16} {w:8.0f} {c:8.0f}")
    print(f"  {'(sums)':<16} {aw:8.0f} {ac:8.0f}")
PY

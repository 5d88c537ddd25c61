#!/bin/bash
# The sampled meter of sbx-seatbelt (lib/meter/meter.c), measured on Linux through
# the test driver meter-run (sbx-seatbelt itself only runs on macOS), side
# by side with cpulimit, the classic SIGSTOP/SIGCONT duty-cycle tool:
#   1. throttling: the share of a core a busy loop gets at a 50% limit;
#   2. the supervisor's own CPU while throttling that loop, as a ratio;
#   3. the meter's own CPU while the command idles (default and 10 ms
#      intervals, and with a 10,000-file workspace walked for --disk);
#   4. launch overhead: a metered `true` against a bare one (hyperfine).
# Real-time priorities (as in tests/51-meter.bats) keep other work on a
# shared machine from deciding the shares; only ratios and shares count.
#
#   bench/sbx-seatbelt.sh [SECONDS]   (default 3; needs SBX_TESTBIN and SBX_BIN,
#                                      cpulimit and hyperfine; run as root)
set -euo pipefail
secs=${1:-3}
case $secs in '' | *[!0-9]* | 0) echo "bench: usage: bench/sbx-seatbelt.sh [SECONDS]" >&2; exit 100 ;; esac
: "${SBX_TESTBIN:?set SBX_TESTBIN to the directory of the test programs (make test-progs)}"
: "${SBX_BIN:?set SBX_BIN to the directory of the sbx binaries}"
for p in cpulimit hyperfine chrt /usr/bin/time; do
	command -v "$p" >/dev/null || { echo "bench: fatal: $p is not installed" >&2; exit 111; }
done
T=$SBX_TESTBIN
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# "SHARE OWN_MS": the loop's share of a core (it measures itself) and the
# supervisor's own CPU time (its /proc schedstat, read just before the
# end: its children are not in it).
measure() {
	chrt -f 20 "$@" >"$work/out" 2>/dev/null &
	local pid=$! ns share
	sleep "$(awk -v s="$secs" 'BEGIN { print s - 0.3 }')"
	read -r ns _ <"/proc/$pid/schedstat"
	wait "$pid" || true
	share=$(sed -n 's/^cpu \([0-9]*\)%$/\1/p' "$work/out")
	echo "${share:-0} $(awk -v ns="$ns" 'BEGIN { printf "%.1f", ns / 1e6 }')"
}

echo "== 1-2. a busy loop for ${secs}s at a 50% limit"
read -r m_share m_own < <(measure "$T/meter-run" --cpu 50 -- chrt -f 10 "$T/meter-busy" "$secs")
read -r c_share c_own < <(measure cpulimit -q -m -f -l 50 -- chrt -f 10 "$T/meter-busy" "$secs")
printf '%-28s %8s %14s\n' supervisor "loop got" "own CPU (ms)"
printf '%-28s %7s%% %14s\n' "meter-run --cpu 50" "$m_share" "$m_own"
printf '%-28s %7s%% %14s\n' "cpulimit -l 50 -m" "$c_share" "$c_own"
awk -v m="$m_own" -v c="$c_own" 'BEGIN { if (c > 0) printf "own CPU ratio meter/cpulimit: %.2f\n", m / c }'

echo "== 3. the meter's own CPU while the command sleeps ${secs}s ($(ls /proc | grep -c '^[0-9]') processes on this host)"
mkdir "$work/ws"
for d in $(seq 100); do
	mkdir "$work/ws/$d"
	(cd "$work/ws/$d" && touch $(seq 100))
done
idle() {
	/usr/bin/time -f '%e %U %S' -o "$work/time" "$@" >/dev/null 2>&1 || true
	awk '{ printf "%.2f%%", ($2 + $3) / $1 * 100 }' "$work/time"
}
printf '%-46s %s\n' "bare sleep" "$(idle sleep "$secs")"
printf '%-46s %s\n' "meter-run (interval 0.1 s)" "$(idle "$T/meter-run" --memory 1G -- sleep "$secs")"
printf '%-46s %s\n' "meter-run (interval 0.01 s)" "$(idle "$T/meter-run" --interval 0.01 --memory 1G -- sleep "$secs")"
printf '%-46s %s\n' "meter-run --disk, 10,000 files (interval 0.1 s)" \
	"$(idle "$T/meter-run" --disk 1G --workspace "$work/ws" -- sleep "$secs")"
printf '%-46s %s\n' "cpulimit -l 50 -m (interval fixed)" "$(idle cpulimit -q -m -f -l 50 -- sleep "$secs")"
echo "(percent of one core over the run, supervisor and sleep together)"

echo "== 4. launch overhead of a short command"
hyperfine -N --warmup 5 --runs 200 --export-json "$work/h.json" \
	"$T/meter-run -- /bin/true" "/bin/true" "$SBX_BIN/sbx-seatbelt --workspace /w --print-profile" >/dev/null 2>&1
python3 - "$work/h.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
med = {x["command"]: x["median"] for x in r}
names = list(med)
for n in names:
    print(f"{n:60s} {med[n] * 1000:8.2f} ms  ({med[n] / med['/bin/true']:.1f}x /bin/true)")
EOF

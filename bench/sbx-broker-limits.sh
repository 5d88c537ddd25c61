#!/bin/bash
# sbx-broker's limits, before and after, side by side in one run:
#  1. the log's growth for SBX_BENCH_REFUSALS (default 100000) refused
#     requests from one client (the log budget);
#  2. the accept rate of refused requests on --listen-tcp and on the Unix
#     socket (what the per-uid accounting costs: one NETLINK_SOCK_DIAG
#     lookup per TCP connection, one SO_PEERCRED per Unix one);
# SBX_BENCH_ROUNDS (default 3) interleaved rounds, medians. Each broker runs
# in a private network namespace (loopback only), made and removed here.
#
#   SBX_BIN=bin SBX_BENCH_BROKER_BASE=/path/to/old/sbx-broker bench/sbx-broker-limits.sh   (as root)
set -euo pipefail
: "${SBX_BIN:?set SBX_BIN to the directory of the sbx binaries}"
: "${SBX_BENCH_BROKER_BASE:?set SBX_BENCH_BROKER_BASE to an earlier sbx-broker to compare with}"
n=${SBX_BENCH_REFUSALS:-100000}
rounds=${SBX_BENCH_ROUNDS:-3}
for v in "$n" "$rounds"; do
	case $v in '' | *[!0-9]* | 0) echo "bench: usage: SBX_BENCH_REFUSALS and SBX_BENCH_ROUNDS are positive integers" >&2; exit 100 ;; esac
done
[ "$(id -u)" = 0 ] || { echo "bench: run as root (network namespaces)" >&2; exit 111; }
W=$(mktemp -d /tmp/sbx-broker-limits.XXXXXX)
trap 'rm -rf "$W"' EXIT
cc -O2 -pthread -o "$W/net" "$(dirname "$0")/net.c"

# one BROKER WHERE: prints "conn/s log-bytes" for n refused requests.
one() {
	unshare -n sh -c '
		ip link set lo up
		rm -f "$2/s" "$2/ready"
		"$1" --listen "$2/s" --listen-tcp 127.0.0.1:3128 --allow-host allowed.test \
			--log-fd 4 --ready-fd 3 4>"$2/log" 3>"$2/ready" 2>/dev/null &
		b=$!
		while [ ! -s "$2/ready" ]; do sleep 0.01; done
		r=$("$2/net" "$3" rate "$4")
		kill "$b"; wait "$b" 2>/dev/null || :
		echo "$r $(stat -c %s "$2/log")"
	' sh "$1" "$W" "$2" "$n"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

for where in tcp:127.0.0.1:3128 unix:$W/s; do
	: > "$W/base.r"; : > "$W/new.r"; : > "$W/base.l"; : > "$W/new.l"
	for ((i = 0; i < rounds; i++)); do
		read -r r l < <(one "$SBX_BENCH_BROKER_BASE" "$where"); echo "$r" >> "$W/base.r"; echo "$l" >> "$W/base.l"
		read -r r l < <(one "$SBX_BIN/sbx-broker" "$where"); echo "$r" >> "$W/new.r"; echo "$l" >> "$W/new.l"
	done
	br=$(median < "$W/base.r"); nr=$(median < "$W/new.r")
	bl=$(median < "$W/base.l"); nl=$(median < "$W/new.l")
	printf '%-24s refused/s base %7s  new %7s  new/base %.2f\n' "${where%%:*}" "$br" "$nr" "$(echo "$nr / $br" | bc -l)"
	printf '%-24s log bytes base %9s  new %7s  base/new %.0f\n' "$n refusals" "$bl" "$nl" "$(echo "$bl / $nl" | bc -l)"
done

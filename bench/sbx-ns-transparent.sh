#!/bin/bash
# What transparent broker mode costs against the proxy port: the same
# client, in the same sandbox (sbx-ns --net broker:PATH,transparent),
# through the same sbx-broker to the same origin, once through the proxy
# port (127.0.0.1:3128, an absolute-form GET, as a client that reads
# HTTP_PROXY sends) and once straight to origin.test's synthetic address
# (a captured connection, an origin-form GET), interleaved in one run;
# ratios, since absolute numbers on these shared machines mean little. And
# the DNS queries per second the broker answers for a sandbox.
# Everything runs in two network namespaces made here and removed at the
# end: "h" holds sbx-ns and the broker (with an /etc/hosts naming
# origin.test), "o" the origin on 198.18.9.2; no default route anywhere.
#
#   bench/sbx-ns-transparent.sh     (as root; needs SBX_BIN, python3, cc)
#
# 1. Bulk: one plain-HTTP GET of SBX_BENCH_BYTES (default 512 MiB).
# 2. Rate: SBX_BENCH_CONNS (default 3000) GETs of a 6-byte body, one
#    connection each, 8 at a time.
# 3. DNS: SBX_BENCH_QUERIES (default 100000) A queries for origin.test over
#    UDP, 64 in flight.
# Each is run SBX_BENCH_ROUNDS (default 9) times per side; medians.
set -euo pipefail
: "${SBX_BIN:?set SBX_BIN to the directory of the sbx binaries}"
bytes=${SBX_BENCH_BYTES:-536870912}
conns=${SBX_BENCH_CONNS:-3000}
queries=${SBX_BENCH_QUERIES:-100000}
rounds=${SBX_BENCH_ROUNDS:-9}
for v in "$bytes" "$conns" "$queries" "$rounds"; do
	case $v in '' | *[!0-9]* | 0) echo "bench: usage: SBX_BENCH_BYTES, SBX_BENCH_CONNS, SBX_BENCH_QUERIES and SBX_BENCH_ROUNDS are positive integers" >&2; exit 100 ;; esac
done
[ "$(id -u)" = 0 ] || { echo "bench: run as root (network namespaces)" >&2; exit 111; }
for t in ip unshare cc; do
	command -v "$t" >/dev/null || { echo "bench: $t is missing" >&2; exit 111; }
done
. "$(dirname "$0")/net-setup.bash" tpb

sandbox() {
	ip netns exec "$NH" "$SBX_BIN/sbx-ns" --uid 65534 --gid 65534 --workspace "$W/ws" --ro "$W/net" \
		--net "broker:$W/broker.sock,transparent" -- "$W/net" "$@"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

: > "$W/pb"; : > "$W/cb"; : > "$W/pr"; : > "$W/cr"; : > "$W/dq"
for _ in $(seq 1 "$rounds"); do
	sandbox tcp:127.0.0.1:3128 bulk "$bytes" >> "$W/pb"
	sandbox cap:origin.test bulk "$bytes" >> "$W/cb"
	sandbox tcp:127.0.0.1:3128 rate "$conns" >> "$W/pr"
	sandbox cap:origin.test rate "$conns" >> "$W/cr"
	sandbox dns origin.test "$queries" >> "$W/dq"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
pb=$(median < "$W/pb"); cb=$(median < "$W/cb"); pr=$(median < "$W/pr"); cr=$(median < "$W/cr"); dq=$(median < "$W/dq")
echo "bulk, MB/s (median of $rounds, $bytes bytes): proxy port $pb, captured $cb: captured/proxy $(ratio "$cb" "$pb")"
echo "rate, conn/s (median of $rounds, $conns GETs, 8 at a time): proxy port $pr, captured $cr: captured/proxy $(ratio "$cr" "$pr")"
echo "DNS, answers/s (median of $rounds, $queries A queries, 64 in flight): $dq"
for f in pb cb pr cr dq; do printf '%s: %s\n' "$f" "$(tr '\n' ' ' < "$W/$f")"; done

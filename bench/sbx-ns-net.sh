#!/bin/bash
# What the bridge of `sbx-ns --net broker` costs: the same client, through
# the same sbx-broker to the same origin, once from the host side on the
# broker's Unix socket and once from inside the sandbox on 127.0.0.1:3128
# (the sandbox's listeners, handed to the broker), interleaved in one run;
# ratios, since absolute numbers on these shared machines mean little.
# Everything runs in two network namespaces made here and removed at the
# end: "h" holds sbx-ns, the broker (with an /etc/hosts naming origin.test)
# and the host-side client, "o" the origin on 198.18.9.2; no default route
# anywhere. Two more columns, for scale: socat (TCP-LISTEN to UNIX-CONNECT,
# the usual relay) in front of the broker, and the broker alone over TCP
# (a host-side listener handed to it the way sbx-ns hands the sandbox's),
# which separates what TCP costs against a Unix socket from what the
# sandbox adds.
#
#   bench/sbx-ns-net.sh     (as root; needs SBX_BIN, python3, socat, cc)
#
# 1. Bulk: one plain-HTTP GET of SBX_BENCH_BYTES (default 512 MiB).
# 2. Rate: SBX_BENCH_CONNS (default 3000) GETs of a 6-byte body, one
#    connection each, 8 at a time.
# Each is run SBX_BENCH_ROUNDS (default 9) times per side; medians.
set -euo pipefail
: "${SBX_BIN:?set SBX_BIN to the directory of the sbx binaries}"
bytes=${SBX_BENCH_BYTES:-536870912}
conns=${SBX_BENCH_CONNS:-3000}
rounds=${SBX_BENCH_ROUNDS:-9}
for v in "$bytes" "$conns" "$rounds"; do
	case $v in '' | *[!0-9]* | 0) echo "bench: usage: SBX_BENCH_BYTES, SBX_BENCH_CONNS and SBX_BENCH_ROUNDS are positive integers" >&2; exit 100 ;; esac
done
[ "$(id -u)" = 0 ] || { echo "bench: run as root (network namespaces)" >&2; exit 111; }
for t in python3 socat ip unshare cc; do
	command -v "$t" >/dev/null || { echo "bench: $t is missing" >&2; exit 111; }
done
PY=/usr/bin/python3
. "$(dirname "$0")/net-setup.bash" nsb
for _ in $(seq 1 100); do
	ip netns exec "$NH" "$W/net" "unix:$W/broker.sock" rate 1 >/dev/null 2>&1 && break
	sleep 0.1
done

ip netns exec "$NH" socat TCP-LISTEN:3999,bind=127.0.0.1,fork,reuseaddr,backlog=1024 "UNIX-CONNECT:$W/broker.sock" \
	</dev/null >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
	ip netns exec "$NH" "$W/net" tcp:127.0.0.1:3999 rate 1 >/dev/null 2>&1 && break
	sleep 0.1
done

# The broker alone over TCP: a listener on the host side's 127.0.0.1,
# handed to the broker the way sbx-ns hands over the sandbox's. Set beside
# the sandbox's figures it tells what TCP itself costs against a Unix
# socket from what the sandbox adds.
cat > "$W/handoff.py" <<'PY'
import array, socket, sys
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", 3998)); l.listen(128)
c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1])
c.sendmsg([b"SBX-HANDOFF 1\n"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [l.fileno()]))])
l.close()
print(c.recv(100).decode().strip(), flush=True)
sys.stdin.read()
PY
mkfifo "$W/hold"
# Held open (never written) until the bench exits: the handoff's channel
# lives as long as handoff.py's stdin does not end.
# shellcheck disable=SC2034
exec {hold}<>"$W/hold"
ip netns exec "$NH" "$PY" "$W/handoff.py" "$W/broker.sock" <"$W/hold" >"$W/handoff.out" 2>&1 &
disown $!
pids+=($!)
for _ in $(seq 1 100); do [ -s "$W/handoff.out" ] && break; sleep 0.05; done
[ "$(cat "$W/handoff.out")" = "SBX-HANDOFF OK" ] || { echo "bench: handoff: $(cat "$W/handoff.out")" >&2; exit 111; }

host() { ip netns exec "$NH" "$W/net" "unix:$W/broker.sock" "$@"; }
tcp() { ip netns exec "$NH" "$W/net" tcp:127.0.0.1:3998 "$@"; }
relay() { ip netns exec "$NH" "$W/net" tcp:127.0.0.1:3999 "$@"; }
sandbox() {
	ip netns exec "$NH" "$SBX_BIN/sbx-ns" --uid 65534 --gid 65534 --workspace "$W/ws" --ro "$W/net" \
		--net "broker:$W/broker.sock" -- "$W/net" tcp:127.0.0.1:3128 "$@"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

: > "$W/hb"; : > "$W/sb"; : > "$W/xb"; : > "$W/tb"; : > "$W/hr"; : > "$W/sr"; : > "$W/xr"; : > "$W/tr"
for _ in $(seq 1 "$rounds"); do
	host bulk "$bytes" >> "$W/hb"
	sandbox bulk "$bytes" >> "$W/sb"
	relay bulk "$bytes" >> "$W/xb"
	tcp bulk "$bytes" >> "$W/tb"
	host rate "$conns" >> "$W/hr"
	sandbox rate "$conns" >> "$W/sr"
	relay rate "$conns" >> "$W/xr"
	tcp rate "$conns" >> "$W/tr"
done
cost() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (a / b - 1) * 100 }'; }
hb=$(median < "$W/hb"); sb=$(median < "$W/sb"); xb=$(median < "$W/xb"); tb=$(median < "$W/tb")
hr=$(median < "$W/hr"); sr=$(median < "$W/sr"); xr=$(median < "$W/xr"); tr=$(median < "$W/tr")
echo "bulk, MB/s (median of $rounds, $bytes bytes): broker alone $hb, bridge + broker $sb, socat + broker $xb;" \
	"the bridge costs $(cost "$hb" "$sb") %, socat $(cost "$hb" "$xb") % (time per byte);" \
	"broker alone over TCP $tb: TCP itself $(cost "$hb" "$tb") %, the sandbox on top $(cost "$tb" "$sb") %"
echo "rate, conn/s (median of $rounds, $conns GETs, 8 at a time): broker alone $hr, bridge + broker $sr, socat + broker $xr;" \
	"the bridge costs $(cost "$hr" "$sr") %, socat $(cost "$hr" "$xr") % (time per connection);" \
	"broker alone over TCP $tr: TCP itself $(cost "$hr" "$tr") %, the sandbox on top $(cost "$tr" "$sr") %"
for f in hb sb xb tb hr sr xr tr; do printf '%s: %s\n' "$f" "$(tr '\n' ' ' < "$W/$f")"; done

#!/bin/bash
# What the bridge of `sbx-ns --net broker` costs: the same client, through
# the same sbx-broker to the same origin, once from the host side on the
# broker's Unix socket and once from inside the sandbox on 127.0.0.1:3128
# (bridge + broker), interleaved in one run; ratios, since absolute numbers
# on these shared machines mean little. Everything runs in two network
# namespaces made here and removed at the end: "h" holds sbx-ns, the broker
# (with an /etc/hosts naming origin.test) and the host-side client, "o"
# the origin on 198.18.9.2; no default route anywhere. A third column puts
# socat (TCP-LISTEN to UNIX-CONNECT, the usual relay) in the bridge's place,
# on the host side, for scale: what any such hop costs on this machine.
#
#   bench/sbx-ns-net.sh     (as root; needs SBX_BIN, python3)
#
# 1. Bulk: one plain-HTTP GET of SBX_BENCH_BYTES (default 512 MiB).
# 2. Rate: SBX_BENCH_CONNS (default 2000) GETs of a 6-byte body, one
#    connection each, 8 at a time.
# Each is run SBX_BENCH_ROUNDS (default 5) times per side; medians.
set -euo pipefail
: "${SBX_BIN:?set SBX_BIN to the directory of the sbx binaries}"
bytes=${SBX_BENCH_BYTES:-536870912}
conns=${SBX_BENCH_CONNS:-2000}
rounds=${SBX_BENCH_ROUNDS:-5}
for v in "$bytes" "$conns" "$rounds"; do
	case $v in '' | *[!0-9]* | 0) echo "bench: usage: SBX_BENCH_BYTES, SBX_BENCH_CONNS and SBX_BENCH_ROUNDS are positive integers" >&2; exit 100 ;; esac
done
[ "$(id -u)" = 0 ] || { echo "bench: run as root (network namespaces)" >&2; exit 111; }
for t in python3 socat ip unshare; do
	command -v "$t" >/dev/null || { echo "bench: $t is missing" >&2; exit 111; }
done
PY=/usr/bin/python3
W=$(mktemp -d /var/tmp/sbx-ns-net-bench.XXXXXX)
chmod 0755 "$W"
NH=sbxnsb$$h NO=sbxnsb$$o
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || :; done
	wait 2>/dev/null || :
	for ns in "$NH" "$NO"; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || :; done
		ip netns del "$ns" 2>/dev/null || :
	done
	rm -rf "$W"
}
trap cleanup EXIT
ip netns add "$NH"
ip netns add "$NO"
ip link add "vnh$$" type veth peer name "vno$$"
ip link set "vnh$$" netns "$NH"
ip link set "vno$$" netns "$NO"
ip -n "$NH" addr add 198.18.9.1/24 dev "vnh$$"
ip -n "$NO" addr add 198.18.9.2/24 dev "vno$$"
for ns in "$NH" "$NO"; do ip -n "$ns" link set lo up; done
ip -n "$NH" link set "vnh$$" up
ip -n "$NO" link set "vno$$" up
echo "198.18.9.2 origin.test" > "$W/hosts"
mkdir "$W/ws"

cat > "$W/origin.py" <<'PY'
# /big/N: N bytes; anything else: "hello\n". One request per connection.
import socket, sys, threading
buf = b"x" * (1 << 20)
def serve(c):
    try:
        data = b""
        while b"\r\n\r\n" not in data:
            d = c.recv(65536)
            if not d:
                return
            data += d
        path = data.split(b" ", 2)[1].decode()
        if path.startswith("/big/"):
            n = int(path[5:])
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % n)
            mv = memoryview(buf)
            while n > 0:
                k = min(n, len(buf))
                c.sendall(mv[:k])
                n -= k
        else:
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhello\n")
    finally:
        c.close()
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 80)); s.listen(1024)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
cat > "$W/client.py" <<'PY'
# client.py unix:PATH|tcp:HOST:PORT bulk BYTES | rate CONNS: prints a number
# (MB/s, or connections/s), timing itself only.
import socket, sys, threading, time
where, what, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def connect():
    if where.startswith("unix:"):
        s = socket.socket(socket.AF_UNIX); s.connect(where[5:])
    else:
        h, p = where[4:].rsplit(":", 1)
        s = socket.create_connection((h, int(p)))
    return s
def get(path, want):
    s = connect()
    s.sendall(b"GET http://origin.test%s HTTP/1.1\r\nHost: origin.test\r\n\r\n" % path.encode())
    buf = bytearray(1 << 20); got = 0
    while True:
        k = s.recv_into(buf)
        if not k:
            break
        got += k
    s.close()
    if got < want:
        raise SystemExit("short answer: %d < %d" % (got, want))
if what == "bulk":
    t = time.monotonic(); get("/big/%d" % n, n); dt = time.monotonic() - t
    print("%.1f" % (n / dt / 1e6))
else:
    left = [n]; lock = threading.Lock()
    def worker():
        while True:
            with lock:
                if left[0] == 0:
                    return
                left[0] -= 1
            get("/", 6)
    t = time.monotonic()
    ts = [threading.Thread(target=worker) for _ in range(8)]
    for x in ts: x.start()
    for x in ts: x.join()
    print("%.0f" % (n / (time.monotonic() - t)))
PY
chmod 0644 "$W"/*.py
ip netns exec "$NO" "$PY" "$W/origin.py" 198.18.9.2 </dev/null >/dev/null 2>&1 &
pids+=($!)
mkfifo "$W/ready"
exec {rfd}<>"$W/ready"
ip netns exec "$NH" unshare -m --propagation private sh -c \
	'mount --bind "$0/hosts" /etc/hosts && exec "$@"' "$W" "$SBX_BIN/sbx-broker" --listen "$W/broker.sock" \
	--allow-host origin.test --allow-private-networks --max-response-bytes 1T --max-wall-time 3600 \
	--max-connections 20000 --ready-fd 3 3>"$W/ready" </dev/null >/dev/null 2>"$W/broker.err" &
pids+=($!)
read -r -t 10 -u "$rfd" _
for i in $(seq 1 100); do
	ip netns exec "$NH" "$PY" "$W/client.py" "unix:$W/broker.sock" rate 1 >/dev/null 2>&1 && break
	sleep 0.1
done

ip netns exec "$NH" socat TCP-LISTEN:3999,bind=127.0.0.1,fork,reuseaddr,backlog=1024 "UNIX-CONNECT:$W/broker.sock" \
	</dev/null >/dev/null 2>&1 &
pids+=($!)
for i in $(seq 1 100); do
	ip netns exec "$NH" "$PY" "$W/client.py" tcp:127.0.0.1:3999 rate 1 >/dev/null 2>&1 && break
	sleep 0.1
done

host() { ip netns exec "$NH" "$PY" "$W/client.py" "unix:$W/broker.sock" "$@"; }
relay() { ip netns exec "$NH" "$PY" "$W/client.py" tcp:127.0.0.1:3999 "$@"; }
sandbox() {
	ip netns exec "$NH" "$SBX_BIN/sbx-ns" --uid 65534 --gid 65534 --workspace "$W/ws" --ro "$W/client.py" \
		--net "broker:$W/broker.sock" -- python3 "$W/client.py" tcp:127.0.0.1:3128 "$@"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

: > "$W/hb"; : > "$W/sb"; : > "$W/xb"; : > "$W/hr"; : > "$W/sr"; : > "$W/xr"
for r in $(seq 1 "$rounds"); do
	host bulk "$bytes" >> "$W/hb"
	sandbox bulk "$bytes" >> "$W/sb"
	relay bulk "$bytes" >> "$W/xb"
	host rate "$conns" >> "$W/hr"
	sandbox rate "$conns" >> "$W/sr"
	relay rate "$conns" >> "$W/xr"
done
cost() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (a / b - 1) * 100 }'; }
hb=$(median < "$W/hb"); sb=$(median < "$W/sb"); xb=$(median < "$W/xb")
hr=$(median < "$W/hr"); sr=$(median < "$W/sr"); xr=$(median < "$W/xr")
echo "bulk, MB/s (median of $rounds, $bytes bytes): broker alone $hb, bridge + broker $sb, socat + broker $xb;" \
	"the bridge costs $(cost "$hb" "$sb") %, socat $(cost "$hb" "$xb") % (time per byte)"
echo "rate, conn/s (median of $rounds, $conns GETs, 8 at a time): broker alone $hr, bridge + broker $sr, socat + broker $xr;" \
	"the bridge costs $(cost "$hr" "$sr") %, socat $(cost "$hr" "$xr") % (time per connection)"
for f in hb sb xb hr sr xr; do printf '%s: %s\n' "$f" "$(tr '\n' ' ' < "$W/$f")"; done

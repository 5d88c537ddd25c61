#!/bin/bash
# sbx-broker's resolver under a flood: how long sandbox B waits for a
# plain HTTP GET while sandbox A, on the same broker, keeps SBX_BENCH_FLOOD
# (default 40) requests for names that take SBX_BENCH_DELAY_MS (default
# 2000) to resolve always open, against B alone. Both sandboxes are
# listeners handed to the broker the way sbx-ns hands a sandbox's
# (SBX-HANDOFF 1, the channel held open). The broker resolves through its
# own resolv.conf (a private mount namespace) from tests/slow-dns.py on
# 127.0.0.1, which answers names under slow.test (A's) after the delay and
# any other at once. Every GET of B names a new name under fast.test, so
# each needs a lookup of its own (no answer kept from the same second):
# a getaddrinfo thread and a DNS round trip, what A's flood competes for. Everything runs in two
# network namespaces made here ("h": broker, DNS, clients; "o": the origin
# on 198.18.3.2), removed at the end; no default route.
#
#   bench/sbx-broker-fair.sh   (as root; needs SBX_BIN, python3)
#
# SBX_BENCH_REQUESTS (default 200) sequential GETs from B per round,
# SBX_BENCH_ROUNDS (default 3) interleaved rounds of (alone, flooded); the
# medians of each kind, and flooded/alone (the requirement: at most 2x).
# SBX_BENCH_BROKER_BASE=PATH runs an earlier sbx-broker build the same way
# beside it ("base"), SBX_BENCH_BASE_REQUESTS (default 3) GETs per round:
# its flooded GETs may wait behind the whole flood or fail (their count is
# printed).
set -euo pipefail
: "${SBX_BIN:?set SBX_BIN to the directory of the sbx binaries}"
reqs=${SBX_BENCH_REQUESTS:-200}
rounds=${SBX_BENCH_ROUNDS:-3}
flood=${SBX_BENCH_FLOOD:-40}
delay=${SBX_BENCH_DELAY_MS:-2000}
base=${SBX_BENCH_BROKER_BASE:-}
breqs=${SBX_BENCH_BASE_REQUESTS:-3}
for v in "$reqs" "$rounds" "$flood" "$delay" "$breqs"; do
	case $v in '' | *[!0-9]* | 0) echo "bench: usage: SBX_BENCH_REQUESTS, SBX_BENCH_ROUNDS, SBX_BENCH_FLOOD, SBX_BENCH_DELAY_MS and SBX_BENCH_BASE_REQUESTS are positive integers" >&2; exit 100 ;; esac
done
if [ -n "$base" ] && [ ! -x "$base" ]; then
	echo "bench: SBX_BENCH_BROKER_BASE=$base is not an executable" >&2
	exit 100
fi
[ "$(id -u)" = 0 ] || { echo "bench: run as root (network namespaces)" >&2; exit 111; }
PY=$(command -v /usr/bin/python3 || command -v python3) || { echo "bench: python3 is missing" >&2; exit 111; }
here=$(cd "$(dirname "$0")" && pwd)

. "$here/ns-pair.bash" fair 198.18.3
printf 'nameserver 127.0.0.1\noptions timeout:30 attempts:1\n' > "$W/resolv.conf"

cat > "$W/origin.py" <<'PY'
import http.server, socketserver
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "6")
        self.end_headers()
        self.wfile.write(b"hello\n")
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256
S(("198.18.3.2", 80), H).serve_forever()
PY

# fair.py SOCK: hands two listeners to the broker as sandboxes A and B,
# then reads commands on stdin: "alone N" and "flooded N" (N GETs from B,
# one at a time, A flooding or idle); prints the median milliseconds and
# the failures of each.
cat > "$W/fair.py" <<'PY'
import array, os, socket, statistics, sys, threading, time
sock, flood = sys.argv[1], int(sys.argv[2])
def sandbox():
    l = socket.socket()
    l.bind(("127.0.0.1", 0))
    l.listen(512)
    c = socket.socket(socket.AF_UNIX)
    c.connect(sock)
    c.sendmsg([b"SBX-HANDOFF 1\n"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [l.fileno()]))])
    assert c.recv(100) == b"SBX-HANDOFF OK\n"
    port = l.getsockname()[1]
    l.close()
    def drain():  # the decision lines: read, dropped
        while c.recv(65536):
            pass
    threading.Thread(target=drain, daemon=True).start()
    return c, port
keep_a, A = sandbox()
keep_b, B = sandbox()
def get(port, host):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(60)
    s.sendall(b"GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n" % (host.encode(), host.encode()))
    out = b""
    while True:
        d = s.recv(4096)
        if not d:
            break
        out += d
    s.close()
    return out.startswith(b"HTTP/1.1 200")
flooding = threading.Event()
seq = [0]
lock = threading.Lock()
def flooder():
    while True:
        flooding.wait()
        with lock:
            seq[0] += 1
            n = seq[0]
        try:
            get(A, "n%d.slow.test" % n)  # a new name each time: never a kept answer
        except OSError:
            pass
for _ in range(flood):
    threading.Thread(target=flooder, daemon=True).start()
for line in sys.stdin:
    kind, n = line.split()
    if kind == "flooded":
        flooding.set()
        time.sleep(1)  # every flooder has its request in
    ms, fails = [], 0
    for _ in range(int(n)):
        t = time.monotonic()
        with lock:
            seq[0] += 1
            n = seq[0]
        ok = get(B, "b%d.fast.test" % n)
        ms.append((time.monotonic() - t) * 1000)
        fails += not ok
    flooding.clear()
    print("%.3f %d" % (statistics.median(ms), fails), flush=True)
PY

ip netns exec "$NO" "$PY" "$W/origin.py" </dev/null >/dev/null 2>&1 &
pids+=($!)
mkfifo "$W/dns.ready"
exec {dfd}<>"$W/dns.ready"
ip netns exec "$NH" "$PY" "$here/../tests/slow-dns.py" 127.0.0.1 198.18.3.2 "$W/dns.log" "$W/dns.ready" "$delay" \
	</dev/null >/dev/null 2>"$W/dns.err" &
pids+=($!)
read -r -t 10 -u "$dfd" _

# broker NAME BINARY: started, ready, its fair.py driver on fds 5 (in)
# and 6 (out) of coprocess-like fifos.
start() {
	local name=$1 bin=$2 fd
	mkfifo "$W/$name.ready" "$W/$name.in" "$W/$name.out"
	exec {fd}<>"$W/$name.ready"
	ip netns exec "$NH" unshare -m --propagation private sh -c \
		'mount --bind "$0/resolv.conf" /etc/resolv.conf && exec "$@"' \
		"$W" "$bin" --listen "$W/$name.sock" --allow-host '*.fast.test' --allow-host '*.slow.test' \
		--allow-private-networks --max-wall-time 60 --ready-fd 3 --log-fd 4 \
		3>"$W/$name.ready" 4>/dev/null </dev/null 2>"$W/$name.err" &
	pids+=($!)
	read -r -t 10 -u "$fd" _
	ip netns exec "$NH" "$PY" "$W/fair.py" "$W/$name.sock" "$flood" <"$W/$name.in" >"$W/$name.out" 2>"$W/$name.py.err" &
	pids+=($!)
}
start broker "$SBX_BIN/sbx-broker"
exec {bin}>"$W/broker.in" {bout}<"$W/broker.out"
if [ -n "$base" ]; then
	start base "$base"
	exec {xin}>"$W/base.in" {xout}<"$W/base.out"
fi
measure() { # IN OUT KIND COUNT -> "median failures"
	local r
	echo "$3 $4" >&"$1"
	read -r r <&"$2"
	echo "$r"
}
declare -A med
for ((i = 1; i <= rounds; i++)); do
	for k in alone flooded; do
		med[broker.$k]+="$(measure "$bin" "$bout" "$k" "$reqs" | cut -d' ' -f1) "
		if [ -n "$base" ]; then
			r=$(measure "$xin" "$xout" "$k" "$breqs")
			med[base.$k]+="${r% *} "
			[ "${r#* }" = 0 ] || echo "base, $k, round $i: ${r#* } of $breqs GETs failed"
		fi
	done
done
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
echo "B's GET through the broker, median of $rounds rounds of $reqs sequential GETs each (base: $breqs);"
echo "flooded: A keeps $flood requests for names that take ${delay} ms to resolve open"
for b in broker ${base:+base}; do
	a=$(echo "${med[$b.alone]}" | median)
	f=$(echo "${med[$b.flooded]}" | median)
	printf '%-7s alone %8.3f ms   flooded %9.3f ms   flooded/alone %6.2fx\n' "$b" "$a" "$f" "$(awk -v f="$f" -v a="$a" 'BEGIN { print f / a }')"
done

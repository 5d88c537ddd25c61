#!/bin/bash
# sbx-broker against tinyproxy and against a direct connection, side by
# side in one run (ratios; absolute numbers on these shared machines mean
# little). Everything runs in two network namespaces made here and removed
# at the end: "b" holds the clients, the broker and tinyproxy (both with an
# /etc/hosts naming origin.test), "o" the origin on 198.18.1.2; no default
# route anywhere.
#
#   bench/sbx-broker.sh     (as root; needs SBX_BIN, tinyproxy, python3, openssl)
#
# 1. Bulk: one tunnel carrying SBX_BENCH_BYTES (default 1 GiB) from the
#    origin to the client (CONNECT, a real ClientHello, then the bytes).
# 2. Rate: SBX_BENCH_CONNS (default 3000) CONNECT-and-close connections,
#    16 at a time; the direct line is a plain TCP connect-and-close.
# 3. Memory: SBX_BENCH_IDLE (default 10000) idle tunnels held open at once;
#    peak RSS (VmHWM) of the proxy process.
# The broker is reached on its Unix socket (its only interface), tinyproxy
# on TCP.
set -euo pipefail
: "${SBX_BIN:?set SBX_BIN to the directory of the sbx binaries}"
bytes=${SBX_BENCH_BYTES:-1073741824}
conns=${SBX_BENCH_CONNS:-3000}
idle=${SBX_BENCH_IDLE:-10000}
for v in "$bytes" "$conns" "$idle"; do
	case $v in '' | *[!0-9]* | 0) echo "bench: usage: SBX_BENCH_BYTES, SBX_BENCH_CONNS and SBX_BENCH_IDLE are positive integers" >&2; exit 100 ;; esac
done
for t in tinyproxy python3 openssl ip unshare; do
	command -v "$t" >/dev/null || { echo "bench: $t is missing" >&2; exit 111; }
done
[ "$(id -u)" = 0 ] || { echo "bench: run as root (network namespaces)" >&2; exit 111; }
PY=$(command -v /usr/bin/python3 || command -v python3)
# An idle tunnel holds two fds in the proxy (the broker makes its pipes only
# when bytes flow). Raising the hard limit needs CAP_SYS_RESOURCE, which a
# container may lack: then the tunnel count is cut to what fits, and said.
ulimit -n "$(ulimit -Hn)"
fit=$((($(ulimit -n) - 64) / 2))
if [ "$idle" -gt "$fit" ]; then
	echo "bench: RLIMIT_NOFILE allows $fit idle tunnels per process, not $idle: measuring $fit"
	idle=$fit
fi

W=$(mktemp -d /tmp/sbx-broker-bench.XXXXXX)
NB=sbxbench$$b NO=sbxbench$$o
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || :; done
	for ns in "$NB" "$NO"; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || :; done
		ip netns del "$ns" 2>/dev/null || :
	done
	rm -rf "$W"
}
trap cleanup EXIT
ip netns add "$NB"
ip netns add "$NO"
ip link add "vbb$$" type veth peer name "vbo$$"
ip link set "vbb$$" netns "$NB"
ip link set "vbo$$" netns "$NO"
ip -n "$NB" addr add 198.18.1.1/24 dev "vbb$$"
ip -n "$NO" addr add 198.18.1.2/24 dev "vbo$$"
for ns in "$NB" "$NO"; do ip -n "$ns" link set lo up; done
ip -n "$NB" link set "vbb$$" up
ip -n "$NO" link set "vbo$$" up
echo "198.18.1.2 origin.test" > "$W/hosts"

# A real ClientHello naming origin.test, recorded from openssl s_client.
cat > "$W/record.py" <<'PY'
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
print(s.getsockname()[1], flush=True)
c, _ = s.accept(); c.settimeout(5); data = b""
while len(data) < 5 or len(data) < 5 + int.from_bytes(data[3:5], "big"):
    data += c.recv(65536)
open(sys.argv[1], "wb").write(data)
PY
coproc REC { ip netns exec "$NB" "$PY" "$W/record.py" "$W/hello.bin"; }
recpid=$REC_PID
read -r port <&"${REC[0]}"
ip netns exec "$NB" timeout 5 openssl s_client -connect "127.0.0.1:$port" -servername origin.test \
	</dev/null >/dev/null 2>&1 || :
wait "$recpid"

cat > "$W/origin.py" <<'PY'
# Port 443: read the hello, send N bytes, close. Port 80: read and hold.
import asyncio, socket, sys, threading
size = int(sys.argv[1])
def bulk():
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("198.18.1.2", 443)); s.listen(64)
    buf = memoryview(b"\0" * (1 << 20))
    while True:
        c, _ = s.accept()
        c.recv(65536)
        left = size
        while left:
            n = c.send(buf[:min(left, len(buf))])
            left -= n
        c.close()
threading.Thread(target=bulk, daemon=True).start()
async def hold(r, w):
    try:
        while await r.read(65536):
            pass
    except OSError:
        pass
    w.close()
async def main():
    srv = await asyncio.start_server(hold, "198.18.1.2", 80, backlog=4096)
    print("ready", flush=True)
    await srv.serve_forever()
asyncio.run(main())
PY

cat > "$W/load.py" <<'PY'
import asyncio, os, socket, sys, time
HELLO = open(os.environ["HELLO"], "rb").read()
def target(spec):
    kind, _, rest = spec.partition(":")
    if kind == "unix":
        return kind, rest
    h, _, p = rest.rpartition(":")
    return kind, (h, int(p))
def sync_connect(spec):
    kind, a = target(spec)
    s = socket.socket(socket.AF_UNIX if kind == "unix" else socket.AF_INET)
    s.connect(a)
    return kind, s
def read_head(s):
    data = b""
    while b"\r\n\r\n" not in data:
        d = s.recv(4096)
        if not d:
            raise SystemExit("proxy closed: %r" % data)
        data += d
    if not data.startswith((b"HTTP/1.1 200", b"HTTP/1.0 200")):
        raise SystemExit("proxy said %r" % data[:80])
def bulk(spec):
    kind, s = sync_connect(spec)
    t0 = time.monotonic()
    if kind != "direct":
        s.sendall(b"CONNECT origin.test:443 HTTP/1.1\r\nHost: origin.test:443\r\n\r\n")
        read_head(s)
    s.sendall(HELLO)
    buf = bytearray(1 << 20); n = 0
    while True:
        r = s.recv_into(buf)
        if not r:
            break
        n += r
    dt = time.monotonic() - t0
    print("%d %.6f" % (n, dt))
async def aconnect(spec):
    kind, a = target(spec)
    if kind == "unix":
        return kind, await asyncio.open_unix_connection(a)
    return kind, await asyncio.open_connection(*a)
async def tunnel(spec, hello):
    kind, (r, w) = await aconnect(spec)
    if kind != "direct":
        w.write(b"CONNECT origin.test:80 HTTP/1.1\r\nHost: origin.test:80\r\n\r\n")
        head = await r.readuntil(b"\r\n\r\n")
        if b" 200 " not in head.split(b"\r\n")[0] + b" ":
            raise SystemExit("proxy said %r" % head[:80])
    if hello:
        w.write(HELLO)
        await w.drain()
    return r, w
async def rate(spec, n, conc):
    sem = asyncio.Semaphore(conc)
    async def one():
        async with sem:
            r, w = await tunnel(spec, False)
            w.close()
            await w.wait_closed()
    t0 = time.monotonic()
    await asyncio.gather(*(one() for _ in range(n)))
    print("%.1f" % (n / (time.monotonic() - t0)))
async def idle(spec, n):
    sem = asyncio.Semaphore(200)
    async def one():
        async with sem:
            return await tunnel(spec, True)
    held = await asyncio.gather(*(one() for _ in range(n)))
    print("held %d" % len(held), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    for r, w in held:
        w.close()
cmd = sys.argv[1]
if cmd == "bulk":
    bulk(sys.argv[2])
elif cmd == "rate":
    asyncio.run(rate(sys.argv[2], int(sys.argv[3]), 16))
else:
    asyncio.run(idle(sys.argv[2], int(sys.argv[3])))
PY

coproc ORIG { ip netns exec "$NO" "$PY" "$W/origin.py" "$bytes"; }
pids+=("${ORIG_PID:?}")
read -r _ <&"${ORIG[0]}"

inhosts() { # run "$@" in "b" with the test /etc/hosts
	ip netns exec "$NB" unshare -m sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$W/hosts" "$@"
}

mkfifo "$W/ready"
exec {rfd}<>"$W/ready"
inhosts "$SBX_BIN/sbx-broker" --listen "$W/broker.sock" --allow-host origin.test --allow-private-networks \
	--max-request-bytes 1G --max-response-bytes 1T --max-wall-time 3600 --max-connections 20000 \
	--ready-fd 3 --log-fd 4 3>"$W/ready" 4>/dev/null &
bpid=$!
pids+=("$bpid")
read -r -t 10 -u "$rfd" _

cat > "$W/tinyproxy.conf" <<CONF
Port 8888
Listen 127.0.0.1
Timeout 3600
MaxClients 20000
Allow 127.0.0.1
LogLevel Critical
CONF
inhosts tinyproxy -d -c "$W/tinyproxy.conf" >/dev/null 2>&1 &
tpid=$!
pids+=("$tpid")
for _ in $(seq 100); do
	ip netns exec "$NB" "$PY" -c 'import socket; socket.create_connection(("127.0.0.1", 8888), 1).close()' 2>/dev/null && break
	sleep 0.05
done

B=unix:$W/broker.sock T=tcp:127.0.0.1:8888 D=direct:198.18.1.2:443
load() { ip netns exec "$NB" env HELLO="$W/hello.bin" "$PY" "$W/load.py" "$@"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo "sbx-broker bench: $(nproc) CPUs, $((bytes >> 20)) MiB bulk, $conns connections, $idle idle tunnels"
declare -A mbs
for k in direct broker tinyproxy; do
	case $k in direct) s=$D ;; broker) s=$B ;; tinyproxy) s=$T ;; esac
	read -r n secs < <(load bulk "$s")
	[ "$n" = "$bytes" ] || { echo "bench: $k delivered $n of $bytes bytes" >&2; exit 111; }
	mbs[$k]=$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.0f", n / s / 1048576 }')
	echo "bulk      $k: ${mbs[$k]} MiB/s"
done
echo "bulk      broker/direct $(ratio "${mbs[broker]}" "${mbs[direct]}") (target >= 0.8), broker/tinyproxy $(ratio "${mbs[broker]}" "${mbs[tinyproxy]}") (target >= 1.5)"

declare -A cps
for k in direct broker tinyproxy; do
	case $k in direct) s=direct:198.18.1.2:80 ;; broker) s=$B ;; tinyproxy) s=$T ;; esac
	cps[$k]=$(load rate "$s" "$conns")
	echo "rate      $k: ${cps[$k]} connections/s"
done
echo "rate      broker/tinyproxy $(ratio "${cps[broker]}" "${cps[tinyproxy]}") (target >= 2)"

hwm() { awk '/^VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
rss() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
# The real pid of each proxy (the unshare wrapper execs, so $! is it).
declare -A mem
for k in broker tinyproxy; do
	case $k in broker) s=$B p=$bpid ;; tinyproxy) s=$T p=$tpid ;; esac
	rm -f "$W/idle.in" "$W/idle.out"
	mkfifo "$W/idle.in" "$W/idle.out"
	exec {iout}<>"$W/idle.in" {iin}<>"$W/idle.out"
	load idle "$s" "$idle" <"$W/idle.in" >"$W/idle.out" &
	ipid=$!
	if read -r -t 300 line <&"$iin" && [ "$line" = "held $idle" ]; then
		mem[$k]="$(rss "$p") MiB now, peak $(hwm "$p") MiB"
	else
		mem[$k]="failed: ${line:-no answer}"
	fi
	exec {iout}>&- {iin}<&-
	wait "$ipid" 2>/dev/null || :
	echo "idle      $k: $idle tunnels: ${mem[$k]}"
done
echo "idle      target: broker peak < 64 MiB"

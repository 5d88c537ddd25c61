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
# 2. Rate: SBX_BENCH_CONNS (default 20000) CONNECT-and-close connections,
#    16 at a time, SBX_BENCH_ROUNDS (default 5) interleaved rounds, medians;
#    the direct line is a plain TCP connect-and-close. With each proxy's
#    own CPU time per connection.
# 3. Memory: SBX_BENCH_IDLE (default 10000) idle tunnels held open at once;
#    peak RSS (VmHWM) of the proxy process.
# The broker is reached on its Unix socket (its only interface), tinyproxy
# on TCP.
set -euo pipefail
: "${SBX_BIN:?set SBX_BIN to the directory of the sbx binaries}"
bytes=${SBX_BENCH_BYTES:-1073741824}
conns=${SBX_BENCH_CONNS:-20000}
rounds=${SBX_BENCH_ROUNDS:-5}
idle=${SBX_BENCH_IDLE:-10000}
for v in "$bytes" "$conns" "$idle" "$rounds"; do
	case $v in '' | *[!0-9]* | 0) echo "bench: usage: SBX_BENCH_BYTES, SBX_BENCH_CONNS, SBX_BENCH_IDLE and SBX_BENCH_ROUNDS are positive integers" >&2; exit 100 ;; esac
done
for t in tinyproxy python3 openssl ip unshare cc; do
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
trap "exit 143" TERM
trap "exit 130" INT
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
# Every measurement leaves its closed connections in TIME_WAIT on the
# dialling side; without reuse a later run pays for an earlier one's ports
# (or runs out of them). Both sysctls are per network namespace.
for ns in "$NB" "$NO"; do
	ip netns exec "$ns" sysctl -qw net.ipv4.ip_local_port_range="1024 65535" net.ipv4.tcp_tw_reuse=1
done
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

# The origin and the bulk and rate clients are C: a Python client tops out
# below the proxies it is meant to measure.
cat > "$W/load.c" <<'C'
/* Load generator and origin for bench/sbx-broker.sh.
 *   load origin ADDR SIZE          443: read the hello, send SIZE bytes, close;
 *                                  80: read until EOF, close (any number held)
 *   load bulk TARGET HELLO         one tunnel; prints "BYTES SECONDS"
 *   load rate TARGET N THREADS     N CONNECT-and-close; prints connections/s
 *                                  and its own CPU microseconds per connection
 * TARGET: unix:PATH (CONNECT), tcp:IP:PORT (CONNECT), direct:IP:PORT. */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int dial(const char *target, int *proxied)
{
	int fd;
	if (!strncmp(target, "unix:", 5)) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		strncpy(a.sun_path, target + 5, sizeof a.sun_path - 1);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (connect(fd, (void *)&a, sizeof a) < 0) { perror("connect"); exit(1); }
		*proxied = 1;
		return fd;
	}
	char host[64];
	const char *p = strchr(target, ':') + 1, *c = strrchr(target, ':');
	snprintf(host, sizeof host, "%.*s", (int)(c - p), p);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(atoi(c + 1)) };
	inet_pton(AF_INET, host, &a.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(fd, (void *)&a, sizeof a) < 0) { perror("connect"); exit(1); }
	*proxied = strncmp(target, "direct:", 7) != 0;
	return fd;
}

static void connect_req(int fd, int port)
{
	char req[128], buf[512];
	size_t n = 0;
	int l = snprintf(req, sizeof req, "CONNECT origin.test:%d HTTP/1.1\r\nHost: origin.test:%d\r\n\r\n", port, port);
	if (write(fd, req, l) != l) { perror("write"); exit(1); }
	/* Both proxies send their head alone and then wait for the client:
	 * read in blocks until its end. */
	while (n < sizeof buf - 1) {
		ssize_t r = read(fd, buf + n, sizeof buf - 1 - n);
		if (r <= 0) { fprintf(stderr, "proxy closed\n"); exit(1); }
		n += r;
		buf[n] = 0;
		if (strstr(buf, "\r\n\r\n"))
			break;
	}
	if (strncmp(buf + 9, "200", 3)) { fprintf(stderr, "proxy said %.200s\n", buf); exit(1); }
}

static const char *rate_target;
static long rate_each;
static void *rate_thread(void *arg)
{
	for (long i = 0; i < rate_each; i++) {
		int proxied, fd = dial(rate_target, &proxied);
		if (proxied)
			connect_req(fd, 80);
		close(fd);
	}
	return arg;
}

static void origin(const char *addr, long long size)
{
	int ep = epoll_create1(0), one = 1;
	int ls[2];
	for (int i = 0; i < 2; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(i ? 80 : 443) };
		inet_pton(AF_INET, addr, &a.sin_addr);
		ls[i] = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(ls[i], SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(ls[i], (void *)&a, sizeof a) || listen(ls[i], 4096)) { perror("bind"); exit(1); }
		struct epoll_event e = { .events = EPOLLIN, .data.fd = -1 - i };
		epoll_ctl(ep, EPOLL_CTL_ADD, ls[i], &e);
	}
	static char buf[1 << 20];
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		struct epoll_event ev[64];
		int n = epoll_wait(ep, ev, 64, -1);
		for (int i = 0; i < n; i++) {
			int d = ev[i].data.fd;
			if (d == -1) { /* bulk: served inline, one at a time */
				int c = accept(ls[0], NULL, NULL);
				if (read(c, buf, sizeof buf) <= 0) { close(c); continue; }
				for (long long left = size; left > 0;) {
					ssize_t w = write(c, buf, left < (long long)sizeof buf ? left : (long long)sizeof buf);
					if (w <= 0) break;
					left -= w;
				}
				close(c);
			} else if (d == -2) {
				int c = accept(ls[1], NULL, NULL);
				struct epoll_event e = { .events = EPOLLIN, .data.fd = c };
				if (c >= 0) epoll_ctl(ep, EPOLL_CTL_ADD, c, &e);
			} else if (read(d, buf, sizeof buf) <= 0) {
				close(d);
			}
		}
	}
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "origin")) {
		origin(argv[2], atoll(argv[3]));
	} else if (argc == 4 && !strcmp(argv[1], "bulk")) {
		static char buf[1 << 20];
		char hello[4096];
		FILE *f = fopen(argv[3], "rb");
		size_t hl = fread(hello, 1, sizeof hello, f);
		double t0 = now();
		int proxied, fd = dial(argv[2], &proxied);
		long long total = 0;
		ssize_t r;
		if (proxied)
			connect_req(fd, 443);
		if (write(fd, hello, hl) != (ssize_t)hl) { perror("write"); return 1; }
		while ((r = read(fd, buf, sizeof buf)) > 0)
			total += r;
		printf("%lld %.6f\n", total, now() - t0);
	} else if (argc == 5 && !strcmp(argv[1], "rate")) {
		int nt = atoi(argv[4]);
		pthread_t t[64];
		rate_target = argv[2];
		rate_each = atol(argv[3]) / nt;
		double t0 = now();
		for (int i = 0; i < nt; i++) pthread_create(&t[i], NULL, rate_thread, NULL);
		for (int i = 0; i < nt; i++) pthread_join(t[i], NULL);
		double secs = now() - t0;
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		printf("%.1f %.1f\n", rate_each * nt / secs,
		       (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6) /
			       (rate_each * nt) * 1e6);
	} else {
		fprintf(stderr, "load: usage: see the source\n");
		return 100;
	}
	return 0;
}
C
cc -O2 -pthread -o "$W/load" "$W/load.c"

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
    held = []
    async def one():
        async with sem:
            held.append(await tunnel(spec, True))
    try:
        await asyncio.gather(*(one() for _ in range(n)))
        print("held %d" % len(held), flush=True)
    except BaseException as e:
        print("failed after %d tunnels: %s" % (len(held), str(e)[:60].replace("\r\n", " ")), flush=True)
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

coproc ORIG { ip netns exec "$NO" "$W/load" origin 198.18.1.2 "$bytes"; }
pids+=("${ORIG_PID:?}")
read -r _ <&"${ORIG[0]}"


mkfifo "$W/ready"
exec {rfd}<>"$W/ready"
# Not through a function: $! must be the proxy itself (each step execs).
ip netns exec "$NB" unshare -m sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$W/hosts" \
	"$SBX_BIN/sbx-broker" --listen "$W/broker.sock" --allow-host origin.test --allow-private-networks \
	--max-request-bytes 1G --max-response-bytes 1T --max-wall-time 3600 --max-connections 20000 \
	--ready-fd 3 --log-fd 4 3>"$W/ready" 4>"$W/broker.log" &
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
ip netns exec "$NB" unshare -m sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$W/hosts" \
	tinyproxy -d -c "$W/tinyproxy.conf" >/dev/null 2>&1 &
tpid=$!
pids+=("$tpid")
for _ in $(seq 100); do
	ip netns exec "$NB" "$PY" -c 'import socket; socket.create_connection(("127.0.0.1", 8888), 1).close()' 2>/dev/null && break
	sleep 0.05
done

B=unix:$W/broker.sock T=tcp:127.0.0.1:8888 D=direct:198.18.1.2:443
# The memory test's client holds thousands of sockets: asyncio does that
# with the least code.
load() { ip netns exec "$NB" env HELLO="$W/hello.bin" "$PY" "$W/load.py" "$@"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo "sbx-broker bench: $(nproc) CPUs, $((bytes >> 20)) MiB bulk, $conns connections, $idle idle tunnels"
declare -A mbs
for k in direct broker tinyproxy; do
	case $k in direct) s=$D ;; broker) s=$B ;; tinyproxy) s=$T ;; esac
	read -r n secs < <(ip netns exec "$NB" "$W/load" bulk "$s" "$W/hello.bin")
	[ "$n" = "$bytes" ] || { echo "bench: $k delivered $n of $bytes bytes" >&2; exit 111; }
	mbs[$k]=$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.0f", n / s / 1048576 }')
	echo "bulk      $k: ${mbs[$k]} MiB/s"
done
echo "bulk      broker/direct $(ratio "${mbs[broker]}" "${mbs[direct]}") (target >= 0.8), broker/tinyproxy $(ratio "${mbs[broker]}" "${mbs[tinyproxy]}") (target >= 1.5)"

# Rate: interleaved rounds, medians. Beside the rate, the CPU time each
# proxy process spent per connection (user + system, every thread, from
# /proc/PID/stat): on a machine where client, proxy and origin share the
# CPUs, the rate ratio is bounded by what the kernel's TCP work costs all
# of them, and this says how much each proxy itself needs.
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
: > "$W/rate.direct"; : > "$W/rate.broker"; : > "$W/rate.tinyproxy"; : > "$W/cpu.direct"; : > "$W/cpu.broker"; : > "$W/cpu.tinyproxy"
for _ in $(seq 1 "$rounds"); do
	for k in direct broker tinyproxy; do
		case $k in direct) s=direct:198.18.1.2:80 p= ;; broker) s=$B p=$bpid ;; tinyproxy) s=$T p=$tpid ;; esac
		[ -z "$p" ] || c0=$(cpu "$p")
		read -r r cu < <(ip netns exec "$NB" "$W/load" rate "$s" "$conns" 16)
		echo "$r" >> "$W/rate.$k"
		# Direct: the dialling client's own CPU is what one TCP
		# connect-and-close with the origin costs (the floor of any proxy).
		[ -n "$p" ] || echo "$cu" >> "$W/cpu.direct"
		[ -z "$p" ] || awk -v a="$c0" -v b="$(cpu "$p")" -v hz="$hz" -v n="$conns" \
			'BEGIN { printf "%.1f\n", (b - a) / hz / n * 1e6 }' >> "$W/cpu.$k"
	done
done
declare -A cps us
for k in direct broker tinyproxy; do
	cps[$k]=$(median < "$W/rate.$k")
	us[$k]=$(median < "$W/cpu.$k")
	if [ "$k" = direct ]; then
		echo "rate      $k: ${cps[$k]} connections/s (median of $rounds: $(tr '\n' ' ' < "$W/rate.$k")); ${us[$k]} us of the client's CPU per connection"
	else
		echo "rate      $k: ${cps[$k]} connections/s (median of $rounds: $(tr '\n' ' ' < "$W/rate.$k")); ${us[$k]} us of its own CPU per connection"
	fi
done
echo "rate      broker/tinyproxy $(ratio "${cps[broker]}" "${cps[tinyproxy]}") (target >= 2); CPU per connection broker/tinyproxy $(ratio "${us[broker]}" "${us[tinyproxy]}")"
# Each proxy makes one TCP connect-and-close to the origin per connection:
# what that costs the direct client is a floor neither can go under.
above() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a - b }'; }
ab=$(above "${us[broker]}" "${us[direct]}") at=$(above "${us[tinyproxy]}" "${us[direct]}")
echo "rate      CPU above one direct TCP connect-and-close (${us[direct]} us): broker $ab us, tinyproxy $at us, broker/tinyproxy $(ratio "$ab" "$at")"

hwm() { awk '/^VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
rss() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
# The real pid of each proxy (the unshare wrapper execs, so $! is it).
declare -A mem
for k in broker tinyproxy; do
	case $k in broker) s=$B p=$bpid ;; tinyproxy) s=$T p=$tpid ;; esac
	rm -f "$W/idle.in" "$W/idle.out"
	mkfifo "$W/idle.in" "$W/idle.out"
	exec {iout}<>"$W/idle.in" {iin}<>"$W/idle.out"
	load idle "$s" "$idle" <"$W/idle.in" >"$W/idle.out" {iout}>&- {iin}<&- &
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

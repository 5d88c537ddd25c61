#!/bin/bash
# sbx-broker against tinyproxy and squid, like for like, side by side in
# one run (ratios; absolute numbers on these shared machines mean little).
# Everything runs in two network namespaces made here and removed at the
# end: "h" holds the clients and the proxies, "o" the origin on 198.18.1.2;
# no default route anywhere. Every proxy is reached over TCP on loopback:
# the broker through a listener handed to it the way sbx-ns hands a
# sandbox's (SBX-HANDOFF 1, the channel kept open and read), tinyproxy and
# squid (Debian's, with a minimal private configuration, in "h", never the
# system service) on their ports. The broker names the origin by --resolve,
# the others through a private /etc/hosts (squid: hosts_file).
#
#   bench/sbx-broker.sh     (as root; needs SBX_BIN, tinyproxy, squid, python3, openssl, cc)
#
# 1. Bulk: SBX_BENCH_BYTES (default 1 GiB) through one tunnel (CONNECT, a
#    real ClientHello, then the bytes from the origin), SBX_BENCH_ROUNDS
#    (default 5) interleaved rounds, medians; each proxy's own CPU seconds
#    per GiB beside those of a minimal splice relay written here (accept,
#    answer the CONNECT, dial, splice both ways): the floor.
# 2. Rate: SBX_BENCH_CONNS (default 20000) CONNECT-and-close connections,
#    16 at a time, interleaved rounds, medians, with each proxy's own CPU
#    per connection and that CPU above the floor of one direct TCP
#    connect-and-close (what the direct client pays for its own).
# SBX_BENCH_BROKER_BASE=PATH runs a second sbx-broker binary (an earlier
# build) beside SBX_BIN's as "base", in every part, with broker/base ratios.
# 3. Memory: SBX_BENCH_IDLE (default 10000, or what the fd limit allows,
#    said) idle tunnels held at once; each proxy's RSS before and with them,
#    and per tunnel.
set -euo pipefail
: "${SBX_BIN:?set SBX_BIN to the directory of the sbx binaries}"
bytes=${SBX_BENCH_BYTES:-1073741824}
conns=${SBX_BENCH_CONNS:-20000}
rounds=${SBX_BENCH_ROUNDS:-5}
idle=${SBX_BENCH_IDLE:-10000}
base=${SBX_BENCH_BROKER_BASE:-}
if [ -n "$base" ] && [ ! -x "$base" ]; then
	echo "bench: SBX_BENCH_BROKER_BASE=$base is not an executable" >&2
	exit 100
fi
for v in "$bytes" "$conns" "$idle" "$rounds"; do
	case $v in '' | *[!0-9]* | 0) echo "bench: usage: SBX_BENCH_BYTES, SBX_BENCH_CONNS, SBX_BENCH_IDLE and SBX_BENCH_ROUNDS are positive integers" >&2; exit 100 ;; esac
done
SQUID=$(command -v squid || echo /usr/sbin/squid)
for t in tinyproxy "$SQUID" python3 openssl ip unshare cc; do
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
	echo "bench: RLIMIT_NOFILE ($(ulimit -n)) allows $fit idle tunnels per process, not $idle: measuring $fit"
	idle=$fit
fi

. "$(dirname "$0")/ns-pair.bash" brk 198.18.1
# Source addresses of the direct client's threads (see dial_from()).
for i in $(seq 10 25); do ip -n "$NH" addr add "198.18.1.$i/24" dev "vbrk$$h"; done
# Every measurement leaves its closed connections in TIME_WAIT on the
# dialling side; without reuse a later run pays for an earlier one's ports
# (or runs out of them). Both sysctls are per network namespace.
# Hundreds of thousands of connections between the same two addresses
# within a minute would also meet their own TIME_WAITs on the origin's
# side (a SYN answered by an old connection's ACK waits a second for its
# retry): the origin's namespace keeps none. TIME_WAIT is not what is
# measured here.
for ns in "$NH" "$NO"; do
	ip netns exec "$ns" sysctl -qw net.ipv4.ip_local_port_range="1024 65535" net.ipv4.tcp_tw_reuse=1
done
ip netns exec "$NO" sysctl -qw net.ipv4.tcp_max_tw_buckets=0
echo "198.18.1.2 origin.test" > "$W/hosts"
chmod 0644 "$W/hosts"

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
coproc REC { ip netns exec "$NH" "$PY" "$W/record.py" "$W/hello.bin"; }
recpid=$REC_PID
read -r port <&"${REC[0]}"
ip netns exec "$NH" timeout 5 openssl s_client -connect "127.0.0.1:$port" -servername origin.test \
	</dev/null >/dev/null 2>&1 || :
wait "$recpid"

# The origin, the clients, the splice relay and the handoff are C: a
# Python client tops out below the proxies it is meant to measure.
cat > "$W/load.c" <<'C'
/* Load generator, origin, floor relay and handoff for bench/sbx-broker.sh.
 *   load origin ADDR SIZE          443: read the hello, send SIZE bytes, close;
 *                                  80: accept and close at once;
 *                                  8080: read until EOF, close (any number held)
 *   load bulk TARGET HELLO         one tunnel; prints "BYTES SECONDS"
 *   load rate TARGET N THREADS     N CONNECT-and-close; prints connections/s
 *                                  and its own CPU microseconds per connection
 *   load relay PORT IP:PORT        the floor: accept on 127.0.0.1:PORT, answer
 *                                  the CONNECT, dial IP:PORT, splice both ways
 *   load handoff SOCK PORT         a listener on 127.0.0.1:PORT handed to the
 *                                  broker at SOCK as sbx-ns does; then reads
 *                                  the channel (the decisions) until it ends
 * TARGET: tcp:IP:PORT (CONNECT first), direct:IP:PORT. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
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

static void addr_of(const char *hp, struct sockaddr_in *a)
{
	char host[64];
	const char *c = strrchr(hp, ':');
	snprintf(host, sizeof host, "%.*s", (int)(c - hp), hp);
	*a = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(atoi(c + 1)) };
	inet_pton(AF_INET, host, &a->sin_addr);
}

/* src: each client thread dials from an address of its own (127.0.0.N to
 * a proxy on loopback, 198.18.1.(8+N) directly), or 0 for any: threads
 * dialling one destination from one address contend for its ports in the
 * kernel, and the clients' TIME_WAIT (they close first) eats them. */
static int dial_from(const char *target, int *proxied, int src)
{
	struct sockaddr_in a;
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
	if (src) {
		struct sockaddr_in b = { .sin_family = AF_INET,
			.sin_addr.s_addr = htonl(strncmp(target, "direct:", 7) ? 0x7f000000 | src : 0xc6120108 + src) };
		setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
		if (bind(fd, (void *)&b, sizeof b) < 0) { perror("bind"); exit(1); }
	}
	addr_of(strchr(target, ':') + 1, &a);
	if (connect(fd, (void *)&a, sizeof a) < 0) { perror("connect"); exit(1); }
	*proxied = strncmp(target, "direct:", 7) != 0;
	return fd;
}

static int dial(const char *target, int *proxied)
{
	return dial_from(target, proxied, 0);
}

static void connect_req(int fd, int port)
{
	char req[128], buf[512];
	size_t n = 0;
	int l = snprintf(req, sizeof req, "CONNECT origin.test:%d HTTP/1.1\r\nHost: origin.test:%d\r\n\r\n", port, port);
	if (write(fd, req, l) != l) { perror("write"); exit(1); }
	/* Every proxy sends its head alone and then waits for the client:
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
	int src = 2 + (int)(long)arg;
	for (long i = 0; i < rate_each; i++) {
		int proxied, fd = dial_from(rate_target, &proxied, src);
		if (proxied)
			connect_req(fd, 80);
		close(fd);
	}
	return arg;
}

static void origin(const char *addr, long long size)
{
	int ep = epoll_create1(0), one = 1;
	int ls[3];
	for (int i = 0; i < 3; i++) {
		static const int ports[3] = { 443, 80, 8080 };
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(ports[i]) };
		inet_pton(AF_INET, addr, &a.sin_addr);
		ls[i] = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(ls[i], SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(ls[i], (void *)&a, sizeof a) || listen(ls[i], 4096)) { perror("bind"); exit(1); }
		if (i == 1)
			fcntl(ls[i], F_SETFL, O_NONBLOCK);
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
				/* Rate: the origin closes first, so that TIME_WAIT
				 * stays here, not on the dialling side in "h",
				 * where it would eat the ports every dialler
				 * shares and turn connect() into a port search. */
				int c;
				while ((c = accept4(ls[1], NULL, NULL, SOCK_NONBLOCK)) >= 0)
					close(c);
			} else if (d == -3) { /* idle: held until the client ends */
				int c = accept(ls[2], NULL, NULL);
				struct epoll_event e = { .events = EPOLLIN, .data.fd = c };
				if (c >= 0) epoll_ctl(ep, EPOLL_CTL_ADD, c, &e);
			} else if (read(d, buf, sizeof buf) <= 0) {
				close(d);
			}
		}
	}
}

/* The floor: the least a relay does per byte (splice through a pipe,
 * both ways) and per connection (accept, one read of the head, one
 * dial, one answer). */
struct half { int from, to; };
static void *splice_half(void *arg)
{
	struct half *h = arg;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) { perror("pipe"); exit(1); }
	fcntl(p[1], F_SETPIPE_SZ, 256 * 1024);
	for (;;) {
		ssize_t n = splice(h->from, NULL, p[1], NULL, 256 * 1024, SPLICE_F_MOVE);
		if (n <= 0)
			break;
		while (n > 0) {
			ssize_t w = splice(p[0], NULL, h->to, NULL, n, SPLICE_F_MOVE);
			if (w <= 0) { n = -1; break; }
			n -= w;
		}
		if (n < 0)
			break;
	}
	shutdown(h->to, SHUT_WR);
	close(p[0]);
	close(p[1]);
	return NULL;
}

static void relay(int port, const char *origin_hp)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) }, o;
	int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0);
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	addr_of(origin_hp, &o);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(ls, (void *)&a, sizeof a) || listen(ls, 4096)) { perror("bind"); exit(1); }
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		char head[1024];
		int c = accept(ls, NULL, NULL), u;
		pthread_t t;
		if (c < 0 || read(c, head, sizeof head) <= 0) { close(c); continue; }
		u = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(u, (void *)&o, sizeof o) < 0 || write(c, ok, sizeof ok - 1) < 0) {
			close(u); close(c); continue;
		}
		struct half up = { c, u }, down = { u, c };
		pthread_create(&t, NULL, splice_half, &up);
		splice_half(&down);
		pthread_join(t, NULL);
		close(u);
		close(c);
	}
}

static void handoff(const char *path, int port)
{
	struct sockaddr_un su = { .sun_family = AF_UNIX };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	static const char hello[] = "SBX-HANDOFF 1\n";
	char cbuf[CMSG_SPACE(sizeof(int))], buf[65536];
	struct iovec iov = { (void *)hello, sizeof hello - 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0), s = socket(AF_UNIX, SOCK_STREAM, 0);
	ssize_t n;
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(ls, (void *)&a, sizeof a) || listen(ls, 4096)) { perror("bind"); exit(1); }
	strncpy(su.sun_path, path, sizeof su.sun_path - 1);
	if (connect(s, (void *)&su, sizeof su) < 0) { perror("connect"); exit(1); }
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &ls, sizeof ls);
	if (sendmsg(s, &m, 0) != (ssize_t)(sizeof hello - 1)) { perror("sendmsg"); exit(1); }
	close(ls);
	n = read(s, buf, 15);
	if (n != 15 || memcmp(buf, "SBX-HANDOFF OK\n", 15)) { fprintf(stderr, "handoff refused\n"); exit(1); }
	printf("ready\n");
	fflush(stdout);
	while (read(s, buf, sizeof buf) > 0)
		;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "origin")) {
		origin(argv[2], atoll(argv[3]));
	} else if (argc == 4 && !strcmp(argv[1], "relay")) {
		relay(atoi(argv[2]), argv[3]);
	} else if (argc == 4 && !strcmp(argv[1], "handoff")) {
		handoff(argv[2], atoi(argv[3]));
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
		for (int i = 0; i < nt; i++) pthread_create(&t[i], NULL, rate_thread, (void *)(long)i);
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

# The idle client holds thousands of sockets: asyncio does that with the
# least code.
cat > "$W/idle.py" <<'PY'
import asyncio, os, sys
HELLO = open(os.environ["HELLO"], "rb").read()
async def tunnel(host, port):
    r, w = await asyncio.open_connection(host, port)
    w.write(b"CONNECT origin.test:8080 HTTP/1.1\r\nHost: origin.test:8080\r\n\r\n")
    head = await r.readuntil(b"\r\n\r\n")
    if b" 200 " not in head.split(b"\r\n")[0] + b" ":
        raise SystemExit("proxy said %r" % head[:80])
    w.write(HELLO)
    await w.drain()
    return r, w
async def idle(host, port, n):
    sem = asyncio.Semaphore(200)
    held = []
    async def one():
        async with sem:
            # A proxy out of descriptors may stop answering rather than
            # refuse: that ends the count, it does not hang the bench.
            held.append(await asyncio.wait_for(tunnel(host, port), 10))
    try:
        await asyncio.gather(*(one() for _ in range(n)))
        print("held %d" % len(held), flush=True)
    except BaseException as e:
        print("held %d failed: %s" % (len(held), (str(e) or type(e).__name__)[:60].replace("\r\n", " ")), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    for r, w in held:
        w.close()
asyncio.run(idle(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
PY

# start NAME COMMAND...: in "h", its pid in $spid, once it says "ready".
start() {
	local name=$1
	shift
	rm -f "$W/$name.rd"
	mkfifo "$W/$name.rd"
	exec {sfd}<>"$W/$name.rd"
	ip netns exec "$NH" "$@" >"$W/$name.rd" 2>>"$W/$name.err" &
	spid=$!
	pids+=("$spid")
	read -r -t 20 -u "$sfd" _ || { echo "bench: $name did not start: $(cat "$W/$name.err")" >&2; exit 111; }
	exec {sfd}<&-
}
wait_port() { net_wait_port "$NH" 127.0.0.1 "$1" || { echo "bench: nothing listens on 127.0.0.1:$1" >&2; exit 111; }; }

coproc ORIG { ip netns exec "$NO" "$W/load" origin 198.18.1.2 "$bytes"; }
pids+=("${ORIG_PID:?}")
read -r _ <&"${ORIG[0]}"
opid=$(ip netns pids "$NO") # the origin is all that runs there

# The broker: its own socket, and a listener on 127.0.0.1:3128 handed to
# it; the keeper reads the decision lines as sbx-ns would.
# broker NAME BINARY PORT: started, its pid in $bpid, its listener handed.
broker() {
	rm -f "$W/ready"
	mkfifo "$W/ready"
	exec {rfd}<>"$W/ready"
	ip netns exec "$NH" "$2" --listen "$W/$1.sock" --allow-host origin.test \
		--resolve origin.test=198.18.1.2 --allow-private-networks --allow-port 80 --allow-port 443 --allow-port 8080 \
		--max-request-bytes 1G --max-response-bytes 1T --max-wall-time 3600 \
		--max-connections 20000 --max-sandbox-connections 20000 \
		--ready-fd 3 --log-fd 4 3>"$W/ready" 4>"$W/$1.log" &
	bpid=$!
	pids+=("$bpid")
	read -r -t 10 -u "$rfd" _ || { echo "bench: $2 did not start" >&2; exit 111; }
	exec {rfd}<&-
	start "$1-keeper" "$W/load" handoff "$W/$1.sock" "$3"
}
if [ -n "$base" ]; then
	broker base "$base" 3127
	basepid=$bpid
fi
broker broker "$SBX_BIN/sbx-broker" 3128

cat > "$W/tinyproxy.conf" <<CONF
Port 8888
Listen 127.0.0.1
Timeout 3600
MaxClients 20000
Allow 127.0.0.0/8
LogLevel Critical
CONF
ip netns exec "$NH" unshare -m sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$W/hosts" \
	tinyproxy -d -c "$W/tinyproxy.conf" >/dev/null 2>&1 &
tpid=$!
pids+=("$tpid")
wait_port 8888

# squid: nothing cached, nothing logged, names from the private hosts file.
cat > "$W/squid.conf" <<CONF
http_port 127.0.0.1:3129
acl local src 127.0.0.0/8
http_access allow local
http_access deny all
cache deny all
cache_mem 0 MB
access_log none
cache_store_log none
cache_log /dev/null
pid_filename none
hosts_file $W/hosts
dns_nameservers 127.0.0.1
shutdown_lifetime 0 seconds
max_filedescriptors $(ulimit -n)
client_lifetime 1 hour
read_timeout 1 hour
via off
forwarded_for delete
CONF
ip netns exec "$NH" "$SQUID" -N -f "$W/squid.conf" >/dev/null 2>"$W/squid.err" &
qpid=$!
pids+=("$qpid")
wait_port 3129

start relay "$W/load" relay 3130 198.18.1.2:443
rpid=$spid

b2=${base:+base}
kinds="direct relay broker $b2 tinyproxy squid"
target() {
	case $1 in
	direct) echo "direct:198.18.1.2:$2" ;; relay) echo tcp:127.0.0.1:3130 ;;
	broker) echo tcp:127.0.0.1:3128 ;; base) echo tcp:127.0.0.1:3127 ;;
	tinyproxy) echo tcp:127.0.0.1:8888 ;; squid) echo tcp:127.0.0.1:3129 ;;
	esac
}
pidof_kind() {
	case $1 in
	relay) echo "$rpid" ;; broker) echo "$bpid" ;; base) echo "$basepid" ;;
	tinyproxy) echo "$tpid" ;; squid) echo "$qpid" ;; *) echo ;;
	esac
}
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
list() { tr '\n' ' ' < "$1" | sed 's/ $//'; }

echo "sbx-broker bench: $(nproc) CPUs, $((bytes >> 20)) MiB bulk, $conns connections, $rounds rounds, $idle idle tunnels${base:+; base: $base}"

# Bulk: interleaved rounds; MiB/s, and each process's CPU seconds per GiB.
for k in $kinds; do : > "$W/bulk.$k"; : > "$W/bcpu.$k"; done
for _ in $(seq 1 "$rounds"); do
	for k in $kinds; do
		p=$(pidof_kind "$k")
		[ -z "$p" ] || c0=$(cpu "$p")
		read -r n secs < <(ip netns exec "$NH" "$W/load" bulk "$(target "$k" 443)" "$W/hello.bin")
		[ "$n" = "$bytes" ] || { echo "bench: $k delivered $n of $bytes bytes" >&2; exit 111; }
		awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.0f\n", n / s / 1048576 }' >> "$W/bulk.$k"
		[ -z "$p" ] || awk -v a="$c0" -v b="$(cpu "$p")" -v hz="$hz" -v n="$n" \
			'BEGIN { printf "%.3f\n", (b - a) / hz / (n / 1073741824) }' >> "$W/bcpu.$k"
	done
done
declare -A mbs scpu
for k in $kinds; do
	mbs[$k]=$(median < "$W/bulk.$k")
	if [ "$k" = direct ]; then
		echo "bulk      $k: ${mbs[$k]} MiB/s (rounds: $(list "$W/bulk.$k"))"
	else
		scpu[$k]=$(median < "$W/bcpu.$k")
		echo "bulk      $k: ${mbs[$k]} MiB/s (rounds: $(list "$W/bulk.$k")); ${scpu[$k]} CPU s/GiB (rounds: $(list "$W/bcpu.$k"))"
	fi
done
echo "bulk      CPU per GiB against the splice floor: broker $(ratio "${scpu[broker]}" "${scpu[relay]}")x (target <= 1.2), tinyproxy $(ratio "${scpu[tinyproxy]}" "${scpu[relay]}")x, squid $(ratio "${scpu[squid]}" "${scpu[relay]}")x"
[ -z "$base" ] || echo "bulk      broker/base: $(ratio "${mbs[broker]}" "${mbs[base]}")x the throughput, $(ratio "${scpu[broker]}" "${scpu[base]}")x the CPU per GiB"

# Rate: interleaved rounds, medians; each proxy's own CPU per connection
# (user + system, every thread, /proc/PID/stat). Direct: the dialling
# client's own CPU, what one TCP connect-and-close with the origin costs:
# every proxy makes one such connection per client connection, a floor
# none can go under.
rkinds="direct broker $b2 tinyproxy squid"
for k in $rkinds accept; do : > "$W/rate.$k"; : > "$W/cpu.$k"; done
# SYNs the origin's listener dropped (ListenOverflows), per kind: each
# costs its dialler a one-second retransmission, which a rate shows and a
# CPU time does not.
overflows() { ip netns exec "$NO" awk '$1 == "TcpExt:" && !h { for (i = 2; i <= NF; i++) n[i] = $i; h = 1; next }
	$1 == "TcpExt:" { for (i = 2; i <= NF; i++) if (n[i] == "ListenOverflows") print $i }' /proc/net/netstat; }
declare -A drops
for _ in $(seq 1 "$rounds"); do
	for k in $rkinds; do
		p=$(pidof_kind "$k")
		o0=$(overflows)
		[ -z "$p" ] || c0=$(cpu "$p")
		[ -n "$p" ] || oc0=$(cpu "$opid")
		read -r r cu < <(ip netns exec "$NH" "$W/load" rate "$(target "$k" 80)" "$conns" 16)
		echo "$r" >> "$W/rate.$k"
		drops[$k]=$((${drops[$k]:-0} + $(overflows) - o0))
		if [ -z "$p" ]; then
			echo "$cu" >> "$W/cpu.direct"
			# The other side of the same connections: what accepting
			# and closing one costs the origin.
			awk -v a="$oc0" -v b="$(cpu "$opid")" -v hz="$hz" -v n="$conns" \
				'BEGIN { printf "%.1f\n", (b - a) / hz / n * 1e6 }' >> "$W/cpu.accept"
		else
			awk -v a="$c0" -v b="$(cpu "$p")" -v hz="$hz" -v n="$conns" \
				'BEGIN { printf "%.1f\n", (b - a) / hz / n * 1e6 }' >> "$W/cpu.$k"
		fi
	done
done
declare -A cps us above
for k in $rkinds; do
	cps[$k]=$(median < "$W/rate.$k")
	us[$k]=$(median < "$W/cpu.$k")
	if [ "$k" = direct ]; then
		echo "rate      $k: ${cps[$k]} connections/s (rounds: $(list "$W/rate.$k")); ${us[$k]} us of the client's CPU per connection (the floor), $(median < "$W/cpu.accept") us of the origin's to accept and close one; ${drops[$k]} SYNs dropped by the origin's listener"
	else
		above[$k]=$(awk -v a="${us[$k]}" -v b="${us[direct]}" 'BEGIN { printf "%.1f", a - b }')
		echo "rate      $k: ${cps[$k]} connections/s (rounds: $(list "$W/rate.$k")); ${us[$k]} us of its own CPU per connection, ${above[$k]} above the floor; ${drops[$k]} SYNs dropped by the origin's listener"
	fi
done
echo "rate      broker/tinyproxy: $(ratio "${cps[broker]}" "${cps[tinyproxy]}")x the rate, $(ratio "${above[broker]}" "${above[tinyproxy]}")x the CPU above the floor (target <= 0.5); broker/squid: $(ratio "${cps[broker]}" "${cps[squid]}")x, $(ratio "${above[broker]}" "${above[squid]}")x"
[ -z "$base" ] || echo "rate      broker/base: $(ratio "${cps[broker]}" "${cps[base]}")x the rate, $(ratio "${us[broker]}" "${us[base]}")x the CPU per connection"

# Idle tunnels: RSS before and while holding them, per tunnel.
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
hwm() { awk '/^VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
for k in broker $b2 tinyproxy squid; do
	p=$(pidof_kind "$k")
	t=$(target "$k" 0)
	port=${t##*:}
	before=$(rss "$p")
	rm -f "$W/idle.in" "$W/idle.out"
	mkfifo "$W/idle.in" "$W/idle.out"
	exec {iout}<>"$W/idle.in" {iin}<>"$W/idle.out"
	ip netns exec "$NH" env HELLO="$W/hello.bin" "$PY" "$W/idle.py" 127.0.0.1 "$port" "$idle" \
		<"$W/idle.in" >"$W/idle.out" {iout}>&- {iin}<&- &
	ipid=$!
	line=
	read -r -t 600 line <&"$iin" || :
	n=$(echo "$line" | awk '$1 == "held" { print $2 }')
	if [ -n "$n" ] && [ "$n" -gt 0 ]; then
		after=$(rss "$p")
		echo "idle      $k: $line; RSS $(awk -v a="$before" 'BEGIN { printf "%.1f", a / 1024 }') MiB before, $(awk -v a="$after" 'BEGIN { printf "%.1f", a / 1024 }') MiB with them (peak $(hwm "$p") MiB): $(awk -v a="$before" -v b="$after" -v n="$n" 'BEGIN { printf "%.2f", (b - a) / n }') KiB per tunnel, $(awk -v a="$before" -v b="$after" -v n="$n" 'BEGIN { printf "%.1f", (b - a) / n * 10000 / 1024 }') MiB per 10,000"
	else
		echo "idle      $k: ${line:-no answer}"
	fi
	exec {iout}>&- {iin}<&-
	wait "$ipid" 2>/dev/null || :
done
echo "idle      target: the broker's 10,000 idle tunnels under 16 MiB"

#!/bin/bash
# sbx-broker's service route against its own CONNECT tunnel and against
# nginx as a TLS-originating reverse proxy, side by side in one run: the
# same origin (tests/tlsorigin.bash's nginx, private CA, "Authorization:
# Bearer TOKEN" demanded) and the same client, curl, fetching /file.txt.
#
#   route    curl -x BROKER http://svc/file.txt: the broker opens TLS to
#            svc.test, verifies it with the CA, adds the header
#   tunnel   curl -p -x BROKER https://svc.test/file.txt: CONNECT, the
#            client's own TLS and header through the broker
#   nginx    curl http://127.0.0.1:8080/file.txt: nginx (Debian's, one
#            process: master_process off) with proxy_pass https://svc.test,
#            proxy_ssl_verify on with the same CA, proxy_ssl_server_name on,
#            TLS 1.2/1.3, the same header set by proxy_set_header; its
#            defaults otherwise (a new upstream connection per request,
#            TLS sessions resumed)
#   nginx-full  the same on port 8081 with proxy_ssl_session_reuse off: a
#            full handshake (certificate chain verified) per request
#
# Every request is a connection of its own ("Connection: close") from
# SBX_BENCH_CLIENTS (default 4) curl processes at once, each fetching its
# share of SBX_BENCH_REQUESTS (default 2000) URLs; SBX_BENCH_ROUNDS
# (default 5) interleaved rounds, medians. For each: requests per second
# and the proxy's own CPU per request (utime + stime of its process from
# /proc/PID/stat, before and after), then the ratios. The broker is
# reached over TCP on loopback through a listener handed to it the way
# sbx-ns hands a sandbox's (SBX-HANDOFF 1, the channel drained). Two
# network namespaces made here ("h": broker, nginx, clients; "o": the
# origin on 198.18.13.2), no default route, removed at the end.
#
#   bench/sbx-broker-service.sh   (as root; needs SBX_BIN, nginx, fcgiwrap,
#                                  curl, openssl, git, python3)
set -euo pipefail
: "${SBX_BIN:?set SBX_BIN to the directory of the sbx binaries}"
reqs=${SBX_BENCH_REQUESTS:-2000}
rounds=${SBX_BENCH_ROUNDS:-5}
clients=${SBX_BENCH_CLIENTS:-4}
for v in "$reqs" "$rounds" "$clients"; do
	case $v in '' | *[!0-9]* | 0) echo "bench: usage: SBX_BENCH_REQUESTS, SBX_BENCH_ROUNDS and SBX_BENCH_CLIENTS are positive integers" >&2; exit 100 ;; esac
done
[ "$(id -u)" = 0 ] || { echo "bench: run as root (network namespaces)" >&2; exit 111; }
for t in nginx fcgiwrap curl openssl git ip unshare; do
	command -v "$t" >/dev/null || { echo "bench: $t is missing (deps/packages.sh test)" >&2; exit 111; }
done
PY=$(command -v /usr/bin/python3 || command -v python3) || { echo "bench: python3 is missing" >&2; exit 111; }
here=$(cd "$(dirname "$0")" && pwd)

. "$here/ns-pair.bash" svc 198.18.13
. "$here/../tests/tlsorigin.bash"

for ns in "$NH" "$NO"; do
	ip netns exec "$ns" sysctl -qw net.ipv4.ip_local_port_range="1024 65535" net.ipv4.tcp_tw_reuse=1
done
ip netns exec "$NO" sysctl -qw net.ipv4.tcp_max_tw_buckets=0
echo "198.18.13.2 svc.test" >"$W/hosts"
T="$W/tls"
tls_pki "$T" svc.test
token=sbxtok-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
printf 'Authorization: Bearer %s\r\n' "$token" >"$T/svc.hdr"
printf 'Authorization: Bearer %s\n' "$token" >"$T/auth"
chmod 0600 "$T/svc.hdr" "$T/auth"
tls_origin "$NO" 198.18.13.2 svc.test "$T" "$token" sbxuser:sbxpass

# in_h CMD...: CMD in "h" with svc.test in its /etc/hosts, in the pid of
# the call (each step execs the next), so that the proxies' $! is theirs.
in_h=(ip netns exec "$NH" unshare -m --propagation private sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$W/hosts")
in_h() { "${in_h[@]}" "$@"; }

# The broker, its listener handed over as sbx-ns does.
mkfifo "$W/ready"
exec {rfd}<>"$W/ready"
"${in_h[@]}" "$SBX_BIN/sbx-broker" --listen "$W/broker.sock" --allow-private-networks --allow-host svc.test \
	--max-connections 20000 --service svc=https://svc.test --service-header "svc=$T/svc.hdr" \
	--service-ca "svc=$T/ca.pem" --ready-fd 3 3>"$W/ready" </dev/null >/dev/null 2>"$W/broker.err" &
broker=$!
BG_PIDS+=("$broker")
read -r -t 10 -u "$rfd" _ || { cat "$W/broker.err" >&2; exit 1; }
ip netns exec "$NH" "$PY" -c '
import socket, sys
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 3128))
ls.listen(4096)
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
socket.send_fds(s, [b"SBX-HANDOFF 1\n"], [ls.fileno()])
ls.close()
if s.recv(15) != b"SBX-HANDOFF OK\n":
    sys.exit("bench: the broker refused the handoff")
print("ready", flush=True)
while s.recv(65536):
    pass
' "$W/broker.sock" </dev/null >"$W/ready" 2>&1 &
BG_PIDS+=($!)
read -r -t 10 -u "$rfd" line
[ "$line" = ready ] || { echo "bench: handoff: $line" >&2; exit 1; }

# nginx as the peer, in "h" like the broker.
mkdir -m 0700 "$W/rp"
# rp_server PORT [DIRECTIVE]: a server block proxying to svc.test.
rp_server() {
	cat <<-EOF
		server {
			listen 127.0.0.1:$1;
			location / {
				proxy_pass https://svc.test;
				${2:-}
				proxy_ssl_verify on;
				proxy_ssl_trusted_certificate $T/ca.pem;
				proxy_ssl_server_name on;
				proxy_ssl_name svc.test;
				proxy_ssl_protocols TLSv1.2 TLSv1.3;
				proxy_http_version 1.1;
				proxy_set_header Host svc.test;
				proxy_set_header Authorization "Bearer $token";
			}
		}
	EOF
}
{
	tls_nginx_head "$W/rp" 4096
	printf '\taccess_log off;\n'
	rp_server 8080
	rp_server 8081 "proxy_ssl_session_reuse off;"
	echo "}"
} >"$W/rp/nginx.conf"
"${in_h[@]}" nginx -e "$W/rp/error.log" -p "$W/rp" -c "$W/rp/nginx.conf" </dev/null >/dev/null 2>>"$W/rp/error.log" &
nginx=$!
BG_PIDS+=("$nginx")
net_wait_port "$NH" 127.0.0.1 8080
net_wait_port "$NH" 127.0.0.1 8081
[ "$(cat "/proc/$broker/comm")" = sbx-broker ] && [ "$(cat "/proc/$nginx/comm")" = nginx ] ||
	{ echo "bench: the proxies' pids are not theirs" >&2; exit 1; }

# The clients' URL lists, one per client process.
per=$((reqs / clients))
reqs=$((per * clients))
for kind in route tunnel nginx nginx-full; do
	case $kind in
	route) url=http://svc/file.txt ;;
	tunnel) url=https://svc.test/file.txt ;;
	nginx) url=http://127.0.0.1:8080/file.txt ;;
	nginx-full) url=http://127.0.0.1:8081/file.txt ;;
	esac
	for ((i = 0; i < per; i++)); do printf 'url = "%s"\noutput = "/dev/null"\n' "$url"; done >"$W/$kind.urls"
done
client() {
	local kind=$1 args=(-sS -K "$W/$1.urls" -w '%{http_code}\n' -H "Connection: close")
	case $kind in
	route) args+=(-x http://127.0.0.1:3128) ;;
	tunnel) args+=(-p -x http://127.0.0.1:3128 --cacert "$T/ca.pem" -H @"$T/auth") ;;
	esac
	in_h curl "${args[@]}"
}
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# One round of KIND against PID: "REQUESTS/S MICROSECONDS/REQUEST".
round() {
	local kind=$1 pid=$2 c0 c1 t0 t1 i ok cl=()
	c0=$(cpu "$pid")
	t0=$(date +%s.%N)
	for ((i = 0; i < clients; i++)); do
		client "$kind" >"$W/out.$i" 2>&1 &
		cl+=($!)
	done
	wait "${cl[@]}" || :
	t1=$(date +%s.%N)
	c1=$(cpu "$pid")
	ok=$(cat "$W"/out.* | grep -c '^200$' || :)
	if [ "$ok" != "$reqs" ]; then
		echo "bench: $kind: $ok of $reqs answers were 200:" >&2
		sort "$W"/out.* | uniq -c | head -5 >&2
		exit 1
	fi
	rm -f "$W"/out.*
	awk -v n="$reqs" -v t0="$t0" -v t1="$t1" -v c="$((c1 - c0))" -v hz="$hz" \
		'BEGIN { printf "%.1f %.1f\n", n / (t1 - t0), c / hz / n * 1e6 }'
}

# A check first: the route answers the file, and the token reached the origin.
out=$(in_h curl -sS -x http://127.0.0.1:3128 http://svc/file.txt)
[ "$out" = "sbx service file" ] || { echo "bench: the route answered: $out" >&2; exit 1; }
for p in 8080 8081; do
	out=$(in_h curl -sS http://127.0.0.1:$p/file.txt)
	[ "$out" = "sbx service file" ] || { echo "bench: nginx on $p answered: $out" >&2; exit 1; }
done

echo "sbx-broker service route vs CONNECT tunnel vs nginx reverse proxy: $reqs requests per round, $clients clients, $rounds rounds (one connection per request)"
for ((r = 1; r <= rounds; r++)); do
	round route "$broker" >>"$W/route.res"
	round tunnel "$broker" >>"$W/tunnel.res"
	round nginx "$nginx" >>"$W/nginx.res"
	round nginx-full "$nginx" >>"$W/nginx-full.res"
	printf 'round %d: route %s, tunnel %s, nginx %s, nginx-full %s (req/s, proxy CPU µs/req)\n' "$r" \
		"$(tail -1 "$W/route.res")" "$(tail -1 "$W/tunnel.res")" "$(tail -1 "$W/nginx.res")" "$(tail -1 "$W/nginx-full.res")"
done
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for k in route tunnel nginx nginx-full; do
	eval "${k//-/_}_rate=$(cut -d' ' -f1 "$W/$k.res" | median)"
	eval "${k//-/_}_cpu=$(cut -d' ' -f2 "$W/$k.res" | median)"
done
printf 'route:  %8.1f req/s, broker %6.1f µs CPU/req\n' "$route_rate" "$route_cpu"
printf 'tunnel: %8.1f req/s, broker %6.1f µs CPU/req (the client does the TLS)\n' "$tunnel_rate" "$tunnel_cpu"
printf 'nginx:  %8.1f req/s, nginx  %6.1f µs CPU/req (TLS sessions resumed)\n' "$nginx_rate" "$nginx_cpu"
printf 'nginx-full: %8.1f req/s, nginx %6.1f µs CPU/req (a full handshake each)\n' "$nginx_full_rate" "$nginx_full_cpu"
awk -v rr="$route_rate" -v rc="$route_cpu" -v tr="$tunnel_rate" -v tc="$tunnel_cpu" -v nr="$nginx_rate" -v nc="$nginx_cpu" \
	-v fr="$nginx_full_rate" -v fc="$nginx_full_cpu" 'BEGIN {
	printf "route/nginx: %.2fx the rate, %.2fx the CPU per request (target: at most 1x)\n", rr / nr, rc / nc
	printf "route/nginx-full: %.2fx the rate, %.2fx the CPU per request\n", rr / fr, rc / fc
	printf "route/tunnel: %.2fx the rate, %.2fx the broker CPU per request\n", rr / tr, rc / tc
}'

#!/usr/bin/env bats
# sbx-broker --allow-address: a host whose resolver answers with reserved
# addresses (203.0.113.0/24 and 2001:db8::/32 here, as sinkhole and
# fake-IP resolvers do) reaches them once the administrator names the
# range, by every way an address reaches the broker: a DNS answer
# (tests/slow-dns.py on 127.0.0.1:53 in "h"), a --resolve pin, through an
# --upstream proxy, and from a transparent sandbox. Loopback, metadata and
# the host's own addresses stay closed under any covering range. The
# brokers and their clients run in namespace "h" (its own 198.18.7.1,
# 203.0.113.1 and 2001:db8::1, a decoy on its port 80 that only an address
# named exactly reaches); the origins in "o"
# on 203.0.113.7, 2001:db8::7 and 169.254.169.254 say which address they
# were reached on.

load helpers
load ns-net
load recipes
bats_require_minimum_version 1.5.0

setup_file() {
	local fd rc=0 a
	net_setup_file
	ip -n "$NH" addr add 203.0.113.1/24 dev "vh$$"
	ip -n "$NO" addr add 203.0.113.7/24 dev "vo$$"
	ip -n "$NO" addr add 203.0.113.8/24 dev "vo$$" # the README's egress recipe's origin
	ip -n "$NH" addr add 2001:db8::1/64 dev "vh$$" nodad
	ip -n "$NO" addr add 2001:db8::7/64 dev "vo$$" nodad
	ip -n "$NO" addr add 169.254.169.254/32 dev "vo$$"
	ip -n "$NH" route add 169.254.169.254/32 dev "vh$$"
	cat > "$NET_DIR/where.py" <<-'PY'
	# An HTTP origin that says which of its addresses it was reached on,
	# and logs "GET PATH ADDRESS" for every request.
	import http.server, socket, socketserver, sys
	class H(http.server.BaseHTTPRequestHandler):
	    protocol_version = "HTTP/1.1"
	    def log_message(self, *a):
	        pass
	    def do_GET(self):
	        here = self.connection.getsockname()[0]
	        with open(sys.argv[3], "a") as f:
	            f.write("GET %s %s\n" % (self.path, here))
	        body = ("hello from %s\n" % here).encode()
	        self.send_response(200)
	        self.send_header("Content-Length", str(len(body)))
	        self.end_headers()
	        self.wfile.write(body)
	class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
	    daemon_threads = True
	    allow_reuse_address = True
	    address_family = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
	S((sys.argv[1], int(sys.argv[2])), H).serve_forever()
	PY
	for a in 203.0.113.7 2001:db8::7 169.254.169.254; do
		ip netns exec "$NO" "$PY" "$NET_DIR/where.py" "$a" 80 "$NET_DIR/where.log" \
			</dev/null >/dev/null 2>>"$NET_DIR/where.err" 3>&- &
		echo $! >> "$NET_DIR/pids"
		net_wait_port "$NO" "$a" 80
	done
	# TLS on 203.0.113.7:443 for the names that resolve there.
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-subj /CN=pin4.addr.test -addext subjectAltName=DNS:pin4.addr.test,DNS:www.v4.test \
		-keyout "$NET_DIR/addr-key.pem" -out "$NET_DIR/addr-cert.pem" 2>/dev/null
	chmod 0644 "$NET_DIR/addr-cert.pem"
	ip netns exec "$NO" openssl s_server -quiet -www -accept 203.0.113.7:443 \
		-cert "$NET_DIR/addr-cert.pem" -key "$NET_DIR/addr-key.pem" </dev/null >/dev/null 2>&1 3>&- &
	echo $! >> "$NET_DIR/pids"
	net_wait_port "$NO" 203.0.113.7 443
	# The host's own port 80, on every address of "h" (127.0.0.1 and
	# 203.0.113.1 among them): nothing may ever reach it.
	ip netns exec "$NH" "$PY" "$NET_DIR/where.py" 0.0.0.0 80 "$NET_DIR/decoy.log" \
		</dev/null >/dev/null 2>>"$NET_DIR/where.err" 3>&- &
	echo $! >> "$NET_DIR/pids"
	net_wait_port "$NH" 127.0.0.1 80
	: > "$NET_DIR/decoy.log"
	# Names under v4.test resolve to 203.0.113.7 only, under v6.test to
	# 2001:db8::7 only, under both.test to both; under rebind.test to both
	# once, then to loopback.
	mkfifo "$NET_DIR/dns.ready"
	exec {fd}<>"$NET_DIR/dns.ready"
	ip netns exec "$NH" "$PY" "$BATS_TEST_DIRNAME/slow-dns.py" 127.0.0.1 203.0.113.7,2001:db8::7 \
		"$NET_DIR/dns.log" "$NET_DIR/dns.ready" </dev/null >/dev/null 2>>"$NET_DIR/dns.err" 3>&- &
	echo $! >> "$NET_DIR/pids"
	read -r -t 10 -u "$fd" _ || rc=$?
	exec {fd}<&-
	[ "$rc" = 0 ]
	cat > "$NET_DIR/tinyproxy.conf" <<-CONF
	Port 8888
	Listen 127.0.0.1
	Timeout 30
	MaxClients 50
	Allow 127.0.0.1
	LogLevel Critical
	CONF
	ip netns exec "$NH" tinyproxy -d -c "$NET_DIR/tinyproxy.conf" </dev/null >/dev/null 2>&1 3>&- &
	echo $! >> "$NET_DIR/pids"
	net_wait_port "$NH" 127.0.0.1 8888

	local names=(--allow-host '*.addr.test' --allow-host '*.v4.test' --allow-host '*.v6.test'
		--allow-host '*.both.test' --allow-host '*.rebind.test'
		--resolve pin4.addr.test=203.0.113.7 --resolve pin6.addr.test=2001:db8::7
		--resolve lo.addr.test=127.0.0.1 --resolve mapped.addr.test=::ffff:127.0.0.1
		--resolve zero.addr.test=0.0.0.0 --resolve any6.addr.test=:: --resolve lo6.addr.test=::1
		--resolve meta.addr.test=169.254.169.254 --resolve self.addr.test=203.0.113.1
		--resolve self6.addr.test=2001:db8::1
		--resolve nat64lo.addr.test=64:ff9b::7f00:1 --resolve nat64meta.addr.test=64:ff9b::a9fe:a9fe
		--resolve sixto4.addr.test=2002:7f00:1::1 --resolve alibaba.addr.test=100.100.100.200)
	net_broker closed "${names[@]}" --allow-private-networks --listen-tcp 127.0.0.1:3141
	net_broker open "${names[@]}" --allow-address 203.0.113.0/24 --allow-address 2001:db8::/32 \
		--listen-tcp 127.0.0.1:3142
	net_broker wide "${names[@]}" --allow-address 0.0.0.0/0 --allow-address ::/0 --allow-private-networks \
		--allow-address 64:ff9b::/96 --allow-address 2002::/16 --allow-address 203.0.113.0/25 \
		--listen-tcp 127.0.0.1:3143
	net_broker exact "${names[@]}" --allow-address 169.254.169.254 --allow-address 203.0.113.1/32 \
		--allow-address 203.0.113.0/24 --listen-tcp 127.0.0.1:3144
	net_broker proxy --mode proxy --upstream http://127.0.0.1:8888 "${names[@]}" \
		--allow-address 203.0.113.0/24 --listen-tcp 127.0.0.1:3145
	net_broker proxyclosed --mode proxy --upstream http://127.0.0.1:8888 "${names[@]}" \
		--listen-tcp 127.0.0.1:3146
	# Its CLOCK_MONOTONIC is the second clock.now says (tests/progs/clock-set.c).
	echo 0 > "$NET_DIR/clock.now"
	BROKER_WRAP="$SBX_TESTBIN/clock-set $NET_DIR/clock.now" net_broker rebind "${names[@]}" \
		--allow-address 203.0.113.0/24 --allow-address 2001:db8::/32 --listen-tcp 127.0.0.1:3147
}

setup() {
	echo MARK >> "$NET_DIR/where.log"
}

teardown() {
	# Nothing ever reaches the host's own port 80.
	run cat "$NET_DIR/decoy.log"
	assert_output ""
}

# get PORT URL: curl through the broker on 127.0.0.1:PORT in "h".
get() { ip netns exec "$NH" curl -sS -m 10 -x "http://127.0.0.1:$1" "$2" 2>&1; }

# The origin's requests since this test began.
reached() { awk '/^MARK$/ { buf = ""; next } { buf = buf $0 "\n" } END { printf "%s", buf }' "$NET_DIR/where.log"; }

# The last decision line of broker $1: the fields asked for.
last_log() {
	"$PY" -c 'import json,sys
lines=[json.loads(l) for l in open(sys.argv[1]) if "\"connection\"" in l]
print(" ".join(str(lines[-1][k]) for k in sys.argv[2:]))' "$NET_DIR/$1.err" "${@:2}"
}

usage() { # EXPECTED-MESSAGE ARGS...
	local msg=$1
	shift
	run -100 --separate-stderr sbx-broker --allow-host origin.test "$@"
	assert_equal "$stderr" "sbx-broker: usage: $msg"
	assert_output ""
}

@test "--allow-address: bad ranges are refused, each with its reason" {
	usage "--allow-address: invalid range '': empty" --allow-address ''
	usage "--allow-address: invalid range 'x': not an address" --allow-address x
	usage "--allow-address: invalid range '/24': not an address" --allow-address /24
	usage "--allow-address: invalid range '203.0.113.0/': prefix length missing" --allow-address 203.0.113.0/
	usage "--allow-address: invalid range '203.0.113.0/33': prefix longer than 32" --allow-address 203.0.113.0/33
	usage "--allow-address: invalid range '2001:db8::/129': prefix longer than 128" --allow-address 2001:db8::/129
	usage "--allow-address: invalid range '203.0.113.0/99999999999': invalid prefix length" \
		--allow-address 203.0.113.0/99999999999
	usage "--allow-address: invalid range '203.0.113.0/-1': invalid prefix length" --allow-address 203.0.113.0/-1
	usage "--allow-address: invalid range '203.0.113.0/+24': invalid prefix length" --allow-address 203.0.113.0/+24
	usage "--allow-address: invalid range '203.0.113.0/24x': invalid prefix length" --allow-address 203.0.113.0/24x
	usage "--allow-address: invalid range '203.0.113.0/24/24': invalid prefix length" --allow-address 203.0.113.0/24/24
	usage "--allow-address: invalid range '203.0.113.0/024': leading zero in the prefix length" \
		--allow-address 203.0.113.0/024
	usage "--allow-address: invalid range '203.0.113.7/24': host bits set after the prefix" --allow-address 203.0.113.7/24
	usage "--allow-address: invalid range '2001:db8::7/32': host bits set after the prefix" --allow-address 2001:db8::7/32
	usage "--allow-address: invalid range '203.000.113.0/24': not an address" --allow-address 203.000.113.0/24
	usage "--allow-address: invalid range '203.0.113/24': not an address" --allow-address 203.0.113/24
	usage "--allow-address: invalid range '3405803776/24': not an address" --allow-address 3405803776/24
	usage "--allow-address: invalid range '0xcb.0.113.0/24': not an address" --allow-address 0xcb.0.113.0/24
	usage "--allow-address: invalid range 'fe80::1%lo': not an address" --allow-address 'fe80::1%lo'
	usage "--allow-address: invalid range ' 203.0.113.0/24': not an address" --allow-address ' 203.0.113.0/24'
	usage "--allow-address: invalid range: control character" --allow-address $'203.0.113.0/24\n'
	usage "--allow-address: invalid range: control character" --allow-address $'203.0.113.0\e[2J/24'
	usage "--allow-address: invalid range '::ffff:203.0.113.0/120': an IPv4-mapped range: give it in IPv4 form" \
		--allow-address ::ffff:203.0.113.0/120
	usage "--allow-address: invalid range '::203.0.113.0/120': an IPv4-compatible range: give it in IPv4 form" \
		--allow-address ::203.0.113.0/120
	usage "--allow-address: 203.0.113.0/24 given twice" --allow-address 203.0.113.0/24 --allow-address 203.0.113.0/24
	usage "--allow-address: 2001:db8::/32 given twice" --allow-address 2001:db8::/32 --allow-address 2001:DB8:0::/32
	usage "--allow-address: 203.0.113.7/32 given twice" --allow-address 203.0.113.7 --allow-address 203.0.113.7/32
	usage "--allow-address 203.0.113.0/24 is also given to --deny-address, which wins: give it to one" \
		--deny-address 203.0.113.0/24 --allow-address 203.0.113.0/24
	usage "--allow-address needs a value" --allow-address
}

@test "--allow-address: a range that would open nothing is refused: global only, loopback, unspecified, link-local" {
	usage "--allow-address: 8.8.8.0/24 opens nothing: every address in it is global (open without it) or never opened" \
		--allow-address 8.8.8.0/24
	usage "--allow-address: 2a00::/16 opens nothing: every address in it is global (open without it) or never opened" \
		--allow-address 2a00::/16
	usage "--allow-address: 127.0.0.0/8 opens nothing: loopback (127.0.0.0/8) is never opened" --allow-address 127.0.0.0/8
	usage "--allow-address: 127.0.0.1/32 opens nothing: loopback (127.0.0.0/8) is never opened" --allow-address 127.0.0.1
	usage "--allow-address: ::1/128 opens nothing: loopback (::1) is never opened" --allow-address ::1
	usage "--allow-address: ::/128 opens nothing: unspecified (::) is never opened" --allow-address ::/128
	usage "--allow-address: 0.0.0.0/8 opens nothing: unspecified (0.0.0.0/8) is never opened" --allow-address 0.0.0.0/8
	usage "--allow-address: 224.0.0.0/4 opens nothing: multicast (224.0.0.0/4) is never opened" --allow-address 224.0.0.0/4
	usage "--allow-address: 169.254.0.0/16 opens nothing: link-local (169.254.0.0/16) opens only address by address (ADDR/32)" \
		--allow-address 169.254.0.0/16
	usage "--allow-address: fe80::/64 opens nothing: link-local (fe80::/10) opens only address by address (ADDR/128)" \
		--allow-address fe80::/64
	usage "--allow-address: 64:ff9b::7f00:1/128 opens nothing: it carries 127.0.0.1, loopback (127.0.0.0/8), which is never opened" \
		--allow-address 64:ff9b::7f00:1
}

@test "without --allow-address, a documentation address is refused by every source, and the reason names the option" {
	local d='documentation (203.0.113.0/24); --allow-address 203.0.113.0/24 opens it'
	local d6='documentation (2001:db8::/32); --allow-address 2001:db8::/32 opens it'
	run -0 get 3141 http://www.v4.test/
	assert_output "sbx-broker: address 203.0.113.7 refused: $d"
	run -0 get 3141 http://www.v6.test/
	assert_output "sbx-broker: address 2001:db8::7 refused: $d6"
	run -0 get 3141 http://pin4.addr.test/
	assert_output "sbx-broker: address 203.0.113.7 refused: $d"
	run -0 get 3141 http://pin6.addr.test/
	assert_output "sbx-broker: address 2001:db8::7 refused: $d6"
	run -0 get 3146 http://www.v4.test/
	assert_output "sbx-broker: address 203.0.113.7 refused: $d"
	run -0 get 3146 http://pin6.addr.test/
	assert_output "sbx-broker: address 2001:db8::7 refused: $d6"
	run -0 last_log proxyclosed host address decision status
	assert_output "pin6.addr.test 2001:db8::7 refused 403"
	run -0 reached
	assert_output ""
}

@test "a DNS answer in the opened ranges is reached by curl, IPv4, IPv6 and both" {
	run -0 get 3142 http://www.v4.test/dns
	assert_output "hello from 203.0.113.7"
	run -0 get 3142 http://www.v6.test/dns
	assert_output "hello from 2001:db8::7"
	run -0 last_log open host address decision status
	assert_output "www.v6.test 2001:db8::7 allowed 200"
	run -0 get 3142 http://www.both.test/dns
	assert_output --regexp '^hello from (203\.0\.113\.7|2001:db8::7)$'
	run -0 reached
	assert_output --regexp '^GET /dns 203\.0\.113\.7
GET /dns 2001:db8::7
GET /dns (203\.0\.113\.7|2001:db8::7)$'
}

@test "HTTPS: CONNECT and a transparent sandbox's TLS reach the opened address, certificate verified; refused without it" {
	local ws
	run -0 ip netns exec "$NH" curl -sS -m 10 -o /dev/null -o /dev/null -w '%{http_code} %{ssl_verify_result}\n' \
		--cacert "$NET_DIR/addr-cert.pem" -x http://127.0.0.1:3142 https://www.v4.test/ https://pin4.addr.test/
	assert_output "200 0
200 0"
	run -0 last_log open method host address decision status
	assert_output "CONNECT pin4.addr.test 203.0.113.7 allowed 200"
	run ip netns exec "$NH" curl -sS -m 10 -o /dev/null --cacert "$NET_DIR/addr-cert.pem" \
		-x http://127.0.0.1:3141 https://pin4.addr.test/
	assert_output "curl: (56) CONNECT tunnel failed, response 403"
	ws=$(ns_ws)
	run -0 --separate-stderr nsh_user --workspace "$ws" --ro "$NET_DIR" --net "broker:$NET_DIR/open.sock,transparent" \
		-- curl -sS --noproxy "*" -o /dev/null -w '%{http_code} %{ssl_verify_result}\n' \
		--cacert "$NET_DIR/addr-cert.pem" https://pin4.addr.test/
	assert_output "200 0"
	assert_equal "$stderr" ""
	run -0 last_log open method host address decision
	assert_output "TLS pin4.addr.test 203.0.113.7 allowed"
	run --separate-stderr nsh_user --workspace "$ws" --ro "$NET_DIR" --net "broker:$NET_DIR/closed.sock,transparent" \
		-- curl -sS --noproxy "*" -o /dev/null --cacert "$NET_DIR/addr-cert.pem" https://pin4.addr.test/
	assert_equal "$stderr" "curl: (35) OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to pin4.addr.test:443 
sbx-ns: note: the broker refused 1 connection: pin4.addr.test:443: address 203.0.113.7 refused: documentation (203.0.113.0/24); --allow-address 203.0.113.0/24 opens it (1)"
}

@test "one refused address of a DNS answer refuses the name: only the IPv4 range opened, the IPv6 answer is named" {
	run -0 get 3145 http://www.both.test/
	assert_output "sbx-broker: address 2001:db8::7 refused: documentation (2001:db8::/32); --allow-address 2001:db8::/32 opens it"
	run -0 reached
	assert_output ""
}

@test "--resolve pins in the opened ranges are reached, IPv4 and IPv6" {
	run -0 get 3142 http://pin4.addr.test/pin
	assert_output "hello from 203.0.113.7"
	run -0 get 3142 http://pin6.addr.test/pin
	assert_output "hello from 2001:db8::7"
	run -0 reached
	assert_output "GET /pin 203.0.113.7
GET /pin 2001:db8::7"
}

@test "--upstream: the upstream is asked to CONNECT to the checked address, which the opened range lets through" {
	run -0 get 3145 http://pin4.addr.test/up
	assert_output "hello from 203.0.113.7"
	run -0 get 3145 http://www.v4.test/up
	assert_output "hello from 203.0.113.7"
	run -0 last_log proxy host address decision status
	assert_output "www.v4.test 203.0.113.7 allowed 200"
	run -0 get 3145 http://pin6.addr.test/up
	assert_output "sbx-broker: address 2001:db8::7 refused: documentation (2001:db8::/32); --allow-address 2001:db8::/32 opens it"
	run -0 reached
	assert_output "GET /up 203.0.113.7
GET /up 203.0.113.7"
}

@test "transparent mode: a sandbox's curl reaches the name's opened address; refused with the option named without it" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr nsh_user --workspace "$ws" --net "broker:$NET_DIR/open.sock,transparent" -- sh -c '
		curl -sS --noproxy "*" http://pin4.addr.test/tp
		curl -sS --noproxy "*" http://www.v4.test/tp'
	assert_output "hello from 203.0.113.7
hello from 203.0.113.7"
	assert_equal "$stderr" ""
	run -0 --separate-stderr nsh_user --workspace "$ws" --net "broker:$NET_DIR/closed.sock,transparent" -- sh -c '
		curl -sS --noproxy "*" http://pin4.addr.test/tp; echo "rc=$?"'
	assert_output "sbx-broker: address 203.0.113.7 refused: documentation (203.0.113.0/24); --allow-address 203.0.113.0/24 opens it
rc=0"
	assert_equal "$stderr" "sbx-ns: note: the broker refused 1 connection: pin4.addr.test:80: address 203.0.113.7 refused: documentation (203.0.113.0/24); --allow-address 203.0.113.0/24 opens it (1)"
	run -0 reached
	assert_output "GET /tp 203.0.113.7
GET /tp 203.0.113.7"
}

@test "transparent mode: a sandbox's own destination address is never dialled, whatever --allow-address opens" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr nsh_user --workspace "$ws" --net "broker:$NET_DIR/wide.sock,transparent" -- python3 -c '
import errno, socket
def tcp(addr, port):
    try:
        s = socket.create_connection((addr, port), 10)
        return "closed" if s.recv(100) == b"" else "data"
    except OSError as e:
        return errno.errorcode[e.errno]
print("203.0.113.7:", tcp("203.0.113.7", 80))
print("2001:db8::7:", tcp("2001:db8::7", 80))
print("127.0.0.1:", tcp("127.0.0.1", 80))'
	assert_output "203.0.113.7: ENETUNREACH
2001:db8::7: ENETUNREACH
127.0.0.1: closed"
	assert_equal "$stderr" "sbx-ns: note: the broker refused 1 connection: destination 127.0.0.1:80 is no name of this sandbox's DNS (1)"
	run -0 reached
	assert_output ""
}

@test "0.0.0.0/0 and ::/0 open neither loopback in any form, nor metadata, nor the host's own addresses, nor what NAT64 or 6to4 carry" {
	run -0 get 3143 http://pin4.addr.test/wide
	assert_output "hello from 203.0.113.7"
	run -0 get 3143 http://lo.addr.test/
	assert_output "sbx-broker: address 127.0.0.1 refused: loopback (127.0.0.0/8); no option opens it"
	run -0 get 3143 http://mapped.addr.test/
	assert_output "sbx-broker: address ::ffff:127.0.0.1 refused: loopback (127.0.0.0/8); no option opens it"
	run -0 get 3143 http://lo6.addr.test/
	assert_output "sbx-broker: address ::1 refused: loopback (::1); no option opens it"
	run -0 get 3143 http://zero.addr.test/
	assert_output "sbx-broker: address 0.0.0.0 refused: unspecified (0.0.0.0/8); no option opens it"
	run -0 get 3143 http://any6.addr.test/
	assert_output "sbx-broker: address :: refused: unspecified (::); no option opens it"
	run -0 get 3143 http://meta.addr.test/
	assert_output "sbx-broker: address 169.254.169.254 refused: cloud metadata (169.254.169.254); only --allow-address 169.254.169.254/32 opens it"
	run -0 get 3143 http://alibaba.addr.test/
	assert_output "sbx-broker: address 100.100.100.200 refused: cloud metadata: Alibaba Cloud (100.100.100.200); only --allow-address 100.100.100.200/32 opens it"
	run -0 get 3143 http://self.addr.test/
	assert_output "sbx-broker: address 203.0.113.1 refused: an address of this host; only --allow-address 203.0.113.1/32 opens it"
	run -0 get 3143 http://self6.addr.test/
	assert_output "sbx-broker: address 2001:db8::1 refused: an address of this host; only --allow-address 2001:db8::1/128 opens it"
	run -0 get 3143 http://nat64lo.addr.test/
	assert_output "sbx-broker: address 64:ff9b::7f00:1 refused: NAT64 (64:ff9b::/96) carries 127.0.0.1: loopback (127.0.0.0/8); no option opens it"
	run -0 get 3143 http://nat64meta.addr.test/
	assert_output "sbx-broker: address 64:ff9b::a9fe:a9fe refused: NAT64 (64:ff9b::/96) carries 169.254.169.254: cloud metadata (169.254.169.254); only --allow-address 169.254.169.254/32 opens it"
	run -0 get 3143 http://sixto4.addr.test/
	assert_output "sbx-broker: address 2002:7f00:1::1 refused: 6to4 (2002::/16) carries 127.0.0.1: loopback (127.0.0.0/8); no option opens it"
	run -0 get 3142 http://sixto4.addr.test/
	assert_output "sbx-broker: address 2002:7f00:1::1 refused: 6to4 (2002::/16); --allow-address 2002::/16 opens it"
	run -0 reached
	assert_output "GET /wide 203.0.113.7"
}

@test "named exactly, a metadata address and the host's own address open; the range around them does not" {
	run -0 get 3144 http://meta.addr.test/exact
	assert_output "hello from 169.254.169.254"
	run -0 get 3144 http://self.addr.test/exact
	assert_output "hello from 203.0.113.1"
	run -0 cat "$NET_DIR/decoy.log"
	assert_output "GET /exact 203.0.113.1"
	: > "$NET_DIR/decoy.log"
	run -0 get 3144 http://alibaba.addr.test/
	assert_output "sbx-broker: address 100.100.100.200 refused: cloud metadata: Alibaba Cloud (100.100.100.200); only --allow-address 100.100.100.200/32 opens it"
	run -0 get 3144 http://self6.addr.test/
	assert_output "sbx-broker: address 2001:db8::1 refused: documentation (2001:db8::/32); --allow-address 2001:db8::/32 opens it"
	run -0 get 3144 http://lo.addr.test/
	assert_output "sbx-broker: address 127.0.0.1 refused: loopback (127.0.0.0/8); no option opens it"
	run -0 reached
	assert_output "GET /exact 169.254.169.254"
}

@test "DNS rebinding: the address checked is the address dialled; the name's next answer (loopback) is checked again and refused" {
	echo 5 > "$NET_DIR/clock.now"
	run -0 get 3147 http://a.rebind.test/first
	assert_output --regexp '^hello from (203\.0\.113\.7|2001:db8::7)$'
	# The same second: the checked answer serves again, no lookup made.
	run -0 get 3147 http://a.rebind.test/again
	assert_output --regexp '^hello from (203\.0\.113\.7|2001:db8::7)$'
	run -0 grep -c '^QUERY a.rebind.test 1$' "$NET_DIR/dns.log"
	assert_output 1
	# The next second: the name now resolves to loopback, checked, refused.
	echo 6 > "$NET_DIR/clock.now"
	run -0 get 3147 http://a.rebind.test/third
	assert_output --regexp '^sbx-broker: address (127\.0\.0\.1|::1) refused: loopback \((127\.0\.0\.0/8|::1)\); no option opens it$'
	run -0 grep -c '^QUERY a.rebind.test 1$' "$NET_DIR/dns.log"
	assert_output 2
	run -0 reached
	assert_output --regexp '^GET /first (203\.0\.113\.7|2001:db8::7)
GET /again (203\.0\.113\.7|2001:db8::7)$'
}

# The README's egress recipe, as written, run in "h" (recipes.bash): the
# name it allows is registry.npmjs.org, which this suite's resolver puts on
# 203.0.113.8 in "o", where a TLS origin answers with a certificate the
# recipe's /etc trusts.
@test "the README's egress recipe as written: an allowlisted name behind a sinkhole range answers, another name is refused" {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-subj /CN=registry.npmjs.org -addext subjectAltName=DNS:registry.npmjs.org \
		-keyout "$NET_DIR/npm-key.pem" -out "$NET_DIR/npm-cert.pem" 2>/dev/null
	ip netns exec "$NO" openssl s_server -quiet -www -accept 203.0.113.8:443 \
		-cert "$NET_DIR/npm-cert.pem" -key "$NET_DIR/npm-key.pem" </dev/null >/dev/null 2>&1 3>&- &
	BG_PIDS+=("$!")
	net_wait_port "$NO" 203.0.113.8 443
	recipe_prepare() {
		echo "203.0.113.8 registry.npmjs.org" >>/etc/hosts &&
			cat "$NET_DIR/npm-cert.pem" >>/etc/ssl/certs/ca-certificates.crt
	}
	RECIPE_NETNS=$NH
	recipes_setup
	recipes_run_kind env=egress || { rm -rf "$RECIPE_DIR"; false; }
	rm -rf "$RECIPE_DIR"
}

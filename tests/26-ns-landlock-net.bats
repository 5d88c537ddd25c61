#!/usr/bin/env bats
# --net broker in the Landlock tier: no network namespace, so the command reaches
# sbx-broker on the host's 127.0.0.1:3128 (the broker's --listen-tcp, beside its Unix
# socket), and Landlock's TCP rules (ABI 4+) allow connecting to that port alone.
# Everything runs in the network namespaces of ns-net.bash ("h" stands for the
# host, the origins in "o"), the tier forced by tests/progs/ns-nouserns.

load helpers
load ns-net
bats_require_minimum_version 1.5.0

setup_file() {
	net_setup_file
	cp "$SBX_TESTBIN/ns-nouserns" "$SBX_TESTBIN/ns-landlockabi" "$NS_DIR/bin/"
	chmod 0755 "$NS_DIR/bin/ns-nouserns" "$NS_DIR/bin/ns-landlockabi"
	mkdir -m 0755 "$NS_DIR/conf"
	printf '{"sandbox":{"fallback":"landlock","denyWrite":[],"readableRoots":["%s"],"writableRoots":["%s"],"network":{"mode":"allowlist"}}}\n' \
		"$NS_DIR" "$NS_DIR" >"$NS_DIR/conf/base.json"
	local req='"denyWrite":[],"readableRoots":["'$NS_DIR/bin'"]'
	printf '{"sandbox":{%s,"network":{"mode":"allowlist"}}}\n' "$req" >"$NS_DIR/conf/broker.json"
	printf '{"sandbox":{%s,"network":{"mode":"localhost"}}}\n' "$req" >"$NS_DIR/conf/loopback.json"
	chmod 0644 "$NS_DIR"/conf/*.json
	# A server on the broker's port number elsewhere: Landlock's rules name ports, not addresses.
	ip netns exec "$NO" "$PY" "$NET_DIR/origin.py" 198.18.7.2 3128 "$NET_DIR/elsewhere.log" \
		</dev/null >/dev/null 2>&1 3>&- &
	echo $! >> "$NET_DIR/pids"
	net_wait_port "$NO" 198.18.7.2 3128
	net_main_broker --listen-tcp 127.0.0.1:3128
	# Another on port 3129, named by --net broker:PATH,port=3129.
	net_broker p3129 --allow-host origin.test --allow-private-networks --listen-tcp 127.0.0.1:3129
	printf '{"sandbox":{"fallback":"landlock","tierDenyWrite":"unenforced","readableRoots":["%s"],"writableRoots":["%s"],"network":{"mode":"allowlist"}}}\n' \
		"$NS_DIR" "$NS_DIR" >"$NS_DIR/conf/unenforced.json"
	chmod 0644 "$NS_DIR/conf/unenforced.json"
	# The same broker without a TCP port, for the refusal.
	net_broker unix --allow-host origin.test --allow-private-networks
	# One whose uid may hold 2 connections on --listen-tcp, on port 3133.
	net_broker cap --allow-host origin.test --allow-private-networks --listen-tcp 127.0.0.1:3133 \
		--max-peer-connections 2
}

teardown() {
	[ -z "${gate:-}" ] || exec {gate}>&-
	[ -z "${holder:-}" ] || wait "$holder" || true
	[ -z "${extra:-}" ] || kill "$extra" 2>/dev/null || true
	[ -z "${h2:-}" ] || ip netns del "$h2" 2>/dev/null || true
}

pre='sbx-ns: fatal: unable to create namespaces (Operation not permitted) and unable to use the landlock tier the baseline allows:'

# tier root|user SOCK [WRAPPER...] -- SBX-NS-ARGS...: sbx-ns in "h" under ns-nouserns (and
# the wrappers), the request on fd 4 (NS_REQ, default broker.json), fd 7 an O_PATH on SOCK
# for --broker-fd 7.
tier() {
	local who=$1 sock=$2 wrap=()
	shift 2
	while [ "$1" != -- ]; do wrap+=("$1"); shift; done
	shift
	local id=(--uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID")
	local as=()
	if [ "$who" = user ]; then
		id=()
		as=(setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" --init-groups --reset-env --
			env PATH=/usr/bin:/bin)
	fi
	# NS_REQ=none: no request on fd 4 (the options say it all).
	local req=(--policy-fd 4)
	[ "${NS_REQ:-}" != none ] || req=()
	ip netns exec "${TIER_NS:-$NH}" "${as[@]}" "$PY" -c '
import os, sys
fd = os.open(sys.argv[1], os.O_PATH); os.dup2(fd, 7)
if sys.argv[2] != "none":
    fd = os.open(sys.argv[2], os.O_RDONLY); os.dup2(fd, 4)
os.execvp(sys.argv[3], sys.argv[3:])' "$sock" "${NS_REQ:-$NS_DIR/conf/broker.json}" \
		"${wrap[@]}" "$NS_DIR/bin/ns-nouserns" "$SBX_BIN/sbx-ns" "${id[@]}" \
		--baseline "$NS_DIR/conf/base.json" "${req[@]}" --broker-fd 7 "$@"
}

@test "through the broker's loopback port: an allowlisted fetch works, a forbidden one gets 403, the variables point there" {
	local ws who
	for who in root user; do
		ws=$(ns_ws)
		run -0 --separate-stderr tier "$who" "$BSOCK" -- --workspace "$ws" --status-fd 5 -- sh -c '
			curl -sS http://origin.test/; curl -sS -o /dev/null -w "%{http_code}\n" http://other.test/
			curl -sS https://other.test/ 2>&1; env | grep -i proxy | LC_ALL=C sort' 5>"$ws.status"
		assert_output "hello
403
curl: (56) CONNECT tunnel failed, response 403
ALL_PROXY=http://127.0.0.1:3128
HTTPS_PROXY=http://127.0.0.1:3128
HTTP_PROXY=http://127.0.0.1:3128
http_proxy=http://127.0.0.1:3128
https_proxy=http://127.0.0.1:3128"
		assert_regex "$stderr" '^sbx-ns: WARNING: no user namespaces here \(Operation not permitted\): the command runs in the landlock tier: Landlock ABI [0-9]+'
		run -0 sed -n 2p "$ws.status"
		assert_regex "$output" "^\\{\"tool\":\"sbx-ns\",\"event\":\"started\",\"isolation\":\"landlock\",\"reason\":\"Operation not permitted\",\"landlock\":[4-9],\"landlock_net\":true,.*\"net\":\"broker\",\"proxy\":\"http://127.0.0.1:3128\",\"bridge\":\"the host's loopback port\",\"deny_write\":\"none\",\"tmpdir\":"
	done
}

@test "a direct connect to any other port or address fails with EACCES; no other socket, no listening, no signal out" {
	local ws who
	setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" --init-groups sleep 600 3>&- &
	extra=$!
	for who in root user; do
		ws=$(ns_ws)
		run -0 --separate-stderr tier "$who" "$BSOCK" -- --workspace "$ws" -- sh -c "
			$NET_ATT connect 127.0.0.1 3128; $NET_ATT connect 127.0.0.1 8081; $NET_ATT connect ::1 8081
			$NET_ATT connect 127.0.0.2 8081; $NET_ATT connect 198.18.7.2 80; $NET_ATT connect 198.18.7.2 8080
			$NET_ATT connect ::ffff:127.0.0.1 8081; $NET_ATT listen 127.0.0.1 4000; $NET_ATT listen - 0
			$NET_ATT udp 127.0.0.1 53; $NET_ATT socket unix stream; $NET_ATT socket netlink raw
			$NET_ATT socket inet raw; $NS_ATT connect-abstract sbx-tier; $NET_ATT kill $extra
			curl -sS --noproxy '*' http://127.0.0.1:8081/ 2>&1
			python3 -c 'import socket
# TCP Fast Open connects inside sendto/sendmsg, where Landlock'\''s connect rule does not look.
for send in (lambda s: s.sendto(b\"GET / HTTP/1.0\\r\\n\\r\\n\", socket.MSG_FASTOPEN, (\"127.0.0.1\", 8081)),
             lambda s: s.sendmsg([b\"GET / HTTP/1.0\\r\\n\\r\\n\"], [], socket.MSG_FASTOPEN, (\"127.0.0.1\", 8081))):
    try:
        send(socket.socket()); print(\"fastopen: sent\")
    except OSError as e:
        print(\"fastopen:\", e.strerror)'; :"
		curl_ms
		assert_output "ok connected
connect: EACCES
connect: EACCES
connect: EACCES
connect: EACCES
connect: EACCES
connect: EACCES
bind: EACCES
listen: EPERM
socket: EPERM
socket: EPERM
socket: EPERM
socket: EPERM
connect-abstract: EPERM
kill: EPERM
curl: (7) Failed to connect to 127.0.0.1 port 8081 after 0 ms: Couldn't connect to server
fastopen: Operation not permitted
fastopen: Operation not permitted"
	done
	run -0 kill -0 "$extra"
}

@test "known difference, pinned: Landlock's rules name a port, so the broker's port number on another address is reachable" {
	local ws before
	ws=$(ns_ws)
	before=$(cat "$NET_DIR/elsewhere.log" | wc -l)
	run -0 --separate-stderr tier user "$BSOCK" -- --workspace "$ws" -- sh -c "
		$NET_ATT connect 198.18.7.2 3128; $NET_ATT connect ::1 3128
		curl -sS --noproxy '*' http://198.18.7.2:3128/"
	assert_output "ok connected
connect: ECONNREFUSED
hello"
	assert_equal "$(cat "$NET_DIR/elsewhere.log" | wc -l)" "$((before + 1))"
}

@test "the tier refuses broker mode below Landlock ABI 4, a port the broker does not serve or shares, loopback" {
	local ws
	h2="sbxnet$$t"
	ws=$(ns_ws)
	# ABI 3 (tests/progs/ns-landlockabi answers the version query; the kernel is real).
	run -106 --separate-stderr tier user "$BSOCK" "$NS_DIR/bin/ns-landlockabi" 3 -- --workspace "$ws" -- true
	assert_equal "$stderr" "$pre --net broker needs Landlock ABI 4 (TCP rules) to allow the broker's port alone, and this kernel has ABI 3"
	run -0 --separate-stderr tier user "$BSOCK" "$NS_DIR/bin/ns-landlockabi" 4 -- --workspace "$ws" -- curl -sS http://origin.test/
	assert_output "hello"
	# Another user's listener on the port, on any address.
	ip netns exec "$NH" setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" --init-groups "$PY" -c '
import socket, time
s = socket.socket(socket.AF_INET6); s.bind(("::1", 3128)); s.listen()
while True: s.accept()[0].close()' </dev/null >/dev/null 2>&1 3>&- &
	extra=$!
	net_wait_port "$NH" ::1 3128
	run -102 --separate-stderr tier root "$BSOCK" -- --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run: uid $SBX_TEST_UID listens on ::1 port 3128 with a socket that is not the broker's --listen-tcp (the broker at $BSOCK), and the landlock tier lets the command connect to any listener on the broker's port (stop it, or give the broker a port of its own with ,port=N)"
	kill "$extra"
	wait "$extra" || :
	# A network where the broker's port is not served, then served by something else.
	ip netns add "$h2"
	ip -n "$h2" link set lo up
	TIER_NS=$h2 run -102 --separate-stderr tier user "$NET_DIR/unix.sock" -- --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run: the landlock tier reaches the broker on 127.0.0.1:3128 and the broker does not listen there (sbx-broker --listen $NET_DIR/unix.sock --listen-tcp 127.0.0.1:3128)"
	ip netns exec "$h2" "$PY" -c '
import socket
s = socket.socket(); s.bind(("127.0.0.1", 3128)); s.listen()
while True:
    c = s.accept()[0]; c.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n"); c.close()' </dev/null >/dev/null 2>&1 3>&- &
	extra=$!
	net_wait_port "$h2" 127.0.0.1 3128
	TIER_NS=$h2 run -102 --separate-stderr tier user "$NET_DIR/unix.sock" -- --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run: uid 0 listens on 127.0.0.1 port 3128 with a socket that is not the broker's --listen-tcp (the broker at $NET_DIR/unix.sock), and the landlock tier lets the command connect to any listener on the broker's port (stop it, or give the broker a port of its own with ,port=N)"
	kill "$extra"
	# No private loopback without a network namespace.
	NS_REQ=$NS_DIR/conf/loopback.json run -106 --separate-stderr tier user "$BSOCK" -- --workspace "$ws" -- true
	assert_equal "$stderr" "$pre --net loopback needs a network namespace (only none and broker are kept without one)"
	# Nor a transparent broker mode: its DNS and captured ports live in one.
	NS_REQ=none run -106 --separate-stderr tier user "$BSOCK" -- --workspace "$ws" --net broker,transparent -- true
	assert_equal "$stderr" "$pre --net broker:PATH,transparent needs a network namespace (its DNS and captured ports live in the sandbox's own)"
}

@test "--net broker:PATH,port=N: the tier's port is N, the variables name it, and the other broker's port is closed" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr ip netns exec "$NH" setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" \
		--init-groups --reset-env -- env PATH=/usr/bin:/bin "$NS_DIR/bin/ns-nouserns" "$SBX_BIN/sbx-ns" \
		--baseline "$NS_DIR/conf/unenforced.json" --net "broker:$NET_DIR/p3129.sock,port=3129" \
		--workspace "$ws" --ro "$NS_DIR/bin" -- sh -c "
		curl -sS http://origin.test/; echo \$HTTP_PROXY; $NET_ATT connect 127.0.0.1 3128; :"
	assert_output "hello
http://127.0.0.1:3129
connect: EACCES"
	assert_equal "${stderr_lines[1]}" 'sbx-ns: WARNING: deny-write is not enforced in the landlock tier (the baseline says "tierDenyWrite": "unenforced"): the command may write .env and what the other deny-write globs match inside the writable roots'
}

# tiercap SOCK SBX-NS-ARGS...: sbx-ns as the test user in "h", the tier forced, its broker
# SOCK on port 3133 (the baseline gives deny-write up, so no request is needed).
warn='sbx-ns: WARNING: deny-write is not enforced in the landlock tier (the baseline says "tierDenyWrite": "unenforced"): the command may write .env and what the other deny-write globs match inside the writable roots'
tiercap() {
	local sock=$1
	shift
	ip netns exec "$NH" setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" --init-groups --reset-env -- \
		env PATH=/usr/bin:/bin "$NS_DIR/bin/ns-nouserns" "$SBX_BIN/sbx-ns" --baseline "$NS_DIR/conf/unenforced.json" \
		--net "broker:$sock,port=3133" --ro "$NS_DIR/bin" "$@"
}

@test "a tier command holding its uid's whole --max-peer-connections does not keep the next tier run from starting" {
	local ws ws2 rc
	ws=$(ns_ws)
	ws2=$(ns_ws)
	mkfifo "$ws/gate"
	# The first run's command holds the uid's 2 connections on 127.0.0.1:3133, idle, until
	# the gate closes.
	tiercap "$NET_DIR/cap.sock" --workspace "$ws" -- \
		"$PY" -c '
import socket, sys
ss = [socket.create_connection(("127.0.0.1", 3133)) for i in range(2)]
open(sys.argv[1] + "/held", "w").write("2\n")
sys.stdin.read()' "$ws" <"$ws/gate" >/dev/null 2>"$ws.err" &
	holder=$!
	exec {gate}>"$ws/gate"
	wait_for "[ -s '$ws/held' ]"
	# The second starts (its check asks the broker on its Unix socket, in the reserve); its
	# command's own connection is over the cap.
	run -0 --separate-stderr tiercap "$NET_DIR/cap.sock" --workspace "$ws2" \
		-- sh -c "curl -s -D - -o /dev/null http://origin.test/ | tr -d '\r' | grep -E '^HTTP|^Sbx-Broker-Reason'"
	assert_output "HTTP/1.1 503 Service Unavailable
Sbx-Broker-Reason: this uid's connection limit on --listen-tcp reached (--max-peer-connections) (uid $SBX_TEST_UID)"
	assert_equal "${#stderr_lines[@]}" 2
	assert_equal "${stderr_lines[1]}" "$warn"
	# The gate closed, the first run ends as its command does.
	exec {gate}>&-
	gate=
	rc=0
	wait "$holder" || rc=$?
	holder=
	assert_equal "$rc" 0
	run -0 sed -n '2,$p' "$ws.err"
	assert_output "$warn"
}

@test "a listener on the broker's port that is not the broker's socket, of the broker's own uid, is refused" {
	local ws
	ws=$(ns_ws)
	ip netns exec "$NH" "$PY" -c '
import socket
s = socket.socket(); s.bind(("127.0.0.2", 3133)); s.listen()
while True: s.accept()[0].close()' </dev/null >/dev/null 2>&1 3>&- &
	extra=$!
	net_wait_port "$NH" 127.0.0.2 3133
	run -102 --separate-stderr tiercap "$NET_DIR/cap.sock" --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run: uid 0 listens on 127.0.0.2 port 3133 with a socket that is not the broker's --listen-tcp (the broker at $NET_DIR/cap.sock), and the landlock tier lets the command connect to any listener on the broker's port (stop it, or give the broker a port of its own with ,port=N)"
	kill "$extra"
	wait "$extra" || :
	extra=
	# A wildcard IPv6 one beside it.
	ip netns exec "$NH" "$PY" -c '
import socket
s = socket.socket(socket.AF_INET6); s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
s.bind(("::", 3133)); s.listen()
while True: s.accept()[0].close()' </dev/null >/dev/null 2>&1 3>&- &
	extra=$!
	net_wait_port "$NH" ::1 3133
	run -102 --separate-stderr tiercap "$NET_DIR/cap.sock" --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run: uid 0 listens on :: port 3133 with a socket that is not the broker's --listen-tcp (the broker at $NET_DIR/cap.sock), and the landlock tier lets the command connect to any listener on the broker's port (stop it, or give the broker a port of its own with ,port=N)"
}

@test "the broker names its --listen-tcp socket on its Unix socket (SBX-PROBE 3); one that does not is refused as too old" {
	local ino ws
	# The inode of the listener on 127.0.0.1:3133 (0100007F:0C3D), from the kernel's table.
	ino=$(ip netns exec "$NH" awk '$2 == "0100007F:0C3D" && $4 == "0A" { print $10 }' /proc/net/tcp)
	[ -n "$ino" ]
	run -0 "$PY" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"SBX-PROBE 3\n")
d = b""
while True:
    x = s.recv(4096)
    if not x: break
    d += x
sys.stdout.write(repr(d))' "$NET_DIR/cap.sock"
	assert_output "b'SBX-TCP $ino\\n'"
	run -0 "$PY" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"SBX-PROBE 3\n")
print(repr(s.recv(4096))); print(repr(s.recv(4096)))' "$NET_DIR/unix.sock"
	assert_output "b'SBX-TCP\\n'
b''"
	# A broker that does not know the question closes without the line; one that answers
	# garbage is taken for one that does not either. Each answer is $NET_DIR/old.ans.
	rm -f "$NET_DIR/old.sock"
	: > "$NET_DIR/old.ans"
	"$PY" -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666); s.listen()
while True:
    c = s.accept()[0]; c.recv(64); c.sendall(open(sys.argv[2], "rb").read()); c.close()' \
		"$NET_DIR/old.sock" "$NET_DIR/old.ans" </dev/null >/dev/null 2>&1 3>&- &
	extra=$!
	wait_for "[ -S '$NET_DIR/old.sock' ]"
	ws=$(ns_ws)
	local a
	for a in '' 'HTTP/1.1 400 Bad Request\r\n\r\n' 'SBX-TCP' 'SBX-TCP 0\n' 'SBX-TCP  1\n' 'SBX-TCP x\n' \
		'SBX-TCP 18446744073709551616\n' 'SBX-TCP 1\0 2\n' 'SBX-TCP 1 2 3 4 5 6 7 8 9\n' 'SBX-TCP 1\nSBX-TCP 2\n'; do
		printf "$a" > "$NET_DIR/old.ans"
		run -102 --separate-stderr tiercap "$NET_DIR/old.sock" --workspace "$ws" -- true
		assert_equal "$stderr" "sbx-ns: fatal: refusing to run: the sbx-broker at $NET_DIR/old.sock does not name its --listen-tcp sockets, and the landlock tier must know that port 3133 is the broker's own (upgrade sbx-broker)"
	done
	# Well formed but naming sockets other than the one on port 3133.
	printf 'SBX-TCP 1 2 3 4 5 6 7 8\n' > "$NET_DIR/old.ans"
	run -102 --separate-stderr tiercap "$NET_DIR/old.sock" --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run: uid 0 listens on 127.0.0.1 port 3133 with a socket that is not the broker's --listen-tcp (the broker at $NET_DIR/old.sock), and the landlock tier lets the command connect to any listener on the broker's port (stop it, or give the broker a port of its own with ,port=N)"
}

#!/usr/bin/env bats
# sbx-ns --net broker: real clients inside the sandbox reach a test origin
# (198.18.7.2 in namespace "o") only through sbx-broker, which serves the
# sandbox's own 127.0.0.1:3128 and [::1]:3128
# (in namespace "h", its own /etc/hosts, --allow-private-networks), and
# nothing else. sbx-ns itself runs in "h", which has no default route.

load helpers
load ns-net
bats_require_minimum_version 1.5.0

setup_file() { net_setup_file; net_main_broker; }

# The origin's request log, line count.
requests() { cat "$NET_DIR/origin.log" 2>/dev/null | wc -l; }

@test "allowed names reach the origin through plain HTTP: curl, wget and python3 use the proxy variables" {
	local ws
	ws=$(ns_ws)
	nsh_both "$ws" "hello
hello
b'hello\\n'
ALL_PROXY=http://127.0.0.1:3128
HTTPS_PROXY=http://127.0.0.1:3128
HTTP_PROXY=http://127.0.0.1:3128
http_proxy=http://127.0.0.1:3128
https_proxy=http://127.0.0.1:3128" \
		--net "broker:$BSOCK" -- sh -c 'curl -sS http://origin.test/; wget -q -O- http://origin.test/
			python3 -c "import urllib.request as u; print(u.urlopen(\"http://origin.test/\").read())"
			env | grep -i proxy | LC_ALL=C sort'
}

@test "HTTPS through CONNECT: curl and openssl s_client verify the origin's certificate" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr nsh_user --workspace "$ws" --ro "$NET_DIR/cert.pem" --net "broker:$BSOCK" -- \
		sh -c "curl -sS --cacert $NET_DIR/cert.pem https://origin.test/ | head -n 1
			python3 -c 'import ssl, urllib.request as u; print(u.urlopen(\"https://origin.test/\", context=ssl.create_default_context(cafile=\"$NET_DIR/cert.pem\")).status)'
			echo | openssl s_client -brief -proxy 127.0.0.1:3128 -connect origin.test:443 -servername origin.test \
				-CAfile $NET_DIR/cert.pem -verify_return_error 2>&1 | grep -x 'Verification: OK'"
	assert_output "<HTML><BODY BGCOLOR=\"#ffffff\">
200
Verification: OK"
}

@test "a name not on the allowlist, and one mapped to the same server, are denied; the origin sees nothing" {
	local ws before
	ws=$(ns_ws)
	before=$(requests)
	run -0 --separate-stderr nsh_user --workspace "$ws" --ro "$NET_DIR/cert.pem" --net "broker:$BSOCK" -- sh -c '
		curl -sS -o /dev/null -w "%{http_code}\n" http://other.test/
		curl -sS -o /dev/null -w "%{http_code}\n" http://nothere.test/
		curl -sS -o /dev/null -w "%{http_code}\n" http://198.18.7.2/
		curl -sS https://other.test/ 2>&1; echo "rc $?"'
	assert_output "403
403
403
curl: (56) CONNECT tunnel failed, response 403
rc 56"
	assert_equal "$(requests)" "$before"
}

@test "a program that ignores the proxy variables reaches nothing: no direct TCP, no name resolution" {
	local ws
	ws=$(ns_ws)
	nsh_both "$ws" "connect: EACCES
connect: EACCES
connect: EACCES
Permission denied
curl: (7) Failed to connect to 198.18.7.2 port 80 after 0 ms: Couldn't connect to server
curl: (6) Could not resolve host: origin.test" \
		--net "broker:$BSOCK" -- sh -c "$NET_ATT connect 198.18.7.2 80; $NET_ATT connect 127.0.0.1 80; $NET_ATT connect ::1 443
			python3 -c 'import socket
try:
    socket.create_connection((\"198.18.7.2\", 80), 2)
except OSError as e:
    print(e.strerror)'
			curl -sS --noproxy '*' http://198.18.7.2/ 2>&1
			env -u http_proxy -u HTTP_PROXY -u ALL_PROXY curl -sS http://origin.test/ 2>&1; :"
}

@test "UDP to port 53 fails, and so do AF_UNIX, AF_NETLINK, AF_PACKET, raw, SCTP sockets and listen()" {
	local ws
	ws=$(ns_ws)
	nsh_both "$ws" "socket: EPERM
socket: EPERM
socket: EPERM
socket: EPERM
socket: EPERM
socket: EPERM
socket: EPERM
socket: EPERM
socket: EPERM
listen: EPERM
Operation not permitted
ok socket
ok socket" \
		--net "broker:$BSOCK" -- sh -c "$NET_ATT udp 198.18.7.2 53; $NET_ATT udp 127.0.0.1 53; $NET_ATT socket inet6 dgram
			$NET_ATT socket unix stream; $NET_ATT socket unix dgram; $NET_ATT socket unix seqpacket
			$NET_ATT socket netlink raw; $NET_ATT socket packet raw; $NET_ATT socket inet raw; $NET_ATT listen - 0
			python3 -c 'import socket
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_SCTP)
except OSError as e:
    print(e.strerror)'
			$NET_ATT socket inet stream; $NET_ATT socket inet6 stream"
}

@test "no process serves the port where the command could reach it: the broker accepts there itself, out of its reach" {
	local ws pid broker i rc
	ws=$(ns_ws)
	: > "$ws.status" # read below before the background job may have opened it
	nsh_user --workspace "$ws" --ro "$NS_DIR/bin" --net "broker:$BSOCK" --status-fd 5 -- sh -c "
		while [ ! -s broker ]; do sleep 0.05; done
		b=\$(cat broker)
		$NET_ATT kill \$b; $NET_ATT ptrace \$b
		cat /proc/[0-9]*/comm | grep -c -e sbx-broker -e sbx-ns
		exec $NET_ATT killall curl -sS http://origin.test/" 5>"$ws.status" >"$ws.out" 2>&1 &
	pid=$!
	wait_for 'broker=$(sed -n "s/.*\"broker_pid\":\([0-9]*\).*/\1/p" "$ws.status"); [ -n "$broker" ]'
	assert_equal "$broker" "$(cat "$NET_DIR/main.pid")"
	echo "$broker" > "$ws/broker"
	rc=0
	wait "$pid" || rc=$?
	assert_equal "$rc" 0
	run -0 cat "$ws.out"
	assert_output "kill: ESRCH
ptrace: EPERM
0
killall: ESRCH
hello"
	# The sandbox's port is a socket of its own namespace, served by the
	# broker: no process of sbx-ns's is left behind.
	run -0 kill -0 "$broker"
	# (Only in this test's namespace: other runs may use sbx-ns meanwhile.)
	run -1 sh -c 'for p in $(ip netns pids "$1"); do cat "/proc/$p/comm" 2>/dev/null; done | grep -cx sbx-ns' sh "$NH"
	assert_output 0
}

# The broker's open file descriptors.
nfds() { ls "/proc/$1/fd" | wc -l; }

@test "the sandbox's listeners close with the sandbox, also when sbx-ns itself is killed" {
	local ws pid broker before i
	ws=$(ns_ws)
	broker=$(cat "$NET_DIR/main.pid")
	before=$(nfds "$broker")
	nsh_root --workspace "$ws" --net "broker:$BSOCK" --status-fd 5 -- sleep 60 5>"$ws.status" &
	pid=$!
	wait_for 'grep -q "\"started\"" "$ws.status"'
	# Two listeners and the channel they came on.
	assert_equal "$(nfds "$broker")" "$((before + 3))"
	# ip netns exec execs sbx-ns: $pid is the outer process.
	kill -9 "$pid"
	wait_for '[ "$(nfds "$broker")" = "$before" ]'
	assert_equal "$(nfds "$broker")" "$before"
	run -0 grep -c '"state":"detached","listeners":"127.0.0.1:3128 \[::1\]:3128","reason":"the sandbox ended"' "$NET_DIR/main.err"
}

@test "when the sandbox ends, the broker also closes the connections it accepted from it" {
	local ws pid broker before ended i
	ws=$(ns_ws)
	broker=$(cat "$NET_DIR/main.pid")
	before=$(nfds "$broker")
	ended=$(grep -c '"decision":"allowed","status":200,"reason":"the sandbox ended"' "$NET_DIR/main.err" || :)
	# A tunnel left open: a CONNECT whose ClientHello never comes.
	nsh_root --workspace "$ws" --net "broker:$BSOCK" -- "$PY" -c '
import socket, time
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT origin.test:443 HTTP/1.1\r\nHost: origin.test:443\r\n\r\n")
print(s.recv(100).split(b"\r\n")[0].decode(), flush=True)
time.sleep(60)' >"$ws.out" &
	pid=$!
	wait_for '[ -s "$ws.out" ]'
	run -0 cat "$ws.out"
	assert_output "HTTP/1.1 200 Connection established"
	# sbx-ns itself killed, so that the sandbox's end reaches the broker
	# first (a signal sbx-ns can catch ends the command first, and the
	# command's own close then tells the broker).
	[ "$(cat "/proc/$pid/comm")" = sbx-ns ] || pid=$(pgrep -x -P "$pid" sbx-ns)
	kill -9 "$pid"
	wait_for '[ "$(nfds "$broker")" = "$before" ]'
	assert_equal "$(nfds "$broker")" "$before"
	run -0 grep -c '"decision":"allowed","status":200,"reason":"the sandbox ended"' "$NET_DIR/main.err"
	assert_output "$((ended + 1))"
}

@test "killing the broker mid-transfer resets the client's connection, and later connects fail" {
	local ws pid i rc bpid
	ws=$(ns_ws)
	net_broker doomed --allow-host origin.test --allow-private-networks
	# The later connects wait until sbx-ns has seen the broker's socket
	# end with it ("gone"): until then its copies of the listeners queue
	# a connect, to be reset instead of refused.
	# The command's output apart from sbx-ns's own (its warning).
	nsh_user --workspace "$ws" --net "broker:$NET_DIR/doomed.sock" --status-fd 5 -- sh -c '
		exec >cmd.out 2>&1
		curl -sS -o /dev/null http://origin.test/slow; echo "first $?"
		until [ -e dead ]; do sleep 0.02; done
		curl -sS http://origin.test/; echo "second $?"
		python3 -c "import urllib.request as u; u.urlopen(\"http://origin.test/\")" 2>&1 | tail -n 1' \
		5>"$ws.status" >"$ws.err" 2>&1 &
	pid=$!
	# Mid-transfer: the origin has sent its first chunks through the broker.
	wait_for '[ -e "$NET_DIR/origin.log.slow" ]'
	bpid=$(cat "$NET_DIR/doomed.pid")
	kill -9 "$bpid"
	wait_for 'grep -q "\"event\":\"broker\",\"state\":\"gone\"" "$ws.status"'
	touch "$ws/dead"
	rc=0
	wait "$pid" || rc=$?
	assert_equal "$rc" 0
	run -0 grep -c '"event":"broker"' "$ws.status"
	assert_output 2
	run -0 cat "$ws.err"
	assert_output "sbx-ns: warning: the broker at $NET_DIR/doomed.sock ended, and nothing listens on its socket any more: the sandbox's new connections are refused from now on"
	run -0 cat "$ws/cmd.out"
	curl_ms
	assert_output "curl: (56) Recv failure: Connection reset by peer
first 56
curl: (7) Failed to connect to 127.0.0.1 port 3128 after 0 ms: Couldn't connect to server
second 7
urllib.error.URLError: <urlopen error [Errno 111] Connection refused>"
}

# A socket that outlives its broker, as a socket unit's does: a holder
# listens on it and starts a broker on it (LISTEN_FDS), the next one when
# the test says so. The sandbox's listeners go to the next broker; a
# connection made while none runs waits in their queue and is served.
@test "a broker restarted on the same socket, the socket unit's way, serves the living sandbox again" {
	local ws pid rc first cpid
	ws=$(ns_ws)
	cat >"$NET_DIR/holder.py" <<-'PY'
	import os, socket, sys, time
	s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666); s.listen(16)
	n = 0
	while True:
	    n += 1
	    while n > 1 and not os.path.exists(sys.argv[2] + ".go"):
	        time.sleep(0.02)
	    pid = os.fork()
	    if pid == 0:
	        if s.fileno() != 3:
	            os.dup2(s.fileno(), 3)
	        os.set_inheritable(3, True)
	        os.environ.update(LISTEN_FDS="1", LISTEN_PID=str(os.getpid()))
	        os.execv(sys.argv[3], [sys.argv[3], "--allow-host", "origin.test", "--allow-private-networks"])
	    with open(sys.argv[2], "a") as f:
	        f.write("%d\n" % pid)
	    os.waitpid(pid, 0)
	PY
	ip netns exec "$NH" unshare -m --propagation private sh -c \
		'mount --bind "$0/hosts" /etc/hosts && mount --bind "$0/resolv.conf" /etc/resolv.conf && exec "$@"' \
		"$NET_DIR" "$PY" "$NET_DIR/holder.py" "$NET_DIR/unit.sock" "$NET_DIR/unit.pids" "$SBX_BIN/sbx-broker" \
		</dev/null >/dev/null 2>>"$NET_DIR/unit.err" 3>&- &
	echo $! >> "$NET_DIR/pids"
	wait_for '[ -S "$NET_DIR/unit.sock" ] && [ -s "$NET_DIR/unit.pids" ]'
	nsh_user --workspace "$ws" --net "broker:$NET_DIR/unit.sock" --status-fd 5 -- sh -c '
		curl -sS http://origin.test/; echo "first $?"
		until [ -e stopped ]; do sleep 0.02; done
		curl -sS http://origin.test/queued; echo "second $?"' 5>"$ws.status" >"$ws.out" 2>&1 &
	pid=$!
	wait_for 'grep -q "^first" "$ws.out"' || { cat "$NET_DIR/unit.err" "$ws.out" "$ws.status"; false; }
	first=$(head -n 1 "$NET_DIR/unit.pids")
	# SIGTERM, then SIGKILL: the socket unit's stop.
	kill -TERM "$first"
	wait_for '[ ! -e /proc/$first ] || grep -q "^State:[[:space:]]*[ZX]" /proc/$first/status' || kill -KILL "$first"
	wait_for 'grep -q "\"state\":\"lost\"" "$ws.status"'
	touch "$ws/stopped"
	# The second request's connection is established (in the queue of
	# sbx-ns's copy of the listener, port 3128) while no broker runs.
	wait_for 'cpid=$(pgrep -f "^curl -sS http://origin.test/queued")'
	wait_for 'awk "\$3 ~ /:0C38\$/ && \$4 == \"01\"" /proc/$cpid/net/tcp | grep -q .'
	run -1 grep -q '"state":"back"' "$ws.status"
	touch "$NET_DIR/unit.pids.go"
	rc=0
	wait "$pid" || rc=$?
	assert_equal "$rc" 0
	run -0 cat "$ws.out"
	assert_output "hello
first 0
hello
second 0"
	run -0 "$PY" -c 'import json, sys
print(" ".join(json.loads(l)["state"] for l in open(sys.argv[1]) if json.loads(l).get("event") == "broker"))' "$ws.status"
	assert_output "lost back"
	run -0 grep -c "GET /queued" "$NET_DIR/origin.log"
	assert_output 1
}

@test "--broker-fd: the broker's socket as an O_PATH fd, and the bridge on another port" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr ip netns exec "$NH" "$PY" -c '
import os, sys
fd = os.open(sys.argv[1], os.O_PATH); os.dup2(fd, 7)
os.execv(sys.argv[2], sys.argv[2:])' "$BSOCK" "$SBX_BIN/sbx-ns" --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" \
		--workspace "$ws" --net broker,port=8080 --broker-fd 7 -- sh -c 'echo $HTTPS_PROXY; curl -sS http://origin.test/; ls /proc/self/fd'
	assert_output "http://127.0.0.1:8080
hello
0
1
2
3"
}

@test "the status names the broker mode, the proxy, and the broker that serves it" {
	local ws
	ws=$(ns_ws)
	run -0 ns_fd5 nsh_user --workspace "$ws" --net "broker:$BSOCK,port=3129" --status-fd 5 -- true
	assert_line --index 1 --regexp "\"net\":\"broker\",\"proxy\":\"http://127.0.0.1:3129\",\"bridge\":\"handed to the broker\",\"broker_pid\":$(cat "$NET_DIR/main.pid"),"
}

@test "a broker socket replaced by another after the check is not used: the bridge keeps the checked one" {
	local ws pid i rc
	ws=$(ns_ws)
	net_broker swap --allow-host origin.test --allow-private-networks
	nsh_user --workspace "$ws" --net "broker:$NET_DIR/swap.sock" --status-fd 5 -- sh -c '
		while [ ! -e go ]; do sleep 0.05; done
		curl -sS http://origin.test/' 5>"$ws.status" >"$ws.out" 2>&1 &
	pid=$!
	wait_for 'grep -q "\"started\"" "$ws.status"'
	mv "$NET_DIR/swap.sock" "$NET_DIR/swap.old"
	ip netns exec "$NH" "$PY" -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666); s.listen(8)
open(sys.argv[2], "w").close()
while True:
    c, _ = s.accept(); c.recv(65536)
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\ndecoy\n"); c.close()' \
		"$NET_DIR/swap.sock" "$ws/go" </dev/null >/dev/null 2>&1 3>&- &
	echo $! >> "$NET_DIR/pids"
	rc=0
	wait "$pid" || rc=$?
	assert_equal "$rc" 0
	run -0 cat "$ws.out"
	assert_output "hello"
}

@test "a broker socket the user may not connect to is named as such; --socket-mode and --socket-group open it" {
	local ws
	ws=$(ns_ws)
	NET_KEEP_MODE=1 net_broker closed --allow-host origin.test --allow-private-networks
	run -102 --separate-stderr nsh_user --workspace "$ws" --net "broker:$NET_DIR/closed.sock" -- touch "$ws/ran"
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run: permission denied on the broker socket $NET_DIR/closed.sock (sbx-broker --socket-mode and --socket-group open it to other users)"
	assert_file_not_exists "$ws/ran"
	NET_KEEP_MODE=1 net_broker opened --allow-host origin.test --allow-private-networks \
		--socket-mode 0660 --socket-group "$SBX_TEST_GID"
	assert_equal "$(stat -c '%a %g' "$NET_DIR/opened.sock")" "660 $SBX_TEST_GID"
	run -0 --separate-stderr nsh_user --workspace "$ws" --net "broker:$NET_DIR/opened.sock" -- curl -sS http://origin.test/
	assert_output "hello"
}

# The "net" lines of a status file, only the named fields.
net_lines() {
	"$PY" -c 'import json, sys
for l in open(sys.argv[1]):
    o = json.loads(l)
    if o.get("event") == "net":
        print(" ".join(str(o.get(k)) for k in sys.argv[2:]))' "$@"
}

@test "the broker's refusals reach the caller: on the status fd at once, and one note at exit" {
	local ws before
	ws=$(ns_ws)
	before=$(requests)
	mkdir -p "$NET_DIR/st"
	chmod 0755 "$NET_DIR/st"
	# The command waits until its own refusal is on the status fd: the
	# line is written while the sandbox still runs.
	run -0 --separate-stderr nsh_user --workspace "$ws" --ro "$NET_DIR/st" --net "broker:$BSOCK" \
		--status-fd 5 -- sh -c "
		curl -sS -o /dev/null -w '%{http_code}\n' http://other.test/
		timeout 10 sh -c 'until grep -q \"\\\"event\\\":\\\"net\\\"\" $NET_DIR/st/s; do sleep 0.05; done'; echo seen \$?
		curl -sS -o /dev/null -w '%{http_code}\n' http://other.test/
		curl -sS -o /dev/null -w '%{http_code}\n' http://other.test/
		curl -sS https://other.test/ 2>&1
		curl -sS http://origin.test/" 5>"$NET_DIR/st/s"
	assert_output "403
seen 0
403
403
curl: (56) CONNECT tunnel failed, response 403
hello"
	assert_equal "$stderr" "sbx-ns: note: the broker refused 4 connections: other.test:80: host other.test not on the allowlist (--allow-host) (3); other.test:443: host other.test not on the allowlist (--allow-host) (1)"
	run -0 net_lines "$NET_DIR/st/s" host port decision status reason count
	assert_line --index 0 "other.test 80 refused 403 host other.test not on the allowlist (--allow-host) 1"
	assert_line "other.test 443 refused 403 host other.test not on the allowlist (--allow-host) 1"
	assert_line "other.test 80 refused 403 host other.test not on the allowlist (--allow-host) 3"
	assert_line --index -1 --regexp "^origin\.test 80 allowed 200 None 1$"
	run -0 net_lines "$NET_DIR/st/s" host bytes_up bytes_down
	assert_line --index -1 --regexp "^origin\.test [1-9][0-9]* [1-9][0-9]*$"
	# The exit line stays last.
	run -0 tail -n 1 "$NET_DIR/st/s"
	assert_output --partial '"event":"exit","code":0'
	assert_equal "$(requests)" "$((before + 1))"
}

@test "a loop of refused requests gives a bounded handful of lines with the running total" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr ns_fd5 nsh_user --workspace "$ws" --net "broker:$BSOCK" --status-fd 5 -- python3 -c '
import socket
for i in range(3000):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(b"CONNECT other.test:443 HTTP/1.1\r\n\r\n")
    while s.recv(4096):
        pass
    s.close()'
	# A busy machine may leave the broker no room on the channel for some
	# lines: those are counted as not reported in detail, never lost.
	local n refused unrep
	[[ $stderr =~ ^sbx-ns:\ note:\ the\ broker\ refused\ ([0-9]+)\ connections:\ other\.test:443:\ host\ other\.test\ not\ on\ the\ allowlist\ \(--allow-host\)\ \(([0-9]+)\)(\;\ ([0-9]+)\ more\ connections?\ not\ reported\ in\ detail\ \(the\ broker\'s\ log\ has\ them\))?$ ]] ||
		fail "unexpected note: $stderr"
	refused=${BASH_REMATCH[1]} unrep=${BASH_REMATCH[4]:-0}
	assert_equal "$((refused + unrep))" 3000
	assert_equal "${BASH_REMATCH[2]}" "$refused"
	n=$(printf '%s\n' "$output" | grep -c '"event":"net"')
	[ "$n" -ge 2 ] && [ "$n" -le 30 ]
	assert_line --regexp '"event":"net","host":"other.test","port":443,"decision":"refused","status":403,"reason":"host other.test not on the allowlist \(--allow-host\)","count":'"$refused"','
	if [ "$unrep" != 0 ]; then
		assert_line --partial '"event":"net","decision":"unreported","count":'"$unrep"
	fi
}

@test "sbx-ns's own check of the broker is not logged as a refused request" {
	local ws before after
	ws=$(ns_ws)
	before=$(grep -c '"connection"' "$NET_DIR/main.err")
	run -0 nsh_user --workspace "$ws" --net "broker:$BSOCK" -- true
	after=$(grep -c '"connection"' "$NET_DIR/main.err")
	# The handoff is the one connection logged.
	assert_equal "$after" "$((before + 1))"
	run -0 sh -c 'grep "\"connection\"" "$1" | tail -n 1' sh "$NET_DIR/main.err"
	assert_output --partial '"method":"HANDOFF"'
	run -1 grep -c 'client closed before a full request' "$NET_DIR/main.err"
}

@test "one sandbox cannot take every connection slot of a shared broker: --max-sandbox-connections" {
	local wa wb pid rc
	wa=$(ns_ws)
	wb=$(ns_ws)
	net_broker shared --allow-host origin.test --allow-private-networks --max-connections 4 \
		--max-sandbox-connections 2
	# Sandbox A holds two tunnels open and asks for a third; then waits.
	nsh_user --workspace "$wa" --net "broker:$NET_DIR/shared.sock" --status-fd 5 -- python3 -c '
import os, socket, time
held = []
for i in range(3):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(b"CONNECT origin.test:443 HTTP/1.1\r\nHost: origin.test:443\r\n\r\n")
    print(s.recv(200).split(b"\r\n")[0].decode(), flush=True)
    held.append(s)
open("ready", "w").close()
while not os.path.exists("done"):
    time.sleep(0.05)' >"$wa.out" 5>"$wa.status" 2>"$wa.err" &
	pid=$!
	wait_for '[ -e "$wa/ready" ]'
	# Sandbox B, at the same time, is served.
	run -0 --separate-stderr nsh_user --workspace "$wb" --net "broker:$NET_DIR/shared.sock" -- sh -c '
		curl -sS http://origin.test/; curl -sS http://origin.test/'
	assert_output "hello
hello"
	touch "$wa/done"
	rc=0
	wait "$pid" || rc=$?
	assert_equal "$rc" 0
	run -0 cat "$wa.out"
	assert_output "HTTP/1.1 200 Connection established
HTTP/1.1 200 Connection established
HTTP/1.1 503 Service Unavailable"
	run -0 cat "$wa.err"
	# The held tunnels end with the sandbox, before any ClientHello.
	assert_output "sbx-ns: note: the broker refused 3 connections: this sandbox's connection limit reached (--max-sandbox-connections) (1); origin.test:443: client closed before a full ClientHello (2)"
	run -0 net_lines "$wa.status" host port decision status reason count
	assert_line --index 0 "None None refused 503 this sandbox's connection limit reached (--max-sandbox-connections) 1"
}

# A package index and a git repository served over dumb HTTP on
# 198.18.7.2:8000, names that only the broker's pins know.
mirror_setup() {
	local m="$NET_DIR/mirror" whl
	[ -d "$m" ] && return 0
	mkdir -p "$m/simple/sbxdemo" "$m/packages" "$m/src"
	"$PY" - "$m" <<-'PY'
	import base64, hashlib, sys, zipfile
	m = sys.argv[1]
	name = "sbxdemo-1.0-py3-none-any.whl"
	files = {
	    "sbxdemo/__init__.py": b"VALUE = 'hello from the mirror'\n",
	    "sbxdemo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: sbxdemo\nVersion: 1.0\n",
	    "sbxdemo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: sbx-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
	}
	rec = ""
	for f, b in files.items():
	    h = base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()
	    rec += "%s,sha256=%s,%d\n" % (f, h, len(b))
	rec += "sbxdemo-1.0.dist-info/RECORD,,\n"
	with zipfile.ZipFile(m + "/packages/" + name, "w") as z:
	    for f, b in files.items():
	        z.writestr(f, b)
	    z.writestr("sbxdemo-1.0.dist-info/RECORD", rec)
	d = hashlib.sha256(open(m + "/packages/" + name, "rb").read()).hexdigest()
	open(m + "/simple/sbxdemo/index.html", "w").write(
	    '<html><body><a href="../../packages/%s#sha256=%s">%s</a></body></html>\n' % (name, d, name))
	PY
	git init -q -b main "$m/src"
	echo "hello from git" > "$m/src/README"
	git -C "$m/src" add README
	git -C "$m/src" -c user.name=t -c user.email=t@t commit -qm one
	git clone -q --bare "$m/src" "$m/repo.git"
	git -C "$m/repo.git" update-server-info
	chmod -R a+rX "$m"
	ip netns exec "$NO" "$PY" -m http.server 8000 --bind 198.18.7.2 --directory "$m" \
		</dev/null >/dev/null 2>>"$NET_DIR/mirror.log" 3>&- &
	echo $! >> "$NET_DIR/pids"
	net_wait_port "$NO" 198.18.7.2 8000
	# The same mirror over HTTPS on 8443, with a certificate of its own that
	# the clients inside are given as their CA.
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-subj /CN=pypi.mirror.test -addext subjectAltName=DNS:pypi.mirror.test,DNS:git.mirror.test \
		-keyout "$NET_DIR/mkey.pem" -out "$NET_DIR/mcert.pem" 2>/dev/null
	chmod 0644 "$NET_DIR/mcert.pem"
	ip netns exec "$NO" "$PY" -c '
import functools, http.server, ssl, sys
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
s = http.server.ThreadingHTTPServer(("198.18.7.2", 8443), h)
c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
c.load_cert_chain(sys.argv[2], sys.argv[3])
s.socket = c.wrap_socket(s.socket, server_side=True)
s.serve_forever()' "$m" "$NET_DIR/mcert.pem" "$NET_DIR/mkey.pem" \
		</dev/null >/dev/null 2>>"$NET_DIR/mirror.log" 3>&- &
	echo $! >> "$NET_DIR/pids"
	net_wait_port "$NO" 198.18.7.2 8443
	NET_PLAIN=1 net_broker mirror --allow-host pypi.mirror.test --allow-host git.mirror.test \
		--resolve pypi.mirror.test=198.18.7.2 --resolve git.mirror.test=198.18.7.2 \
		--allow-private-networks --allow-port 8000 --allow-port 8443 --allow-port 443
}

@test "pip installs from, and git clones from, a private mirror pinned by --resolve, from inside the sandbox" {
	local ws
	ws=$(ns_ws)
	mirror_setup
	run -0 --separate-stderr nsh_user --workspace "$ws" --net "broker:$NET_DIR/mirror.sock" -- sh -c '
		python3 -m pip install -q --no-cache-dir --disable-pip-version-check --target ./site \
			--index-url http://pypi.mirror.test:8000/simple/ --trusted-host pypi.mirror.test sbxdemo
		PYTHONPATH=./site python3 -c "import sbxdemo; print(sbxdemo.VALUE)"
		git clone -q http://git.mirror.test:8000/repo.git clone && cat clone/README'
	assert_output "hello from the mirror
hello from git"
	assert_equal "$stderr" ""
}

@test "pip and git reach the private mirror over HTTPS too, its certificate checked against its own CA" {
	local ws
	ws=$(ns_ws)
	mirror_setup
	run -0 --separate-stderr nsh_user --workspace "$ws" --ro "$NET_DIR/mcert.pem" --net "broker:$NET_DIR/mirror.sock" -- sh -c "
		python3 -m pip install -q --no-cache-dir --disable-pip-version-check --target ./site \
			--cert $NET_DIR/mcert.pem --index-url https://pypi.mirror.test:8443/simple/ sbxdemo
		PYTHONPATH=./site python3 -c 'import sbxdemo; print(sbxdemo.VALUE)'
		git -c http.sslCAInfo=$NET_DIR/mcert.pem clone -q https://git.mirror.test:8443/repo.git clone && cat clone/README"
	assert_output "hello from the mirror
hello from git"
	assert_equal "$stderr" ""
}

@test "pip reaching for pypi.org is refused, and the caller is told why" {
	local ws
	ws=$(ns_ws)
	mirror_setup
	run --separate-stderr nsh_user --workspace "$ws" --net "broker:$NET_DIR/mirror.sock" --status-fd 5 -- \
		python3 -m pip install -q --no-cache-dir --disable-pip-version-check --retries 0 --target ./site sbxdemo \
		5>"$ws.status"
	assert_equal "$status" 1
	assert_equal "$(printf '%s\n' "$stderr" | grep -c 'No matching distribution found for sbxdemo')" 1
	assert_equal "$(printf '%s\n' "$stderr" | tail -n 1)" "sbx-ns: note: the broker refused 1 connection: pypi.org:443: host pypi.org not on the allowlist (--allow-host) (1)"
	run -0 net_lines "$ws.status" host port decision reason
	assert_line --index 0 "pypi.org 443 refused host pypi.org not on the allowlist (--allow-host)"
}

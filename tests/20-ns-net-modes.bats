#!/usr/bin/env bats
# sbx-ns --net none, loopback and host, with real clients. sbx-ns runs in
# a test namespace ("h", no default route) standing in for the host, so
# even --net host reaches only the test origin on 198.18.7.2.

load helpers
load ns-net
bats_require_minimum_version 1.5.0

setup_file() {
	net_setup_file
	echo secret > "$NS_DIR/secret"
	chmod 0644 "$NS_DIR/secret"
	# An abstract Unix socket on the "host": reachable by name from any
	# process in its network namespace that is not confined.
	ip netns exec "$NH" "$PY" -c '
import socket
s = socket.socket(socket.AF_UNIX); s.bind("\0sbx-net-test-abstract"); s.listen(8)
while True:
    s.accept()[0].close()' </dev/null >/dev/null 2>&1 3>&- &
	echo $! >> "$NET_DIR/pids"
	wait_for "ip netns exec \"\$NH\" \"\$PY\" -c 'import socket; socket.socket(socket.AF_UNIX).connect(\"\\0sbx-net-test-abstract\")' 2>/dev/null"
}

@test "none: only lo, down; every socket() fails, so nothing is reached" {
	local ws
	ws=$(ns_ws)
	nsh_both "$ws" "interfaces: lo; ipv6 addresses: 0
socket: EPERM
socket: EPERM
socket: EPERM" \
		--net none -- sh -c "$NET_ATT ifaces; $NET_ATT connect 127.0.0.1 8081; $NET_ATT connect 198.18.7.2 80; $NET_ATT udp 198.18.7.2 53; :"
	run -7 --separate-stderr nsh_user --workspace "$ws" -- curl -sS http://198.18.7.2/
	curl_ms
	assert_output ""
	assert_equal "$stderr" "curl: (7) Failed to connect to 198.18.7.2 port 80 after 0 ms: Couldn't connect to server"
}

@test "loopback: a server and a client inside talk over 127.0.0.1 and ::1; the host's loopback is not reached" {
	local ws
	ws=$(ns_ws)
	nsh_both "$ws" "interfaces: lo; ipv6 addresses: 1
ok pong
connect: ECONNREFUSED
connect: ENETUNREACH
ok socket" \
		--net loopback -- sh -c "$NET_ATT ifaces; $NET_ATT talk 8000; $NET_ATT connect 127.0.0.1 8081; $NET_ATT connect 198.18.7.2 80; $NET_ATT socket unix stream; :"
	run -0 --separate-stderr nsh_user --workspace "$ws" --net loopback -- sh -c '
		python3 -m http.server 8001 --bind ::1 >/dev/null 2>&1 &
		for i in $(seq 1 100); do curl -sS -o /dev/null "http://[::1]:8001/" 2>/dev/null && break; sleep 0.05; done
		curl -sS -o /dev/null -w "%{http_code}\n" "http://[::1]:8001/"
		kill $!'
	assert_output "200"
	run -7 --separate-stderr nsh_root --workspace "$ws" --net loopback -- curl -sS http://127.0.0.1:8081/
	curl_ms
	assert_equal "$stderr" "curl: (7) Failed to connect to 127.0.0.1 port 8081 after 0 ms: Couldn't connect to server"
	assert_file_not_exists "$NET_DIR/hostlo.log"
}

@test "loopback: a Unix socket works inside the sandbox's own root; no host abstract socket is reachable" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr nsh_user --workspace "$ws" --net loopback -- python3 -c '
import socket, os
s = socket.socket(socket.AF_UNIX); s.bind("u.sock"); s.listen(1)
c = socket.socket(socket.AF_UNIX); c.connect("u.sock"); a, _ = s.accept()
c.send(b"hi"); print(a.recv(2).decode())
try:
    socket.socket(socket.AF_UNIX).connect("\0sbx-net-test-abstract")
except OSError as e:
    print(e.strerror)'
	assert_output "hi
Connection refused"
}

@test "host: the host's network works, listen() fails, files stay confined" {
	local ws
	ws=$(ns_ws)
	nsh_both "$ws" "ok connected
listen: EPERM
bind: EACCES
hello
secret: No such file or directory
ok socket" \
		--net host -- sh -c "$NET_ATT connect 198.18.7.2 80; $NET_ATT listen - 0; $NET_ATT listen 127.0.0.1 9000
			curl -sS http://origin.test/ --resolve origin.test:80:198.18.7.2
			cat $NS_DIR/secret 2>&1 | sed 's/.*secret: /secret: /'
			$NET_ATT socket unix stream"
	run -2 --separate-stderr nsh_user --workspace "$ws" --net host -- sh -c 'echo x > /etc/sbx-net-test'
	assert_equal "$stderr" "sh: 1: cannot create /etc/sbx-net-test: Read-only file system"
	run -0 --separate-stderr nsh_user --workspace "$ws" --net host -- python3 -c '
import socket
s = socket.socket()
try:
    s.listen(1)
except OSError as e:
    print(e.strerror)
try:
    socket.socket(socket.AF_UNIX).connect("\0sbx-net-test-abstract")
except OSError as e:
    print(e.strerror)'
	assert_output "Operation not permitted
Operation not permitted"
}

@test "the status names the mode, and host says it is unrestricted" {
	local ws m
	ws=$(ns_ws)
	for m in none loopback; do
		run -0 ns_fd5 nsh_user --workspace "$ws" --net "$m" --status-fd 5 -- true
		assert_line --index 1 --partial "\"net\":\"$m\","
	done
	run -0 ns_fd5 nsh_user --workspace "$ws" --net host --status-fd 5 -- true
	assert_line --index 1 --partial '"net":"host (unrestricted)",'
	run -0 ns_fd5 nsh_user --workspace "$ws" --net host --status-fd 5 -- readlink /proc/self/ns/net
	# (the command and the status share the pipe: order is not fixed)
	assert_line "$(ip netns exec "$NH" readlink /proc/self/ns/net)"
}

#!/usr/bin/env bats
# The handoff: how sbx-ns gives the sandbox's listening sockets to
# sbx-broker (one line and the descriptors, over the broker's own socket),
# and everything else that may come with descriptors, refused. The broker
# and the sockets run in namespace "h"; origins in "o" (198.18.7.2).

load helpers
load ns-net
bats_require_minimum_version 1.5.0

setup_file() {
	net_setup_file
	net_main_broker
	# handoff.py LINE SOCKETS... : send LINE (Python escapes) with the
	# descriptors of SOCKETS over the broker's socket, print the answer;
	# with HOLD set, keep the channel open until stdin ends, then fetch
	# through the first socket when FETCH is set. SOCKETS: tcp4 (listening
	# on 127.0.0.1:PORT), tcp6, any4 (0.0.0.0), unbound (not listening),
	# udp, unix (a listening Unix socket), pipe, none; for transparent
	# mode udp53 and tcp53 (127.0.0.1:53) and anyN (0.0.0.0:N, listening).
	cat > "$NET_DIR/handoff.py" <<-'PY'
	import array, ast, os, socket, sys
	line = ast.literal_eval('b"' + sys.argv[1] + '"')
	port = int(os.environ.get("PORT", "0"))
	keep = []
	def make(kind):
	    if kind == "pipe":
	        r, w = os.pipe(); keep.append(w); return r
	    if kind == "udp":
	        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
	    elif kind == "udp53":
	        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 53))
	    elif kind == "tcp53" or (kind.startswith("any") and kind != "any4"):
	        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	        s.bind(("127.0.0.1", 53) if kind == "tcp53" else ("0.0.0.0", int(kind[3:]))); s.listen(8)
	    elif kind == "unix":
	        s = socket.socket(socket.AF_UNIX); s.bind(""); s.listen(1)
	    elif kind == "tcp6":
	        s = socket.socket(socket.AF_INET6); s.bind(("::1", port)); s.listen(8)
	    elif kind == "unbound":
	        s = socket.socket()
	    else:
	        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	        s.bind(("0.0.0.0" if kind == "any4" else "127.0.0.1", port)); s.listen(8)
	    keep.append(s); return s.fileno()
	fds = [make(k) for k in sys.argv[2:] if k != "none"]
	c = socket.socket(socket.AF_UNIX); c.connect(os.environ["BSOCK"])
	anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
	c.sendmsg([line], anc)
	for k in keep:
	    if not isinstance(k, int):
	        k.close()
	    else:
	        os.close(k)
	c.settimeout(5)
	print(c.recv(300).decode().rstrip("\r\n").split("\r\n")[0], flush=True)
	if os.environ.get("HOLD"):
	    sys.stdin.read()
	    if os.environ.get("BYTES"):
	        c.sendall(b"x")
	    else:
	        c.close()
	    # Wait until the broker has closed the sandbox's listener (a connect
	    # is refused), at most 5 s; FETCH then shows what a client gets.
	    import time
	    for _ in range(250):
	        try:
	            socket.create_connection(("127.0.0.1", port), 1).close()
	        except OSError:
	            break
	        time.sleep(0.02)
	if os.environ.get("FETCH"):
	    try:
	        s = socket.create_connection(("127.0.0.1", port), 2)
	        s.sendall(b"GET http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\n\r\n")
	        got = b""
	        while True:
	            d = s.recv(300)
	            if not d:
	                break
	            got += d
	        print(got.split(b"\r\n")[-1].decode().strip())
	    except OSError as e:
	        print(e.strerror)
	PY
}

# handoff [VAR=VALUE]... LINE SOCKETS...: handoff.py in "h", with its settings.
handoff() {
	local set=()
	while [[ $1 == [A-Z]*=* ]]; do set+=("$1"); shift; done
	ip netns exec "$NH" env BSOCK="$BSOCK" "${set[@]}" "$PY" "$NET_DIR/handoff.py" "$@"
}

@test "a handoff of two loopback listeners is taken, served, and logged" {
	run -0 handoff PORT=4101 FETCH=1 'SBX-HANDOFF 1\n' tcp4 tcp6
	assert_output "SBX-HANDOFF OK
hello"
	run -0 grep -c '"state":"attached","listeners":"127.0.0.1:4101 \[::1\]:4101"' "$NET_DIR/main.err"
}

@test "descriptors that are not loopback TCP listeners are refused, each with its reason" {
	local kind want
	while IFS='|' read -r kind want; do
		run -0 handoff PORT=4102 'SBX-HANDOFF 1\n' $kind
		assert_output "SBX-HANDOFF REFUSED $want"
	done <<-'EOF'
	pipe|listener 1: not a socket
	udp|listener 1: not a TCP socket
	unix|listener 1: not a TCP socket
	unbound|listener 1: not listening
	any4|listener 1: not on a loopback address
	tcp4 pipe|listener 2: not a socket
	tcp4 tcp6 pipe|more file descriptors than a sandbox has listeners
	EOF
}

@test "a transparent handoff: the proxy listeners, the DNS sockets and the captured ports, each checked in order" {
	local kinds want
	run -0 handoff PORT=4110 'SBX-HANDOFF 1 TRANSPARENT\n' tcp4 tcp6 udp53 tcp53 any80 any443
	assert_output "SBX-HANDOFF OK"
	run -0 grep -c '"state":"attached","listeners":"127.0.0.1:4110 \[::1\]:4110 dns 127.0.0.1:53/udp 127.0.0.1:53/tcp captured 80 443"' "$NET_DIR/main.err"
	while IFS='|' read -r kinds want; do
		run -0 handoff PORT=4111 'SBX-HANDOFF 1 TRANSPARENT\n' $kinds
		assert_output "SBX-HANDOFF REFUSED $want"
	done <<-'EOF'
	tcp4 tcp6 udp53 tcp53 any80|fewer file descriptors than a transparent sandbox has sockets
	tcp4 tcp6 udp53 tcp53 any80 any443 any22|more file descriptors than a sandbox has listeners
	tcp4 tcp6 tcp53 udp53 any80 any443|listener 3: not a UDP socket over IPv4
	tcp4 tcp6 udp tcp53 any80 any443|listener 3: not on 127.0.0.1:53
	tcp4 tcp6 udp53 any53 any80 any443|listener 4: not on 127.0.0.1:53
	tcp4 tcp6 udp53 tcp53 any443 any80|listener 5: not the wildcard listener of the next captured port
	tcp4 tcp6 udp53 tcp53 any80 any8443|listener 6: not the wildcard listener of the next captured port
	any4 tcp6 udp53 tcp53 any80 any443|listener 1: not on a loopback address
	EOF
	run -0 handoff PORT=4111 'SBX-HANDOFF 1\n' tcp4 tcp6 udp53
	assert_output "SBX-HANDOFF REFUSED more file descriptors than a sandbox has listeners"
}

@test "descriptors with anything but the handoff line are refused; the line alone is an HTTP request" {
	local line
	for line in 'GET http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\n\r\n' 'SBX-HANDOFF 2\n' 'SBX-HANDOFF 1\nX'; do
		run -0 handoff PORT=4103 "$line" tcp4
		assert_output "SBX-HANDOFF REFUSED file descriptors without a handoff"
	done
	run -0 handoff PORT=4103 'SBX-HANDOFF 1\n' none
	assert_output "HTTP/1.1 400 Bad Request"
}

@test "the channel's end closes the listeners: later connects are refused" {
	run -0 handoff PORT=4104 HOLD=1 FETCH=1 'SBX-HANDOFF 1\n' tcp4 </dev/null
	assert_output "SBX-HANDOFF OK
Connection refused"
	run -0 grep -c '"state":"detached","listeners":"127.0.0.1:4104","reason":"the sandbox ended"' "$NET_DIR/main.err"
}

@test "bytes on the channel after the handoff end the sandbox's service too" {
	run -0 handoff PORT=4105 HOLD=1 BYTES=1 FETCH=1 'SBX-HANDOFF 1\n' tcp4 </dev/null
	assert_output "SBX-HANDOFF OK
Connection refused"
	run -0 grep -c '"state":"detached","listeners":"127.0.0.1:4105","reason":"bytes on the sandbox.s channel"' "$NET_DIR/main.err"
}

@test "at most 64 sandboxes at once: the 65th handoff is refused, and a slot frees when one ends" {
	local fd i
	mkfifo "$NET_DIR/hold"
	exec {fd}<>"$NET_DIR/hold"
	for i in $(seq 1 64); do
		handoff PORT=$((4200 + i)) HOLD=1 'SBX-HANDOFF 1\n' tcp4 \
			<"$NET_DIR/hold" >"$NET_DIR/hold.$i" 2>&1 {fd}>&- &
	done
	for i in $(seq 1 64); do
		while [ ! -s "$NET_DIR/hold.$i" ]; do sleep 0.05; done
		assert_equal "$(cat "$NET_DIR/hold.$i")" "SBX-HANDOFF OK"
	done
	run -0 handoff PORT=4300 'SBX-HANDOFF 1\n' tcp4
	assert_output "SBX-HANDOFF REFUSED too many sandboxes"
	exec {fd}>&-
	wait
	run -0 handoff PORT=4300 'SBX-HANDOFF 1\n' tcp4
	assert_output "SBX-HANDOFF OK"
}

@test "sbx-ns refuses to run (102) when the socket's server does not take the listeners" {
	local ws
	ws=$(ns_ws)
	ip netns exec "$NH" "$PY" -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666); s.listen(8)
while True:
    c, _ = s.accept()
    if c.recv(65536):
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    c.shutdown(socket.SHUT_WR)
    while c.recv(65536):
        pass
    c.close()' "$NET_DIR/decoy.sock" </dev/null >/dev/null 2>&1 3>&- &
	echo $! >> "$NET_DIR/pids"
	ip netns exec "$NH" "$PY" -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666); s.listen(8)
while True:
    c, _ = s.accept(); c.recv(65536); c.shutdown(socket.SHUT_WR)
    while c.recv(65536):
        pass
    c.close()' "$NET_DIR/mute.sock" </dev/null >/dev/null 2>&1 3>&- &
	echo $! >> "$NET_DIR/pids"
	wait_for '[ -S "$NET_DIR/decoy.sock" ] && [ -S "$NET_DIR/mute.sock" ]'
	run -102 --separate-stderr nsh_user --workspace "$ws" --net "broker:$NET_DIR/decoy.sock" -- touch ran
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run: the broker at $NET_DIR/decoy.sock did not take the sandbox's listeners: not an sbx-broker answer"
	run -102 --separate-stderr nsh_user --workspace "$ws" --net "broker:$NET_DIR/mute.sock" -- touch ran
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run: the broker at $NET_DIR/mute.sock did not take the sandbox's listeners: it closed the connection"
	[ ! -e "$ws/ran" ]
}

#!/usr/bin/env bats
# sbx-broker's limits against one client starving or flooding the rest:
# a cap per uid on --listen-tcp and slots reserved for the broker's own
# socket, one log budget per sandbox and client, the whole list of the
# host's own addresses however long, and terminal controls escaped in
# every JSON line. Namespaces and origins as in tests/ns-net.bash.

load helpers
load ns-net
bats_require_minimum_version 1.5.0

setup_file() {
	net_setup_file
	cat > "$NET_DIR/cl.py" <<-'PY'
	# cl.py hold ADDR:PORT N FILE: N idle TCP connections, their count to FILE once open.
	# cl.py req SOCK|ADDR:PORT HOST:PORT: one CONNECT; prints the status line and the reason.
	# cl.py gone SOCK|ADDR:PORT: one CONNECT, closed without waiting for the answer.
	# cl.py flood SOCK N: N refused CONNECTs in a row.
	# cl.py dns NAME: one A query for NAME (raw bytes allowed) to the resolver at 127.0.0.1.
	import os, socket, sys, time
	def conn(a):
	    if a.startswith("/"):
	        s = socket.socket(socket.AF_UNIX); s.connect(a); return s
	    h, p = a.rsplit(":", 1)
	    return socket.create_connection((h.strip("[]"), int(p)))
	def req(a, hp):
	    s = conn(a)
	    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (hp, hp)).encode())
	    d = b""
	    while b"\r\n\r\n" not in d:
	        x = s.recv(4096)
	        if not x: break
	        d += x
	    s.close()
	    lines = d.split(b"\r\n")
	    why = [l for l in lines if l.startswith(b"Sbx-Broker-Reason: ")]
	    return lines[0].decode() + ("; " + why[0][19:].decode() if why else "")
	m = sys.argv[1]
	if m == "hold":
	    ss = [conn(sys.argv[2]) for i in range(int(sys.argv[3]))]
	    open(sys.argv[4], "w").write("%d\n" % len(ss))
	    time.sleep(3600)
	elif m == "req":
	    print(req(sys.argv[2], sys.argv[3]))
	elif m == "gone":
	    s = conn(sys.argv[2])
	    s.sendall(b"CONNECT origin.test:80 HTTP/1.1\r\nHost: origin.test:80\r\n\r\n")
	    s.close()
	elif m == "flood":
	    for i in range(int(sys.argv[3])):
	        req(sys.argv[2], "refused%d.test:443" % i)
	elif m == "dns":
	    name = sys.argv[1 + 1].encode("utf-8", "surrogateescape")
	    q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
	    for l in name.split(b"."):
	        q += bytes([len(l)]) + l
	    q += b"\x00\x00\x01\x00\x01"
	    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5)
	    s.sendto(q, ("127.0.0.1", 53)); s.recv(512)
	PY
	chmod 0644 "$NET_DIR/cl.py"
}

teardown() {
	[ -f "$NET_DIR/hold.pid" ] && kill "$(cat "$NET_DIR/hold.pid")" 2>/dev/null || :
	rm -f "$NET_DIR/hold.pid"
}

asuser() { ip netns exec "$NH" setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" --init-groups -- "$@"; }
# hold ADDR:PORT N FILE: the test user's N idle connections, in the
# background until teardown (the pid is python's: ip and setpriv exec).
hold() {
	install -o "$SBX_TEST_UID" -m 0644 /dev/null "$3"
	ip netns exec "$NH" setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" --init-groups -- \
		"$PY" "$NET_DIR/cl.py" hold "$@" &
	echo $! > "$NET_DIR/hold.pid"
	wait_for "[ -s '$3' ]"
}
inh() { ip netns exec "$NH" "$@"; }

@test "bad values of --max-peer-connections and --reserved-connections are usage errors" {
	local b=(--listen "$NET_DIR/bad.sock" --allow-host origin.test)
	for v in 0 -1 x 99999999999999999999 1000001; do
		run -100 --separate-stderr "$SBX_BIN/sbx-broker" "${b[@]}" --max-peer-connections "$v"
		assert_regex "$stderr" "^sbx-broker: usage: --max-peer-connections: "
		run -100 --separate-stderr "$SBX_BIN/sbx-broker" "${b[@]}" --reserved-connections "$v"
		assert_regex "$stderr" "^sbx-broker: usage: --reserved-connections: "
	done
	run -100 --separate-stderr "$SBX_BIN/sbx-broker" "${b[@]}" --max-peer-connections 2 --max-peer-connections 3
	assert_regex "$stderr" "^sbx-broker: usage: .*--max-peer-connections"
	run -100 --separate-stderr "$SBX_BIN/sbx-broker" "${b[@]}" --reserved-connections 2 --reserved-connections 3
	assert_regex "$stderr" "^sbx-broker: usage: .*--reserved-connections"
	run -100 --separate-stderr "$SBX_BIN/sbx-broker" "${b[@]}" --max-connections 10 --reserved-connections 10
	assert_equal "$stderr" "sbx-broker: usage: --reserved-connections 10 leaves nothing of --max-connections (10) for anything else"
	run -100 --separate-stderr "$SBX_BIN/sbx-broker" "${b[@]}" --max-connections 10 --reserved-connections 2 --max-peer-connections 9
	assert_equal "$stderr" "sbx-broker: usage: --max-peer-connections 9 is more than --max-connections less the reserved ones (8)"
	[ ! -e "$NET_DIR/bad.sock" ]
	run -0 "$SBX_BIN/sbx-broker" --help
	assert_line "  --max-peer-connections N     one uid's on --listen-tcp; default: a quarter"
	assert_line "  --reserved-connections N     kept for the Unix socket; default: a sixteenth"
}

@test "idle --listen-tcp connections of one uid: its excess is refused with a log line, another uid and a full sandbox still get through" {
	net_broker lim --allow-host origin.test --allow-private-networks --listen-tcp 127.0.0.1:3130 \
		--max-connections 50 --log-fd 4 4>"$NET_DIR/lim.log"
	# 45 idle connections, as the finding's landlock-tier command held: 12 are served.
	hold 127.0.0.1:3130 45 "$NET_DIR/held"
	run -0 asuser "$PY" "$NET_DIR/cl.py" req 127.0.0.1:3130 origin.test:443
	assert_output "HTTP/1.1 503 Service Unavailable; this uid's connection limit on --listen-tcp reached (--max-peer-connections) (uid $SBX_TEST_UID)"
	# 33 of the held ones and this one, each with its line
	wait_for '[ "$(grep -c "\"decision\":\"refused\",\"status\":503,\"reason\":\"this uid'"'"'s connection limit on --listen-tcp reached (--max-peer-connections) (uid $SBX_TEST_UID)\"" "$NET_DIR/lim.log")" = 34 ]'
	run -0 grep -c '"max_peer_connections":12,"reserved_connections":3' "$NET_DIR/lim.log"
	# Another uid on the same port is not this one's count.
	run -0 inh "$PY" "$NET_DIR/cl.py" req 127.0.0.1:3130 origin.test:80
	assert_output "HTTP/1.1 200 Connection established"
	# The next full sandbox of the same user: its handoff and its request succeed.
	ws=$(ns_ws)
	run -0 --separate-stderr nsh_user --workspace "$ws" --net "broker:$NET_DIR/lim.sock" -- curl -sS http://origin.test/
	assert_output "hello"
	assert_equal "$stderr" ""
}

@test "on [::1] too, the cap is per uid; a client that closed before it was accepted is refused, never taken for uid 0's" {
	net_broker v6 --allow-host origin.test --allow-private-networks --listen-tcp '[::1]:3132' \
		--max-connections 40 --max-peer-connections 3 --log-fd 4 4>"$NET_DIR/v6.log"
	hold '[::1]:3132' 3 "$NET_DIR/held3"
	run -0 asuser "$PY" "$NET_DIR/cl.py" req '[::1]:3132' origin.test:80
	assert_output "HTTP/1.1 503 Service Unavailable; this uid's connection limit on --listen-tcp reached (--max-peer-connections) (uid $SBX_TEST_UID)"
	run -0 inh "$PY" "$NET_DIR/cl.py" req '[::1]:3132' origin.test:80
	assert_output "HTTP/1.1 200 Connection established"
	# The broker stopped, the client connects, asks and closes: when the
	# broker accepts, the peer's socket has no owner any more.
	kill -STOP "$(cat "$NET_DIR/v6.pid")"
	asuser "$PY" "$NET_DIR/cl.py" gone '[::1]:3132'
	kill -CONT "$(cat "$NET_DIR/v6.pid")"
	wait_for 'grep -q "unable to find the uid of this --listen-tcp client" "$NET_DIR/v6.log"'
	run -0 grep -c '"decision":"refused","status":503,"reason":"unable to find the uid of this --listen-tcp client"' "$NET_DIR/v6.log"
	assert_output 1
}

@test "--listen-tcp clients and sandboxes stop short of the reserved slots; the broker's socket takes them" {
	net_broker res --allow-host origin.test --allow-private-networks --listen-tcp 127.0.0.1:3131 \
		--max-connections 8 --reserved-connections 2 --max-peer-connections 6
	hold 127.0.0.1:3131 6 "$NET_DIR/held2"
	run -0 inh "$PY" "$NET_DIR/cl.py" req 127.0.0.1:3131 origin.test:80
	assert_output "HTTP/1.1 503 Service Unavailable; connection limit reached (--max-connections; the rest is reserved for handoffs and probes, --reserved-connections) (uid 0)"
	run -0 inh "$PY" "$NET_DIR/cl.py" req "$NET_DIR/res.sock" origin.test:80
	assert_output "HTTP/1.1 200 Connection established"
	ws=$(ns_ws)
	run -0 --separate-stderr nsh_user --workspace "$ws" --net "broker:$NET_DIR/res.sock" -- true
	assert_equal "$stderr" ""
}

@test "100,000 refused CONNECTs grow the log by at most 51 lines of under 4 KiB a second, and the dropped lines are counted" {
	net_broker flood --allow-host origin.test --log-fd 4 4>"$NET_DIR/flood.log"
	local t0 t1 secs lines sum
	t0=$(date +%s)
	run -0 inh "$PY" "$NET_DIR/cl.py" flood "$NET_DIR/flood.sock" 100000
	t1=$(date +%s)
	kill "$(cat "$NET_DIR/flood.pid")"
	wait_for 'grep -q "\"event\":\"exit\"" "$NET_DIR/flood.log"'
	secs=$((t1 - t0 + 2))
	lines=$(grep -c '"event":"connection"' "$NET_DIR/flood.log")
	# every refusal is a line or counted in a "dropped" line
	sum=$(grep '"event":"dropped"' "$NET_DIR/flood.log" | sed 's/.*"lines":\([0-9]*\).*/\1/' | paste -sd+ | bc)
	assert_equal "$((lines + sum))" 100000
	[ "$lines" -le $((50 * secs)) ]
	[ "$(grep -c '"event":"dropped"' "$NET_DIR/flood.log")" -le "$secs" ]
	[ "$(stat -c %s "$NET_DIR/flood.log")" -le $((51 * 4096 * secs + 4096)) ]
	run -0 grep -c '"event":"dropped",.*"who":"uid 0 on the broker'"'"'s socket","lines":[0-9]*,"connection":[0-9]*,"dns":0,"sandbox":0,"reason":"more than 50 lines in one second (the log'"'"'s budget)"' "$NET_DIR/flood.log"
	run -0 awk 'length($0) >= 4096' "$NET_DIR/flood.log"
	assert_output ""
}

@test "25 uids flooding at once: all budgets together write at most 1,000 lines a second, and every refusal is a line or counted" {
	local u sum lines t0 t1 pids=()
	net_broker all --allow-host origin.test --log-fd 4 4>"$NET_DIR/many.log"
	t0=$(date +%s)
	for u in $(seq 3001 3025); do
		ip netns exec "$NH" setpriv --reuid="$u" --regid="$u" --clear-groups -- \
			"$PY" "$NET_DIR/cl.py" flood "$NET_DIR/all.sock" 2000 &
		pids+=($!)
	done
	wait "${pids[@]}"
	t1=$(date +%s)
	kill "$(cat "$NET_DIR/all.pid")"
	wait_for 'grep -q "\"event\":\"exit\"" "$NET_DIR/many.log"'
	lines=$(grep -c '"event":"connection"' "$NET_DIR/many.log")
	sum=$(grep '"event":"dropped"' "$NET_DIR/many.log" | sed 's/.*"lines":\([0-9]*\).*/\1/' | paste -sd+ | bc)
	assert_equal "$((lines + sum))" 50000
	run -0 grep -c '"who":"all clients together","lines":[0-9]*,"connection":[0-9]*,"dns":0,"sandbox":0,"reason":"more than 1000 lines in one second from all clients together (the log'"'"'s ceiling)"' "$NET_DIR/many.log"
	# 1,000 lines and the ceiling's own summary in each second of the flood
	# (and of the broker's clock: one more second where the two straddle)
	[ "$(grep -vc '"event":"\(listening\|exit\)"' "$NET_DIR/many.log")" -le $((1001 * (t1 - t0 + 2))) ]
	[ "$lines" -lt 25000 ]
}

@test "the 1000th address of an interface is the host's own: refused (no list is cut short)" {
	local i a
	inh ip link add sbxmany type veth peer name sbxmany1
	inh ip link set sbxmany up
	for i in $(seq 0 999); do
		echo "addr add 10.77.$((i / 250)).$((i % 250 + 1))/32 dev sbxmany"
	done | inh ip -batch -
	run -0 sh -c "ip -n $NH -4 addr show dev sbxmany | grep -c inet"
	assert_output 1000
	a=10.77.3.250
	net_broker many --allow-host far.test --allow-host near.test --allow-private-networks \
		--resolve far.test=$a --resolve near.test=10.77.0.1
	run -0 inh "$PY" "$NET_DIR/cl.py" req "$NET_DIR/many.sock" far.test:443
	assert_output "HTTP/1.1 403 Forbidden; address $a refused: an address of this host; only --allow-address $a/32 opens it"
	run -0 inh "$PY" "$NET_DIR/cl.py" req "$NET_DIR/many.sock" near.test:443
	assert_output "HTTP/1.1 403 Forbidden; address 10.77.0.1 refused: an address of this host; only --allow-address 10.77.0.1/32 opens it"
	inh ip link del sbxmany
}

@test "C1 controls, bidi controls and U+2028 in a DNS name are escaped in the broker's log and in sbx-ns's net line" {
	net_broker c1 --allow-host origin.test --allow-private-networks --log-fd 4 4>"$NET_DIR/c1.log"
	ws=$(ns_ws)
	run -0 --separate-stderr nsh_user --workspace "$ws" --ro "$NET_DIR" --status-fd 5 \
		--net "broker:$NET_DIR/c1.sock,transparent" -- \
		"$PY" "$NET_DIR/cl.py" dns "$(printf 'a\xc2\x9b31mb\xc2\x9d0;x\xe2\x80\xaey\xe2\x80\xa8z.test')" 5>"$NET_DIR/c1.status"
	run -0 grep -c 'a\\u009b31mb\\u009d0;x\\u202ey\\u2028z.test' "$NET_DIR/c1.log"
	run -0 grep -c '"event":"net","host":"a\\u009b31mb\\u009d0;x\\u202ey\\u2028z.test"' "$NET_DIR/c1.status"
	run -1 grep -c "$(printf '\xc2\x9b\|\xc2\x9d\|\xe2\x80\xae\|\xe2\x80\xa8')" "$NET_DIR/c1.log" "$NET_DIR/c1.status"
}

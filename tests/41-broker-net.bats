#!/usr/bin/env bats
# sbx-broker end to end. Every process runs in network namespaces made
# here: "b" holds the broker (in its own mount namespace, with an
# /etc/hosts naming the test hosts), the clients, a tinyproxy upstream and
# decoy servers on its own addresses; "o" holds the origins on
# 198.18.0.2-3. Neither has a default route. Origins log every byte they
# receive before they answer, so each refusal can show that nothing was
# forwarded.

load helpers
bats_require_minimum_version 1.5.0

# A ClientHello recorded from openssl s_client 3.0 naming origin.test.
HELLO_HEX=1603010138010001340303a8776a38d0f40e58e813c1d800bee17229ffe1274e82f2759a81ac76ddb6769e2036b178f05e55016385a6b30cfe956a4a142c8a19f8ef481c652f5355961a942c003e130213031301c02cc030009fcca9cca8ccaac02bc02f009ec024c028006bc023c0270067c00ac0140039c009c0130033009d009c003d003c0035002f00ff010000ad00000010000e00000b6f726967696e2e74657374000b000403000102000a00160014001d0017001e0019001801000101010201030104002300000016000000170000000d002a0028040305030603080708080809080a080b080408050806040105010601030303010302040205020602002b0009080304030303020301002d00020101003300260024001d00209bf7e2fd66b0a4987c544a4f1289f0d435389a6dabcb758ac7a243a58cabd240

write_helpers() {
	cat > "$T/origin.py" <<'PY'
# Test origins. Every byte received is logged before anything is answered:
#   ACCEPT id / DATA id HEX / CLOSE id, one line each, appended to LOG.
# Modes: http (answers by path), relay (forwards to HOST:PORT),
# upstream (answers every request with a fixed reply).
import os, socket, sys, threading, time
mode, addr, port, log, ready = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
extra = sys.argv[6] if len(sys.argv) > 6 else ""
lock = threading.Lock()
ids = [0]

def rec(line):
    with lock:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, (line + "\n").encode())
        os.close(fd)

def read_request(c, cid):
    data = b""
    c.settimeout(2.0)
    try:
        while b"\r\n\r\n" not in data:
            d = c.recv(65536)
            if not d:
                break
            data += d
            rec("DATA %d %s" % (cid, d.hex()))
        head, _, body = data.partition(b"\r\n\r\n")
        cl = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                cl = int(v.strip())
        while len(body) < cl:
            d = c.recv(65536)
            if not d:
                break
            body += d
            rec("DATA %d %s" % (cid, d.hex()))
    except socket.timeout:
        pass
    return data

def hold(c):
    """Keep the connection until the broker lets go (or 30 s)."""
    c.settimeout(30)
    try:
        while c.recv(65536):
            pass
    except OSError:
        pass

def http(c, cid):
    data = read_request(c, cid)
    line = data.split(b"\r\n", 1)[0].decode("latin-1")
    path = line.split(" ")[1] if line.count(" ") >= 2 else "/"
    body = b"hello\n"
    if path == "/silent":
        # Never answer; return when the broker lets go.
        hold(c)
        return
    if path == "/big":
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 20000\r\n\r\n" + b"x" * 20000)
    elif path == "/stream":
        c.sendall(b"HTTP/1.1 200 OK\r\n\r\n")
        for _ in range(30):
            c.sendall(b"y" * 1000)
    elif path == "/dup-cl":
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nContent-Length: 6\r\n\r\nhello\n")
    elif path == "/cl-te":
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
    elif path == "/fold":
        c.sendall(b"HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 6\r\n\r\nhello\n")
    elif path == "/chunked":
        c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nhello\n\r\n0\r\n\r\n")
    elif path == "/chunked-extra":
        c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nhello\n\r\n0\r\n\r\n"
                  b"HTTP/1.1 200 OK\r\n\r\nsmuggled")
    elif path == "/chunked-late":
        # The last chunk and a trailer in later writes, then more bytes,
        # and the connection held open: the broker must end it itself.
        c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nhel")
        time.sleep(0.1)
        c.sendall(b"lo\n\r\n0\r\nX-T")
        time.sleep(0.1)
        c.sendall(b"railer: 1\r\n\r\nsmuggled")
        hold(c)
    elif path == "/chunked-bad":
        c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nhello\n\r\n")
        time.sleep(0.2)
        c.sendall(b"zz\r\n")
    elif path == "/extra":
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhello\nHTTP/1.1 200 OK\r\n\r\nsmuggled")
    elif path == "/redirect":
        c.sendall(b"HTTP/1.1 302 Found\r\nLocation: http://other.test/\r\nContent-Length: 0\r\n\r\n")
    elif path == "/echo":
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(data) + data)
    else:
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)

def relay(c, cid):
    h, p = extra.rsplit(":", 1)
    u = socket.create_connection((h, int(p)))
    def back():
        try:
            while True:
                d = u.recv(65536)
                if not d:
                    break
                c.sendall(d)
        except OSError:
            pass
        try:
            c.shutdown(socket.SHUT_WR)
        except OSError:
            pass
    t = threading.Thread(target=back, daemon=True)
    t.start()
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            rec("DATA %d %s" % (cid, d.hex()))
            u.sendall(d)
    except OSError:
        pass
    try:
        u.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    t.join(5)
    u.close()

def upstream(c, cid):
    read_request(c, cid)
    c.sendall(bytes.fromhex(extra))

def serve(c):
    with lock:
        ids[0] += 1
        cid = ids[0]
    rec("ACCEPT %d" % cid)
    try:
        {"http": http, "relay": relay, "upstream": upstream}[mode](c, cid)
    except OSError:
        pass
    finally:
        rec("CLOSE %d" % cid)
        c.close()

fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
s = socket.socket(fam, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
if fam == socket.AF_INET6:
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
s.bind((addr, port))
s.listen(128)
with open(ready, "w") as f:
    f.write("ready\n")
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
	cat > "$T/client.py" <<'PY'
# Test client speaking to a broker's Unix socket.
#   raw SOCK            stdin as one write; prints "STATUS REASON-HEADER" or "STATUS BODY"
#   tls SOCK HOST:PORT CASE   CONNECT, then a ClientHello shaped by CASE
#   hold SOCK           connect, say "held", keep the connection until killed
import os, socket, struct, subprocess, sys, time
HELLO = bytes.fromhex(os.environ.get("SBX_HELLO_HEX", ""))

def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.settimeout(10)
    return s

def read_all(s):
    out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except (socket.timeout, ConnectionResetError):
        pass
    return out

def summary(resp):
    head, _, body = resp.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    if not lines[0].startswith(b"HTTP/1.1 "):
        return "no HTTP answer: %r" % resp[:60]
    status = lines[0].split(b" ")[1].decode()
    for l in lines[1:]:
        if l.lower().startswith(b"sbx-broker-reason: "):
            return status + " " + l[19:].decode()
    return status + " " + body.decode("latin-1")

def ext(t, data):
    return struct.pack(">HH", t, len(data)) + data

def sni(*names, ntype=0):
    entries = b"".join(struct.pack(">BH", ntype, len(n)) + n.encode() for n in names)
    return ext(0, struct.pack(">H", len(entries)) + entries)

def hello(exts, msgtype=1):
    body = b"\x03\x03" + b"\xaa" * 32 + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00"
    e = b"".join(exts)
    body += struct.pack(">H", len(e)) + e
    msg = bytes([msgtype]) + len(body).to_bytes(3, "big") + body
    return b"\x16\x03\x01" + struct.pack(">H", len(msg)) + msg

def records(hs, size):
    out = b""
    for i in range(0, len(hs), size):
        frag = hs[i:i + size]
        out += b"\x16\x03\x01" + struct.pack(">H", len(frag)) + frag
    return out

def tls_case(case):
    """Returns (bytes, one_byte_writes)."""
    if case == "split":
        return records(HELLO[5:], 1), True
    if case == "whole":
        return HELLO, False
    if case == "mismatch":
        return hello([sni("a.wild.test")]), False
    if case == "nosni":
        return hello([ext(10, b"\x00\x02\x00\x1d")]), False
    if case == "twonames":
        return hello([sni("origin.test", "origin.test")]), False
    if case == "dupext":
        return hello([sni("origin.test"), sni("origin.test")]), False
    if case == "ipsni":
        return hello([sni("198.18.0.2")]), False
    if case == "ech":
        return hello([sni("origin.test"), ext(0xfe0d, b"\x00")]), False
    if case == "esni":
        return hello([sni("origin.test"), ext(0xffce, b"")]), False
    if case == "sslv2":
        return b"\x80\x2e\x01\x03\x01\x00\x15\x00\x00\x00\x10" + b"\x00" * 40, False
    if case == "appdata":
        return b"\x17\x03\x03\x00\x05hello", False
    if case == "serverhello":
        return hello([sni("origin.test")], msgtype=2), False
    if case == "nametype":
        return hello([sni("origin.test", ntype=1)]), False
    if case == "http":
        return b"GET / HTTP/1.1\r\nHost: origin.test\r\n\r\n", False
    if case == "huge":
        return records(b"\x01\x00\xff\xf0" + b"\x00" * 70000, 16000), False
    raise SystemExit("unknown case " + case)

def main():
    cmd, path = sys.argv[1], sys.argv[2]
    if cmd == "raw":
        s = connect(path)
        try:
            s.sendall(sys.stdin.buffer.read())
        except (BrokenPipeError, ConnectionResetError):
            pass
        print(summary(read_all(s)))
    elif cmd == "halfclose":
        # The request, then the end of the client's side at once.
        s = connect(path)
        s.sendall(sys.stdin.buffer.read())
        s.shutdown(socket.SHUT_WR)
        print(summary(read_all(s)))
    elif cmd == "late":
        # The head, then more bytes once the broker is dialling: its
        # connect to ADDR (in network namespace NETNS) is in SYN-SENT.
        s = connect(path)
        s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (sys.argv[3], sys.argv[3])).encode())
        ss = ["ip", "netns", "exec", sys.argv[4], "ss", "-Htn", "state", "syn-sent", "dst", sys.argv[5]]
        for _ in range(1500):
            if subprocess.run(ss, capture_output=True).stdout.strip():
                break
            time.sleep(0.02)
        else:
            raise SystemExit("the broker never dialled " + sys.argv[5])
        s.sendall(b"\x16\x03\x01")
        print(summary(read_all(s)))
    elif cmd == "hold":
        s = connect(path)
        print("held", flush=True)
        time.sleep(60)
    elif cmd == "tls":
        target, case = sys.argv[3], sys.argv[4]
        s = connect(path)
        s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
        resp = b""
        while b"\r\n\r\n" not in resp:
            d = s.recv(1)
            if not d:
                break
            resp += d
        status = resp.split(b" ")[1].decode() if resp.startswith(b"HTTP/1.1 ") else "none"
        if status != "200":
            print(summary(resp + read_all(s)))
            return
        data, bytewise = tls_case(case)
        try:
            if bytewise:
                for i in range(len(data)):
                    s.send(data[i:i + 1])
            else:
                s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        # The first bytes back decide: an alert from the broker, or the
        # server's handshake (which then waits for us: do not wait for EOF).
        out = b""
        try:
            while len(out) < 7:
                d = s.recv(7 - len(out))
                if not d:
                    break
                out += d
                if out[:1] == b"\x16":
                    break
        except (socket.timeout, ConnectionResetError):
            pass
        if len(out) >= 7 and out[0] == 21:
            print("200 alert %d" % out[6])
        elif out[:1] == b"\x16":
            print("200 handshake")
        else:
            print("200 closed %r" % out[:20])

main()
PY
}

setup_file() {
	export T="$BATS_FILE_TMPDIR"
	# The distribution's interpreter: a version-manager shim costs
	# a third of a second on every start.
	PY=$(command -v /usr/bin/python3 || command -v python3)
	export PY
	export NB="sbxbk$$b" NO="sbxbk$$o"
	: > "$T/pids"
	write_helpers
	netns_pair "$NB" "$NO" "vb$$" "vo$$" 198.18.0.1/24 198.18.0.2/24
	ip -n "$NO" addr add 198.18.0.3/24 dev "vo$$"

	cat > "$T/hosts" <<-HOSTS
	198.18.0.2 origin.test
	198.18.0.2 a.wild.test
	198.18.0.2 deep.a.wild.test
	198.18.0.2 wild.test
	198.18.0.2 other.test
	198.18.0.2 www.origin.test
	198.18.0.3 closed.test
	127.0.0.1 loop.test
	198.18.0.1 self.test
	198.18.0.2 mixed.test
	127.0.0.1 mixed.test
	::1 v6loop.test
	::ffff:127.0.0.1 mapped.test
	192.0.2.1 doc.test
	169.254.169.254 meta.test
	198.18.0.77 void.test
	198.18.0.2 moved.test
	168.63.129.16 azure.test
	100.100.100.200 alibaba.test
	fd00:ec2::254 aws6.test
	::ffff:198.18.0.2 mapped-origin.test
	HOSTS
	printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' > "$T/resolv.conf"

	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-subj /CN=origin.test -addext subjectAltName=DNS:origin.test,DNS:a.wild.test \
		-keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null
	ip netns exec "$NO" openssl s_server -quiet -www -accept 127.0.0.1:4433 \
		-cert "$T/cert.pem" -key "$T/key.pem" </dev/null >/dev/null 2>>"$T/s_server.err" 3>&- &
	echo $! >> "$T/pids"
	wait_port "$NO" 127.0.0.1 4433
	start_origin "$NO" http 198.18.0.2 80 origin
	start_origin "$NO" relay 198.18.0.2 443 tls 127.0.0.1:4433
	start_origin "$NB" http 0.0.0.0 80 decoy
	start_origin "$NB" http 0.0.0.0 443 decoy
	start_origin "$NB" http :: 80 decoy6
	# Fake upstream proxies: one refuses CONNECT, one says 200 and more.
	start_origin "$NB" upstream 127.0.0.1 8889 up407 \
		"$(printf 'HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n' | xxd -p | tr -d '\n')"
	start_origin "$NB" upstream 127.0.0.1 8890 upextra \
		"$(printf 'HTTP/1.1 200 OK\r\n\r\nHTTP/1.1 200 OK\r\n\r\n' | xxd -p | tr -d '\n')"
	cat > "$T/tinyproxy.conf" <<-CONF
	Port 8888
	Listen 127.0.0.1
	Timeout 30
	MaxClients 50
	Allow 127.0.0.1
	LogLevel Critical
	CONF
	ip netns exec "$NB" tinyproxy -d -c "$T/tinyproxy.conf" </dev/null >/dev/null 2>&1 3>&- &
	echo $! >> "$T/pids"
	wait_port "$NB" 127.0.0.1 8888

	local hosts="--allow-host origin.test --allow-host *.wild.test --allow-host loop.test
		--allow-host self.test --allow-host mixed.test --allow-host v6loop.test
		--allow-host mapped.test --allow-host doc.test --allow-host closed.test --allow-host meta.test
		--allow-host moved.test --allow-host azure.test --allow-host alibaba.test --allow-host aws6.test"
	# shellcheck disable=SC2086
	start_broker main 31281 $hosts --allow-private-networks
	# shellcheck disable=SC2086
	start_broker strict 31282 $hosts
	start_broker small 31283 --allow-host origin.test --allow-host void.test --allow-private-networks \
		--max-request-bytes 4K --max-response-bytes 4K --max-wall-time 1
	start_broker proxy 31284 --mode proxy --upstream http://127.0.0.1:8888 \
		--allow-host origin.test --allow-private-networks
	start_broker proxyopen 31285 --mode proxy --upstream http://127.0.0.1:8888
	start_broker up407 - --mode proxy --upstream http://127.0.0.1:8889 --allow-private-networks
	start_broker upextra - --mode proxy --upstream http://127.0.0.1:8890 --allow-private-networks
	start_broker cap - --allow-host origin.test --allow-private-networks --max-connections 1
	# Its CLOCK_MONOTONIC is the second $T/clock.now says (see
	# tests/progs/clock-set.c): a test moves it instead of sleeping.
	echo 0 > "$T/clock.now"
	BROKER_WRAP="$SBX_TESTBIN/clock-set $T/clock.now" start_broker clock - --allow-host moved.test --allow-private-networks
	start_broker ports 31286 --allow-host origin.test --allow-private-networks --allow-port 8080
	start_broker deny 31287 --allow-host origin.test --allow-host mapped-origin.test --allow-host aws6.test \
		--allow-private-networks --deny-address 198.18.0.2/32 --deny-address fd00::/8
	# Names only the broker's pins know (the hosts file does not).
	printf '# a mirror\n198.18.0.2 mirror.test  git.test # both\n127.0.0.1 lo.pin.test\n' > "$T/pins"
	start_broker pinned 31288 --allow-host mirror.test --allow-host git.test --allow-host '*.pin.test' \
		--resolve-file "$T/pins" --resolve self.pin.test=198.18.0.1 --resolve meta.pin.test=168.63.129.16 \
		--allow-private-networks
	start_broker pinstrict 31289 --allow-host mirror.test --resolve mirror.test=198.18.0.2
}

teardown_file() {
	local p
	for ns in "$NB" "$NO"; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || :; done
	done
	while read -r p; do kill -9 "$p" 2>/dev/null || :; done < "$T/pids"
	ip netns del "$NB" 2>/dev/null || :
	ip netns del "$NO" 2>/dev/null || :
}

setup() {
	settle
	for f in origin tls decoy decoy6 up407 upextra; do echo MARK >> "$T/$f.log"; done
}

# Wait until every connection an origin accepted has closed, so that a
# late byte from one test can never be counted against the next.
settle() {
	wait_for "awk '\$1 == \"ACCEPT\" { n++ } \$1 == \"CLOSE\" { n-- } END { exit n != 0 }' \"\$T\"/*.log" || :
}

wait_port() {
	wait_for "ip netns exec $1 \"\$PY\" -c 'import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 0.5).close()' $2 $3 2>/dev/null"
}

# Readiness arrives on a fifo opened read-write here, so that neither side
# blocks in open(2) and a server that dies before it is ready times out.
start_origin() {
	local ready="$T/ready.$4.$5" fd rc=0
	mkfifo "$ready"
	exec {fd}<>"$ready"
	ip netns exec "$1" "$PY" "$T/origin.py" "$2" "$3" "$4" "$T/$5.log" "$ready" "${6:-}" \
		</dev/null >>"$T/origins.err" 2>&1 3>&- &
	echo $! >> "$T/pids"
	read -r -t 10 -u "$fd" _ || rc=$?
	exec {fd}<&-
	: >> "$T/$5.log"
	return "$rc"
}

# start_broker NAME TCP-PORT|- ARGS...: the broker on $T/NAME.sock, its
# log in $T/NAME.log, and a TCP forwarder on 127.0.0.1:PORT in "b" for
# clients that cannot speak to a Unix socket. $BROKER_WRAP, when set, is
# the program the broker runs under.
start_broker() {
	local name=$1 port=$2 fd rc=0
	shift 2
	mkfifo "$T/$name.ready"
	exec {fd}<>"$T/$name.ready"
	ip netns exec "$NB" unshare -m --propagation private sh -c \
		'mount --bind "$0/hosts" /etc/hosts && mount --bind "$0/resolv.conf" /etc/resolv.conf && exec "$@"' \
		"$T" ${BROKER_WRAP:-} "$SBX_BIN/sbx-broker" --listen "$T/$name.sock" --ready-fd 3 --log-fd 4 "$@" \
		3>"$T/$name.ready" 4>>"$T/$name.log" </dev/null 2>>"$T/$name.err" &
	echo $! >> "$T/pids"
	echo $! > "$T/$name.pid"
	read -r -t 10 -u "$fd" _ || rc=$?
	exec {fd}<&-
	[ "$rc" = 0 ] || return "$rc"
	[ "$port" = - ] && return 0
	ip netns exec "$NB" socat "TCP-LISTEN:$port,bind=127.0.0.1,fork,reuseaddr" "UNIX-CONNECT:$T/$name.sock" \
		</dev/null >/dev/null 2>&1 3>&- &
	echo $! >> "$T/pids"
	wait_port "$NB" 127.0.0.1 "$port"
}

nsb() { ip netns exec "$NB" "$@"; }

# Lines an origin logged since this test began.
since_mark() { awk '/^MARK$/ { buf = ""; next } { buf = buf $0 "\n" } END { printf "%s", buf }' "$T/$1.log"; }
# The bytes an origin received since this test began.
received() { since_mark "$1" | awk '$1 == "DATA" { printf "%s", $3 }' | xxd -r -p; }

# Nothing reached any origin or decoy: not a connection, not a byte.
assert_untouched() {
	local f got=
	for f in origin tls decoy decoy6 up407 upextra; do
		got+=$(since_mark "$f" | sed "s/^/$f: /")
	done
	assert_equal "$got" ""
}

# A connection may have been opened, but not one byte was delivered.
assert_no_bytes() {
	local f got=
	for f in origin tls decoy decoy6; do
		got+=$(since_mark "$f" | awk -v f="$f" '$1 == "DATA" { print f ": " $0 }')
	done
	assert_equal "$got" ""
}

# raw BROKER PRINTF-FORMAT: send exactly those bytes, print the answer.
raw() {
	printf "$2" | "$PY" "$T/client.py" raw "$T/$1.sock"
}

# The same, every byte shown (CR included).
raw_repr() { raw "$@" | "$PY" -c 'import sys; print(sys.stdin.buffer.read())'; }

# refused BROKER "STATUS REASON" PRINTF-FORMAT
refused() {
	run -0 raw "$1" "$3"
	assert_output "$2"
	assert_untouched
}

# The reason field of the last connection a broker logged.
last_log() {
	"$PY" -c 'import json,sys
lines=[json.loads(l) for l in open(sys.argv[1]) if "\"connection\"" in l]
l=lines[-1]
print(" ".join(str(l[k]) for k in sys.argv[2:]))' "$T/$1.log" "${@:2}"
}

tls() {
	SBX_HELLO_HEX=$HELLO_HEX "$PY" "$T/client.py" tls "$T/$1.sock" "$2" "$3"
}

# --- allowed traffic, real clients ---

@test "curl fetches an allowed name over plain HTTP through the broker" {
	run -0 nsb curl -sS -m 10 -x http://127.0.0.1:31281 http://origin.test/hello
	assert_output "hello"
	run -0 received origin
	assert_output --partial $'GET /hello HTTP/1.1\r\nHost: origin.test\r\n'
	assert_output --partial $'Connection: close\r\n'
	refute_output --partial "Proxy-Connection"
	refute_output --partial "http://origin.test"
	run -0 last_log main method host port address decision status reason
	assert_output "GET origin.test 80 198.18.0.2 allowed 200 None"
}

@test "curl fetches an allowed name over HTTPS through CONNECT, certificate verified" {
	run -0 nsb curl -sS -m 10 -o /dev/null -w '%{http_code} %{ssl_verify_result}' --cacert "$T/cert.pem" \
		-x http://127.0.0.1:31281 https://origin.test/
	assert_output "200 0"
	run -0 last_log main method host port address decision status
	assert_output "CONNECT origin.test 443 198.18.0.2 allowed 200"
}

@test "wget fetches over plain HTTP and HTTPS through the broker" {
	run -0 nsb env http_proxy=http://127.0.0.1:31281 https_proxy=http://127.0.0.1:31281 \
		wget -q -O - http://origin.test/hello
	assert_output "hello"
	run -0 nsb env https_proxy=http://127.0.0.1:31281 \
		wget -q -O /dev/null --ca-certificate="$T/cert.pem" https://origin.test/
}

@test "python urllib fetches over plain HTTP and HTTPS through the broker" {
	run -0 nsb "$PY" -c '
import ssl, sys, urllib.request
p = urllib.request.ProxyHandler({"http": "http://127.0.0.1:31281", "https": "http://127.0.0.1:31281"})
ctx = ssl.create_default_context(cafile=sys.argv[1])
o = urllib.request.build_opener(p, urllib.request.HTTPSHandler(context=ctx))
print(o.open("http://origin.test/hello", timeout=10).read().decode().strip())
print(o.open("https://origin.test/", timeout=10).status)' "$T/cert.pem"
	assert_output $'hello\n200'
}

@test "openssl s_client completes a handshake with the matching server name" {
	run -0 nsb sh -c 'echo Q | openssl s_client -proxy 127.0.0.1:31281 -connect origin.test:443 \
		-servername origin.test -CAfile "$1" -verify_return_error 2>&1' sh "$T/cert.pem"
	assert_output --partial "Verify return code: 0 (ok)"
}

@test "a subdomain matches a wildcard entry, at any depth" {
	run -0 nsb curl -sS -m 10 -x http://127.0.0.1:31281 http://a.wild.test/hello
	assert_output "hello"
	run -0 nsb curl -sS -m 10 -x http://127.0.0.1:31281 http://deep.a.wild.test/hello
	assert_output "hello"
}

@test "a POST body is forwarded exactly, framed by its Content-Length" {
	run -0 nsb curl -sS -m 10 -x http://127.0.0.1:31281 --data-binary 'a=1&b=2' http://origin.test/echo
	assert_output --partial $'Content-Length: 7\r\n'
	assert_output --partial $'\r\n\r\na=1&b=2'
}

@test "a large upload with Expect: 100-continue is forwarded" {
	head -c 300000 /dev/zero | tr '\0' z > "$T/upload"
	run -0 nsb curl -sS -m 10 -o /dev/null -w '%{http_code}' -H 'Expect: 100-continue' \
		-x http://127.0.0.1:31281 --data-binary @"$T/upload" http://origin.test/hello
	assert_output "200"
	[ "$(since_mark origin | awk '$1 == "DATA" { printf "%s", $3 }' | xxd -r -p | tr -cd z | wc -c)" = 300000 ]
}

@test "a request of 99 fields written without spaces is rebuilt whole" {
	run -0 raw main "GET http://origin.test/echo HTTP/1.1\\r\\nHost:origin.test\\r\\n$(printf 'X-%d:1\\r\\n' $(seq 98))\\r\\n"
	assert_output --partial "200 GET /echo HTTP/1.1"
	assert_output --partial $'X-98: 1\r\nConnection: close\r\n'
}

# The broker's first read takes 2 KiB: a head past it, or a body past it
# after a whole head, makes the buffer move under what was parsed.
@test "a head longer than the first read is forwarded whole, its body too" {
	local pad
	pad=$(printf '%0100d' 0)
	run -0 raw main "POST http://origin.test/hello HTTP/1.1\\r\\nHost: origin.test\\r\\n$(printf "X-Pad-%d: $pad\\\\r\\\\n" $(seq 30))Content-Length: 5\\r\\n\\r\\nyyyyy"
	assert_output --partial "200"
	[ "$(received origin | grep -c $'^X-Pad-[0-9]*: 0\\{100\\}\r$')" = 30 ]
	[ "$(received origin | tr -cd y | wc -c)" = 5 ]
}
@test "a short head with a body past the first read is forwarded whole" {
	run -0 raw main "POST http://origin.test/hello HTTP/1.1\\r\\nHost: origin.test\\r\\nContent-Length: 5000\\r\\n\\r\\n$(head -c 5000 /dev/zero | tr '\0' y)"
	assert_output --partial "200"
	[ "$(received origin | tr -cd y | wc -c)" = 5000 ]
	[ "$(received origin | head -c 89)" = "$(printf 'POST /hello HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 5000\r\nConnection: close\r\n\r\nyyyyy')" ]
}

@test "a chunked response passes until the origin closes" {
	run -0 nsb curl -sS -m 10 -x http://127.0.0.1:31281 http://origin.test/chunked
	assert_output "hello"
}

@test "bytes an origin sends past its Content-Length never reach the client" {
	run -0 nsb curl -sS -m 10 -x http://127.0.0.1:31281 http://origin.test/extra
	assert_output "hello"
}

@test "a client that ends its side right after the request still gets the whole answer" {
	run -0 "$PY" "$T/client.py" halfclose "$T/main.sock" \
		< <(printf 'GET http://origin.test/big HTTP/1.1\r\nHost: origin.test\r\n\r\n')
	assert_output --regexp '^200 '
	run -0 last_log main decision status bytes_down
	assert_output "allowed 200 20042"
}

@test "a redirect is not followed: the next name passes its own check" {
	run -0 nsb curl -sS -m 10 -o /dev/null -w '%{http_code} %{redirect_url}' -x http://127.0.0.1:31281 \
		http://origin.test/redirect
	assert_output "302 http://other.test/"
	run -0 nsb curl -sS -m 10 -L -o /dev/null -w '%{http_code}' -x http://127.0.0.1:31281 \
		http://origin.test/redirect
	assert_output "403"
	run -0 last_log main host decision status reason
	assert_output "other.test refused 403 host other.test not on the allowlist (--allow-host)"
}

@test "a ClientHello cut into 1-byte records and 1-byte writes passes unchanged" {
	run -0 tls main origin.test:443 split
	assert_output "200 handshake"
	got=$(received tls | xxd -p | tr -d '\n')
	expected=$(python3 -c 'import sys
h = bytes.fromhex(sys.argv[1])[5:]
print(b"".join(b"\x16\x03\x01\x00\x01" + h[i:i+1] for i in range(len(h))).hex())' "$HELLO_HEX")
	assert_equal "$got" "$expected"
}

@test "--allow-port replaces the default ports" {
	refused ports "403 port 80 not allowed (--allow-port)" 'GET http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\n\r\n'
	run -0 raw ports 'GET http://origin.test:8080/ HTTP/1.1\r\nHost: origin.test:8080\r\n\r\n'
	assert_output "502 unable to connect to 198.18.0.2: Connection refused"
}

# --- destinations refused by policy ---

@test "a name not on the allowlist is refused" {
	run -0 nsb curl -sS -m 10 -o /dev/null -w '%{http_code}' -x http://127.0.0.1:31281 http://other.test/
	assert_output "403"
	run nsb curl -sS -m 10 -x http://127.0.0.1:31281 https://other.test/
	assert_failure 56
	assert_untouched
	refused main "403 host other.test not on the allowlist (--allow-host)" 'CONNECT other.test:443 HTTP/1.1\r\n\r\n'
}

# A client's host name is untrusted: one with terminal escapes (an OSC
# title, a clear screen, an 8-bit CSI) is refused before it is used, and
# nothing of it reaches the answer, the log or stderr raw.
@test "a host name with terminal escapes is refused and never written raw to the log, stderr or the answer" {
	run -0 raw main 'CONNECT a\033]0;x\007\033[2J\302\233.test:443 HTTP/1.1\r\n\r\n'
	assert_output "400 invalid character in the request target"
	run -0 last_log main host decision reason
	assert_output "None refused invalid character in the request target"
	run -0 raw main 'GET http://origin.test/ HTTP/1.1\r\nHost: a\033[2J\302\233.test\r\n\r\n'
	assert_output "400 control character in a header value"
	run -0 last_log main host decision reason
	assert_output "None refused control character in a header value"
	assert_untouched
	run -1 grep -c $'[\x1b\x07]\|\xc2\x9b' "$T/main.log" "$T/main.err"
}

@test "an exact entry does not cover its subdomains" {
	refused main "403 host www.origin.test not on the allowlist (--allow-host)" 'CONNECT www.origin.test:443 HTTP/1.1\r\n\r\n'
}

@test "a wildcard entry does not cover the name itself" {
	refused main "403 host wild.test not on the allowlist (--allow-host)" 'CONNECT wild.test:443 HTTP/1.1\r\n\r\n'
}

@test "a port outside 80 and 443 is refused" {
	refused main "403 port 8443 not allowed (--allow-port)" 'CONNECT origin.test:8443 HTTP/1.1\r\n\r\n'
}

@test "IP literal destinations are refused" {
	refused main "403 IP literals not allowed" 'CONNECT 198.18.0.2:443 HTTP/1.1\r\n\r\n'
	refused main "403 IP literals not allowed" 'CONNECT [::1]:443 HTTP/1.1\r\n\r\n'
	refused main "403 IP literals not allowed" 'GET http://2130706433/ HTTP/1.1\r\nHost: 2130706433\r\n\r\n'
}

@test "a name mapped to 127.0.0.1 is refused even with --allow-private-networks" {
	refused main "403 address 127.0.0.1 refused: loopback (127.0.0.0/8); no option opens it" 'CONNECT loop.test:443 HTTP/1.1\r\n\r\n'
	refused main "403 address 127.0.0.1 refused: loopback (127.0.0.0/8); no option opens it" \
		'GET http://loop.test/ HTTP/1.1\r\nHost: loop.test\r\n\r\n'
}

@test "a name mapped to the host's own address is refused even with --allow-private-networks" {
	refused main "403 address 198.18.0.1 refused: an address of this host; only --allow-address 198.18.0.1/32 opens it" 'GET http://self.test/ HTTP/1.1\r\nHost: self.test\r\n\r\n'
	refused main "403 address 198.18.0.1 refused: an address of this host; only --allow-address 198.18.0.1/32 opens it" 'CONNECT self.test:443 HTTP/1.1\r\n\r\n'
}

@test "a name mapped to ::1 or ::ffff:127.0.0.1 is refused" {
	refused main "403 address ::1 refused: loopback (::1); no option opens it" 'CONNECT v6loop.test:443 HTTP/1.1\r\n\r\n'
	refused main "403 address ::ffff:127.0.0.1 refused: loopback (127.0.0.0/8); no option opens it" 'CONNECT mapped.test:443 HTTP/1.1\r\n\r\n'
}

@test "a name whose answers mix allowed and refused addresses is refused whole" {
	refused main "403 address 127.0.0.1 refused: loopback (127.0.0.0/8); no option opens it" 'CONNECT mixed.test:443 HTTP/1.1\r\n\r\n'
}

@test "a checked answer serves the rest of its second and no later: a name moved to loopback is refused from the next" {
	local get='GET http://moved.test/hello HTTP/1.1\r\nHost: moved.test\r\n\r\n'
	echo 7 > "$T/clock.now"
	run -0 raw clock "$get"
	assert_output --partial "200"
	# In place: the brokers see this file through a bind mount of its inode.
	sed 's/^198\.18\.0\.2 moved\.test$/127.0.0.1 moved.test/' "$T/hosts" > "$T/hosts.new"
	cat "$T/hosts.new" > "$T/hosts"
	# The same second: the answer checked in it is used again.
	setup
	run -0 raw clock "$get"
	assert_output --partial "200"
	[ "$(since_mark origin | grep -c '^ACCEPT')" = 1 ]
	# The next second: the name is resolved and checked again.
	echo 8 > "$T/clock.now"
	setup
	refused clock "403 address 127.0.0.1 refused: loopback (127.0.0.0/8); no option opens it" "$get"
}

@test "documentation and link-local addresses stay refused with --allow-private-networks" {
	refused main "403 address 192.0.2.1 refused: documentation (192.0.2.0/24); --allow-address 192.0.2.0/24 opens it" 'CONNECT doc.test:443 HTTP/1.1\r\n\r\n'
	refused main "403 address 169.254.169.254 refused: cloud metadata (169.254.169.254); only --allow-address 169.254.169.254/32 opens it" 'CONNECT meta.test:80 HTTP/1.1\r\n\r\n'
}

@test "198.18.0.0/15 is refused without --allow-private-networks" {
	run -0 nsb curl -sS -m 10 -o /dev/null -w '%{http_code}' -x http://127.0.0.1:31282 http://origin.test/hello
	assert_output "403"
	refused strict "403 address 198.18.0.2 refused: benchmarking or fake-IP DNS (198.18.0.0/15); --allow-address 198.18.0.0/15 or --allow-private-networks opens it" \
		'CONNECT origin.test:443 HTTP/1.1\r\n\r\n'
	run -0 last_log strict host address decision status
	assert_output "origin.test 198.18.0.2 refused 403"
}

@test "cloud metadata addresses are refused even when globally routable or opened by --allow-private-networks" {
	refused main "403 address 168.63.129.16 refused: cloud metadata: Azure wire server (168.63.129.16); only --allow-address 168.63.129.16/32 opens it" \
		'CONNECT azure.test:443 HTTP/1.1\r\n\r\n'
	refused strict "403 address 168.63.129.16 refused: cloud metadata: Azure wire server (168.63.129.16); only --allow-address 168.63.129.16/32 opens it" \
		'GET http://azure.test/ HTTP/1.1\r\nHost: azure.test\r\n\r\n'
	refused main "403 address 100.100.100.200 refused: cloud metadata: Alibaba Cloud (100.100.100.200); only --allow-address 100.100.100.200/32 opens it" \
		'CONNECT alibaba.test:443 HTTP/1.1\r\n\r\n'
	refused main "403 address fd00:ec2::254 refused: cloud metadata: AWS (fd00:ec2::254); only --allow-address fd00:ec2::254/128 opens it" \
		'CONNECT aws6.test:443 HTTP/1.1\r\n\r\n'
	run -0 nsb curl -sS -m 10 -o /dev/null -w '%{http_code}' -x http://127.0.0.1:31281 http://azure.test/
	assert_output "403"
	assert_untouched
}

@test "--deny-address refuses a range --allow-private-networks opened, in every form of the address" {
	run -0 nsb curl -sS -m 10 -x http://127.0.0.1:31287 http://origin.test/ 2>&1
	assert_output "sbx-broker: address 198.18.0.2 refused: denied by --deny-address 198.18.0.2/32"
	run nsb curl -sS -m 10 --cacert "$T/cert.pem" -x http://127.0.0.1:31287 https://origin.test/ 2>&1
	assert_output "curl: (56) CONNECT tunnel failed, response 403"
	refused deny "403 address ::ffff:198.18.0.2 refused: denied by --deny-address 198.18.0.2/32" \
		'CONNECT mapped-origin.test:443 HTTP/1.1\r\n\r\n'
	refused deny "403 address fd00:ec2::254 refused: denied by --deny-address fd00::/8" \
		'CONNECT aws6.test:443 HTTP/1.1\r\n\r\n'
	assert_untouched
}

@test "--resolve and --resolve-file pin names no resolver knows, and curl, wget and python reach them" {
	run -2 nsb getent hosts mirror.test
	run -0 nsb curl -sS -m 10 -x http://127.0.0.1:31288 http://mirror.test/hello
	assert_output "hello"
	run -0 nsb env http_proxy=http://127.0.0.1:31288 wget -q -O - http://git.test/hello
	assert_output "hello"
	run -0 nsb "$PY" -c '
import urllib.request
o = urllib.request.build_opener(urllib.request.ProxyHandler({"http": "http://127.0.0.1:31288"}))
print(o.open("http://mirror.test/hello", timeout=10).read().decode().strip())'
	assert_output "hello"
	run -0 last_log pinned host address decision status
	assert_output "mirror.test 198.18.0.2 allowed 200"
}

@test "pinned answers meet the same address checks: private ranges, loopback, metadata, own addresses" {
	run -0 nsb curl -sS -m 10 -x http://127.0.0.1:31289 http://mirror.test/hello
	assert_output "sbx-broker: address 198.18.0.2 refused: benchmarking or fake-IP DNS (198.18.0.0/15); --allow-address 198.18.0.0/15 or --allow-private-networks opens it"
	refused pinned "403 address 127.0.0.1 refused: loopback (127.0.0.0/8); no option opens it" 'CONNECT lo.pin.test:443 HTTP/1.1\r\n\r\n'
	refused pinned "403 address 198.18.0.1 refused: an address of this host; only --allow-address 198.18.0.1/32 opens it" 'CONNECT self.pin.test:443 HTTP/1.1\r\n\r\n'
	refused pinned "403 address 168.63.129.16 refused: cloud metadata: Azure wire server (168.63.129.16); only --allow-address 168.63.129.16/32 opens it" \
		'CONNECT meta.pin.test:443 HTTP/1.1\r\n\r\n'
	assert_untouched
}

@test "an allowed name that does not resolve is a 502" {
	refused main "502 nx.wild.test: name did not resolve" 'CONNECT nx.wild.test:443 HTTP/1.1\r\n\r\n'
}

@test "an origin that refuses the connection is a 502 and nothing else is tried" {
	refused main "502 unable to connect to 198.18.0.3: Connection refused" 'CONNECT closed.test:443 HTTP/1.1\r\n\r\n'
}

# --- TLS: the ClientHello must name the CONNECT host ---

@test "openssl s_client with a server name other than the CONNECT host is refused" {
	run nsb sh -c 'echo Q | openssl s_client -proxy 127.0.0.1:31281 -connect origin.test:443 -servername a.wild.test 2>&1'
	assert_output --partial "unrecognized name"
	assert_no_bytes
	run -0 last_log main host decision status reason
	assert_output "origin.test refused 200 server name a.wild.test does not match CONNECT host origin.test"
}

@test "openssl s_client without a server name is refused" {
	run nsb sh -c 'echo Q | openssl s_client -proxy 127.0.0.1:31281 -connect origin.test:443 -noservername 2>&1'
	assert_output --partial "unrecognized name"
	assert_no_bytes
	run -0 last_log main reason
	assert_output "no server_name in the ClientHello"
}

@test "curl to an IP literal through CONNECT is refused before any byte flows" {
	run nsb curl -sS -m 10 -k -x http://127.0.0.1:31281 https://198.18.0.2/
	assert_failure 56
	assert_untouched
}

tls_refused() { # CASE "OUTPUT" "REASON"
	run -0 tls main origin.test:443 "$1"
	assert_output "$2"
	assert_no_bytes
	run -0 last_log main decision reason
	assert_output "refused $3"
}

@test "a ClientHello naming another host is refused" {
	tls_refused mismatch "200 alert 112" "server name a.wild.test does not match CONNECT host origin.test"
}
@test "a ClientHello without server_name is refused" {
	tls_refused nosni "200 alert 112" "no server_name in the ClientHello"
}
@test "a ClientHello with two names is refused" {
	tls_refused twonames "200 alert 112" "more than one server name"
}
@test "a ClientHello with a duplicate extension is refused" {
	tls_refused dupext "200 alert 50" "duplicate ClientHello extension"
}
@test "a ClientHello naming an IP literal is refused" {
	tls_refused ipsni "200 alert 112" "server name is an IP literal"
}
@test "a ClientHello with encrypted_client_hello is refused" {
	tls_refused ech "200 alert 49" "encrypted ClientHello not supported"
}
@test "a ClientHello with the old ESNI extension is refused" {
	tls_refused esni "200 alert 49" "encrypted server name (ESNI) not supported"
}
@test "an SSLv2-compatible ClientHello is refused" {
	tls_refused sslv2 "200 alert 50" "SSLv2-compatible ClientHello not supported"
}
@test "an application data record before the ClientHello is refused" {
	tls_refused appdata "200 alert 50" "not a TLS handshake record"
}
@test "a handshake message other than ClientHello is refused" {
	tls_refused serverhello "200 alert 50" "first handshake message is not a ClientHello"
}
@test "a server_name of a type other than host_name is refused" {
	tls_refused nametype "200 alert 112" "server_name is not a host_name"
}
@test "plain HTTP inside a CONNECT tunnel is refused" {
	tls_refused http "200 alert 50" "not a TLS handshake record"
}
@test "a ClientHello over 64 KiB is refused" {
	tls_refused huge "200 alert 50" "ClientHello larger than 64 KiB"
}

# --- plain HTTP: one strictly framed request ---

R='GET http://origin.test/ HTTP/1.1\r\n'
H='Host: origin.test\r\n'

@test "obs-fold in a request is refused" { refused main "400 obsolete line folding" "$R$H"'X-A: a\r\n b\r\n\r\n'; }
@test "a bare LF in a request is refused" { refused main "400 bare LF in the head" "$R"'Host: origin.test\n\r\n'; }
@test "a bare CR in a request is refused" { refused main "400 bare CR in the head" "$R"'Host: origin.test\rX: 1\r\n\r\n'; }
@test "whitespace before a colon is refused" { refused main "400 whitespace before a colon" "$R"'Host : origin.test\r\n\r\n'; }
@test "a non-token header name is refused" { refused main "400 invalid character in a header name" "$R$H"'X{}: 1\r\n\r\n'; }
@test "a control character in a header value is refused" { refused main "400 control character in a header value" "$R$H"'X: a\001b\r\n\r\n'; }
@test "a NUL in a header value is refused" { refused main "400 control character in a header value" "$R$H"'X: a\000b\r\n\r\n'; }
@test "Transfer-Encoding: chunked on a request is refused" {
	refused main "400 Transfer-Encoding on a request" 'POST http://origin.test/ HTTP/1.1\r\n'"$H"'Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n'
}
@test "any Transfer-Encoding on a request is refused" { refused main "400 Transfer-Encoding on a request" "$R$H"'Transfer-Encoding: identity\r\n\r\n'; }
@test "a repeated Content-Length is refused even with equal values" {
	refused main "400 Content-Length repeated" 'POST http://origin.test/ HTTP/1.1\r\n'"$H"'Content-Length: 1\r\nContent-Length: 1\r\n\r\nx'
}
@test "a Content-Length list is refused" { refused main "400 invalid Content-Length" "$R$H"'Content-Length: 1, 1\r\n\r\nx'; }
@test "a negative Content-Length is refused" { refused main "400 invalid Content-Length" "$R$H"'Content-Length: -1\r\n\r\n'; }
@test "a Content-Length with a sign is refused" { refused main "400 invalid Content-Length" "$R$H"'Content-Length: +1\r\n\r\nx'; }
@test "an overflowing Content-Length is refused" { refused main "400 invalid Content-Length" "$R$H"'Content-Length: 184467440737095516160\r\n\r\n'; }
@test "a missing Host is refused" { refused main "400 Host missing" "$R"'\r\n'; }
@test "a repeated Host is refused" { refused main "400 Host repeated" "$R$H$H"'\r\n'; }
@test "a Host other than the target's is refused" { refused main "400 Host does not match the request target" "$R"'Host: other.test\r\n\r\n'; }
@test "a Host with another port is refused" { refused main "400 Host does not match the request target" "$R"'Host: origin.test:8080\r\n\r\n'; }
@test "Upgrade is refused" { refused main "400 Upgrade not supported" "$R$H"'Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n'; }
@test "Connection: upgrade is refused" { refused main "400 Connection: upgrade not supported" "$R$H"'Connection: keep-alive, upgrade\r\n\r\n'; }
@test "an h2c upgrade is refused" { refused main "400 h2c not supported" "$R$H"'HTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n'; }
@test "the HTTP/2 preface is refused" { refused main "400 HTTP/2 is not supported" 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'; }
@test "an HTTP/0.9 request is refused" { refused main "400 HTTP/0.9 or malformed request line" 'GET http://origin.test/\r\n\r\n'; }
@test "a request line without an HTTP version is refused at once, before the head ends" {
	# The connection stays open: the answer cannot wait for the wall time.
	run -0 "$PY" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(10)
s.sendall(b"GET http://origin.test/\r\n")
print(s.recv(200).split(b"\r\n")[1].decode())' "$T/main.sock"
	assert_output "Sbx-Broker-Reason: HTTP/0.9 or malformed request line"
	assert_untouched
	refused main "400 unsupported HTTP version" 'GET http://origin.test/ HTTP/1.3\r\nHost: origin.test\r\n'
}
@test "an unknown HTTP version is refused" { refused main "400 unsupported HTTP version" 'GET http://origin.test/ HTTP/1.2\r\n'"$H"'\r\n'; }
@test "bytes after the framed body are refused" {
	refused main "400 bytes after the request" 'POST http://origin.test/ HTTP/1.1\r\n'"$H"'Content-Length: 5\r\n\r\nhelloGET http://origin.test/ HTTP/1.1\r\n'"$H"'\r\n'
}
@test "a second request on the same connection is refused" { refused main "400 bytes after the request" "$R$H"'\r\n'"$R$H"'\r\n'; }
@test "an origin-form target is refused" { refused main "400 absolute-form http:// target required" 'GET / HTTP/1.1\r\n'"$H"'\r\n'; }
@test "an https:// target without CONNECT is refused" { refused main "400 https:// needs CONNECT: send it with CONNECT (curl's default, GNU wget's) or run the sandbox with sbx-ns --net broker:PATH,transparent" 'GET https://origin.test/ HTTP/1.1\r\n'"$H"'\r\n'; }
@test "user information in the target is refused" { refused main "400 user information not allowed" 'GET http://u:p@origin.test/ HTTP/1.1\r\n'"$H"'\r\n'; }
@test "TRACE is refused" { refused main "405 method not supported" 'TRACE http://origin.test/ HTTP/1.1\r\n'"$H"'\r\n'; }
@test "a lower-case method is refused" { refused main "405 method not supported" 'get http://origin.test/ HTTP/1.1\r\n'"$H"'\r\n'; }
@test "two spaces in the request line are refused" { refused main "400 malformed request line" 'GET  http://origin.test/ HTTP/1.1\r\n'"$H"'\r\n'; }
@test "an empty line before the request is refused" { refused main "400 empty request line" '\r\n'"$R$H"'\r\n'; }
@test "TLS sent without CONNECT is refused" { refused main "400 TLS sent without CONNECT" '\026\003\001\000\005hello'; }
@test "a non-ASCII name is refused" { refused main "400 invalid character in the request target" 'GET http://b\303\274cher.test/ HTTP/1.1\r\n'"$H"'\r\n'; }
@test "a label over 63 bytes is refused" {
	refused main "400 label longer than 63 bytes" "CONNECT $(printf 'a%.0s' $(seq 64)).wild.test:443 HTTP/1.1\\r\\n\\r\\n"
}
@test "a name with an empty label is refused" { refused main "400 empty label" 'CONNECT a..wild.test:443 HTTP/1.1\r\n\r\n'; }
@test "a fragment in the target is refused" { refused main "400 fragment in the request target" 'GET http://origin.test/#x HTTP/1.1\r\n'"$H"'\r\n'; }
@test "CONNECT without a port is refused" { refused main "400 port missing" 'CONNECT origin.test HTTP/1.1\r\n\r\n'; }
@test "CONNECT to port 0 is refused" { refused main "400 invalid port" 'CONNECT origin.test:0 HTTP/1.1\r\n\r\n'; }
@test "CONNECT with a body is refused" { refused main "400 CONNECT with a body" 'CONNECT origin.test:443 HTTP/1.1\r\nContent-Length: 4\r\n\r\nabcd'; }
@test "an unsupported Expect is refused" { refused main "400 unsupported Expect" "$R$H"'Expect: 200-ok\r\n\r\n'; }
@test "a head over 32 KiB is refused with 431" {
	refused main "431 head too large" "$R$H$(printf 'X-Pad: %01000d\\r\\n' $(seq 40))"'\r\n'
}
@test "more than 100 header fields are refused with 431" {
	refused main "431 too many header fields" "$R$H$(printf 'X-%d: 1\\r\\n' $(seq 101))"'\r\n'
}

# --- origin responses ---

@test "a response with a repeated Content-Length is a 502" {
	run -0 raw main 'GET http://origin.test/dup-cl HTTP/1.1\r\nHost: origin.test\r\n\r\n'
	assert_output "502 Content-Length repeated"
}
@test "a response with Content-Length and Transfer-Encoding is a 502" {
	run -0 raw main 'GET http://origin.test/cl-te HTTP/1.1\r\nHost: origin.test\r\n\r\n'
	assert_output "502 Content-Length with Transfer-Encoding from the origin"
}
@test "a response with obs-fold is a 502" {
	run -0 raw main 'GET http://origin.test/fold HTTP/1.1\r\nHost: origin.test\r\n\r\n'
	assert_output "502 obsolete line folding"
}

@test "bytes after the last chunk of a chunked response are dropped and the connection ends there" {
	run -0 raw_repr main 'GET http://origin.test/chunked-extra HTTP/1.1\r\nHost: origin.test\r\n\r\n'
	assert_output "b'200 6\\r\\nhello\\n\\r\\n0\\r\\n\\r\\n\\n'"
	# Split across writes, with a trailer, the origin holding on: the
	# broker ends the response after the trailer, without the rest.
	run -0 raw_repr main 'GET http://origin.test/chunked-late HTTP/1.1\r\nHost: origin.test\r\n\r\n'
	assert_output "b'200 6\\r\\nhello\\n\\r\\n0\\r\\nX-Trailer: 1\\r\\n\\r\\n\\n'"
	run -0 last_log main status reason bytes_down
	assert_output "200 None 77"
	run -0 nsb curl -sS -m 10 -x http://127.0.0.1:31281 http://origin.test/chunked-late
	assert_output "hello"
}
@test "a chunked response with broken framing is cut where the framing breaks" {
	run -0 raw_repr main 'GET http://origin.test/chunked-bad HTTP/1.1\r\nHost: origin.test\r\n\r\n'
	assert_output "b'200 6\\r\\nhello\\n\\r\\n\\n'"
	run -0 last_log main status reason
	assert_output "200 broken chunked framing from the origin"
}

# --- limits ---

@test "a request body over --max-request-bytes is refused with 413" {
	refused small "413 request larger than --max-request-bytes" \
		'POST http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 5000\r\n\r\n'
}
@test "a response declared over --max-response-bytes is a 502" {
	run -0 raw small 'GET http://origin.test/big HTTP/1.1\r\nHost: origin.test\r\n\r\n'
	assert_output "502 response larger than --max-response-bytes"
}
@test "an undeclared response over --max-response-bytes is cut at the limit" {
	# A Unix socket has no reset: the cut shows in the size and the log.
	run -0 nsb curl -sS -m 10 -o "$T/cut" -x http://127.0.0.1:31283 http://origin.test/stream
	[ "$(stat -c %s "$T/cut")" -le 4096 ]
	run -0 last_log small status reason
	assert_output "200 --max-response-bytes exceeded"
}
@test "tunnelled bytes over --max-request-bytes close the tunnel" {
	run nsb sh -c 'head -c 20000 /dev/zero | timeout 10 openssl s_client -proxy 127.0.0.1:31283 \
		-connect origin.test:443 -servername origin.test -quiet -ign_eof 2>&1'
	run -0 last_log small decision reason
	assert_output "allowed --max-request-bytes exceeded"
	[ "$(received tls | wc -c)" -le 4096 ]
}
@test "tunnelled bytes over --max-response-bytes close the tunnel" {
	run nsb curl -sS -m 10 -o /dev/null --cacert "$T/cert.pem" -x http://127.0.0.1:31283 https://origin.test/
	assert_failure
	run -0 last_log small decision reason
	assert_output "allowed --max-response-bytes exceeded"
}
@test "an origin that never answers meets --max-wall-time with a 504" {
	run -0 raw small 'GET http://origin.test/silent HTTP/1.1\r\nHost: origin.test\r\n\r\n'
	assert_output "504 --max-wall-time exceeded"
	run -0 received origin
	assert_output --partial "GET /silent HTTP/1.1"
}
@test "bytes from the client while the origin's connect is still pending do not end the dial" {
	# 198.18.0.77 is on the link but nobody has it: the connect stays
	# pending until --max-wall-time (1 s) ends it.
	run -0 "$PY" "$T/client.py" late "$T/small.sock" void.test:443 "$NB" 198.18.0.77
	assert_output "504 --max-wall-time exceeded"
	run -0 last_log small decision reason
	assert_output "allowed --max-wall-time exceeded"
}
@test "a client that never finishes its head meets --max-wall-time with a 504" {
	run -0 raw small 'GET http://origin.test/ HTTP/1.1\r\n'
	assert_output "504 --max-wall-time exceeded"
	assert_untouched
}
@test "past --max-connections the broker answers 503" {
	coproc HOLD { "$PY" "$T/client.py" hold "$T/cap.sock"; }
	read -r -t 10 line <&"${HOLD[0]}"
	assert_equal "$line" "held"
	refused cap "503 connection limit reached (--max-connections)" 'CONNECT origin.test:443 HTTP/1.1\r\n\r\n'
	kill "$HOLD_PID"
	wait "$HOLD_PID" || :
}

# --- proxy mode ---

@test "proxy mode tunnels HTTPS through the upstream proxy by checked address" {
	run -0 nsb curl -sS -m 10 -o /dev/null -w '%{http_code}' --cacert "$T/cert.pem" \
		-x http://127.0.0.1:31284 https://origin.test/
	assert_output "200"
	run -0 last_log proxy method host address decision status
	assert_output "CONNECT origin.test 198.18.0.2 allowed 200"
}
@test "proxy mode carries plain HTTP through an upstream CONNECT" {
	run -0 nsb curl -sS -m 10 -x http://127.0.0.1:31284 http://origin.test/hello
	assert_output "hello"
}
@test "proxy mode still checks the allowlist and the addresses" {
	refused proxy "403 host other.test not on the allowlist (--allow-host)" 'CONNECT other.test:443 HTTP/1.1\r\n\r\n'
	refused proxyopen "403 address 198.18.0.2 refused: benchmarking or fake-IP DNS (198.18.0.0/15); --allow-address 198.18.0.0/15 or --allow-private-networks opens it" \
		'CONNECT other.test:443 HTTP/1.1\r\n\r\n'
	refused proxyopen "403 address 127.0.0.1 refused: loopback (127.0.0.0/8); no option opens it" 'CONNECT loop.test:443 HTTP/1.1\r\n\r\n'
}
@test "proxy mode: an upstream answering non-2xx is a 502" {
	run -0 raw up407 'CONNECT origin.test:443 HTTP/1.1\r\n\r\n'
	assert_output "502 upstream proxy answered 407"
	run -0 received up407
	assert_output $'CONNECT 198.18.0.2:443 HTTP/1.1\r\nHost: 198.18.0.2:443\r\n\r'
	assert_no_bytes
}
@test "proxy mode: bytes after the upstream's 200 are a 502" {
	run -0 raw upextra 'GET http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\n\r\n'
	assert_output "502 upstream proxy sent bytes after its answer"
	assert_no_bytes
}

# --- lifecycle ---

@test "SIGTERM closes the listener and every open connection" {
	start_broker term - --allow-host origin.test --allow-private-networks
	coproc HOLD { "$PY" "$T/client.py" hold "$T/term.sock"; }
	read -r -t 10 line <&"${HOLD[0]}"
	local rc=0 pid
	pid=$(cat "$T/term.pid")
	kill -TERM "$pid"
	wait "$pid" || rc=$?
	assert_equal "$rc" 0
	assert_file_not_exists "$T/term.sock"
	run -0 tail -n 2 "$T/term.log"
	assert_line --index 0 --partial '"reason":"broker terminated"'
	assert_line --index 1 --regexp '^\{"tool":"sbx-broker","event":"exit","time":"[^"]*","code":0,"signal":15\}$'
	kill "$HOLD_PID" 2>/dev/null || :
}

@test "socket activation passes the listener as fd 3" {
	run -0 timeout 20 ip netns exec "$NB" "$PY" -c '
import os, socket, subprocess, sys, time
path = sys.argv[1] + "/act.sock"
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path); s.listen(8)
os.dup2(s.fileno(), 3)
env = dict(os.environ, LISTEN_FDS="1")
p = subprocess.Popen(["sh", "-c", "export LISTEN_PID=$$; exec \"$0\" \"$@\"", sys.argv[2], "--allow-host", "origin.test",
    "--allow-private-networks"], pass_fds=(3,), env=env, stderr=subprocess.DEVNULL)
time.sleep(0)
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
c.connect(path)
c.sendall(b"CONNECT other.test:443 HTTP/1.1\r\n\r\n")
print(c.recv(100).split(b"\r\n")[0].decode())
p.terminate(); print(p.wait())' "$T" "$SBX_BIN/sbx-broker"
	assert_output $'HTTP/1.1 403 Forbidden\n0'
}

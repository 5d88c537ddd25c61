#!/usr/bin/env bats
# sbx-ns --net broker:PATH,transparent: programs that ignore the proxy
# variables reach allowlisted names through sbx-broker, and nothing else
# gets out. The broker answers the sandbox's DNS with synthetic addresses
# (240.0.0.0/4) and takes the connections to them from listeners made
# inside the sandbox. Origins on 198.18.7.2 in namespace "o" (HTTP, TLS,
# and an OpenSSH server with a git repository); sbx-ns and the brokers in
# "h", which has no default route. Broker "tp" allows origin.test and
# *.wild.test (80, 443); broker "tcp" allows origin.test and passes
# origin.test:22 as an opaque stream.

load helpers
load ns-net
bats_require_minimum_version 1.5.0

setup_file() {
	local s
	net_setup_file
	net_broker tp --allow-host origin.test --allow-host '*.wild.test' --allow-private-networks
	net_broker tcp --allow-host origin.test --allow-tcp origin.test:22 --allow-private-networks
	# The OpenSSH origin: throwaway keys, the test user's key authorized,
	# a bare repository with one commit; /run/sshd on a private tmpfs.
	s="$NET_DIR/ssh"
	mkdir -p "$s"
	ssh-keygen -q -t ed25519 -N '' -f "$s/host" </dev/null
	ssh-keygen -q -t ed25519 -N '' -f "$s/id" </dev/null
	cp "$s/id.pub" "$s/authorized_keys"
	printf 'origin.test %s\n' "$(cut -d' ' -f1,2 "$s/host.pub")" > "$s/known_hosts"
	cat > "$s/sshd_config" <<-EOF
	ListenAddress 198.18.7.2:22
	HostKey $s/host
	AuthorizedKeysFile $s/authorized_keys
	PasswordAuthentication no
	KbdInteractiveAuthentication no
	UsePAM yes
	StrictModes no
	PidFile none
	AllowUsers $SBX_TEST_USER
	EOF
	git init -q --bare "$s/repo.git"
	git -C "$NET_DIR" -c init.defaultBranch=main init -q src
	echo transparent > "$NET_DIR/src/README"
	git -C "$NET_DIR/src" add README
	git -C "$NET_DIR/src" -c user.name=t -c user.email=t@t commit -q -m one
	git -C "$NET_DIR/src" push -q "$s/repo.git" HEAD:main
	git -C "$s/repo.git" symbolic-ref HEAD refs/heads/main
	chmod -R a+rX "$s"
	chmod 0600 "$s/host" "$s/id"
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$s/repo.git"
	ip netns exec "$NO" unshare -m --propagation private sh -c \
		'mount -t tmpfs tmpfs /run && mkdir -m 0755 /run/sshd && exec /usr/sbin/sshd -D -e -f "$0"' \
		"$s/sshd_config" </dev/null >/dev/null 2>>"$NET_DIR/sshd.err" 3>&- &
	echo $! >> "$NET_DIR/pids"
	net_wait_port "$NO" 198.18.7.2 22
}

requests() { cat "$NET_DIR/origin.log" 2>/dev/null | wc -l; }

# tp BROKER ARGS...: a transparent sandbox of broker BROKER, as the test
# user, with the certificate and the ssh keys readable, in a fresh
# workspace (its own copy of the client key, which ssh wants private).
tp() {
	local b=$1 ws
	shift
	ws=$(ns_ws)
	install -o "$SBX_TEST_UID" -g "$SBX_TEST_GID" -m 0600 "$NET_DIR/ssh/id" "$ws/id"
	nsh_user --workspace "$ws" --ro "$NET_DIR" --setenv CERT="$NET_DIR/cert.pem" \
		--setenv SSHDIR="$NET_DIR/ssh" --net "broker:$NET_DIR/$b.sock,transparent" "$@"
}

@test "DNS: an allowed name gets a synthetic address, another name none; the refusal is a net decision line" {
	run -0 --separate-stderr tp tp --status-fd 5 -- sh -c 'getent hosts origin.test; getent hosts other.test; echo "rc=$?"' 5>"$NET_DIR/status.1"
	assert_output --regexp '^240\.0\.0\.[0-9]+ +origin\.test
rc=2$'
	assert_equal "$stderr" "sbx-ns: note: the broker refused 2 connections: other.test:53: host other.test not on the allowlist (--allow-host) (2)"
	run -0 grep -c '"event":"net","host":"other.test","port":53,"decision":"refused","reason":"host other.test not on the allowlist (--allow-host)","count":1' "$NET_DIR/status.1"
	run -0 grep -c '"net":"broker, transparent"' "$NET_DIR/status.1"
}

@test "DNS over UDP and TCP, stable addresses, and at most 256 names per sandbox (origin.test and 255 more)" {
	run -0 --separate-stderr tp tp -- sh -c 'exec 2>/dev/null # dig probes socket families it may not use
		cat /etc/resolv.conf
		a=$(dig +short origin.test A); b=$(dig +short +tcp origin.test A)
		[ "$a" = "$b" ] && echo "udp and tcp agree"; 
		dig +short origin.test AAAA | wc -l
		dig origin.test MX | grep -c "status: NOERROR"
		dig ORIGIN.test. | grep -c "status: NOERROR"
		dig other.test | grep -c "status: NXDOMAIN"
		i=1; while [ $i -le 255 ]; do echo "n$i.wild.test"; i=$((i + 1)); done > names
		dig +short -f names | sort -u | wc -l
		[ "$(dig +short n1.wild.test)" = "$(head -n 1 names | dig +short -f /dev/stdin)" ] && echo "stable"
		dig n256.wild.test | grep -c "status: REFUSED"
		[ "$(dig +short origin.test)" = "$a" ] && echo "still the same"'
	assert_output "nameserver 127.0.0.1
udp and tcp agree
0
1
1
1
255
stable
1
still the same"
	assert_equal "$stderr" "sbx-ns: note: the broker refused 2 connections: other.test:53: host other.test not on the allowlist (--allow-host) (1); n256.wild.test:53: DNS: this sandbox has used all its synthetic addresses (256 names) (1)"
}

@test "programs that ignore the proxy variables reach the allowed name: curl --noproxy, python socket and ssl, plain HTTP" {
	run -0 --separate-stderr tp tp -- sh -c '
		curl -sS --noproxy "*" --cacert "$CERT" https://origin.test/ | sed -n 1p
		curl -sS --noproxy "*" http://origin.test/
		python3 -c "
import os, socket, ssl
s = socket.create_connection((\"origin.test\", 443), 10)
c = ssl.create_default_context(cafile=os.environ[\"CERT\"]).wrap_socket(s, server_hostname=\"origin.test\")
c.sendall(b\"GET / HTTP/1.0\\r\\n\\r\\n\")
print(c.recv(100).split(b\"\\r\\n\")[0].decode())
"
		curl -sS --cacert "$CERT" https://origin.test/ | sed -n 1p'
	assert_output '<HTML><BODY BGCOLOR="#ffffff">
hello
HTTP/1.0 200 ok
<HTML><BODY BGCOLOR="#ffffff">'
	assert_equal "$stderr" ""
}

@test "a server name or a Host other than the name connected to is refused; the origin receives nothing (TLS: not even a connection)" {
	local before
	before=$(requests)
	run -0 --separate-stderr tp tp -- sh -c '
		echo | openssl s_client -connect origin.test:443 -servername other.test -CAfile "$CERT" >/dev/null 2>&1; echo "tls rc=$?"
		curl -sS --noproxy "*" -H "Host: other.test" -o /dev/null -w "%{http_code}\n" http://origin.test/'
	assert_output "tls rc=1
400"
	assert_equal "$stderr" "sbx-ns: note: the broker refused 2 connections: origin.test:443: server name other.test does not match the name connected to, origin.test (1); origin.test:80: Host does not match the name connected to (1)"
	assert_equal "$(requests)" "$before"
	run -0 grep -c '"method":"TLS","host":"origin.test","port":443,"address":null,"decision":"refused","status":null,"reason":"server name other.test does not match the name connected to, origin.test","bytes_up":0' "$NET_DIR/tp.err"
}

@test "git clone over SSH: an opaque stream with --allow-tcp origin.test:22, refused without it" {
	local ssh='ssh -i $PWD/id -o UserKnownHostsFile=$SSHDIR/known_hosts -o StrictHostKeyChecking=yes -o BatchMode=yes'
	run -0 --separate-stderr tp tcp -- sh -c "GIT_SSH_COMMAND='$ssh' git clone -q ssh://$SBX_TEST_USER@origin.test\$SSHDIR/repo.git r && cat r/README"
	assert_output "transparent"
	assert_equal "$stderr" ""
	run -0 grep -c '"method":"OPAQUE","host":"origin.test","port":22,"address":"198.18.7.2","decision":"allowed"' "$NET_DIR/tcp.err"
	run -0 --separate-stderr tp tp -- sh -c "GIT_SSH_COMMAND='$ssh' git clone -q ssh://$SBX_TEST_USER@origin.test\$SSHDIR/repo.git r; echo rc=\$?"
	assert_output "rc=128"
	# (ssh ends its lines with CR LF)
	assert_equal "${stderr//$'\r'/}" "ssh: connect to host origin.test port 22: Permission denied
fatal: Could not read from remote repository.

Please make sure you have the correct access rights
and the repository exists."
}

@test "nothing else gets out: real addresses, another sandbox's synthetic address, UDP elsewhere, raw and ICMP sockets" {
	local x
	run -0 --separate-stderr tp tp -- getent ahostsv4 origin.test
	x=${lines[0]%% *}
	[[ $x == 240.* ]]
	run -0 --separate-stderr tp tp --setenv X="$x" -- python3 -c '
import errno, os, socket
def err(f):
    try:
        return f()
    except OSError as e:
        return errno.errorcode[e.errno]
def tcp(addr, port):
    s = socket.create_connection((addr, port), 10)
    return "closed" if s.recv(100) == b"" else "data"
def udp(addr, port):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(10)
    u.connect((addr, port))
    u.send(b"x")
    return u.recv(100)
X = os.environ["X"]
print("real 443:", err(lambda: tcp("198.18.7.2", 443)))
print("real 80:", err(lambda: tcp("198.18.7.2", 80)))
print("another sandbox s address:", err(lambda: tcp(X, 443)))
print("the same, v4-mapped:", err(lambda: tcp("::ffff:" + X, 443)))
print("loopback 443:", err(lambda: tcp("127.0.0.1", 443)))
print("udp real 53:", err(lambda: udp("198.18.7.2", 53)))
print("udp synthetic 53:", err(lambda: udp(X, 53)))
print("udp loopback 5353:", err(lambda: udp("127.0.0.1", 5353)))
print("raw:", err(lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)))
print("icmp:", err(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)))
print("packet:", err(lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW)))
print("bind udp 53:", err(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).bind(("0.0.0.0", 53))))
print("listen on 8443:", err(lambda: socket.create_server(("0.0.0.0", 8443))))
# Addresses are per sandbox: once resolved here, the same address is this
# sandbox own name.
print("own address, once resolved:", socket.gethostbyname("origin.test") == X)
'
	assert_output "real 443: ENETUNREACH
real 80: ENETUNREACH
another sandbox s address: closed
the same, v4-mapped: closed
loopback 443: closed
udp real 53: ENETUNREACH
udp synthetic 53: ECONNREFUSED
udp loopback 5353: ECONNREFUSED
raw: EPERM
icmp: EPERM
packet: EPERM
bind udp 53: EACCES
listen on 8443: EACCES
own address, once resolved: True"
	assert_equal "$stderr" "sbx-ns: note: the broker refused 3 connections: destination $x:443 is no name of this sandbox's DNS (2); destination 127.0.0.1:443 is no name of this sandbox's DNS (1)"
}

@test "the proxy port may not be a captured port" {
	local ws
	ws=$(ns_ws)
	run -100 --separate-stderr nsh_user --workspace "$ws" --net "broker:$NET_DIR/tp.sock,transparent,port=443" -- true
	assert_equal "$stderr" "sbx-ns: usage: --net: port 443 is captured for the broker and is also the sandbox's proxy port; move the proxy with ,port=N"
}

@test "a DNS flood of malformed queries from one sandbox: the broker keeps serving another" {
	local wa i
	wa=$(ns_ws)
	cat > "$wa/flood.py" <<-'PY'
	# Garbage, pointer loops, oversized and truncated queries, responses,
	# other opcodes and a fresh forbidden name each time, over UDP as fast
	# as the socket takes them, and over TCP, until ./stop appears.
	import os, random, socket, struct
	def q(name, flags=0x0100, qd=1, t=1):
	    b = struct.pack(">HHHHHH", random.randrange(65536), flags, qd, 0, 0, 0)
	    for l in name.split("."):
	        b += bytes([len(l)]) + l.encode()
	    return b + b"\0" + struct.pack(">HH", t, 1)
	bad = [b"", b"\0" * 11, b"\xff" * 600, q("a.test")[:15],
	       struct.pack(">HHHHHH", 1, 0, 1, 0, 0, 0) + b"\xc0\x0c\0\1\0\1",
	       q("a.test", flags=0x8180), q("a.test", flags=0x2800), q("a.test", qd=2),
	       q(".".join(["a" * 63] * 5)), q("x" * 64 + ".test")]
	u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
	u.setblocking(False)
	u.connect(("127.0.0.1", 53))
	n = 0
	while not os.path.exists("stop") and n < 2000000:
	    for m in bad + [q("f%d.forbidden.test" % n), os.urandom(random.randrange(1, 100))]:
	        try:
	            u.send(m)
	        except BlockingIOError:
	            pass
	        n += 1
	    try:
	        while u.recv(600):
	            pass
	    except OSError:
	        pass
	    if n % 12000 == 0:
	        t = socket.create_connection(("127.0.0.1", 53))
	        t.sendall(b"\xff\xff" + os.urandom(100))
	        t.close()
	        if n == 12000:
	            open("started", "w").close()
	print("stopped" if os.path.exists("stop") else "not stopped")
	PY
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$wa/flood.py"
	nsh_user --workspace "$wa" --net "broker:$NET_DIR/tp.sock,transparent" -- python3 flood.py \
		>"$NET_DIR/flood.out" 2>&1 &
	wait_for '[ -e "$wa/started" ]'
	run -0 --separate-stderr tp tp -- sh -c 'getent hosts origin.test >/dev/null && curl -sS --noproxy "*" http://origin.test/'
	assert_output "hello"
	touch "$wa/stop"
	wait
	run -0 cat "$NET_DIR/flood.out"
	assert_line --index 0 "stopped"
	kill -0 "$(cat "$NET_DIR/tp.pid")"
	run -0 grep -c '"method":"DNS","host":null,"port":53,"address":null,"decision":"refused","status":null,"reason":"DNS: compression pointer in the question"' "$NET_DIR/tp.err"
	# At most 50 refusals a second are logged one by one, the rest counted.
	run -0 grep -c '"method":"DNS","host":null,"port":53,"address":null,"decision":"refused","status":null,"reason":"DNS: [0-9]* more refused queries in one second, not logged one by one"' "$NET_DIR/tp.err"
}

@test "a resolv.conf that is a symlink (systemd-resolved's) gets the sandbox's resolver where it points" {
	local ws d
	ws=$(ns_ws)
	d=$(mktemp -d "$NET_DIR/etc.XXXXXX")
	chmod 0755 "$d"
	ln -s ../run/systemd/resolve/stub-resolv.conf "$d/resolv.conf"
	cp /etc/passwd /etc/group /etc/nsswitch.conf "$d/"
	run -0 --separate-stderr nsh_user --workspace "$ws" --runtime /usr:/bin:/lib:/lib64 --ro-bind "$d" /etc \
		--net "broker:$NET_DIR/tp.sock,transparent" -- sh -c 'cat /etc/resolv.conf; getent hosts origin.test >/dev/null && echo resolved'
	assert_output "nameserver 127.0.0.1
resolved"
	assert_equal "$stderr" ""
	rm "$d/resolv.conf"
	ln -s /run/../.. "$d/resolv.conf"
	run -102 --separate-stderr nsh_user --workspace "$ws" --runtime /usr:/bin:/lib:/lib64 --ro-bind "$d" /etc \
		--net "broker:$NET_DIR/tp.sock,transparent" -- true
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run: /etc/resolv.conf links to the root (/run/../..)"
}

# Shared by the sbx-ns network suites (tests/20..23-ns-net-*.bats and
# tests/26-ns-landlock-net.bats): `load ns-net` (it loads ns.bash). Its
# setup_file and teardown_file make and remove the namespaces and origins;
# a suite that needs more defines its own and calls net_setup_file and
# net_teardown_file.
#
# Every process runs inside network namespaces made here, none with a
# default route: "h" stands for the host (sbx-ns, the broker and a
# loopback service run there, so even --net host cannot leave the machine),
# "o" holds the origins on 198.18.7.2 (HTTP on 80, TLS on 443, an HTTP
# decoy on 8080).

load ns
setup_file() { net_setup_file; }
teardown_file() { net_teardown_file; }

net_setup_file() {
	ns_setup_file
	cp "$SBX_TESTBIN/ns-net-attempt" "$NS_DIR/bin/"
	chmod 0755 "$NS_DIR/bin/ns-net-attempt"
	export NET_ATT="$NS_DIR/bin/ns-net-attempt"
	export PY=/usr/bin/python3
	export NH="sbxnet$$h" NO="sbxnet$$o"
	# Sockets and logs where the unprivileged user can reach them.
	NET_DIR="$NS_DIR/net"
	mkdir -p "$NET_DIR/www"
	chmod 0755 "$NET_DIR" "$NET_DIR/www"
	export NET_DIR
	: > "$NET_DIR/pids"
	netns_pair "$NH" "$NO" "vh$$" "vo$$" 198.18.7.1/24 198.18.7.2/24

	printf '198.18.7.2 origin.test\n198.18.7.2 other.test\n' > "$NET_DIR/hosts"
	printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' > "$NET_DIR/resolv.conf"
	cat > "$NET_DIR/origin.py" <<-'PY'
	# An HTTP origin: / says hello, /slow streams 8 MiB in 6 s (for a broker
	# killed halfway), /big sends SIZE bytes at full speed.
	import http.server, socketserver, sys, time
	class H(http.server.BaseHTTPRequestHandler):
	    protocol_version = "HTTP/1.1"
	    def log_message(self, *a):
	        with open(sys.argv[3], "a") as f:
	            f.write("%s %s\n" % (self.command, self.path))
	    def do_GET(self):
	        if self.path.startswith("/big"):
	            n = int(self.path[5:] or "1048576")
	            self.send_response(200)
	            self.send_header("Content-Length", str(n))
	            self.end_headers()
	            chunk = b"x" * 65536
	            while n > 0:
	                self.wfile.write(chunk[:min(n, 65536)])
	                n -= 65536
	            return
	        if self.path == "/slow":
	            self.send_response(200)
	            self.send_header("Content-Length", str(8 << 20))
	            self.end_headers()
	            for i in range(128):
	                self.wfile.write(b"y" * 65536)
	                self.wfile.flush()
	                if i == 1:
	                    # Two chunks are on their way: a test waits for this file
	                    # (beside the request log, whose lines tests count).
	                    open(sys.argv[3] + ".slow", "w").close()
	                time.sleep(0.05)
	            return
	        body = b"hello\n"
	        self.send_response(200)
	        self.send_header("Content-Length", str(len(body)))
	        self.end_headers()
	        self.wfile.write(body)
	class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
	    daemon_threads = True
	    allow_reuse_address = True
	S((sys.argv[1], int(sys.argv[2])), H).serve_forever()
	PY
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-subj /CN=origin.test -addext subjectAltName=DNS:origin.test,DNS:other.test \
		-keyout "$NET_DIR/key.pem" -out "$NET_DIR/cert.pem" 2>/dev/null
	chmod 0644 "$NET_DIR/cert.pem"
	ip netns exec "$NO" openssl s_server -quiet -www -accept 198.18.7.2:443 \
		-cert "$NET_DIR/cert.pem" -key "$NET_DIR/key.pem" </dev/null >/dev/null 2>&1 3>&- &
	echo $! >> "$NET_DIR/pids"
	ip netns exec "$NO" "$PY" "$NET_DIR/origin.py" 198.18.7.2 80 "$NET_DIR/origin.log" \
		</dev/null >/dev/null 2>&1 3>&- &
	echo $! >> "$NET_DIR/pids"
	ip netns exec "$NO" "$PY" "$NET_DIR/origin.py" 198.18.7.2 8080 "$NET_DIR/decoy.log" \
		</dev/null >/dev/null 2>&1 3>&- &
	echo $! >> "$NET_DIR/pids"
	# The "host's" own loopback service.
	ip netns exec "$NH" "$PY" "$NET_DIR/origin.py" 127.0.0.1 8081 "$NET_DIR/hostlo.log" \
		</dev/null >/dev/null 2>&1 3>&- &
	echo $! >> "$NET_DIR/pids"
	net_wait_port "$NO" 198.18.7.2 443
	net_wait_port "$NO" 198.18.7.2 80
	net_wait_port "$NO" 198.18.7.2 8080
	net_wait_port "$NH" 127.0.0.1 8081
}

net_teardown_file() {
	local p
	for ns in "$NH" "$NO"; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || :; done
	done
	[ -f "$NET_DIR/pids" ] && while read -r p; do kill -9 "$p" 2>/dev/null || :; done < "$NET_DIR/pids"
	ip netns del "$NH" 2>/dev/null || :
	ip netns del "$NO" 2>/dev/null || :
	ns_teardown_file
}

# net_broker NAME ARGS...: sbx-broker in "h" (its own /etc/hosts) on
# $NET_DIR/NAME.sock, open to the test user; its pid in $NET_DIR/NAME.pid.
# $BROKER_WRAP, when set, is the program the broker runs under.
net_broker() {
	local name=$1 fd rc=0
	shift
	rm -f "$NET_DIR/$name.sock" "$NET_DIR/$name.ready"
	mkfifo "$NET_DIR/$name.ready"
	exec {fd}<>"$NET_DIR/$name.ready"
	# NET_PLAIN=1: the host's own /etc/hosts, names only from --resolve.
	ip netns exec "$NH" unshare -m --propagation private sh -c \
		'[ -n "$NET_PLAIN" ] || { mount --bind "$0/hosts" /etc/hosts && mount --bind "$0/resolv.conf" /etc/resolv.conf; } && exec "$@"' \
		"$NET_DIR" ${BROKER_WRAP:-} "$SBX_BIN/sbx-broker" --listen "$NET_DIR/$name.sock" --ready-fd 3 "$@" \
		3>"$NET_DIR/$name.ready" </dev/null >/dev/null 2>>"$NET_DIR/$name.err" &
	echo $! >> "$NET_DIR/pids"
	echo $! > "$NET_DIR/$name.pid"
	read -r -t 10 -u "$fd" _ || rc=$?
	exec {fd}<&-
	# NET_KEEP_MODE=1: the socket as the broker made it.
	[ -n "${NET_KEEP_MODE:-}" ] || chmod 0666 "$NET_DIR/$name.sock"
	return "$rc"
}

# The broker of most suites: $BSOCK, origin.test allowed and private
# ranges open (the origins are on 198.18.7.2); ARGS are added.
net_main_broker() {
	net_broker main --allow-host origin.test --allow-private-networks "$@"
	export BSOCK="$NET_DIR/main.sock"
}

# sbx-ns in "h", as root (the command as the test user) and as the user.
nsh_root() {
	ip netns exec "$NH" "$SBX_BIN/sbx-ns" --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" "$@"
}

nsh_user() {
	ip netns exec "$NH" setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" --init-groups \
		--reset-env -- env PATH="$SBX_BIN:/usr/local/bin:/usr/bin:/bin" "$SBX_BIN/sbx-ns" "$@"
}

# Both identities, the same output expected: nsh_both WS "want" ARGS...
nsh_both() {
	local ws=$1 want=$2
	shift 2
	run -0 --separate-stderr nsh_root --workspace "$ws" --ro "$NS_DIR/bin" "$@"
	curl_ms
	assert_output "$want"
	assert_equal "$stderr" ""
	run -0 --separate-stderr nsh_user --workspace "$ws" --ro "$NS_DIR/bin" "$@"
	curl_ms
	assert_output "$want"
	assert_equal "$stderr" ""
}

#!/usr/bin/env bats
# sbx-broker --service end to end: a sandbox (sbx-ns --net broker) asks
# http://ROUTE/ in plain HTTP, through the proxy port and through a
# captured port 80; the broker opens TLS to a test service in namespace
# "o" (Python's ssl, certificates from a test CA made here with the openssl
# command) and adds the route's header. Bad certificates, an old protocol,
# a stalled handshake and an early close each end in an exact 502 or 504
# and reason; the secret is found nowhere the sandbox or the log can see.

load helpers
load ns-net
bats_require_minimum_version 1.5.0

SECRET=sbx-secret-7f3a9c1e

setup_file() {
	net_setup_file
	local d="$NET_DIR/tls"
	mkdir -p "$d"
	ca() { # ca NAME: a CA certificate and key
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=$1" \
			-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
			-keyout "$d/$1.key" -out "$d/$1.pem" 2>/dev/null
	}
	leaf() { # leaf NAME CA DAYS SAN: a certificate CA signs
		openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$1" \
			-keyout "$d/$1.key" -out "$d/$1.csr" 2>/dev/null
		openssl x509 -req -in "$d/$1.csr" -CA "$d/$2.pem" -CAkey "$d/$2.key" -days "$3" \
			-extfile <(printf 'subjectAltName=%s\n' "$4") -out "$d/$1.pem" 2>/dev/null
	}
	ca testca
	ca otherca
	leaf good testca 2 DNS:svc.test
	leaf expired testca -1 DNS:svc.test
	leaf wrongname testca 2 DNS:wrong.test
	leaf wrongca otherca 2 DNS:svc.test
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=svc.test \
		-addext subjectAltName=DNS:svc.test -keyout "$d/self.key" -out "$d/self.pem" 2>/dev/null
	cat > "$d/origin.py" <<-'PY'
	# The service: PORT=MODE[:CERT] pairs. tls answers "service saw METHOD
	# PATH" and logs each request head to LOG (the test reads what the
	# broker sent there); stall accepts and never speaks; close closes.
	import socket, ssl, sys, threading
	addr, log, d = sys.argv[1], sys.argv[2], sys.argv[3]
	lock = threading.Lock()
	def handle(c, mode, ctx):
	    if mode == "stall":
	        c.settimeout(60)
	        try:
	            while c.recv(4096):
	                pass
	        except OSError:
	            pass
	        return
	    if mode == "close":
	        c.recv(65536)  # the ClientHello, then the end
	        c.close()
	        return
	    try:
	        t = ctx.wrap_socket(c, server_side=True)
	        data = b""
	        while b"\r\n\r\n" not in data:
	            b = t.recv(65536)
	            if not b:
	                return
	            data += b
	    except (OSError, ssl.SSLError):
	        c.close()
	        return
	    head = data.split(b"\r\n\r\n")[0].decode("latin-1")
	    with lock, open(log, "a") as f:
	        f.write(head.replace("\r\n", "\n") + "\n--\n")
	    method, path = head.split(" ")[:2]
	    if path.endswith("/redirect"):
	        t.sendall(b"HTTP/1.1 302 Found\r\nLocation: https://elsewhere.test/\r\nContent-Length: 0\r\n\r\n")
	    else:
	        body = ("service saw %s %s\n" % (method, path)).encode()
	        t.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
	    t.close()
	def serve(port, mode, name):
	    ctx = None
	    if mode == "tls":
	        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
	        ctx.load_cert_chain(d + "/" + name + ".pem", d + "/" + name + ".key")
	    s = socket.socket()
	    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	    s.bind((addr, port))
	    s.listen(64)
	    while True:
	        c, _ = s.accept()
	        threading.Thread(target=handle, args=(c, mode, ctx), daemon=True).start()
	for spec in sys.argv[4:]:
	    port, _, rest = spec.partition("=")
	    mode, _, name = rest.partition(":")
	    threading.Thread(target=serve, args=(int(port), mode, name), daemon=True).start()
	threading.Event().wait()
	PY
	install -m 0600 /dev/null "$d/service.log" # what the service saw: the sandbox may not read it
	ip netns exec "$NO" "$PY" "$d/origin.py" 198.18.7.2 "$d/service.log" "$d" 8443=tls:good \
		8444=tls:expired 8445=tls:self 8446=tls:wrongname 8447=tls:wrongca 8449=stall 8450=close \
		</dev/null >/dev/null 2>&1 3>&- &
	echo $! >> "$NET_DIR/pids"
	# TLS 1.0 and nothing newer.
	ip netns exec "$NO" openssl s_server -quiet -www -accept 198.18.7.2:8448 -tls1 -cipher 'DEFAULT:@SECLEVEL=0' \
		-cert "$d/good.pem" -key "$d/good.key" </dev/null >/dev/null 2>&1 3>&- &
	echo $! >> "$NET_DIR/pids"
	for p in 8443 8444 8445 8446 8447 8448 8449 8450; do net_wait_port "$NO" 198.18.7.2 "$p"; done
	printf 'Authorization: Bearer %s\r\nX-Route: svc\n' "$SECRET" > "$d/svc.hdr"
	chmod 0600 "$d/svc.hdr"
	echo '198.18.7.2 svc.test' >> "$NET_DIR/hosts"
	local r routes=()
	for r in expired:8444 self:8445 wrongname:8446 wrongca:8447 tls10:8448 stall:8449 early:8450; do
		routes+=(--service "${r%%:*}=https://svc.test:${r##*:}" --service-ca "${r%%:*}=$d/testca.pem")
	done
	net_main_broker --max-wall-time 3 --service svc=https://svc.test:8443/base/ --service-ca svc="$d/testca.pem" \
		--service-header svc="$d/svc.hdr" --service hoststore=https://svc.test:8443 "${routes[@]}"
}

seen() { cat "$NET_DIR/tls/service.log" 2>/dev/null; }

@test "proxy port: the service gets the route's prefix, Host and Authorization, never the sandbox's" {
	local ws
	ws=$(ns_ws)
	: > "$NET_DIR/tls/service.log"
	run -0 --separate-stderr nsh_user --workspace "$ws" --net "broker:$BSOCK" -- sh -c \
		'curl -sS -H "Authorization: Basic c2FuZGJveA==" -H "x-route: sandbox" -H "X-Kept: yes" http://svc/pkg/a?b=c
		curl -sS -o /dev/null -w "%{http_code} %{redirect_url}\n" http://svc/redirect
		curl -sS -d hello http://svc/post'
	assert_output "service saw GET /base/pkg/a?b=c
302 https://elsewhere.test/
service saw POST /base/post"
	assert_equal "$stderr" ""
	run -0 seen
	assert_line --index 0 "GET /base/pkg/a?b=c HTTP/1.1"
	assert_line --index 1 "Host: svc.test:8443"
	assert_line "Authorization: Bearer $SECRET"
	assert_line "X-Route: svc"
	assert_line "X-Kept: yes"
	refute_line --partial "c2FuZGJveA"
	refute_line "x-route: sandbox"
	run -0 grep -c '^Authorization' "$NET_DIR/tls/service.log"
	assert_output 3
}

@test "captured port 80 of a transparent sandbox: the route's name resolves and the same request goes out" {
	local ws
	ws=$(ns_ws)
	: > "$NET_DIR/tls/service.log"
	run -0 --separate-stderr nsh_user --workspace "$ws" --net "broker:$BSOCK,transparent" -- \
		curl -sS --noproxy '*' -H "Authorization: token sandbox" http://svc/t
	assert_output "service saw GET /base/t"
	run -0 seen
	assert_line "Authorization: Bearer $SECRET"
	refute_line "Authorization: token sandbox"
}

@test "bad certificates, TLS 1.0, an early close: 502 and one reason line; a stalled handshake: 504" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr nsh_user --workspace "$ws" --net "broker:$BSOCK" -- sh -c \
		'for r in expired self wrongname wrongca tls10 early hoststore stall; do
			curl -sS -D - -o /dev/null http://$r/ | tr -d "\r" | grep -E "^(HTTP|Sbx-Broker-Reason)"
		done'
	assert_output "HTTP/1.1 502 Bad Gateway
Sbx-Broker-Reason: service expired: TLS with 198.18.7.2: certificate verify failed: certificate has expired
HTTP/1.1 502 Bad Gateway
Sbx-Broker-Reason: service self: TLS with 198.18.7.2: certificate verify failed: self-signed certificate
HTTP/1.1 502 Bad Gateway
Sbx-Broker-Reason: service wrongname: TLS with 198.18.7.2: certificate verify failed: hostname mismatch
HTTP/1.1 502 Bad Gateway
Sbx-Broker-Reason: service wrongca: TLS with 198.18.7.2: certificate verify failed: unable to get local issuer certificate
HTTP/1.1 502 Bad Gateway
Sbx-Broker-Reason: service tls10: TLS with 198.18.7.2: tlsv1 alert protocol version
HTTP/1.1 502 Bad Gateway
Sbx-Broker-Reason: service early: TLS with 198.18.7.2: the service closed the connection
HTTP/1.1 502 Bad Gateway
Sbx-Broker-Reason: service hoststore: TLS with 198.18.7.2: certificate verify failed: unable to get local issuer certificate
HTTP/1.1 504 Gateway Timeout
Sbx-Broker-Reason: service stall: TLS handshake with 198.18.7.2 timed out (--max-wall-time)"
	run -0 grep -c '"service":"stall","host":"svc.test","port":8449,"address":"198.18.7.2","decision":"allowed","status":504' "$NET_DIR/main.err"
}

@test "CONNECT to a route, or a route on another port, is refused: the broker never tunnels a route's TLS" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr nsh_user --workspace "$ws" --net "broker:$BSOCK" -- sh -c \
		'curl -sS https://svc/ 2>&1; echo "rc $?"
		curl -sS -D - -o /dev/null http://svc:8080/ | tr -d "\r" | grep -E "^(HTTP|Sbx-Broker-Reason)"'
	assert_output "curl: (56) CONNECT tunnel failed, response 403
rc 56
HTTP/1.1 403 Forbidden
Sbx-Broker-Reason: service svc: port 8080 refused: a route is asked on port 80 (http://svc/)"
}

@test "the secret is nowhere in the sandbox (environment, files, /proc), the answers or the broker's log" {
	local ws
	ws=$(ns_ws)
	run --separate-stderr nsh_user --workspace "$ws" --net "broker:$BSOCK" -- sh -c \
		"curl -sS http://svc/x; curl -sS -D - http://expired/ | tr -d '\r'; env; cat /proc/*/environ /proc/*/cmdline 2>/dev/null | tr '\0' '\n'
		s=${SECRET%-*}; grep -rsl \"\$s-${SECRET##*-}\" /etc /tmp /run /home /dev/shm \"\$HOME\" .; cat '$NET_DIR/tls/svc.hdr' 2>&1; echo done"
	assert_line "service saw GET /base/x"
	assert_line "done"
	refute_output --partial "$SECRET"
	refute_output --partial "Bearer"
	run -1 grep -c "$SECRET" "$NET_DIR/main.err"
	run -0 grep -c '"service":"svc"' "$NET_DIR/main.err"
	# Nor in what the broker's process shows: its command line names the file.
	run -1 grep -ac "$SECRET" "/proc/$(cat "$NET_DIR/main.pid")/cmdline" "/proc/$(cat "$NET_DIR/main.pid")/environ"
}

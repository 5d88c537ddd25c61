#!/usr/bin/env bats
# sbx-broker --service end to end: a sandbox (sbx-ns --net broker) asks
# http://ROUTE/ in plain HTTP, through the proxy port and through a
# captured port 80; the broker opens TLS to the test service of
# tests/tlsorigin.bash (nginx in namespace "o", a private CA) and adds the
# route's header, without which the service answers 401. Bad certificates, an old protocol,
# a stalled handshake and an early close each end in an exact 502 or 504
# and reason; the secret is found nowhere the sandbox or the log can see.
# A route to an address is verified against the certificate's IP address
# (openssl s_server); a second broker in --mode proxy reaches the same
# routes through a tinyproxy upstream.

load helpers
load ns-net
load tlsorigin
bats_require_minimum_version 1.5.0

IP_PORT=4450
RESET_PORT=4451
UP_PORT=8888

setup_file() {
	tls_setup_file 198.18.7.4
	tls_origin "$NO" 198.18.7.4 svc.test "$TLS_DIR" "$(cat "$TLS_DIR/token")" sbxuser:sbxpass
	tls_bad "$NO" 198.18.7.4 "$TLS_DIR"
	ip_origin
	reset_origin
	upstream_proxy
	tls_keep
	printf 'Authorization: Bearer %s\r\nX-Route: svc\n' "$(cat "$TLS_DIR/token")" >"$TLS_DIR/svc.hdr"
	chmod 0600 "$TLS_DIR/svc.hdr"
	printf 'Authorization: Bearer %s\n' "$(cat "$TLS_DIR/token")" >"$TLS_DIR/ph.hdr"
	printf 'X-Api-Key: %s\n' "$(cat "$TLS_DIR/token")" >"$TLS_DIR/key.hdr"
	chmod 0600 "$TLS_DIR/ph.hdr" "$TLS_DIR/key.hdr"
	PH=sbxph-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
	PK=sbxkey-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
	echo '198.18.7.4 svc.test' >>"$NET_DIR/hosts"
	local r ca="$TLS_DIR/ca.pem" routes=()
	for r in expired:$TLS_PORT_EXPIRED self:$TLS_PORT_SELF wrongname:$TLS_PORT_WRONG wrongca:$TLS_PORT_OTHERCA \
		tls10:$TLS_PORT_TLS1 stall:$TLS_PORT_STALL early:$TLS_PORT_CLOSE; do
		routes+=(--service "${r%%:*}=https://svc.test:${r##*:}" --service-ca "${r%%:*}=$ca")
	done
	# The broker starts with SIGPIPE's default action, as a shell or a
	# service manager that does not ignore it would start it.
	BROKER_WRAP="env --default-signal=PIPE" net_main_broker --max-wall-time 3 --service svc=https://svc.test --service-ca svc="$ca" \
		--service-header svc="$TLS_DIR/svc.hdr" --service simple=https://svc.test/simple/ \
		--service-ca simple="$ca" --service-header simple="$TLS_DIR/svc.hdr" \
		--service-method simple=GET,HEAD --service-path simple=/sbxdemo/ \
		--service ph=https://svc.test --service-ca ph="$ca" --service-header ph="$TLS_DIR/ph.hdr" \
		--service-placeholder ph="$PH" \
		--service key=https://svc.test --service-ca key="$ca" --service-header key="$TLS_DIR/key.hdr" \
		--service-placeholder key="$PK" \
		--service hoststore=https://svc.test "${routes[@]}" \
		--service ip=https://198.18.7.4:$IP_PORT --service-ca ip="$ca" \
		--service ipwrong=https://198.18.7.4 --service-ca ipwrong="$ca" \
		--service reset=https://svc.test:$RESET_PORT --service-ca reset="$ca"
	net_broker proxy --mode proxy --upstream http://127.0.0.1:$UP_PORT --allow-private-networks \
		--service svc=https://svc.test --service-ca svc="$ca" --service-header svc="$TLS_DIR/svc.hdr" \
		--service ip=https://198.18.7.4:$IP_PORT --service-ca ip="$ca"
	export TLS_DIR SECRET PH PK
	SECRET=$(cat "$TLS_DIR/token")
}

# An origin named by its address: a certificate for IP:198.18.7.4 from
# the same CA, openssl s_server -WWW on port IP_PORT serving TLS_DIR/ipwww
# (file.txt). Returns once it says ACCEPT.
ip_origin() {
	local fd line
	tls_sign "$TLS_DIR" ca ip IP:198.18.7.4 "" ""
	mkdir "$TLS_DIR/ipwww"
	echo "sbx ip file" >"$TLS_DIR/ipwww/file.txt"
	mkfifo "$TLS_DIR/ip.ready"
	exec {fd}<>"$TLS_DIR/ip.ready"
	(cd "$TLS_DIR/ipwww" && exec ip netns exec "$NO" openssl s_server -WWW -accept "198.18.7.4:$IP_PORT" \
		-cert "$TLS_DIR/ip.pem" -key "$TLS_DIR/good.key") </dev/null >"$TLS_DIR/ip.ready" 2>/dev/null 3>&- &
	BG_PIDS+=($!)
	for _ in 1 2; do
		read -r -t 10 -u "$fd" line || return 1
		[ "$line" = ACCEPT ] && break
	done
	exec {fd}<&-
	[ "$line" = ACCEPT ]
}

# A service that completes the TLS handshake and then resets the
# connection (SO_LINGER 0) without reading the request: the broker's
# writes of a long request body then meet a reset connection.
reset_origin() {
	tls_listen "$NO" 198.18.7.4 "$RESET_PORT" "$TLS_DIR/reset.ready" '
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[3], sys.argv[4])
while True:
    c = s.accept()[0]
    try:
        t = ctx.wrap_socket(c, server_side=True)
        t.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        t.close()
    except (ssl.SSLError, OSError):
        c.close()
' "$TLS_DIR/good.pem" "$TLS_DIR/good.key"
}

# The upstream of --mode proxy: tinyproxy in "h" on 127.0.0.1:UP_PORT,
# each request it carries in NET_DIR/tinyproxy.log.
upstream_proxy() {
	cat >"$NET_DIR/tinyproxy.conf" <<-CONF
	Port $UP_PORT
	Listen 127.0.0.1
	Timeout 30
	MaxClients 50
	Allow 127.0.0.1
	LogFile "$NET_DIR/tinyproxy.log"
	LogLevel Connect
	CONF
	ip netns exec "$NH" tinyproxy -d -c "$NET_DIR/tinyproxy.conf" </dev/null >/dev/null 2>&1 3>&- &
	BG_PIDS+=($!)
	net_wait_port "$NH" 127.0.0.1 "$UP_PORT"
}

teardown_file() { tls_teardown_file; }

@test "proxy port: the service gets the route's prefix, Host and Authorization, never the sandbox's" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr nsh_user --workspace "$ws" --net "broker:$BSOCK" -- sh -c \
		'curl -sS -H "Authorization: Bearer sandbox" http://svc/file.txt
		curl -sS http://simple/sbxdemo/ | grep -o "sbxdemo-1.0-py3-none-any.whl" | sort -u
		curl -sS -o /dev/null -w "%{http_code} %{redirect_url}\n" http://svc/simple
		git clone -q http://svc/repo.git r && cat r/README
		curl -sS -H "Authorization: Basic c2FuZGJveA==" -H "x-route: sandbox" -H "X-Kept: yes" http://svc/echo'
	assert_equal "$stderr" ""
	assert_line --index 0 "sbx service file"
	assert_line --index 1 "sbxdemo-1.0-py3-none-any.whl"
	assert_line --index 2 "301 https://svc.test/simple/"
	assert_line --index 3 "seeded"
	assert_line "HTTP_AUTHORIZATION=Bearer $SECRET"
	assert_line "HTTP_HOST=svc.test"
	assert_line "HTTP_X_ROUTE=svc"
	assert_line "HTTP_X_KEPT=yes"
	refute_output --partial "c2FuZGJveA"
	refute_output --partial "sandbox"
}

@test "captured port 80 of a transparent sandbox: the route's name resolves and the same request goes out" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr nsh_user --workspace "$ws" --net "broker:$BSOCK,transparent" -- \
		curl -sS --noproxy '*' -H "Authorization: token sandbox" http://svc/file.txt
	assert_output "sbx service file"
	assert_equal "$stderr" ""
}

@test "bad certificates, TLS 1.0, an early close: 502 and one reason line; a stalled handshake: 504" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr nsh_user --workspace "$ws" --net "broker:$BSOCK" -- sh -c \
		'for r in expired self wrongname wrongca tls10 early hoststore stall; do
			curl -sS -D - -o /dev/null http://$r/ | tr -d "\r" | grep -E "^(HTTP|Sbx-Broker-Reason)"
		done'
	assert_output "HTTP/1.1 502 Bad Gateway
Sbx-Broker-Reason: service expired: TLS with 198.18.7.4: certificate verify failed: certificate has expired
HTTP/1.1 502 Bad Gateway
Sbx-Broker-Reason: service self: TLS with 198.18.7.4: certificate verify failed: self-signed certificate
HTTP/1.1 502 Bad Gateway
Sbx-Broker-Reason: service wrongname: TLS with 198.18.7.4: certificate verify failed: hostname mismatch
HTTP/1.1 502 Bad Gateway
Sbx-Broker-Reason: service wrongca: TLS with 198.18.7.4: certificate verify failed: unable to get local issuer certificate; a service with a private CA needs it named (--service-ca NAME=FILE)
HTTP/1.1 502 Bad Gateway
Sbx-Broker-Reason: service tls10: svc.test:4440 offers no TLS 1.2 or 1.3 (protocol version refused)
HTTP/1.1 502 Bad Gateway
Sbx-Broker-Reason: service early: TLS with 198.18.7.4: the service closed the connection
HTTP/1.1 502 Bad Gateway
Sbx-Broker-Reason: service hoststore: TLS with 198.18.7.4: certificate verify failed: unable to get local issuer certificate; a service with a private CA needs it named (--service-ca NAME=FILE)
HTTP/1.1 504 Gateway Timeout
Sbx-Broker-Reason: service stall: TLS handshake with 198.18.7.4 timed out (--max-wall-time)"
	run -0 grep -c "\"service\":\"stall\",\"path\":\"/\",\"host\":\"svc.test\",\"port\":$TLS_PORT_STALL,\"address\":\"198.18.7.4\",\"decision\":\"allowed\",\"status\":504" "$NET_DIR/main.err"
}

@test "a service that resets the connection while the request body goes out: 502, and the broker serves the next request" {
	local ws
	ws=$(ns_ws)
	head -c 900000 /dev/zero >"$ws/body"
	run -0 --separate-stderr nsh_user --workspace "$ws" --net "broker:$BSOCK" -- sh -c \
		'for i in 1 2 3; do
			curl -sS -D - -o /dev/null --data-binary @body http://reset/ | tr -d "\r" | grep -E "^HTTP"
		done
		curl -sS http://ip/file.txt'
	assert_line --index 0 "HTTP/1.1 502 Bad Gateway"
	assert_line --index 3 "sbx ip file"
	# A write to a connection whose reset was already reported raises
	# SIGPIPE unless it is ignored: the broker ignores it, so such a write
	# is an error of one connection, never the end of the broker.
	run -0 kill -0 "$(cat "$NET_DIR/main.pid")"
	run -0 sed -n 's/^SigIgn:[[:space:]]*//p' "/proc/$(cat "$NET_DIR/main.pid")/status"
	assert_equal "$(( 0x$output & 0x1000 ))" 4096
}

@test "a route to an address: the certificate's IP address is checked, a certificate for a name is a 502" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr nsh_user --workspace "$ws" --net "broker:$BSOCK" -- sh -c \
		'curl -sS http://ip/file.txt
		curl -sS -D - -o /dev/null http://ipwrong/ | tr -d "\r" | grep -E "^(HTTP|Sbx-Broker-Reason)"'
	assert_output "sbx ip file
HTTP/1.1 502 Bad Gateway
Sbx-Broker-Reason: service ipwrong: TLS with 198.18.7.4: certificate verify failed: IP address mismatch"
	assert_equal "$stderr" ""
}

@test "--mode proxy: a route's TLS runs inside the upstream's CONNECT to the checked address" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr nsh_user --workspace "$ws" --net "broker:$NET_DIR/proxy.sock" -- sh -c \
		'curl -sS http://svc/echo | grep -E "^HTTP_(AUTHORIZATION|HOST)="
		curl -sS http://ip/file.txt'
	assert_output "HTTP_AUTHORIZATION=Bearer $SECRET
HTTP_HOST=svc.test
sbx ip file"
	assert_equal "$stderr" ""
	run -0 grep -Eo "CONNECT 198\.18\.7\.4:(443|$IP_PORT) HTTP/1\.1" "$NET_DIR/tinyproxy.log"
	assert_output "CONNECT 198.18.7.4:443 HTTP/1.1
CONNECT 198.18.7.4:$IP_PORT HTTP/1.1"
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
		"curl -sS http://svc/file.txt; curl -sS -D - http://expired/ | tr -d '\r'; env; cat /proc/*/environ /proc/*/cmdline 2>/dev/null | tr '\0' '\n'
		s=${SECRET%-*}; grep -rsl \"\$s-${SECRET##*-}\" /etc /tmp /run /home /dev/shm \"\$HOME\" .; cat '$TLS_DIR/svc.hdr' 2>&1; echo done"
	assert_line "sbx service file"
	assert_line "done"
	refute_output --partial "$SECRET"
	refute_output --partial "Bearer"
	run -1 grep -c "$SECRET" "$NET_DIR/main.err"
	run -0 grep -c '"service":"svc"' "$NET_DIR/main.err"
	# Nor in what the broker's process shows: its command line names the file.
	run -1 grep -ac "$SECRET" "/proc/$(cat "$NET_DIR/main.pid")/cmdline" "/proc/$(cat "$NET_DIR/main.pid")/environ"
}

@test "--service-method and --service-path: the route's other methods 405, other paths 403, before any dial" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr nsh_user --workspace "$ws" --net "broker:$BSOCK" -- sh -c \
		'for a in "-X POST http://simple/sbxdemo/" "http://simple/file.txt" "--path-as-is http://simple/sbxdemo/../file.txt" \
			"http://simple/sbxdemo/%2e%2e/file.txt" "-I http://simple/sbxdemo/"; do
			curl -sS -D - -o /dev/null $a | tr -d "\r" | grep -E "^(HTTP|Sbx-Broker-Reason)"
		done'
	assert_output "HTTP/1.1 405 Method Not Allowed
Sbx-Broker-Reason: service simple: method POST not allowed on this route (--service-method)
HTTP/1.1 403 Forbidden
Sbx-Broker-Reason: service simple: path not allowed on this route (--service-path)
HTTP/1.1 403 Forbidden
Sbx-Broker-Reason: service simple: path not allowed on this route (--service-path)
HTTP/1.1 403 Forbidden
Sbx-Broker-Reason: service simple: path not allowed on this route (--service-path)
HTTP/1.1 200 OK"
}

@test "--service-placeholder: refused with a reason on every other host and route" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr nsh_user --workspace "$ws" --setenv PH="$PH" --net "broker:$BSOCK" -- sh -c \
		'for a in "http://origin.test/?t=$PH" "-H X-T:$PH http://svc/file.txt" "-H Authorization:$PH http://key/file.txt" \
			"--proxy-header X-T:$PH https://origin.test/" "https://$PH.test/"; do
			curl -sS -D - -o /dev/null $a 2>/dev/null | tr -d "\r" | grep -E "^(HTTP|Sbx-Broker-Reason)"
		done'
	assert_output "HTTP/1.1 403 Forbidden
Sbx-Broker-Reason: service ph: its placeholder in a request for origin.test refused: it is swapped only on http://ph/
HTTP/1.1 403 Forbidden
Sbx-Broker-Reason: service ph: its placeholder in a request for svc refused: it is swapped only on http://ph/
HTTP/1.1 403 Forbidden
Sbx-Broker-Reason: service ph: its placeholder in a request for key refused: it is swapped only on http://ph/
HTTP/1.1 403 Forbidden
Sbx-Broker-Reason: service ph: its placeholder in a CONNECT for origin.test refused: it is swapped only on http://ph/
HTTP/1.1 403 Forbidden
Sbx-Broker-Reason: service ph: its placeholder in a CONNECT for $PH.test refused: it is swapped only on http://ph/"
	run -0 grep -c "its placeholder in a CONNECT for origin.test refused" "$NET_DIR/main.err"
}

# The origin's log lines (TLS_DIR/o/access.log) so far.
origin_lines() { wc -l <"$TLS_DIR/o/access.log"; }

@test "--service-placeholder: as its route's credential field's whole value or token after a scheme, the route's line goes out" {
	local py="$SBX_ROOT/tests/broker-ph.py" f
	for f in "Authorization: $PH" "Authorization: Bearer $PH" "authorization:  token $PH	" "AUTHORIZATION: Basic $PH"; do
		run -0 "$PY" "$py" req "$BSOCK" GET http://ph/echo "" "Host: ph" "$f"
		assert_line --index 0 "HTTP/1.1 200 OK"
		assert_line "HTTP_AUTHORIZATION=Bearer $SECRET"
		refute_output --partial "$PH"
	done
	# The field is the one the route's header file names: X-Api-Key goes
	# out as the file has it (the origin, which wants Authorization,
	# answers 401 itself); Authorization is another field there.
	run -0 "$PY" "$py" req "$BSOCK" GET http://key/file.txt "" "Host: key" "X-Api-Key: $PK"
	assert_output "HTTP/1.1 401 Unauthorized"
	run -0 "$PY" "$py" req "$BSOCK" GET http://key/file.txt "" "Host: key" "Authorization: Bearer $PK"
	assert_output "HTTP/1.1 403 Forbidden
Sbx-Broker-Reason: service key: its placeholder in a field other than X-Api-Key refused: it is swapped only as the whole value of X-Api-Key or as its token after a scheme"
}

@test "--service-placeholder: anywhere else on its own route it is refused, 403, one line naming route and host, nothing sent" {
	local py="$SBX_ROOT/tests/broker-ph.py" before n=0 tab=$'\t' crlf=$'\r\n' ph_up=${PH^^}
	before=$(origin_lines)
	# own_refused WHERE METHOD TARGET BODY FIELD...: 403 and the reason.
	own_refused() {
		local where=$1
		shift
		run -0 "$PY" "$py" req "$BSOCK" "$@"
		assert_output "HTTP/1.1 403 Forbidden
Sbx-Broker-Reason: service ph: its placeholder $where refused: it is swapped only as the whole value of Authorization or as its token after a scheme"
		n=$((n + 1))
	}
	local other="in a field other than Authorization" beside="in Authorization beside other text"
	local f
	for f in "Origin: $PH" "Origin: http://evil.test/$PH" "Cookie: a=1; s=$PH" "Referer: http://evil.test/?$PH" \
		"X-Forwarded-Host: evil.test/?$PH" "X-$PH: 1" "$PH: 1" "Authorization-$PH: 1" "Accept: */*$tab$PH" \
		"Proxy-Authorization: Bearer $PH" "Connection: close, $PH"; do
		own_refused "$other" GET http://ph/echo "" "Host: ph" "$f"
		own_refused "$other" GET http://ph/echo "" "Host: ph" "Authorization: Bearer $PH" "$f"
	done
	own_refused "in a repeated Authorization field" GET http://ph/echo "" "Host: ph" "Authorization: Bearer $PH" \
		"Authorization: Bearer $PH"
	own_refused "in a repeated Authorization field" GET http://ph/echo "" "Host: ph" "Authorization: Bearer $PH" \
		"AUTHORIZATION: other"
	own_refused "in a repeated Authorization field" GET http://ph/echo "" "Host: ph" "authorization: other" \
		"Authorization: $PH"
	for f in "Bearer $PH x" "x$PH" "${PH}x" "$PH$PH" "$PH $PH" "$PH Bearer" "Bearer  $PH" "Bearer$tab$PH" \
		"Bearer, $PH" "Bearer=$PH" "a b $PH" "Bearer ${PH:0:5} $PH"; do
		own_refused "$beside" GET http://ph/echo "" "Host: ph" "Authorization: $f"
	done
	for f in "http://ph/echo?t=$PH" "http://ph/$PH" "http://ph/echo?$PH=1"; do
		own_refused "in the request target" GET "$f" "" "Host: ph" "Authorization: Bearer $PH"
	done
	own_refused "in a request body" POST http://ph/echo "t=$PH" "Host: ph" "Authorization: Bearer $PH"
	own_refused "in a request body" POST http://ph/echo "t=$PH" "Host: ph"
	# A folded line is no field: the parser refuses it before any of this.
	for f in "Authorization: Bearer$crlf $PH" "X-A: 1$crlf$tab$PH" "Authorization:$crlf $PH"; do
		run -0 "$PY" "$py" req "$BSOCK" GET http://ph/echo "" "Host: ph" "$f"
		assert_output "HTTP/1.1 400 Bad Request
Sbx-Broker-Reason: obsolete line folding"
	done
	# What is not the placeholder (its letters in another case) is
	# nobody's: it goes out as it is, and the origin sees no token.
	run -0 "$PY" "$py" req "$BSOCK" GET http://ph/echo "" "Host: ph" "Origin: $ph_up" "Authorization: Bearer $PH"
	assert_line --index 0 "HTTP/1.1 200 OK"
	assert_line "HTTP_ORIGIN=$ph_up"
	assert_line "HTTP_AUTHORIZATION=Bearer $SECRET"
	# That request is the origin's only one since: the refused ones never
	# reached it (nginx logs each before it serves the next).
	wait_for "[ \$(origin_lines) -eq $((before + 1)) ]"
	run -0 tail -n 1 "$TLS_DIR/o/access.log"
	assert_output --partial '"GET /echo HTTP/1.1" 200'
	run -0 grep -c "\"service\":\"ph\",\"host\":\"ph\",\"port\":80,.*\"decision\":\"refused\",\"status\":403,\"reason\":\"service ph: its placeholder in .* refused: it is swapped only as the whole value of Authorization or as its token after a scheme\"" "$NET_DIR/main.err"
	assert_output "$n"
	run -1 sh -c 'grep "\"host\":\"ph\"" "$1" | grep -c -e "$2" -e "$3"' sh "$NET_DIR/main.err" "$PH" "$SECRET"
	assert_output 0
}

@test "--service-placeholder: a service that reflects Origin and X-Forwarded-Host never sees or returns the token" {
	local ws mode np want
	ws=$(ns_ws)
	want="HTTP/1.1 403 Forbidden
Sbx-Broker-Reason: service ph: its placeholder in a field other than Authorization refused: it is swapped only as the whole value of Authorization or as its token after a scheme"
	# Through the proxy port, then a captured port 80 (curl told to ask
	# ph directly).
	for mode in "-q broker:$BSOCK" "--noproxy@ph broker:$BSOCK,transparent"; do
		np=${mode% *}
		run -0 --separate-stderr nsh_user --workspace "$ws" --setenv PH="$PH" --setenv PHU="${PH^^}" \
			--setenv NP="${np/@/ }" --net "${mode#* }" -- sh -c \
			'for h in "Origin: $PH" "Origin: http://evil.test/$PH" "X-Forwarded-Host: evil.test/?$PH" \
				"X-Forwarded-Host: $PH" "Referer: http://evil.test/$PH" "Cookie: s=$PH"; do
				curl $NP -sS -D - -o /dev/null -H "Authorization: Bearer $PH" -H "$h" http://ph/reflect
			done
			curl $NP -sS -D - -o /dev/null -H "Authorization: Bearer $PH" -H "Origin: http://sandbox.test" \
				-H "X-Forwarded-Host: sandbox.test" http://ph/reflect
			curl $NP -sS -D - -o /dev/null -H "Authorization: $PH" -H "Origin: $PHU" -H "X-Forwarded-Host: $PHU" \
				http://ph/reflect' </dev/null
		# sbx-ns says what was refused, as the broker tells it.
		assert_equal "$stderr" "sbx-ns: note: the broker refused 6 connections: ph:80: ${want#*Reason: } (6)"
		run -0 grep -E "^(HTTP|Sbx-Broker-Reason|Location|Access-Control-Allow-Origin)" <<<"${output//$'\r'/}"
		assert_output "$want
$want
$want
$want
$want
$want
HTTP/1.1 302 Moved Temporarily
Location: https://sandbox.test/next
Access-Control-Allow-Origin: http://sandbox.test
HTTP/1.1 302 Moved Temporarily
Location: https://${PH^^}/next
Access-Control-Allow-Origin: ${PH^^}"
	done
	# The origin saw those two requests of each run and nothing else.
	wait_for "[ \$(wc -l <'$TLS_DIR/o/reflect.log') -eq 4 ]"
	run -0 cat "$TLS_DIR/o/reflect.log"
	assert_output "/reflect origin=http://sandbox.test xfh=sandbox.test
/reflect origin=${PH^^} xfh=${PH^^}
/reflect origin=http://sandbox.test xfh=sandbox.test
/reflect origin=${PH^^} xfh=${PH^^}"
}

@test "--service-placeholder: a ClientHello that carries it (name or ALPN) ends the tunnel with an alert and a line" {
	local py="$SBX_ROOT/tests/broker-ph.py"
	run -0 "$PY" "$py" hello "$BSOCK" origin.test origin.test "x-$PH"
	assert_output "HTTP/1.1 200 Connection established
TLSV1_ALERT_ACCESS_DENIED"
	run -0 "$PY" "$py" hello "$BSOCK" origin.test "$PH.test" h2
	assert_output "HTTP/1.1 200 Connection established
TLSV1_ALERT_ACCESS_DENIED"
	run -0 grep -c '"host":"origin.test","port":443,.*"reason":"service ph: its placeholder in the ClientHello for origin.test refused: it is swapped only on http://ph/"' "$NET_DIR/main.err"
	assert_output 2
	# A hello without it still passes.
	run -0 "$PY" "$py" hello "$BSOCK" origin.test origin.test h2
	assert_output "HTTP/1.1 200 Connection established
handshake done"
	run -1 sh -c 'grep "in the ClientHello" "$1" | grep -c "$2"' sh "$NET_DIR/main.err" "$PH"
	assert_output 0
}

@test "--service-placeholder: a request body is searched, split across writes or not, its own route's too" {
	local py="$SBX_ROOT/tests/broker-ph.py" fd line half=${PH:0:7} ws
	mkfifo "$TLS_DIR/rec.ev"
	exec {fd}<>"$TLS_DIR/rec.ev"
	ip netns exec "$NO" "$PY" "$py" record 198.18.7.2 8090 "$TLS_DIR/rec" </dev/null >"$TLS_DIR/rec.ev" 2>/dev/null 3>&- &
	echo $! >>"$NET_DIR/pids"
	read -r -t 30 -u "$fd" line
	assert_equal "$line" ready
	net_broker phb --allow-host origin.test --allow-private-networks --allow-port 8090 \
		--service ph=https://svc.test --service-ca ph="$TLS_DIR/ca.pem" --service-header ph="$TLS_DIR/ph.hdr" \
		--service-placeholder ph="$PH"
	local s="$NET_DIR/phb.sock" u=http://origin.test:8090/up
	# In the bytes that came with the head: refused before any dial.
	run -0 "$PY" "$py" post "$s" "$u" "a=$PH&b=1" "" "$TLS_DIR/rec.ev"
	assert_output "HTTP/1.1 403 Forbidden
Sbx-Broker-Reason: service ph: its placeholder in a request body for origin.test refused: it is swapped only on http://ph/"
	# Split across two writes, the second after the origin has the head:
	# refused, and the origin (its record N) never gets the first half.
	split_refused() {
		run -0 "$PY" "$py" post "$s" "$u" "$2" "$3" "$TLS_DIR/rec.ev"
		assert_output "HTTP/1.1 403 Forbidden
Sbx-Broker-Reason: service ph: its placeholder in a request body for origin.test refused: it is swapped only on http://ph/"
		read -r -t 30 -u "$fd" line
		assert_equal "${line% *}" "done $1"
		run -1 grep -c "$half" "$TLS_DIR/rec.$1"
	}
	split_refused 1 "a=$half" "${PH:7}&b=1"
	# Split after 100000 bytes that went out, read by read: the same.
	split_refused 2 "@100000a=$half" "${PH:7}"
	# A body without it arrives whole, what was held back included.
	run -0 "$PY" "$py" post "$s" "$u" @100000 @70001 "$TLS_DIR/rec.ev"
	assert_output "HTTP/1.1 200 OK"
	read -r -t 30 -u "$fd" line
	assert_equal "${line% *}" "done 3"
	run -0 sh -c 'tail -c 170002 "$1" | tr -d x | wc -c' sh "$TLS_DIR/rec.3"
	assert_output 1
	assert_equal "$(head -c 4 "$TLS_DIR/rec.3")" POST
	# A chunked request body is refused before anything is read of it.
	run -0 sh -c 'printf "POST http://origin.test:8090/ HTTP/1.1\r\nHost: origin.test:8090\r\nTransfer-Encoding: chunked\r\n\r\n7\r\n%s\r\n0\r\n\r\n" "$1" |
		"$2" -c "import socket,sys; c=socket.socket(socket.AF_UNIX); c.connect(sys.argv[1]); c.sendall(sys.stdin.buffer.read()); print(c.recv(4096).split(b\"\r\n\")[0].decode())" "$3"' \
		sh "$PH" "$PY" "$s"
	assert_output "HTTP/1.1 400 Bad Request"
	run -0 grep -c "\"decision\":\"refused\",.*\"reason\":\"service ph: its placeholder in a request body for origin.test refused: it is swapped only on http://ph/\"" "$NET_DIR/phb.err"
	assert_output 3
	run -1 grep -c "$PH" "$NET_DIR/phb.err"
	# Its own route's body, and another route's: refused the same way,
	# with the head or after 100000 bytes read by read.
	ws=$(ns_ws)
	printf 't=%s' "$PH" >"$ws/short"
	{ head -c 100000 /dev/zero; printf '%s' "$PH"; } >"$ws/long"
	run -0 --separate-stderr nsh_user --workspace "$ws" --net "broker:$BSOCK" -- sh -c \
		'for a in "short http://ph/echo" "long http://ph/echo" "short http://svc/echo" "long http://svc/echo"; do
			curl -sS -D - -o /dev/null --data-binary @${a% *} ${a#* } | tr -d "\r" | grep -E "^(HTTP|Sbx-Broker-Reason)"
		done'
	local own="HTTP/1.1 403 Forbidden
Sbx-Broker-Reason: service ph: its placeholder in a request body refused: it is swapped only as the whole value of Authorization or as its token after a scheme"
	local other="HTTP/1.1 403 Forbidden
Sbx-Broker-Reason: service ph: its placeholder in a request body for svc refused: it is swapped only on http://ph/"
	assert_output "$own
$own
$other
$other"
}

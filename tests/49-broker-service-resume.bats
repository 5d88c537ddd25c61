#!/usr/bin/env bats
# sbx-broker --service resumes TLS sessions within one route, never across
# routes: an nginx origin of its own on 198.18.7.5 logs, per request, the
# SNI it was asked for and whether the session was resumed
# ($ssl_session_reused: "r" or "."), on 443 (TLS 1.3, tickets after the
# handshake) and on 4443 (TLS 1.2 only, the session at its end).

load helpers
load ns-net
load tlsorigin
bats_require_minimum_version 1.5.0

setup_file() {
	tls_setup_file 198.18.7.5
	local o="$TLS_DIR/o" d="$TLS_DIR" s port name proto cert
	mkdir -p -m 0700 "$o"
	{
		tls_nginx_head "$o" 64
		printf '\tlog_format reuse %s;\n' "'\$server_port \$ssl_server_name \$ssl_session_reused \$status'"
		printf '\taccess_log %s reuse;\n' "$o/access.log"
		# PORT:NAME:PROTOCOL:CERTIFICATE
		for s in 443:svc.test:TLSv1.3:good 443:wrong.test:TLSv1.3:wrong 4443:svc.test:TLSv1.2:good; do
			IFS=: read -r port name proto cert <<<"$s"
			printf '\tserver { listen 198.18.7.5:%s ssl; server_name %s; ssl_protocols %s;' "$port" "$name" "$proto"
			printf ' ssl_certificate %s.pem; ssl_certificate_key %s.key; location / { return 200 "ok\\n"; } }\n' "$d/$cert" "$d/$cert"
		done
		echo "}"
	} >"$o/nginx.conf"
	tls_nginx "$NO" "$o"
	tls_keep
	net_wait_port "$NO" 198.18.7.5 443
	net_wait_port "$NO" 198.18.7.5 4443
	printf '198.18.7.5 svc.test\n198.18.7.5 wrong.test\n' >>"$NET_DIR/hosts"
	# The CA of route "moved" is a file of its own, replaced once the
	# broker runs.
	cp "$TLS_DIR/ca.pem" "$TLS_DIR/moved.pem"
	chmod 0644 "$TLS_DIR/moved.pem"
	local ca="$TLS_DIR/ca.pem"
	net_main_broker --service a=https://svc.test --service-ca a="$ca" \
		--service b=https://svc.test --service-ca b="$TLS_DIR/other-ca.pem" \
		--service n=https://wrong.test --service-ca n="$ca" \
		--service t12=https://svc.test:4443 --service-ca t12="$ca" \
		--service moved=https://svc.test --service-ca moved="$TLS_DIR/moved.pem"
	export TLS_DIR
}

teardown_file() { tls_teardown_file; }

# req ROUTE...: one GET of http://ROUTE/ each from a sandbox; status lines.
req() {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr nsh_user --workspace "$ws" --net "broker:$BSOCK" -- sh -c \
		'for r in "$@"; do curl -sS -o /dev/null -w "%{http_code}\n" http://$r/; done' sh "$@"
	assert_equal "$stderr" ""
}

# The origin's last N log lines.
log_tail() { tail -n "$1" "$TLS_DIR/o/access.log"; }

@test "a route's second connection resumes the first one's session: TLS 1.3 tickets and TLS 1.2" {
	req a a t12 t12
	assert_output "200
200
200
200"
	run -0 log_tail 4
	assert_output "443 svc.test . 200
443 svc.test r 200
4443 svc.test . 200
4443 svc.test r 200"
}

@test "another CA for the same service is another route: its own full handshake, which fails" {
	req a b a
	assert_output "200
502
200"
	# A session of route a offered by route b would have let b through
	# without its CA's verdict; the origin saw a only.
	run -0 log_tail 2
	assert_output "443 svc.test r 200
443 svc.test r 200"
	run -0 --separate-stderr nsh_user --workspace "$(ns_ws)" --net "broker:$BSOCK" -- \
		curl -sS -D - -o /dev/null http://b/
	run -0 grep -E "^(HTTP|Sbx-Broker-Reason)" <<<"${output//$'\r'/}"
	assert_output "HTTP/1.1 502 Bad Gateway
Sbx-Broker-Reason: service b: TLS with 198.18.7.5: certificate verify failed: unable to get local issuer certificate; a service with a private CA needs it named (--service-ca NAME=FILE)"
}

@test "another host name on the same address: a full handshake of its own, then its own resumption" {
	# (The origin would not take a svc.test session for wrong.test either:
	# the strict proof that no route offers another's is the CA case.)
	req a n n
	assert_output "200
200
200"
	run -0 log_tail 3
	assert_output "443 svc.test r 200
443 wrong.test . 200
443 wrong.test r 200"
}

@test "the CA is read at start: a CA file replaced later counts from the broker's next start" {
	req moved
	cp "$TLS_DIR/other-ca.pem" "$TLS_DIR/moved.pem"
	req moved moved
	assert_output "200
200"
	run -0 log_tail 3
	assert_output "443 svc.test . 200
443 svc.test r 200
443 svc.test r 200"
}

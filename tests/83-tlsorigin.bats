#!/usr/bin/env bats
# The TLS origins of tests/tlsorigin.bash, reached without sbx: curl, git,
# pip and openssl s_client in namespace "h" go straight to svc.test
# (198.18.7.4 in "o") with the test CA, so that what the service-route
# suites see through the broker is the origin's own doing and not the
# fixture's.

load helpers
load ns-net
load tlsorigin
bats_require_minimum_version 1.5.0

setup_file() {
	tls_setup_file 198.18.7.4
	tls_origin "$NO" 198.18.7.4 svc.test "$TLS_DIR" "$(cat "$TLS_DIR/token")" sbxuser:sbxpass
	tls_bad "$NO" 198.18.7.4 "$TLS_DIR"
	printf '198.18.7.4 svc.test\n' >"$TLS_DIR/hosts"
	tls_keep
	export TLS_DIR CA="$TLS_DIR/ca.pem"
}

teardown_file() { tls_teardown_file; }

teardown() { bg_end; }

# hc CMD...: CMD in "h" with svc.test in its /etc/hosts.
hc() {
	tls_in "$NH" "$TLS_DIR/hosts" "$@"
}

# The header of the token, in a file curl and git read (-H @FILE,
# http.extraHeader from the environment of a config file).
auth_file() {
	printf 'Authorization: Bearer %s\n' "$(cat "$TLS_DIR/token")" >"$BATS_TEST_TMPDIR/auth"
	chmod 0600 "$BATS_TEST_TMPDIR/auth"
}

@test "the static file: 200 with the bearer token, 401 without it or with another; /basic/ by user and password" {
	auth_file
	run -0 --separate-stderr hc curl -sS --cacert "$CA" -H @"$BATS_TEST_TMPDIR/auth" https://svc.test/file.txt
	assert_output "sbx service file"
	assert_equal "$stderr" ""
	run -0 --separate-stderr hc curl -sS -o /dev/null -w '%{http_code}\n' --cacert "$CA" https://svc.test/file.txt
	assert_output 401
	run -0 --separate-stderr hc curl -sS -o /dev/null -w '%{http_code}\n' --cacert "$CA" \
		-H "Authorization: Bearer sbxtok-other" https://svc.test/file.txt
	assert_output 401
	run -0 --separate-stderr hc curl -sS --cacert "$CA" -u sbxuser:sbxpass https://svc.test/basic/file.txt
	assert_output "sbx service file"
	run -0 --separate-stderr hc curl -sS -o /dev/null -w '%{http_code}\n' --cacert "$CA" -u sbxuser:other \
		https://svc.test/basic/file.txt
	assert_output 401
	run -0 --separate-stderr hc curl -sS -o /dev/null -w '%{http_code}\n' --cacert "$CA" \
		-H @"$BATS_TEST_TMPDIR/auth" https://svc.test/basic/file.txt
	assert_output 401
}

@test "TLS 1.2 and 1.3 are spoken, 1.1 refused; SNI and the name check pass with the test CA" {
	local v
	for v in tls1_2 tls1_3; do
		run -0 --separate-stderr hc openssl s_client -"$v" -verify_return_error -CAfile "$CA" \
			-servername svc.test -verify_hostname svc.test -connect svc.test:443 </dev/null
		assert_line "Verification: OK"
		assert_line "Verified peername: svc.test"
		assert_line --regexp "^New, TLSv1\\.${v#tls1_}, Cipher is "
	done
	run -1 --separate-stderr hc openssl s_client -tls1_1 -cipher DEFAULT:@SECLEVEL=0 -CAfile "$CA" \
		-servername svc.test -connect svc.test:443 </dev/null
	assert_line "New, (NONE), Cipher is (NONE)"
}

@test "git smart HTTP: clone and push with the token, refused without it" {
	local d
	auth_file
	d="$BATS_TEST_TMPDIR"
	run -0 --separate-stderr hc env GIT_SSL_CAINFO="$CA" GIT_TERMINAL_PROMPT=0 HOME="$d" \
		git -c http.extraHeader="$(cat "$d/auth")" clone -q https://svc.test/repo.git "$d/clone"
	assert_equal "$stderr" ""
	run -0 cat "$d/clone/README"
	assert_output seeded
	echo pushed >"$d/clone/new"
	git -C "$d/clone" add new
	git -C "$d/clone" -c user.name=sbx -c user.email=sbx@test commit -q -m "from the test"
	run -0 --separate-stderr hc env GIT_SSL_CAINFO="$CA" GIT_TERMINAL_PROMPT=0 HOME="$d" \
		git -C "$d/clone" -c http.extraHeader="$(cat "$d/auth")" push -q origin main
	assert_equal "$stderr" ""
	run -0 git -C "$TLS_DIR/o/git/repo.git" log --format=%s main
	assert_output "from the test
seed"
	run -128 --separate-stderr hc env GIT_SSL_CAINFO="$CA" GIT_TERMINAL_PROMPT=0 HOME="$d" \
		git clone -q https://svc.test/repo.git "$d/clone2"
	assert_equal "$stderr" "fatal: could not read Username for 'https://svc.test': terminal prompts disabled"
}

@test "the PEP 503 index: pip installs the wheel in a venv, user and password in the index URL" {
	local d="$BATS_TEST_TMPDIR"
	python3 -m venv "$d/venv"
	run -0 --separate-stderr hc env HOME="$d" PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
		"$d/venv/bin/pip" install -q --cert "$CA" --index-url https://sbxuser:sbxpass@svc.test/basic/simple/ sbxdemo
	assert_equal "$stderr" ""
	run -0 "$d/venv/bin/python" -c 'import sbxdemo; print(sbxdemo.hello())'
	assert_output "sbxdemo 1.0"
	run -0 --separate-stderr hc curl -sS --cacert "$CA" -u sbxuser:sbxpass https://svc.test/basic/simple/
	assert_output --partial '<a href="sbxdemo/">sbxdemo</a>'
}

@test "/echo answers the request's headers, the token among them (the documented exception)" {
	local t
	auth_file
	t=$(cat "$TLS_DIR/token")
	run -0 --separate-stderr hc curl -sS --cacert "$CA" -H @"$BATS_TEST_TMPDIR/auth" -H "X-Sbx: one" \
		-A sbx-test https://svc.test/echo
	assert_output "HTTP_ACCEPT=*/*
HTTP_AUTHORIZATION=Bearer $t
HTTP_HOST=svc.test
HTTP_USER_AGENT=sbx-test
HTTP_X_SBX=one"
	run -0 --separate-stderr hc curl -sS -o /dev/null -w '%{http_code}\n' --cacert "$CA" https://svc.test/echo
	assert_output 401
}

@test "bad certificates: expired, self-signed, another name, another CA each fail curl's check, and serve to a client that does not check" {
	local p want
	for p in "$TLS_PORT_EXPIRED:SSL certificate problem: certificate has expired" \
		"$TLS_PORT_SELF:SSL certificate problem: self-signed certificate" \
		"$TLS_PORT_WRONG:SSL: no alternative certificate subject name matches target host name 'svc.test'" \
		"$TLS_PORT_OTHERCA:SSL certificate problem: unable to get local issuer certificate"; do
		want="curl: (60) ${p#*:}
More details here: https://curl.se/docs/sslcerts.html

curl failed to verify the legitimacy of the server and therefore could not
establish a secure connection to it. To learn more about this situation and
how to fix it, please visit the web page mentioned above."
		run -60 --separate-stderr hc curl -sS --cacert "$CA" "https://svc.test:${p%%:*}/"
		assert_output ""
		assert_equal "$stderr" "$want"
		run -0 --separate-stderr hc curl -sS -k "https://svc.test:${p%%:*}/"
		assert_output bad
	done
}

@test "bad servers: TLS 1.0 only (shown by openssl at security level 0, refused by curl), a stalled handshake, a close after accept" {
	run -0 --separate-stderr hc openssl s_client -tls1 -cipher DEFAULT:@SECLEVEL=0 -connect "svc.test:$TLS_PORT_TLS1" </dev/null
	assert_line "    Protocol  : TLSv1"
	run -35 --separate-stderr hc curl -sS --cacert "$CA" "https://svc.test:$TLS_PORT_TLS1/"
	assert_equal "$stderr" "curl: (35) OpenSSL/3.0.19: error:0A00014D:SSL routines::legacy sigalg disallowed or unsupported"
	run -35 --separate-stderr hc curl -sS --cacert "$CA" "https://svc.test:$TLS_PORT_CLOSE/"
	assert_equal "$stderr" "curl: (35) OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to svc.test:$TLS_PORT_CLOSE"
	run -0 cat "$TLS_DIR/close.log"
	assert_output --regexp "^closed after [0-9]+ bytes\$"
	# The stall: the connection stands, the handshake never ends: curl
	# counts it in its connect time, which its own limit ends.
	run -28 --separate-stderr hc curl -sS --cacert "$CA" --max-time 1 "https://svc.test:$TLS_PORT_STALL/"
	assert_regex "$stderr" "^curl: \\(28\\) Connection timed out after 10[0-9][0-9] milliseconds\$"
}

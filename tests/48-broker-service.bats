#!/usr/bin/env bats
# sbx-broker --service, --service-header, --service-ca: every bad value
# refused at start with one line that never carries a header's value; a
# good set starts. Nothing here opens a network connection (the TLS
# routes themselves: tests/49-broker-service-tls.bats).

load helpers
bats_require_minimum_version 1.5.0

setup() {
	sbx_test_user
	D=$(mktemp -d /tmp/sbxsv.XXXXXX)
	printf 'Authorization: Bearer sbx-secret-52d1\n' > "$D/h"
	chmod 0600 "$D/h"
	S=(--listen "$D/s" --service svc=https://svc.test/base)
}

teardown() {
	[ -z "${BPID:-}" ] || kill "$BPID" 2>/dev/null || :
	rm -rf "$D"
}

usage() { # EXPECTED-MESSAGE ARGS...
	local msg=$1
	shift
	run -100 --separate-stderr sbx-broker "$@"
	assert_equal "$stderr" "sbx-broker: usage: $msg"
	assert_output ""
}

# header LINES... then the refusal for that file: never its values.
header() { # EXPECTED-MESSAGE printf-FORMAT [ARGS]
	local msg=$1
	shift
	# shellcheck disable=SC2059
	printf "$@" > "$D/bad"
	chmod 0600 "$D/bad"
	usage "--service-header: svc: $D/bad $msg" "${S[@]}" --service-header "svc=$D/bad"
	[[ $stderr != *secret* ]]
}

@test "--service: empty, control characters, no NAME=" {
	usage "--service: invalid value '': empty" --service ''
	usage "--service: invalid value: control character" --service $'svc=https://a\n'
	usage "--service: invalid value 'svc': not NAME=..." --service svc
	usage "--service: invalid value 'svc=': nothing after =" --service svc=
}

@test "--service: the route's name is a lower-case DNS label" {
	usage "--service: invalid route name in '=https://a': 1 to 63 characters" --service =https://a
	local long
	long=$(printf 'a%.0s' $(seq 64))
	usage "--service: invalid route name in '$long=https://a': 1 to 63 characters" --service "$long=https://a"
	usage "--service: invalid route name in 'Svc=https://a': only a-z, 0-9 and -" --service Svc=https://a
	usage "--service: invalid route name in 'svc.test=https://a': only a-z, 0-9 and -" --service svc.test=https://a
	usage "--service: invalid route name in '-svc=https://a': - at an end" --service -svc=https://a
}

@test "--service: only https, no credentials, query or fragment, a valid host (an address in dotted decimal) and port" {
	usage "--service: invalid URL 'http://a': only https://HOST[:PORT][/PREFIX] (the broker speaks TLS to the service)" \
		--service svc=http://a
	usage "--service: invalid URL 'https://u:p@a': no credentials, query or fragment (credentials go in --service-header)" \
		--service svc=https://u:p@a
	usage "--service: invalid URL 'https://a/?x': no credentials, query or fragment (credentials go in --service-header)" \
		--service 'svc=https://a/?x'
	usage "--service: invalid host in 'https://a..b/': empty label" --service svc=https://a..b/
	usage "--service: invalid host in 'https://:443': empty name" --service svc=https://:443
	usage "--service: invalid URL 'https://[::1/': unclosed [" --service 'svc=https://[::1/'
	usage "--service: invalid URL 'https://[nope]/': invalid IPv6 address" --service 'svc=https://[nope]/'
	# An address only in dotted decimal (tests/49 routes to 198.18.7.4).
	usage "--service: invalid host in 'https://127.1': IP literals not allowed" --service svc=https://127.1
	usage "--service: invalid host in 'https://0x7f000001/': IP literals not allowed" --service svc=https://0x7f000001/
	usage "--service: invalid host in 'https://01.2.3.4': IP literals not allowed" --service svc=https://01.2.3.4
	usage "--service: port: invalid number '0': zero not allowed" --service svc=https://a:0
	usage "--service: port: invalid number '65536': too large" --service svc=https://a:65536
	usage "--service: port: invalid number '-1': negative" --service svc=https://a:-1
	usage "--service: invalid port in 'https://a:/x'" --service svc=https://a:/x
}

@test "--service: the prefix is a plain path" {
	usage "--service: invalid URL 'https://a/x/../y': the prefix has an empty or .. segment" --service svc=https://a/x/../y
	usage "--service: invalid URL 'https://a/x//y': the prefix has an empty or .. segment" --service svc=https://a/x//y
	usage "--service: invalid URL 'https://a/x y': the prefix has a character a path cannot carry" --service 'svc=https://a/x y'
}

@test "--service: a route twice, a route that is an allowed name, more than 32 routes" {
	usage "--service: route svc given twice" "${S[@]}" --service svc=https://b
	usage "--service: route svc is also an allowed host (--allow-host): a name is either a route or a host; rename the route" \
		"${S[@]}" --allow-host svc
	usage "--service: route svc is also an --allow-tcp name; rename the route" "${S[@]}" --allow-tcp svc:22
	local a=() i
	for i in $(seq 1 33); do a+=(--service "r$i=https://a"); done
	usage "--service: more than 32 routes" "${a[@]}"
}

@test "--service-header and --service-ca: relative, twice, for no route" {
	usage "--service-header: invalid path 'h': not absolute" "${S[@]}" --service-header svc=h
	usage "--service-ca: invalid value 'svc=': nothing after =" "${S[@]}" --service-ca svc=
	usage "--service-header: route svc given twice" "${S[@]}" --service-header "svc=$D/h" --service-header "svc=$D/h"
	usage "--service-header: other is no route (--service other=https://...)" "${S[@]}" --service-header "other=$D/h"
	usage "--service-ca: other is no route (--service other=https://...)" "${S[@]}" --service-ca "other=$D/h"
}

@test "--service-header: a symlink, not a regular file, open to others, someone else's" {
	ln -s "$D/h" "$D/link"
	usage "--service-header: svc: $D/link is unsafe: a symlink; name the file itself" "${S[@]}" --service-header "svc=$D/link"
	usage "--service-header: svc: $D is unsafe: not a regular file" "${S[@]}" --service-header "svc=$D"
	chmod 0640 "$D/h"
	usage "--service-header: svc: $D/h is unsafe: mode 0640 gives group or others access; chmod 600 it" \
		"${S[@]}" --service-header "svc=$D/h"
	chmod 0600 "$D/h"
	chown "$SBX_TEST_UID" "$D/h"
	usage "--service-header: svc: $D/h is unsafe: owned by uid $SBX_TEST_UID (not root or the caller); chown it" \
		"${S[@]}" --service-header "svc=$D/h"
}

@test "--service-header: its lines, refused by number, their values never said" {
	header "is empty" ''
	header "is larger than 8192 bytes" "X-Big: %08193d\n" 0
	header "line 2 is empty" 'Authorization: secret\n\nX: y\n'
	header "line 2 is not Name: value" 'Authorization: secret\nno colon secret\n'
	header "line 1: invalid field name" 'Bad Name: secret\n'
	header "line 1: Host is the broker's to write" 'Host: secret\n'
	header "line 1: Connection is the broker's to write" 'Connection: secret\n'
	header "line 1: content-length is the broker's to write" 'content-length: 1\n'
	header "line 2: authorization given twice" 'Authorization: secret\nauthorization: secret2\n'
	header "line 1: empty value" 'Authorization:   \n'
	header "line 1: control character in the value" 'Authorization: sec\001ret\n'
	local i
	{ for i in $(seq 1 33); do echo "X-$i: v"; done; } > "$D/many"
	chmod 0600 "$D/many"
	usage "--service-header: svc: $D/many has more than 32 lines" "${S[@]}" --service-header "svc=$D/many"
}

@test "--service-ca: a symlink, no certificate in it" {
	echo junk > "$D/ca.pem"
	ln -s "$D/ca.pem" "$D/calink"
	usage "--service-ca: svc: $D/calink is a symlink; name the file itself" "${S[@]}" --service-ca "svc=$D/calink"
	usage "--service-ca: svc: $D/ca.pem holds no PEM certificate" "${S[@]}" --service-ca "svc=$D/ca.pem"
}

@test "a route alone is a configuration: the broker starts, and a pin may name its service" {
	local fd
	mkfifo "$D/ready"
	exec {fd}<>"$D/ready"
	sbx-broker "${S[@]}" --service-header "svc=$D/h" --resolve svc.test=192.0.2.1 --ready-fd 3 \
		3>"$D/ready" 2>"$D/log" &
	BPID=$!
	read -r -t 10 -u "$fd" _
	exec {fd}<&-
	[ -S "$D/s" ]
	run -1 grep -c secret "$D/log"
}

@test "--service-method: empty, lower case, CONNECT, twice, more than 8, for no route" {
	usage "--service-method: invalid value 'svc=': not NAME=..." "${S[@]}" --service-method svc=
	usage "--service-method: invalid value: control character" "${S[@]}" --service-method $'svc=GET\t'
	usage "--service-method: svc: invalid method 'get' (upper case letters)" "${S[@]}" --service-method svc=get
	usage "--service-method: svc: an empty or over-long method" "${S[@]}" --service-method svc=GET,,HEAD
	usage "--service-method: svc: an empty method" "${S[@]}" --service-method svc=GET,
	usage "--service-method: svc: CONNECT is never a route's" "${S[@]}" --service-method svc=GET,CONNECT
	usage "--service-method: svc: GET given twice" "${S[@]}" --service-method svc=GET,GET
	usage "--service-method: svc given twice (list the methods in one, comma-separated)" "${S[@]}" \
		--service-method svc=GET --service-method svc=HEAD
	usage "--service-method: svc: more than 8 methods" "${S[@]}" --service-method svc=A,B,C,D,E,F,G,H,I
	usage "--service-method: other is no route (--service other=https://...)" "${S[@]}" --service-method other=GET
}

@test "--service-path: relative, encoded, dot segments, twice" {
	usage "--service-path: svc: 'simple/' does not start with /" "${S[@]}" --service-path svc=simple/
	usage "--service-path: svc: '/a%2f' has %, ?, #, \\ or a space" "${S[@]}" --service-path svc=/a%2f
	usage "--service-path: svc: '/a?b' has %, ?, #, \\ or a space" "${S[@]}" --service-path 'svc=/a?b'
	usage "--service-path: svc: '/a/../b' has an empty, . or .. segment" "${S[@]}" --service-path svc=/a/../b
	usage "--service-path: svc: '//a' has an empty, . or .. segment" "${S[@]}" --service-path svc=//a
	usage "--service-path: svc: '/a/' given twice" "${S[@]}" --service-path svc=/a/ --service-path svc=/a/
}

@test "--service-placeholder: its shape, one header line to stand for, no overlap, never echoed" {
	local P=sbx-placeholder-1
	usage "--service-placeholder: invalid value '(hidden)': not NAME=..." "${S[@]}" --service-placeholder "$P"
	usage "--service-placeholder: svc: 8 to 128 characters" "${S[@]}" --service-header "svc=$D/h" \
		--service-placeholder svc=short
	usage "--service-placeholder: svc: only A-Z, a-z, 0-9 and -._~" "${S[@]}" --service-header "svc=$D/h" \
		--service-placeholder 'svc=sbx placeholder'
	usage "--service-placeholder: svc: the route needs --service-header with exactly one line, whose value the placeholder stands for" \
		"${S[@]}" --service-placeholder "svc=$P"
	usage "--service-placeholder: svc given twice" "${S[@]}" --service-header "svc=$D/h" \
		--service-placeholder "svc=$P" --service-placeholder "svc=${P}2"
	usage "--service-placeholder: svc: the placeholder is part of the real value" "${S[@]}" \
		--service-header "svc=$D/h" --service-placeholder svc=secret-52d1
	cp "$D/h" "$D/h2"
	usage "--service-placeholder: two: overlaps the placeholder of svc" "${S[@]}" --service-header "svc=$D/h" \
		--service-placeholder "svc=$P" --service two=https://b --service-header "two=$D/h2" \
		--service-placeholder "two=${P}x"
}

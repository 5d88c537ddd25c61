#!/usr/bin/env bats
# Sandboxes that share one sbx-broker: one cannot starve another through
# the broker's resolver, and none learns from the broker what another
# resolved. Real sbx-ns sandboxes (--net broker) in namespace "h", the
# brokers there too, resolving through a DNS server on 127.0.0.1:53 in "h"
# (tests/slow-dns.py) that holds names under held.test until the test
# releases them; origins on 198.18.7.2 in "o".

load helpers
load ns-net
bats_require_minimum_version 1.5.0

setup_file() {
	net_setup_file
	# The brokers' resolver waits 30 s for an answer: a held name stays
	# unanswered for as long as a test needs, never failed by a timeout.
	printf 'nameserver 127.0.0.1\noptions timeout:30 attempts:1\n' > "$NET_DIR/resolv.conf"
	local fd rc=0
	mkfifo "$NET_DIR/dns.ready"
	exec {fd}<>"$NET_DIR/dns.ready"
	ip netns exec "$NH" "$PY" "$BATS_TEST_DIRNAME/slow-dns.py" 127.0.0.1 198.18.7.2 "$NET_DIR/dns.log" \
		"$NET_DIR/dns.ready" </dev/null >/dev/null 2>>"$NET_DIR/dns.err" 3>&- &
	echo $! >> "$NET_DIR/pids"
	read -r -t 10 -u "$fd" _ || rc=$?
	exec {fd}<&-
	[ "$rc" = 0 ]
	net_broker fair --allow-host origin.test --allow-host '*.held.test' --allow-host pinned.test \
		--resolve pinned.test=198.18.7.2 --allow-private-networks --max-sandbox-lookups 8
	net_broker tp --allow-host origin.test --allow-host '*.wild.test' --allow-private-networks
	# Its CLOCK_MONOTONIC stands still (tests/progs/clock-set.c): every
	# answer it keeps is kept for the whole file.
	echo 0 > "$NET_DIR/clock.now"
	BROKER_WRAP="$SBX_TESTBIN/clock-set $NET_DIR/clock.now" net_broker kept --allow-host '*.held.test' \
		--allow-host '*.quick.test' --allow-private-networks --max-sandbox-lookups 4
}

teardown() {
	rm -f "$NET_DIR/dns.log.release"
	[ -z "${HOLD_FD:-}" ] || exec {HOLD_FD}>&-
}

# The names under held.test the DNS server was asked, one each, whose
# first label starts with $1.
held() { grep -o "^QUERY $1[0-9]*\.held\.test " "$NET_DIR/dns.log" 2>/dev/null | sort -u | wc -l; }
# Lines of broker $1's log holding $2.
logged() { grep -cF -- "$2" "$NET_DIR/$1.err" || :; }

# sandbox NAME SCRIPT: a sandbox of broker "fair" in the background, its
# (or of --net $NET), its stdin a fifo this test holds open ($HOLD_FD: a line, or its end, moves
# the script on), its output in $NET_DIR/NAME.out and NAME.err.
sandbox() {
	local ws
	ws=$(ns_ws)
	rm -f "$NET_DIR/$1.fifo"
	mkfifo "$NET_DIR/$1.fifo"
	exec {HOLD_FD}<>"$NET_DIR/$1.fifo"
	nsh_user --workspace "$ws" --net "${NET:-broker:$NET_DIR/fair.sock}" -- sh -c "$2" \
		<"$NET_DIR/$1.fifo" >"$NET_DIR/$1.out" 2>"$NET_DIR/$1.err" {HOLD_FD}>&- &
	echo $! > "$NET_DIR/$1.pid"
}

@test "a sandbox flooding the resolver starves no other; its own pinned name is answered; the excess over --max-sandbox-lookups is refused" {
	local refusal="this sandbox's lookup limit reached (--max-sandbox-lookups)" before
	before=$(logged fair "$refusal")
	# A: 20 names the DNS server holds, at once; then, when told, a pinned
	# name, while its own 8 lookups are still pending.
	sandbox a 'for i in $(seq 1 20); do curl -sS -o /dev/null -w "%{http_code}\n" http://n$i.held.test/ & done
		read x; curl -sS http://pinned.test/; wait'
	# Every one of A's 20 requests is in: 8 pending, 12 refused at once.
	wait_for "[ \$(logged fair \"\$refusal\") -eq $((before + 12)) ] && [ \$(held n) -ge 4 ]"
	# B, another sandbox, while A's lookups hold their workers.
	run -0 --separate-stderr nsh_user --workspace "$(ns_ws)" --net "broker:$NET_DIR/fair.sock" -- \
		curl -sS http://origin.test/
	assert_output "hello"
	assert_equal "$stderr" ""
	# A's pinned name needs no worker and waits behind none of A's lookups.
	echo go >&"$HOLD_FD"
	wait_for "grep -qx hello \"\$NET_DIR/a.out\""
	# No sandbox has more than 4 lookups with the resolver's workers; none
	# of A's has been answered.
	assert_equal "$(held n)" 4
	[ ! -e "$NET_DIR/dns.log.release" ]
	touch "$NET_DIR/dns.log.release"
	wait "$(cat "$NET_DIR/a.pid")"
	run -0 sort "$NET_DIR/a.out"
	assert_output "$(printf '200\n%.0s' 1 2 3 4 5 6 7 8; printf '503\n%.0s' 1 2 3 4 5 6 7 8 9 10 11 12; echo hello)"
	assert_equal "$(held n)" 8
	run -0 cat "$NET_DIR/a.err"
	[[ $output == "sbx-ns: note: the broker refused 12 connections: n"*".held.test:80: $refusal (1); "* ]]
	run -0 grep -c "\"host\":\"n[0-9]*.held.test\",\"port\":80,\"address\":null,\"decision\":\"refused\",\"status\":503,\"reason\":\"$refusal\"" "$NET_DIR/fair.err"
	assert_output 12
}

@test "twelve sandboxes flooding the resolver: each has 4 names resolved at once, all together 32 beyond their first, and another sandbox still gets a thread" {
	local i ws
	# Each floods 5 held names: 4 with workers, 1 waiting.
	for i in $(seq 1 12); do
		ws=$(ns_ws)
		nsh_user --workspace "$ws" --net "broker:$NET_DIR/fair.sock" -- sh -c \
			"for j in 1 2 3 4 5; do curl -sS -o /dev/null -w '%{http_code}\\n' http://f$i-\$j.held.test/ & done; wait" \
			</dev/null >"$NET_DIR/f$i.out" 2>&1 &
		echo $! > "$NET_DIR/f$i.pid"
	done
	# 12 first lookups and 32 more: 44 names held.
	wait_for "[ \$(grep -o '^QUERY f[0-9]*-[0-9]\.held\.test ' \"\$NET_DIR/dns.log\" | sort -u | wc -l) -ge 44 ]"
	run -0 --separate-stderr nsh_user --workspace "$(ns_ws)" --net "broker:$NET_DIR/fair.sock" -- \
		curl -sS http://origin.test/
	assert_output "hello"
	assert_equal "$stderr" ""
	run -0 sh -c "grep -o '^QUERY f[0-9]*-[0-9]\.held\.test ' '$NET_DIR/dns.log' | sort -u | wc -l"
	assert_output 44
	# No sandbox had more than 4.
	run -0 sh -c "grep -o '^QUERY f[0-9]*-' '$NET_DIR/dns.log' | sort | uniq -c | awk '\$1 > 8' | wc -l"
	assert_output 0
	touch "$NET_DIR/dns.log.release"
	for i in $(seq 1 12); do
		wait "$(cat "$NET_DIR/f$i.pid")"
		assert_equal "$(sort "$NET_DIR/f$i.out" | uniq -c | tr -s ' ')" " 5 200"
	done
}

@test "a sandbox that ends with lookups pending: the broker lets go of them, drops their late answers and serves the next" {
	local before
	sandbox e 'for i in $(seq 1 6); do curl -sS http://e$i.held.test/ & done; read x; exit 0'
	wait_for "[ \$(held e) -ge 4 ]"
	before=$(logged fair '"state":"detached"')
	exec {HOLD_FD}>&-
	wait "$(cat "$NET_DIR/e.pid")"
	wait_for "[ \$(logged fair '\"state\":\"detached\"') -gt $before ]"
	# The answers come after the sandbox is gone: nothing uses them.
	touch "$NET_DIR/dns.log.release"
	run -0 --separate-stderr nsh_user --workspace "$(ns_ws)" --net "broker:$NET_DIR/fair.sock" -- sh -c '
		curl -sS http://origin.test/; curl -sS http://e1.held.test/'
	assert_output "hello
hello"
	kill -0 "$(cat "$NET_DIR/fair.pid")"
	run -0 grep -c '"host":"e[1-6].held.test","port":80,"address":null,"decision":"refused","status":null,"reason":"the sandbox ended"' "$NET_DIR/fair.err"
	assert_output 6
}

@test "each sandbox draws synthetic addresses from its own counter: B's first does not depend on how many names A resolved" {
	local first
	run -0 --separate-stderr nsh_user --workspace "$(ns_ws)" --net "broker:$NET_DIR/tp.sock,transparent" -- \
		getent ahostsv4 origin.test
	first=${lines[0]%% *}
	assert_equal "$first" 240.0.0.1
	# A, still running while B resolves: 50 names, n1.wild.test first.
	NET=broker:$NET_DIR/tp.sock,transparent sandbox w 'for i in $(seq 1 50); do getent ahostsv4 n$i.wild.test | sed -n 1p; done | cut -d" " -f1 | sort -u | wc -l
		read x; getent ahostsv4 n1.wild.test | sed -n 1p | cut -d" " -f1'
	wait_for "[ \"\$(cat \"\$NET_DIR/w.out\")\" = 50 ]"
	run -0 --separate-stderr nsh_user --workspace "$(ns_ws)" --net "broker:$NET_DIR/tp.sock,transparent" -- sh -c '
		getent ahostsv4 origin.test | sed -n 1p | cut -d" " -f1; curl -sS --noproxy "*" http://origin.test/'
	# The same address as when no other sandbox had resolved anything, and
	# in B it names B's name (in A it is n1.wild.test's).
	assert_output "$first
hello"
	assert_equal "$stderr" ""
	echo go >&"$HOLD_FD"
	wait "$(cat "$NET_DIR/w.pid")"
	assert_equal "$(cat "$NET_DIR/w.out")" "50
240.0.0.1"
}

@test "an answer kept from this second serves its own sandbox without a worker, even at its lookup limit, and never another sandbox" {
	# A: a name the DNS server answers at once (kept), then 4 names it
	# holds (A's limit), then, when told, the first name again and a fifth
	# held one.
	NET=broker:$NET_DIR/kept.sock sandbox k 'curl -sS http://k.quick.test/
		for i in 1 2 3 4; do curl -sS -o /dev/null -w "%{http_code}\n" http://c$i.held.test/ & done
		read x; curl -sS http://k.quick.test/; curl -sS -o /dev/null -w "%{http_code}\n" http://c5.held.test/; wait'
	wait_for "[ \$(held c) -eq 4 ] && grep -qx hello \"\$NET_DIR/k.out\""
	echo go >&"$HOLD_FD"
	wait_for "[ \$(grep -c . \"\$NET_DIR/k.out\") -eq 3 ]"
	run -0 cat "$NET_DIR/k.out"
	assert_output "hello
hello
503"
	# B asks for the same name in the same second: its own lookup.
	run -0 --separate-stderr nsh_user --workspace "$(ns_ws)" --net "broker:$NET_DIR/kept.sock" -- curl -sS http://k.quick.test/
	assert_output "hello"
	run -0 grep -c "^QUERY k.quick.test 1$" "$NET_DIR/dns.log"
	assert_output 2
	touch "$NET_DIR/dns.log.release"
	wait "$(cat "$NET_DIR/k.pid")" || :
	run -0 sort "$NET_DIR/k.out"
	assert_output "200
200
200
200
503
hello
hello"
}

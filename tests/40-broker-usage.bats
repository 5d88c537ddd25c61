#!/usr/bin/env bats
# sbx-broker's command line: every option's bad values, the options it
# refuses on principle, and how it starts (path, inherited fd, systemd
# socket activation). Nothing here opens a network connection.

load helpers
bats_require_minimum_version 1.5.0

setup() {
	PY3=$(command -v /usr/bin/python3 || command -v python3)
	D=$(mktemp -d /tmp/sbxbu.XXXXXX)
	H=(--allow-host origin.test)
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

@test "--help prints the synopsis of the man page" {
	run -0 --separate-stderr sbx-broker --help
	assert_line --index 0 "usage: sbx-broker --listen PATH [OPTION]..."
	assert_line --index 1 "       sbx-broker --listen-fd FD [OPTION]..."
	assert_line --index 2 "       sbx-broker --listen-tcp ADDR:PORT [OPTION]..."
	assert_equal "$stderr" ""
	man_synopsis=$(sed -n '/^\.SH SYNOPSIS/,/^\.SH/p' "$SBX_ROOT/man/sbx-broker.1" | grep -v '^\.' | tr -s ' \n' ' ')
	help=$(sbx-broker --help | head -3 | sed 's/^usage: //' | tr -s ' \n' ' ')
	assert_equal "$help" "$man_synopsis"
}

@test "no arguments is a usage error" { usage "--mode allowlist needs at least one --allow-host"; }
@test "a listener is required" { usage "missing --listen, --listen-fd or --listen-tcp (or socket activation)" "${H[@]}"; }
@test "an operand is refused: the broker runs no program" { usage "unexpected operand 'true' (sbx-broker runs no program)" "${H[@]}" true; }
@test "an unknown option is refused" { usage "unknown option --bogus" --bogus; }
@test "a short option is refused" { usage "unknown option -l (options are long: --name)" -l x; }
@test "--listen empty" { usage "--listen: invalid path '': empty" --listen ''; }
@test "--listen relative" { usage "--listen: invalid path 'b.sock': not absolute" --listen b.sock; }
@test "--listen too long for sun_path" {
	p=/tmp/$(printf 'x%.0s' $(seq 120))
	usage "--listen: '$p' is too long for a socket path" --listen "$p"
}
@test "--listen twice" { usage "--listen given twice" --listen /tmp/a --listen /tmp/b; }
@test "--listen on an existing file fails and leaves it alone" {
	echo keep > "$D/s"
	run -111 --separate-stderr sbx-broker "${H[@]}" --listen "$D/s"
	assert_equal "$stderr" "sbx-broker: fatal: unable to listen on $D/s: it exists and is a regular file, not a socket; remove it or choose another path"
	assert_equal "$(cat "$D/s")" "keep"
	mkdir "$D/d"; mkfifo "$D/p"
	run -111 --separate-stderr sbx-broker "${H[@]}" --listen "$D/d"
	assert_equal "$stderr" "sbx-broker: fatal: unable to listen on $D/d: it exists and is a directory, not a socket; remove it or choose another path"
	run -111 --separate-stderr sbx-broker "${H[@]}" --listen "$D/p"
	assert_equal "$stderr" "sbx-broker: fatal: unable to listen on $D/p: it exists and is a fifo, not a socket; remove it or choose another path"
	[ -d "$D/d" ] && [ -p "$D/p" ]
}
@test "--listen through a symlink fails, also when it points to a stale socket" {
	echo keep > "$D/f"
	ln -s "$D/f" "$D/l"
	run -111 --separate-stderr sbx-broker "${H[@]}" --listen "$D/l"
	assert_equal "$stderr" "sbx-broker: fatal: unable to listen on $D/l: it exists and is a symlink, not a socket; remove it or choose another path"
	assert_equal "$(cat "$D/f")" "keep"
	"$PY3" -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$D/stale"
	ln -s "$D/stale" "$D/l2"
	run -111 --separate-stderr sbx-broker "${H[@]}" --listen "$D/l2"
	assert_equal "$stderr" "sbx-broker: fatal: unable to listen on $D/l2: it exists and is a symlink, not a socket; remove it or choose another path"
	[ -S "$D/stale" ] && [ -L "$D/l2" ]
}

# start_broker ARGS...: a broker on $D/s, ready; its pid in BPID.
start_broker() {
	rm -f "$D/ready"
	mkfifo "$D/ready"
	exec {rfd}<>"$D/ready"
	sbx-broker "${H[@]}" --listen "$D/s" --ready-fd 3 --log-fd 4 "$@" 3>"$D/ready" 4>>"$D/log" 2>"$D/err" &
	BPID=$!
	read -r -t 10 -u "$rfd" _
	exec {rfd}<&-
}

# The first line a connection to $D/s gets for a CONNECT to b.test.
ask() {
	"$PY3" -c '
import socket, sys
c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1])
c.sendall(b"CONNECT b.test:443 HTTP/1.1\r\n\r\n")
print(c.recv(200).split(b"\r\n")[0].decode())' "$D/s"
}

@test "a stale socket (nobody listens on it) is replaced, with a warning" {
	"$PY3" -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$D/s"
	start_broker
	run -0 ask
	assert_output "HTTP/1.1 403 Forbidden"
	assert_equal "$(cat "$D/err")" "sbx-broker: warning: replaced the stale socket $D/s (nothing listened on it)"
	assert_equal "$(ls -A "$D" | grep -c stale)" 0
}
@test "two brokers started at once on a stale socket: one replaces it and serves, the other refuses, nothing is left aside" {
	local a b
	"$PY3" -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$D/s"
	mkfifo "$D/ra" "$D/rb"
	exec {fa}<>"$D/ra" {fb}<>"$D/rb"
	sbx-broker "${H[@]}" --listen "$D/s" --ready-fd 3 --log-fd 4 3>"$D/ra" 4>/dev/null 2>"$D/ea" &
	a=$!
	sbx-broker "${H[@]}" --listen "$D/s" --ready-fd 3 --log-fd 4 3>"$D/rb" 4>/dev/null 2>"$D/eb" &
	b=$!
	# The loser exits (111); then the winner's ready line.
	wait -n "$a" "$b" || :
	if kill -0 "$a" 2>/dev/null; then read -r -t 10 -u "$fa" _; else read -r -t 10 -u "$fb" _; fi
	exec {fa}<&- {fb}<&-
	run -0 ask
	assert_output "HTTP/1.1 403 Forbidden"
	run -0 sh -c 'cat "$1/ea" "$1/eb" | sort' sh "$D"
	assert_output "sbx-broker: fatal: unable to listen on $D/s: a process listens there already (another broker?); stop it or choose another path
sbx-broker: warning: replaced the stale socket $D/s (nothing listened on it)"
	assert_equal "$(ls -A "$D" | grep -c stale)" 0
	kill "$a" "$b" 2>/dev/null || :
	wait "$a" "$b" 2>/dev/null || :
}
@test "a socket a broker listens on is not replaced: the second broker fails and the first keeps serving" {
	start_broker
	first=$BPID
	run -111 --separate-stderr sbx-broker "${H[@]}" --listen "$D/s"
	assert_equal "$stderr" "sbx-broker: fatal: unable to listen on $D/s: a process listens there already (another broker?); stop it or choose another path"
	run -0 ask
	assert_output "HTTP/1.1 403 Forbidden"
	run -0 kill -0 "$first"
}
@test "a socket the broker's user may not connect to is left alone" {
	sbx_test_user
	chmod 0777 "$D"
	"$PY3" -c 'import os,socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0); s.listen(1); print(1)' "$D/s" &
	wait $!
	run -111 --separate-stderr as_user sbx-broker "${H[@]}" --listen "$D/s"
	assert_equal "$stderr" "sbx-broker: fatal: unable to listen on $D/s: a socket is there and could not be checked for a listener: Permission denied"
	[ -S "$D/s" ]
}
@test "--socket-mode and --socket-group set the socket's permissions before anyone can connect" {
	sbx_test_user
	start_broker --socket-mode 0660 --socket-group "$SBX_TEST_GID"
	assert_equal "$(stat -c '%a %g' "$D/s")" "660 $SBX_TEST_GID"
	kill "$BPID"; wait "$BPID" || :
	start_broker --socket-mode 600
	assert_equal "$(stat -c '%a %u' "$D/s")" "600 0"
	chmod 0755 "$D"
	run -0 as_user "$PY3" -c '
import socket, sys
try:
    socket.socket(socket.AF_UNIX).connect(sys.argv[1])
except OSError as e:
    print(e.strerror)' "$D/s"
	assert_output "Permission denied"
}
@test "--socket-group to a group the broker's user is not in fails with the reason" {
	sbx_test_user
	chmod 0777 "$D"
	run -111 --separate-stderr as_user sbx-broker "${H[@]}" --listen "$D/s" --socket-group 0
	assert_equal "$stderr" "sbx-broker: fatal: unable to give $D/s to group 0 (--socket-group: the broker's user must be a member): Operation not permitted"
}
@test "--socket-mode bad values" {
	usage "--socket-mode: invalid mode '': empty" "${H[@]}" --listen /tmp/x --socket-mode ''
	usage "--socket-mode: invalid mode 'rw': not an octal number like 0660" "${H[@]}" --listen /tmp/x --socket-mode rw
	usage "--socket-mode: invalid mode '0680': not an octal number like 0660" "${H[@]}" --listen /tmp/x --socket-mode 0680
	usage "--socket-mode: invalid mode '-660': not an octal number like 0660" "${H[@]}" --listen /tmp/x --socket-mode -660
	usage "--socket-mode: invalid mode '4777': permission bits only (at most 0777)" "${H[@]}" --listen /tmp/x --socket-mode 4777
	usage "--socket-mode: invalid mode '00660': more than 4 octal digits" "${H[@]}" --listen /tmp/x --socket-mode 00660
	usage "--socket-mode given twice" "${H[@]}" --listen /tmp/x --socket-mode 660 --socket-mode 600
	usage "--socket-mode needs --listen PATH (a socket passed in belongs to whoever made it)" "${H[@]}" --socket-mode 660
}
@test "--socket-group bad values" {
	usage "--socket-group: invalid group '': empty" "${H[@]}" --listen /tmp/x --socket-group ''
	usage "--socket-group: unknown group 'no-such-group'" "${H[@]}" --listen /tmp/x --socket-group no-such-group
	usage "--socket-group: invalid group: control character or ':' in the name" "${H[@]}" --listen /tmp/x --socket-group $'a\nb'
	usage "--socket-group: invalid group '5x': not a number or a name" "${H[@]}" --listen /tmp/x --socket-group 5x
	usage "--socket-group given twice" "${H[@]}" --listen /tmp/x --socket-group 0 --socket-group 0
	usage "--socket-group needs --listen PATH (a socket passed in belongs to whoever made it)" "${H[@]}" --socket-group 0
}
@test "--resolve bad values" {
	usage "--resolve: empty (NAME=ADDR)" "${H[@]}" --resolve ''
	usage "--resolve: 'a.test' is not NAME=ADDR" "${H[@]}" --resolve a.test
	usage "--resolve: invalid name '': empty name" "${H[@]}" --resolve =10.0.0.1
	usage "--resolve: invalid address '' for origin.test: empty address" "${H[@]}" --resolve origin.test=
	usage "--resolve: invalid address '10.0.0.256' for origin.test: not an IPv4 or IPv6 address" "${H[@]}" --resolve origin.test=10.0.0.256
	usage "--resolve: invalid address '[::1]' for origin.test: not an IPv4 or IPv6 address" "${H[@]}" --resolve 'origin.test=[::1]'
	usage "--resolve: invalid name '*.origin.test': a wildcard cannot be pinned" "${H[@]}" --resolve '*.origin.test=10.0.0.1'
	usage "--resolve: invalid name '10.0.0.1': IP literals not allowed" "${H[@]}" --resolve 10.0.0.1=10.0.0.1
	usage "--resolve: origin.test=10.0.0.1 given twice" "${H[@]}" --resolve origin.test=10.0.0.1 --resolve ORIGIN.test.=10.0.0.1
	usage "--resolve: other.test is not on the allowlist (--allow-host): its pin would never be used" "${H[@]}" --resolve other.test=10.0.0.1
}
@test "--resolve-file bad files" {
	printf '10.0.0.1 origin.test\n\n# c\n10.0.0.2\n' > "$D/h1"
	usage "--resolve-file: $D/h1 line 4: an address without a name" "${H[@]}" --resolve-file "$D/h1"
	printf '10.0.0.x origin.test\n' > "$D/h2"
	usage "--resolve-file: $D/h2 line 1: invalid address '10.0.0.x' for origin.test: not an IPv4 or IPv6 address" "${H[@]}" --resolve-file "$D/h2"
	printf '10.0.0.1 origin.test\001\n' > "$D/h3"
	usage "--resolve-file: $D/h3 line 1: control character" "${H[@]}" --resolve-file "$D/h3"
	printf '10.0.0.1 origin.test\n10.0.0.1 origin.test\n' > "$D/h4"
	usage "--resolve-file: $D/h4 line 2: origin.test=10.0.0.1 given twice" "${H[@]}" --resolve-file "$D/h4"
	usage "--resolve-file: invalid path '': empty" "${H[@]}" --resolve-file ''
	run -111 --separate-stderr sbx-broker "${H[@]}" --resolve-file "$D/none" --listen "$D/s"
	assert_equal "$stderr" "sbx-broker: fatal: unable to read $D/none (--resolve-file): No such file or directory"
}
@test "--deny-address bad values" {
	usage "--deny-address: invalid range '': empty" "${H[@]}" --deny-address ''
	usage "--deny-address: invalid range 'x': not an address" "${H[@]}" --deny-address x
	usage "--deny-address: invalid range '10.0.0.0/33': prefix longer than 32" "${H[@]}" --deny-address 10.0.0.0/33
	usage "--deny-address: invalid range 'fd00::/129': prefix longer than 128" "${H[@]}" --deny-address fd00::/129
	usage "--deny-address: invalid range '10.0.0.0/': prefix length missing" "${H[@]}" --deny-address 10.0.0.0/
	usage "--deny-address: invalid range '10.0.0.0/8x': invalid prefix length" "${H[@]}" --deny-address 10.0.0.0/8x
	usage "--deny-address: invalid range '10.0.0.0/-1': invalid prefix length" "${H[@]}" --deny-address 10.0.0.0/-1
	usage "--deny-address: invalid range '10.0.0.0/08': leading zero in the prefix length" "${H[@]}" --deny-address 10.0.0.0/08
	usage "--deny-address: invalid range '10.1.0.0/8': host bits set after the prefix" "${H[@]}" --deny-address 10.1.0.0/8
	usage "--deny-address: invalid range '/8': not an address" "${H[@]}" --deny-address /8
	usage "--deny-address: invalid range '::ffff:10.0.0.0/104': an IPv4-mapped range: give it in IPv4 form" "${H[@]}" --deny-address ::ffff:10.0.0.0/104
	usage "--deny-address: 10.0.0.0/8 given twice" "${H[@]}" --deny-address 10.0.0.0/8 --deny-address 10.0.0.0/8
	usage "--deny-address: 192.0.2.7/32 given twice" "${H[@]}" --deny-address 192.0.2.7 --deny-address 192.0.2.7/32
	usage "--deny-address: fd00::/8 given twice" "${H[@]}" --deny-address fd00::/8 --deny-address FD00:0::/8
}
@test "--listen in a missing directory fails and says to create it" {
	run -111 --separate-stderr sbx-broker "${H[@]}" --listen "$D/no/s"
	assert_equal "$stderr" "sbx-broker: fatal: unable to bind $D/no/s: $D/no does not exist; create it first (mkdir -p $D/no)"
}
@test "--listen where an unprivileged user cannot write fails" {
	sbx_test_user
	chmod 0755 "$D"
	run -111 --separate-stderr as_user sbx-broker "${H[@]}" --listen "$D/s"
	assert_equal "$stderr" "sbx-broker: fatal: unable to bind $D/s: Permission denied; choose a directory the broker's user may write"
}
@test "--listen-tcp: only a loopback address and a port" {
	local form='(127.0.0.1:PORT or [::1]:PORT)'
	usage "--listen-tcp: invalid address '': empty $form" "${H[@]}" --listen-tcp ''
	usage "--listen-tcp: invalid address '127.0.0.1': port missing $form" "${H[@]}" --listen-tcp 127.0.0.1
	usage "--listen-tcp: invalid address '[::1]': port missing $form" "${H[@]}" --listen-tcp '[::1]'
	usage "--listen-tcp: invalid address ':3128': address missing $form" "${H[@]}" --listen-tcp :3128
	usage "--listen-tcp: port: invalid number '0': zero not allowed" "${H[@]}" --listen-tcp 127.0.0.1:0
	usage "--listen-tcp: port: invalid number '65536': too large" "${H[@]}" --listen-tcp 127.0.0.1:65536
	usage "--listen-tcp: port: invalid number '-1': negative" "${H[@]}" --listen-tcp 127.0.0.1:-1
	usage "--listen-tcp: port: invalid number '3128x': trailing garbage" "${H[@]}" --listen-tcp '[::1]:3128x'
	usage "--listen-tcp: invalid address 'localhost:3128': not an IP address $form" "${H[@]}" --listen-tcp localhost:3128
	usage "--listen-tcp: invalid address '127.0.0.1\x0a:3128': not an IP address $form" "${H[@]}" --listen-tcp $'127.0.0.1\n:3128'
	local a
	for a in 198.18.0.1:3128 0.0.0.0:3128 '[::]:3128' '[::ffff:127.0.0.1]:3128' '[fe80::1]:3128'; do
		usage "--listen-tcp: invalid address '$a': not a loopback address (a port there would be open to other machines)" \
			"${H[@]}" --listen-tcp "$a"
	done
	usage "--listen-tcp given twice" "${H[@]}" --listen-tcp 127.0.0.1:3128 --listen-tcp 127.0.0.1:3129
}

@test "--listen-tcp alone and beside --listen: both answer; a port taken is refused" {
	# In a network namespace of its own: nothing here reaches the host's loopback.
	mkfifo "$D/ready"
	run -0 --separate-stderr unshare -n sh -c '
		ip link set lo up
		exec 5<>"$1/ready"
		sbx-broker --allow-host origin.test --listen "$1/s" --listen-tcp 127.0.0.1:3128 --ready-fd 3 \
			3>"$1/ready" 2>"$1/err" </dev/null >/dev/null &
		a=$!
		read -r _ <&5
		sbx-broker --allow-host origin.test --listen-tcp "[::1]:3129" --ready-fd 3 3>"$1/ready" \
			2>>"$1/err" </dev/null >/dev/null &
		b=$!
		read -r _ <&5
		"$2" -c "
import socket
for fam, a in ((socket.AF_UNIX, \"$1/s\"), (socket.AF_INET, (\"127.0.0.1\", 3128)), (socket.AF_INET6, (\"::1\", 3129))):
    c = socket.socket(fam); c.connect(a)
    c.sendall(b\"CONNECT b.test:443 HTTP/1.1\\r\\n\\r\\n\")
    print(c.recv(200).split(b\"\\r\\n\")[0].decode())"
		sbx-broker --allow-host origin.test --listen-tcp 127.0.0.1:3128
		echo "rc $?"
		kill $a $b' sh "$D" "$PY3"
	assert_output "HTTP/1.1 403 Forbidden
HTTP/1.1 403 Forbidden
HTTP/1.1 403 Forbidden
rc 111"
	# musl and glibc word EADDRINUSE differently (the dynamic build links glibc).
	local inuse="Address in use"
	[ "${SBX_STATIC:-1}" = 1 ] || inuse="Address already in use"
	assert_equal "$stderr" "sbx-broker: fatal: unable to listen on 127.0.0.1:3128 (--listen-tcp): $inuse"
}

@test "--listen-fd empty" { usage "--listen-fd: invalid fd '': empty" --listen-fd ''; }
@test "--listen-fd negative" { usage "--listen-fd: invalid fd '-3': negative" --listen-fd -3; }
@test "--listen-fd stdio" { usage "--listen-fd: invalid fd '1': 0, 1 and 2 are stdio" --listen-fd 1; }
@test "--listen-fd not open" { usage "--listen-fd: invalid fd '77': not open; open it for the tool (in the shell: 77<FILE or 77>FILE, or a previous tool's --pass-fd 77)" --listen-fd 77; }
@test "--listen-fd garbage" { usage "--listen-fd: invalid fd '5x': trailing garbage" --listen-fd 5x; }
@test "--listen-fd overflow" { usage "--listen-fd: invalid fd '99999999999999999999999': overflow" --listen-fd 99999999999999999999999; }
@test "--listen-fd on a regular file" {
	run -100 --separate-stderr sbx-broker --listen-fd 5 5<"$BATS_TEST_FILENAME"
	assert_equal "$stderr" "sbx-broker: usage: --listen-fd: fd 5 is not a listening Unix stream socket"
}
@test "--listen-fd on a Unix socket that is not listening" {
	run -100 --separate-stderr "$PY3" -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
os.dup2(s.fileno(), 9)
os.execvp(sys.argv[1], [sys.argv[1], "--listen-fd", "9"])' sbx-broker
	assert_equal "$stderr" "sbx-broker: usage: --listen-fd: fd 9 is not a listening Unix stream socket"
}

@test "--listen-fd on a listening TCP socket" {
	run -100 --separate-stderr "$PY3" -c '
import os, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.bind(("127.0.0.1", 0)); s.listen(1)
os.dup2(s.fileno(), 9)
os.execvp(sys.argv[1], [sys.argv[1], "--listen-fd", "9"])' sbx-broker
	assert_equal "$stderr" "sbx-broker: usage: --listen-fd: fd 9 is not a listening Unix stream socket"
}
@test "--listen and --listen-fd together" {
	run -100 --separate-stderr "$PY3" -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[2]); s.listen(1)
os.dup2(s.fileno(), 9)
os.execvp(sys.argv[1], [sys.argv[1], "--listen-fd", "9", "--listen", sys.argv[3], "--allow-host", "a.test"])' \
		sbx-broker "$D/a" "$D/b"
	assert_equal "$stderr" "sbx-broker: usage: --listen and --listen-fd are exclusive"
}
@test "--mode empty" { usage "--mode: '' is not allowlist or proxy" --mode ''; }
@test "--mode unknown" { usage "--mode: 'unrestricted' is not allowlist or proxy" --mode unrestricted; }
@test "--mode proxy needs --upstream" { usage "--mode proxy needs --upstream" --mode proxy; }
@test "--upstream needs --mode proxy" { usage "--upstream needs --mode proxy" "${H[@]}" --upstream http://127.0.0.1:3128; }
@test "--upstream empty" { usage "--upstream: empty URL" --mode proxy --upstream ''; }
@test "--upstream SOCKS" { usage "--upstream: invalid URL 'socks5://127.0.0.1:1080': SOCKS proxies are not supported" --mode proxy --upstream socks5://127.0.0.1:1080; }
@test "--upstream https" { usage "--upstream: invalid URL 'https://p.test:443': only http://HOST:PORT is supported" --mode proxy --upstream https://p.test:443; }
@test "--upstream with credentials" { usage "--upstream: invalid URL 'http://u:pw@p.test:3128': credentials are not supported" --mode proxy --upstream http://u:pw@p.test:3128; }
@test "--upstream with a path" { usage "--upstream: invalid URL 'http://p.test:3128/x': a path is not allowed" --mode proxy --upstream http://p.test:3128/x; }
@test "--upstream without a port" { usage "--upstream: invalid URL 'http://p.test': port missing" --mode proxy --upstream http://p.test; }
@test "--upstream without a host" { usage "--upstream: invalid URL 'http://:3128': host missing" --mode proxy --upstream http://:3128; }
@test "--upstream port zero" { usage "--upstream: invalid number '0': zero not allowed" --mode proxy --upstream http://p.test:0; }
@test "--upstream port too large" { usage "--upstream: invalid number '65536': too large" --mode proxy --upstream http://p.test:65536; }
@test "--allow-host empty" { usage "--allow-host: invalid host '': empty name" --allow-host ''; }
@test "--allow-host bare star" { usage "--allow-host: invalid host '*': a bare * would allow every name" --allow-host '*'; }
@test "--allow-host wildcard over a top-level domain" { usage "--allow-host: invalid host '*.com': wildcard covers a whole top-level domain" --allow-host '*.com'; }
@test "--allow-host inner wildcard" { usage "--allow-host: invalid host 'a.*.com': wildcard only as the whole first label" --allow-host 'a.*.com'; }
@test "--allow-host IPv4 literal" { usage "--allow-host: invalid host '10.0.0.1': IP literals not allowed" --allow-host 10.0.0.1; }
@test "--allow-host IPv6 literal" { usage "--allow-host: invalid host '::1': ports and IPv6 literals not allowed" --allow-host ::1; }
@test "--allow-host whitespace" { usage "--allow-host: invalid host 'a .test': whitespace not allowed" --allow-host 'a .test'; }
@test "--allow-host with a port" { usage "--allow-host: invalid host 'a.test:443': ports and IPv6 literals not allowed" --allow-host a.test:443; }
@test "--allow-host with a path" { usage "--allow-host: invalid host 'a.test/x': paths not allowed" --allow-host a.test/x; }
@test "--allow-host with a scheme" { usage "--allow-host: invalid host 'https://a.test': ports and IPv6 literals not allowed" --allow-host https://a.test; }
@test "--allow-host empty label" { usage "--allow-host: invalid host 'a..test': empty label" --allow-host a..test; }
@test "--allow-host label over 63 bytes" {
	l=$(printf 'a%.0s' $(seq 64))
	usage "--allow-host: invalid host '$l.test': label longer than 63 bytes" --allow-host "$l.test"
}
@test "--allow-host name over 253 bytes" {
	l=$(printf 'a%.0s' $(seq 63))
	n="$l.$l.$l.$l"
	usage "--allow-host: invalid host '$n': name longer than 253 bytes" --allow-host "$n"
}
@test "--allow-host non-ASCII" { usage "--allow-host: invalid host 'bücher.de': not ASCII (write international names in punycode)" --allow-host bücher.de; }
@test "--allow-host repeated, also in another spelling" {
	usage "--allow-host: 'A.test.' given twice" --allow-host a.test --allow-host A.test.
}
@test "--allow-port empty" { usage "--allow-port: invalid number '': empty" "${H[@]}" --allow-port ''; }
@test "--allow-port zero" { usage "--allow-port: invalid number '0': zero not allowed" "${H[@]}" --allow-port 0; }
@test "--allow-port negative" { usage "--allow-port: invalid number '-1': negative" "${H[@]}" --allow-port -1; }
@test "--allow-port too large" { usage "--allow-port: invalid number '65536': too large" "${H[@]}" --allow-port 65536; }
@test "--allow-port overflow" { usage "--allow-port: invalid number '184467440737095516160': overflow" "${H[@]}" --allow-port 184467440737095516160; }
@test "--allow-port garbage" { usage "--allow-port: invalid number '80x': trailing garbage" "${H[@]}" --allow-port 80x; }
@test "--allow-tcp bad values: empty, no port, bad port, wildcard, 80, 443, control characters, repeated" {
	local arg want
	while IFS='|' read -r arg want; do
		usage "--allow-tcp: $want" "${H[@]}" --allow-tcp "$arg"
	done <<-'EOF'
	|invalid NAME:PORT '': empty
	git.test|invalid NAME:PORT 'git.test': no port
	git.test:|port: invalid number '': empty
	git.test:0|port: invalid number '0': zero not allowed
	git.test:65536|port: invalid number '65536': too large
	git.test:22x|port: invalid number '22x': trailing garbage
	:22|invalid name in ':22': empty name
	*.git.test:22|invalid NAME:PORT '*.git.test:22': a wildcard (opaque streams go to one exact name)
	10.0.0.1:22|invalid name in '10.0.0.1:22': IP literals not allowed
	git.test:80|port 80 refused in 'git.test:80': 80 and 443 keep their HTTP and TLS checks
	git.test:443|port 443 refused in 'git.test:443': 80 and 443 keep their HTTP and TLS checks
	EOF
	usage "--allow-tcp: invalid NAME:PORT: control character" "${H[@]}" --allow-tcp $'git\x01.test:22'
	usage "--allow-tcp: 'GIT.test.:22' given twice" "${H[@]}" --allow-tcp git.test:22 --allow-tcp GIT.test.:22
}
@test "--allow-port repeated" { usage "--allow-port: 443 given twice" "${H[@]}" --allow-port 443 --allow-port 443; }
@test "--max-wall-time zero" { usage "--max-wall-time: invalid duration '0': zero not allowed" --max-wall-time 0; }
@test "--max-wall-time negative" { usage "--max-wall-time: invalid duration '-5': negative" --max-wall-time -5; }
@test "--max-wall-time infinite" { usage "--max-wall-time: invalid duration 'inf': not a number" --max-wall-time inf; }
@test "--max-wall-time too large" { usage "--max-wall-time: invalid duration '604801': too large" --max-wall-time 604801; }
@test "--max-wall-time twice" { usage "--max-wall-time given twice" --max-wall-time 1 --max-wall-time 2; }
@test "--max-request-bytes zero" { usage "--max-request-bytes: invalid size '0': zero not allowed" --max-request-bytes 0; }
@test "--max-request-bytes garbage" { usage "--max-request-bytes: invalid size '1Q': trailing garbage" --max-request-bytes 1Q; }
@test "--max-request-bytes too large" { usage "--max-request-bytes: invalid size '2T': too large" --max-request-bytes 2T; }
@test "--max-response-bytes empty" { usage "--max-response-bytes: invalid size '': empty" --max-response-bytes ''; }
@test "--max-response-bytes overflow" { usage "--max-response-bytes: invalid size '99999999999999999999K': overflow" --max-response-bytes 99999999999999999999K; }
@test "--max-connections zero" { usage "--max-connections: invalid number '0': zero not allowed" --max-connections 0; }
@test "--max-connections too large" { usage "--max-connections: invalid number '1000001': too large" --max-connections 1000001; }
@test "--max-sandbox-connections zero" { usage "--max-sandbox-connections: invalid number '0': zero not allowed" "${H[@]}" --max-sandbox-connections 0; }
@test "--max-sandbox-connections garbage" { usage "--max-sandbox-connections: invalid number '2x': trailing garbage" "${H[@]}" --max-sandbox-connections 2x; }
@test "--max-sandbox-connections twice" { usage "--max-sandbox-connections given twice" "${H[@]}" --max-sandbox-connections 2 --max-sandbox-connections 2; }
@test "--max-sandbox-connections above --max-connections" {
	usage "--max-sandbox-connections 9 is more than --max-connections (8)" "${H[@]}" --listen /tmp/x --max-connections 8 --max-sandbox-connections 9
}
@test "--max-sandbox-lookups zero" { usage "--max-sandbox-lookups: invalid number '0': zero not allowed" "${H[@]}" --max-sandbox-lookups 0; }
@test "--max-sandbox-lookups negative" { usage "--max-sandbox-lookups: invalid number '-1': negative" "${H[@]}" --max-sandbox-lookups -1; }
@test "--max-sandbox-lookups too large" { usage "--max-sandbox-lookups: invalid number '100001': too large" "${H[@]}" --max-sandbox-lookups 100001; }
@test "--max-sandbox-lookups overflow" { usage "--max-sandbox-lookups: invalid number '99999999999999999999': overflow" "${H[@]}" --max-sandbox-lookups 99999999999999999999; }
@test "--max-sandbox-lookups empty" { usage "--max-sandbox-lookups: invalid number '': empty" "${H[@]}" --max-sandbox-lookups ''; }
@test "--max-sandbox-lookups twice" { usage "--max-sandbox-lookups given twice" "${H[@]}" --max-sandbox-lookups 2 --max-sandbox-lookups 2; }
@test "--log-fd not open" { usage "--log-fd: invalid fd '9': not open; open it for the tool (in the shell: 9<FILE or 9>FILE, or a previous tool's --pass-fd 9)" --log-fd 9; }
@test "--ready-fd not open" { usage "--ready-fd: invalid fd '9': not open; open it for the tool (in the shell: 9<FILE or 9>FILE, or a previous tool's --pass-fd 9)" --ready-fd 9; }
@test "--log-fd and --ready-fd the same fd" { usage "--ready-fd: fd 4 is also --log-fd" "${H[@]}" --log-fd 4 --ready-fd 4 4>/dev/null; }
@test "--listen-fd and --log-fd the same fd" { usage "--listen-fd: fd 4 is also --log-fd" "${H[@]}" --log-fd 4 --listen-fd 4 4>/dev/null; }
@test "--allow-private-networks takes no value" { usage "--allow-private-networks takes no value" --allow-private-networks=yes; }
@test "--allow-private-networks twice" { usage "--allow-private-networks given twice" --allow-private-networks --allow-private-networks; }
@test "--allow-method is refused: methods travel encrypted in HTTPS" {
	usage "--allow-method: refused: HTTPS is tunnelled without being decrypted, so the broker cannot enforce this; restrict hosts and ports instead" --allow-method GET
}
@test "--allow-request-header is refused: headers travel encrypted in HTTPS" {
	usage "--allow-request-header: refused: HTTPS is tunnelled without being decrypted, so the broker cannot enforce this; restrict hosts and ports instead" --allow-request-header Accept
}
@test "--max-redirects is refused: redirects travel encrypted in HTTPS" {
	usage "--max-redirects: refused: HTTPS is tunnelled without being decrypted, so the broker cannot enforce this; restrict hosts and ports instead" --max-redirects 0
}
@test "socket activation with two sockets is refused" {
	run -100 --separate-stderr sh -c 'export LISTEN_PID=$$ LISTEN_FDS=2; exec sbx-broker --allow-host a.test'
	assert_equal "$stderr" "sbx-broker: usage: LISTEN_FDS: socket activation must pass exactly one socket"
}
@test "socket activation without a socket on fd 3 is refused" {
	run -100 --separate-stderr sh -c 'export LISTEN_PID=$$ LISTEN_FDS=1; exec sbx-broker --allow-host a.test 3</dev/null'
	assert_equal "$stderr" "sbx-broker: usage: LISTEN_FDS: fd 3 is not a listening Unix stream socket"
}
@test "socket activation meant for another process is ignored" {
	run -100 --separate-stderr env LISTEN_PID=1 LISTEN_FDS=1 sbx-broker --allow-host a.test
	assert_equal "$stderr" "sbx-broker: usage: missing --listen, --listen-fd or --listen-tcp (or socket activation)"
}
@test "socket activation together with --listen is refused" {
	run -100 --separate-stderr sh -c 'export LISTEN_PID=$$ LISTEN_FDS=1; exec sbx-broker --allow-host a.test --listen /tmp/x'
	assert_equal "$stderr" "sbx-broker: usage: socket activation (LISTEN_FDS) and --listen/--listen-fd are exclusive"
}

@test "a broker started with --listen is ready, logs, and removes its socket on SIGTERM" {
	mkfifo "$D/ready"
	exec {rfd}<>"$D/ready"
	sbx-broker "${H[@]}" --listen "$D/s" --ready-fd 3 --log-fd 4 3>"$D/ready" 4>"$D/log" 2>"$D/err" &
	BPID=$!
	read -r -t 10 -u "$rfd" line
	exec {rfd}<&-
	assert_equal "$line" ""
	[ -S "$D/s" ]
	kill -TERM "$BPID"
	rc=0
	wait "$BPID" || rc=$?
	BPID=
	assert_equal "$rc" 0
	assert_file_not_exists "$D/s"
	run -0 cat "$D/log"
	assert_line --index 0 --regexp '^\{"tool":"sbx-broker","event":"listening","time":"[0-9T:.-]+Z","max_wall_time_ms":30000,"max_request_bytes":1048576,"max_response_bytes":10485760,"max_connections":[0-9]+,"max_sandbox_connections":[0-9]+,"max_sandbox_lookups":256,"max_peer_connections":[0-9]+,"reserved_connections":[0-9]+,"log_lines_per_second":50,"log_lines_per_second_all":1000\}$'
	assert_line --index 1 --regexp '^\{"tool":"sbx-broker","event":"exit","time":"[0-9T:.-]+Z","code":0,"signal":15\}$'
	run -0 cat "$D/err"
	assert_output ""
}

@test "an unprivileged user can run a broker on a socket of its own" {
	sbx_test_user
	chmod 0777 "$D"
	# as_user is a function: $! would be a subshell, so the broker
	# tells its own pid.
	as_user sh -c 'echo $$ > "$1/pid"; exec sbx-broker --allow-host a.test --listen "$1/s" --max-wall-time 5 </dev/null >/dev/null 2>"$1/err"' sh "$D" &
	wait_for '[ -S "$D/s" ]'
	BPID=$(cat "$D/pid")
	run -0 "$PY3" -c '
import socket, sys
c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1])
c.sendall(b"CONNECT b.test:443 HTTP/1.1\r\n\r\n")
print(c.recv(200).split(b"\r\n")[0].decode())' "$D/s"
	assert_output "HTTP/1.1 403 Forbidden"
	assert_equal "$(stat -c %U "$D/s")" "$SBX_TEST_USER"
}

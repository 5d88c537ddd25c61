#!/usr/bin/env bats
# sbx-ns --net: bad input and the broker checks made before anything is
# created. Nothing here sends a packet: a broker socket that answers is a
# Unix socket in the scratch tree.

load helpers
load ns
bats_require_minimum_version 1.5.0

setup_file() {
	ns_setup_file
	PY=/usr/bin/python3
	export PY
	mkdir -p "$NS_DIR/run"
	chmod 0755 "$NS_DIR/run"
	touch "$NS_DIR/run/file"
	# A socket that answers (held by a listener for the whole file), one
	# that is bound but never listened on (nobody answers).
	"$PY" -c '
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666); s.listen(64)
d = socket.socket(socket.AF_UNIX); d.bind(sys.argv[2]); os.chmod(sys.argv[2], 0o666)
open(sys.argv[3], "w").close()
while True:
    c, _ = s.accept(); c.close()
' "$NS_DIR/run/b.sock" "$NS_DIR/run/dead.sock" "$NS_DIR/run/ready" </dev/null >/dev/null 2>&1 3>&- &
	echo $! > "$NS_DIR/run/pid"
	wait_for '[ -e "$NS_DIR/run/ready" ]'
	ln -s b.sock "$NS_DIR/run/link.sock"
}

teardown_file() {
	kill -9 "$(cat "$NS_DIR/run/pid")" 2>/dev/null || :
	ns_teardown_file
}

bad() {
	local want=$1
	shift
	run -100 --separate-stderr sbx-ns --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" --workspace "$NS_WS" "$@"
	assert_output ""
	assert_equal "$stderr" "sbx-ns: usage: $want"
}

# bad with fd 7 opened (O_PATH) on the answering broker socket.
bad_bfd() {
	local want=$1
	shift
	run -100 --separate-stderr "$PY" -c '
import os, sys
fd = os.open(sys.argv[1], os.O_PATH); os.dup2(fd, 7)
os.execvp(sys.argv[2], sys.argv[2:])' "$NS_DIR/run/b.sock" \
		sbx-ns --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" --workspace "$NS_WS" "$@"
	assert_output ""
	assert_equal "$stderr" "sbx-ns: usage: $want"
}

@test "unknown modes are usage errors" {
	bad "--net: invalid mode '': empty" --net "" -- true
	bad "--net: invalid mode 'all' (none, loopback, broker:PATH[,transparent][,port=N], host)" --net all -- true
	bad "--net: invalid mode 'Loopback' (none, loopback, broker:PATH[,transparent][,port=N], host)" --net Loopback -- true
	bad "--net: invalid mode 'host ' (none, loopback, broker:PATH[,transparent][,port=N], host)" --net "host " -- true
	bad "--net: invalid mode 'brokers' (none, loopback, broker:PATH[,transparent][,port=N], host)" --net brokers -- true
	bad "--net: invalid mode 'broker/x' (none, loopback, broker:PATH[,transparent][,port=N], host)" --net broker/x -- true
}

@test "two modes are a usage error, whatever they are" {
	bad "--net given twice" --net none --net none -- true
	bad "--net given twice" --net loopback --net host -- true
	bad "--net given twice" --net host --net "broker:$NS_DIR/run/b.sock" -- true
	bad_bfd "--broker-fd given twice" --net broker --broker-fd 7 --broker-fd 7 -- true
}

@test "a broker path that is empty, relative, missing, not a socket or not canonical is refused" {
	bad "--net broker needs a PATH or --broker-fd" --net broker -- true
	bad "--net: invalid broker path '': empty" --net broker: -- true
	bad "--net: invalid broker path '': empty" --net broker:,port=80 -- true
	bad "--net: invalid broker path 'run/b.sock': not absolute" --net broker:run/b.sock -- true
	bad "--net: invalid broker path '$NS_DIR/run/file/x': Not a directory" --net "broker:$NS_DIR/run/file/x" -- true
	bad "--net: invalid broker path '$NS_DIR/run/../run/b.sock': not canonical (a symlink, . or ..)" \
		--net "broker:$NS_DIR/run/../run/b.sock" -- true
}

# Nothing at PATH, or not a socket: no broker serves it yet (102, as
# sbx-ns(1) says), and the line says how to start one. A symlink is never
# followed, even with a trailing slash.
@test "a missing broker socket or one that is not a socket is refused (102) with the command that makes one" {
	local p
	for p in "$NS_DIR/run/nothing" "$NS_DIR/run/nothing/" "/$NS_DIR//run/nothing"; do
		run -102 --separate-stderr sbx-ns --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" --workspace "$NS_WS" \
			--net "broker:$p" -- touch "$NS_WS/ran"
		assert_output ""
		assert_equal "$stderr" "sbx-ns: fatal: refusing to run: no broker socket at $NS_DIR/run/nothing (start the broker first: sbx-broker --listen $NS_DIR/run/nothing)"
	done
	run -102 --separate-stderr sbx-ns --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" --workspace "$NS_WS" \
		--net "broker:$NS_DIR/run/nothing,transparent,port=8080" -- touch "$NS_WS/ran"
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run: no broker socket at $NS_DIR/run/nothing (start the broker first: sbx-broker --listen $NS_DIR/run/nothing)"
	for p in file "" link.sock link.sock/; do
		run -102 --separate-stderr sbx-ns --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" --workspace "$NS_WS" \
			--net "broker:$NS_DIR/run/$p" -- touch "$NS_WS/ran"
		assert_equal "$stderr" "sbx-ns: fatal: refusing to run: the broker path $NS_DIR/run${p:+/}${p%/} is not a socket (give the PATH of an sbx-broker --listen PATH)"
	done
	assert_file_not_exists "$NS_WS/ran"
}

@test "the bridge's port must be 1 to 65535, a plain number" {
	local b="broker:$NS_DIR/run/b.sock"
	bad "--net: port: invalid number '0': zero not allowed" --net "$b,port=0" -- true
	bad "--net: port: invalid number '65536': too large" --net "$b,port=65536" -- true
	bad "--net: port: invalid number '99999999999999999999999': overflow" --net "$b,port=99999999999999999999999" -- true
	bad "--net: port: invalid number '-1': negative" --net "$b,port=-1" -- true
	bad "--net: port: invalid number '': empty" --net "$b,port=" -- true
	bad "--net: port: invalid number 'abc': not a number" --net "$b,port=abc" -- true
	bad "--net: port: invalid number '80x': trailing garbage" --net "$b,port=80x" -- true
	bad "--net: invalid mode 'broker,port=80,x' (none, loopback, broker:PATH[,transparent][,port=N], host)" --net broker,port=80,x -- true
	bad "--net: port repeated in '$b,port=1,port=2'" --net "$b,port=1,port=2" -- true
	bad "--net: transparent repeated in '$b,transparent,port=1,transparent'" --net "$b,transparent,port=1,transparent" -- true
	bad "--net: invalid broker path '': empty" --net "broker:,transparent" -- true
}

@test "--broker-fd: only with --net broker, never with a path, missing, not a socket file, or a socket itself" {
	bad_bfd "--broker-fd needs --net broker" --broker-fd 7 -- true
	bad_bfd "--broker-fd needs --net broker" --net loopback --broker-fd 7 -- true
	bad "--broker-fd: invalid fd '9': not open; open it for the tool (in the shell: 9<FILE or 9>FILE, or a previous tool's --pass-fd 9)" --net broker --broker-fd 9 -- true
	bad "--broker-fd: invalid fd '2': 0, 1 and 2 are stdio" --net broker --broker-fd 2 -- true
	bad "--broker-fd: invalid fd 'x': not a number" --net broker --broker-fd x -- true
	bad "--broker-fd: invalid fd '7': not opened on a socket file" --net broker --broker-fd 7 -- true 7<"$NS_DIR/run/file"
	run -100 --separate-stderr "$PY" -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); os.dup2(s.fileno(), 3)
os.execv(sys.argv[2], [sys.argv[2], "--uid", "1", "--gid", "1", "--workspace", sys.argv[3], "--net", "broker", "--broker-fd", "3", "--", "true"])
' "$NS_DIR/run/b.sock" "$SBX_BIN/sbx-ns" "$NS_WS"
	assert_equal "$stderr" "sbx-ns: usage: --broker-fd: invalid fd '3': not opened on a socket file"
	run -100 --separate-stderr "$PY" -c '
import os, sys
fd = os.open(sys.argv[1], os.O_PATH); os.dup2(fd, 3)
os.execv(sys.argv[2], [sys.argv[2], "--uid", "1", "--gid", "1", "--workspace", sys.argv[3], "--net", "broker:" + sys.argv[1], "--broker-fd", "3", "--", "true"])
' "$NS_DIR/run/b.sock" "$SBX_BIN/sbx-ns" "$NS_WS"
	assert_equal "$stderr" "sbx-ns: usage: --broker-fd and --net broker:PATH are exclusive"
	run -100 --separate-stderr "$PY" -c '
import os, sys
fd = os.open(sys.argv[1], os.O_PATH); os.dup2(fd, 3)
os.execv(sys.argv[2], [sys.argv[2], "--uid", "1", "--gid", "1", "--workspace", sys.argv[3], "--net", "broker", "--broker-fd", "3", "--status-fd", "3", "--", "true"])
' "$NS_DIR/run/b.sock" "$SBX_BIN/sbx-ns" "$NS_WS"
	assert_equal "$stderr" "sbx-ns: usage: --status-fd: fd 3 is also --broker-fd"
}

@test "the proxy variables belong to --net broker: setting or keeping one is a usage error" {
	local b="broker:$NS_DIR/run/b.sock" v
	for v in HTTP_PROXY HTTPS_PROXY http_proxy https_proxy ALL_PROXY NO_PROXY no_proxy; do
		bad "--setenv: variable $v is set by --net broker" --net "$b" --setenv "$v=x" -- true
		bad "--keep-env: variable $v is set by --net broker" --net "$b" --keep-env "$v" -- true
	done
}

@test "a broker socket that nobody answers on is refused before anything runs (102)" {
	run -102 --separate-stderr sbx-ns --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" --workspace "$NS_WS" \
		--net "broker:$NS_DIR/run/dead.sock" -- touch "$NS_WS/ran"
	assert_output ""
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run: the broker at $NS_DIR/run/dead.sock does not answer: Connection refused (a socket nobody listens on: start the broker with sbx-broker --listen $NS_DIR/run/dead.sock)"
	run -102 --separate-stderr as_user sbx-ns --workspace "$NS_WS" --net "broker:$NS_DIR/run/dead.sock" -- touch "$NS_WS/ran"
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run: the broker at $NS_DIR/run/dead.sock does not answer: Connection refused (a socket nobody listens on: start the broker with sbx-broker --listen $NS_DIR/run/dead.sock)"
	assert_file_not_exists "$NS_WS/ran"
}

@test "a broker socket inside a writable root is refused (102), also through a second mount of the root" {
	local ws
	ws=$(ns_ws)
	mkdir "$ws/sub"
	"$PY" -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1)' "$ws/sub/b.sock"
	run -102 --separate-stderr sbx-ns --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" --workspace "$ws" \
		--net "broker:$ws/sub/b.sock" -- true
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run: the broker socket $ws/sub/b.sock lies inside the writable root $ws"
	run -102 --separate-stderr sbx-ns --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" --workspace "$NS_WS" \
		--rw "$NS_DIR/run" --net "broker:$NS_DIR/run/b.sock" -- true
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run: the broker socket $NS_DIR/run/b.sock lies inside the writable root $NS_DIR/run"
	mkdir -p "$NS_DIR/mnt2"
	mount --bind "$NS_DIR/run" "$NS_DIR/mnt2"
	run -102 --separate-stderr sbx-ns --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" --workspace "$NS_WS" \
		--rw "$NS_DIR/mnt2" --net "broker:$NS_DIR/run/b.sock" -- true
	umount "$NS_DIR/mnt2"
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run: the broker socket $NS_DIR/run/b.sock lies inside the writable root $NS_DIR/mnt2"
}

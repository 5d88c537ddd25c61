#!/usr/bin/env bats
# contrib/session/sbx-session on the host (no cgroup limits here: this
# host's cgroup v2 has no controllers): three named living sandboxes of one
# session, the shared mounts, one broker each with its own allowlist, an
# initializer each, readiness by script and by port, a failing sandbox that
# does not stop the others, tool calls by name, the states status reports,
# the identity as root, and a stop that leaves nothing behind.

load helpers

SESSION="$SBX_ROOT/contrib/session/sbx-session"
USAGE="sbx-session: usage: sbx-session start|run [--uid N --gid N] DIR | stop DIR | status DIR [--json] | exec DIR NAME [--] prog [args...]"
NOCG="sbx-session: warning: SBX_SESSION_NO_CGROUP=1: the sandboxes run without cgroup limits (no memory, pids or cpu totals)"

setup() {
	sbx_test_user
	base=$(sbx_scratch)
	d="$base/s$$"
	mkdir -p "$d/shared" "$d/sandbox_scripts" "$d/bash_tools" "$d/extra" \
		"$d/sandboxes/alpha" "$d/sandboxes/beta" "$d/sandboxes/gamma"
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$d/shared"
	echo "a session script" >"$d/sandbox_scripts/run.sh"
	echo "extra for gamma" >"$d/extra/note"
	mkfifo -m 0666 "$d/shared/alpha.done" "$d/shared/gamma.done"
	# As root, the sandboxes' identity: here from the session's file.
	echo "$SBX_TEST_UID $SBX_TEST_GID" >"$d/identity"
	# alpha: writes the shared volume, reads the scripts, asks its broker
	# for its own name and for gamma's.
	cat >"$d/sandboxes/alpha/command" <<-'EOF'
	echo from-alpha >/shared/alpha
	cat /sandbox_scripts/run.sh >/shared/alpha-saw
	cat /extra/note >/shared/alpha-extra 2>&1
	curl -s -o /dev/null -w "%{http_code}\n" http://gamma.test/ >/shared/alpha-gamma 2>&1
	echo done >/shared/alpha.done
	exec sleep 3600
	EOF
	echo alpha.test >"$d/sandboxes/alpha/allow"
	# beta: an extra mount that does not exist: it never starts.
	echo 'exec sleep 3600' >"$d/sandboxes/beta/command"
	echo beta.test >"$d/sandboxes/beta/allow"
	echo "ro $d/missing /missing" >"$d/sandboxes/beta/mounts"
	# gamma: its own extra mount, the read-only tools, its own broker.
	cat >"$d/sandboxes/gamma/command" <<-'EOF'
	cat /extra/note >/shared/gamma-extra
	touch /bash_tools/x 2>/shared/gamma-tools
	curl -s -o /dev/null -w "%{http_code}\n" http://alpha.test/ >/shared/gamma-alpha 2>&1
	echo done >/shared/gamma.done
	exec sleep 3600
	EOF
	echo gamma.test >"$d/sandboxes/gamma/allow"
	echo "ro $d/extra /extra" >"$d/sandboxes/gamma/mounts"
	chmod -R a+rX "$base"
}

teardown() {
	PATH="$SBX_BIN:$PATH" "$SESSION" stop "$d" >/dev/null 2>&1 || true
	rm -rf "$base"
}

# The sandboxes and brokers outlive `start` and keep the fds they inherit:
# start it with none above 2 open, as its header says (bats holds several).
# session_exec replaces its shell: "session_exec ... &" gives the script's pid.
session_exec() {
	PATH="$SBX_BIN:$PATH" SBX_SESSION_READY_TIMEOUT="${TMO:-20}" SBX_SESSION_NO_CGROUP=1 exec python3 -c 'import os, sys
os.closerange(3, 1 << 16)
os.execv(sys.argv[1], sys.argv[1:])' "$SESSION" "$@"
}

session() {
	(session_exec "$@")
}

@test "a session of three named sandboxes: shared mounts, one broker each, a failing one does not stop the others" {
	run -1 --separate-stderr session start "$d"
	assert_equal "$stderr" "$NOCG"
	assert_output "alpha ready
beta failed: the sandbox ended before it was ready (see $d/run/beta/err)
gamma ready"
	run -0 cat "$d/run/beta/err"
	assert_output "sbx-ns: usage: --ro-bind: invalid path '$d/missing': does not exist"
	read -r _ <"$d/shared/alpha.done"
	read -r _ <"$d/shared/gamma.done"
	run -0 cat "$d/shared/alpha" "$d/shared/alpha-saw" "$d/shared/gamma-extra" "$d/shared/gamma-tools"
	assert_output "from-alpha
a session script
extra for gamma
touch: cannot touch '/bash_tools/x': Read-only file system"
	assert_equal "$(stat -c %u "$d/shared/alpha")" "$SBX_TEST_UID"
	# gamma's extra mount is gamma's alone.
	run -0 cat "$d/shared/alpha-extra"
	assert_output "cat: /extra/note: No such file or directory"
	# Each broker has its own allowlist: the other sandbox's name is refused.
	run -0 cat "$d/shared/alpha-gamma"
	assert_output "403"
	run -0 cat "$d/shared/gamma-alpha"
	assert_output "403"
	run -0 grep -c '"host":"gamma.test".*"decision":"refused","status":403' "$d/run/alpha/broker.log"
	run -0 grep -c '"host":"alpha.test".*"decision":"refused","status":403' "$d/run/gamma/broker.log"
	# beta's broker was taken down with it.
	run -1 pgrep -f "sbx-broker --listen $d/run/beta/"
	run -0 pgrep -f "sbx-broker --listen $d/run/alpha/"
	run -0 pgrep -f "sbx-broker --listen $d/run/gamma/"

	run -0 session stop "$d"
	assert_output ""
	assert_not_exist "$d/run"
	run -1 pgrep -f "$d/"
	assert_equal "$(ls "$d")" "bash_tools
extra
identity
sandbox_scripts
sandboxes
shared"
}

@test "a sandbox whose broker dies keeps the others and itself running; stop still removes everything" {
	run -1 session start "$d"
	read -r _ <"$d/shared/alpha.done"
	kill -KILL "$(cat "$d/run/alpha/broker.pid")"
	run -0 kill -0 "$(cat "$d/run/alpha/pid")"
	run -0 kill -0 "$(cat "$d/run/gamma/pid")"
	run -0 session stop "$d"
	assert_not_exist "$d/run"
	run -1 pgrep -f "$d/"
}

@test "sbx-session refuses bad input before starting anything" {
	run -100 --separate-stderr "$SESSION" start relative/dir
	assert_equal "$stderr" "sbx-session: usage: DIR must be absolute, not 'relative/dir'"
	run -100 --separate-stderr "$SESSION" begin "$d"
	assert_equal "$stderr" "$USAGE"
	for a in "start" "stop" "stop $d $d" "status" "status $d --text" "exec $d" "exec $d alpha" "exec $d alpha --" \
		"start $d $d" "start --pid 1 $d" "run -v $d"; do
		# shellcheck disable=SC2086
		run -100 --separate-stderr "$SESSION" $a
		assert_equal "$stderr" "$USAGE"
	done
	# No cgroup limits only when asked for, and then no totals.
	run -100 --separate-stderr "$SESSION" start "$d"
	assert_equal "$stderr" "sbx-session: usage: set SBX_SESSION_CGROUP_ROOT to a delegated cgroup v2 directory, or SBX_SESSION_NO_CGROUP=1 to run without cgroup limits"
	SBX_SESSION_NO_CGROUP=yes run -100 --separate-stderr "$SESSION" run "$d"
	assert_equal "$stderr" "sbx-session: usage: SBX_SESSION_NO_CGROUP must be 1 or unset, not 'yes'"
	SBX_SESSION_NO_CGROUP=1 SBX_SESSION_CGROUP_ROOT=/sys/fs/cgroup run -100 --separate-stderr "$SESSION" start "$d"
	assert_equal "$stderr" "sbx-session: usage: SBX_SESSION_CGROUP_ROOT and SBX_SESSION_NO_CGROUP=1 contradict each other: set one"
	SBX_SESSION_NO_CGROUP=1 SBX_SESSION_PIDS=64 run -100 --separate-stderr "$SESSION" start "$d"
	assert_equal "$stderr" "sbx-session: usage: SBX_SESSION_PIDS needs SBX_SESSION_CGROUP_ROOT: SBX_SESSION_NO_CGROUP=1 sets no limits"
	assert_not_exist "$d/run"
	run -100 --separate-stderr "$SESSION" start
	rmdir "$d/bash_tools"
	run -100 --separate-stderr "$SESSION" start "$d"
	assert_equal "$stderr" "sbx-session: usage: $d/bash_tools is missing (prepare it before start)"
	assert_not_exist "$d/run"
	mkdir "$d/bash_tools"
	SBX_SESSION_READY_TIMEOUT=0 run -100 --separate-stderr "$SESSION" start "$d"
	assert_equal "$stderr" "sbx-session: usage: SBX_SESSION_READY_TIMEOUT must be a positive number, not '0'"
	SBX_SESSION_READY_TIMEOUT=99999999999999999999 run -100 --separate-stderr "$SESSION" start "$d"
	assert_equal "$stderr" "sbx-session: usage: SBX_SESSION_READY_TIMEOUT must be at most 86400 seconds, not '99999999999999999999'"
	SBX_SESSION_READY_TIMEOUT=86401 run -100 --separate-stderr "$SESSION" start "$d"
	assert_equal "$stderr" "sbx-session: usage: SBX_SESSION_READY_TIMEOUT must be at most 86400 seconds, not '86401'"
	SBX_SESSION_READY_TIMEOUT=-1 run -100 --separate-stderr "$SESSION" start "$d"
	assert_equal "$stderr" "sbx-session: usage: SBX_SESSION_READY_TIMEOUT must be a positive number, not '-1'"
	mkdir "$d/run"
	SBX_SESSION_NO_CGROUP=1 run -102 --separate-stderr "$SESSION" start "$d"
	assert_equal "$stderr" "sbx-session: fatal: $d/run exists: the session is running or was not stopped"
}

# beta's broker reads a --resolve-file that is a fifo nobody writes: it never
# listens, so beta never becomes ready.
hang_beta() {
	rm "$d/sandboxes/beta/mounts"
	mkfifo -m 0666 "$d/hang"
	echo "--resolve-file $d/hang" >"$d/sandboxes/beta/broker-args"
}

@test "a sandbox that never becomes ready: a bounded wait, one line naming it and the fix, the others unaffected, nothing of it left" {
	hang_beta
	# Names that are not [A-Za-z0-9_-] are refused, shown without their
	# control characters; "alpha" plus a newline is not a second alpha.
	mkdir "$d/sandboxes/x$(printf '\001')y" "$d/sandboxes/alpha
" "$d/sandboxes/-v" "$d/sandboxes/session.ready"
	# delta allows nothing: no broker, no network.
	mkdir "$d/sandboxes/delta"
	mkfifo -m 0666 "$d/shared/delta.done"
	cat >"$d/sandboxes/delta/command" <<-'EOF'
	curl -s -o /dev/null -w "%{http_code} $http_proxy\n" http://alpha.test/ >/shared/delta-net 2>&1
	echo done >/shared/delta.done
	exec sleep 3600
	EOF
	TMO=5 run -1 --separate-stderr session start "$d"
	assert_equal "$stderr" "$NOCG"
	assert_output "-v failed: the name must be [A-Za-z0-9_-]
alpha? failed: the name must be [A-Za-z0-9_-]
session?ready failed: the name must be [A-Za-z0-9_-]
x?y failed: the name must be [A-Za-z0-9_-]
alpha ready
beta failed: its broker was not ready within 5s (see $d/run/beta/broker.log); to fix: what it waits for (its log), or a larger SBX_SESSION_READY_TIMEOUT
delta ready
gamma ready"
	run -1 pgrep -f "$d/run/beta/"
	run -1 pgrep -f "_supervise $d beta"
	read -r _ <"$d/shared/alpha.done"
	read -r _ <"$d/shared/gamma.done"
	read -r _ <"$d/shared/delta.done"
	run -0 cat "$d/shared/gamma-alpha"
	assert_output "403"
	run -0 cat "$d/shared/delta-net"
	assert_output "000 "
	assert_not_exist "$d/run/delta/broker.pid"
	assert_equal "$(ls "$d/run")" "alpha
alpha.sock
beta
delta
delta.sock
gamma
gamma.sock
session.cgroup
session.identity
session.ready"
	run -0 session stop "$d"
	assert_not_exist "$d/run"
	run -1 pgrep -f "$d/"
}

@test "SIGTERM while sandboxes are starting stops every one of them and leaves nothing" {
	local pid
	hang_beta
	session_exec start "$d" >"$base/out" 2>"$base/err" &
	pid=$!
	# alpha and gamma run; beta's broker is blocked reading the fifo.
	read -r _ <"$d/shared/alpha.done"
	read -r _ <"$d/shared/gamma.done"
	exec 5>"$d/hang"
	run -0 kill -0 "$(cat "$d/run/beta/broker.pid")"
	# beta is starting (its broker is), and says so; no tool call reaches it.
	run -1 session status "$d"
	assert_line "beta starting"
	run -1 session status "$d" --json
	assert_line '{"name":"beta","state":"starting"}'
	run -110 --separate-stderr session exec "$d" beta true
	assert_equal "$stderr" "sbx-session: fatal: sandbox 'beta' is not ready: starting"
	kill -TERM "$pid"
	local st=0
	wait "$pid" || st=$?
	assert_equal "$st" 143
	exec 5>&-
	run -0 cat "$base/err"
	assert_output "$NOCG
sbx-session: fatal: stopped by SIGTERM while starting; every sandbox of $d stopped"
	# start was still awaiting beta (alpha's line may have come first).
	run -0 cat "$base/out"
	refute_output --partial beta
	refute_output --partial gamma
	assert_not_exist "$d/run"
	run -1 pgrep -f "$d/"
}

@test "a start killed with SIGKILL while starting: stop still removes everything" {
	local pid
	hang_beta
	session_exec start "$d" >/dev/null 2>&1 &
	pid=$!
	exec 5>"$d/hang"
	kill -KILL "$pid"
	local st=0
	wait "$pid" || st=$?
	assert_equal "$st" 137
	run -0 session stop "$d"
	exec 5>&-
	assert_not_exist "$d/run"
	run -1 pgrep -f "$d/"
}

@test "stop ends only the session's processes: pid files that now name someone else are left alone" {
	local victim
	# A process in a session of its own, as a supervisor is.
	setsid "$SBX_TESTBIN/ns-attempt" sleep 3600 </dev/null >/dev/null 2>&1 &
	victim=$!
	mkdir -p "$d/run/alpha"
	for f in pid broker.pid supervisor.pid; do echo "$victim" >"$d/run/alpha/$f"; done
	run -0 session stop "$d"
	assert_not_exist "$d/run"
	run -0 kill -0 "$victim"
	kill -KILL "$victim"
}

# Living sandboxes of their own: alpha's initializer waits for the test and
# its ready script passes on its third try; beta's initializer fails; gamma
# has no broker, a service as its command and a ready-port it serves.
living() {
	rm -rf "$d/sandboxes"
	mkdir -p "$d/sandboxes/alpha" "$d/sandboxes/beta" "$d/sandboxes/gamma"
	mkfifo -m 0666 "$d/shared/alpha.initing" "$d/shared/alpha.go"
	cat >"$d/sandboxes/alpha/init" <<-'EOF'
	echo alpha-init
	echo inited >/tmp/inited
	echo initing >/shared/alpha.initing
	read -r _ </shared/alpha.go
	EOF
	cat >"$d/sandboxes/alpha/ready" <<-'EOF'
	n=$(cat /tmp/tries 2>/dev/null || echo 0)
	n=$((n + 1))
	echo "$n" >/tmp/tries
	echo "try $n"
	[ "$n" -ge 3 ]
	EOF
	echo alpha.test >"$d/sandboxes/alpha/allow"
	printf 'echo "beta: no such tool" >&2\nexit 3\n' >"$d/sandboxes/beta/init"
	echo beta.test >"$d/sandboxes/beta/allow"
	echo 'echo gamma-init >/tmp/gamma' >"$d/sandboxes/gamma/init"
	echo 'exec python3 -m http.server --bind 127.0.0.1 --directory /sandbox_scripts 8080 2>/dev/null' >"$d/sandboxes/gamma/command"
	echo 8080 >"$d/sandboxes/gamma/ready-port"
	chmod -R a+rX "$d/sandboxes"
}

status_is() {
	[ "$(session status "$d")" = "$1" ]
}

@test "living sandboxes: an initializer each, readiness by script and by port, a failing initializer alone, tool calls by name, status in each state, stop leaves nothing" {
	local pid st=0 beta_failed="beta failed: its initializer exited 3 (see $d/run/beta/err)"
	living
	session_exec start "$d" >"$base/out" 2>"$base/err" &
	pid=$!
	# alpha's initializer runs (and waits); beta fails, gamma becomes ready
	# meanwhile: one does not wait for another.
	read -r _ <"$d/shared/alpha.initing"
	wait_for "status_is \"alpha initializing
$beta_failed
gamma ready\""
	run -1 session status "$d" --json
	assert_output '{"name":"alpha","state":"initializing"}
{"name":"beta","state":"failed","reason":"its initializer exited 3 (see '"$d"'/run/beta/err)"}
{"name":"gamma","state":"ready","socket":"'"$d"'/run/gamma.sock"}'
	run -110 --separate-stderr session exec "$d" alpha true
	assert_equal "$stderr" "sbx-session: fatal: sandbox 'alpha' is not ready: initializing"
	# gamma answers on its port: its service runs, started by the initializer.
	run -0 --separate-stderr session exec "$d" gamma -- sh -c 'cat /tmp/gamma; curl -s -o /dev/null -w "%{http_code}\n" http://127.0.0.1:8080/run.sh'
	assert_output "gamma-init
200"
	echo go >"$d/shared/alpha.go"
	wait "$pid" || st=$?
	assert_equal "$st" 1
	run -0 cat "$base/out"
	assert_output "alpha ready
$beta_failed
gamma ready"
	run -0 cat "$base/err"
	assert_output "$NOCG"
	# beta: its initializer's words, then sbx-ns's; nothing of it left.
	run -0 cat "$d/run/beta/err"
	assert_line --index 0 "beta: no such tool"
	assert_line --index 1 --regexp '^sbx-ns: warning: the first program \(/bin/sh -c .*\) exited 3: the sandbox stops$'
	assert_equal "${#lines[@]}" 2
	assert_not_exist "$d/run/beta.sock"
	run -1 pgrep -f "$d/run/beta/"
	run -0 cat "$d/run/alpha/out" "$d/run/alpha/ready.log"
	assert_output "alpha-init
try 3"

	# status exits 0 only when every sandbox is ready: beta is not.
	run -1 session status "$d"
	assert_output "alpha ready
$beta_failed
gamma ready"
	run -1 session status "$d" --json
	assert_output '{"name":"alpha","state":"ready","socket":"'"$d"'/run/alpha.sock"}
{"name":"beta","state":"failed","reason":"its initializer exited 3 (see '"$d"'/run/beta/err)"}
{"name":"gamma","state":"ready","socket":"'"$d"'/run/gamma.sock"}'

	# Tool calls by name: one sandbox's state persists between calls, the
	# other's /tmp is its own; stdio and the exit code pass through.
	run -0 --separate-stderr session exec "$d" alpha -- sh -c 'echo one >/tmp/x; cat /tmp/inited /tmp/tries; id -u'
	assert_output "inited
3
$SBX_TEST_UID"
	run -0 --separate-stderr session exec "$d" alpha cat /tmp/x
	assert_output "one"
	run -1 --separate-stderr session exec "$d" gamma cat /tmp/x
	assert_equal "$stderr" "cat: /tmp/x: No such file or directory"
	run -7 --separate-stderr session exec "$d" alpha -- sh -c 'cat; echo err >&2; exit 7' <<<"from stdin"
	assert_output "from stdin"
	assert_equal "$stderr" "err"
	# alpha reaches its own name only, through its broker.
	run -0 --separate-stderr session exec "$d" alpha -- curl -s -o /dev/null -w "%{http_code}\n" http://gamma.test/
	assert_output "403"
	run -0 grep -c '"host":"gamma.test".*"decision":"refused","status":403' "$d/run/alpha/broker.log"
	# Not ready, or no such sandbox: refused with a code of their own.
	run -110 --separate-stderr session exec "$d" beta true
	assert_equal "$stderr" "sbx-session: fatal: sandbox 'beta' is not ready: failed: its initializer exited 3 (see $d/run/beta/err)"
	run -109 --separate-stderr session exec "$d" delta true
	assert_equal "$stderr" "sbx-session: fatal: no sandbox 'delta' in $d (its sandboxes: alpha beta gamma)"
	run -109 --separate-stderr session exec "$d" ../sandboxes/alpha true
	assert_equal "$stderr" "sbx-session: fatal: no sandbox '../sandboxes/alpha' in $d (its sandboxes: alpha beta gamma)"

	# gamma stopped from outside: stopped, its service gone with it.
	run -0 pgrep -f "http.server --bind 127.0.0.1 --directory /sandbox_scripts 8080"
	run -0 "$SBX_BIN/sbx-ns" --join "$d/run/gamma.sock" --stop
	wait_for "status_is \"alpha ready
$beta_failed
gamma stopped: its sandbox ended with 0 (see $d/run/gamma/err)\""
	run -1 session status "$d" --json
	assert_line --index 2 '{"name":"gamma","state":"stopped","reason":"its sandbox ended with 0 (see '"$d"'/run/gamma/err)"}'
	run -110 --separate-stderr session exec "$d" gamma true
	assert_equal "$stderr" "sbx-session: fatal: sandbox 'gamma' is not ready: stopped: its sandbox ended with 0 (see $d/run/gamma/err)"
	run -1 pgrep -f "http.server --bind 127.0.0.1 --directory /sandbox_scripts 8080"
	run -1 pgrep -f "$d/run/gamma/"
	assert_not_exist "$d/run/gamma.sock"

	# alpha's service-less sandbox holds a job of its own until the stop.
	run -0 session exec "$d" alpha -- sh -c 'sleep 36'"$$"' >/dev/null 2>&1 &'
	run -0 pgrep -f "sleep 36$$"
	run -0 --separate-stderr session stop "$d"
	assert_equal "$output$stderr" ""
	assert_not_exist "$d/run"
	run -1 pgrep -f "$d/"
	run -1 pgrep -f "sleep 36$$"
	run -1 session status "$d"
	assert_output "alpha stopped
beta stopped
gamma stopped"
	run -1 session status "$d" --json
	assert_output '{"name":"alpha","state":"stopped"}
{"name":"beta","state":"stopped"}
{"name":"gamma","state":"stopped"}'
	run -110 --separate-stderr session exec "$d" alpha true
	assert_equal "$stderr" "sbx-session: fatal: sandbox 'alpha' is not ready: stopped: the session is not running (sbx-session start $d)"
}

@test "readiness that never comes: a ready script that never passes, a port nothing serves, a bad port: bounded, named, nothing of them left" {
	rm -rf "$d/sandboxes"
	mkdir -p "$d/sandboxes/alpha" "$d/sandboxes/beta" "$d/sandboxes/delta" "$d/sandboxes/idle"
	printf 'echo "not yet"\nexit 1\n' >"$d/sandboxes/alpha/ready"
	echo alpha.test >"$d/sandboxes/alpha/allow"
	echo 8080 >"$d/sandboxes/beta/ready-port"
	echo http >"$d/sandboxes/delta/ready-port"
	chmod -R a+rX "$d/sandboxes"
	TMO=2 run -1 --separate-stderr session start "$d"
	assert_equal "$stderr" "$NOCG"
	assert_output "alpha failed: its ready check did not pass within 2s (its last exit: 1; see $d/run/alpha/ready.log); to fix: what it waits for, or a larger SBX_SESSION_READY_TIMEOUT
beta failed: the sandbox was not ready within 2s (see $d/run/beta/err); to fix: what it waits for (its init, its ready-port), or a larger SBX_SESSION_READY_TIMEOUT
delta failed: ready-port: 'http' is not a port (1 to 65535)
idle ready"
	run -0 cat "$d/run/alpha/ready.log"
	assert_output "not yet"
	run -0 cat "$d/run/beta/err"
	assert_output "sbx-ns: fatal: the sandbox did not become ready within 2.000 s: nothing accepted a connection on its 127.0.0.1:8080 (--ready-port, --ready-timeout)"
	for n in alpha beta delta; do
		run -1 pgrep -f "$d/run/$n/"
		run -1 pgrep -f "_supervise $d $n"
		assert_not_exist "$d/run/$n.sock"
	done
	# A sandbox with no file at all: set up, ready, idle until a tool call.
	run -0 --separate-stderr session exec "$d" idle -- sh -c 'pwd; ls -A'
	assert_output "$d/run/idle/ws"
	run -1 session status "$d" --json
	assert_line --index 3 '{"name":"idle","state":"ready","socket":"'"$d"'/run/idle.sock"}'
	run -0 session stop "$d"
	assert_not_exist "$d/run"
	run -1 pgrep -f "$d/"
}

@test "as root the sandboxes' identity is --uid/--gid, DIR/identity or SBX_SESSION_UID/GID: exactly one, or start refuses" {
	local ids="$SBX_TEST_UID $SBX_TEST_GID"
	rm "$d/identity"
	rm -rf "$d/sandboxes"
	mkdir -p "$d/sandboxes/alpha"
	SBX_SESSION_NO_CGROUP=1 run -100 --separate-stderr "$SESSION" start "$d"
	assert_equal "$stderr" "sbx-session: usage: as root the sandboxes need an identity: --uid N --gid N, or \"UID GID\" in $d/identity"
	SBX_SESSION_NO_CGROUP=1 run -100 --separate-stderr "$SESSION" run --uid "$SBX_TEST_UID" "$d"
	assert_equal "$stderr" "sbx-session: usage: --uid and --gid go together"
	SBX_SESSION_NO_CGROUP=1 run -100 --separate-stderr "$SESSION" start --uid x --gid 1 "$d"
	assert_equal "$stderr" "sbx-session: usage: --uid must be a number, not 'x'"
	SBX_SESSION_NO_CGROUP=1 run -100 --separate-stderr "$SESSION" start "$d" --gid
	assert_equal "$stderr" "sbx-session: usage: --gid needs a number"
	SBX_SESSION_NO_CGROUP=1 SBX_SESSION_UID=1 run -100 --separate-stderr "$SESSION" start "$d"
	assert_equal "$stderr" "sbx-session: usage: SBX_SESSION_UID and SBX_SESSION_GID must both be numbers, not '1' and ''"
	SBX_SESSION_NO_CGROUP=1 SBX_SESSION_UID=1 SBX_SESSION_GID=1 run -100 --separate-stderr "$SESSION" start --uid 1 --gid 1 "$d"
	assert_equal "$stderr" "sbx-session: usage: the sandboxes' identity is given twice (--uid/--gid and SBX_SESSION_UID/GID): give it once"
	echo "$ids" >"$d/identity"
	SBX_SESSION_NO_CGROUP=1 run -100 --separate-stderr "$SESSION" start --uid 1 --gid 1 "$d"
	assert_equal "$stderr" "sbx-session: usage: the sandboxes' identity is given twice (--uid/--gid and $d/identity): give it once"
	echo "$SBX_TEST_UID" >"$d/identity"
	SBX_SESSION_NO_CGROUP=1 run -100 --separate-stderr "$SESSION" start "$d"
	assert_equal "$stderr" "sbx-session: usage: $d/identity must hold \"UID GID\", not '$SBX_TEST_UID'"
	assert_not_exist "$d/run"
	rm "$d/identity"
	# --uid/--gid: the workspace and every tool call are the identity's.
	run -0 --separate-stderr session start --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" "$d"
	assert_output "alpha ready"
	assert_equal "$(stat -c '%u %g' "$d/run/alpha/ws")" "$ids"
	run -0 --separate-stderr session exec "$d" alpha -- sh -c 'echo "$(id -u) $(id -g)"'
	assert_output "$ids"
	run -0 session stop "$d"
	# The documented variables, the same.
	SBX_SESSION_UID=$SBX_TEST_UID SBX_SESSION_GID=$SBX_TEST_GID run -0 --separate-stderr session start "$d"
	assert_output "alpha ready"
	run -0 --separate-stderr session exec "$d" alpha -- sh -c 'echo "$(id -u) $(id -g)"'
	assert_output "$ids"
	run -0 session stop "$d"
	assert_not_exist "$d/run"
	run -1 pgrep -f "$d/"
}

@test "net: transparent puts a sandbox's broker in transparent mode; another word, or no broker, fails that sandbox alone" {
	rm -rf "$d/sandboxes"
	mkdir -p "$d/sandboxes/alpha" "$d/sandboxes/beta" "$d/sandboxes/gamma" "$d/sandboxes/plain"
	echo alpha.test >"$d/sandboxes/alpha/allow"
	echo transparent >"$d/sandboxes/alpha/net"
	echo beta.test >"$d/sandboxes/beta/allow"
	echo proxy >"$d/sandboxes/beta/net"
	echo transparent >"$d/sandboxes/gamma/net"
	echo plain.test >"$d/sandboxes/plain/allow"
	chmod -R a+rX "$d/sandboxes"
	run -1 --separate-stderr session start "$d"
	assert_equal "$stderr" "$NOCG"
	assert_output "alpha ready
beta failed: net: 'proxy' is not a mode (transparent is the only one)
gamma failed: net: transparent needs a broker: an allow or broker-args file
plain ready"
	# alpha's names resolve through its broker, to its synthetic range;
	# what the broker does not allow, nowhere. plain has the proxy only.
	run -0 --separate-stderr session exec "$d" alpha -- getent hosts alpha.test
	assert_output --regexp '^240\.0\.0\.1 +alpha\.test$'
	run -2 --separate-stderr session exec "$d" alpha -- getent hosts other.test
	run -2 --separate-stderr session exec "$d" plain -- getent hosts plain.test
	run -0 grep -q '"method":"DNS","host":"other.test","port":53,.*"decision":"refused"' "$d/run/alpha/broker.log"
	for n in beta gamma; do
		run -1 pgrep -f "$d/run/$n/"
		assert_not_exist "$d/run/$n.sock"
	done
	run -0 session stop "$d"
	assert_not_exist "$d/run"
	run -1 pgrep -f "$d/"
}

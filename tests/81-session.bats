#!/usr/bin/env bats
# contrib/session/sbx-session on the host (no cgroup limits here: this
# host's cgroup v2 has no controllers): three named sandboxes of one
# session, the shared mounts, one broker each with its own allowlist,
# readiness, a failing sandbox that does not stop the others, and a stop
# that leaves nothing behind.

load helpers

SESSION="$SBX_ROOT/contrib/session/sbx-session"
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
	PATH="$SBX_BIN:$PATH" SBX_SESSION_UID="$SBX_TEST_UID" SBX_SESSION_GID="$SBX_TEST_GID" \
		SBX_SESSION_READY_TIMEOUT="${TMO:-20}" SBX_SESSION_NO_CGROUP=1 exec python3 -c 'import os, sys
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
	assert_equal "$stderr" "sbx-session: usage: sbx-session start|stop|run DIR"
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
beta
delta
gamma
session.cgroup
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

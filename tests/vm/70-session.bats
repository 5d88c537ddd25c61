#!/usr/bin/env bats
# contrib/session/sbx-session with cgroup limits: one sbx-cgroup parent holds
# the session's totals, one child per sandbox; a failing sandbox does not
# stop the others; stop leaves no cgroup, process or run directory.

load helpers/vm

setup() {
	S=sess$BATS_TEST_NUMBER
	d=/var/tmp/sbxsess-$SBX_VM_ROLE/$S
	mkdir -p "$d/shared" "$d/sandbox_scripts" "$d/bash_tools" \
		"$d/sandboxes/alpha" "$d/sandboxes/beta" "$d/sandboxes/gamma"
	printf 'echo from-alpha >/shared/alpha\nexec sleep 1000\n' >"$d/sandboxes/alpha/command"
	printf 'exec sleep 1000\n' >"$d/sandboxes/beta/command"
	echo "ro $d/missing /missing" >"$d/sandboxes/beta/mounts"
	printf 'exec sleep 1000\n' >"$d/sandboxes/gamma/command"
	for n in alpha beta gamma; do echo "$n.test" >"$d/sandboxes/$n/allow"; done
	ids=()
	if [ "$SBX_VM_ROLE" = root ]; then
		chown 1000:1000 "$d/shared"
		ids=(SBX_SESSION_UID=1000 SBX_SESSION_GID=1000)
	fi
}

teardown() {
	session stop "$d" >/dev/null 2>&1 || true
	rm -rf "/var/tmp/sbxsess-$SBX_VM_ROLE"
}

# With no fd above 2 open: the sandboxes keep what start inherits.
# session_exec replaces its shell: "session_exec ... &" gives the script's pid.
session_exec() {
	local f n
	for f in /proc/$BASHPID/fd/*; do
		n=${f##*/}
		[ "$n" -gt 2 ] && eval "exec $n>&-"
	done
	exec env "${ids[@]}" SBX_SESSION_CGROUP_ROOT="$SBX_VM_CGROUP" SBX_SESSION_PIDS=64 \
		SBX_SESSION_MEMORY=256M SBX_SESSION_READY_TIMEOUT=60 /sbx/contrib/session/sbx-session "$@"
}

session() {
	(session_exec "$@")
}

# No process names the session's directory any more (no pgrep here).
assert_no_process() {
	local p c left=
	for p in /proc/[0-9]*/cmdline; do
		c=$(tr '\0' ' ' <"$p" 2>/dev/null) || continue
		[[ $c == *"$d/"* ]] && left="$left $p: $c"
	done
	assert_equal "$left" ""
}

@test "a session under one cgroup parent: a child per sandbox, a failing one alone, nothing left after stop" {
	run -1 --separate-stderr session start "$d"
	[ "${lines[0]}" = "alpha ready" ] || fail "alpha: $(cat "$d/run/alpha/err" "$d/run/alpha/supervisor.log" "$d/run/alpha/broker.log" 2>&1)"
	assert_output "alpha ready
beta failed: the sandbox ended before it was ready (see $d/run/beta/err)
gamma ready"
	run -0 cat "$SBX_VM_CGROUP/$S/pids.max"
	assert_output 64
	run -0 cat "$SBX_VM_CGROUP/$S/memory.max"
	assert_output 268435456
	assert_dir_exists "$SBX_VM_CGROUP/$S/alpha"
	assert_dir_exists "$SBX_VM_CGROUP/$S/gamma"
	run -0 grep -c . "$SBX_VM_CGROUP/$S/alpha/cgroup.procs"
	run -0 grep -c . "$SBX_VM_CGROUP/$S/gamma/cgroup.procs"
	assert_not_exist "$SBX_VM_CGROUP/$S/beta"

	run -0 session stop "$d"
	assert_not_exist "$SBX_VM_CGROUP/$S"
	assert_not_exist "$d/run"
	assert_no_process
}

@test "SIGTERM while a sandbox is still starting: every sandbox, broker and cgroup of the session removed" {
	local pid st=0
	# beta's broker reads a --resolve-file that is a fifo: it waits there.
	rm "$d/sandboxes/beta/mounts"
	mkfifo -m 0666 "$d/hang"
	echo "--resolve-file $d/hang" >"$d/sandboxes/beta/broker-args"
	session_exec start "$d" >"$d.out" 2>"$d.err" &
	pid=$!
	exec 5>"$d/hang"
	# beta's broker is starting; the session's cgroup exists.
	assert_dir_exists "$SBX_VM_CGROUP/$S"
	kill -TERM "$pid"
	wait "$pid" || st=$?
	exec 5>&-
	assert_equal "$st" 143
	run -0 cat "$d.err"
	assert_output "sbx-session: fatal: stopped by SIGTERM while starting; every sandbox of $d stopped"
	assert_not_exist "$SBX_VM_CGROUP/$S"
	assert_not_exist "$d/run"
	assert_no_process
}

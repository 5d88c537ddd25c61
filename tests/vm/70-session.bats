#!/usr/bin/env bats
# contrib/session/sbx-session with cgroup limits: one sbx-cgroup parent holds
# the session's totals, one child per living sandbox; a failing initializer
# does not stop the others; tool calls by name run under the totals; stop
# leaves no cgroup, process, socket or run directory.

load helpers/vm

setup() {
	S=sess$BATS_TEST_NUMBER
	d=/var/tmp/sbxsess-$SBX_VM_ROLE/$S
	mkdir -p "$d/shared" "$d/sandbox_scripts" "$d/bash_tools" \
		"$d/sandboxes/alpha" "$d/sandboxes/beta" "$d/sandboxes/gamma"
	# alpha: an initializer, a ready script, the VM's helpers; beta: an
	# initializer that fails; gamma: a service as its command.
	printf 'echo from-alpha >/shared/alpha\necho inited >/tmp/inited\n' >"$d/sandboxes/alpha/init"
	printf 'test -e /tmp/inited\n' >"$d/sandboxes/alpha/ready"
	echo "ro /sbx/helpers /helpers" >"$d/sandboxes/alpha/mounts"
	printf 'echo "beta: no such tool" >&2\nexit 3\n' >"$d/sandboxes/beta/init"
	printf 'exec sleep 1000\n' >"$d/sandboxes/gamma/command"
	for n in alpha beta gamma; do echo "$n.test" >"$d/sandboxes/$n/allow"; done
	ids=()
	if [ "$SBX_VM_ROLE" = root ]; then
		chown 1000:1000 "$d/shared"
		ids=(--uid 1000 --gid 1000)
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
	local sub=$1
	shift
	# As root, the sandboxes' identity is start's option.
	[ "$sub" = start ] || ids=()
	# The console is a terminal: a tool call from one gets a pty (sbx-ns
	# --join), its output then with CRLF line ends.
	exec </dev/null env SBX_SESSION_CGROUP_ROOT="$SBX_VM_CGROUP" SBX_SESSION_PIDS=64 \
		SBX_SESSION_MEMORY=256M SBX_SESSION_READY_TIMEOUT=60 /sbx/contrib/session/sbx-session "$sub" "${ids[@]}" "$@"
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

@test "a session under one cgroup parent: a child per living sandbox, a failing initializer alone, tool calls under the totals, nothing left after stop" {
	local me=1000 n
	[ "$SBX_VM_ROLE" = root ] || me=$(id -u)
	run -1 --separate-stderr session start "$d"
	[ "${lines[0]}" = "alpha ready" ] || fail "alpha: $(cat "$d/run/alpha/err" "$d/run/alpha/supervisor.log" "$d/run/alpha/broker.log" 2>&1)"
	assert_output "alpha ready
beta failed: its initializer exited 3 (see $d/run/beta/err)
gamma ready"
	run -0 head -n 1 "$d/run/beta/err"
	assert_output "beta: no such tool"
	run -0 cat "$SBX_VM_CGROUP/$S/pids.max"
	assert_output 64
	run -0 cat "$SBX_VM_CGROUP/$S/memory.max"
	assert_output 268435456
	assert_dir_exists "$SBX_VM_CGROUP/$S/alpha"
	assert_dir_exists "$SBX_VM_CGROUP/$S/gamma"
	run -0 grep -c . "$SBX_VM_CGROUP/$S/alpha/cgroup.procs"
	run -0 grep -c . "$SBX_VM_CGROUP/$S/gamma/cgroup.procs"
	assert_not_exist "$SBX_VM_CGROUP/$S/beta"
	run -1 session status "$d" --json
	assert_output '{"name":"alpha","state":"ready","socket":"'"$d"'/run/alpha.sock"}
{"name":"beta","state":"failed","reason":"its initializer exited 3 (see '"$d"'/run/beta/err)"}
{"name":"gamma","state":"ready","socket":"'"$d"'/run/gamma.sock"}'

	# Tool calls by name: alpha's state persists, as its identity.
	run -0 --separate-stderr session exec "$d" alpha -- sh -c 'cat /tmp/inited /shared/alpha; echo one >/tmp/x; id -u'
	assert_output "inited
from-alpha
$me"
	run -0 --separate-stderr session exec "$d" alpha cat /tmp/x
	assert_output "one"
	run -1 --separate-stderr session exec "$d" gamma cat /tmp/x
	run -110 --separate-stderr session exec "$d" beta true
	assert_equal "$stderr" "sbx-session: fatal: sandbox 'beta' is not ready: failed: its initializer exited 3 (see $d/run/beta/err)"
	# A tool call runs in its sandbox's cgroup, under the session's total.
	run -1 --separate-stderr session exec "$d" alpha /helpers/forkbomb 1000
	[[ $output =~ ^forked\ ([0-9]+)\ children,\ then\ fork\ failed:\ EAGAIN$ ]] || fail "forkbomb: $output $stderr"
	n=${BASH_REMATCH[1]}
	[ "$n" -lt 64 ] || fail "forked $n children under a total of 64"
	# This kernel (6.1) counts the refusal in the forking task's cgroup.
	run -0 grep -E '^max [1-9]' "$SBX_VM_CGROUP/$S/alpha/pids.events"

	run -0 session stop "$d"
	assert_output ""
	assert_not_exist "$SBX_VM_CGROUP/$S"
	assert_not_exist "$d/run"
	assert_no_process
	run -1 session status "$d"
	assert_output "alpha stopped
beta stopped
gamma stopped"
}

@test "SIGTERM while a sandbox is still starting: every sandbox, broker and cgroup of the session removed" {
	local pid st=0
	# beta's broker reads a --resolve-file that is a fifo: it waits there.
	rm "$d/sandboxes/beta/init"
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

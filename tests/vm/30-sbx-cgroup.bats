#!/usr/bin/env bats
# sbx-cgroup on a kernel with cpu, memory and pids controllers: limits hold, every ending
# (exit, leftovers, timeout, cancellation, OOM) kills the whole tree and removes the cgroup.
# Runs as root and as the unprivileged owner of a delegated subtree.

load helpers/vm

setup() {
	R=$SBX_VM_CGROUP
	N=c$BATS_TEST_NUMBER
	P=p$BATS_TEST_NUMBER
	st=$BATS_TEST_TMPDIR/status
	: >"$st"
}

teardown() {
	vm_cgroup_remove "$R/$P/$N"
	vm_cgroup_remove "$R/$P/sub"
	vm_cgroup_remove "$R/$P/a"
	vm_cgroup_remove "$R/$P/b"
	vm_cgroup_remove "$R/$P"
	vm_cgroup_remove "$R/$N"
}

# The value of KEY in the exit line of the status file.
exit_field() {
	grep '"event":"exit"' "$st" | grep -o "\"$1\":[^,}]*" | cut -d: -f2
}

# pid is gone, or a zombie nobody reaped yet (a zombie holds no cgroup and runs nothing).
assert_dead() {
	local pid=$1 i
	for i in $(seq 600); do
		[ -e "/proc/$pid" ] || return 0
		grep -q '^[0-9]* (.*) Z ' "/proc/$pid/stat" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "process $pid is still running: $(cat "/proc/$pid/stat" 2>/dev/null)"
}

@test "limits are written to the child cgroup and read back before the command runs" {
	run -0 --separate-stderr sbx-cgroup --root "$R" --name "$N" --cpu 150 --memory 100M \
		--pids 32 -- cat "$R/$N/cpu.max" "$R/$N/memory.max" "$R/$N/memory.swap.max" "$R/$N/pids.max"
	assert_equal "$stderr" ""
	assert_output "150000 100000
104857600
0
32"
	assert_not_exist "$R/$N"
}

@test "the command's exit code passes through and the exit line reports a clean release" {
	run -7 --separate-stderr sbx-cgroup --root "$R" --name "$N" --pids 8 --status-fd 7 \
		-- sh -c 'exit 7' 7>"$st"
	assert_equal "$stderr" ""
	run -0 grep -c . "$st"
	assert_output 2
	run -0 sed -n 1p "$st"
	assert_output --regexp "^\{\"tool\":\"sbx-cgroup\",\"event\":\"start\"$SBX_VER,\"cgroup\":\"$R/$N\",\"pid\":[0-9]+,\"placement\":\"clone3\"\}$"
	local peak='[0-9]+'
	vm_memory_peak || peak=null
	run -0 sed -n 2p "$st"
	assert_output --regexp "^\{\"tool\":\"sbx-cgroup\",\"event\":\"exit\",\"code\":7,\"command_code\":7,\"cgroup\":\"$R/$N\",\"timed_out\":false,\"cancelled\":false,\"leftovers_killed\":false,\"oom_kill\":0,\"memory_limit_reached\":false,\"pids_max_hits\":0,\"cpu_usage_usec\":[0-9]+,\"cpu_throttled_usec\":0,\"memory_peak\":$peak,\"cleanup\":true\}$"
	assert_not_exist "$R/$N"
}

@test "the command runs in its own cgroup from its first instruction" {
	run -0 --separate-stderr sbx-cgroup --root "$R" --name "$N" -- cat /proc/self/cgroup
	if [ "$SBX_VM_ROLE" = root ]; then
		# root gets a cgroup namespace rooted at the child cgroup
		assert_output "0::/"
	else
		assert_output "0::/${R#/sys/fs/cgroup/}/$N"
	fi
}

@test "without clone3 the command is forked, placed, limited, and only then runs" {
	run -0 --separate-stderr "$SBX_TESTBIN/cg-noclone3" sbx-cgroup --root "$R" --name "$N" \
		--pids 8 --memory 64M --status-fd 7 \
		-- sh -c 'grep -qx $$ "$0/cgroup.procs" && cat "$0/pids.max" "$0/memory.max"' "$R/$N" 7>"$st"
	assert_equal "$stderr" ""
	assert_output "8
67108864"
	run -0 grep -c '"event":"start"'"$SBX_VER"',.*"placement":"fork"}$' "$st"
	assert_output 1
	assert_not_exist "$R/$N"
}

@test "a fork bomb stops at pids.max, is reported, and its children are killed" {
	run -1 --separate-stderr sbx-cgroup --root "$R" --name "$N" --pids 16 --status-fd 7 \
		-- "$SBX_TESTBIN/cg-forkbomb" 7>"$st"
	assert_output "forked 15 children, then fork failed: Resource temporarily unavailable"
	assert_equal "$stderr" "sbx-cgroup: note: pids limit 16 reached 1 time"
	assert_equal "$(exit_field pids_max_hits)" 1
	assert_equal "$(exit_field leftovers_killed)" true
	assert_equal "$(exit_field cleanup)" true
	assert_not_exist "$R/$N"
}

@test "a memory hog is OOM-killed, reported as oom_kill, and sbx-cgroup exits 105" {
	run -105 --separate-stderr sbx-cgroup --root "$R" --name "$N" --memory 32M --status-fd 7 \
		-- "$SBX_TESTBIN/cg-memhog" 256 7>"$st"
	assert_output ""
	if vm_memory_peak; then
		assert_regex "$stderr" '^sbx-cgroup: killed: memory limit 32 MiB reached \(oom_kill 1, peak [0-9]+ (MiB|bytes)\)$'
	else
		assert_equal "$stderr" "sbx-cgroup: killed: memory limit 32 MiB reached (oom_kill 1, peak unknown)"
	fi
	assert_equal "$(exit_field code)" 105
	assert_equal "$(exit_field signal)" 9
	assert_equal "$(exit_field oom_kill)" 1
	assert_equal "$(exit_field memory_limit_reached)" true
	local peak
	peak=$(exit_field memory_peak)
	if vm_memory_peak; then
		(( peak > 0 && peak <= 33554432 )) || fail "memory_peak $peak above 32 MiB"
	else
		assert_equal "$peak" null
	fi
	assert_not_exist "$R/$N"
}

@test "an OOM kill at a limit the command set below its cgroup is not the cgroup's memory limit reached" {
	# The command moves into a cgroup of its own below its cgroup with a
	# 16 MiB memory.max: the kill there is counted in the cgroup's
	# memory.events (the subtree), but its own 256 MiB were never reached.
	# (The shell's own "Killed" goes to /dev/null.)
	run -7 --separate-stderr sbx-cgroup --root "$R" --name "$N" --memory 256M --status-fd 7 -- \
		sh -c 'mkdir "$1/sub" && echo $$ >"$1/sub/cgroup.procs" && echo +memory >"$1/cgroup.subtree_control" &&
			echo 16M >"$1/sub/memory.max" && exec 2>/dev/null && { "$2" 64; echo "hog $?"; exit 7; }' sh "$R/$N" "$SBX_TESTBIN/cg-memhog" 7>"$st"
	assert_output "hog 137"
	if vm_memory_peak; then
		assert_regex "$stderr" '^sbx-cgroup: note: memory limit 256 MiB not reached: 1 process OOM-killed at the limit of a cgroup below \(peak [0-9]+ (MiB|bytes)\)$'
	else
		assert_equal "$stderr" "sbx-cgroup: note: memory limit 256 MiB not reached: 1 process OOM-killed at the limit of a cgroup below (peak unknown)"
	fi
	assert_equal "$(exit_field code)" 7
	assert_equal "$(exit_field oom_kill)" 1
	assert_equal "$(exit_field memory_limit_reached)" false
	assert_not_exist "$R/$N"
}

@test "a command that exits 105 itself is not reported as out of memory" {
	run -105 --separate-stderr sbx-cgroup --root "$R" --name "$N" --memory 32M --status-fd 7 -- sh -c 'exit 105' 7>"$st"
	assert_equal "$stderr" ""
	assert_equal "$(exit_field command_code)" 105
	assert_equal "$(exit_field oom_kill)" 0
	assert_equal "$(exit_field memory_limit_reached)" false
}

@test "a busy loop at --cpu 50 gets 40 to 60 percent of one core over 3 s" {
	run -0 --separate-stderr sbx-cgroup --root "$R" --name "$N" --cpu 50 --status-fd 7 \
		-- "$SBX_TESTBIN/cg-busy" 3 7>"$st"
	assert_equal "$stderr" ""
	local used throttled
	used=$(exit_field cpu_usage_usec)
	throttled=$(exit_field cpu_throttled_usec)
	(( used >= 1200000 && used <= 1800000 )) || fail "busy loop used $used us of 3000000"
	(( throttled > 0 )) || fail "never throttled ($throttled)"
	assert_not_exist "$R/$N"
}

@test "--timeout kills a grandchild that called setsid and closed its stdio" {
	local pidfile=$BATS_TEST_TMPDIR/pid
	run -104 --separate-stderr sbx-cgroup --root "$R" --name "$N" --timeout 3 --status-fd 7 \
		-- "$SBX_TESTBIN/cg-escape" "$pidfile" wait 7>"$st"
	assert_equal "$stderr" "sbx-cgroup: killed: timeout of 3 s reached"
	assert_equal "$(exit_field timed_out)" true
	# the ordered end: the grandchild SIGKILLed in the frozen cgroup, the command SIGTERMed
	assert_equal "$(exit_field signal)" 15
	assert_equal "$(exit_field grace_expired)" false
	assert_equal "$(exit_field cleanup)" true
	assert_dead "$(cat "$pidfile")"
	assert_not_exist "$R/$N"
}

@test "a setsid grandchild left behind by a command that exited is killed" {
	local pidfile=$BATS_TEST_TMPDIR/pid
	run -0 --separate-stderr sbx-cgroup --root "$R" --name "$N" --status-fd 7 \
		-- "$SBX_TESTBIN/cg-escape" "$pidfile" exit 7>"$st"
	assert_equal "$stderr" ""
	assert_equal "$(exit_field leftovers_killed)" true
	assert_dead "$(cat "$pidfile")"
	assert_not_exist "$R/$N"
}

@test "SIGTERM to sbx-cgroup cancels the command, cleans up, then exits 143" {
	local pidfile=$BATS_TEST_TMPDIR/pid ready=$BATS_TEST_TMPDIR/ready i
	sbx-cgroup --root "$R" --name "$N" --status-fd 7 --ready-fd 8 \
		-- "$SBX_TESTBIN/cg-escape" "$pidfile" wait 7>"$st" 8>"$ready" &
	local sbx=$!
	for i in $(seq 600); do [ -s "$pidfile" ] && break; sleep 0.1; done
	assert_file_not_empty "$ready"
	kill -TERM "$sbx"
	local rc=0
	wait "$sbx" || rc=$?
	assert_equal "$rc" 143
	assert_equal "$(exit_field cancelled)" true
	assert_equal "$(exit_field cancel_signal)" 15
	assert_equal "$(exit_field cleanup)" true
	assert_dead "$(cat "$pidfile")"
	assert_not_exist "$R/$N"
}

@test "the command dies with sbx-cgroup when sbx-cgroup is SIGKILLed" {
	sbx-cgroup --root "$R" --name "$N" --status-fd 7 -- sleep 1000 7>"$st" &
	local sbx=$! i pid=
	for i in $(seq 600); do
		pid=$(grep -o '"pid":[0-9]*' "$st" | cut -d: -f2)
		[ -n "$pid" ] && break
		sleep 0.1
	done
	[ -n "$pid" ] || fail "no start line"
	kill -KILL "$sbx"
	local rc=0
	wait "$sbx" || rc=$?
	assert_equal "$rc" 137
	assert_dead "$pid"
}

@test "two commands under one parent share its memory total" {
	run -0 --separate-stderr sbx-cgroup --root "$R" --parent "$P" --create --memory 64M
	assert_equal "$stderr" ""
	sbx-cgroup --root "$R" --parent "$P" --name a --memory 64M -- "$SBX_TESTBIN/cg-memhog" 40 4 &
	local a=$!
	sbx-cgroup --root "$R" --parent "$P" --name b --memory 64M -- "$SBX_TESTBIN/cg-memhog" 40 4 &
	local b=$! ra=0 rb=0
	wait "$a" || ra=$?
	wait "$b" || rb=$?
	# 80 MiB do not fit in 64 MiB: one of them is OOM-killed, the other may finish.
	[ "$ra" = 105 ] || [ "$rb" = 105 ] || fail "both survived: $ra $rb"
	[[ "$ra $rb" =~ ^(0|105)\ (0|105)$ ]] || fail "unexpected exit codes: $ra $rb"
	local peak
	if vm_memory_peak; then
		peak=$(cat "$R/$P/memory.peak")
		(( peak <= 67108864 )) || fail "the parent peaked at $peak"
	else
		assert_not_exist "$R/$P/memory.peak"
	fi
	run -0 --separate-stderr sbx-cgroup --root "$R" --parent "$P" --destroy
	assert_equal "$stderr" ""
	assert_not_exist "$R/$P"
}

@test "an existing parent with looser limits is refused and nothing runs" {
	run -0 sbx-cgroup --root "$R" --parent "$P" --create --memory 64M --pids 32
	run -102 --separate-stderr sbx-cgroup --root "$R" --parent "$P" --name "$N" --memory 32M \
		-- touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "$stderr" "sbx-cgroup: fatal: refusing looser limits: $R/$P/memory.max is '67108864', requested '33554432'"
	run -102 --separate-stderr sbx-cgroup --root "$R" --parent "$P" --name "$N" --pids 8 \
		-- touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "$stderr" "sbx-cgroup: fatal: refusing looser limits: $R/$P/pids.max is '32', requested '8'"
	run -102 --separate-stderr sbx-cgroup --root "$R" --parent "$P" --name "$N" --cpu 50 \
		-- touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "$stderr" "sbx-cgroup: fatal: refusing looser limits: $R/$P/cpu.max is 'max 100000', requested '50000 100000'"
	assert_not_exist "$BATS_TEST_TMPDIR/ran"
	assert_not_exist "$R/$P/$N"
	# equal or tighter is fine
	run -0 --separate-stderr sbx-cgroup --root "$R" --parent "$P" --name "$N" --memory 128M \
		--pids 32 -- true
	assert_equal "$stderr" ""
	assert_not_exist "$R/$P/$N"
}

@test "a controller that is not available is refused, naming it" {
	mkdir "$R/$P" "$R/$P/sub"
	run -101 --separate-stderr sbx-cgroup --root "$R/$P/sub" --name "$N" --pids 8 \
		-- touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "$stderr" "sbx-cgroup: fatal: hard limits unsupported: controller pids is not available in $R/$P/sub"
	run -101 --separate-stderr sbx-cgroup --root "$R/$P/sub" --name "$N" --cpu 10 --memory 1G \
		-- touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "$stderr" "sbx-cgroup: fatal: hard limits unsupported: controller cpu is not available in $R/$P/sub"
	assert_not_exist "$BATS_TEST_TMPDIR/ran"
	assert_not_exist "$R/$P/sub/$N"
}

@test "the command cannot write its own or its ancestors' limits or leave its cgroup" {
	run -0 sbx-cgroup --root "$R" --parent "$P" --create --memory 64M --pids 32
	if [ "$SBX_VM_ROLE" = root ]; then
		# as another uid: every limit and procs file above and at the command is root's
		run -0 --separate-stderr sbx-cgroup --root "$R" --parent "$P" --name "$N" --memory 64M \
			-- runas 65534 65534 "$SBX_TESTBIN/cg-write" max "$R/$P/memory.max" \
			"$R/$P/$N/memory.max" "$R/$P/$N/pids.max" "$R/$P/cgroup.procs" "$R/cgroup.procs"
		assert_output "$R/$P/memory.max: Permission denied
$R/$P/$N/memory.max: Permission denied
$R/$P/$N/pids.max: Permission denied
$R/$P/cgroup.procs: Permission denied
$R/cgroup.procs: Permission denied"
		# as root inside its cgroup namespace: no moving out (nsdelegate)
		run -0 --separate-stderr sbx-cgroup --root "$R" --parent "$P" --name "$N" \
			-- "$SBX_TESTBIN/cg-write" 0 "$R/runner/cgroup.procs" "$R/cgroup.procs"
		assert_output "$R/runner/cgroup.procs: No such file or directory
$R/cgroup.procs: No such file or directory"
	else
		# as the delegating uid, the way sbx-ns runs it: a user and cgroup namespace with
		# its own cgroupfs, which shows the command's cgroup and nothing above it
		run -0 --separate-stderr sbx-cgroup --root "$R" --parent "$P" --name "$N" --memory 64M \
			-- "$SBX_TESTBIN/cg-nsview" "$SBX_TESTBIN/cg-write" max /sys/fs/cgroup/memory.max /sys/fs/cgroup/pids.max \
			"$R/$P/memory.max" "$R/cgroup.procs"
		assert_output "/sys/fs/cgroup/memory.max: Operation not permitted
/sys/fs/cgroup/pids.max: Operation not permitted
$R/$P/memory.max: No such file or directory
$R/cgroup.procs: No such file or directory"
	fi
	run -0 cat "$R/$P/memory.max"
	assert_output 67108864
	assert_not_exist "$R/$P/$N"
}

@test "--delegate makes a subtree its user owns, with the controllers enabled, as root only" {
	if [ "$SBX_VM_ROLE" = root ]; then
		run -0 --separate-stderr sbx-cgroup --delegate "$R/$P" --user 1000
		assert_equal "$stderr" ""
		local f
		for f in "" /cgroup.procs /cgroup.threads /cgroup.subtree_control; do
			run -0 stat -c %u:%g "$R/$P$f"
			assert_output 1000:1000
		done
		run -0 stat -c %u "$R/$P/memory.max"
		assert_output 0
		run -0 cat "$R/$P/cgroup.subtree_control"
		assert_output "cpu memory pids"
		run -0 runas 1000 1000 mkdir "$R/$P/sub"
		run -102 --separate-stderr sbx-cgroup --delegate "$R/$P" --user 1000
		assert_equal "$stderr" "sbx-cgroup: fatal: refusing to delegate $R/$P: it exists already; to fix: pick another name, or rmdir it once nothing runs in it"
	else
		run -102 --separate-stderr sbx-cgroup --delegate "$R/$P" --user 1000
		assert_equal "$stderr" "sbx-cgroup: fatal: refusing to delegate: only root can; to fix: run sbx-cgroup --delegate as root, once, for uid 1000"
		assert_not_exist "$R/$P"
	fi
}

@test "--destroy kills what still runs under a parent and removes it" {
	local sbx i k rc
	# The supervisor and --destroy race to see the cgroup go: whichever
	# removes it, the supervisor reports the kill, never a failure.
	for k in 1 2 3 4 5; do
		: > "$st"
		run -0 sbx-cgroup --root "$R" --parent "$P" --create --pids 16
		sbx-cgroup --root "$R" --parent "$P" --name "$N" --status-fd 7 -- sleep 1000 7>"$st" 2>"$st.err" &
		sbx=$!
		for i in $(seq 600); do grep -q '"event":"start"' "$st" && break; sleep 0.1; done
		run -0 --separate-stderr sbx-cgroup --root "$R" --parent "$P" --destroy
		assert_equal "$stderr" ""
		rc=0
		wait "$sbx" || rc=$?
		assert_equal "$rc" 137
		assert_equal "$(cat "$st.err")" ""
		assert_not_exist "$R/$P"
	done
}

# SIGKILL of the supervisor kills its command (PR_SET_PDEATHSIG) but not what the command
# started: that lives on in the cgroup. A later run with the same name sees the recorded
# supervisor is gone, kills and removes the orphan, says so, and runs; while the supervisor
# lives, its cgroup is never touched.
@test "a later run reaps the cgroup of a SIGKILLed supervisor, and never one still supervised" {
	local pidfile=$BATS_TEST_TMPDIR/pid sbx gpid i k
	for k in 1 2 3; do
		rm -f "$pidfile"
		: >"$st"
		sbx-cgroup --root "$R" --name "$N" --pids 16 --status-fd 7 -- \
			sh -c 'sleep 1000 & echo $! >"$1"; wait' sh "$pidfile" 7>"$st" &
		sbx=$!
		for i in $(seq 600); do [ -s "$pidfile" ] && break; sleep 0.1; done
		gpid=$(cat "$pidfile")
		run -102 --separate-stderr sbx-cgroup --root "$R" --name "$N" -- true
		assert_equal "$stderr" "sbx-cgroup: fatal: refusing to reuse $R/$N: it exists already, supervised by pid $sbx"
		kill -0 "$gpid"
		kill -KILL "$sbx"
		wait "$sbx" || true
		# The grandchild is left, unsupervised, in the cgroup.
		run -0 grep -x "$gpid" "$R/$N/cgroup.procs"
		run -0 --separate-stderr sbx-cgroup --root "$R" --name "$N" -- echo ran
		assert_output "ran"
		assert_equal "$stderr" "sbx-cgroup: note: removed $R/$N, left by a supervisor that is gone (pid $sbx): killed what still ran in it"
		assert_dead "$gpid"
		assert_not_exist "$R/$N"
	done
	# A directory no sbx-cgroup made is not reaped.
	mkdir "$R/$N"
	run -102 --separate-stderr sbx-cgroup --root "$R" --name "$N" -- true
	assert_equal "$stderr" "sbx-cgroup: fatal: refusing to reuse $R/$N: it exists already"
}

# Starting a command in a cgroup needs write access to cgroup.procs of the common ancestor
# of the caller's cgroup and the target: a delegated user outside its subtree is told so.
@test "a delegated user started outside its subtree is told why sbx-cgroup cannot place the command" {
	if [ "$SBX_VM_ROLE" = user ]; then
		# Inside its subtree (the runner's cgroup): sbx-check agrees.
		run -0 --separate-stderr sbx-check host --cgroup-root "$R"
		assert_line "cgroup-placement   ok             this process's cgroup $R/runner may place commands below $R"
		return
	fi
	local out=/sys/fs/cgroup/sbx-root/$N user=/sys/fs/cgroup/sbx-user
	mkdir "$out"
	run -111 --separate-stderr vm_in_cgroup "$out" runas 1000 1000 sbx-cgroup --root "$user" --name "$N" -- true
	rmdir "$out" 2>/dev/null || true
	assert_equal "$stderr" "sbx-cgroup: fatal: unable to start the command in $user/$N: Permission denied: this process's cgroup $out is outside the subtree uid 1000 may manage, and placing a process needs write access to /sys/fs/cgroup/cgroup.procs (their common ancestor); to fix: start sbx-cgroup from inside that subtree (systemd-run --user --scope -p Delegate=yes sbx-cgroup ..., or first write the shell's pid into a leaf cgroup of it that uid 1000 owns)"
	assert_not_exist "$user/$N"
	mkdir "$out"
	run --separate-stderr vm_in_cgroup "$out" runas 1000 1000 sbx-check host --cgroup-root "$user"
	rmdir "$out" 2>/dev/null || true
	assert_line "cgroup-placement   missing        this process's cgroup $out is outside the subtree uid 1000 may manage: placing a command below $user needs write access to /sys/fs/cgroup/cgroup.procs; to fix: run sbx-cgroup from inside $user (systemd-run --user --scope -p Delegate=yes sbx-cgroup ..., or first write the shell's pid into a leaf cgroup of it that uid 1000 owns)"
}

#!/usr/bin/env bats
# A living sandbox under sbx-cgroup (sbx-cgroup --cgroup-fd N -- sbx-ns
# --serve --cgroup-fd N): the sandbox's totals in its cgroup, the sandbox
# in the leaf "sandbox", and a command that asks for limits of its own in
# a sibling "cmd-ID" made with CLONE_INTO_CGROUP; an OOM or pids limit
# there ends that command only. Root runs the commands as uid 1000; the
# user role is the delegated user itself.

load helpers/vm

setup() {
	R=$SBX_VM_CGROUP
	N=serve$BATS_TEST_NUMBER
	d=$(mktemp -d /var/tmp/serve.XXXXXX)
	chmod 0700 "$d"
	ws=/var/tmp/serve-ws-$SBX_VM_ROLE
	mkdir -p "$ws"
	ids=()
	if [ "$SBX_VM_ROLE" = root ]; then
		chown 1000:1000 "$ws"
		ids=(--uid 1000 --gid 1000)
	fi
	sock=$d/s
	mkfifo "$d/ready"
}

teardown() {
	if [ -n "${chain:-}" ]; then
		kill -KILL "$chain" 2>/dev/null
		wait "$chain" 2>/dev/null
	fi
	# A chain killed here leaves its sandbox's cgroups below its own.
	local sub
	if [ -d "$R/$N" ]; then
		echo 1 >"$R/$N/cgroup.kill" 2>/dev/null
		for sub in "$R/$N"/*/; do
			[ -d "$sub" ] && vm_cgroup_remove "${sub%/}"
		done
	fi
	vm_cgroup_remove "$R/$N"
	rm -rf "$d" "$ws"
}

# The chain, ready: sbx-cgroup with the totals (memory: $1, 256M unless
# given), sbx-ns serving.
up() {
	local line
	sbx-cgroup --root "$R" --name "$N" --memory "${1:-256M}" --pids 300 --cgroup-fd 9 --pass-fd 3 --status-fd 7 -- \
		sbx-ns "${ids[@]}" --workspace "$ws" --ro /sbx --serve "$sock" --cgroup-fd 9 --ready-fd 3 \
		3>"$d/ready" 7>"$d/cg-status" </dev/null >"$d/out" 2>"$d/err" &
	chain=$!
	read -r line <"$d/ready" || true
	if [ ! -S "$sock" ]; then
		cat "$d/err" "$d/cg-status"
		fail "the sandbox did not start"
	fi
}

# The sandbox's outer (sbx-cgroup's child) and its pid 1, from its leaf.
leaf_pids() {
	local p
	for p in $(cat "$R/$N/sandbox/cgroup.procs"); do
		if [ "$(awk '/^PPid:/ { print $2 }' "/proc/$p/status")" = "$chain" ]; then
			outer=$p
		else
			pid1=$p
		fi
	done
	[ -n "${outer:-}" ] && [ -n "${pid1:-}" ] || fail "no outer and pid 1 in $(cat "$R/$N/sandbox/cgroup.procs")"
}

# An OOM kill of a command in its own --memory cgroup, as sbx-ns reports it.
own_oom() {
	run --separate-stderr sbx-ns --join "$sock" --memory 32M -- /sbx/helpers/memhog 100 </dev/null
	assert_equal "$status $stderr" "105 sbx-ns: killed: its cgroup ran out of memory (--memory): the OOM killer ended it"
}

# sbx-cgroup's last line on the chain's stderr: one OOM kill under the
# sandbox, not at its total of $1 MiB.
assert_oom_note_not_total() {
	local last
	last=$(tail -n 1 "$d/err")
	if vm_memory_peak; then
		assert_regex "$last" "^sbx-cgroup: note: memory limit $1 MiB not reached: 1 process OOM-killed at the limit of a cgroup below \\(peak [0-9]+ (MiB|bytes)\\)\$"
	else
		assert_equal "$last" "sbx-cgroup: note: memory limit $1 MiB not reached: 1 process OOM-killed at the limit of a cgroup below (peak unknown)"
	fi
}

@test "the sandbox sits in its leaf; a command with limits gets its own cgroup under the totals, gone when it ends" {
	up
	run -0 cat "$R/$N/cgroup.subtree_control"
	assert_output --regexp '^(cpu )?memory pids$|^memory pids( cpu)?$|memory pids'
	assert_equal "$(grep -c . "$R/$N/sandbox/cgroup.procs")" 2
	assert_equal "$(cat "$R/$N/cgroup.procs")" ""
	run -0 sbx-ns --join "$sock" --detach --stdout /tmp/o --stderr /tmp/e --memory 32M --pids 20 -- sleep 1000 </dev/null
	assert_output 1
	assert_equal "$(cat "$R/$N/cmd-1/memory.max")" 33554432
	assert_equal "$(cat "$R/$N/cmd-1/memory.swap.max")" 0
	assert_equal "$(cat "$R/$N/cmd-1/pids.max")" 20
	assert_equal "$(grep -c . "$R/$N/cmd-1/cgroup.procs")" 1
	run -0 sbx-ns --join "$sock" --kill-job 1 </dev/null
	run -143 sbx-ns --join "$sock" --wait-job 1 </dev/null
	assert_file_not_exist "$R/$N/cmd-1"
	# Without limits a command stays in the sandbox's leaf.
	run -0 sbx-ns --join "$sock" -- sh -c 'cat /proc/self/cgroup' </dev/null
	assert_output "0::/sandbox"
	run -0 sbx-ns --join "$sock" --stop </dev/null
	run -0 wait "$chain"
	chain=
	assert_file_not_exist "$R/$N"
}

@test "an OOM in one command's cgroup ends that command only (105); the sandbox serves on" {
	up
	run --separate-stderr sbx-ns --join "$sock" --memory 32M -- /sbx/helpers/memhog 100 </dev/null
	echo "status $status: $stderr"
	assert_equal "$status" 105
	assert_equal "$stderr" "sbx-ns: killed: its cgroup ran out of memory (--memory): the OOM killer ended it"
	assert_file_not_exist "$R/$N/cmd-1"
	run -0 sbx-ns --join "$sock" -- /sbx/helpers/memhog 16 </dev/null
	assert_output "touched 16 MiB"
	run -0 sbx-ns --join "$sock" --stop </dev/null
	run -0 wait "$chain"
	chain=
	assert_file_not_exist "$R/$N"
	# The kill was at the command's 32 MiB, not at the sandbox's 256 MiB.
	assert_oom_note_not_total 256
}

@test "a command at its pids limit is reported (103) with what it started killed; the sandbox serves on" {
	up
	run -103 --separate-stderr sbx-ns --join "$sock" --pids 5 -- /sbx/helpers/forkbomb 50 </dev/null
	assert_output --regexp '^forked [0-9]+ children, then fork failed: EAGAIN$'
	assert_equal "$stderr" "sbx-ns: killed: it reached its cgroup's process limit (--pids): killed with what it started"
	assert_file_not_exist "$R/$N/cmd-1"
	run -0 sbx-ns --join "$sock" -- true </dev/null
	run -0 sbx-ns --join "$sock" --stop </dev/null
	run -0 wait "$chain"
	chain=
	# The command's 5, not the sandbox's 300: sbx-cgroup notes nothing.
	run -0 cat "$d/err"
	assert_output ""
}

@test "after an OOM in a command's own cgroup, pid 1 killed from outside ends the chain 103, not 105" {
	up
	own_oom
	leaf_pids
	kill -KILL "$pid1"
	local rc=0
	wait "$chain" || rc=$?
	chain=
	assert_equal "$rc" 103
	run -0 grep -c . "$d/err"
	assert_output 2
	run -0 head -n 1 "$d/err"
	assert_output "sbx-ns: fatal: the sandbox was lost: its pid 1 ended (Killed)"
	assert_oom_note_not_total 256
	assert_equal "$(grep -o '"code":[0-9]*,' "$d/cg-status" | tail -n 1)" '"code":103,'
	assert_file_not_exist "$R/$N"
}

@test "after an OOM in a command's own cgroup, the server killed with SIGKILL ends the chain 137, not 105" {
	up
	own_oom
	leaf_pids
	kill -KILL "$outer"
	local rc=0
	wait "$chain" || rc=$?
	chain=
	assert_equal "$rc" 137
	run -0 grep -c . "$d/err"
	assert_output 1
	assert_oom_note_not_total 256
	assert_file_not_exist "$R/$N"
	# The killed server's record of the workspace: taken over as documented.
	run -0 sbx-ns --recover --workspace "$ws"
}

@test "the sandbox's total reached by a command with a larger --memory: killed at the total, not as its own OOM" {
	up 64M
	run --separate-stderr sbx-ns --join "$sock" --memory 128M -- /sbx/helpers/memhog 100 </dev/null
	assert_equal "$status" 137
	assert_equal "$stderr" "sbx-ns: killed: the OOM killer ended it at a memory limit above its own --memory (the sandbox's total, or the host's)"
	run -0 sbx-ns --join "$sock" --stop </dev/null
	run -0 wait "$chain"
	chain=
	local last
	last=$(tail -n 1 "$d/err")
	if vm_memory_peak; then
		assert_regex "$last" '^sbx-cgroup: note: memory limit 64 MiB reached: 1 process OOM-killed \(peak [0-9]+ (MiB|bytes)\)$'
	else
		assert_equal "$last" "sbx-cgroup: note: memory limit 64 MiB reached: 1 process OOM-killed (peak unknown)"
	fi
}

@test "the first program OOM-killed at the sandbox's total stops the sandbox, and sbx-cgroup exits 105" {
	run --separate-stderr sbx-cgroup --root "$R" --name "$N" --memory 64M --cgroup-fd 9 -- \
		sbx-ns "${ids[@]}" --workspace "$ws" --ro /sbx --serve "$sock" --cgroup-fd 9 -- /sbx/helpers/memhog 100 </dev/null
	assert_equal "$status" 105
	run -0 grep -c . <<<"$stderr"
	assert_output 2
	assert_equal "$(head -n 1 <<<"$stderr")" "sbx-ns: warning: the first program (/sbx/helpers/memhog 100) exited 137: the sandbox stops"
	if vm_memory_peak; then
		assert_regex "$(tail -n 1 <<<"$stderr")" '^sbx-cgroup: killed: memory limit 64 MiB reached \(oom_kill 1, peak [0-9]+ (MiB|bytes)\)$'
	else
		assert_equal "$(tail -n 1 <<<"$stderr")" "sbx-cgroup: killed: memory limit 64 MiB reached (oom_kill 1, peak unknown)"
	fi
	assert_file_not_exist "$R/$N"
}

@test "limits need a sandbox with cgroups of its own; --cgroup-fd needs --serve and a cgroup of sbx-ns alone" {
	sbx-ns "${ids[@]}" --workspace "$ws" --serve "$sock" --ready-fd 3 3>"$d/ready" </dev/null 2>"$d/err" &
	chain=$!
	read -r line <"$d/ready"
	run -100 --separate-stderr sbx-ns --join "$sock" --memory 32M -- true </dev/null
	assert_equal "$stderr" "sbx-ns: usage: --memory, --pids and --cpu need a sandbox with cgroups of its own (sbx-cgroup --cgroup-fd N ... sbx-ns --serve PATH --cgroup-fd N)"
	run -0 sbx-ns --join "$sock" --stop </dev/null
	run -0 wait "$chain"
	chain=
	run -100 --separate-stderr sbx-ns "${ids[@]}" --workspace "$ws" --cgroup-fd 9 -- true 9<"$R"
	assert_equal "$stderr" "sbx-ns: usage: --cgroup-fd needs --serve (a one-shot run's cgroup is sbx-cgroup's)"
	# The role's subtree holds the test runner too: not sbx-ns's alone.
	run -101 --separate-stderr sbx-ns "${ids[@]}" --workspace "$ws" --serve "$sock" --cgroup-fd 9 9<"$R/runner"
	assert_equal "$stderr" "sbx-ns: fatal: unable to make command cgroups: the cgroup of --cgroup-fd 9 holds other processes than sbx-ns (give it a cgroup of its own: sbx-cgroup --cgroup-fd)"
	assert_file_not_exist "$sock"
	run -100 --separate-stderr sbx-cgroup --root "$R" --name "$N" --cgroup-fd 7 -- true 7>/dev/null
	assert_equal "$stderr" "sbx-cgroup: usage: --cgroup-fd: fd 7 is open (name a free fd: sbx-cgroup opens the cgroup on it)"
}

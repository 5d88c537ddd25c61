#!/usr/bin/env bats
# sbx-cgroup at the top of a chain: killing it with SIGKILL must take down everything below,
# here a whole sbx-ns sandbox (PDEATHSIG at each hop, the pid namespace's end). Needs sbx-ns
# in $SBX_BIN and a VM root that pivot_root accepts (not the initramfs rootfs itself).

load helpers/vm

setup() {
	R=$SBX_VM_CGROUP
	N=chain$BATS_TEST_NUMBER
	st=$BATS_TEST_TMPDIR/status
	: >"$st"
}

teardown() {
	vm_cgroup_remove "$R/$N"
	rm -rf "/var/tmp/cg-ws-$SBX_VM_ROLE" /var/tmp/ran
}

@test "SIGKILL to sbx-cgroup takes the whole sandbox below it down, through sbx-ns" {
	local ws=/var/tmp/cg-ws-$SBX_VM_ROLE ids=() i n=0
	mkdir -p "$ws"
	if [ "$SBX_VM_ROLE" = root ]; then
		chown 1000:1000 "$ws"
		ids=(--uid 1000 --gid 1000)
	fi
	sbx-cgroup --root "$R" --name "$N" --status-fd 7 -- sbx-ns "${ids[@]}" --workspace "$ws" \
		-- sh -c 'sleep 1000 & setsid sleep 1000 & wait' 7>"$st" &
	local sbx=$!
	# sbx-ns, its init, the shell and two sleeps
	for i in $(seq 600); do
		n=$(grep -c . "$R/$N/cgroup.procs" 2>/dev/null) || n=0
		[ "$n" -ge 5 ] && break
		sleep 0.1
	done
	[ "$n" -ge 5 ] || fail "the sandbox did not start: $n processes; $(cat "$st")"
	kill -KILL "$sbx"
	local rc=0
	wait "$sbx" || rc=$?
	assert_equal "$rc" 137
	for i in $(seq 600); do
		grep -qx 'populated 0' "$R/$N/cgroup.events" && break
		sleep 0.1
	done
	run -0 grep populated "$R/$N/cgroup.events"
	assert_output "populated 0"
}

# The deny-write end check runs for every way a run of the chain ends. Each
# command plants an executable hook and then outlives its run, one way or
# another; the hook must be inert by the time the chain (or --recover) is done.
plant='mkdir -p .git/hooks; printf "#!/bin/sh\ntouch /var/tmp/ran\n" > .git/hooks/pre-commit; chmod 755 .git/hooks/pre-commit; touch planted'
moved="sbx-ns: warning: deny-write: the command created the protected path .git/hooks/pre-commit; moved it to .git/hooks/pre-commit.sbx-denied and cleared its execute bits"

chain_ws() {
	ws=/var/tmp/cg-ws-$SBX_VM_ROLE
	ids=()
	mkdir -p "$ws"
	if [ "$SBX_VM_ROLE" = root ]; then
		chown 1000:1000 "$ws"
		ids=(--uid 1000 --gid 1000)
	fi
}

assert_inert() {
	run -0 ls -l "$ws/.git/hooks"
	assert_output --regexp '^total [0-9]+
-rw-r--r-- +[0-9]+ .* pre-commit\.sbx-denied$'
}

@test "sbx-cgroup's --timeout ends sbx-ns below in order: its end check makes the planted hook inert" {
	chain_ws
	run -104 --separate-stderr sbx-cgroup --root "$R" --name "$N" --timeout 3 --status-fd 7 -- \
		sbx-ns "${ids[@]}" --workspace "$ws" -- sh -c "$plant; exec sleep 1000" 7>"$st"
	assert_equal "$stderr" "$moved
sbx-cgroup: killed: timeout of 3 s reached"
	assert_inert
	run -0 grep -c '"timed_out":true,.*"grace_ms":5000,"grace_expired":false,' "$st"
}

@test "cancelling sbx-cgroup (SIGTERM) ends sbx-ns below in order: its end check runs" {
	chain_ws
	sbx-cgroup --root "$R" --name "$N" --status-fd 7 -- sbx-ns "${ids[@]}" --workspace "$ws" \
		-- sh -c "$plant; sleep 1000 & setsid sleep 1000 & wait" 7>"$st" 2>"$BATS_TEST_TMPDIR/err" &
	local sbx=$! rc=0 i
	for i in $(seq 600); do [ -e "$ws/planted" ] && break; sleep 0.1; done
	kill -TERM "$sbx"
	wait "$sbx" || rc=$?
	assert_equal "$rc" 143
	run -0 cat "$BATS_TEST_TMPDIR/err"
	assert_output "$moved"
	assert_inert
	run -0 grep -c '"cancelled":true,"cancel_signal":15,.*"grace_expired":false,' "$st"
}

@test "an OOM kill under sbx-cgroup's --memory leaves sbx-ns's outer to run the end check" {
	chain_ws
	local hog
	hog=$(command -v memhog)
	run --separate-stderr sbx-cgroup --root "$R" --name "$N" --memory 32M -- \
		sbx-ns "${ids[@]}" --workspace "$ws" --ro "${hog%/*}" -- sh -c "$plant; exec $hog 256"
	[ "$status" = 105 ] || fail "exit $status: $stderr"
	assert_regex "$stderr" "^$moved
sbx-cgroup: killed: memory limit 32 MiB reached"
	assert_inert
}

@test "after SIGKILL of the whole chain, sbx-ns --recover makes the planted hook inert" {
	chain_ws
	sbx-cgroup --root "$R" --name "$N" -- sbx-ns "${ids[@]}" --workspace "$ws" \
		-- sh -c "$plant; exec sleep 1000" 2>/dev/null &
	local sbx=$! i
	for i in $(seq 600); do [ -e "$ws/planted" ] && break; sleep 0.1; done
	# every process of the chain at once: nothing survives to check
	kill -KILL "$sbx" $(cat "$R/$N/cgroup.procs")
	wait "$sbx" || :
	run -0 ls -l "$ws/.git/hooks/pre-commit"
	assert_output --regexp '^-rwxr-xr-x '
	run -0 --separate-stderr sbx-ns --recover --workspace "$ws" --status-fd 7 7>"$st"
	assert_equal "$stderr" "sbx-ns: warning: deny-write: an earlier run's command (killed) created the protected path .git/hooks/pre-commit; moved it to .git/hooks/pre-commit.sbx-denied and cleared its execute bits"
	assert_inert
	run -0 tail -1 "$st"
	assert_output '{"tool":"sbx-ns","event":"exit","code":0,"recover":true}'
}

@test "a fork bomb racing the freeze under --pids: the timeout still ends in order and the end check runs" {
	chain_ws
	run --separate-stderr sbx-cgroup --root "$R" --name "$N" --pids 48 --timeout 3 --status-fd 7 -- \
		sbx-ns "${ids[@]}" --workspace "$ws" -- \
		sh -c "$plant; (b() { while :; do b & done; }; b) 2>/dev/null & exec sleep 1000" 7>"$st"
	[ "$status" = 104 ] || fail "exit $status: $stderr"
	assert_regex "$stderr" "^$moved
sbx-cgroup: killed: timeout of 3 s reached
sbx-cgroup: note: pids limit 48 reached [0-9]+ times\$"
	assert_inert
	run -0 grep -c '"timed_out":true,.*"grace_expired":false,.*"cleanup":true}$' "$st"
}

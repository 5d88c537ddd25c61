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
	rm -rf "/var/tmp/cg-ws-$SBX_VM_ROLE"
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

#!/usr/bin/env bats
# sbx-ns's deny-write when the whole chain is SIGKILLed (sbx-ns has no
# chance to act): the next sbx-ns run on the workspace moves the protected
# paths the killed command created aside before its own command starts.
# (A timeout or cancellation ends the chain in order and sbx-ns checks
# itself: tests/vm/31-sbx-cgroup-chain.bats.)

load helpers/vm

setup() {
	R=$SBX_VM_CGROUP
	N=deny$BATS_TEST_NUMBER
}

teardown() {
	vm_cgroup_remove "$R/$N"
	rm -rf "/var/tmp/deny-ws-$SBX_VM_ROLE"
}

@test "SIGKILL of the whole chain leaves the hook; the next run makes it inert before its command runs" {
	local ws=/var/tmp/deny-ws-$SBX_VM_ROLE ids=() i
	mkdir -p "$ws"
	if [ "$SBX_VM_ROLE" = root ]; then
		chown 1000:1000 "$ws"
		ids=(--uid 1000 --gid 1000)
	fi
	sbx-cgroup --root "$R" --name "$N" -- sbx-ns "${ids[@]}" --workspace "$ws" -- \
		sh -c 'echo K > .env; mkdir -p .git/hooks; printf "#!/bin/sh\n" > .git/hooks/pre-commit; chmod 755 .git/hooks/pre-commit; touch planted; exec sleep 1000' 2>/dev/null &
	local sbx=$!
	for i in $(seq 600); do [ -e "$ws/planted" ] && break; sleep 0.1; done
	kill -KILL "$sbx" $(cat "$R/$N/cgroup.procs")
	wait "$sbx" || :
	rm "$ws/planted"
	# Killed with the chain: nothing was moved yet.
	assert_file_exist "$ws/.env"
	assert_file_exist "$ws/.git/hooks/pre-commit"
	run -0 --separate-stderr sbx-ns "${ids[@]}" --workspace "$ws" -- sh -c 'test ! -e .git/hooks/pre-commit && echo inert'
	assert_output inert
	assert_equal "$stderr" "sbx-ns: warning: deny-write: an earlier run's command (killed) created the protected path .env; moved it to .env.sbx-denied
sbx-ns: warning: deny-write: an earlier run's command (killed) created the protected path .git/hooks/pre-commit; moved it to .git/hooks/pre-commit.sbx-denied and cleared its execute bits"
	run -0 ls -A "$ws" "$ws/.git/hooks"
	assert_output "$ws:
.env.sbx-denied
.git

$ws/.git/hooks:
pre-commit.sbx-denied"
}

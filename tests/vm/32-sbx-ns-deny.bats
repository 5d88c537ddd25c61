#!/usr/bin/env bats
# sbx-ns's deny-write when sbx-cgroup's --timeout kills the whole chain
# (cgroup.kill: sbx-ns has no chance to act): the next sbx-ns run on the
# workspace moves the protected paths the killed command created aside.

load helpers/vm

setup() {
	R=$SBX_VM_CGROUP
	N=deny$BATS_TEST_NUMBER
}

teardown() {
	vm_cgroup_remove "$R/$N"
	rm -rf "/var/tmp/deny-ws-$SBX_VM_ROLE"
}

@test "sbx-cgroup's --timeout kills sbx-ns with its sandbox; the next run makes the command's protected paths inert" {
	local ws=/var/tmp/deny-ws-$SBX_VM_ROLE ids=() i
	mkdir -p "$ws"
	if [ "$SBX_VM_ROLE" = root ]; then
		chown 1000:1000 "$ws"
		ids=(--uid 1000 --gid 1000)
	fi
	run -104 --separate-stderr sbx-cgroup --root "$R" --name "$N" --timeout 15 -- sbx-ns "${ids[@]}" --workspace "$ws" -- \
		sh -c 'echo K > .env; mkdir -p .git/hooks; printf "#!/bin/sh\n" > .git/hooks/pre-commit; chmod 755 .git/hooks/pre-commit; exec sleep 1000'
	# Killed with the chain: nothing was moved yet.
	assert_file_exist "$ws/.env"
	assert_file_exist "$ws/.git/hooks/pre-commit"
	run -0 --separate-stderr sbx-ns "${ids[@]}" --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: warning: deny-write: an earlier run's command (killed) created the protected path .env; moved it to .env.sbx-denied
sbx-ns: warning: deny-write: an earlier run's command (killed) created the protected path .git/hooks/pre-commit; moved it to .git/hooks/pre-commit.sbx-denied and cleared its execute bits"
	run -0 ls -A "$ws" "$ws/.git/hooks"
	assert_output "$ws:
.env.sbx-denied
.git

$ws/.git/hooks:
pre-commit.sbx-denied"
}

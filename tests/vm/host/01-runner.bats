#!/usr/bin/env bats
# The VM runner itself: a failing VM test, a VM that never reports, a VM that stops
# halfway and a kernel that cannot boot must each make tests/vm/run.sh fail, never pass
# and never hang. Each case boots QEMU once (a few seconds under TCG).

bats_require_minimum_version 1.5.0
bats_load_library bats-support
bats_load_library bats-assert

setup() {
	here=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
	fixtures=$BATS_TEST_DIRNAME/fixtures
	export SBX_ROOT=${SBX_ROOT:-$(cd "$here/../.." && pwd)}
	export SBX_VM_WORK=$BATS_TEST_TMPDIR/vm
}

teardown() {
	rm -f "$SBX_VM_WORK"/*.img
}

@test "failing, skipped and hung VM tests make the runner fail and are named as failed in both roles" {
	SBX_VM_TEST_TIMEOUT=5 run -1 "$here/run.sh" --suite "$fixtures/must-fail.bats"
	assert_line "[root] ok 1 this test passes"
	assert_line "[root] ok 2 this test passes and prints fake end markers into the TAP stream"
	assert_line "[root] #SBXVM END"
	assert_line "[root] not ok 3 this test fails on purpose"
	assert_line "[user] not ok 3 this test fails on purpose"
	assert_line "  [root] not ok 3 this test fails on purpose"
	assert_line "  [root] ok 4 this test skips, which counts as a failure # skip on purpose"
	assert_line "  [user] ok 4 this test skips, which counts as a failure # skip on purpose"
	assert_line "  [root] not ok 5 this test hangs, which counts as a failure at the per-test timeout # timeout after 5s"
	assert_line "  [user] not ok 5 this test hangs, which counts as a failure at the per-test timeout # timeout after 5s"
	assert_line --index $((${#lines[@]} - 1)) "vm: 4 passed, 6 failed"
}

@test "a VM that never reports makes the runner fail at its timeout instead of hanging" {
	local start=$SECONDS
	SBX_VM_TIMEOUT=20 run -1 "$here/run.sh" --suite "$fixtures/must-fail.bats" \
		--init "$fixtures/hang-init.sh"
	assert_line "vm: FAIL: timeout: the VM did not finish within 20 s"
	assert_line --index $((${#lines[@]} - 1)) "vm: 0 passed, 0 failed"
	# The point of the test is the bound: 20 s of VM plus building the image.
	(( SECONDS - start < 60 )) || fail "the runner took $((SECONDS - start)) s"
}

@test "results that stop before the end marker make the runner fail" {
	run -1 "$here/run.sh" --suite "$fixtures/must-fail.bats" --init "$fixtures/truncate-init.sh"
	assert_line "[root] ok 1 the first result arrives"
	assert_line "vm: FAIL: results truncated: no end marker (qemu exit status 0)"
	assert_line "vm: FAIL: role root: results truncated (no end marker)"
	assert_line --index $((${#lines[@]} - 1)) "vm: 1 passed, 0 failed"
}

@test "a kernel that cannot boot makes the runner fail with a boot failure" {
	run -1 "$here/run.sh" --suite "$fixtures/must-fail.bats" --kernel "$fixtures/bogus-kernel"
	assert_line "vm: FAIL: boot failure: the VM sent no result (qemu exit status 1)"
	assert_line --index $((${#lines[@]} - 1)) "vm: 0 passed, 0 failed"
}

@test "an unknown option is a usage error" {
	run -2 "$here/run.sh" --frobnicate
	assert_output "vm: fatal: usage: tests/vm/run.sh [--suite FILE_OR_DIR...] [--kernel FILE [--modules DIR]] [--init FILE] [--debian-root DIR]"
}

@test "--debian-root needs a directory holding a Debian root" {
	run -2 "$here/run.sh" --debian-root
	assert_output "vm: fatal: --debian-root needs a directory"
	run -2 "$here/run.sh" --debian-root "$BATS_TEST_TMPDIR"
	assert_output "vm: fatal: --debian-root $BATS_TEST_TMPDIR holds no Debian root (no usr/bin/dpkg)"
	run -2 "$here/run.sh" --debian-root "$BATS_TEST_TMPDIR/none"
	assert_output "vm: fatal: --debian-root $BATS_TEST_TMPDIR/none holds no Debian root (no usr/bin/dpkg)"
}

@test "--modules needs --kernel and a directory with a modules.dep" {
	run -2 "$here/run.sh" --modules "$BATS_TEST_TMPDIR"
	assert_output "vm: fatal: --modules needs --kernel"
	run -2 "$here/run.sh" --kernel "$fixtures/bogus-kernel" --modules "$BATS_TEST_TMPDIR"
	assert_output "vm: fatal: $BATS_TEST_TMPDIR has no modules.dep (run depmod)"
	run -2 "$here/run.sh" --kernel "$fixtures/bogus-kernel" --modules
	assert_output "vm: fatal: --modules needs a directory"
}

@test "kernel.sh knows only the pinned kernels and fetches nothing for others" {
	run -2 "$here/kernel.sh" 4.19
	assert_output "vm-kernel: fatal: no kernel named '4.19' in $here/kernels"
	run -2 "$here/kernel.sh"
	assert_output "vm-kernel: fatal: usage: tests/vm/kernel.sh NAME (a name from tests/vm/kernels)"
}

@test "timeouts that are not positive numbers are usage errors" {
	SBX_VM_TIMEOUT=0 run -2 "$here/run.sh"
	assert_output "vm: fatal: SBX_VM_TIMEOUT must be a positive number of seconds"
	SBX_VM_TIMEOUT=20s run -2 "$here/run.sh"
	assert_output "vm: fatal: SBX_VM_TIMEOUT must be a positive number of seconds"
	SBX_VM_TEST_TIMEOUT= run -2 "$here/run.sh"
	assert_output "vm: fatal: SBX_VM_TEST_TIMEOUT must be a positive number of seconds"
	SBX_VM_TEST_TIMEOUT=-5 run -2 "$here/run.sh"
	assert_output "vm: fatal: SBX_VM_TEST_TIMEOUT must be a positive number of seconds"
}

@test "roles, memory, host files and the extra directory are checked before anything is built" {
	SBX_VM_ROLES= run -2 "$here/run.sh"
	assert_output "vm: fatal: SBX_VM_ROLES must be 'root user', root or user, not ''"
	SBX_VM_ROLES='user root' run -2 "$here/run.sh"
	assert_output "vm: fatal: SBX_VM_ROLES must be 'root user', root or user, not 'user root'"
	local m
	for m in 0 0G 1 -1G 1.5G 1T 99999999999999999999G ''; do
		SBX_VM_MEMORY=$m run -2 "$here/run.sh"
		assert_output "vm: fatal: SBX_VM_MEMORY must be a size such as 1G or 2048M, not '$m'"
	done
	SBX_VM_HOST_FILES=usr/bin/git run -2 "$here/run.sh"
	assert_output "vm: fatal: SBX_VM_HOST_FILES: usr/bin/git is not an absolute path"
	SBX_VM_HOST_FILES="/usr/bin/git $BATS_TEST_TMPDIR/none" run -2 "$here/run.sh"
	assert_output "vm: fatal: SBX_VM_HOST_FILES: $BATS_TEST_TMPDIR/none does not exist"
	: >"$BATS_TEST_TMPDIR/file"
	SBX_VM_EXTRA=$BATS_TEST_TMPDIR/file run -2 "$here/run.sh"
	assert_output "vm: fatal: SBX_VM_EXTRA: $BATS_TEST_TMPDIR/file is not a directory"
	[ ! -e "$SBX_VM_WORK" ]
}

@test "the soak's sizes and seed are checked before the VM boots" {
	local soak=$here/../soak/run.sh
	SOAK_SECONDS=0 run -2 "$soak"
	assert_output "soak: SOAK_SECONDS is a positive number of seconds, not '0'"
	SOAK_SECONDS=10s run -2 "$soak"
	assert_output "soak: SOAK_SECONDS is a positive number of seconds, not '10s'"
	SOAK_SECONDS=41 run -2 "$soak"
	assert_output "soak: SOAK_SECONDS is at least 42 (every fault kind once, 7 s apart), not 41"
	SOAK_SANDBOXES=-1 run -2 "$soak"
	assert_output "soak: SOAK_SANDBOXES is a number from 1 to 60, not '-1'"
	SOAK_SANDBOXES=61 run -2 "$soak"
	assert_output "soak: SOAK_SANDBOXES is a number from 1 to 60 (the broker takes 64 sandboxes), not 61"
	SOAK_SEED=x run -2 "$soak"
	assert_output "soak: SOAK_SEED is a positive number, not 'x'"
	SOAK_OUT=$BATS_TEST_TMPDIR/soak run -2 "$soak" --plott
	assert_output "soak: usage: tests/soak/run.sh [--plot]"
	[ ! -e "$BATS_TEST_TMPDIR/soak" ]
}

@test "a soak killed with its VM is cleaned up by the next run, which says so" {
	local out=$BATS_TEST_TMPDIR/soak
	mkdir -p "$out/vm" "$out/extra"
	# What a killed run leaves: its pid file, and its VM holding the lock.
	sleep 1000 9>"$out/vm/lock" &
	local vm=$!
	bash -c 'exit 0' &
	local dead=$!
	wait $dead
	echo $dead >"$out/pid"
	# This run stops before its VM boots: its helpers are not built.
	mkdir "$BATS_TEST_TMPDIR/nohelpers"
	SOAK_OUT=$out SOAK_SECONDS=42 SOAK_SANDBOXES=1 SBX_TESTBIN=$BATS_TEST_TMPDIR/nohelpers \
		run -1 "$here/../soak/run.sh"
	assert_line --index 0 "soak: removing what a killed run (pid $dead) left: its VM (pid $vm), $out/vm, $out/extra"
	assert_line --partial "is not built (run: make test-progs)"
	assert_line "soak: did not finish (no closing line in the VM's results)"
	run ! kill -0 $vm
	[ ! -e "$out/pid" ]
}

@test "a suite path that does not exist is an error" {
	run -2 "$here/run.sh" --suite "$BATS_TEST_TMPDIR/nope.bats"
	assert_output "vm: fatal: no such suite file or directory: $BATS_TEST_TMPDIR/nope.bats"
}

@test "a second run on a work dir in use is refused" {
	mkdir -p "$SBX_VM_WORK"
	exec 8>"$SBX_VM_WORK/lock"
	flock 8
	run -2 "$here/run.sh"
	exec 8>&-
	assert_output "vm: fatal: another run is using $SBX_VM_WORK (set SBX_VM_WORK)"
}

@test "a work dir with a comma is refused, since QEMU options could not name it" {
	SBX_VM_WORK=$BATS_TEST_TMPDIR/a,b run -2 "$here/run.sh"
	assert_output "vm: fatal: SBX_VM_WORK must not contain a comma (QEMU option syntax): $BATS_TEST_TMPDIR/a,b"
}

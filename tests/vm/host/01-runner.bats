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

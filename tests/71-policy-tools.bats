#!/usr/bin/env bats
# The tools under a baseline: sbx-cgroup and sbx-quota refuse or clamp
# their limits.

bats_require_minimum_version 1.5.0
load helpers

setup_file() {
	sbx_test_user
	PT_DIR=$(sbx_scratch)
	export PT_DIR
	mkdir -m 0777 "$PT_DIR/ws"
	mkdir "$PT_DIR/ro"
	printf '{"sandbox":{"readableRoots":[".","%s/ro"],"writableRoots":["."],"denyWrite":["secrets/**"]},"resources":{"memory_mb":1024,"disk_mb":4096}}\n' "$PT_DIR" >"$PT_DIR/base.json"
	printf '{"sandbox":{"fallback":"unsafe-host-process","unsafeAllowHostProcess":true}}\n' >"$PT_DIR/unsafe.json"
	chmod 0644 "$PT_DIR/"*.json
}

teardown_file() { rm -rf "$PT_DIR"; }

@test "sbx-cgroup refuses a limit above the baseline's before touching any cgroup" {
	run -102 --separate-stderr sbx-cgroup --root /sys/fs/cgroup/unified --name pol --memory 2G --baseline "$PT_DIR/base.json" -- true
	assert_equal "$stderr" "sbx-cgroup: fatal: policy refused: --memory: 2048 MiB is more than the baseline's 1024 MiB (--baseline $PT_DIR/base.json: \$.resources.memory_mb)"
}

@test "sbx-cgroup --clamp narrows to the baseline and says so on the status fd" {
	run -101 --separate-stderr sbx-cgroup --root /sys/fs/cgroup/unified --name pol --memory 2G --clamp --baseline "$PT_DIR/base.json" --status-fd 5 -- true 5>"$BATS_TEST_TMPDIR/st"
	assert_equal "$(head -1 "$BATS_TEST_TMPDIR/st")" '{"tool":"sbx-cgroup","event":"policy","baseline":true,"clamped":["resources.memory_mb"],"unsafe_fallback":false}'
}

@test "sbx-quota verify refuses a disk above the baseline's" {
	run -102 --separate-stderr sbx-quota verify --workspace "$PT_DIR/ws" --disk 5G --baseline "$PT_DIR/base.json" -- true
	assert_equal "$stderr" "sbx-quota: fatal: policy refused: --disk: 5120 MiB is more than the baseline's 4096 MiB (--baseline $PT_DIR/base.json: \$.resources.disk_mb)"
}

#!/usr/bin/env bats
# sbx-check host tries the mount steps sbx-ns will take to build its root, by
# the interface sbx-ns will choose on this kernel, and names it. ns-nomountapi
# hides the new mount API as on Linux < 5.12; tests/vm/ proves both on real
# kernels (Debian 12's and Debian 11's 5.10).

load helpers

setup_file() {
	sbx_test_user
}

new='the new mount API (open_tree, mount_setattr, move_mount): a read-only, nosuid, nodev bind of /usr and its submounts works'
classic='the classic mount calls (no mount_setattr here: it came in Linux 5.12): bind through /proc/self/fd/N, then remount: a read-only, nosuid, nodev bind of /usr and its submounts works'

@test "host: the mount steps work by the new mount API, as root and unprivileged" {
	run -101 --separate-stderr sbx-check host
	assert_equal "$stderr" ""
	assert_line "mounts             ok             $new api=new"
	run -101 --separate-stderr as_user sbx-check host
	assert_line "mounts             ok             $new api=new"
}

@test "host: without the new mount API the classic calls are tried and named" {
	run -101 --separate-stderr "$SBX_TESTBIN/ns-nomountapi" "$SBX_BIN/sbx-check" host
	assert_equal "$stderr" ""
	assert_line "mounts             ok             $classic api=classic"
	run -101 --separate-stderr as_user "$SBX_TESTBIN/ns-nomountapi" "$SBX_BIN/sbx-check" host --json
	assert_output --partial "{\"name\":\"mounts\",\"class\":\"isolation\",\"status\":\"ok\",\"detail\":\"$classic\",\"api\":\"classic\"}"
}

@test "host: mount steps refused (a container's seccomp profile) fail closed with 106 and the step" {
	run -106 --separate-stderr "$SBX_TESTBIN/ns-nomountapi" --deny-mount "$SBX_BIN/sbx-check" host
	assert_equal "$stderr" ""
	assert_line "mounts             missing        the classic mount calls (no mount_setattr here: it came in Linux 5.12): bind through /proc/self/fd/N, then remount: unable to make every mount private: Operation not permitted api=classic; to fix: allow mount(2) in user namespaces (a container's seccomp profile or an LSM is refusing it)"
	assert_line "result: isolation unavailable (exit 106)"
}

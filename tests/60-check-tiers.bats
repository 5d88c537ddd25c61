#!/usr/bin/env bats
# sbx-check host names the isolation tiers sbx-ns can give this caller here: the full
# sandbox, the Landlock tier (only under a baseline saying "fallback": "landlock"), or
# none. ns-nouserns takes user namespaces away as a container's seccomp profile does;
# ns-nolandlock takes Landlock away.

load helpers

setup_file() {
	sbx_test_user
}

@test "host: both tiers here, as root and unprivileged" {
	local who
	for who in root user; do
		if [ "$who" = root ]; then
			run -101 --separate-stderr sbx-check host
		else
			run -101 --separate-stderr as_user sbx-check host
		fi
		assert_equal "$stderr" ""
		assert_line --regexp '^tiers +ok +full \(namespaces, a fresh root, Landlock ABI [1-9][0-9]*, seccomp\); the landlock tier would be used only where namespaces fail tiers=full,landlock$'
	done
}

@test "host: without user namespaces only the landlock tier is left; without Landlock too, none" {
	run -106 --separate-stderr as_user "$SBX_TESTBIN/ns-nouserns" "$SBX_BIN/sbx-check" host
	assert_equal "$stderr" ""
	assert_line --regexp '^tiers +ok +landlock only \(Landlock ABI [1-9][0-9]*, seccomp, no namespaces\): sbx-ns runs commands only under a baseline saying "fallback": "landlock", with a WARNING each time tiers=landlock$'
	run -106 --separate-stderr "$SBX_TESTBIN/ns-nolandlock" "$SBX_TESTBIN/ns-nouserns" "$SBX_BIN/sbx-check" host --json
	assert_output --partial '{"name":"tiers","class":"extra","status":"missing","detail":"none: no namespaces and no Landlock","fix":"see userns and landlock","tiers":"none"}'
}

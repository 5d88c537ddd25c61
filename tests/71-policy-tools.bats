#!/usr/bin/env bats
# The tools under a baseline: sbx-cgroup and sbx-quota refuse or clamp
# their limits, sbx-ns prints and applies the effective policy, and the
# unsafe host-process fallback runs only with both settings on both sides
# and only where user namespaces are unavailable.

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
	assert_equal "$(head -1 "$BATS_TEST_TMPDIR/st")" '{"tool":"sbx-cgroup","event":"policy"'"$SBX_VER"',"baseline":true,"clamped":["resources.memory_mb"],"unsafe_fallback":false}'
}

@test "sbx-quota verify refuses a disk above the baseline's" {
	run -102 --separate-stderr sbx-quota verify --workspace "$PT_DIR/ws" --disk 5G --baseline "$PT_DIR/base.json" -- true
	assert_equal "$stderr" "sbx-quota: fatal: policy refused: --disk: 5120 MiB is more than the baseline's 4096 MiB (--baseline $PT_DIR/base.json: \$.resources.disk_mb)"
}

@test "sbx-ns --print-policy shows the merge: the request's roots, the union of deny-write" {
	run -0 --separate-stderr as_user sbx-ns --workspace "$PT_DIR/ws" --ro "$PT_DIR/ro" --deny-write .env --baseline "$PT_DIR/base.json" --print-policy
	assert_output "{\"sandbox\":{\"mode\":\"native\",\"network\":{\"mode\":\"none\",\"allowlist\":[]},\"readableRoots\":[\"$PT_DIR/ro\"],\"writableRoots\":[\"$PT_DIR/ws\"],\"denyWrite\":[\".env\",\"secrets/**\"],\"fallback\":\"fail-closed\",\"unsafeAllowHostProcess\":false}}"
	assert_equal "$stderr" ""
}

@test "sbx-ns refuses a readable root outside the baseline's" {
	run -102 --separate-stderr as_user sbx-ns --workspace "$PT_DIR/ws" --ro /usr/share --baseline "$PT_DIR/base.json" -- true
	assert_equal "$stderr" "sbx-ns: fatal: policy refused: --ro: /usr/share is not within the baseline's readable roots (--baseline $PT_DIR/base.json: \$.sandbox.readableRoots)"
}

@test "sbx-ns applies a policy from --policy-fd: its readable root is bound, the baseline's deny-write holds" {
	mkdir "$PT_DIR/ws/secrets"
	echo key >"$PT_DIR/ws/secrets/key"
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$PT_DIR/ws/secrets"
	run -0 --separate-stderr as_user sbx-ns --workspace "$PT_DIR/ws" --baseline "$PT_DIR/base.json" --policy-fd 5 -- \
		sh -c "ls -d $PT_DIR/ro && touch secrets/key 2>&1 || true" \
		5< <(printf '{"sandbox":{"readableRoots":["%s/ro"]}}' "$PT_DIR")
	assert_line --index 0 "$PT_DIR/ro"
	assert_line --index 1 "touch: cannot touch 'secrets/key': Read-only file system"
	assert_equal "$(cat "$PT_DIR/ws/secrets/key")" "key"
	rm -r "$PT_DIR/ws/secrets"
}

# Inside a user namespace whose max_user_namespaces leaves none for sbx-ns,
# as an unprivileged identity (uid 1000 maps to the test's root).
no_userns() {
	unshare -Ur sh -c 'echo 1 >/proc/sys/user/max_user_namespaces && exec unshare --user --map-user=1000 --map-group=1000 "$@"' sh "$@"
}

@test "the unsafe fallback runs the command unconfined, with a WARNING, when both sides allow it and namespaces are unavailable" {
	run -0 --separate-stderr no_userns sbx-ns --workspace "$PT_DIR/ws" --baseline "$PT_DIR/unsafe.json" --policy-fd 5 --status-fd 6 -- \
		sh -c 'echo "ran in $PWD"' 5<"$PT_DIR/unsafe.json" 6>"$BATS_TEST_TMPDIR/st"
	assert_output "ran in $PT_DIR/ws"
	assert_equal "$stderr" "sbx-ns: WARNING: the sandbox cannot be set up (No space left on device) and the policy allows the unsafe host-process fallback: the command runs unconfined, with no root, deny-write, network or seccomp restriction"
	assert_equal "$(sed -n 2p "$BATS_TEST_TMPDIR/st")" '{"tool":"sbx-ns","event":"unsafe_fallback","unsafe_fallback":true,"reason":"No space left on device"}'
	assert_equal "$(sed -n 3p "$BATS_TEST_TMPDIR/st")" '{"tool":"sbx-ns","event":"exit","code":0,"unsafe_fallback":true}'
}

@test "without both settings on both sides the same host fails closed" {
	# baseline allows, the argv request does not ask: fail-closed
	run -106 --separate-stderr no_userns sbx-ns --workspace "$PT_DIR/ws" --baseline "$PT_DIR/unsafe.json" -- true
	assert_output ""
	assert_regex "$stderr" '^sbx-ns: fatal: unable to create namespaces: No space left on device; '
	# the request asks, the baseline does not allow it: refused
	run -102 --separate-stderr no_userns sbx-ns --workspace "$PT_DIR/ws" --baseline "$PT_DIR/base.json" --policy-fd 5 -- true 5<"$PT_DIR/unsafe.json"
	assert_equal "$stderr" "sbx-ns: fatal: policy refused: --policy-fd 5: \$.sandbox.fallback: unsafe-host-process is wider than the baseline's fail-closed (--baseline $PT_DIR/base.json: default)"
}

@test "with namespaces available the unsafe fallback never runs: the sandbox does" {
	run -0 --separate-stderr as_user sbx-ns --workspace "$PT_DIR/ws" --baseline "$PT_DIR/unsafe.json" --policy-fd 5 --status-fd 6 -- \
		sh -c 'cat /proc/self/uid_map | tr -s " "' 5<"$PT_DIR/unsafe.json" 6>"$BATS_TEST_TMPDIR/st"
	assert_equal "$stderr" ""
	run grep -c unsafe_fallback\":true "$BATS_TEST_TMPDIR/st"
	assert_output 1   # the policy line: allowed, yet no fallback event
	run grep -c '"event":"unsafe_fallback"' "$BATS_TEST_TMPDIR/st"
	assert_output 0
}

@test "sbx-ns: a network wider than the baseline's is refused, or clamped to it" {
	run -102 --separate-stderr as_user sbx-ns --workspace "$PT_DIR/ws" --net host --baseline "$PT_DIR/base.json" -- true
	assert_equal "$stderr" "sbx-ns: fatal: policy refused: --net: all (host) is wider than the baseline's none (--baseline $PT_DIR/base.json: default)"
	run -0 --separate-stderr as_user sbx-ns --workspace "$PT_DIR/ws" --net loopback --clamp --baseline "$PT_DIR/base.json" --print-policy
	assert_output --partial '"network":{"mode":"none","allowlist":[]}'
	run -0 --separate-stderr as_user sbx-ns --workspace "$PT_DIR/ws" --net host --clamp --baseline-fd 5 --status-fd 6 -- true \
		5< <(echo '{"sandbox":{"writableRoots":["."],"network":{"mode":"localhost"}}}') 6>"$BATS_TEST_TMPDIR/st"
	assert_equal "$(head -1 "$BATS_TEST_TMPDIR/st")" '{"tool":"sbx-ns","event":"policy"'"$SBX_VER"',"baseline":true,"clamped":["sandbox.network.mode"],"unsafe_fallback":false}'
	run grep -c '"net":"loopback"' "$BATS_TEST_TMPDIR/st"
	assert_output 1
}

@test "sbx-ns under a baseline: a bind's source must lie within the effective roots, whatever its destination" {
	# writable: the source must be a writable root of the effective policy
	run -102 --separate-stderr as_user sbx-ns --workspace "$PT_DIR/ws" --bind "$PT_DIR/ro" /shared --baseline "$PT_DIR/base.json" -- true
	assert_equal "$stderr" "sbx-ns: fatal: policy refused: --bind: $PT_DIR/ro is not within the effective writable roots"
	# read-only: within the readable roots it is bound at its destination
	run -0 --separate-stderr as_user sbx-ns --workspace "$PT_DIR/ws" --ro "$PT_DIR/ro" --ro-bind "$PT_DIR/ro" /tools --baseline "$PT_DIR/base.json" -- ls -d /tools
	assert_output "/tools"
	assert_equal "$stderr" ""
	# read-only, outside the readable roots: refused, with --clamp too
	run -102 --separate-stderr as_user sbx-ns --workspace "$PT_DIR/ws" --ro-bind /usr/share /tools --clamp --baseline "$PT_DIR/base.json" -- true
	assert_equal "$stderr" "sbx-ns: fatal: policy refused: --ro-bind: /usr/share is not within the effective readable roots"
	# without a baseline the roots are the caller's own: no such check
	run -0 --separate-stderr as_user sbx-ns --workspace "$PT_DIR/ws" --ro-bind /usr/share /tools -- ls -d /tools
	assert_output "/tools"
}

@test "the unsafe fallback still ends the command at --timeout" {
	run -104 --separate-stderr no_userns sbx-ns --workspace "$PT_DIR/ws" --baseline "$PT_DIR/unsafe.json" --policy-fd 5 --status-fd 6 --timeout 0.2 -- \
		sleep 30 5<"$PT_DIR/unsafe.json" 6>"$BATS_TEST_TMPDIR/st"
	assert_output ""
	assert_equal "$(sed -n 3p "$BATS_TEST_TMPDIR/st")" '{"tool":"sbx-ns","event":"exit","code":104,"signal":9,"timeout":true,"unsafe_fallback":true}'
}

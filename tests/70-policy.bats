#!/usr/bin/env bats
# Policies: the specs' JSON blocks load, every malformed shape is refused
# naming its JSON path, a baseline file only a trusted owner could have
# written, and a merge that never widens the baseline. Driven through
# tests/progs/policy-tool.c, which exposes lib/policy*.c the way the tools
# call it.

bats_require_minimum_version 1.5.0
load helpers

PT="$SBX_TESTBIN/policy-tool"
POL="$SBX_ROOT/tests/policy"

setup_file() {
	sbx_test_user
	POL_DIR=$(sbx_scratch)
	export POL_DIR
	cp "$SBX_ROOT/tests/policy/"*.json "$POL_DIR/"
	chmod 0644 "$POL_DIR/"*.json
}

teardown_file() {
	rm -rf "$POL_DIR"
}

# refused CODE MESSAGE ARGS...: policy-tool exits CODE, prints nothing on
# stdout and exactly "policy-tool: MESSAGE" on stderr.
refused() {
	local code=$1 want=$2
	shift 2
	run "-$code" --separate-stderr "$PT" merge "$@"
	assert_output ""
	assert_equal "$stderr" "policy-tool: $want"
}

# merged JSON ARGS...: policy-tool prints exactly JSON, nothing on stderr.
merged() {
	local want=$1
	shift
	run -0 --separate-stderr "$PT" merge "$@"
	assert_output "$want"
	assert_equal "$stderr" ""
}

DEFAULT_SANDBOX='"denyWrite":[".env",".env.*",".git/config",".git/config.worktree",".git/hooks/**",".git/worktrees/*/config.worktree",".git/modules/**/config",".git/modules/**/hooks/**"],"fallback":"fail-closed","unsafeAllowHostProcess":false'

# The spec's own blocks name the four paths it knows; sbx's defaults add git's
# other configuration and hook places.
SPEC_SANDBOX='"denyWrite":[".env",".env.*",".git/config",".git/hooks/**"],"fallback":"fail-closed","unsafeAllowHostProcess":false'

@test "the sandbox system's quick reference block loads with its defaults" {
	merged '{"sandbox":{"mode":"native","network":{"mode":"none","allowlist":[]},"readableRoots":["/srv/ws"],"writableRoots":["/srv/ws"],'"$SPEC_SANDBOX"'}}' \
		--policy-fd 5 5<"$POL/spec-quick-reference.json" --workspace /srv/ws
}

@test "the spec's allowlist blocks load, in both layouts" {
	local want='{"sandbox":{"mode":"native","network":{"mode":"allowlist","allowlist":["*.githubusercontent.com","registry.npmjs.org"]},"readableRoots":["/srv/ws"],"writableRoots":["/srv/ws"],'"$DEFAULT_SANDBOX"'}}'
	merged "$want" --policy-fd 5 5<"$POL/spec-allowlist.json" --workspace /srv/ws
	merged "$want" --policy-fd 5 5<"$POL/spec-allowlist-oneline.json" --workspace /srv/ws
}

@test "the spec's deny-write and unsafe fallback blocks load" {
	merged '{"sandbox":{"mode":"native","network":{"mode":"none","allowlist":[]},"readableRoots":["/srv/ws"],"writableRoots":["/srv/ws"],'"$SPEC_SANDBOX"'}}' \
		--policy-fd 5 5<"$POL/spec-deny-write.json" --workspace /srv/ws
	merged '{"sandbox":{"mode":"native","network":{"mode":"none","allowlist":[]},"readableRoots":["/srv/ws"],"writableRoots":["/srv/ws"],"denyWrite":[".env",".env.*",".git/config",".git/config.worktree",".git/hooks/**",".git/worktrees/*/config.worktree",".git/modules/**/config",".git/modules/**/hooks/**"],"fallback":"unsafe-host-process","unsafeAllowHostProcess":true}}' \
		--policy-fd 5 5<"$POL/spec-unsafe-fallback.json" --workspace /srv/ws
}

@test "the resource system's block loads as the whole document" {
	merged '{"resources":{"cpu_percent":100,"memory_mb":1024,"disk_mb":4096,"max_processes":64,"require_hard_limits":true}}' \
		--policy-fd 5 5<"$POL/spec-resources.json"
}

@test "relative roots need a workspace" {
	refused 100 'usage: --policy-fd 5: default: relative root "." needs a workspace' \
		--policy-fd 5 5<"$POL/spec-deny-write.json"
}

@test "each malformed shape is refused naming its JSON path" {
	local -A want=(
		[bad-unknown-key]='$.sandbox.netwrok: unknown key'
		[bad-wrong-type]='$.sandbox.readableRoots: expected an array of strings, got a string'
		[bad-bool-string]='$.require_hard_limits: expected a boolean, got a string'
		[bad-top-array]='$: expected an object, got an array'
		[bad-duplicate-key]="\$.resources.memory_mb: invalid JSON at line 4, column 15: duplicate object key near '\"memory_mb\"'"
		[bad-negative]='$.resources.cpu_percent: negative'
		[bad-zero]='$.resources.max_processes: zero is not a limit'
		[bad-huge]="\$.resources.memory_mb: invalid JSON at line 1, column 50: too big integer near '18446744073709551616'"
		[bad-above-maximum]='$.resources.memory_mb: 1073741825 is above the maximum 1073741824'
		[bad-float]='$.resources.disk_mb: expected an integer, got a real number'
		[bad-nan]="\$.resources.cpu_percent: invalid JSON at line 1, column 35: invalid token near 'NaN'"
		[bad-infinity]="\$.resources.memory_mb: invalid JSON at line 1, column 38: invalid token near 'Infinity'"
		[bad-trailing-comma]="\$.sandbox.denyWrite[2]: invalid JSON at line 1, column 52: unexpected token near ']'"
		[bad-trailing-garbage]="\$: invalid JSON at line 2, column 1: end of file expected near '{'"
		[bad-bom]='$: invalid JSON at line 1, column 1: a byte order mark is not allowed'
		[bad-unknown-value]='$.sandbox.network.mode: unknown value "wide" (none, localhost, allowlist, all)'
		[bad-host-port]='$.sandbox.network.allowlist[0]: invalid host pattern "registry.npmjs.org:443": ports and IPv6 literals not allowed'
		[bad-root-dotdot]="\$.sandbox.writableRoots[0]: invalid path \"../outside\": '..' is not allowed"
		[bad-unsafe-without-allow]='$.sandbox.fallback: "unsafe-host-process" needs "unsafeAllowHostProcess": true as well'
		[bad-allow-without-unsafe]='$.sandbox.unsafeAllowHostProcess: true needs "fallback": "unsafe-host-process" as well'
	)
	local f n=0
	for f in "$POL"/bad-*.json; do
		f=$(basename "$f" .json)
		[ -n "${want[$f]:-}" ] || fail "no expected message for $f"
		refused 100 "usage: --policy-fd 5: ${want[$f]}" --policy-fd 5 5<"$POL/$f.json" --workspace /srv/ws
		# the same file as a baseline: the same refusal, labelled as such
		refused 100 "usage: --baseline $POL_DIR/$f.json: ${want[$f]}" --baseline "$POL_DIR/$f.json" --workspace /srv/ws
		n=$((n + 1))
	done
	assert_equal "$n" "${#want[@]}"
}

@test "a megabyte of nesting is refused at the parser's depth limit, naming where" {
	head -c 1048576 /dev/zero | tr '\0' '[' >"$BATS_TEST_TMPDIR/deep.json"
	refused 100 "usage: --policy-fd 5: \$[0][0][0][0][0][0][0][0][0][0][0][0]...(2024 levels)...[0][0][0][0][0][0][0][0][0][0][0][0]: invalid JSON at line 1, column 2049: maximum parsing depth reached near '['" \
		--policy-fd 5 5<"$BATS_TEST_TMPDIR/deep.json"
	{ printf '{"sandbox":{"readableRoots":'; head -c 1048576 /dev/zero | tr '\0' '['; } >"$BATS_TEST_TMPDIR/deep2.json"
	refused 100 "usage: --policy-fd 5: \$.sandbox.readableRoots[0][0][0][0][0][0][0][0][0][0]...(2024 levels)...[0][0][0][0][0][0][0][0][0][0][0][0]: invalid JSON at line 1, column 2075: maximum parsing depth reached near '['" \
		--policy-fd 5 5<"$BATS_TEST_TMPDIR/deep2.json"
}

@test "a policy above 4 MiB is refused without parsing it" {
	{ printf '{"sandbox":{"denyWrite":["a"'; head -c 4194304 /dev/zero | tr '\0' ' '; printf ']}}'; } >"$BATS_TEST_TMPDIR/big.json"
	refused 100 "usage: --policy-fd 5: larger than 4194304 bytes" --policy-fd 5 5<"$BATS_TEST_TMPDIR/big.json"
}

@test "without a baseline the request is the effective policy" {
	merged '{"resources":{"cpu_percent":400,"memory_mb":4096,"max_processes":9999,"require_hard_limits":false}}' \
		--for cgroup --cpu 400 --memory 4G --pids 9999 --hard-limits no
	merged '{"sandbox":{"mode":"native","network":{"mode":"all","allowlist":[]},"readableRoots":["/opt"],"writableRoots":["/var/cache/x","/srv/ws"],'"$DEFAULT_SANDBOX"'}}' \
		--for ns --workspace /srv/ws --ro /opt --rw /var/cache/x --net host
}

@test "a request narrower than the baseline stands, field by field" {
	merged '{"sandbox":{"mode":"native","network":{"mode":"allowlist","allowlist":["api.example.org"]},"readableRoots":["/opt/tools/bin"],"writableRoots":["/srv/data/scratch/a","/srv/ws"],"denyWrite":[".env",".env.*",".git/config",".git/config.worktree",".git/hooks/**",".git/worktrees/*/config.worktree",".git/modules/**/config",".git/modules/**/hooks/**"],"fallback":"fail-closed","unsafeAllowHostProcess":false},"resources":{"cpu_percent":100,"memory_mb":512,"disk_mb":1024,"max_processes":10,"max_inodes":5,"require_hard_limits":true}}' \
		--baseline "$POL_DIR/baseline-admin.json" --workspace /srv/ws --ro /opt/tools/bin --rw /srv/data/scratch/a \
		--net broker --allow-host api.example.org --cpu 100 --memory 512M --pids 10 --disk 1G --inodes 5
}

@test "what the request leaves out, the baseline supplies" {
	merged '{"resources":{"cpu_percent":200,"memory_mb":1024,"max_processes":64,"require_hard_limits":true}}' \
		--baseline "$POL_DIR/baseline-admin.json" --for cgroup
	merged '{"resources":{"disk_mb":4096,"max_inodes":100000,"require_hard_limits":true}}' \
		--baseline "$POL_DIR/baseline-admin.json" --for quota
}

@test "a request for more than the baseline is refused naming the field, for every field" {
	local b="--baseline $POL_DIR/baseline-admin.json"
	refused 102 "fatal: policy refused: --cpu: 201% is more than the baseline's 200% ($b: \$.resources.cpu_percent)" $b --for cgroup --cpu 201
	refused 102 "fatal: policy refused: --memory: 1025 MiB is more than the baseline's 1024 MiB ($b: \$.resources.memory_mb)" $b --for cgroup --memory 1025M
	refused 102 "fatal: policy refused: --memory: 1073741825 bytes is more than the baseline's 1024 MiB ($b: \$.resources.memory_mb)" $b --for cgroup --memory 1073741825
	refused 102 "fatal: policy refused: --pids: 65 processes is more than the baseline's 64 processes ($b: \$.resources.max_processes)" $b --for cgroup --pids 65
	refused 102 "fatal: policy refused: --hard-limits: false is wider than the baseline's true ($b: \$.resources.require_hard_limits)" $b --for cgroup --hard-limits no
	refused 102 "fatal: policy refused: --disk: 5120 MiB is more than the baseline's 4096 MiB ($b: \$.resources.disk_mb)" $b --for quota --disk 5G
	refused 102 "fatal: policy refused: --inodes: 100001 inodes is more than the baseline's 100000 inodes ($b: \$.resources.max_inodes)" $b --for quota --inodes 100001
	refused 102 "fatal: policy refused: --net: all (host) is wider than the baseline's allowlist (broker) ($b: \$.sandbox.network.mode)" $b --for ns --workspace /srv/ws --net host
	refused 102 "fatal: policy refused: --allow-host: *.cdn.org is not within the baseline's allowlist ($b: \$.sandbox.network.allowlist)" $b --for ns --workspace /srv/ws --net broker --allow-host '*.cdn.org'
	refused 102 "fatal: policy refused: --allow-host: example.org is not within the baseline's allowlist ($b: \$.sandbox.network.allowlist)" $b --for ns --workspace /srv/ws --net broker --allow-host example.org
	refused 102 "fatal: policy refused: --ro: /opt is not within the baseline's readable roots ($b: \$.sandbox.readableRoots)" $b --for ns --workspace /srv/ws --ro /opt
	refused 102 "fatal: policy refused: --ro: /opt/toolsX is not within the baseline's readable roots ($b: \$.sandbox.readableRoots)" $b --for ns --workspace /srv/ws --ro /opt/toolsX
	refused 102 "fatal: policy refused: --rw: /srv/data is not within the baseline's writable roots ($b: \$.sandbox.writableRoots)" $b --for ns --workspace /srv/ws --rw /srv/data
	refused 102 "fatal: policy refused: --rw: /home/u is not within the baseline's writable roots ($b: \$.sandbox.writableRoots)" \
		$b --for ns --workspace /srv/ws --rw /home/u
	# "." follows the workspace; an absolute root pins it
	refused 102 "fatal: policy refused: --workspace: /home/u is not within the baseline's writable roots (--baseline-fd 5: \$.sandbox.writableRoots)" \
		--baseline-fd 5 --for ns --workspace /home/u 5< <(echo '{"sandbox":{"writableRoots":["/srv/ws"]}}')
	refused 102 "fatal: policy refused: --policy-fd 5: \$.sandbox.fallback: unsafe-host-process is wider than the baseline's fail-closed ($b: \$.sandbox.fallback)" \
		$b --for ns --workspace /srv/ws --policy-fd 5 5<"$POL/spec-unsafe-fallback.json"
	refused 102 "fatal: policy refused: --policy-fd 5: \$.sandbox.mode: off is wider than the baseline's native ($b: \$.sandbox.mode)" \
		$b --for ns --workspace /srv/ws --policy-fd 5 5< <(echo '{"sandbox":{"mode":"off"}}')
}

@test "with --clamp a wider request is narrowed to the baseline and the fields are listed" {
	run -0 --separate-stderr "$PT" merge --baseline "$POL_DIR/baseline-admin.json" --workspace /srv/ws --clamp --status-fd 5 \
		--ro / --rw /srv --net host --cpu 1000 --memory 8G --pids 1000 --disk 1T --inodes 1000000000 --hard-limits no 5>"$BATS_TEST_TMPDIR/status"
	assert_output '{"sandbox":{"mode":"native","network":{"mode":"allowlist","allowlist":["*.example.org","pypi.org"]},"readableRoots":["/srv/ws","/opt/tools","/srv/data","/srv/data/scratch"],"writableRoots":["/srv/ws","/srv/data/scratch"],"denyWrite":[".env",".env.*",".git/config",".git/config.worktree",".git/hooks/**",".git/worktrees/*/config.worktree",".git/modules/**/config",".git/modules/**/hooks/**"],"fallback":"fail-closed","unsafeAllowHostProcess":false},"resources":{"cpu_percent":200,"memory_mb":1024,"disk_mb":4096,"max_processes":64,"max_inodes":100000,"require_hard_limits":true}}'
	assert_equal "$stderr" ""
	assert_equal "$(cat "$BATS_TEST_TMPDIR/status")" '{"tool":"policy-tool","event":"policy","baseline":true,"clamped":["sandbox.network.mode","sandbox.readableRoots","sandbox.writableRoots","resources.cpu_percent","resources.memory_mb","resources.max_processes","resources.disk_mb","resources.max_inodes","resources.require_hard_limits"],"unsafe_fallback":false}'
}

@test "with --clamp a request within the baseline lists nothing" {
	run -0 --separate-stderr "$PT" merge --baseline "$POL_DIR/baseline-admin.json" --for cgroup --clamp --status-fd 5 --memory 1M 5>"$BATS_TEST_TMPDIR/status"
	assert_output '{"resources":{"cpu_percent":200,"memory_mb":1,"max_processes":64,"require_hard_limits":true}}'
	assert_equal "$(cat "$BATS_TEST_TMPDIR/status")" '{"tool":"policy-tool","event":"policy","baseline":true,"clamped":[],"unsafe_fallback":false}'
}

@test "the unsafe fallback stays on only when both sides have both settings" {
	cp "$POL_DIR/spec-unsafe-fallback.json" "$POL_DIR/unsafe-base.json"
	run -0 --separate-stderr "$PT" merge --baseline "$POL_DIR/unsafe-base.json" --policy-fd 5 5<"$POL/spec-unsafe-fallback.json" --workspace /srv/ws --status-fd 6 6>"$BATS_TEST_TMPDIR/s1"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/s1")" '{"tool":"policy-tool","event":"policy","baseline":true,"clamped":[],"unsafe_fallback":true}'
	# the request says nothing of a sandbox: the baseline's stands
	run -0 --separate-stderr "$PT" merge --baseline "$POL_DIR/unsafe-base.json" --policy-fd 5 5<"$POL/spec-resources.json" --workspace /srv/ws --status-fd 6 6>"$BATS_TEST_TMPDIR/s2"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/s2")" '{"tool":"policy-tool","event":"policy","baseline":true,"clamped":[],"unsafe_fallback":true}'
	# a request that is fail-closed collapses it
	run -0 --separate-stderr "$PT" merge --baseline "$POL_DIR/unsafe-base.json" --policy-fd 5 5<"$POL/spec-quick-reference.json" --workspace /srv/ws --status-fd 6 6>"$BATS_TEST_TMPDIR/s3"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/s3")" '{"tool":"policy-tool","event":"policy","baseline":true,"clamped":[],"unsafe_fallback":false}'
	# so does an argv request (sbx-ns's own options never ask for it)
	run -0 --separate-stderr "$PT" merge --baseline "$POL_DIR/unsafe-base.json" --for ns --workspace /srv/ws --status-fd 6 6>"$BATS_TEST_TMPDIR/s4"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/s4")" '{"tool":"policy-tool","event":"policy","baseline":true,"clamped":[],"unsafe_fallback":false}'
}

@test "a baseline file writable by group or others is refused" {
	cp "$POL_DIR/baseline-admin.json" "$POL_DIR/w.json"
	chmod 0664 "$POL_DIR/w.json"
	refused 102 "fatal: --baseline $POL_DIR/w.json: refused: writable by group or others (mode 0664)" --baseline "$POL_DIR/w.json" --for cgroup
	chmod 0606 "$POL_DIR/w.json"
	refused 102 "fatal: --baseline $POL_DIR/w.json: refused: writable by group or others (mode 0606)" --baseline "$POL_DIR/w.json" --for cgroup
	chmod 0400 "$POL_DIR/w.json"
	merged '{"resources":{"cpu_percent":200,"memory_mb":1024,"max_processes":64,"require_hard_limits":true}}' --baseline "$POL_DIR/w.json" --for cgroup
}

@test "a baseline file in a directory others may write is refused" {
	mkdir -m 0777 "$POL_DIR/open"
	chmod 0777 "$POL_DIR/open"
	cp "$POL_DIR/baseline-admin.json" "$POL_DIR/open/b.json"
	refused 102 "fatal: --baseline $POL_DIR/open/b.json: refused: a directory on its path is writable by group or others (mode 0777)" \
		--baseline "$POL_DIR/open/b.json" --for cgroup
}

@test "a baseline file owned by another user is refused; root's and the caller's own are taken" {
	cp "$POL_DIR/baseline-admin.json" "$POL_DIR/theirs.json"
	chown "$SBX_TEST_UID" "$POL_DIR/theirs.json"
	refused 102 "fatal: --baseline $POL_DIR/theirs.json: refused: owned by another user (uid $SBX_TEST_UID)" --baseline "$POL_DIR/theirs.json" --for cgroup
	run -0 --separate-stderr as_user "$PT" merge --baseline "$POL_DIR/theirs.json" --for cgroup
	assert_output '{"resources":{"cpu_percent":200,"memory_mb":1024,"max_processes":64,"require_hard_limits":true}}'
	run -0 --separate-stderr as_user "$PT" merge --baseline "$POL_DIR/baseline-admin.json" --for cgroup
	assert_output '{"resources":{"cpu_percent":200,"memory_mb":1024,"max_processes":64,"require_hard_limits":true}}'
}

@test "a baseline that is a symlink, has one on its path, or is not a regular file is refused" {
	ln -s "$POL_DIR/baseline-admin.json" "$POL_DIR/link.json"
	refused 102 "fatal: --baseline $POL_DIR/link.json: refused: a symbolic link" --baseline "$POL_DIR/link.json"
	ln -s "$POL_DIR" "$POL_DIR/dirlink"
	refused 102 "fatal: --baseline $POL_DIR/dirlink/baseline-admin.json: refused: a symbolic link on its path (dirlink)" \
		--baseline "$POL_DIR/dirlink/baseline-admin.json"
	mkfifo "$POL_DIR/fifo"
	refused 102 "fatal: --baseline $POL_DIR/fifo: refused: not a regular file" --baseline "$POL_DIR/fifo"
	refused 102 "fatal: --baseline /dev/null: refused: not a regular file" --baseline /dev/null
}

@test "a baseline path that is empty, relative, missing or a directory is a usage error" {
	refused 100 "usage: --baseline: invalid path '': empty" --baseline ''
	refused 100 "usage: --baseline: invalid path 'b.json': not absolute" --baseline b.json
	refused 100 "usage: --baseline /nonexistent/b.json: invalid path '/nonexistent/b.json': does not exist" --baseline /nonexistent/b.json
	refused 100 "usage: --baseline $POL_DIR/none.json: invalid path '$POL_DIR/none.json': does not exist" --baseline "$POL_DIR/none.json"
	refused 100 "usage: --baseline $POL_DIR/: invalid path '$POL_DIR/': a directory" --baseline "$POL_DIR/"
}

@test "policy options given wrongly are usage errors" {
	refused 100 "usage: --baseline and --baseline-fd are exclusive" --baseline "$POL_DIR/baseline-admin.json" --baseline-fd 5 5</dev/null
	refused 100 "usage: --baseline and --baseline-fd are exclusive" --baseline-fd 5 --baseline "$POL_DIR/baseline-admin.json" 5</dev/null
	refused 100 "usage: --policy-fd: fd 5 is also --baseline-fd" --baseline-fd 5 --policy-fd 5 5</dev/null
	refused 100 "usage: --baseline given twice" --baseline "$POL_DIR/baseline-admin.json" --baseline "$POL_DIR/baseline-admin.json"
	refused 100 "usage: --policy-fd: invalid fd '9': not open; open it for the tool (in the shell: 9<FILE or 9>FILE, or a previous tool's --pass-fd 9)" --policy-fd 9
	refused 100 "usage: --baseline-fd: invalid fd '2': 0, 1 and 2 are stdio" --baseline-fd 2
	refused 100 "usage: --policy-fd: invalid fd '-1': negative" --policy-fd -1
	refused 100 "usage: --clamp needs --baseline or --baseline-fd" --for cgroup --memory 1M --clamp
	refused 100 "usage: --policy-fd and --memory are exclusive (one source per request)" --for cgroup --memory 1M --policy-fd 5 5< <(echo '{}')
	refused 100 "usage: --policy-fd and --ro are exclusive (one source per request)" --for ns --ro /x --policy-fd 5 5< <(echo '{}')
}

@test "a policy on --policy-fd that leaves the workspace unwritable is refused" {
	refused 102 "fatal: policy refused: the workspace /srv/ws is not within the effective writable roots (policy-tool writes its workspace)" \
		--for ns --workspace /srv/ws --policy-fd 5 5< <(echo '{"sandbox":{"writableRoots":["/tmp/x"]}}')
}

@test "a baseline on an fd is read from a pipe and from a file" {
	run -0 --separate-stderr "$PT" merge --baseline-fd 5 --for cgroup --memory 2M 5< <(echo '{"memory_mb":4}')
	assert_output '{"resources":{"memory_mb":2,"require_hard_limits":true}}'
	refused 102 "fatal: policy refused: --memory: 8 MiB is more than the baseline's 4 MiB (--baseline-fd 5: \$.memory_mb)" \
		--baseline-fd 5 --for cgroup --memory 8M 5< <(echo '{"memory_mb":4}')
	refused 100 "usage: --baseline-fd 5: \$: invalid JSON at line 1, column 0: '[' or '{' expected near end of file" \
		--baseline-fd 5 --for cgroup 5</dev/null
}

@test "tierDenyWrite: unenforced stands only in a baseline; a request may say refuse" {
	printf '{"sandbox":{"fallback":"landlock","tierDenyWrite":"unenforced"}}' >"$POL_DIR/tier-unenforced.json"
	printf '{"sandbox":{"fallback":"landlock"}}' >"$POL_DIR/tier-plain.json"
	local out='{"sandbox":{"mode":"native","network":{"mode":"none","allowlist":[]},"readableRoots":["/srv/ws"],"writableRoots":["/srv/ws"],"denyWrite":[".env",".env.*",".git/config",".git/config.worktree",".git/hooks/**",".git/worktrees/*/config.worktree",".git/modules/**/config",".git/modules/**/hooks/**"],"fallback":"landlock","unsafeAllowHostProcess":false'
	merged "$out"',"tierDenyWrite":"unenforced"}}' --baseline "$POL_DIR/tier-unenforced.json" --for ns \
		--workspace /srv/ws --policy-fd 5 5< <(echo '{"sandbox":{}}')
	merged "$out"',"tierDenyWrite":"refuse"}}' --baseline "$POL_DIR/tier-unenforced.json" --for ns \
		--workspace /srv/ws --policy-fd 5 5< <(echo '{"sandbox":{"tierDenyWrite":"refuse"}}')
	refused 102 "fatal: policy refused: --policy-fd 5: \$.sandbox.tierDenyWrite: only a baseline may leave deny-write unenforced in the landlock tier" \
		--baseline "$POL_DIR/tier-plain.json" --for ns --workspace /srv/ws --policy-fd 5 5<"$POL_DIR/tier-unenforced.json"
	refused 100 'usage: --policy-fd 5: $.sandbox.tierDenyWrite: unknown value "off" (refuse, unenforced)' \
		--for ns --workspace /srv/ws --policy-fd 5 5< <(echo '{"sandbox":{"tierDenyWrite":"off"}}')
	# Clamped, the request's word is dropped and listed.
	run -0 --separate-stderr "$PT" merge --baseline "$POL_DIR/tier-plain.json" --for ns --workspace /srv/ws --clamp \
		--status-fd 6 --policy-fd 5 5<"$POL_DIR/tier-unenforced.json" 6>"$BATS_TEST_TMPDIR/status"
	assert_output "$out}}"
	run -0 cat "$BATS_TEST_TMPDIR/status"
	assert_output --partial '"clamped":["sandbox.tierDenyWrite"]'
}

@test "accept_statfs_quota stands only in a baseline, never in a request" {
	printf '{"resources":{"accept_statfs_quota":true}}' >"$POL_DIR/accept-statfs.json"
	merged '{"resources":{"disk_mb":1024,"require_hard_limits":true,"accept_statfs_quota":true}}' \
		--baseline "$POL_DIR/accept-statfs.json" --for quota --disk 1G
	# A request may say false, never true: it cannot weaken what sbx-quota proves.
	refused 102 "fatal: policy refused: --policy-fd 5: \$.resources.accept_statfs_quota: only a baseline may accept statfs-level quota assurance" \
		--for quota --policy-fd 5 5<"$POL_DIR/accept-statfs.json"
	refused 100 'usage: --policy-fd 5: $.resources.accept_statfs_quota: expected a boolean, got a string' \
		--for quota --policy-fd 5 5< <(printf '{"resources":{"accept_statfs_quota":"yes"}}')
	# Clamped (a baseline that does not say it), the request's word is
	# dropped and listed, never taken.
	printf '{"resources":{"disk_mb":4096}}' >"$POL_DIR/plain-quota.json"
	run -0 --separate-stderr "$PT" merge --baseline "$POL_DIR/plain-quota.json" --for quota --clamp \
		--status-fd 6 --policy-fd 5 5<"$POL_DIR/accept-statfs.json" 6>"$BATS_TEST_TMPDIR/status"
	refute_output --partial accept_statfs_quota
	assert_equal "$stderr" ""
	run -0 cat "$BATS_TEST_TMPDIR/status"
	assert_output --partial '"clamped":["resources.accept_statfs_quota"]'
	# Other tools ignore it.
	merged '{"resources":{"cpu_percent":100,"require_hard_limits":true}}' \
		--baseline "$POL_DIR/accept-statfs.json" --for cgroup --cpu 100
}

@test "hostCA: omitted means true; false only narrows, and a request's true against a baseline's false is refused or clamped" {
	local out='{"sandbox":{"mode":"native","network":{"mode":"none","allowlist":[]},"readableRoots":["/srv/ws"],"writableRoots":["/srv/ws"],'"$DEFAULT_SANDBOX"
	printf '{"sandbox":{"hostCA":false}}' >"$POL_DIR/hostca-off.json"
	merged "$out}}" --for ns --workspace /srv/ws --policy-fd 5 5< <(echo '{"sandbox":{}}')
	merged "$out"',"hostCA":false}}' --baseline "$POL_DIR/hostca-off.json" --for ns --workspace /srv/ws \
		--policy-fd 5 5< <(echo '{"sandbox":{}}')
	merged "$out"',"hostCA":false}}' --for ns --workspace /srv/ws --policy-fd 5 5<"$POL_DIR/hostca-off.json"
	refused 102 "fatal: policy refused: --policy-fd 5: \$.sandbox.hostCA: true is wider than the baseline's false (--baseline $POL_DIR/hostca-off.json: \$.sandbox.hostCA)" \
		--baseline "$POL_DIR/hostca-off.json" --for ns --workspace /srv/ws --policy-fd 5 5< <(echo '{"sandbox":{"hostCA":true}}')
	refused 100 'usage: --policy-fd 5: $.sandbox.hostCA: expected a boolean, got a string' \
		--for ns --workspace /srv/ws --policy-fd 5 5< <(echo '{"sandbox":{"hostCA":"no"}}')
	run -0 --separate-stderr "$PT" merge --baseline "$POL_DIR/hostca-off.json" --for ns --workspace /srv/ws --clamp \
		--status-fd 6 --policy-fd 5 5< <(echo '{"sandbox":{"hostCA":true}}') 6>"$BATS_TEST_TMPDIR/status"
	assert_output "$out"',"hostCA":false}}'
	run -0 cat "$BATS_TEST_TMPDIR/status"
	assert_output --partial '"clamped":["sandbox.hostCA"]'
}

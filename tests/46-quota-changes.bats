#!/usr/bin/env bats
# A change set under its workspace's project quota, on the host: the grammar of
# sbx-quota --changes, and sbx-ns --changes's project check on a loop-mounted XFS, whose
# kernel stores project ids and PROJINHERIT without enforcing them (so the overlay's new
# files, copy-ups and whiteouts are seen to inherit the project for real). A workspace
# without a project id has no quota to escape: nothing is checked. Filling a change set up
# to the hard limits is in tests/vm/36-quota-changes.bats.

bats_require_minimum_version 1.5.0
load helpers
load xfs-loop

Q=sbx-quota

setup_file() {
	sbx_test_user
	xfs_loop_up quota-chg
}

teardown_file() {
	xfs_loop_down
}

# ws (project 42, PROJINHERIT; files a and b) and chg beside it (mode 0700, no project),
# both the test user's.
setup() {
	sbx_test_user
	xfs=$(cat "$BATS_FILE_TMPDIR/dir")/mnt
	ws=$xfs/ws$BATS_TEST_NUMBER
	chg=$xfs/ws$BATS_TEST_NUMBER.changes
	mkdir "$ws"
	mkdir -m 0700 "$chg"
	qa "$ws" 42 inherit
	echo hello >"$ws/a"
	echo b >"$ws/b"
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$ws" "$chg"
}

teardown() {
	rm -rf "$ws" "$chg" "${extra[@]}"
}
extra=()

box() {
	sbx-ns --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" --workspace "$ws" --changes "$chg" "$@"
}

@test "--changes of verify and prepare refuses an empty, relative, unclean, symlinked or non-directory path and a repeat" {
	local v
	for v in verify prepare; do
		local more=(--disk 8M)
		[ $v = verify ] || more+=(--project 42)
		run -100 --separate-stderr $Q $v --workspace "$ws" --changes "" "${more[@]}"
		assert_equal "$stderr" "sbx-quota: usage: --changes: invalid path '': empty"
		run -100 --separate-stderr $Q $v --workspace "$ws" --changes chg "${more[@]}"
		assert_equal "$stderr" "sbx-quota: usage: --changes: invalid path 'chg': not absolute"
		run -100 --separate-stderr $Q $v --workspace "$ws" --changes "$chg/../x" "${more[@]}"
		assert_equal "$stderr" "sbx-quota: usage: --changes: invalid path '$chg/../x': not canonical"
		run -100 --separate-stderr $Q $v --workspace "$ws" --changes "$chg/x$(printf '\t')y" "${more[@]}"
		assert_equal "$stderr" "sbx-quota: usage: --changes: invalid path: control character"
		run -100 --separate-stderr $Q $v --workspace "$ws" --changes / "${more[@]}"
		assert_equal "$stderr" "sbx-quota: usage: --changes: invalid path '/': the root"
		run -100 --separate-stderr $Q $v --workspace "$ws" --changes "$chg" --changes "$chg" "${more[@]}"
		assert_equal "$stderr" "sbx-quota: usage: --changes given twice"
		ln -sfn "$chg" "$xfs/link$BATS_TEST_NUMBER"
		extra+=("$xfs/link$BATS_TEST_NUMBER")
		run -100 --separate-stderr $Q $v --workspace "$ws" --changes "$xfs/link$BATS_TEST_NUMBER" "${more[@]}"
		assert_equal "$stderr" "sbx-quota: usage: --changes: invalid path '$xfs/link$BATS_TEST_NUMBER': a symbolic link"
		run -100 --separate-stderr $Q $v --workspace "$ws" --changes "$ws/a" "${more[@]}"
		assert_equal "$stderr" "sbx-quota: usage: --changes: invalid path '$ws/a': not a directory"
		run -102 --separate-stderr $Q $v --workspace "$ws" --changes "$ws" "${more[@]}"
		assert_equal "$stderr" "sbx-quota: fatal: refusing change set $ws: it is the workspace"
		run -102 --separate-stderr $Q $v --workspace "$ws" --changes "$xfs" "${more[@]}"
		assert_equal "$stderr" "sbx-quota: fatal: refusing change set $xfs: it holds the workspace $ws; to fix: make it beside the workspace"
		run -102 --separate-stderr $Q $v --workspace "$ws" --changes /var/tmp "${more[@]}"
		assert_equal "$stderr" "sbx-quota: fatal: refusing change set /var/tmp: it is on another filesystem than the workspace $ws, whose project quota cannot hold it; to fix: make it on the workspace's filesystem"
		# A good change set: on to the host's missing quota support.
		run -101 --separate-stderr $Q $v --workspace "$ws" --changes "$chg" "${more[@]}"
		assert_regex "$stderr" "^sbx-quota: fatal: hard limits unsupported: $ws \\(xfs\\): "
	done
	run -100 --separate-stderr $Q report --workspace "$ws" --changes "$chg"
	assert_equal "$stderr" "sbx-quota: usage: unknown option --changes"
}

@test "sbx-ns refuses a change set outside the workspace's project (102) before making anything" {
	local fix="(as root: sbx-quota prepare --workspace $ws --project 42 --disk SIZE --changes $chg)"
	local head="sbx-ns: fatal: --changes: refusing $chg: outside the workspace's project quota:"
	run -102 --separate-stderr box -- true
	assert_equal "$stderr" "$head $chg has project id 0 without PROJINHERIT, the workspace $ws project 42 with PROJINHERIT $fix"
	run -0 ls -A "$chg"
	assert_output ""
	qa "$chg" 7 inherit
	run -102 --separate-stderr box -- true
	assert_equal "$stderr" "$head $chg has project id 7, the workspace $ws project 42 with PROJINHERIT $fix"
	qa "$chg" 42 noinherit
	run -102 --separate-stderr box --dry-run -- true
	assert_equal "$stderr" "$head $chg has project id 42 without PROJINHERIT, the workspace $ws project 42 with PROJINHERIT $fix"
	# upper/ and work/ of an earlier run are checked too.
	qa "$chg" 42 inherit
	run -0 --separate-stderr box -- true
	qa "$chg/upper" 0
	run -102 --separate-stderr box -- true
	assert_equal "$stderr" "$head $chg/upper has project id 0, the workspace $ws project 42 with PROJINHERIT $fix"
	qa "$chg/upper" 42 inherit
	qa "$chg/work" 42 noinherit
	run -102 --separate-stderr box -- true
	assert_equal "$stderr" "$head $chg/work has project id 42 without PROJINHERIT, the workspace $ws project 42 with PROJINHERIT $fix"
}

@test "new files, directories, copy-ups and whiteouts of the overlay inherit the project; the scratch directory goes with the run" {
	qa "$chg" 42 inherit
	echo c >"$ws/c"
	echo e >"$ws/e"
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$ws/c" "$ws/e"
	run -0 --separate-stderr box -- sh -c 'echo x >>a && rm b c e && mkdir d && echo n >d/n && echo ok'
	assert_equal "$stderr" ""
	assert_output ok
	for p in upper work upper/d; do
		run -0 qa "$chg/$p"
		assert_output "42 inherit"
	done
	for p in upper/a upper/d/n changeset lock base.jsonl; do
		run -0 qa "$chg/$p"
		assert_output "42 noinherit"
	done
	assert_equal "$(cat "$ws/a")" hello
	assert_file_not_exist "$chg/work/work"
	# The overlay links its three whiteouts to one inode (their link in work/work is gone).
	run -0 stat -c '%F %t:%T %h' "$chg/upper/b" "$chg/upper/c" "$chg/upper/e"
	assert_output "character special file 0:0 3
character special file 0:0 3
character special file 0:0 3"
	# chg, changeset, lock, base.jsonl, upper, work, upper/{a,d,d/n} and one whiteout inode
	run -0 walk --changes "$chg"
	assert_output "10 entries"
	# The plain tree check refuses a whiteout; a file of another project is refused by both.
	run -102 --separate-stderr walk "$chg"
	assert_regex "$stderr" "^quota-walk: fatal: refusing workspace: 'upper/[bce]' is a character device\$"
	run -0 --separate-stderr box -- sh -c 'echo n >new'
	qa "$chg/upper/new" 7
	run -102 --separate-stderr walk --changes "$chg"
	assert_equal "$stderr" "quota-walk: fatal: refusing change set: 'upper/new' has project id 7, not 42"
}

@test "a workspace without a project id has no quota to escape: its change set is not checked" {
	qa "$ws" 0
	run -0 --separate-stderr box -- sh -c 'echo x >>a && echo ok'
	assert_equal "$stderr" ""
	assert_output ok
	run -0 qa "$chg/upper/a"
	assert_output "0 noinherit"
}

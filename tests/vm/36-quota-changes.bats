#!/usr/bin/env bats
# A change set (sbx-ns --changes DIR) under its workspace's project quota, XFS and ext4:
# sbx-quota prepare --changes gives DIR the project, the overlay's new files, copy-ups and
# whiteouts in DIR/upper join it, a sandboxed command that fills the change set through the
# real overlay stops at the project's hard limits (blocks and inodes) with the filesystem's
# free space outside untouched, sbx-quota verify --changes proves it, and sbx-ns refuses a
# change set outside the workspace's project. Root prepares and runs the sandbox as uid
# 1000 (sbx-ns never runs a command as root); the user runs it with its prepared workspace
# and a change set it gave the project itself.

load helpers/vm

: "${SBX_TESTBIN:=/sbx/testbin}"
qa() { "$SBX_TESTBIN/quota-attr" "$@"; }
full_errno() { if [ "$1" = xfs ]; then echo ENOSPC; else echo EDQUOT; fi; }
full_text() { if [ "$1" = xfs ]; then echo "No space left on device"; else echo "Disk quota exceeded"; fi; }

# prep FS [bare]: ws (files a and b) under an 8 MiB / 16-inode project proj, and its
# change set chg beside it, uid 1000's, in the project too unless bare. Root makes and
# prepares both (sbx-quota prepare --changes); the user has its prepared workspace and
# gives its own change set the project as the owner may (FS_IOC_FSSETXATTR).
prep() {
	fs=$1
	chg=/mnt/$fs/q36-$SBX_VM_ROLE-$BATS_TEST_NUMBER.changes
	if [ "$SBX_VM_ROLE" = root ]; then
		proj=$((6000 + BATS_TEST_NUMBER))
		ws=/mnt/$fs/q36-$BATS_TEST_NUMBER
		mkdir "$ws"
	else
		ws=/mnt/$fs/sbxuser-quota
		if [ "$fs" = xfs ]; then proj=2000; else proj=2001; fi
	fi
	mkdir -m 0700 "$chg"
	echo hello >"$ws/a"
	echo b >"$ws/b"
	[ -z "${big:-}" ] || fill bytes "$ws/big" "$big" >/dev/null
	if [ "$SBX_VM_ROLE" = root ]; then
		chown -R 1000:1000 "$ws" "$chg"
		if [ "${2:-}" = bare ]; then
			sbx-quota prepare --workspace "$ws" --project "$proj" --disk 8M --inodes 16
		else
			sbx-quota prepare --workspace "$ws" --changes "$chg" --project "$proj" --disk 8M --inodes 16
		fi
	elif [ "${2:-}" != bare ]; then
		qa "$chg" "$proj" inherit
	fi
}

# as1000 CMD...: CMD as uid 1000 (root drops to it; the user is it).
as1000() {
	if [ "$SBX_VM_ROLE" = root ]; then runas 1000 1000 "$@"; else "$@"; fi
}

# box CMD...: as uid 1000, verify the workspace and its change set, then run CMD in sbx-ns
# with the change set (/sbx shown read-only for the helpers).
box() {
	as1000 sbx-quota verify --workspace "$ws" --changes "$chg" --disk 8M --inodes 16 \
		--pass-fd 7 -- sbx-ns --workspace-fd 7 --changes "$chg" --ro /sbx -- "$@"
}

# The project's use: "BYTES INODES" (root: quotactl; the user: statfs).
use() {
	sbx-quota report --workspace "$ws" | sed -n 's/^bytes used: //p; s/^inodes used: //p' | paste -sd' '
}

teardown() {
	local x
	for x in "${extra[@]}" "${chg:-}"; do [ -z "$x" ] || rm -rf "$x"; done
	[ -n "${ws:-}" ] && [ -d "$ws" ] || return 0
	if [ "$SBX_VM_ROLE" = root ]; then
		rm -rf "$ws"
	else
		find "$ws" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
		qa "$ws" "$proj" inherit
	fi
}
extra=()

# New files, copy-ups, directories and whiteouts in the upper layer carry the project; the
# overlay's mode-0 scratch directory is gone after the run; verify --changes passes and
# counts the change set; verify without it sees a shared project; prepare refuses to
# touch a change set with whiteouts.
t_upper_joins() {
	prep "$1"
	run -0 qa "$chg"
	assert_output "$proj inherit"
	run -0 --separate-stderr box sh -c 'echo x >>a && rm b && mkdir d && echo n >d/n && echo ok'
	assert_equal "$stderr" ""
	assert_output ok
	run -0 qa "$chg/upper/a"
	assert_output "$proj noinherit"
	run -0 qa "$chg/upper/d"
	assert_output "$proj inherit"
	run -0 qa "$chg/upper/d/n"
	assert_output "$proj noinherit"
	run -0 qa "$chg/base.jsonl"
	assert_output "$proj noinherit"
	assert [ -c "$chg/upper/b" ]
	assert_equal "$(cat "$ws/a")" hello
	assert_file_not_exist "$chg/work/work"
	# ws, a, b; chg, changeset, lock, base.jsonl, upper, work, upper/{a,b,d,d/n}
	run -0 use
	assert_output --regexp '^[0-9]+ 13$'
	run -0 --separate-stderr as1000 sh -c 'exec 3>&1 && exec sbx-quota verify --workspace "$1" --changes "$2" --disk 8M --inodes 16 --status-fd 3' sh "$ws" "$chg"
	assert_equal "$stderr" ""
	assert_line --index 0 --regexp "\"entries\":3,\"changes\":\"$chg\",\"changes_entries\":10\\}\$"
	run -102 --separate-stderr as1000 sbx-quota verify --workspace "$ws" --disk 8M --inodes 16
	assert_equal "$stderr" "sbx-quota: fatal: refusing workspace $ws: project $proj is shared: 13 inodes are charged to it, the workspace has 3"
	[ "$SBX_VM_ROLE" = root ] || return 0
	run -102 --separate-stderr sbx-quota prepare --workspace "$ws" --changes "$chg" --project "$proj" --disk 8M --inodes 16
	assert_equal "$stderr" "sbx-quota: fatal: refusing change set $chg: 'upper/b' is a whiteout of an earlier run, whose project id cannot be read or set; to fix: prepare a change set before its first run, or discard it"
}

# A command that writes until it fails, through the overlay: the project's hard block limit
# stops it, and the filesystem lost no more than that.
t_fill_bytes() {
	prep "$1"
	local bs a0 a1 outside=/mnt/$1/q36-outside-$BATS_TEST_NUMBER
	extra+=("$outside")
	read -r a0 bs < <(stat -f -c '%a %S' "/mnt/$1")
	run -1 --separate-stderr box "$(command -v fill)" bytes "$ws/data" 33554432
	# XFS reserves blocks to create an inode: with the project's blocks spent, sbx-ns cannot
	# create base.jsonl at the end, and says so.
	if [ "$1" = xfs ]; then
		assert_equal "$stderr" "sbx-ns: warning: --changes: unable to record the base of $chg in base.jsonl: No space left on device"
	else
		assert_equal "$stderr" ""
	fi
	assert_output --regexp "^wrote [0-9]+ bytes: $(full_errno "$1")\$"
	local n=${output#wrote }
	n=${n%% *}
	((n <= 8388608 && n >= 8388608 - 1048576)) || fail "wrote $n bytes under an 8388608-byte limit"
	read -r a1 bs < <(stat -f -c '%a %S' "/mnt/$1")
	(((a0 - a1) * bs <= 8388608 + 1048576)) || fail "the filesystem lost $(((a0 - a1) * bs)) bytes under an 8388608-byte limit"
	echo "# $1: wrote $n bytes through the overlay, the filesystem lost $(((a0 - a1) * bs))" >&3
	run -0 qa "$chg/upper/data"
	assert_output "$proj noinherit"
	assert_file_not_exist "$ws/data"
	local u
	u=$(use)
	((${u% *} <= 8388608)) || fail "project uses ${u% *} bytes"
	# The rest of the filesystem still takes writes.
	run -0 fill bytes "$outside" 16777216
	assert_output "wrote 16777216 bytes"
}

# Creating files until it fails: the project's inode hard limit stops it.
t_fill_inodes() {
	prep "$1"
	run -1 --separate-stderr box "$(command -v fill)" files "$ws" 1000
	assert_equal "$stderr" ""
	# 16 less ws, a, b, chg, changeset, lock, upper, work and the overlay's work/work
	assert_output "created 7 files: $(full_errno "$1")"
	# statfs, which the user reads, shows no more in use than the soft limit (15)
	run -0 use
	if [ "$SBX_VM_ROLE" = root ]; then
		assert_output --regexp '^[0-9]+ 16$'
	else
		assert_output --regexp '^[0-9]+ 15$'
	fi
	run -0 qa "$chg/upper/f0"
	assert_output "$proj noinherit"
	local outside=/mnt/$1/q36-outside-$BATS_TEST_NUMBER
	extra+=("$outside")
	mkdir "$outside"
	run -0 fill files "$outside" 100
	assert_output "created 100 files"
}

# A copy-up is written in DIR/work before it moves into DIR/upper: charged all the same. A
# 5 MiB workspace file cannot be copied up under an 8 MiB project.
t_copyup_charged() {
	big=5242880 prep "$1"
	# bash, whose message is the same in the busybox root and in a Debian root (dash's
	# sh words it otherwise).
	run -1 --separate-stderr box bash -c 'echo x >>big'
	assert_equal "$stderr" "bash: line 1: big: $(full_text "$1")"
	assert_file_not_exist "$chg/upper/big"
	local u
	u=$(use)
	((${u% *} <= 8388608)) || fail "project uses ${u% *} bytes"
	assert_equal "$(stat -c %s "$ws/big")" 5242880
}

# sbx-ns refuses a change set whose DIR, upper/ or work/ is not in the workspace's
# project, before the sandbox starts; verify refuses a file of another project in it.
t_refusals() {
	prep "$1" bare
	local fix="(as root: sbx-quota prepare --workspace $ws --project $proj --disk SIZE --changes $chg)"
	local head="sbx-ns: fatal: --changes: refusing $chg: outside the workspace's project quota:"
	run -0 qa "$chg"
	assert_output "0 noinherit"
	run -102 --separate-stderr as1000 sbx-ns --workspace "$ws" --changes "$chg" -- true
	assert_equal "$stderr" "$head $chg has project id 0 without PROJINHERIT, the workspace $ws project $proj with PROJINHERIT $fix"
	run -0 ls -A "$chg"
	assert_output ""
	run -102 --separate-stderr box true
	assert_equal "$stderr" "sbx-quota: fatal: refusing change set $chg: it has project id 0 without PROJINHERIT, not the workspace's $proj with PROJINHERIT, so what the sandbox writes there would escape the quota; to fix: run sbx-quota prepare --workspace $ws --project $proj --disk SIZE --changes $chg as root"
	qa "$chg" 7 inherit
	run -102 --separate-stderr box true
	assert_equal "$stderr" "sbx-quota: fatal: refusing change set $chg: it has project id 7, not the workspace's $proj with PROJINHERIT, so what the sandbox writes there would escape the quota; to fix: run sbx-quota prepare --workspace $ws --project $proj --disk SIZE --changes $chg as root"
	run -102 --separate-stderr as1000 sbx-ns --workspace "$ws" --changes "$chg" -- true
	assert_equal "$stderr" "$head $chg has project id 7, the workspace $ws project $proj with PROJINHERIT $fix"
	qa "$chg" "$proj" noinherit
	run -102 --separate-stderr as1000 sbx-ns --workspace "$ws" --changes "$chg" -- true
	assert_equal "$stderr" "$head $chg has project id $proj without PROJINHERIT, the workspace $ws project $proj with PROJINHERIT $fix"
	qa "$chg" "$proj" inherit
	run -0 --separate-stderr box true
	assert_equal "$stderr" ""
	qa "$chg/upper" 7 inherit
	run -102 --separate-stderr as1000 sbx-ns --workspace "$ws" --changes "$chg" -- true
	assert_equal "$stderr" "$head $chg/upper has project id 7, the workspace $ws project $proj with PROJINHERIT $fix"
	qa "$chg/upper" "$proj" inherit
	qa "$chg/work" "$proj" noinherit
	run -102 --separate-stderr as1000 sbx-ns --workspace "$ws" --changes "$chg" -- true
	assert_equal "$stderr" "$head $chg/work has project id $proj without PROJINHERIT, the workspace $ws project $proj with PROJINHERIT $fix"
	qa "$chg/work" "$proj" inherit
	run -0 --separate-stderr box sh -c 'echo n >new'
	qa "$chg/upper/new" 7
	run -102 --separate-stderr box true
	assert_equal "$stderr" "sbx-quota: fatal: refusing change set $chg: 'upper/new' has project id 7, not $proj"
	# A change set on another filesystem, or inside the workspace, is no change set of it.
	local other=/mnt/ext4/q36-$SBX_VM_ROLE-other-$BATS_TEST_NUMBER
	[ "$1" = xfs ] || other=/mnt/xfs/q36-$SBX_VM_ROLE-other-$BATS_TEST_NUMBER
	extra+=("$other")
	mkdir "$other" "$ws/in"
	run -102 --separate-stderr sbx-quota verify --workspace "$ws" --changes "$other" --disk 8M
	assert_equal "$stderr" "sbx-quota: fatal: refusing change set $other: it is on another filesystem than the workspace $ws, whose project quota cannot hold it; to fix: make it on the workspace's filesystem"
	run -102 --separate-stderr sbx-quota verify --workspace "$ws" --changes "$ws/in" --disk 8M
	assert_equal "$stderr" "sbx-quota: fatal: refusing change set $ws/in: it is inside the workspace $ws; to fix: make it beside the workspace"
}

@test "xfs: new files, copy-ups and whiteouts of a change set carry the workspace's project; verify --changes counts them" { t_upper_joins xfs; }
@test "xfs: a command filling its change set through the overlay stops at the block hard limit (ENOSPC)" { t_fill_bytes xfs; }
@test "xfs: a command creating files in its change set stops at the inode hard limit (ENOSPC)" { t_fill_inodes xfs; }
@test "xfs: a copy-up is charged to the project and stops at its limit" { t_copyup_charged xfs; }
@test "xfs: sbx-ns and verify refuse a change set outside the workspace's project" { t_refusals xfs; }

@test "ext4: new files, copy-ups and whiteouts of a change set carry the workspace's project; verify --changes counts them" { t_upper_joins ext4; }
@test "ext4: a command filling its change set through the overlay stops at the block hard limit (EDQUOT)" { t_fill_bytes ext4; }
@test "ext4: a command creating files in its change set stops at the inode hard limit (EDQUOT)" { t_fill_inodes ext4; }
@test "ext4: a copy-up is charged to the project and stops at its limit" { t_copyup_charged ext4; }
@test "ext4: sbx-ns and verify refuse a change set outside the workspace's project" { t_refusals ext4; }

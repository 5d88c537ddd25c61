#!/usr/bin/env bats
# sbx-quota on real project quotas, XFS and ext4, as root and as the unprivileged user.
# Root makes its own workspaces with `sbx-quota prepare` (8 MiB, 16 inodes); the user gets
# the one init prepared with the same limits (it cannot set limits itself), reads them
# through statfs, and damages its own workspace the ways an owner can.

load helpers/vm

: "${SBX_TESTBIN:=/sbx/testbin}"
qa() { "$SBX_TESTBIN/quota-attr" "$@"; }

# The errno of a write past a project limit: XFS answers ENOSPC (a project quota acts as
# the size of a directory tree), ext4 EDQUOT.
full_errno() { if [ "$1" = xfs ]; then echo ENOSPC; else echo EDQUOT; fi; }

# soft FS BYTES: the block soft limit prepare sets under a hard limit of BYTES, one
# filesystem block below it (XFS here has 4 KiB blocks, this small ext4 1 KiB ones).
soft() { if [ "$1" = xfs ]; then echo $(($2 - 4096)); else echo $(($2 - 1024)); fi; }

# The record prepare leaves for a workspace root.
record_of() {
	local d i
	read -r d i < <(stat -c '%d %i' "$1")
	echo "/var/lib/sbx/quota/$(((d >> 8) & 0xfff)):$(((d & 0xff) | ((d >> 12) & 0xfff00))):$i"
}

# ws_for FS: sets ws (an empty workspace under an 8 MiB / 16 inode project) and proj.
ws_for() {
	fs=$1
	if [ "$SBX_VM_ROLE" = root ]; then
		proj=$((5000 + BATS_TEST_NUMBER))
		ws=/mnt/$fs/q35-$BATS_TEST_NUMBER
		mkdir "$ws"
		sbx-quota prepare --workspace "$ws" --project "$proj" --disk 8M --inodes 16
	else
		ws=/mnt/$fs/sbxuser-quota
		if [ "$fs" = xfs ]; then proj=2000; else proj=2001; fi
	fi
}

teardown() {
	[ -z "${enforce_off:-}" ] || qa --enforce on "$enforce_off"
	if [ -n "${ws:-}" ] && [ -d "$ws" ]; then
		if [ "$SBX_VM_ROLE" = root ]; then
			rm -rf "$ws"
		else
			find "$ws" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
			qa "$ws" "$proj" inherit
		fi
	fi
	local x
	for x in "${extra[@]}"; do rm -rf "$x"; done
}
extra=()

# --- each test body runs for both filesystems ---------------------------------------------

t_prepare_then_verify() {
	ws_for "$1"
	mkdir -p "$ws/a/b"
	echo data >"$ws/a/b/f"
	run -0 --separate-stderr sbx-quota verify --workspace "$ws" --disk 8M --inodes 16
	assert_output ""
	assert_equal "$stderr" ""
	run -0 qa "$ws/a/b/f"
	assert_output "$proj noinherit"
	run -0 qa "$ws/a/b"
	assert_output "$proj inherit"
}

# What prepare sets for --disk 8M --inodes 16: soft limits one block and one inode below
# the hard ones, which is what statfs shows an unprivileged caller.
t_status_fd() {
	ws_for "$1"
	local s
	s=$(soft "$1" 8388608)
	local lim='"limits_from":"quotactl","block_hard":8388608,"block_soft":'$s',"inode_hard":16,"inode_soft":15,"bytes_used":[0-9]+,"inodes_used":1,"assurance":"quotactl"'
	[ "$SBX_VM_ROLE" = root ] ||
		lim='"limits_from":"statfs","block_limit":'$s',"inode_limit":15,"block_hard":8388608,"inode_hard":16,"bytes_used":[0-9]+,"inodes_used":1,"assurance":"record"'
	run -0 --separate-stderr sh -c 'exec 5>&1 && exec sbx-quota verify --workspace "$1" --disk 8M --status-fd 5 >/dev/null' sh "$ws"
	assert_equal "${#lines[@]}" 2
	assert_regex "${lines[0]}" "^\\{\"tool\":\"sbx-quota\",\"event\":\"verified\"$SBX_VER,\"workspace\":\"$ws\",\"fs\":\"$1\",\"dev\":\"[0-9]+:[0-9]+\",\"fsid\":\"[0-9a-f]{16}\",\"mount_id\":[0-9]+,\"project\":$proj,$lim,\"entries\":1\\}$"
	assert_equal "${lines[1]}" '{"tool":"sbx-quota","event":"exit","code":0}'
}

t_edquot_bytes() {
	ws_for "$1"
	extra+=("/mnt/$1/outside-$SBX_VM_ROLE-$BATS_TEST_NUMBER")
	run -1 sbx-quota verify --workspace "$ws" --disk 8M -- fill bytes "$ws/data" 33554432
	assert_output --regexp "^wrote [0-9]+ bytes: $(full_errno "$1")\$"
	local n=${output#wrote }
	n=${n%% *}
	((n <= 8388608 && n >= 8388608 - 1048576)) || fail "wrote $n bytes under an 8388608-byte limit"
	# The rest of the filesystem is not charged: a file outside the project still grows.
	run -0 fill bytes "/mnt/$1/outside-$SBX_VM_ROLE-$BATS_TEST_NUMBER" 16777216
	assert_output "wrote 16777216 bytes"
}

t_edquot_inodes() {
	ws_for "$1"
	run -1 sbx-quota verify --workspace "$ws" --disk 8M --inodes 16 -- fill files "$ws" 1000
	assert_output "created 15 files: $(full_errno "$1")"
}

t_enforcement_off() {
	ws_for "$1"
	if [ "$SBX_VM_ROLE" = root ]; then
		enforce_off=/mnt/$1
		qa --enforce off "/mnt/$1"
		run -101 --separate-stderr sbx-quota verify --workspace "$ws" --disk 8M
		assert_equal "$stderr" "sbx-quota: fatal: hard limits unsupported: $ws ($1): project quota enforcement is off"
	else
		# Only an administrator can switch enforcement off.
		run -111 qa --enforce off "/mnt/$1"
		assert_output "quota-attr: fatal: unable to stop enforcing quotas on /mnt/$1: Operation not permitted"
		run -0 sbx-quota verify --workspace "$ws" --disk 8M
	fi
}

# An ext4 without project quotas: busybox can only make ext2 (no quota feature), which the
# ext4 driver mounts and for which the kernel offers no quota control at all. (An ext4 with
# the feature mounted without prjquota accounts but does not enforce: the test above.)
t_mounted_without_prjquota() {
	if [ "$SBX_VM_ROLE" = root ]; then
		local img=/tmp/noquota-$BATS_TEST_NUMBER.img
		mnt=/tmp/noquota-$BATS_TEST_NUMBER
		extra+=("$img" "$mnt")
		truncate -s 16M "$img"
		mke2fs -F "$img" 16384 >/dev/null
		mkdir "$mnt"
		mount -o loop -t ext4 "$img" "$mnt"
		run -101 --separate-stderr sbx-quota verify --workspace "$mnt" --disk 8M
		umount "$mnt"
		assert_equal "$stderr" "sbx-quota: fatal: hard limits unsupported: $mnt (ext4): the kernel offers no quota control for it: Function not implemented"
	else
		# The user cannot mount one; its home, on the initramfs, is no better.
		run -101 --separate-stderr sbx-quota verify --workspace "$HOME" --disk 8M
		assert_regex "$stderr" "^sbx-quota: fatal: hard limits unsupported: $HOME is on (tmpfs|ramfs), not XFS or ext4\$"
	fi
}

t_root_noinherit() {
	ws_for "$1"
	qa "$ws" "$proj" noinherit
	run -102 --separate-stderr sbx-quota verify --workspace "$ws" --disk 8M
	assert_equal "$stderr" "sbx-quota: fatal: refusing workspace $ws: its root lacks PROJINHERIT"
}

t_deep_noinherit() {
	ws_for "$1"
	mkdir -p "$ws/a/b/c/d"
	qa "$ws/a/b/c" "$proj" noinherit
	run -102 --separate-stderr sbx-quota verify --workspace "$ws" --disk 8M
	assert_equal "$stderr" "sbx-quota: fatal: refusing workspace: directory 'a/b/c' lacks PROJINHERIT"
}

t_deep_other_project() {
	ws_for "$1"
	mkdir -p "$ws/a/b/c"
	: >"$ws/a/b/c/f"
	qa "$ws/a/b/c/f" 7
	run -102 --separate-stderr sbx-quota verify --workspace "$ws" --disk 8M
	assert_equal "$stderr" "sbx-quota: fatal: refusing workspace: 'a/b/c/f' has project id 7, not $proj"
}

t_looser_blocks() {
	ws_for "$1"
	if [ "$SBX_VM_ROLE" = root ]; then
		run -0 sbx-quota prepare --workspace "$ws" --project "$proj" --disk 16M --inodes 16 --replace
		run -102 --separate-stderr sbx-quota verify --workspace "$ws" --disk 8M
		assert_equal "$stderr" "sbx-quota: fatal: refusing workspace $ws: project $proj block hard limit 16777216 exceeds --disk 8388608"
	else
		run -102 --separate-stderr sbx-quota verify --workspace "$ws" --disk 4M
		assert_equal "$stderr" "sbx-quota: fatal: refusing workspace $ws: project $proj block limit (statfs) $(soft "$1" 8388608) exceeds --disk 4194304"
		# statfs's figure fits, the hard limit prepare recorded behind it does not.
		run -102 --separate-stderr sbx-quota verify --workspace "$ws" --disk "$(soft "$1" 8388608)"
		assert_equal "$stderr" "sbx-quota: fatal: refusing workspace $ws: project $proj block hard limit (recorded) 8388608 exceeds --disk $(soft "$1" 8388608)"
	fi
}

t_looser_inodes() {
	ws_for "$1"
	if [ "$SBX_VM_ROLE" = root ]; then
		quota-set "$ws" "$proj" 8388608 4096
		run -102 --separate-stderr sbx-quota verify --workspace "$ws" --disk 8M
		assert_equal "$stderr" "sbx-quota: fatal: refusing workspace $ws: project $proj inode hard limit 4096 exceeds --disk / 4096 = 2048"
		run -102 --separate-stderr sbx-quota verify --workspace "$ws" --disk 16M --inodes 4095
		assert_equal "$stderr" "sbx-quota: fatal: refusing workspace $ws: project $proj inode hard limit 4096 exceeds --inodes 4095"
	else
		run -102 --separate-stderr sbx-quota verify --workspace "$ws" --disk 8M --inodes 8
		assert_equal "$stderr" "sbx-quota: fatal: refusing workspace $ws: project $proj inode limit (statfs) 15 exceeds --inodes 8"
		run -102 --separate-stderr sbx-quota verify --workspace "$ws" --disk 8M --inodes 15
		assert_equal "$stderr" "sbx-quota: fatal: refusing workspace $ws: project $proj inode hard limit (recorded) 16 exceeds --inodes 15"
	fi
}

t_symlink() {
	ws_for "$1"
	mkdir "$ws/a"
	ln -s / "$ws/a/up"
	run -102 --separate-stderr sbx-quota verify --workspace "$ws" --disk 8M
	assert_equal "$stderr" "sbx-quota: fatal: refusing workspace: 'a/up' is a symbolic link"
}

t_hardlink() {
	ws_for "$1"
	local out=/mnt/$1/link-$SBX_VM_ROLE-$BATS_TEST_NUMBER
	extra+=("$out")
	mkdir "$ws/a"
	: >"$ws/a/f"
	ln "$ws/a/f" "$out"
	run -102 --separate-stderr sbx-quota verify --workspace "$ws" --disk 8M
	assert_equal "$stderr" "sbx-quota: fatal: refusing workspace: 'a/f' has 2 hard links"
}

t_bind_mount() {
	ws_for "$1"
	local other=/mnt/$1/bind-$SBX_VM_ROLE-$BATS_TEST_NUMBER
	extra+=("$other")
	mkdir "$other" "$ws/m"
	local ns="unshare -m"
	[ "$SBX_VM_ROLE" = root ] || ns="unshare -Urm"
	# In a mount namespace of its own, so nothing is left mounted; the user's is inside a
	# user namespace, where quotactl reads are refused and statfs is what remains.
	run -102 --separate-stderr $ns sh -c 'mount --bind "$1" "$2/m" && exec sbx-quota verify --workspace "$2" --disk 8M' sh "$other" "$ws"
	assert_equal "$stderr" "sbx-quota: fatal: refusing workspace: 'm' is another mount (a mount point or bind mount)"
	run -102 --separate-stderr $ns sh -c 'mount -t tmpfs tmpfs "$1/m" && exec sbx-quota verify --workspace "$1" --disk 8M' sh "$ws"
	assert_equal "$stderr" "sbx-quota: fatal: refusing workspace: 'm' is on another filesystem"
}

t_shared_project() {
	ws_for "$1"
	local other=/mnt/$1/shared-$SBX_VM_ROLE-$BATS_TEST_NUMBER
	extra+=("$other")
	mkdir "$other"
	qa "$other" "$proj" inherit
	: >"$other/x"
	run -102 --separate-stderr sbx-quota verify --workspace "$ws" --disk 8M
	assert_equal "$stderr" "sbx-quota: fatal: refusing workspace $ws: project $proj is shared: 3 inodes are charged to it, the workspace has 1"
	if [ "$SBX_VM_ROLE" = root ]; then
		local third=/mnt/$1/third-$BATS_TEST_NUMBER
		extra+=("$third")
		mkdir "$third"
		run -102 --separate-stderr sbx-quota prepare --workspace "$third" --project "$proj" --disk 8M
		assert_equal "$stderr" "sbx-quota: fatal: refusing to prepare $third: project $proj is in use by 3 inodes outside the workspace"
	fi
}

t_pass_fd_and_max_file() {
	ws_for "$1"
	run -0 --separate-stderr sbx-quota verify --workspace "$ws" --disk 8M --pass-fd 7 --max-file 1M -- \
		sh -c 'stat -L -c %d:%i /proc/self/fd/7; stat -c %d:%i "$1"; grep "^Max file size" /proc/self/limits' sh "$ws"
	assert_equal "${lines[0]}" "${lines[1]}"
	assert_regex "${lines[2]}" '^Max file size +1048576 +1048576 +bytes *$'
	run -153 sbx-quota verify --workspace "$ws" --disk 8M --max-file 1M -- fill bytes "$ws/big" 4194304
}

t_chain_sbx_ns() {
	ws_for "$1"
	# The directory sbx-ns binds is the one verified: sbx-ns compares the fd with the path.
	# sbx-ns never runs a command as root: root names the user, who owns the workspace.
	local ids=()
	if [ "$SBX_VM_ROLE" = root ]; then
		chown 1000:1000 "$ws"
		ids=(--uid 1000 --gid 1000)
	fi
	# fd 3 is free (bats' own is closed first), so the workspace is opened as 3 itself.
	run --separate-stderr sh -c 'ws=$1 && shift && exec 3>&- && exec sbx-quota verify --workspace "$ws" --disk 8M --pass-fd 3 -- \
		sbx-ns --workspace-fd 3 "$@" -- sh -c "pwd && echo hi >made && cat made"' sh "$ws" "${ids[@]}"
	assert_equal "$stderr" ""
	assert_equal "$status" 0
	assert_equal "${lines[0]}" "$ws"
	assert_equal "${lines[1]}" "hi"
	run -0 qa "$ws/made"
	assert_output "$proj noinherit"
	# A refusal stops the chain before sbx-ns.
	ln -s / "$ws/up"
	run -102 --separate-stderr sbx-quota verify --workspace "$ws" --disk 8M --pass-fd 7 -- \
		sbx-ns --workspace-fd 7 -- touch ran
	assert_equal "$stderr" "sbx-quota: fatal: refusing workspace: 'up' is a symbolic link"
	assert_file_not_exist "$ws/ran"
}

t_no_quotactl_fd() {
	ws_for "$1"
	# As on a kernel before 5.14: quotactl on the block device from mountinfo instead.
	run -0 --separate-stderr "$SBX_TESTBIN/quota-nofd" sbx-quota verify --workspace "$ws" --disk 8M --inodes 16
	assert_equal "$stderr" ""
	run -102 --separate-stderr "$SBX_TESTBIN/quota-nofd" sbx-quota verify --workspace "$ws" --disk 8M --inodes 8
	assert_regex "$stderr" "^sbx-quota: fatal: refusing workspace $ws: project $proj inode (hard limit 16|limit \\(statfs\\) 15) exceeds --inodes 8\$"
}

t_prepare_widen() {
	ws_for "$1"
	if [ "$SBX_VM_ROLE" = root ]; then
		run -102 --separate-stderr sbx-quota prepare --workspace "$ws" --project "$proj" --disk 16M --inodes 16
		assert_equal "$stderr" "sbx-quota: fatal: refusing to prepare $ws: project $proj has a block hard limit of 8388608; raising it to 16777216 needs --replace"
		run -102 --separate-stderr sbx-quota prepare --workspace "$ws" --project "$proj" --disk 8M --inodes 32
		assert_equal "$stderr" "sbx-quota: fatal: refusing to prepare $ws: project $proj has an inode hard limit of 16; raising it to 32 needs --replace"
		run -0 sbx-quota prepare --workspace "$ws" --project "$proj" --disk 4M --inodes 8
		run -0 sbx-quota prepare --workspace "$ws" --project "$proj" --disk 16M --replace
		run -0 sbx-quota report --workspace "$ws"
		assert_line "block hard limit: 16777216"
		assert_line "inode hard limit: 4096"
	else
		run -111 --separate-stderr sbx-quota prepare --workspace "$ws" --project "$proj" --disk 8M
		assert_equal "$stderr" "sbx-quota: fatal: unable to read the quota of project $proj on $ws: Operation not permitted"
	fi
}

t_prepare_tree() {
	ws_for "$1"
	[ "$SBX_VM_ROLE" = root ] || { run -0 true; return; }
	local t=/mnt/$1/tree-$BATS_TEST_NUMBER
	extra+=("$t")
	mkdir -p "$t/a/b/c" "$t/d"
	echo x >"$t/a/b/c/f"
	echo y >"$t/d/g"
	run -0 sbx-quota prepare --workspace "$t" --project $((proj + 100)) --disk 8M
	for p in "$t" "$t/a" "$t/a/b" "$t/a/b/c" "$t/d"; do
		run -0 qa "$p"
		assert_output "$((proj + 100)) inherit"
	done
	run -0 qa "$t/a/b/c/f"
	assert_output "$((proj + 100)) noinherit"
	run -0 sbx-quota verify --workspace "$t" --disk 8M
	# A link inside stops prepare before anything changes.
	local u=/mnt/$1/tree2-$BATS_TEST_NUMBER
	extra+=("$u")
	mkdir -p "$u/a"
	ln -s /etc "$u/a/l"
	run -102 --separate-stderr sbx-quota prepare --workspace "$u" --project $((proj + 200)) --disk 8M
	assert_equal "$stderr" "sbx-quota: fatal: refusing workspace: 'a/l' is a symbolic link"
	run -0 qa "$u/a"
	assert_output "0 noinherit"
}

t_report() {
	ws_for "$1"
	local src=quotactl
	[ "$SBX_VM_ROLE" = root ] || src="record of sbx-quota prepare (statfs agrees)"
	run -0 sbx-quota report --workspace "$ws"
	assert_line "filesystem: $1"
	assert_line "accounting: on"
	assert_line "enforcement: on"
	assert_line "project id: $proj"
	assert_line "projinherit: on"
	assert_line "limits from: $src"
	assert_line "block hard limit: 8388608"
	assert_line "block soft limit: $(soft "$1" 8388608)"
	assert_line "inode hard limit: 16"
	assert_line "inode soft limit: 15"
	assert_line "inodes used: 1"
	refute_line --partial "unproven"
}

# An administrator's soft limit at the requested size over a looser hard one: statfs shows
# the soft one, which an unprivileged caller cannot tell from a hard one. Root sets the
# limits and runs verify as uid 1000 itself; the user run has nothing to set them with.
t_soft_hides_hard() {
	[ "$SBX_VM_ROLE" = root ] || { run -0 true; return; }
	proj=$((5000 + BATS_TEST_NUMBER))
	ws=/mnt/$1/q35-$BATS_TEST_NUMBER
	mkdir "$ws"
	run -0 sbx-quota prepare --workspace "$ws" --project "$proj" --disk 16M
	chown 1000:1000 "$ws"
	quota-set "$ws" "$proj" 1073741824 4096 16777216
	run -102 --separate-stderr sbx-quota verify --workspace "$ws" --disk 16M
	assert_equal "$stderr" "sbx-quota: fatal: refusing workspace $ws: project $proj block hard limit 1073741824 exceeds --disk 16777216"
	local why="refusing workspace $ws: statfs shows the soft limit of project $proj when one is set, its hard limits need CAP_SYS_ADMIN to read, and its record implies a block limit of $(soft "$1" 16777216), statfs shows 16777216; to fix: run sbx-quota prepare on it as root, or set accept_statfs_quota in the baseline"
	run -102 --separate-stderr runas 1000 1000 sh -c 'exec 3>&1 && exec sbx-quota verify --workspace "$1" --disk 16M --status-fd 3 -- fill bytes "$1/data" 41943040' sh "$ws"
	assert_equal "$stderr" "sbx-quota: fatal: $why"
	assert_output "{\"tool\":\"sbx-quota\",\"event\":\"exit\"$SBX_VER,\"code\":102,\"stage\":\"setup\",\"error\":\"$why\"}"
	assert_file_not_exist "$ws/data"

	# Limits set by another tool, no record at all: likewise.
	local bare=/mnt/$1/q35-bare-$BATS_TEST_NUMBER
	extra+=("$bare")
	mkdir "$bare"
	quota-set "$bare" $((proj + 100)) 1073741824 4096 16777216
	chown 1000:1000 "$bare"
	run -102 --separate-stderr runas 1000 1000 sbx-quota verify --workspace "$bare" --disk 16M -- fill bytes "$bare/data" 41943040
	# (The inode number may be a deleted workspace's, whose record stays but is no match.)
	assert_regex "$stderr" "^sbx-quota: fatal: refusing workspace $bare: statfs shows the soft limit of project $((proj + 100)) when one is set, its hard limits need CAP_SYS_ADMIN to read, and it has no record of sbx-quota prepare( \\(only one of an earlier directory with its inode number\\))?; to fix: run sbx-quota prepare on it as root, or set accept_statfs_quota in the baseline\$"
	assert_file_not_exist "$bare/data"

	# The administrator's baseline accepts statfs's figures: said on stderr and in the
	# status, and the command then writes past 16 MiB (the hard limit is 1 GiB).
	local base=/tmp/q35-accept-$BATS_TEST_NUMBER.json
	extra+=("$base")
	echo '{"resources":{"accept_statfs_quota":true}}' >"$base"
	run -0 --separate-stderr runas 1000 1000 sh -c 'exec 3>&1 && exec sbx-quota verify --workspace "$1" --disk 16M --baseline "$2" --status-fd 3 -- fill bytes "$1/data" 41943040' sh "$ws" "$base"
	assert_equal "$stderr" "sbx-quota: warning: workspace $ws: taking statfs's limits of project $proj as hard, as the baseline accepts (accept_statfs_quota): its record implies a block limit of $(soft "$1" 16777216), statfs shows 16777216, and a soft limit would hide a looser hard one"
	assert_line --regexp '"limits_from":"statfs","block_limit":16777216,"inode_limit":4096,"bytes_used":[0-9]+,"inodes_used":1,"assurance":"statfs","entries":1\}$'
	assert_line "wrote 41943040 bytes"
	# A request cannot grant itself that.
	run -102 --separate-stderr runas 1000 1000 sh -c 'exec 4<"$2" && exec sbx-quota verify --workspace "$1" --policy-fd 4' sh "$bare" "$base"
	assert_regex "$stderr" "^sbx-quota: fatal: policy refused: --policy-fd 4.*accept_statfs_quota.*: only a baseline may accept statfs-level quota assurance\$"
}

# The record is root's alone: the user can neither write nor replace it, and one that is
# not root's, is writable by others, is not prepare's text, or names another project, is
# no record.
t_record_forged() {
	ws_for "$1"
	local rec
	rec=$(record_of "$ws")
	if [ "$SBX_VM_ROLE" = user ]; then
		run -1 cp /etc/passwd "$rec"
		run -1 touch "$rec.new"
		run -1 mv "$rec" "$rec.old"
		run -0 sbx-quota verify --workspace "$ws" --disk 8M --inodes 16
		return
	fi
	local text head="refusing workspace $ws: statfs shows the soft limit of project $proj when one is set, its hard limits need CAP_SYS_ADMIN to read, and"
	local fix="; to fix: run sbx-quota prepare on it as root, or set accept_statfs_quota in the baseline"
	chown 1000:1000 "$ws"
	text=$(cat "$rec")
	run -0 runas 1000 1000 sbx-quota verify --workspace "$ws" --disk 8M
	chown 1000 "$rec"
	run -102 --separate-stderr runas 1000 1000 sbx-quota verify --workspace "$ws" --disk 8M
	assert_equal "$stderr" "sbx-quota: fatal: $head its record $rec is owned by uid 1000, not root$fix"
	chown 0 "$rec"
	chmod 0664 "$rec"
	run -102 --separate-stderr runas 1000 1000 sbx-quota verify --workspace "$ws" --disk 8M
	assert_equal "$stderr" "sbx-quota: fatal: $head its record $rec is writable by group or others (mode 0664)$fix"
	chmod 0644 "$rec"
	chmod 0777 /var/lib/sbx/quota
	run -102 --separate-stderr runas 1000 1000 sbx-quota verify --workspace "$ws" --disk 8M
	chmod 0755 /var/lib/sbx/quota
	assert_equal "$stderr" "sbx-quota: fatal: $head the directory of its record, /var/lib/sbx/quota, is not trusted: writable by group or others (mode 0777)$fix"
	mv /var/lib/sbx/quota /var/lib/sbx/quota.real
	ln -s quota.real /var/lib/sbx/quota
	run -102 --separate-stderr runas 1000 1000 sbx-quota verify --workspace "$ws" --disk 8M
	rm /var/lib/sbx/quota
	mv /var/lib/sbx/quota.real /var/lib/sbx/quota
	assert_equal "$stderr" "sbx-quota: fatal: $head the directory of its record, /var/lib/sbx/quota, is not trusted: 'quota' on its way is not a directory (a symbolic link?)$fix"
	echo "$text " >"$rec"
	run -102 --separate-stderr runas 1000 1000 sbx-quota verify --workspace "$ws" --disk 8M
	assert_equal "$stderr" "sbx-quota: fatal: $head its record $rec is not one of sbx-quota prepare$fix"
	echo "${text/born=/born=1}" >"$rec"
	run -102 --separate-stderr runas 1000 1000 sbx-quota verify --workspace "$ws" --disk 8M
	assert_equal "$stderr" "sbx-quota: fatal: $head it has no record of sbx-quota prepare (only one of an earlier directory with its inode number)$fix"
	echo "${text/project=$proj /project=$((proj + 1)) }" >"$rec"
	run -102 --separate-stderr runas 1000 1000 sbx-quota verify --workspace "$ws" --disk 8M
	assert_equal "$stderr" "sbx-quota: fatal: $head its record is for project $((proj + 1))$fix"
	rm "$rec"
	ln -s /etc/passwd "$rec"
	run -102 --separate-stderr runas 1000 1000 sbx-quota verify --workspace "$ws" --disk 8M
	assert_equal "$stderr" "sbx-quota: fatal: $head its record $rec is unreadable: a symbolic link$fix"
	rm "$rec"
	run -102 --separate-stderr runas 1000 1000 sbx-quota verify --workspace "$ws" --disk 8M
	assert_equal "$stderr" "sbx-quota: fatal: $head it has no record of sbx-quota prepare$fix"
	# prepare writes it anew.
	run -0 sbx-quota prepare --workspace "$ws" --project "$proj" --disk 8M --inodes 16
	run -0 cat "$rec"
	assert_output "$text"
	run -0 runas 1000 1000 sbx-quota verify --workspace "$ws" --disk 8M
}

# ext4 exempts CAP_SYS_RESOURCE from hard limits; what sbx-quota runs holds it in no set
# (root: the bounding set too; the user cannot drop that one, so no_new_privs is set).
t_no_quota_exemption() {
	ws_for "$1"
	if [ "$SBX_VM_ROLE" = root ] && [ "$1" = ext4 ]; then
		# Without sbx-quota, root with the capability writes past the limit.
		run -0 fill --keep-caps bytes "$ws/free" 12582912
		assert_output "wrote 12582912 bytes"
		rm "$ws/free"
	fi
	run -1 sbx-quota verify --workspace "$ws" --disk 8M -- fill --keep-caps bytes "$ws/data" 33554432
	assert_output --regexp "^wrote [0-9]+ bytes: $(full_errno "$1")\$"
	local n=${output#wrote }
	n=${n%% *}
	((n <= 8388608)) || fail "wrote $n bytes under an 8388608-byte limit"
	run -0 sbx-quota verify --workspace "$ws" --disk 8M -- grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):' /proc/self/status
	local line v
	for line in "${lines[@]}"; do
		case $line in
		CapBnd:*) [ "$SBX_VM_ROLE" = user ] && continue ;;
		NoNewPrivs:*) continue ;;
		esac
		v=${line##*[[:space:]]}
		(((0x$v & 0x1000000) == 0)) || fail "CAP_SYS_RESOURCE left in: $line"
	done
	if [ "$SBX_VM_ROLE" = root ]; then
		assert_line --regexp '^NoNewPrivs:[[:space:]]+0$'
	else
		assert_line --regexp '^NoNewPrivs:[[:space:]]+1$'
	fi
}

# XFS frees a deleted inode in the background, so for a moment it is still charged to the
# project: a tree that was just cleaned must not look shared (a truly shared one still
# does: t_shared_project).
t_deleted_not_shared() {
	ws_for "$1"
	# In one shell, with no pause between the deletion and the count.
	run -0 --separate-stderr sh -c 'for i in $(seq 25); do
		mkdir "$1/d" && rmdir "$1/d" && sbx-quota verify --workspace "$1" --disk 8M || exit
		: >"$1/f" && rm "$1/f" && sbx-quota verify --workspace "$1" --disk 8M || exit
	done' sh "$ws"
	assert_equal "$stderr" ""
	[ "$SBX_VM_ROLE" = root ] || return 0
	run -0 --separate-stderr sh -c 'for i in $(seq 25); do
		mkdir "$1/d" && rmdir "$1/d" && sbx-quota prepare --workspace "$1" --project "$2" --disk 8M --inodes 16 || exit
	done' sh "$ws" "$proj"
	assert_equal "$stderr" ""
}

@test "prepare then verify succeeds on xfs, and every inode carries the project" { t_prepare_then_verify xfs; }
@test "verify writes the filesystem identity and the limits it checked to --status-fd on xfs" { t_status_fd xfs; }
@test "writing past the block limit on xfs gets ENOSPC (XFS reports project quotas as a full disk) and the rest of the filesystem still takes writes" { t_edquot_bytes xfs; }
@test "creating files past the inode limit on xfs gets ENOSPC" { t_edquot_inodes xfs; }
@test "verify refuses xfs when project quota enforcement is off" { t_enforcement_off xfs; }
@test "verify refuses a workspace on xfs whose root lacks PROJINHERIT" { t_root_noinherit xfs; }
@test "verify refuses a workspace on xfs with one deep directory without PROJINHERIT" { t_deep_noinherit xfs; }
@test "verify refuses a workspace on xfs with a deep file of another project" { t_deep_other_project xfs; }
@test "verify refuses a block limit on xfs looser than --disk" { t_looser_blocks xfs; }
@test "verify refuses an inode limit on xfs above --disk / 4096 or --inodes" { t_looser_inodes xfs; }
@test "verify refuses a symbolic link inside a workspace on xfs" { t_symlink xfs; }
@test "verify refuses a file inside a workspace on xfs with a second link outside" { t_hardlink xfs; }
@test "verify refuses a bind mount and a tmpfs mounted inside a workspace on xfs" { t_bind_mount xfs; }
@test "verify and prepare refuse a project id on xfs that another tree uses" { t_shared_project xfs; }
@test "verify on xfs passes the verified directory as --pass-fd and sets --max-file as RLIMIT_FSIZE" { t_pass_fd_and_max_file xfs; }
@test "verify on xfs hands the verified directory to sbx-ns --workspace-fd, and a refusal stops the chain" { t_chain_sbx_ns xfs; }
@test "verify on xfs works without quotactl_fd through the block device" { t_no_quotactl_fd xfs; }
@test "prepare on xfs refuses to raise existing limits without --replace (root) and needs privilege (user)" { t_prepare_widen xfs; }
@test "prepare on xfs puts an existing tree into the project and refuses one with a link" { t_prepare_tree xfs; }
@test "report on xfs shows the state, the limits and the use" { t_report xfs; }
@test "an unprivileged verify on xfs refuses a soft limit hiding a looser hard one unless the baseline accepts statfs" { t_soft_hides_hard xfs; }
@test "the record of prepare on xfs is trusted only as root wrote it" { t_record_forged xfs; }
@test "what verify runs on xfs holds no CAP_SYS_RESOURCE" { t_no_quota_exemption xfs; }
@test "a tree on xfs just cleaned of a directory or file is not taken as shared" { t_deleted_not_shared xfs; }

@test "prepare then verify succeeds on ext4, and every inode carries the project" { t_prepare_then_verify ext4; }
@test "verify writes the filesystem identity and the limits it checked to --status-fd on ext4" { t_status_fd ext4; }
@test "writing past the block limit on ext4 gets EDQUOT and the rest of the filesystem still takes writes" { t_edquot_bytes ext4; }
@test "creating files past the inode limit on ext4 gets EDQUOT" { t_edquot_inodes ext4; }
@test "verify refuses ext4 when project quota enforcement is off" { t_enforcement_off ext4; }
@test "verify refuses a workspace on ext4 whose root lacks PROJINHERIT" { t_root_noinherit ext4; }
@test "verify refuses a workspace on ext4 with one deep directory without PROJINHERIT" { t_deep_noinherit ext4; }
@test "verify refuses a workspace on ext4 with a deep file of another project" { t_deep_other_project ext4; }
@test "verify refuses a block limit on ext4 looser than --disk" { t_looser_blocks ext4; }
@test "verify refuses an inode limit on ext4 above --disk / 4096 or --inodes" { t_looser_inodes ext4; }
@test "verify refuses a symbolic link inside a workspace on ext4" { t_symlink ext4; }
@test "verify refuses a file inside a workspace on ext4 with a second link outside" { t_hardlink ext4; }
@test "verify refuses a bind mount and a tmpfs mounted inside a workspace on ext4" { t_bind_mount ext4; }
@test "verify and prepare refuse a project id on ext4 that another tree uses" { t_shared_project ext4; }
@test "verify on ext4 passes the verified directory as --pass-fd and sets --max-file as RLIMIT_FSIZE" { t_pass_fd_and_max_file ext4; }
@test "verify on ext4 hands the verified directory to sbx-ns --workspace-fd, and a refusal stops the chain" { t_chain_sbx_ns ext4; }
@test "verify on ext4 works without quotactl_fd through the block device" { t_no_quotactl_fd ext4; }
@test "prepare on ext4 refuses to raise existing limits without --replace (root) and needs privilege (user)" { t_prepare_widen ext4; }
@test "prepare on ext4 puts an existing tree into the project and refuses one with a link" { t_prepare_tree ext4; }
@test "report on ext4 shows the state, the limits and the use" { t_report ext4; }
@test "an unprivileged verify on ext4 refuses a soft limit hiding a looser hard one unless the baseline accepts statfs" { t_soft_hides_hard ext4; }
@test "the record of prepare on ext4 is trusted only as root wrote it" { t_record_forged ext4; }
@test "root through verify on ext4 stops at the limit: CAP_SYS_RESOURCE is dropped from every set" { t_no_quota_exemption ext4; }
@test "a tree on ext4 just cleaned of a directory or file is not taken as shared" { t_deleted_not_shared ext4; }

@test "verify refuses an ext4 without project quotas (root) and the initramfs (user)" { t_mounted_without_prjquota; }

@test "verify refuses a tmpfs workspace in the VM with the unsupported code" {
	local d
	d=$(mktemp -d /dev/shm/q35.XXXXXX)
	extra+=("$d")
	run -101 --separate-stderr sbx-quota verify --workspace "$d" --disk 8M
	assert_equal "$stderr" "sbx-quota: fatal: hard limits unsupported: $d is on tmpfs, not XFS or ext4"
}

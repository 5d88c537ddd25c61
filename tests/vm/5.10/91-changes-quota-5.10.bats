#!/usr/bin/env bats
# Only on 5.10: a change set under its workspace's project quota is proven by sbx-quota
# verify --changes (through the block device: no quotactl_fd), and the sandbox that would
# use it is refused, the kernel's missing overlayfs in a user namespace named, on XFS and
# ext4 alike. Nothing runs past the quota because nothing runs.

load helpers/vm

: "${SBX_TESTBIN:=/sbx/testbin}"
qa() { "$SBX_TESTBIN/quota-attr" "$@"; }

teardown() {
	[ -z "${chg:-}" ] || rm -rf "$chg"
	[ -n "${ws:-}" ] && [ -d "$ws" ] || return 0
	if [ "$SBX_VM_ROLE" = root ]; then
		rm -rf "$ws"
	else
		find "$ws" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
		qa "$ws" "$proj" inherit
	fi
}

t_refused() {
	local fs=$1 as=()
	chg=/mnt/$fs/q91-$SBX_VM_ROLE-$BATS_TEST_NUMBER.changes
	mkdir -m 0700 "$chg"
	if [ "$SBX_VM_ROLE" = root ]; then
		proj=$((7000 + BATS_TEST_NUMBER))
		ws=/mnt/$fs/q91-$BATS_TEST_NUMBER
		mkdir "$ws"
		chown 1000:1000 "$ws" "$chg"
		sbx-quota prepare --workspace "$ws" --changes "$chg" --project "$proj" --disk 8M --inodes 16
		as=(runas 1000 1000)
	else
		ws=/mnt/$fs/sbxuser-quota
		if [ "$fs" = xfs ]; then proj=2000; else proj=2001; fi
		qa "$chg" "$proj" inherit
	fi
	run -0 --separate-stderr "${as[@]}" sbx-quota verify --workspace "$ws" --changes "$chg" --disk 8M --inodes 16
	assert_equal "$stderr" ""
	run -106 --separate-stderr "${as[@]}" sbx-quota verify --workspace "$ws" --changes "$chg" --disk 8M \
		--inodes 16 --pass-fd 7 -- sbx-ns --workspace-fd 7 --changes "$chg" -- touch ran
	assert_equal "$stderr" "sbx-ns: fatal: --changes: unable to use a change set: kernel $(uname -r) has no overlayfs in user namespaces (Linux 5.11 or later)"
	run -0 ls -A "$chg"
	assert_output ""
	assert_file_not_exist "$ws/ran"
}

@test "5.10, xfs: a change set under the workspace's quota is verified, and its sandbox refused (106)" { t_refused xfs; }
@test "5.10, ext4: a change set under the workspace's quota is verified, and its sandbox refused (106)" { t_refused ext4; }

#!/usr/bin/env bats
# Only on Debian 11's 5.10 (tests/vm/check.sh boots it with this directory added): what
# that kernel lacks, each tool either works around with the same guarantees or refuses
# with the reason.

load helpers/vm

setup() {
	ws=$(mktemp -d /var/tmp/sbx-510-ws.XXXXXX)
	chmod 0755 "$ws"
}

teardown() {
	rm -rf "$ws"
	[ -z "${qdir:-}" ] || vm_quota_dir_remove "$qdir"
}

@test "the kernel is 5.10: no mount_setattr, no Landlock, no quotactl_fd" {
	run -0 uname -r
	assert_output --regexp '^5\.10\.'
}

@test "sbx-check host: the classic mount calls work, Landlock is missing, quotas go through the device" {
	run -0 --separate-stderr sbx-check host --cgroup-root "$SBX_VM_CGROUP"
	assert_equal "$stderr" ""
	assert_line --regexp '^kernel +ok +Linux 5\.10\.[^ ]+ \(older than 5\.14: quotas are set through the block device, no quotactl_fd\)$'
	assert_line "mounts             ok             the classic mount calls (no mount_setattr here: it came in Linux 5.12): bind through /proc/self/fd/N, then remount: a read-only, nosuid, nodev bind of /usr and its submounts works api=classic"
	assert_line "landlock           missing        landlock: Function not implemented; sbx-ns confines by mounts alone and --require-landlock refuses; to fix: boot with landlock in lsm= (CONFIG_SECURITY_LANDLOCK)"
	assert_line "quotactl_fd        unsupported    quotactl_fd failed; sbx-quota uses quotactl on the filesystem's block device: Function not implemented; to fix: Linux 5.14 or newer"
	assert_line "result: all checks passed (exit 0)"
}

@test "sbx-ns --require-landlock refuses with 106 and the reason" {
	local id=()
	[ "$SBX_VM_ROLE" = root ] && id=(--uid 1000 --gid 1000)
	run -106 --separate-stderr sbx-ns "${id[@]}" --require-landlock --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to use Landlock: this kernel does not offer it (--require-landlock)"
	assert_output ""
}

@test "sbx-quota verifies a project quota through the block device" {
	qdir=$(vm_quota_dir xfs)
	run -0 --separate-stderr sbx-quota verify --workspace "$qdir" --disk 8M --inodes 16
	assert_equal "$stderr" ""
	run -102 --separate-stderr sbx-quota verify --workspace "$qdir" --disk 8M --inodes 8
	assert_regex "$stderr" "^sbx-quota: fatal: refusing workspace $qdir: project [0-9]+ inode (hard limit|limit \\(statfs\\)) [0-9]+ exceeds --inodes 8\$"
}

@test "sbx-ns --changes refuses with 106 and the reason: no overlayfs in a user namespace before 5.11" {
	local id=() chg
	if [ "$SBX_VM_ROLE" = root ]; then
		id=(--uid 1000 --gid 1000)
		chown 1000:1000 "$ws"
	fi
	chg=$(mktemp -d /var/tmp/sbx-510-chg.XXXXXX)
	run -106 --separate-stderr sbx-ns "${id[@]}" --workspace "$ws" --changes "$chg" -- true
	rmdir "$chg"
	assert_equal "$stderr" "sbx-ns: fatal: --changes: unable to use a change set: kernel $(uname -r) has no overlayfs in user namespaces (Linux 5.11 or later)"
	run -0 --separate-stderr sbx-check host --cgroup-root "$SBX_VM_CGROUP"
	assert_line --regexp '^changes +[a-z]+ +mount an overlay in a user namespace for sbx-ns --changes'
}

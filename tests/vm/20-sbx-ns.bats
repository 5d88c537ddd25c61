#!/usr/bin/env bats
# sbx-ns on a real kernel other than the host's: tests/vm/check.sh boots this suite on
# Debian 12's kernel and on Debian 11's 5.10, which has no mount_setattr (5.12), no
# Landlock (5.13) and no quotactl_fd (5.14). The root must be as tight on both: read-only
# system binds with every submount read-only, nosuid and nodev, the workspace writable,
# deny-write paths read-only, mounting and new namespaces refused inside. The host's
# suites (tests/2*-ns-*.bats) prove everything else, by both mount interfaces.

load helpers/vm

setup() {
	ws=$(mktemp -d /var/tmp/sbx-ns-ws.XXXXXX)
	chmod 0755 "$ws"
	[ "$SBX_VM_ROLE" = root ] && chown 1000:1000 "$ws"
	att=$SBX_TESTBIN/ns-attempt
}

teardown() {
	rm -rf "$ws"
}

# sbx-ns with the command as uid 1000, in either role.
ns() {
	if [ "$SBX_VM_ROLE" = root ]; then
		sbx-ns --uid 1000 --gid 1000 "$@"
	else
		sbx-ns "$@"
	fi
}

fd3() {
	"$@" 3>&1
}

# What this kernel offers: 5.10 gets the classic mount calls and no Landlock.
kernel_510() {
	case $(uname -r) in 5.10.*) return 0 ;; esac
	return 1
}

@test "a command runs isolated; the status names the mount interface and Landlock of this kernel" {
	local mounts=new landlock='[1-9][0-9]*'
	kernel_510 && mounts=classic landlock='"none"'
	run -0 --separate-stderr fd3 ns --workspace "$ws" --ro "$SBX_TESTBIN" --status-fd 3 -- sh -c 'id -u >uid'
	assert_equal "$stderr" ""
	assert_line --index 1 --regexp "^\\{\"tool\":\"sbx-ns\",\"event\":\"started\",\"landlock\":$landlock,\"seccomp\":true,\"net\":\"none\",\"hidepid\":true,\"mounts\":\"$mounts\",\"userns\":\"blocked\",\"uid\":1000,\"gid\":1000\\}\$"
	assert_line --index 2 '{"tool":"sbx-ns","event":"exit","code":0}'
	assert_equal "${#lines[@]}" 3
	assert_equal "$(cat "$ws/uid")" 1000
}

@test "system binds are read-only, the workspace writable, the host's disks absent" {
	run -0 --separate-stderr ns --workspace "$ws" --ro "$SBX_TESTBIN" -- sh -c "
		$att write /usr/x; $att write /bin/x; $att write /x; $att write $ws/f
		ls /mnt/xfs 2>&1 >/dev/null | sed 's/.*: //'"
	assert_equal "$stderr" ""
	assert_output "write: EROFS
write: EROFS
write: EROFS
write: ok
No such file or directory"
	assert_file_exists "$ws/f"
}

@test "a --ro tree: every submount read-only, nosuid and nodev, its own flags kept" {
	run -0 --separate-stderr ns --workspace "$ws" --ro "$SBX_TESTBIN" --ro /mnt -- sh -c "
		$att write /mnt/xfs/x; $att write /mnt/ext4/x
		awk '\$5 ~ /^\\/mnt/ { print \$5, \$6 }' /proc/self/mountinfo"
	assert_equal "$stderr" ""
	assert_output "write: EROFS
write: EROFS
/mnt ro,nosuid,nodev,relatime
/mnt/xfs ro,nosuid,nodev,relatime
/mnt/ext4 ro,nosuid,nodev,relatime"
}

@test "deny-write: .env and .git/config stay read-only inside a writable workspace" {
	mkdir "$ws/.git"
	echo secret >"$ws/.env"
	echo '[core]' >"$ws/.git/config"
	[ "$SBX_VM_ROLE" = root ] && chown -R 1000:1000 "$ws"
	run -0 --separate-stderr ns --workspace "$ws" --ro "$SBX_TESTBIN" -- sh -c "
		$att write $ws/.env; $att write $ws/.git/config; $att rename $ws/.git $ws/g; $att write $ws/ok"
	assert_equal "$stderr" "sbx-ns: warning: deny-write: refused a rename of the directory .git (to $ws/g), which holds protected paths; the command sees EBUSY"
	assert_output "write: EROFS
write: EROFS
rename: EBUSY
write: ok"
	assert_equal "$(cat "$ws/.env")" secret
}

@test "mounting, remounting, the new mount API and new user namespaces are denied inside" {
	run -0 --separate-stderr ns --workspace "$ws" --ro "$SBX_TESTBIN" -- sh -c "
		$att mount-tmpfs; $att remount /usr; $att fsopen; $att unshare-user"
	assert_equal "$stderr" ""
	assert_output "mount-tmpfs: EPERM
remount: EPERM
fsopen: EPERM
unshare-user: EPERM"
}

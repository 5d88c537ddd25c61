#!/usr/bin/env bats
# The VM itself: cgroup v2 limits, project quotas and delegation work on the stock kernel.

load helpers/vm

teardown() {
	[ -z "${cg:-}" ] || vm_cgroup_remove "$cg"
	[ -z "${qdir:-}" ] || vm_quota_dir_remove "$qdir"
}

@test "the suite runs as the user of its role" {
	run -0 id -u
	if [ "$SBX_VM_ROLE" = root ]; then assert_output 0; else assert_output 1000; fi
}

@test "the root cgroup offers cpu, io, memory and pids and enables them for children" {
	run -0 cat /sys/fs/cgroup/cgroup.controllers
	assert_output --regexp '(^| )cpu( |$)'
	assert_output --regexp '(^| )io( |$)'
	assert_output --regexp '(^| )memory( |$)'
	assert_output --regexp '(^| )pids( |$)'
	run -0 cat /sys/fs/cgroup/cgroup.subtree_control
	assert_output "cpu io memory pids"
}

@test "a child cgroup of the role's subtree gets cpu, io, memory and pids with swap control" {
	cg=$(vm_cgroup t$BATS_TEST_NUMBER)
	run -0 cat "$cg/cgroup.controllers"
	assert_output "cpu io memory pids"
	run -0 cat "$cg/memory.swap.max"
	assert_output max
	run -0 cat "$cg/pids.max"
	assert_output max
}

@test "the role's subtree is owned by its user as cgroup delegation requires" {
	local want=0
	[ "$SBX_VM_ROLE" = root ] || want=1000
	local f
	for f in "" /cgroup.procs /cgroup.threads /cgroup.subtree_control; do
		run -0 stat -c %u "$SBX_VM_CGROUP$f"
		assert_output "$want"
	done
	run -0 cat /proc/self/cgroup
	assert_output "0::/${SBX_VM_CGROUP#/sys/fs/cgroup/}/runner"
}

@test "pids.max stops a fork bomb inside a child cgroup and pids.events counts it" {
	cg=$(vm_cgroup t$BATS_TEST_NUMBER)
	echo 16 >"$cg/pids.max"
	run -1 vm_in_cgroup "$cg" forkbomb 1000
	assert_output "forked 15 children, then fork failed: EAGAIN"
	run -0 cat "$cg/pids.events"
	assert_output "max 1"
	run -0 cat "$cg/pids.current"
	assert_output 0
}

@test "memory.max with memory.swap.max=0 gets a memory hog OOM-killed and counted" {
	cg=$(vm_cgroup t$BATS_TEST_NUMBER)
	echo 0 >"$cg/memory.swap.max"
	echo 33554432 >"$cg/memory.max"
	run -137 vm_in_cgroup "$cg" memhog 256
	assert_output ""
	run -0 grep '^oom_kill ' "$cg/memory.events"
	assert_output "oom_kill 1"
}

# XFS reports an exhausted project quota as ENOSPC (not EDQUOT): the project quota acts
# as the size of a directory tree. ext4 reports EDQUOT. The directory itself is charged one
# inode on both, and one 4 KiB block on ext4 only.
@test "an XFS project quota stops a write at the block limit with ENOSPC" {
	qdir=$(vm_quota_dir xfs)
	run -1 fill bytes "$qdir/data" 33554432
	assert_output "wrote 8388608 bytes: ENOSPC"
}

@test "an XFS project quota stops file creation at the inode limit with ENOSPC" {
	qdir=$(vm_quota_dir xfs)
	run -1 fill files "$qdir" 1000
	assert_output "created 15 files: ENOSPC"
}

@test "an ext4 project quota stops a write at the block limit with EDQUOT" {
	qdir=$(vm_quota_dir ext4)
	run -1 fill bytes "$qdir/data" 33554432
	assert_output "wrote 8384512 bytes: EDQUOT"
}

@test "an ext4 project quota stops file creation at the inode limit with EDQUOT" {
	qdir=$(vm_quota_dir ext4)
	run -1 fill files "$qdir" 1000
	assert_output "created 15 files: EDQUOT"
}

@test "the role's user can create a user namespace and be root in it" {
	run -0 unshare -Ur id -u
	assert_output 0
}

@test "the role's user can pivot_root into a tmpfs in new user and mount namespaces" {
	run -0 unshare -Urm sh -c 'd=$(mktemp -d) && mount -t tmpfs tmpfs "$d" && mkdir "$d/old" && cd "$d" && pivot_root . old && echo pivoted'
	assert_output pivoted
}

@test "the role's user can create a child cgroup in its subtree and move a process into it" {
	cg=$(vm_cgroup t$BATS_TEST_NUMBER)
	echo 8 >"$cg/pids.max"
	run -0 vm_in_cgroup "$cg" cat /proc/self/cgroup
	assert_output "0::/${SBX_VM_CGROUP#/sys/fs/cgroup/}/t$BATS_TEST_NUMBER"
}

@test "only root may change the limits of the role's subtree itself" {
	if [ "$SBX_VM_ROLE" = root ]; then
		run -0 bash -c 'echo 64 >"$1/pids.max" && cat "$1/pids.max" && echo max >"$1/pids.max"' _ "$SBX_VM_CGROUP"
		assert_output 64
	else
		run -1 bash -c 'echo 64 >"$1/pids.max"' _ "$SBX_VM_CGROUP"
		assert_output "_: line 1: $SBX_VM_CGROUP/pids.max: Permission denied"
	fi
	run -0 cat "$SBX_VM_CGROUP/pids.max"
	assert_output max
}

@test "only root may move a process out of the role's subtree" {
	if [ "$SBX_VM_ROLE" = root ]; then
		run -0 bash -c 'echo 0 >/sys/fs/cgroup/cgroup.procs && cat /proc/self/cgroup'
		assert_output "0::/"
	else
		run -1 bash -c 'echo 0 >/sys/fs/cgroup/cgroup.procs'
		assert_output "bash: line 1: /sys/fs/cgroup/cgroup.procs: Permission denied"
	fi
}

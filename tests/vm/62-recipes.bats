#!/usr/bin/env bats
# The recipes of README.md and docs/*.md marked vm, as written
# (tests/recipes.bash; the host's tests/03-recipes.bats checks the marks):
# the hard limits the host cannot show. Such a recipe is an administrator's,
# as root: the root run runs it, on this kernel's cgroup v2 controllers and
# an XFS project quota at /srv (the role's /mnt/xfs, bound there); the user
# run shows why it says root: an unprivileged user cannot prepare a quota.

load helpers/vm
. /sbx/tests/helpers/recipes.bash

setup() {
	SBX_ROOT=/sbx
	export SBX_ROOT
}

teardown() {
	if [ "$SBX_VM_ROLE" = root ]; then
		[ -e /sys/fs/cgroup/sbx ] && find /sys/fs/cgroup/sbx -depth -mindepth 1 -type d -exec rmdir {} + 2>/dev/null
		rmdir /sys/fs/cgroup/sbx 2>/dev/null
		grep -q ' /srv ' /proc/mounts && umount /srv
		rm -rf /mnt/xfs/ws /sbx/build
	fi
	return 0
}

@test "the vm recipes as written: the chain of hard limits stops at the quota and the pids limit" {
	if [ "$SBX_VM_ROLE" = root ]; then
		mkdir -p /srv && mount --bind /mnt/xfs /srv
		RECIPE_ISOLATE=0
		recipes_setup
		recipes_run_kind vm
	else
		mkdir -p /mnt/xfs/sbxuser-ws
		run -111 --separate-stderr sbx-quota prepare --workspace /mnt/xfs/sbxuser-ws --project 1001 --disk 64M
		rmdir /mnt/xfs/sbxuser-ws
		assert_output ""
		assert_equal "$stderr" "sbx-quota: fatal: unable to read the quota of project 1001 on /mnt/xfs/sbxuser-ws: Operation not permitted"
	fi
}

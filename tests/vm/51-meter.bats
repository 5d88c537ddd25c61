#!/usr/bin/env bats
# The sampled meter (lib/meter/meter.c) under Debian's kernel, as root and as the
# unprivileged user: the essential cases of tests/51-meter.bats and of
# `sbx-cgroup --sampled`. The figures asserted are ranges of behaviour,
# never tool timings.
#
# Busybox has no chrt and the unprivileged user may not use SCHED_FIFO
# (RLIMIT_RTPRIO 0), so the CPU case runs at normal priority in both roles:
# nothing else runs in the VM to take the core from the loop or the meter.

load helpers/vm
load helpers/meter

setup() {
	T=$SBX_TESTBIN
	status_file=$BATS_TEST_TMPDIR/status
	ws=
}

teardown() {
	[ -z "$ws" ] || rm -rf "$ws"
}

@test "a memory hog is killed and the sandbox reported LOST with exit 103" {
	meter_hog_lost
}

@test "a busy loop at --cpu 50 gets 35-65% of a core over 3 seconds" {
	meter_busy_half
}

@test "a disk filler on XFS is stopped, reported LOST, and its file is left in place" {
	ws=$(mktemp -d /mnt/xfs/meter.XXXXXX)
	meter_fill_lost "$ws"
}

@test "a fast detached descendant that lives between two samples is not seen" {
	# The second sample after 10 s (the longest interval). Under TCG
	# touching 64 MiB can take longer than the host's 300 ms, and a
	# grandchild still alive when the command ends is killed as leftover:
	# the command waits 2 s instead, still well before the second sample.
	meter_detach_unseen 10 2000
}

@test "sbx-cgroup --sampled ends a memory hog as lost (103) and a slow command as timed out (104)" {
	run -103 --separate-stderr sbx-cgroup --sampled --memory 32M --status-fd 3 -- "$T/meter-hog" 256 10 3>"$status_file"
	assert_regex "$stderr" "$(meter_lost_msg sbx-cgroup memory 33554432)"
	run -0 head -1 "$status_file"
	assert_output --regexp '^\{"tool":"sbx-cgroup","event":"start"'"$SBX_VER"',"pid":[0-9]+,"placement":"none","enforcement":"sampled, not hard"\}$'
	run -0 tail -1 "$status_file"
	assert_output --regexp '^\{"tool":"sbx-cgroup","event":"exit","code":103,'
	run -104 --separate-stderr sbx-cgroup --sampled --timeout 0.3 -- sleep 30
	# The timeout that ended it is said without --status-fd.
	assert_equal "$stderr" "sbx-cgroup: killed: timeout of 0.3 s reached"
}

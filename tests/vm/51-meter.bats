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

setup() {
	T=$SBX_TESTBIN
	status_file=$BATS_TEST_TMPDIR/status
	ws=
}

teardown() {
	[ -z "$ws" ] || rm -rf "$ws"
}

lost_msg() { # PROG REASON LIMIT [UNIT]
	echo "^$1: fatal: sandbox lost: $2 limit exceeded: [0-9]+ ${4:-bytes} sampled, limit $3 \\(sampled, not hard\\)\$"
}

@test "a memory hog is killed and the sandbox reported LOST with exit 103" {
	run -103 --separate-stderr "$T/meter-run" --memory 64M --status-fd 3 -- "$T/meter-hog" 200 10 3>"$status_file"
	assert_regex "$stderr" "$(lost_msg meter-run memory 67108864)"
	run -0 grep -c . "$status_file"
	assert_output 3
	run -0 sed -n 2p "$status_file"
	assert_output --regexp '^\{"tool":"meter-run","event":"lost","reason":"memory","enforcement":"sampled, not hard","limit":67108864,"measured":[0-9]+\}$'
	run -0 sed -n 3p "$status_file"
	assert_output --regexp '^\{"tool":"meter-run","event":"exit","code":103,"enforcement":"sampled, not hard","lost":"memory","limit":67108864,"measured":[0-9]+,'
}

@test "a busy loop at --cpu 50 gets 35-65% of a core over 3 seconds" {
	run -0 --separate-stderr "$T/meter-run" --cpu 50 --status-fd 3 -- "$T/meter-busy" 3 3>"$status_file"
	assert_equal "$stderr" ""
	pct=${output#cpu }
	pct=${pct%\%}
	echo "busy loop got $pct% of a core ($SBX_VM_ROLE)" >&3
	(( pct >= 35 ))
	(( pct <= 65 ))
	run -0 tail -1 "$status_file"
	assert_output --regexp '"stopped_ms":[1-9][0-9]*,'
}

@test "a disk filler on XFS is stopped, reported LOST, and its file is left in place" {
	ws=$(mktemp -d /mnt/xfs/meter.XXXXXX)
	run -103 --separate-stderr "$T/meter-run" --disk 4M --workspace "$ws" --status-fd 3 -- "$T/meter-fill" "$ws/fill" 64 3>"$status_file"
	assert_regex "$stderr" "$(lost_msg meter-run disk 4194304)"
	refute_output --partial "wrote"
	size=$(stat -c %s "$ws/fill")
	echo "the filler had written $size bytes ($SBX_VM_ROLE)" >&3
	(( size > 4 << 20 ))
	(( size < 64 << 20 ))
	run -0 sed -n 2p "$status_file"
	assert_output --regexp '^\{"tool":"meter-run","event":"lost","reason":"disk","enforcement":"sampled, not hard","limit":4194304,"measured":[0-9]+\}$'
}

@test "a fast detached descendant that lives between two samples is not seen" {
	# One sample at once, the next after 10 s (the longest interval): the grandchild touches 64 MiB
	# and exits between the two, the command ends before the second. The
	# meter sees a tiny peak: the documented limit of sampling. Under TCG
	# touching 64 MiB can take longer than the host's 300 ms, and a
	# grandchild still alive when the command ends is killed as leftover:
	# the command waits 2 s instead, still well before the second sample.
	run -0 --separate-stderr "$T/meter-run" --interval 10 --memory 16M --status-fd 3 -- "$T/meter-detach" 500 64 1 2000 3>"$status_file"
	assert_equal "$stderr" ""
	assert_line --index 0 --regexp '^grandchild [0-9]+$'
	assert_line --index 1 'touched 64 MiB'
	run -0 tail -1 "$status_file"
	assert_output --regexp '^\{"tool":"meter-run","event":"exit","code":0,"enforcement":"sampled, not hard","peak_memory":[0-9]+,"peak_disk":0,"cpu_ms":[0-9]+,"stopped_ms":0,"samples":1,"peak_procs":1,"leftover":0\}$'
	peak=$(sed 's/.*"peak_memory":\([0-9]*\).*/\1/' <<<"$output")
	(( peak < 16 << 20 ))
}

@test "sbx-cgroup --sampled ends a memory hog as lost (103) and a slow command as timed out (104)" {
	run -103 --separate-stderr sbx-cgroup --sampled --memory 32M --status-fd 3 -- "$T/meter-hog" 256 10 3>"$status_file"
	assert_regex "$stderr" "$(lost_msg sbx-cgroup memory 33554432)"
	run -0 head -1 "$status_file"
	assert_output --regexp '^\{"tool":"sbx-cgroup","event":"start"'"$SBX_VER"',"pid":[0-9]+,"placement":"none","enforcement":"sampled, not hard"\}$'
	run -0 tail -1 "$status_file"
	assert_output --regexp '^\{"tool":"sbx-cgroup","event":"exit","code":103,'
	run -104 --separate-stderr sbx-cgroup --sampled --timeout 0.3 -- sleep 30
	# The timeout that ended it is said without --status-fd.
	assert_equal "$stderr" "sbx-cgroup: killed: timeout of 0.3 s reached"
}

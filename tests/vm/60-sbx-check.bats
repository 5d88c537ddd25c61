#!/usr/bin/env bats
# sbx-check on a kernel that has what the host lacks: cgroup v2 cpu, memory and pids, and
# project quotas. The host report must say ok for each, and the proof must show every
# limit enforced through the real chain.

load helpers/vm

# How the proof shows the hog never held more than the limit: memory.peak, or, on a
# kernel without it (before 5.19), the OOM kill alone, saying so.
peak_evidence() {
	if vm_memory_peak; then
		echo ', peak [0-9]+ bytes'
	else
		echo '; no memory.peak on this kernel, it came in Linux 5\.19'
	fi
}

teardown() {
	[ -z "${qdir:-}" ] || vm_quota_dir_remove "$qdir"
}

@test "host: the role's cgroup subtree offers, enables and delegates cpu, memory and pids" {
	run -0 --separate-stderr sbx-check host --cgroup-root "$SBX_VM_CGROUP"
	assert_equal "$stderr" ""
	assert_line --regexp "^userns +ok +user namespaces work for uid $(id -u)(,|\$)"
	assert_line "cgroup2            ok             mounted at /sys/fs/cgroup"
	assert_line "cgroup-controllers ok             $SBX_VM_CGROUP offers cpu, memory and pids"
	assert_line "cgroup-subtree     ok             $SBX_VM_CGROUP enables cpu, memory and pids for children"
	assert_line "cgroup-delegation  ok             uid $(id -u) may manage $SBX_VM_CGROUP"
	assert_line "cgroup-swap        ok             $SBX_VM_CGROUP/memory.swap.max exists"
	assert_line "result: all checks passed (exit 0)"
}

@test "host: an XFS and an ext4 workspace under a project quota are ready" {
	local fs how=
	[ "$SBX_VM_ROLE" = root ] && how="hard limit" || how="limit \\(statfs\\)"
	for fs in xfs ext4; do
		qdir=$(vm_quota_dir $fs)
		run -0 --separate-stderr sbx-check host --cgroup-root "$SBX_VM_CGROUP" --quota-workspace "$qdir"
		assert_equal "$stderr" ""
		assert_line --regexp "^quota +ok +$qdir \\($fs\\) project [0-9]+, $how [0-9]+ bytes, accounting and enforcement on\$"
		assert_line "result: all checks passed (exit 0)"
		vm_quota_dir_remove "$qdir"
		qdir=
	done
}

@test "host --json says ok for the cgroup and quota lines" {
	qdir=$(vm_quota_dir xfs)
	run -0 --separate-stderr sbx-check host --cgroup-root "$SBX_VM_CGROUP" --quota-workspace "$qdir" --json
	assert_output --partial '"name":"cgroup-controllers","class":"limits","status":"ok"'
	assert_output --partial '"name":"quota","class":"limits","status":"ok"'
	assert_output --regexp '"result":"all checks passed","code":0}$'
}

# An sbx-ns stand-in that runs the command unconfined: the isolation lines must fail, but
# sbx-cgroup and sbx-quota around it must still stop the fork bomb, the memory hog and
# the disk filler (on XFS, which enforces project quotas even for root).
@test "proof: with an unconfined stand-in, isolation fails but every limit still holds (exit 107)" {
	local ns=$BATS_TEST_TMPDIR/fake-ns
	printf '#!/bin/sh\nwhile [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done\nshift\nexec "$@"\n' >"$ns"
	chmod 0755 "$ns"
	qdir=$(vm_quota_dir xfs)
	run --separate-stderr sbx-check proof --ns "$ns" --cgroup-root "$SBX_VM_CGROUP" --quota-workspace "$qdir"
	assert_line "result: a proof failed (exit 107)"
	assert_equal "$status" 107
	assert_equal "$stderr" ""
	assert_line --regexp '^sibling-secret +FAIL +allowed: read 43 bytes from '
	assert_line --regexp '^pids-limit +ok +denied: forked [0-9]+ children, then fork failed: Resource temporarily unavailable sbx-cgroup: note: pids limit 16 reached [0-9]+ times? \(pids.events max [1-9][0-9]*\)$'
	assert_line --regexp "^memory-limit +ok +a 256 MiB hog under --memory 32M was OOM-killed \\(exit (105|137), oom_kill [1-9][0-9]*$(peak_evidence)\\)"
	assert_line --regexp '^quota-limit +ok +denied: wrote [0-9]+ bytes: No space left on device$'
}

@test "proof: a fork bomb, a memory hog and a disk filler are each stopped by their limit" {
	qdir=$(vm_quota_dir ext4)
	run --separate-stderr sbx-check proof --cgroup-root "$SBX_VM_CGROUP" --quota-workspace "$qdir"
	# The verdict line first: on failure it shows every line of evidence.
	assert_line "$(proof_verdict)"
	assert_equal "$status" 0
	assert_equal "$stderr" ""
	assert_line --regexp '^pids-limit +ok +denied: forked [0-9]+ children, then fork failed: Resource temporarily unavailable sbx-cgroup: note: pids limit 16 reached [0-9]+ times? \(pids.events max [1-9][0-9]*\)$'
	assert_line --regexp "^memory-limit +ok +a 256 MiB hog under --memory 32M was OOM-killed \\(exit (105|137), oom_kill [1-9][0-9]*$(peak_evidence)\\)"
	assert_line --regexp '^quota-limit +ok +denied: wrote [0-9]+ bytes: Quota exceeded$'
	assert_line --regexp '^sibling-secret +ok +denied: '
	assert_line "$(proof_verdict)"
}

# The proofs name the kernel's evidence, not just a failure: with an sbx-cgroup stand-in
# that makes no cgroup and stops the probes with rlimits instead, fork and mmap still fail,
# but pids.events and memory.events count nothing, and both proofs FAIL.
@test "proof: pids-limit and memory-limit FAIL when no cgroup limit stopped the probes" {
	local bin=$BATS_TEST_TMPDIR/bin
	mkdir "$bin"
	cp "$SBX_BIN/sbx-check" "$SBX_BIN/sbx-ns" "$bin/"
	printf '#!/bin/bash\nwhile [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done\nshift\nulimit -u 200\nulimit -v 131072\nexec "$@"\n' >"$bin/sbx-cgroup"
	chmod 0755 "$bin/sbx-cgroup"
	run --separate-stderr "$bin/sbx-check" proof --cgroup-root "$SBX_VM_CGROUP"
	assert_line --regexp '^pids-limit +FAIL +fork failed, but pids.events counts no refusal at pids.max \(max 0 or no exit line from sbx-cgroup\): forked [0-9]+ children, then fork failed: Resource temporarily unavailable$'
	assert_line --regexp '^memory-limit +FAIL +the hog was stopped \(exit 1\), but memory.events counts no OOM kill: '
	assert_line "result: a proof failed (exit 107)"
	assert_equal "$status" 107
}

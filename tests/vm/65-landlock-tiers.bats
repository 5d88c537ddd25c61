#!/usr/bin/env bats
# sbx-check on the kernel's Landlock: what `sbx-check host` says of the tiers, and what
# `proof --tier landlock` proves the landlock tier keeps and loses, for the ABI each
# kernel the VM boots has. Runs on Debian 12's 6.1, Debian 11's 5.10 and Debian 13's
# 6.12 (tests/vm/check.sh, tests/vm/debian.sh --release 13).

load helpers/vm

# Landlock on this kernel: Debian 13's 6.12 has ABI 6 (signals and abstract sockets
# scoped); Debian 12's 6.1 has ABI 2 (no TCP rules before ABI 4, no scoping of signals
# and abstract sockets before ABI 6); Debian 11's 5.10 has none.
landlock_abi() {
	case $(uname -r) in
	5.10.*) echo 0 ;;
	6.1.*) echo 2 ;;
	6.12.*) echo 6 ;;
	*) echo "no expectation for the Landlock ABI of $(uname -r)" >&2; return 1 ;;
	esac
}

@test "host: the cgroup2 root itself offers the controllers when no root is given; the tiers" {
	local abi
	abi=$(landlock_abi)
	run -0 --separate-stderr sbx-check host
	assert_line "cgroup-controllers ok             /sys/fs/cgroup offers cpu, memory and pids"
	case $abi in
	0) refute_line --regexp '^landlock +ok' ;;
	2) assert_line "landlock           ok             ABI 2: file access rules; signals and abstract Unix sockets not scoped before ABI 6" ;;
	6) assert_line "landlock           ok             ABI 6: file access rules, TCP bind and connect rules (ABI 4), signals and abstract Unix sockets scoped to the sandbox (ABI 6)" ;;
	*) fail "no expectation for the landlock line at ABI $abi" ;;
	esac
	assert_line "result: all checks passed (exit 0)"
	if [ "$abi" = 0 ]; then
		assert_line "tiers              ok             full (namespaces, a fresh root, seccomp); no landlock tier (no Landlock) tiers=full"
	elif [ "$abi" -ge 6 ]; then
		assert_line "tiers              ok             full (namespaces, a fresh root, Landlock ABI $abi, seccomp); the landlock tier would be used only where namespaces fail tiers=full,landlock"
	else
		assert_line "tiers              ok             full (namespaces, a fresh root, Landlock ABI $abi, seccomp); the landlock tier would be used only where namespaces fail; with ABI $abi the tier has no TCP rules (ABI 4) and cannot keep the command from signalling processes of its uid outside, or from reaching abstract sockets outside where its network mode allows Unix sockets (ABI 6) tiers=full,landlock"
	fi
}

# Below ABI 6 the proof says what the tier loses (a signal reaches the process outside)
# and never passes it; what the tier still keeps passes. Without Landlock there is no tier.
@test "proof --tier landlock: what this kernel's Landlock keeps, and what it loses" {
	local abi ws='/var/tmp/sbx-check\.[A-Za-z0-9]{6}'
	abi=$(landlock_abi)
	if [ "$abi" = 0 ]; then
		run -106 --separate-stderr sbx-check proof --tier landlock
		assert_equal "$stderr" ""
		assert_line --index 0 "landlock-tier      unsupported    sbx-ns refused the tier (exit 106): sbx-ns: fatal: unable to create namespaces (Operation not permitted) and unable to use the landlock tier the baseline allows: this kernel has no Landlock; to fix: see \`sbx-check host\` (tiers)"
		return
	fi
	run -0 --separate-stderr sbx-check proof --tier landlock
	assert_equal "$stderr" ""
	if [ "$abi" -ge 6 ]; then
		# Debian 13's 6.12: the signal and the abstract socket outside are scoped away.
		assert_line --index 0 "landlock-tier      ok             sbx-ns ran the command in the landlock tier and said so (WARNING), Landlock ABI $abi (TCP rules, signals and abstract sockets scoped), seccomp, no namespaces; user namespaces can be created here, so sbx-ns would not choose this tier by itself: the proof took them away from it with a seccomp filter, as a container's profile does abi=$abi"
		assert_line --regexp "^sibling-secret +ok +denied: open $ws/secret: Permission denied\$"
		assert_line --regexp '^signal-outside +ok +denied: '
		assert_line --regexp '^abstract-outside +ok +denied: '
		assert_line --regexp '^result: [0-9]+ proven, [0-9]+ not proven \(env-write, git-hook-write\) \(exit 0\)$'
		assert_line "$(proof_verdict)"
		return
	fi
	assert_line --index 0 "landlock-tier      ok             sbx-ns ran the command in the landlock tier and said so (WARNING), Landlock ABI $abi (no TCP rules before ABI 4, no scoping of signals and abstract sockets before ABI 6), seccomp, no namespaces; user namespaces can be created here, so sbx-ns would not choose this tier by itself: the proof took them away from it with a seccomp filter, as a container's profile does abi=$abi"
	assert_line --regexp "^sibling-secret +ok +denied: open $ws/secret: Permission denied\$"
	assert_line --regexp "^outside-write +ok +denied: open $ws/outside/escaped for writing: Permission denied\$"
	assert_line --regexp '^offline +ok +denied: socket\(AF_INET\): Operation not permitted$'
	assert_line --regexp "^signal-outside +unsupported +lost below Landlock ABI 6 \\(ABI $abi here\\): sent SIGUSR1 to [0-9]+; on the host: the process outside has SIGUSR1 pending; to fix: Linux 6\\.12 or later: Landlock ABI 6 scopes signals and abstract Unix sockets\$"
	assert_line --regexp '^abstract-outside +ok +denied: socket\(AF_UNIX\): Operation not permitted$'
	assert_line --regexp '^result: [0-9]+ proven, [0-9]+ not proven \(env-write, git-hook-write, signal-outside\) \(exit 0\)$'
	assert_line "$(proof_verdict)"
}

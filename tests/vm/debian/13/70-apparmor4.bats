#!/usr/bin/env bats
# The package's AppArmor profile where AppArmor 4 is: Debian 13's kernel (6.12) booted
# with apparmor=1 security=apparmor, securityfs mounted, and Debian 13's apparmor_parser
# 4.1, which accepts the profile. Installing loads it, nothing disables it, aa-status
# lists it, and sbx-ns runs under it.
#
# Debian's kernel has no kernel.apparmor_restrict_unprivileged_userns, Ubuntu's sysctl
# that takes user namespaces from every unconfined process. It has the upstream
# mediation (features/namespaces/mask: userns_create): a process under a confining
# profile without a `userns` rule cannot create a user namespace. The tests confine
# their caller that way (the profile sbx-test-caller below, as a restricting host or an
# AppArmor-confined runtime would) and prove both sides: unshare -U and bwrap are
# refused, and sbx-ns, which the caller executes into the sbx-ns profile, starts a
# sandbox and passes sbx-check proof. What stays unproven for Ubuntu is its sysctl's own
# path (an unconfined process moved to its unprivileged_userns profile), which no Debian
# kernel has.

load helpers/vm

# The test's confined caller: every class of rule but userns, and /usr/bin/sbx-ns
# executed into its own profile (Px), as an administrator's profile for an agent
# runtime would say it.
CALLER='abi <abi/4.0>,
profile sbx-test-caller {
  /** rwlkmix,
  /usr/bin/sbx-ns Px,
  capability, network, mount, umount, pivot_root, signal, ptrace, unix,
}'

# A profile of one rule, `userns`, without the unconfined flag, for a copy of sbx-ns.
USERNS_ONLY='abi <abi/4.0>,
profile sbx-ns-userns-only /var/tmp/aa-userns-only/sbx-ns {
  userns,
}'

# as_caller CMD...: CMD under the confining caller profile, which the root run loads.
# aa-exec's own exec enters the profile, so CMD runs in it whatever its path.
as_caller() {
	aa-exec -p sbx-test-caller -- "$@"
}

# from_caller CMD...: CMD executed by a process in the caller's profile, so that its
# exec rules apply (sbx-ns: Px, into the sbx-ns profile).
from_caller() {
	aa-exec -p sbx-test-caller -- /bin/sh -c 'exec "$@"' sh "$@"
}

@test "AppArmor 4.1 is active; installing loaded the profile: no disable link, aa-status lists it" {
	run -0 cat /sys/module/apparmor/parameters/enabled
	assert_output Y
	run -0 apparmor_parser --version
	assert_line --index 0 --regexp '^AppArmor parser version 4\.1\.[0-9]+$'
	assert_not_exists /etc/apparmor.d/disable/sbx-ns
	assert_not_exists /var/lib/sbx/apparmor-disabled
	assert_file_exists /etc/apparmor.d/sbx-ns
	if [ "$SBX_VM_ROLE" = user ]; then
		# Reading the profile set takes root.
		run -4 aa-status
		assert_line --partial "You do not have enough privilege to read the profile set"
		return
	fi
	run -0 aa-status
	assert_line "1 profiles are in unconfined mode."
	assert_line "   sbx-ns"
	run -0 grep -x 'sbx-ns (unconfined)' /sys/kernel/security/apparmor/profiles
	# The compiled policy is in the cache the parser writes (-W).
	run -0 find /var/cache/apparmor -name sbx-ns
	refute_output ""
}

# What this kernel offers: the sysctl the profile was written for is absent, the
# userns_create mediation is there, and sbx-check host says which.
@test "Debian's 6.12: no apparmor_restrict_unprivileged_userns sysctl, the userns_create mediation instead" {
	assert_not_exists /proc/sys/kernel/apparmor_restrict_unprivileged_userns
	run -0 cat /sys/kernel/security/apparmor/features/namespaces/mask
	assert_output userns_create
	run -0 --separate-stderr sbx-check host
	assert_line "apparmor-userns    ok             no AppArmor user namespace restriction on this kernel (/proc/sys/kernel/apparmor_restrict_unprivileged_userns: No such file or directory)"
	assert_line "landlock           ok             ABI 6: file access rules, TCP bind and connect rules (ABI 4), signals and abstract Unix sockets scoped to the sandbox (ABI 6)"
}

# The rules, printed for the reader of the test's output: one rule, userns, for the
# installed path, in unconfined mode, and the administrator's local file, which the
# package does not ship.
@test "the profile's rules: userns for /usr/bin/sbx-ns, nothing else" {
	sed '/^[[:space:]]*#/d; /^[[:space:]]*$/d' /etc/apparmor.d/sbx-ns | sed 's/^/# rules: /' >&3
	run -0 sed '/^[[:space:]]*#/d; /^[[:space:]]*$/d' /etc/apparmor.d/sbx-ns
	assert_output "abi <abi/4.0>,
include <tunables/global>
profile sbx-ns /usr/bin/sbx-ns flags=(unconfined) {
  userns,
  include if exists <local/sbx-ns>
}"
	assert_not_exists /etc/apparmor.d/local/sbx-ns
	run -0 dpkg -S /etc/apparmor.d/sbx-ns
	assert_output "sbx: /etc/apparmor.d/sbx-ns"
}

# The label of a running sbx-ns and of its command, against the shell's and a copy's.
@test "sbx-ns runs under the profile; the test's shell and a copy of sbx-ns elsewhere do not" {
	local ws=/var/tmp/aa-label-$SBX_VM_ROLE copy=/var/tmp/aa-copy-$SBX_VM_ROLE ids=()
	[ "$SBX_VM_ROLE" = user ] || ids=(--uid 1000 --gid 1000)
	mkdir -p "$ws" "$copy"
	chown 1000:1000 "$ws"
	cp /usr/bin/sbx-ns "$copy/sbx-ns"
	run -0 cat /proc/self/attr/current
	assert_output unconfined
	run -0 sbx-ns "${ids[@]}" --workspace "$ws" -- cat /proc/self/attr/current
	echo "# the command's label: $output" >&3
	assert_output "sbx-ns (unconfined)"
	run -0 "$copy/sbx-ns" "${ids[@]}" --workspace "$ws" -- cat /proc/self/attr/current
	assert_output unconfined
	rm -rf "$ws" "$copy"
}

@test "root loads the confining caller's profile; a user cannot" {
	if [ "$SBX_VM_ROLE" = user ]; then
		# The profile set is root's to read; the user sees the profile by entering it.
		run -0 as_caller cat /proc/self/attr/current
		assert_output "sbx-test-caller (enforce)"
		run ! apparmor_parser -r <<<"$CALLER"
		assert_output --partial "Permission denied"
		return
	fi
	run -0 apparmor_parser -r <<<"$CALLER"
	run -0 grep -x 'sbx-test-caller (enforce)' /sys/kernel/security/apparmor/profiles
}

# Both sides of the restriction, for the role's own uid: under the caller's profile
# unshare -U and bwrap are refused, sbx-ns starts a sandbox; unconfined, unshare works.
@test "a caller confined without userns: unshare -U and bwrap are refused, sbx-ns starts a sandbox" {
	local ws=/var/tmp/aa-caller-$SBX_VM_ROLE ids=()
	[ "$SBX_VM_ROLE" = user ] || ids=(--uid 1000 --gid 1000)
	mkdir -p "$ws"
	chown 1000:1000 "$ws"
	run -0 unshare -U true
	run -0 as_caller cat /proc/self/attr/current
	assert_output "sbx-test-caller (enforce)"
	run -1 from_caller unshare -U true
	assert_output "unshare: unshare failed: Permission denied"
	# As root bwrap needs no user namespace unless asked for one.
	run -1 as_caller bwrap --unshare-user --ro-bind / / true
	assert_output "bwrap: Creating new namespace failed: Permission denied"
	run -0 from_caller sbx-ns "${ids[@]}" --workspace "$ws" -- sh -c 'echo hello >"$0/out" && cat /proc/self/attr/current' "$ws"
	assert_output "sbx-ns (unconfined)"
	run -0 cat "$ws/out"
	assert_output hello
	rm -rf "$ws"
}

# sbx-check proof from the confined caller: sbx-check runs there, sbx-ns in its own
# profile. Every isolation line is ok. The broker's lines are not proven: sbx-check
# itself makes the namespaces of its test origin, which the caller's profile refuses it
# (as root, its `ip netns add`). Without --cgroup-root and --quota-workspace: sbx-cgroup
# and sbx-quota set no_new_privs before they execute sbx-ns, and the kernel refuses a
# change of profile after that from a confining one (see docs/platforms.md).
@test "sbx-check proof from the confined caller: every isolation line ok; the broker's need the caller's userns" {
	local l
	run -0 --separate-stderr as_caller sbx-check proof
	assert_equal "$stderr" ""
	for l in workspace-read workspace-write sibling-secret env-write git-hook-write outside-write offline loopback loopback-host; do
		assert_line --regexp "^$l +ok +"
	done
	if [ "$SBX_VM_ROLE" = user ]; then
		assert_line "broker-denied      unsupported    the test origin and broker could not be started: unable to create user, network and mount namespaces: Permission denied; to fix: see \`sbx-check host\` (user namespaces)"
	else
		assert_line --regexp '^broker-denied +unsupported +the test network could not be built: ip netns add sbx-check-[0-9]+-h \(exit 1\): Cannot open init namespace: Permission denied; to fix: see the reason$'
	fi
	assert_line "$(proof_verdict)"
	# Nothing of the failed test network stays.
	ls -la /run/netns >&3 2>&1 || :
	run -0 find /run/netns -name 'sbx-check-*'
	assert_output ""
}

# Why the flag: without it the profile confines sbx-ns and, through exec, the command,
# so it would have to grant every class of rule a command may need (files, networks,
# signals, mounts for the sandbox) and be unconfined by another name. With one rule,
# userns, sbx-ns cannot even open its workspace.
@test "why flags=(unconfined): a profile of userns alone stops sbx-ns at its first file" {
	local ws=/var/tmp/aa-only-$SBX_VM_ROLE ids=()
	[ "$SBX_VM_ROLE" = user ] || ids=(--uid 1000 --gid 1000)
	if [ "$SBX_VM_ROLE" = root ]; then
		mkdir -p /var/tmp/aa-userns-only
		cp /usr/bin/sbx-ns /var/tmp/aa-userns-only/sbx-ns
		run -0 apparmor_parser -r <<<"$USERNS_ONLY"
	fi
	mkdir -p "$ws"
	chown 1000:1000 "$ws"
	run -100 /var/tmp/aa-userns-only/sbx-ns "${ids[@]}" --workspace "$ws" -- true
	assert_output "sbx-ns: usage: --workspace: invalid path '$ws': Permission denied"
	rm -rf "$ws"
}

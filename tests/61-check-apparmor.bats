#!/usr/bin/env bats
# sbx-check host detects Ubuntu's AppArmor restriction of user namespaces
# (kernel.apparmor_restrict_unprivileged_userns=1) and names the profile sbx ships
# as the fix. Debian's kernel has neither the sysctl nor AppArmor loaded, so the
# restricted host is staged in a private mount namespace: a tmpfs over
# /proc/sys/kernel holding the sysctl, and one over /sys/kernel/security holding
# AppArmor's list of loaded profiles (which also makes a fresh /proc refused, so
# the proc step fails and the result is 106 in every staged run). The restriction
# itself (an Ubuntu kernel patch) cannot be exercised here.

load helpers

fix='load the profile sbx ships for sbx-ns: apparmor_parser -r /etc/apparmor.d/sbx-ns (`make install` puts contrib/apparmor/sbx-ns there with the installed path)'

# staged SYSCTL PROFILES CMD...: CMD with the sysctl at SYSCTL (none: absent) and
# AppArmor's profile list holding PROFILES (none: no securityfs).
staged() {
	local sysctl=$1 profiles=$2
	shift 2
	unshare -m --propagation private sh -c '
		if [ "$1" != none ]; then
			mount -t tmpfs sysctl /proc/sys/kernel &&
			echo "$1" >/proc/sys/kernel/apparmor_restrict_unprivileged_userns || exit 99
		fi
		if [ "$2" != none ]; then
			mount -t tmpfs securityfs /sys/kernel/security && mkdir /sys/kernel/security/apparmor &&
			printf "%b" "$2" >/sys/kernel/security/apparmor/profiles || exit 99
		fi
		shift 2
		exec "$@"' sh "$sysctl" "$profiles" "$@"
}

@test "host: the restriction on and no sbx-ns profile loaded is missing isolation (106), naming the profile" {
	run -106 --separate-stderr staged 1 'foo (enforce)\n' sbx-check host
	assert_equal "$stderr" ""
	assert_line "apparmor-userns    missing        kernel.apparmor_restrict_unprivileged_userns=1 and no sbx-ns profile is loaded: sbx-ns cannot create its namespaces; to fix: $fix"
	assert_line "result: isolation unavailable (exit 106)"
	run -106 --separate-stderr staged 1 none sbx-check host
	assert_line "apparmor-userns    missing        kernel.apparmor_restrict_unprivileged_userns=1 and the loaded profiles cannot be read (/sys/kernel/security/apparmor/profiles): sbx-ns cannot create its namespaces; to fix: $fix"
}

@test "host: the restriction on with the sbx-ns profile loaded is ok" {
	run -106 --separate-stderr staged 1 'bwrap (unconfined)\nsbx-ns (unconfined)\n' sbx-check host
	assert_equal "$stderr" ""
	assert_line "apparmor-userns    ok             kernel.apparmor_restrict_unprivileged_userns=1, and the sbx-ns profile is loaded: sbx-ns may create user namespaces"
	# A profile whose name only starts with sbx-ns is another one.
	run -106 --separate-stderr staged 1 'sbx-ns-old (unconfined)\n' sbx-check host
	assert_line --regexp '^apparmor-userns +missing +kernel\.apparmor_restrict_unprivileged_userns=1 and no sbx-ns profile is loaded'
}

@test "host: the restriction off, or no such sysctl, is ok" {
	run -106 --separate-stderr staged 0 none sbx-check host
	assert_line "apparmor-userns    ok             kernel.apparmor_restrict_unprivileged_userns=0: not restricted"
	run -101 --separate-stderr sbx-check host
	assert_line "apparmor-userns    ok             no AppArmor user namespace restriction on this kernel (/proc/sys/kernel/apparmor_restrict_unprivileged_userns: No such file or directory)"
}

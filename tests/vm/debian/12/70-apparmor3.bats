#!/usr/bin/env bats
# The package's AppArmor profile on a system where AppArmor is active: Debian 12's kernel
# booted with apparmor=1 security=apparmor, securityfs mounted, and Debian 12's
# apparmor_parser 3.0, which refuses the profile's AppArmor 4.0 rules. The maintainer
# scripts disable the profile with a link, say so, load nothing, and purge removes the
# link. Runs before 80-installed.bats, which proves sbx-ns on the package installed here.

load helpers/vm

# A failed step leaves the package installed again for 80-installed.bats.
teardown() {
	[ "$SBX_VM_ROLE" = root ] || return 0
	[ "$(dpkg-query -W -f '${Status}' sbx 2>/dev/null)" = "install ok installed" ] ||
		dpkg -i /sbx/deb/sbx_*_amd64.deb >/dev/null 2>&1
}

msg="sbx: /etc/apparmor.d/sbx-ns is disabled (/etc/apparmor.d/disable/sbx-ns): this apparmor_parser does not know its AppArmor 4.0 rules; sbx-ns needs the profile only where AppArmor restricts user namespaces, which takes AppArmor 4.0"

# No profile named sbx-ns is loaded into the kernel.
refute_loaded() {
	run -0 cat /sys/kernel/security/apparmor/profiles
	refute_output --partial sbx-ns
}

@test "AppArmor is active and the installed profile is disabled for parser 3.0, not loaded" {
	run -0 cat /sys/module/apparmor/parameters/enabled
	assert_output Y
	run -0 grep -c '^securityfs /sys/kernel/security securityfs ' /proc/mounts
	assert_output 1
	run -0 apparmor_parser --version
	assert_line --regexp '^AppArmor parser version 3\.0\.'
	run -0 readlink /etc/apparmor.d/disable/sbx-ns
	assert_output ../sbx-ns
	assert_file_exists /etc/apparmor.d/sbx-ns
	if [ "$SBX_VM_ROLE" = root ]; then
		run -0 aa-enabled
		assert_output Yes
		assert_file_exists /var/lib/sbx/apparmor-disabled
		refute_loaded
	fi
}

# The administrator's cycle on the AppArmor-active system: remove keeps the conffile and
# its link, purge takes both, installing again disables the profile and says so. The
# user may change none of it.
@test "dpkg -r keeps the link, --purge removes it, dpkg -i disables the profile again and says so" {
	if [ "$SBX_VM_ROLE" = user ]; then
		run -2 dpkg -r sbx
		assert_output "dpkg: error: requested operation requires superuser privilege"
		return
	fi
	local deb
	deb=$(ls /sbx/deb/sbx_*_amd64.deb)
	run -0 dpkg -r sbx
	refute_line --partial apparmor
	assert_not_exists /usr/bin/sbx-ns
	assert_file_exists /etc/apparmor.d/sbx-ns
	run -0 readlink /etc/apparmor.d/disable/sbx-ns
	assert_output ../sbx-ns
	run -0 dpkg --purge sbx
	refute_line --partial apparmor
	assert_not_exists /etc/apparmor.d/sbx-ns
	assert_not_exists /etc/apparmor.d/disable/sbx-ns
	# The mark goes; /var/lib/sbx stays, it holds sbx-quota's records too.
	assert_not_exists /var/lib/sbx/apparmor-disabled
	run -0 dpkg -i "$deb"
	assert_line "$msg"
	refute_line --partial warning
	run -0 readlink /etc/apparmor.d/disable/sbx-ns
	assert_output ../sbx-ns
	assert_file_exists /var/lib/sbx/apparmor-disabled
	refute_loaded
	run -0 find /var/cache/apparmor -name sbx-ns
	assert_output ""
	run -0 dpkg --verify sbx
	assert_output ""
}

#!/usr/bin/env bats
# The package's life on Debian 13 with AppArmor active, by dpkg as an administrator runs
# it: purge, install an earlier version, upgrade to this one, remove, purge, install
# again (for 80-installed.bats). The earlier version is this package repacked with a
# lower version (0.16.0 is the first packaged release): the upgrade runs the maintainer
# scripts' upgrade path with the profile loaded. At every step the profile is loaded
# exactly while the tools are installed.

load helpers/vm

deb() { ls /sbx/deb/sbx_*_amd64.deb; }

teardown() {
	[ "$SBX_VM_ROLE" = root ] || return 0
	[ "$(dpkg-query -W -f '${Status} ${Version}' sbx 2>/dev/null)" = "install ok installed $(dpkg-deb -f "$(deb)" Version)" ] ||
		dpkg -i "$(deb)" >/dev/null 2>&1
}

loaded() { grep -x 'sbx-ns (unconfined)' /sys/kernel/security/apparmor/profiles; }

# What of sbx is on the system outside the test's own files: none after a purge. Not
# the package's: the quota records sbx-quota prepare made at boot (/var/lib/sbx/quota,
# an administrator's, which purge keeps) and the records of runs in /run/sbx-ns.
leftovers() {
	find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /sbx -o -path /tmp -o -path /var/tmp \
		-o -path /home/sbxuser -o -path /etc/sbx -o -path /.sbxvm-debian-root -o -path /mnt \
		-o -path /var/lib/sbx -o -path /run/sbx-ns \) -prune \
		-o -name '*sbx*' -print
	find /var/lib/sbx -mindepth 1 -maxdepth 1 ! -name quota
	getent group sbx || :
}

@test "purge, install an earlier version, upgrade, remove, purge, install: the profile loaded exactly while installed" {
	if [ "$SBX_VM_ROLE" = user ]; then
		run -2 dpkg --purge sbx
		assert_output "dpkg: error: requested operation requires superuser privilege"
		return
	fi
	local d=$BATS_TEST_TMPDIR ver
	ver=$(dpkg-deb -f "$(deb)" Version)
	dpkg-deb -R "$(deb)" "$d/pkg"
	sed -i "s/^Version: .*/Version: ${ver}~earlier/" "$d/pkg/DEBIAN/control"
	dpkg-deb -Znone -b "$d/pkg" "$d/earlier.deb" >/dev/null
	run -0 dpkg --purge sbx
	run -1 loaded
	run -0 leftovers
	assert_output ""
	run -0 dpkg -i "$d/earlier.deb"
	refute_line --partial apparmor
	run -0 dpkg-query -W -f '${Status} ${Version}' sbx
	assert_output "install ok installed ${ver}~earlier"
	run -0 loaded
	run -0 dpkg -i "$(deb)"
	refute_line --partial apparmor
	refute_line --partial warning
	run -0 dpkg-query -W -f '${Status} ${Version}' sbx
	assert_output "install ok installed $ver"
	run -0 loaded
	assert_not_exists /etc/apparmor.d/disable/sbx-ns
	run -0 dpkg --verify sbx
	assert_output ""
	run -0 dpkg -r sbx
	refute_line --partial warning
	run -1 loaded
	assert_not_exists /usr/bin/sbx-ns
	assert_file_exists /etc/apparmor.d/sbx-ns
	run -0 dpkg --purge sbx
	run -0 leftovers
	assert_output ""
	run -0 dpkg -i "$(deb)"
	refute_line --partial warning
	run -0 loaded
}

#!/usr/bin/env bats
# The package's life on the release under test with AppArmor active, by dpkg as an
# administrator runs it: purge, install an earlier version, upgrade to this one, remove,
# purge, install again (for 80-installed.bats). The earlier version is this package
# repacked with a lower version (0.16.0 is the first packaged release): the upgrade runs
# the maintainer scripts' upgrade path. On Debian 13 (parser 4.1) the profile is loaded
# exactly while the tools are installed; on Debian 12 (parser 3.0) it is disabled by its
# link and never loaded, and purge takes the link.

load helpers/vm

REL=$(cat /sbx/debian-release)
deb() { ls /sbx/deb/sbx_*_amd64.deb; }

teardown() {
	[ "$SBX_VM_ROLE" = root ] || return 0
	[ "$(dpkg-query -W -f '${Status} ${Version}' sbx 2>/dev/null)" = "install ok installed $(dpkg-deb -f "$(deb)" Version)" ] ||
		dpkg -i "$(deb)" >/dev/null 2>&1
}

loaded() { grep -q '^sbx-ns (' /sys/kernel/security/apparmor/profiles; }

# The profile as the release's parser leaves it while the package is installed.
profile_installed() {
	case $REL in
	13) loaded && [ ! -e /etc/apparmor.d/disable/sbx-ns ] ;;
	12) ! loaded && [ "$(readlink /etc/apparmor.d/disable/sbx-ns)" = ../sbx-ns ] ;;
	*) echo "/sbx/debian-release says '$REL', not 12 or 13" >&2; return 1 ;;
	esac
}

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

@test "purge, install an earlier version, upgrade, remove, purge, install: nothing left, the profile as the parser allows" {
	if [ "$SBX_VM_ROLE" = user ]; then
		run -2 dpkg --purge sbx
		assert_output "dpkg: error: requested operation requires superuser privilege"
		return
	fi
	local d=$BATS_TEST_TMPDIR ver said=
	ver=$(dpkg-deb -f "$(deb)" Version)
	# What installing says of the profile where no link is yet: Debian 12's parser
	# refuses it, Debian 13's loads it silently.
	[ "$REL" = 12 ] && said="sbx: /etc/apparmor.d/sbx-ns is disabled"
	dpkg-deb -R "$(deb)" "$d/pkg"
	sed -i "s/^Version: .*/Version: ${ver}~earlier/" "$d/pkg/DEBIAN/control"
	dpkg-deb -Znone -b "$d/pkg" "$d/earlier.deb" >/dev/null
	run -0 dpkg --purge sbx
	run -1 loaded
	run -0 leftovers
	assert_output ""
	run -0 dpkg -i "$d/earlier.deb"
	if [ -n "$said" ]; then assert_line --partial "$said"; else refute_line --partial apparmor; fi
	run -0 dpkg-query -W -f '${Status} ${Version}' sbx
	assert_output "install ok installed ${ver}~earlier"
	run -0 profile_installed
	run -0 dpkg -i "$(deb)"
	refute_line --partial apparmor
	refute_line --partial warning
	run -0 dpkg-query -W -f '${Status} ${Version}' sbx
	assert_output "install ok installed $ver"
	run -0 profile_installed
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
	assert_not_exists /etc/apparmor.d/disable/sbx-ns
	run -0 dpkg -i "$(deb)"
	refute_line --partial warning
	run -0 profile_installed
}

#!/bin/bash
# tests/vm/debian.sh [run.sh options]: the suite of tests/vm/debian/ in a Debian 12
# root booted on Debian's kernel, with sbx installed in it as an administrator would.
#
# The root comes from tests/deb/chroot.sh: `debootstrap --variant=minbase bookworm`
# with apparmor (its parser) and iproute2 (ip(8), for sbx-check proof), fetched once into
# a cached tarball (debootstrap checks the archive's Release file against Debian's keyring
# and every .deb against its Packages index), then, before every use, refused unless it
# holds exactly the .deb files pinned in tests/deb/bookworm-minbase with their SHA-256;
# reruns are offline. sbx goes in as the Debian package, by `dpkg -i`
# inside the booted VM: SBX_DEB=FILE, or the package of the tree under test that
# tests/deb/build.sh builds once for its content (`dpkg-buildpackage -us -uc -b` with no
# network, the pinned sources from the download cache) and tests/90-deb takes too. Then
# `run.sh --debian-root` boots the root from a disk (see run.sh), with AppArmor active and
# the usual XFS and ext4 disks, project quotas and cgroup subtrees (tests/vm/README.md).
#
# Environment: SBX_ROOT, SBX_TESTBIN, SBX_VM_* as for run.sh; SBX_VM_WORK defaults to
# $SBX_ROOT/build/vm-debian; SBX_DEBOOTSTRAP_CACHE as for tests/deb/chroot.sh.
# Exit status: run.sh's; 2 when the root cannot be made.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SBX_ROOT=${SBX_ROOT:-$(cd "$here/../.." && pwd)}
export SBX_ROOT
work=${SBX_VM_WORK:-$SBX_ROOT/build/vm-debian}
die() { echo "vm-debian: fatal: $*" >&2; exit 2; }

mkdir -p "$work" || die "unable to create $work"
work=$(cd "$work" && pwd)
exec 8>"$work/debian.lock"
flock -n 8 || die "another run is using $work (set SBX_VM_WORK)"
SBX_PACKAGES_EXTRA="${SBX_PACKAGES_EXTRA:-} debootstrap" "$SBX_ROOT/deps/packages.sh" vm ||
	die "packages for the Debian root are missing"
root=$work/debian-root
rm -rf "$root" "$root.log"
"$SBX_ROOT/tests/deb/chroot.sh" "$root" || die "unable to make the Debian root $root"

# The package of the tree under test, built once for its content and kept
# (tests/deb/build.sh, which tests/90-deb takes it from too).
[ -n "${SBX_DEB:-}" ] || SBX_DEB=$("$SBX_ROOT/tests/deb/build.sh") || die "unable to build the package (tests/deb/build.sh)"
[ -f "$SBX_DEB" ] || die "SBX_DEB=$SBX_DEB is not a file"
mkdir -p "$root/sbx/deb" && cp "$SBX_DEB" "$root/sbx/deb/" || die "unable to copy $SBX_DEB into $root"
# A Debian system has /etc/hosts (the installer writes it); debootstrap's minimal root
# does not, and sbx-check proof binds its test names over it.
[ -e "$root/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
# The administrator's baseline that `sbx-check host --baseline` reads: a root-owned file
# on a path only root can change.
install -d -m 0755 "$root/etc/sbx" && echo '{}' >"$root/etc/sbx/baseline.json" &&
	chmod 0644 "$root/etc/sbx/baseline.json" || die "unable to write $root/etc/sbx/baseline.json"

SBX_VM_WORK=$work SBX_BIN= exec "$here/run.sh" --debian-root "$root" --suite "$here/debian" "$@"

#!/bin/bash
# tests/vm/debian.sh [--release 12|13] [run.sh options]: sbx installed as an administrator
# would, in a Debian root booted in the VM: Debian 12 (the default) on the machine's own
# Debian 12 kernel, or Debian 13 on Debian 13's kernel (6.12, tests/vm/kernels, fetched
# once by tests/vm/kernel.sh).
#
# The root comes from tests/deb/chroot.sh: `debootstrap --variant=minbase` of bookworm
# or trixie with apparmor (its parser) and iproute2 (ip(8), for sbx-check proof), and
# on trixie systemd (systemd-analyze), fetched once into a cached tarball (debootstrap
# checks the archive's Release file against Debian's keyring and every .deb against its
# Packages index), then, before every use, refused unless it holds exactly the .deb
# files pinned in tests/deb/SUITE-minbase with their SHA-256; reruns are offline. sbx
# goes in as the Debian package, by `dpkg -i` inside the booted VM: SBX_DEB=FILE, or the
# package of the tree under test that tests/deb/build.sh builds once for its content
# (`dpkg-buildpackage -us -uc -b` with no network, the pinned sources from the download
# cache) and tests/90-deb takes too: one package for both releases (static tools, and
# the maintainer scripts decide on the host what its AppArmor parser accepts). Then
# `run.sh --debian-root` boots the root from a disk (see run.sh), with AppArmor active
# and the usual XFS and ext4 disks, project quotas and cgroup subtrees
# (tests/vm/README.md).
#
# The suite is tests/vm/debian/ and the release's own tests/vm/debian/12/ or 13/ (what
# its AppArmor parser does with the profile); on Debian 13 also the VM suites of the limits, the
# living sandbox's cgroups, the change sets on a quota and sbx-check (DEBIAN13_SUITES),
# run by the installed tools. /sbx/debian-release in the root tells the tests which
# release, kernel and parser to expect: any other fails them with the versions named.
#
# Environment: SBX_ROOT, SBX_TESTBIN, SBX_VM_* as for run.sh; SBX_VM_WORK defaults to
# $SBX_ROOT/build/vm-debian12 or $SBX_ROOT/build/vm-debian13;
# SBX_DEBOOTSTRAP_CACHE as for tests/deb/chroot.sh.
# Exit status: run.sh's; 2 when the root or the kernel cannot be made.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SBX_ROOT=${SBX_ROOT:-$(cd "$here/../.." && pwd)}
export SBX_ROOT
die() { echo "vm-debian: fatal: $*" >&2; exit 2; }
release=12
if [ "${1-}" = --release ]; then
	[ $# -ge 2 ] || die "--release needs 12 or 13"
	release=$2
	shift 2
fi
DEBIAN13_SUITES='33-sbx-ns-serve-cgroup.bats 36-quota-changes.bats 65-landlock-tiers.bats'
boot=() suites=("$here/debian" "$here/debian/$release")
case $release in
12) work=${SBX_VM_WORK:-$SBX_ROOT/build/vm-debian12} ;;
13)
	work=${SBX_VM_WORK:-$SBX_ROOT/build/vm-debian13}
	k=$("$here/kernel.sh" 6.12) || die "unable to get Debian 13's kernel (tests/vm/kernel.sh 6.12)"
	boot=(--kernel "$(sed -n 1p <<<"$k")" --modules "$(sed -n 2p <<<"$k")")
	# 6.12 patches its static branches with int3 while the other vCPU runs; under
	# QEMU's multi-threaded TCG that CPU can execute the stale int3 and the boot
	# panics ("Oops: int3" in sched_clock_cpu, seen once in eight boots). Both vCPUs
	# in one host thread see the patch at once.
	export SBX_VM_TCG=${SBX_VM_TCG:-single}
	for s in $DEBIAN13_SUITES; do suites+=("$here/$s"); done
	;;
*) die "--release $release: the VM boots Debian 12 or 13" ;;
esac

mkdir -p "$work" || die "unable to create $work"
work=$(cd "$work" && pwd)
exec 8>"$work/debian.lock"
flock -n 8 || die "another run is using $work (set SBX_VM_WORK)"
SBX_PACKAGES_EXTRA="${SBX_PACKAGES_EXTRA:-} debootstrap" "$SBX_ROOT/deps/packages.sh" vm ||
	die "packages for the Debian root are missing"
root=$work/debian-root
rm -rf "$root" "$root.log"
"$SBX_ROOT/tests/deb/chroot.sh" --release "$release" "$root" || die "unable to make the Debian root $root"

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

echo "$release" >"$root/sbx/debian-release" || die "unable to write $root/sbx/debian-release"

SBX_VM_WORK=$work SBX_BIN= exec "$here/run.sh" --debian-root "$root" "${boot[@]}" --suite "${suites[@]}" "$@"

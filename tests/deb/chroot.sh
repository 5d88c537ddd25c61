#!/bin/bash
# tests/deb/chroot.sh [--release 12|13] DIR: a minimal Debian root in DIR, of
# Debian 12 (bookworm, the default) or 13 (trixie), with apparmor (its
# parser, not its kernel part) and iproute2 (ip(8)); Debian 13's also with
# systemd (systemd-analyze, for the units' checks on its systemd 257). Made
# offline from a cached tarball of its packages.
#
# The tarball is made once from the archive with `debootstrap
# --make-tarball` (which checks the archive's signature and each package's
# checksum) into the cache, $SBX_DEBOOTSTRAP_CACHE or
# $SBX_ROOT/build/debootstrap, under a name that carries the SHA-256 of the
# pinned list, so a new list fetches anew. Before each use a copy of it is
# checked: it must hold exactly the .deb files of tests/deb/SUITE-minbase,
# each with its SHA-256; DIR is unpacked from that copy, with no network.
#
# Exit status: 0 ready; 2 usage, fetch or verification failure.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SBX_ROOT=${SBX_ROOT:-$(cd "$here/../.." && pwd)}
die() { echo "deb-chroot: fatal: $*" >&2; exit 2; }
usage="usage: tests/deb/chroot.sh [--release 12|13] DIR (a directory to create)"

release=12
if [ "${1-}" = --release ]; then
	[ $# -ge 2 ] || die "$usage"
	release=$2
	shift 2
fi
case $release in
12) suite=bookworm opts=(--variant=minbase --include=apparmor,iproute2) ;;
13) suite=trixie opts=(--variant=minbase --include=adduser,apparmor,bubblewrap,iproute2,systemd) ;;
*) die "--release $release: this script makes Debian 12 or 13 roots ($usage)" ;;
esac
pins=$here/$suite-minbase
if [ $# -ne 1 ] || [ -z "$1" ]; then die "$usage"; fi
case $1 in /*) dir=$1 ;; *) dir=$PWD/$1 ;; esac
[ ! -e "$dir" ] || die "$dir exists: the root is made in a new directory"
cache=${SBX_DEBOOTSTRAP_CACHE:-$SBX_ROOT/build/debootstrap}
mkdir -p "$cache" || die "unable to create $cache"
cache=$(cd "$cache" && pwd)
pinsum=$(grep -v '^#' "$pins" | LC_ALL=C sort | sha256sum) || die "unable to read $pins"
tarball=$cache/$suite-minbase-${pinsum:0:16}.tgz
exec 9>"$cache/.lock"
flock 9

# The sorted "FILE SHA256" list of the .deb files in tarball $1.
debs_of() {
	local t
	t=$(mktemp -d "$cache/.list.XXXXXX")
	tar -xzf "$1" -C "$t" var/cache/apt/archives || { rm -rf "$t"; return 1; }
	(cd "$t/var/cache/apt/archives" && sha256sum -- *.deb) | awk '{ print $2, $1 }' | LC_ALL=C sort
	rm -rf "$t"
}

# $1 holds exactly the pinned packages.
verify() {
	local got want
	got=$(debs_of "$1") || die "unable to read the packages of $1"
	want=$(grep -v '^#' "$pins" | LC_ALL=C sort)
	if [ "$got" != "$want" ]; then
		diff <(echo "$want") <(echo "$got") | sed -n 's/^[<>] /  /p' | head -n 10 >&2
		die "$1 does not hold exactly the packages pinned in $pins (above: the differing lines)"
	fi
}

if [ ! -f "$tarball" ]; then
	echo "deb-chroot: fetching the $suite minbase packages into $tarball" >&2
	rm -rf "$cache/work" "$cache/.part.tgz"
	debootstrap "${opts[@]}" --make-tarball="$cache/.part.tgz" "$suite" "$cache/work" \
		http://deb.debian.org/debian >"$cache/fetch.log" 2>&1 ||
		{ tail -n 5 "$cache/fetch.log" >&2; die "debootstrap --make-tarball failed (log: $cache/fetch.log)"; }
	rm -rf "$cache/work"
	verify "$cache/.part.tgz"
	mv "$cache/.part.tgz" "$tarball"
	# A tarball of an earlier list is of no further use.
	find "$cache" -maxdepth 1 -name "$suite-minbase*.tgz" ! -name "${tarball##*/}" -delete
fi

mkdir -p "$(dirname "$dir")"
copy=$(mktemp --suffix=.tgz "$cache/.use.XXXXXX")
trap 'rm -f "$copy"' EXIT
cp "$tarball" "$copy"
verify "$copy"
debootstrap "${opts[@]}" --unpack-tarball="$copy" "$suite" "$dir" >"$dir.log" 2>&1 ||
	{ tail -n 5 "$dir.log" >&2; die "debootstrap --unpack-tarball into $dir failed (log: $dir.log)"; }
rm -f "$dir.log"

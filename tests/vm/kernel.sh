#!/bin/bash
# tests/vm/kernel.sh NAME: the pinned Debian kernel NAME of tests/vm/kernels, fetched once
# from the archive (a private source list and lists directory: the machine's own apt
# state is never touched), checked against its SHA-256, unpacked and given a modules.dep.
# Prints two lines: the kernel image and its modules directory, for
# `tests/vm/run.sh --kernel IMAGE --modules DIR`.
#
# Environment: SBX_ROOT (repo root), SBX_VM_KERNELS (cache, default
# $SBX_ROOT/build/vm-kernels). Exit status: 0 ready; 2 unknown name, download failed,
# checksum mismatch.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SBX_ROOT=${SBX_ROOT:-$(cd "$here/../.." && pwd)}
cache=${SBX_VM_KERNELS:-$SBX_ROOT/build/vm-kernels}
die() { echo "vm-kernel: fatal: $*" >&2; exit 2; }

[ $# -eq 1 ] || die "usage: tests/vm/kernel.sh NAME (a name from tests/vm/kernels)"
line=$(awk -v n="$1" '!/^#/ && $1 == n' "$here/kernels")
[ -n "$line" ] || die "no kernel named '$1' in $here/kernels"
read -r name suite pkg ver file sum <<<"$line"
kver=${pkg#linux-image-}
kver=${kver%-unsigned}
dir=$cache/$name
deb=$cache/$file
mkdir -p "$cache" || die "unable to create $cache"
cache=$(cd "$cache" && pwd)
dir=$cache/$name
deb=$cache/$file
exec 9>"$cache/.lock"
flock 9

check() { [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$sum" ]; }

if [ ! -f "$dir/.done" ] || [ "$(cat "$dir/.done")" != "$sum" ]; then
	if [ ! -f "$deb" ] || ! check "$deb"; then
		rm -f "$deb"
		apt=$cache/apt
		mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/dl"
		echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main" \
			>"$apt/sources.list"
		opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
			-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache")
		# As root apt downloads as its unprivileged _apt user.
		if [ "$(id -u)" = 0 ] && id -u _apt >/dev/null 2>&1; then chown _apt "$apt/dl"; fi
		echo "vm-kernel: fetching $pkg=$ver from $suite" >&2
		apt-get "${opts[@]}" -q update >"$apt/log" 2>&1 ||
			die "unable to update the private source list $apt/sources.list (log: $apt/log)"
		(cd "$apt/dl" && apt-get "${opts[@]}" -q download "$pkg=$ver") >>"$apt/log" 2>&1 ||
			die "unable to download $pkg=$ver from $suite (log: $apt/log)"
		[ -f "$apt/dl/$file" ] || die "apt-get download did not produce $file (log: $apt/log)"
		mv "$apt/dl/$file" "$deb.part"
		check "$deb.part" || { rm -f "$deb.part"; die "$file does not match its SHA-256 in $here/kernels"; }
		mv "$deb.part" "$deb"
	fi
	rm -rf "$dir" "$dir.part"
	mkdir -p "$dir.part"
	dpkg-deb -x "$deb" "$dir.part" || die "unable to unpack $deb"
	[ -f "$dir.part/boot/vmlinuz-$kver" ] || die "$deb holds no boot/vmlinuz-$kver"
	# Debian 13's packages keep the modules under usr/lib (the merged /usr); depmod and
	# run.sh look for lib/modules.
	if [ ! -e "$dir.part/lib" ] && [ -d "$dir.part/usr/lib/modules" ]; then
		ln -s usr/lib "$dir.part/lib"
	fi
	depmod -b "$dir.part" "$kver" || die "depmod failed for $kver in $dir.part"
	chmod -R a+rX "$dir.part"
	echo "$sum" >"$dir.part/.done"
	mv "$dir.part" "$dir"
fi
echo "$dir/boot/vmlinuz-$kver"
echo "$dir/lib/modules/$kver"

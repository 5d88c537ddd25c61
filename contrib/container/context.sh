#!/bin/sh
# contrib/container/context.sh DIR [BINDIR]: the build context for
# contrib/container/Containerfile: DIR/rootfs with the static sbx tools from
# BINDIR (default: bin/ of this tree), the session recipe
# contrib/session/sbx-session, busybox (Debian's busybox-static) with
# its applets in /bin when it is installed, and the directories the tools
# need. Nothing is downloaded.
set -eu

usage() { echo "sbx: usage: contrib/container/context.sh DIR [BINDIR]" >&2; exit 100; }
[ $# -ge 1 ] && [ $# -le 2 ] || usage
case $1 in /*) ;; *) echo "sbx: usage: context.sh: DIR must be absolute, not '$1'" >&2; exit 100 ;; esac
dir=$1
bindir=${2:-$(cd "$(dirname "$0")/../.." && pwd)/bin}
root=$dir/rootfs

for t in sbx-ns sbx-broker sbx-check; do
	[ -x "$bindir/$t" ] || { echo "sbx: fatal: unable to find $bindir/$t: run make first" >&2; exit 1; }
done
# The image needs static tools: a dynamic one finds no libc in it.
if file -L "$bindir/sbx-ns" | grep -q 'dynamically linked'; then
	echo "sbx: fatal: $bindir/sbx-ns is dynamically linked: build with make STATIC=1" >&2
	exit 1
fi

rm -rf "$root"
mkdir -p "$root/usr/local/bin" "$root/bin" "$root/etc" "$root/tmp" \
	"$root/proc" "$root/dev" "$root/sys" "$root/run" "$root/var/tmp"
chmod 1777 "$root/tmp" "$root/var/tmp"
for t in "$bindir"/sbx-*; do
	install -m 0755 "$t" "$root/usr/local/bin/"
done
install -m 0755 "$(dirname "$0")/../session/sbx-session" "$root/usr/local/bin/sbx-session"
bb=/bin/busybox
if [ -x "$bb" ] && ! file -L "$bb" | grep -q 'dynamically linked'; then
	install -m 0755 "$bb" "$root/bin/busybox"
	for a in sh cat echo ls id true false env wget sleep mkdir mkfifo touch rm printf test \
		mv tr chown timeout setsid; do
		ln -s busybox "$root/bin/$a"
	done
fi
printf 'root:x:0:0:root:/root:/bin/sh\nsbx:x:1000:1000:sbx:/ws:/bin/sh\nnobody:x:65534:65534:nobody:/ws:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nsbx:x:1000:\nnogroup:x:65534:\n' >"$root/etc/group"
# Empty: a runtime binds its own over them (on any network but none), and
# sbx-ns's transparent mode binds its own resolver over resolv.conf.
: >"$root/etc/hosts"
: >"$root/etc/resolv.conf"
chmod -R go-w "$root"
chmod 1777 "$root/tmp" "$root/var/tmp"

#!/bin/sh
# pkill -P PPID for the VM, which busybox lacks: bats ends a timed-out test by killing the
# test shell's children (BATS_TEST_TIMEOUT); without pkill it parses `ps -ef` output that
# busybox's ps does not produce.
[ $# -eq 2 ] && [ "$1" = -P ] || { echo "usage: pkill -P PPID" >&2; exit 2; }
want=$2
found=1
for s in /proc/[0-9]*/stat; do
	stat=$(cat "$s" 2>/dev/null) || continue
	set -- ${stat##*) }
	[ "$2" = "$want" ] || continue
	pid=${s#/proc/}
	kill "${pid%/stat}" 2>/dev/null && found=0
done
exit $found

#!/bin/bash
# `make check`: every suite, each run even when an earlier one failed; the
# closing line adds them up. Environment from the Makefile: SBX_BIN,
# SBX_UNIT, SBX_STATIC, SBX_OBJDIR.
set -u
cd "$(dirname "$0")/.."
results=$(mktemp)
trap 'rm -f "$results"' EXIT

suite() {
	local name=$1; shift
	echo "=== $name"
	"$@" 2>&1 | tee /dev/stderr | grep -E '^[a-z0-9-]+: [0-9]+ passed, [0-9]+ failed$' | tail -1 >> "$results"
	local rc=${PIPESTATUS[0]}
	if [ "$rc" -ne 0 ] && ! tail -1 "$results" | grep -q "^$name"; then
		echo "$name: 0 passed, 1 failed" >> "$results"
	elif [ "$rc" -ne 0 ]; then
		sed -i "\$s/, 0 failed\$/, 1 failed/" "$results"
	fi
}

suite unit "$SBX_UNIT"
suite bats tests/run-bats.sh tests/*.bats
for s in tests/*/check.sh; do
	[ -x "$s" ] || continue
	suite "$(basename "$(dirname "$s")")" "$s"
done

echo "=== summary"
cat "$results"
awk '{ p += $2; f += $4 } END { printf "%d passed, %d failed\n", p, f; exit (f > 0) }' "$results"

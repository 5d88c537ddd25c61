#!/bin/bash
# The VM part of `make check`: the runner's own tests (a failing, skipped,
# hung or unbootable VM must fail), then the suite on Debian's kernel.
# Ends with one line "vm: N passed, N failed" adding both up.
set -u
cd "$(dirname "$0")/../.."
: "${SBX_VM_WORK:=$PWD/build/vm}"
export SBX_VM_WORK SBX_ROOT=$PWD
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
tests/run-bats.sh tests/vm/host/*.bats 2>&1 | tee -a "$log" || rc=1
tests/vm/run.sh 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
grep -E '^(bats|vm): [0-9]+ passed, [0-9]+ failed$' "$log" |
	awk -v rc=$rc '{ p += $2; f += $4; n++ }
		END { if (n < 2 || (rc && !f)) f++; printf "vm: %d passed, %d failed\n", p, f }'
exit $rc

#!/bin/bash
# The VM part of `make check`: the runner's own tests (a failing, skipped,
# hung or unbootable VM must fail), then the suite on Debian's kernel, then
# the sbx-ns, sbx-cgroup and sbx-check suites (and tests/vm/5.10/) on Debian
# 11's 5.10 (tests/vm/kernels, fetched once into build/vm-kernels), then tests/vm/debian/
# with sbx installed in a Debian 12 root and in a Debian 13 root on its 6.12
# (tests/vm/debian.sh --release 12, 13).
# Ends with one line "vm: N passed, N failed" adding them all up.
set -u
cd "$(dirname "$0")/../.."
: "${SBX_VM_WORK:=$PWD/build/vm}"
export SBX_VM_WORK SBX_ROOT=$PWD
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
tests/run-bats.sh tests/vm/host/*.bats 2>&1 | tee -a "$log" || rc=1
# The whole suite in both roles takes about 550 s beside make check's host
# suites: twice that before it counts as hung.
SBX_VM_TIMEOUT=${SBX_VM_TIMEOUT:-1200} tests/vm/run.sh 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
if k510=$(tests/vm/kernel.sh 5.10); then
	SBX_VM_WORK=$SBX_VM_WORK-5.10 tests/vm/run.sh --kernel "$(sed -n 1p <<<"$k510")" \
		--modules "$(sed -n 2p <<<"$k510")" --suite tests/vm/20-sbx-ns.bats \
		tests/vm/3[01]-sbx-cgroup*.bats tests/vm/60-sbx-check.bats tests/vm/65-landlock-tiers.bats tests/vm/5.10 2>&1 | tee -a "$log"
	[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
else
	echo "vm: 0 passed, 1 failed" | tee -a "$log"
	rc=1
fi
for rel in 12 13; do
	SBX_VM_WORK=$SBX_VM_WORK-debian$rel tests/vm/debian.sh --release $rel 2>&1 | tee -a "$log"
	if [ "${PIPESTATUS[0]}" -ne 0 ]; then
		rc=1
		grep -qE '^vm: [0-9]+ passed, [0-9]+ failed$' <(tail -n 1 "$log") || echo "vm: 0 passed, 1 failed" | tee -a "$log"
	fi
done
grep -E '^(bats|vm): [0-9]+ passed, [0-9]+ failed$' "$log" |
	awk -v rc=$rc '{ p += $2; f += $4; n++ }
		END { if (n < 5 || (rc && !f)) f++; printf "vm: %d passed, %d failed\n", p, f }'
exit $rc

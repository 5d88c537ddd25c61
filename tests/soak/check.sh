#!/bin/bash
# The soak's part of `make check`: a short soak (60 s, 8 sandboxes, every
# fault kind at least once) that fails on any call lost or object leaked;
# `make soak` is the long one. Environment from the Makefile: SBX_BIN,
# SBX_TESTBIN, SBX_VM_WORK. Ends with one line "soak: N passed, N failed".
set -u
cd "$(dirname "$0")/../.." || exit 2
out=${SBX_VM_WORK:-$PWD/build/vm}-soak
# A fixed seed (unless given): the same schedule of faults in every check.
if SOAK_SEED=${SOAK_SEED:-1} SOAK_SECONDS=60 SOAK_SANDBOXES=8 SOAK_OUT=$out tests/soak/run.sh; then
	echo "soak: 1 passed, 0 failed"
else
	echo "soak: the short soak failed: $out/report.md names what was lost or leaked:"
	grep -E '^\[root\] # SOAK (lost|leak) ' "$out/vm.log" | sed 's/^\[root\] # SOAK /soak: /' | head -n 20
	echo "soak: 0 passed, 1 failed"
	exit 1
fi

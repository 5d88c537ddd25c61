#!/bin/bash
# Runs bats files in strict mode and ends with "bats: N passed, N failed".
# A skipped test counts as failed.
set -u
[ $# -gt 0 ] || { echo "run-bats: usage: run-bats.sh FILE.bats..." >&2; exit 100; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
bats --tap "$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
passed=$(grep -Ec '^ok [0-9]+ ' "$out" | head -1)
skipped=$(grep -Ec '^ok [0-9]+ .*# skip' "$out" | head -1)
failed=$(grep -Ec '^not ok [0-9]+ ' "$out" | head -1)
passed=$((passed - skipped))
failed=$((failed + skipped))
plan=$(grep -Eo '^1\.\.[0-9]+' "$out" | head -1 | cut -c4-)
if [ -n "$plan" ] && [ $((passed + failed)) -ne "$plan" ]; then
	echo "run-bats: $((plan - passed - failed)) of $plan tests did not report" >&2
	failed=$((plan - passed))
fi
[ "$rc" -eq 0 ] || [ "$failed" -gt 0 ] || failed=1
echo "bats: $passed passed, $failed failed"
[ "$failed" -eq 0 ]

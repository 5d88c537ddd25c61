#!/bin/bash
# `make check`: every suite, each run even when an earlier one failed; the
# closing line adds them up. Environment from the Makefile: SBX_BIN,
# SBX_UNIT, SBX_STATIC, SBX_OBJDIR.
set -u
cd "$(dirname "$0")/.."
results=$(mktemp)
log=$(mktemp)
failures=$(mktemp)
trap 'rm -f "$results" "$log" "$failures"' EXIT

suite() {
	local name=$1; shift
	echo "=== $name"
	"$@" 2>&1 | tee "$log"
	local rc=${PIPESTATUS[0]}
	# The suite's own closing line, named after the suite; none, or a
	# non-zero exit that the line does not show, counts as a failure.
	local line
	line=$(grep -E "^$name: [0-9]+ passed, [0-9]+ failed\$" "$log" | tail -1)
	[ -n "$line" ] || line="$name: 0 passed, 1 failed"
	if [ "$rc" -ne 0 ] && [[ $line == *", 0 failed" ]]; then
		line="${line%, 0 failed}, 1 failed"
	fi
	echo "$line" >> "$results"
	# Failed tests are named again under the summary, where a log cut to its
	# last lines still shows them.
	grep -E '(^|\] )not ok ' "$log" | sed "s/^/$name: /" >> "$failures"
}

# The same unit and host suites against a dynamic build (STATIC=0, the
# distribution's -dev packages), as packagers build it; not the container
# and docker suites, whose image holds only static tools (it has no libc),
# nor the Debian package suite, whose package is the static build, nor the
# suites that run no tool of this build: the reproducible builds (they
# build copies of the tree) and the TLS origins' own checks. Nor the two
# suites of real work, whose minutes go to builds of GNU hello that the
# tools only watch (28-ns-work: hello, git and pytest in sbx-ns;
# 47-changes-trial: hello in a git checkout through sbx-ns --changes and
# sbx-changes): they assert no C library text, and what they run of sbx-ns
# and sbx-changes here, runs, deny-write, change sets, the refusals'
# messages, the suites 10-27 and 45-46 assert on this build.
dynamic() {
	local b=build/dynamic out
	make --no-print-directory -j"$(nproc)" B="$b" STATIC=0 all test-progs "$b/build/obj-dynamic/unit-tests" || return 1
	out=$(mktemp)
	"$b/build/obj-dynamic/unit-tests" | tee "$out"
	SBX_BIN=$PWD/$b/bin SBX_TESTBIN=$PWD/$b/build/obj-dynamic/testbin SBX_STATIC=0 \
		tests/run-bats.sh $(ls tests/*.bats | grep -v -e /02-deps -e /09-reproducible -e /28-ns-work -e /47-changes-trial -e /80-container -e /82-docker -e /83-tlsorigin -e /90-deb) | tee -a "$out"
	grep -E '^(unit|bats): [0-9]+ passed, [0-9]+ failed$' "$out" |
		awk '{ p += $2; f += $4; n++ } END { if (n < 2) f++; printf "dynamic: %d passed, %d failed\n", p, f; exit f > 0 }'
	local rc=$?
	rm -f "$out"
	return $rc
}

# Every sbx-ns suite again with the new mount API hidden as on Linux < 5.12
# (tests/progs/ns-nomountapi): the classic mount calls must hold the same
# claims, and the status must say they were used. A test tagged
# classic:left-out is not run again here: its claim does not depend on the
# mount calls (the million denied calls of 18-ns-policy, a stress of the
# supervisor's reports that the bats and dynamic legs run).
classic() (
	set -o pipefail
	SBX_TEST_MOUNTS=classic "$SBX_TESTBIN/ns-nomountapi" tests/run-bats.sh \
		--filter-tags '!classic:left-out' tests/1[2-8]-ns-*.bats | sed 's/^bats: /classic: /'
)

suite unit "$SBX_UNIT"
suite bats tests/run-bats.sh tests/*.bats
suite dynamic dynamic
suite classic classic
for s in tests/*/check.sh; do
	[ -x "$s" ] || continue
	suite "$(basename "$(dirname "$s")")" "$s"
done

echo "=== summary"
if [ -s "$failures" ]; then
	echo "failed tests:"
	cat "$failures"
fi
cat "$results"
awk '{ p += $2; f += $4 } END { printf "%d passed, %d failed\n", p, f; exit (f > 0) }' "$results"

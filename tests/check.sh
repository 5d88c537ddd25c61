#!/bin/bash
# `make check`: every suite, each run even when an earlier one failed; the
# closing line adds them up. Environment from the Makefile: SBX_BIN,
# SBX_UNIT, SBX_STATIC, SBX_OBJDIR.
set -u
cd "$(dirname "$0")/.."
results=$(mktemp)
log=$(mktemp)
failures=$(mktemp)
times=$(mktemp)
trap 'rm -f "$results" "$log" "$failures" "$times"' EXIT

suite() {
	local name=$1 t0=$SECONDS; shift
	echo "=== $name"
	"$@" 2>&1 | tee "$log"
	local rc=${PIPESTATUS[0]}
	# How long each suite took, under the summary: what the time budget
	# of `make check` is spent on.
	echo "$name: $((SECONDS - t0)) s" >>"$times"
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

# The unit tests and a chosen part of the host suites against a dynamic
# build (STATIC=0, the distribution's -dev packages), as packagers build
# it. What the C library and the linked libraries decide is what this leg
# proves again: every tool's options, usage and messages (their texts
# come through stdio and strerror), names and addresses (the broker's
# lookups, the --allow-address ranges), the identities sbx-ns drops to,
# and each tool's main path once: a run, deny-write, fds, the network
# through the broker, a dry run, cgroups, quotas, change sets, service
# routes, the self-proof, grants and policies, Seatbelt's profiles. The
# kernel's side of those claims (the escapes, the Landlock tiers, the
# races, the limits under load, the living sandbox's joins, the real work
# of 28 and 47, sbx-changes' trees) is the same code either way, asserted
# by the static leg; so are the container, docker and package suites,
# whose image and package hold the static tools.
DYNAMIC_SUITES='05-contracts 06-help 07-defaults 08-version 10-ns-usage 12-ns-run 15-ns-deny 17-ns-fd
	19-ns-net-usage 21-ns-net-broker 27-ns-dryrun 30-cgroup 35-quota 40-broker-usage
	44-broker-address 45-ns-changes 48-broker-service 50-seatbelt 60-check 65-grant 70-policy
	71-policy-tools'
dynamic() {
	local b=build/dynamic out
	make --no-print-directory -j"$(nproc)" B="$b" STATIC=0 all test-progs "$b/build/obj-dynamic/unit-tests" || return 1
	out=$(mktemp)
	"$b/build/obj-dynamic/unit-tests" | tee "$out"
	SBX_BIN=$PWD/$b/bin SBX_TESTBIN=$PWD/$b/build/obj-dynamic/testbin SBX_STATIC=0 \
		tests/run-bats.sh $(printf 'tests/%s.bats ' $DYNAMIC_SUITES) | tee -a "$out"
	grep -E '^(unit|bats): [0-9]+ passed, [0-9]+ failed$' "$out" |
		awk '{ p += $2; f += $4; n++ } END { if (n < 2) f++; printf "dynamic: %d passed, %d failed\n", p, f; exit f > 0 }'
	local rc=$?
	rm -f "$out"
	return $rc
}

# A bats run whose closing line is named NAME instead of bats: renamed NAME CMD...
renamed() (
	set -o pipefail
	"${@:2}" | sed "s/^bats: /$1: /"
)

# Every sbx-ns suite again with the new mount API hidden as on Linux < 5.12
# (tests/progs/ns-nomountapi): the classic mount calls must hold the same
# claims, and the status must say they were used. A test tagged
# classic:left-out is not run again here: its claim does not depend on the
# mount calls (the million denied calls of 18-ns-policy, a stress of the
# supervisor's reports that the bats and dynamic legs run).
classic() {
	renamed classic env SBX_TEST_MOUNTS=classic "$SBX_TESTBIN/ns-nomountapi" tests/run-bats.sh \
		--filter-tags '!classic:left-out' tests/1[2-8]-ns-*.bats
}

# Two lanes at once. The suites that run in VMs (tests/vm, tests/soak)
# keep about one core busy each under TCG, while the host's suites run one
# test at a time: on two cores the second lane runs beside the host lane
# instead of after it: the VMs (Debian 12's and 13's included), then the
# soak. The fuzzers and the reproducible builds (tests/09-reproducible,
# the suite repro) end the host lane, which makes the two lanes about as
# long as each other. None of them starts a tool whose processes a host
# suite might count. The second lane's output is kept apart and printed
# after the host lane's, each suite's block whole.
SECOND_LANE='tests/vm/check.sh tests/soak/check.sh'
second_lane() {
	log=$(mktemp)
	local s
	for s in $SECOND_LANE; do
		suite "$(basename "$(dirname "$s")")" "$s"
	done
	rm -f "$log"
}
lane_out=$(mktemp)
trap 'rm -f "$results" "$log" "$failures" "$times" "$lane_out"' EXIT
second_lane >"$lane_out" 2>&1 &
lane_pid=$!

suite unit "$SBX_UNIT"
suite bats tests/run-bats.sh $(ls tests/*.bats | grep -v /09-reproducible)
suite dynamic dynamic
suite classic classic
for s in tests/*/check.sh; do
	[[ " $SECOND_LANE " == *" $s "* ]] && continue
	[ -x "$s" ] || continue
	suite "$(basename "$(dirname "$s")")" "$s"
done
suite repro renamed repro tests/run-bats.sh tests/09-reproducible.bats
wait "$lane_pid"
cat "$lane_out"

echo "=== summary"
if [ -s "$failures" ]; then
	echo "failed tests:"
	cat "$failures"
fi
echo "time taken:"
cat "$times"
cat "$results"
awk '{ p += $2; f += $4 } END { printf "%d passed, %d failed\n", p, f; exit (f > 0) }' "$results"

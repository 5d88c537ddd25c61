#!/usr/bin/env bats
# Sampled metering (lib/meter/meter.c) on real processes, driven by the test
# program meter-run: the same meter sbx-seatbelt uses on macOS and
# `sbx-cgroup --sampled` uses on Linux. The figures asserted are ranges of
# behaviour (a share of a core, a size left on disk), never tool timings.

load helpers
load vm/helpers/meter
bats_require_minimum_version 1.5.0

setup() {
	T=$SBX_TESTBIN
	status_file=$BATS_TEST_TMPDIR/status
}

lost_msg() { meter_lost_msg meter-run "$@"; } # REASON LIMIT [UNIT]

# How many live processes have exactly this command line (no procps
# needed; zombies have none). The odd durations make the lines unique.
running() {
	local f args n=0
	for f in /proc/[0-9]*/cmdline; do
		{ mapfile -d "" args <"$f"; } 2>/dev/null || continue
		[ "${args[*]}" = "$*" ] && n=$((n + 1))
	done
	echo "$n"
}

# How many processes, zombies included, are named NAME.
named() {
	local f line n=0
	for f in /proc/[0-9]*/stat; do
		{ read -r line <"$f"; } 2>/dev/null || continue
		[[ $line == *" ($1) "* ]] && n=$((n + 1))
	done
	echo "$n"
}

# The pid is dead or a zombie of someone else: not running any more.
gone() {
	! kill -0 "$1" 2>/dev/null || grep -q '^State:.Z' "/proc/$1/status"
}

@test "a command that stays within its limits passes its exit code through, labelled sampled" {
	run -7 --separate-stderr "$T/meter-run" --memory 64M --cpu 100 --status-fd 3 -- sh -c 'exit 7' 3>"$status_file"
	assert_equal "$stderr" ""
	run -0 sed -n 1p "$status_file"
	assert_output '{"tool":"meter-run","event":"meter","enforcement":"sampled, not hard","interval_ms":100,"cpu":100,"memory":67108864}'
	run -0 sed -n 2p "$status_file"
	assert_output --regexp '^\{"tool":"meter-run","event":"exit","code":7,"enforcement":"sampled, not hard","peak_memory":[0-9]+,"peak_disk":0,"cpu_ms":[0-9]+,"stopped_ms":[0-9]+,"samples":[0-9]+,"peak_procs":[0-9]+,"leftover":0\}$'
}

@test "a command killed by a signal exits 128+N with the signal in the exit line" {
	run -143 --separate-stderr "$T/meter-run" --status-fd 3 -- sh -c 'kill -TERM $$' 3>"$status_file"
	assert_equal "$stderr" ""
	run -0 tail -1 "$status_file"
	assert_output --regexp '^\{"tool":"meter-run","event":"exit","code":143,"signal":15,"enforcement":"sampled, not hard",'
}

@test "a missing program fails like exec: 127" {
	run -127 --separate-stderr "$T/meter-run" -- /nonexistent/prog
	assert_equal "$stderr" "meter-run: fatal: unable to exec /nonexistent/prog: No such file or directory"
}

@test "a memory hog is killed and the sandbox reported LOST with exit 103" {
	meter_hog_lost
}

@test "a busy loop at --cpu 50 gets 35-65% of a core over 3 seconds" {
	# Real-time priorities, so that what limits the loop is the meter and
	# not the other work of a busy machine (CFS shares between cgroups
	# ignore nice); the meter above the loop, so the loop cannot starve it.
	meter_busy_half "chrt -f 20" "chrt -f 10"
}

@test "a busy loop at --cpu 20 in two processes gets at most 30% of a core between them" {
	run -0 --separate-stderr chrt -f 20 "$T/meter-run" --cpu 20 -- \
		chrt -f 10 sh -c "'$T/meter-busy' 2 & '$T/meter-busy' 2; wait"
	assert_equal "$stderr" ""
	a=$(sed -n 1p <<<"$output"); a=${a#cpu }; a=${a%\%}
	b=$(sed -n 2p <<<"$output"); b=${b#cpu }; b=${b%\%}
	echo "two busy loops got $a% + $b% of a core" >&3
	(( a + b >= 10 ))
	(( a + b <= 30 ))
}

@test "a disk filler is stopped, reported LOST, and its file is left in place" {
	ws=$(sbx_scratch)
	meter_fill_lost "$ws"
	rm -rf "$ws"
}

@test "the disk is checked once more after the command: a quick writer is LOST too" {
	ws=$(sbx_scratch)
	# The first sample comes at once, the next one only after 5 s: the
	# writer starts after the first and is done long before the second.
	run -103 --separate-stderr "$T/meter-run" --interval 5 --disk 4M --workspace "$ws" --status-fd 3 -- \
		sh -c "sleep 0.5; exec '$T/meter-fill' '$ws/fill' 8" 3>"$status_file"
	assert_regex "$stderr" "$(lost_msg disk 4194304)"
	assert_output "wrote 8 MiB"
	run -0 stat -c %s "$ws/fill"
	assert_output 8388608
	run -0 tail -1 "$status_file"
	assert_output --regexp '^\{"tool":"meter-run","event":"exit","code":103,"enforcement":"sampled, not hard","lost":"disk","limit":4194304,"measured":8388608,'
	rm -rf "$ws"
}

@test "a workspace the meter cannot read is LOST (disk-unreadable), not assumed small" {
	sbx_test_user
	ws=$(sbx_scratch)
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$ws"
	run -103 --separate-stderr as_user "$T/meter-run" --disk 1G --workspace "$ws" -- \
		sh -c "mkdir '$ws/hide' && echo x >'$ws/hide/f' && chmod 000 '$ws/hide' && sleep 2"
	assert_equal "$stderr" "meter-run: fatal: sandbox lost: unable to measure disk usage (sampled, not hard)"
	run -0 cat "$ws/hide/f"
	assert_output x
	rm -rf "$ws"
}

@test "a fast detached descendant that lives between two samples is not seen" {
	# The command sleeps past the first sample, double-forks a grandchild
	# that touches 64 MiB and exits within milliseconds, and ends long
	# before a second sample.
	meter_detach_unseen 5 300
}

@test "a detached descendant that lives across samples is seen after its parent exits, and killed" {
	run -103 --separate-stderr "$T/meter-run" --memory 16M --status-fd 3 -- "$T/meter-detach" 0 64 5000 5000 3>"$status_file"
	assert_regex "$stderr" "$(lost_msg memory 16777216)"
	gc=$(sed -n 's/^grandchild \([0-9]*\)$/\1/p' <<<"$output")
	[ -n "$gc" ]
	gone "$gc"
}

@test "a descendant that outlives the command is killed when the command ends" {
	run -0 --separate-stderr "$T/meter-run" --status-fd 3 -- "$T/meter-detach" 0 1 30000 300 3>"$status_file"
	assert_equal "$stderr" ""
	gc=$(sed -n 's/^grandchild \([0-9]*\)$/\1/p' <<<"$output")
	[ -n "$gc" ]
	gone "$gc"
	run -0 tail -1 "$status_file"
	assert_output --regexp '"leftover":1\}$'
}

@test "a fork storm under a memory limit is killed to the last process" {
	run -103 --separate-stderr "$T/meter-run" --memory 32M -- sh -c \
		'for i in $(seq 40); do (sleep 31.7) & done; '"'$T/meter-hog'"' 100 30'
	assert_regex "$stderr" "$(lost_msg memory 33554432)"
	run -0 running sleep 31.7
	assert_output 0
	# Not even as zombies: the meter reaps what it killed.
	run -0 named meter-hog
	assert_output 0
}

@test "a timeout kills the whole tree and exits 104" {
	run -104 --separate-stderr "$T/meter-run" --timeout 0.5 --status-fd 3 -- sh -c 'sleep 31.7 & sleep 31.7' 3>"$status_file"
	assert_equal "$stderr" "meter-run: fatal: timed out: sh killed (sampled, not hard)"
	run -0 tail -1 "$status_file"
	assert_output --regexp '^\{"tool":"meter-run","event":"exit","code":104,"enforcement":"sampled, not hard","timed_out":true,'
	run -0 running sleep 31.7
	assert_output 0
}

@test "a cancelling signal to the supervisor kills the tree and exits 128+N" {
	"$T/meter-run" --status-fd 3 -- sh -c 'sleep 31.7 & sleep 31.7' 3>"$status_file" &
	sup=$!
	wait_for '[ "$(running sleep 31.7)" = 2 ]'
	kill -TERM "$sup"
	rc=0
	wait "$sup" || rc=$?
	assert_equal "$rc" 143
	run -0 tail -1 "$status_file"
	assert_output --regexp '^\{"tool":"meter-run","event":"exit","code":143,"enforcement":"sampled, not hard","cancelled":true,'
	run -0 running sleep 31.7
	assert_output 0
}

@test "memory held in a tmpfs file is not resident in any process and is not counted" {
	# A documented limit of summing RSS: pages of a tmpfs file that no
	# process maps belong to no process. (Under sbx-ns the sandbox's
	# tmpfs is private; in sampled mode nothing meters it.)
	shm=/dev/shm/sbx-meter-test.$$
	run -0 --separate-stderr "$T/meter-run" --memory 16M --status-fd 3 -- \
		sh -c "head -c 33554432 /dev/zero >'$shm'; sleep 0.5" 3>"$status_file"
	assert_equal "$stderr" ""
	run -0 stat -c %s "$shm"
	assert_output 33554432
	rm -f "$shm"
	run -0 tail -1 "$status_file"
	assert_output --regexp '^\{"tool":"meter-run","event":"exit","code":0,'
}

@test "a tree that forks while it is being throttled is stopped whole" {
	# Forty sleepers and a busy loop at --cpu 10: the loop still gets
	# at most about a tenth of a core, so nobody keeps running through
	# a stop by being forked during the sweep.
	run -0 --separate-stderr chrt -f 20 "$T/meter-run" --cpu 10 -- chrt -f 10 sh -c \
		"for i in \$(seq 40); do (sleep 0.05; sleep 0.05) & done; '$T/meter-busy' 2; wait"
	assert_equal "$stderr" ""
	pct=${output#cpu }
	pct=${pct%\%}
	echo "busy loop among forks got $pct% of a core" >&3
	(( pct <= 20 ))
}

@test "a tree with more processes than --pids in one sample is LOST" {
	run -103 --separate-stderr "$T/meter-run" --pids 10 --status-fd 3 -- sh -c 'for i in $(seq 30); do sleep 31.7 & done; wait' 3>"$status_file"
	assert_regex "$stderr" "$(lost_msg pids 10 processes)"
	run -0 sed -n 2p "$status_file"
	assert_output --regexp '^\{"tool":"meter-run","event":"lost","reason":"pids","enforcement":"sampled, not hard","limit":10,"measured":[0-9]+\}$'
	run -0 running sleep 31.7
	assert_output 0
}

@test "a status reader that goes away does not take the supervisor with it" {
	run -3 --separate-stderr "$T/meter-run" --memory 1G --status-fd 3 -- sh -c 'sleep 0.3; exit 3' 3> >(exec true)
	assert_equal "$stderr" ""
}

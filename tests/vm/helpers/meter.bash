# The sampled meter's cases that run both on the host (tests/51-meter.bats:
# `load vm/helpers/meter`) and in the VM under Debian's kernel
# (tests/vm/51-meter.bats: `load helpers/meter`), driven by the test program
# meter-run ($T, the test programs; $status_file, the status fd's file).
# What a case reports on fd 3 names the VM's role when there is one.

# meter_lost_msg PROG REASON LIMIT [UNIT]: the line a lost sandbox ends with.
meter_lost_msg() {
	echo "^$1: fatal: sandbox lost: $2 limit exceeded: [0-9]+ ${4:-bytes} sampled, limit $3 \\(sampled, not hard\\)\$"
}

# A memory hog under --memory 64M: killed, LOST with exit 103, and said so
# in the lost and exit status lines.
meter_hog_lost() {
	run -103 --separate-stderr "$T/meter-run" --memory 64M --status-fd 3 -- "$T/meter-hog" 200 10 3>"$status_file"
	assert_regex "$stderr" "$(meter_lost_msg meter-run memory 67108864)"
	run -0 grep -c . "$status_file"
	assert_output 3
	run -0 sed -n 2p "$status_file"
	assert_output --regexp '^\{"tool":"meter-run","event":"lost","reason":"memory","enforcement":"sampled, not hard","limit":67108864,"measured":[0-9]+\}$'
	run -0 sed -n 3p "$status_file"
	assert_output --regexp '^\{"tool":"meter-run","event":"exit","code":103,"enforcement":"sampled, not hard","lost":"memory","limit":67108864,"measured":[0-9]+,'
}

# meter_busy_half [OUTER [INNER]]: a busy loop of 3 s under --cpu 50 gets
# 35-65% of a core, and the meter stopped it at times. OUTER and INNER
# (words: a chrt) go before meter-run and before the loop.
meter_busy_half() {
	local pct
	# shellcheck disable=SC2086
	run -0 --separate-stderr ${1-} "$T/meter-run" --cpu 50 --status-fd 3 -- ${2-} "$T/meter-busy" 3 3>"$status_file"
	assert_equal "$stderr" ""
	pct=${output#cpu }
	pct=${pct%\%}
	echo "busy loop got $pct% of a core${SBX_VM_ROLE:+ ($SBX_VM_ROLE)}" >&3
	(( pct >= 35 ))
	(( pct <= 65 ))
	run -0 tail -1 "$status_file"
	assert_output --regexp '"stopped_ms":[1-9][0-9]*,'
}

# meter_fill_lost WS: a filler writing 64 MiB into WS under --disk 4M is
# stopped, LOST, and what it wrote (more than the limit, less than all) is
# left in place.
meter_fill_lost() {
	local ws=$1 size
	run -103 --separate-stderr "$T/meter-run" --disk 4M --workspace "$ws" --status-fd 3 -- "$T/meter-fill" "$ws/fill" 64 3>"$status_file"
	assert_regex "$stderr" "$(meter_lost_msg meter-run disk 4194304)"
	refute_output --partial "wrote"
	size=$(stat -c %s "$ws/fill")
	echo "the filler had written $size bytes${SBX_VM_ROLE:+ ($SBX_VM_ROLE)}" >&3
	(( size > 4 << 20 ))
	(( size < 64 << 20 ))
	run -0 sed -n 2p "$status_file"
	assert_output --regexp '^\{"tool":"meter-run","event":"lost","reason":"disk","enforcement":"sampled, not hard","limit":4194304,"measured":[0-9]+\}$'
}

# meter_detach_unseen INTERVAL MS: one sample at once, the next INTERVAL
# seconds later; a grandchild touches 64 MiB and exits in between, the
# command ends MS milliseconds after it starts, before the second sample.
# The meter sees one sample and a tiny peak: the documented limit of
# sampling.
meter_detach_unseen() {
	local peak
	run -0 --separate-stderr "$T/meter-run" --interval "$1" --memory 16M --status-fd 3 -- "$T/meter-detach" 500 64 1 "$2" 3>"$status_file"
	assert_equal "$stderr" ""
	assert_line --index 0 --regexp '^grandchild [0-9]+$'
	assert_line --index 1 'touched 64 MiB'
	run -0 tail -1 "$status_file"
	assert_output --regexp '^\{"tool":"meter-run","event":"exit","code":0,"enforcement":"sampled, not hard","peak_memory":[0-9]+,"peak_disk":0,"cpu_ms":[0-9]+,"stopped_ms":0,"samples":1,"peak_procs":1,"leftover":0\}$'
	peak=$(sed 's/.*"peak_memory":\([0-9]*\).*/\1/' <<<"$output")
	(( peak < 16 << 20 ))
}

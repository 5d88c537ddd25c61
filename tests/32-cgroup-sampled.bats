#!/usr/bin/env bats
# sbx-cgroup --sampled: the meter of lib/meter/meter.c instead of a cgroup, for
# hosts like this one whose cgroup v2 tree has no controllers. It must say
# everywhere that it is sampled, not hard.

load helpers

setup() {
	T=$SBX_TESTBIN
	status_file=$BATS_TEST_TMPDIR/status
}

@test "a sampled run passes the command's exit code through and says it is not hard" {
	run -7 --separate-stderr sbx-cgroup --sampled --memory 64M --status-fd 3 -- sh -c 'exit 7' 3>"$status_file"
	assert_equal "$stderr" ""
	run -0 head -1 "$status_file"
	assert_output --regexp '^\{"tool":"sbx-cgroup","event":"start"'"$SBX_VER"',"pid":[0-9]+,"placement":"none","enforcement":"sampled, not hard"\}$'
	run -0 tail -1 "$status_file"
	assert_output --regexp '^\{"tool":"sbx-cgroup","event":"exit","code":7,"command_code":7,"enforcement":"sampled, not hard",'
}

@test "a memory hog is terminated and the sandbox reported lost" {
	run -103 --separate-stderr sbx-cgroup --sampled --memory 32M -- "$T/meter-hog" 256 10
	assert_equal "$stderr" "$(grep -o '^sbx-cgroup: fatal: sandbox lost: memory limit exceeded: [0-9]* bytes sampled, limit 33554432 (sampled, not hard)$' <<<"$stderr")"
	[ -n "$stderr" ]
}

@test "a sampled timeout kills the command and exits 104" {
	run -104 --separate-stderr sbx-cgroup --sampled --timeout 0.3 -- sleep 30
	assert_equal "$stderr" "sbx-cgroup: killed: timeout of 0.3 s reached"
}

@test "too many processes end a sampled run as lost" {
	run -103 --separate-stderr sbx-cgroup --sampled --pids 3 -- sh -c 'for i in 1 2 3 4 5 6; do sleep 5 & done; wait'
	assert_equal "$stderr" "$(grep -o '^sbx-cgroup: fatal: sandbox lost: pids limit exceeded: [0-9]* processes sampled, limit 3 (sampled, not hard)$' <<<"$stderr")"
	[ -n "$stderr" ]
}

@test "--sampled refuses the options of a cgroup" {
	run -100 --separate-stderr sbx-cgroup --sampled --root /sys/fs/cgroup -- true
	assert_equal "$stderr" "sbx-cgroup: usage: --sampled does not take --root"
	run -100 --separate-stderr sbx-cgroup --sampled --name x -- true
	assert_equal "$stderr" "sbx-cgroup: usage: --sampled does not take --name"
	run -100 --separate-stderr sbx-cgroup --sampled
	assert_equal "$stderr" "sbx-cgroup: usage: missing program"
	run -100 --separate-stderr sbx-cgroup --sampled --sampled -- true
	assert_equal "$stderr" "sbx-cgroup: usage: --sampled given twice"
	run -100 --separate-stderr sbx-cgroup --sampled --memory 0 -- true
	assert_equal "$stderr" "sbx-cgroup: usage: --memory: invalid size '0': zero not allowed"
}

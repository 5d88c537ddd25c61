#!/usr/bin/env bats
# sbx-cgroup on the host: bad input, and refusals. The host's cgroup v2 tree
# (/sys/fs/cgroup/unified) offers no cpu, memory or pids controller, so every
# requested limit must be refused there before the command runs. Only a
# scratch directory under it is created; the v1 hierarchies are never touched.
# Limits that hold are proven in the VM (tests/vm/30-sbx-cgroup.bats).

bats_require_minimum_version 1.5.0
load helpers

UNIFIED=/sys/fs/cgroup/unified

setup_file() {
	SCRATCH=$UNIFIED/sbx-test-cgroup-$$
	mkdir "$SCRATCH"
	export SCRATCH
}

teardown_file() {
	local d
	for d in "$SCRATCH"/*/; do [ -d "$d" ] && rmdir "$d"; done
	rmdir "$SCRATCH"
}

setup() {
	ran=$BATS_TEST_TMPDIR/ran
}

# Every bad value of OPT gives exit 100 and exactly MSG, and runs nothing.
bad() {
	local msg=$1
	shift
	run -100 --separate-stderr sbx-cgroup "$@" -- touch "$ran"
	assert_equal "$stderr" "sbx-cgroup: usage: $msg"
	assert_output ""
	assert_not_exist "$ran"
}

@test "--help prints the synopsis of the man page, then the options, and exits 0" {
	run -0 --separate-stderr sbx-cgroup --help
	assert_equal "$stderr" ""
	assert_equal "$(head -5 <<<"$output")" "usage: sbx-cgroup --root DIR --name NAME [OPTION]... [--] PROG [ARG]...
       sbx-cgroup --root DIR --parent NAME --create [OPTION]...
       sbx-cgroup --root DIR --parent NAME --destroy [--status-fd FD]
       sbx-cgroup --delegate DIR --user USER [--status-fd FD]
       sbx-cgroup --sampled [OPTION]... [--] PROG [ARG]..."
	assert_line "  --memory SIZE          memory.max, with swap off; K, M, G or T"
	local synopsis
	synopsis=$(sed -n '/^\.SH SYNOPSIS/,/^\.SH/p' "$SBX_ROOT/man/sbx-cgroup.1" | grep '^sbx-cgroup ')
	assert_equal "$synopsis" "$(head -5 <<<"$output" | sed 's/^usage: //; s/^ *//')"
}

@test "the program, --root and --name are required for running a command" {
	run -100 --separate-stderr sbx-cgroup
	assert_equal "$stderr" "sbx-cgroup: usage: missing --root"
	run -100 --separate-stderr sbx-cgroup --root "$SCRATCH" -- true
	assert_equal "$stderr" "sbx-cgroup: usage: missing --name"
	run -100 --separate-stderr sbx-cgroup --root "$SCRATCH" --name a
	assert_equal "$stderr" "sbx-cgroup: usage: missing program"
	run -100 --separate-stderr sbx-cgroup --root "$SCRATCH" --name a --
	assert_equal "$stderr" "sbx-cgroup: usage: missing program"
}

@test "unknown, short and repeated options are usage errors" {
	bad "unknown option --memroy" --root "$SCRATCH" --name a --memroy 1G
	bad "unknown option -m (options are long: --name)" --root "$SCRATCH" --name a -m 1G
	bad "--root given twice" --root "$SCRATCH" --root "$SCRATCH" --name a
	bad "--name given twice" --root "$SCRATCH" --name a --name b
	bad "--cpu given twice" --root "$SCRATCH" --name a --cpu 10 --cpu 20
	bad "--memory given twice" --root "$SCRATCH" --name a --memory 1G --memory 1G
	bad "--pids given twice" --root "$SCRATCH" --name a --pids 1 --pids 1
	bad "--timeout given twice" --root "$SCRATCH" --name a --timeout 1 --timeout 1
	bad "--create takes no value" --root "$SCRATCH" --parent p --create=yes
	run -100 --separate-stderr sbx-cgroup --root "$SCRATCH" --name a --cpu
	assert_equal "$stderr" "sbx-cgroup: usage: --cpu needs a value"
}

@test "--root must be an absolute path to a directory without symlinks" {
	bad "--root: invalid path '': empty" --root "" --name a
	bad "--root: invalid path 'sys/fs/cgroup': not absolute" --root sys/fs/cgroup --name a
	ln -s "$SCRATCH" "$BATS_TEST_TMPDIR/link"
	bad "--root: invalid path '$BATS_TEST_TMPDIR/link': contains a symlink" --root "$BATS_TEST_TMPDIR/link" --name a
	bad "--root: invalid path '$BATS_TEST_TMPDIR/link/': contains a symlink" --root "$BATS_TEST_TMPDIR/link/" --name a
	run -111 --separate-stderr sbx-cgroup --root "$UNIFIED/sbx-no-such-dir" --name a -- touch "$ran"
	assert_equal "$stderr" "sbx-cgroup: fatal: unable to open $UNIFIED/sbx-no-such-dir: No such file or directory"
	run -111 --separate-stderr sbx-cgroup --root "$UNIFIED/cgroup.procs" --name a -- touch "$ran"
	assert_equal "$stderr" "sbx-cgroup: fatal: unable to open $UNIFIED/cgroup.procs: Not a directory"
	assert_not_exist "$ran"
}

@test "a --root that is not on cgroup v2 is refused as hard limits unsupported" {
	local t=$BATS_TEST_TMPDIR/tmpfs
	mkdir "$t"
	mount -t tmpfs tmpfs "$t"
	run -101 --separate-stderr sbx-cgroup --root "$t" --name a --memory 1G -- touch "$ran"
	umount "$t"
	assert_equal "$stderr" "sbx-cgroup: fatal: hard limits unsupported: $t is not on a cgroup v2 file system"
	assert_not_exist "$ran"
	# the v1 hierarchies and the tmpfs holding them are not cgroup v2 either
	run -101 --separate-stderr sbx-cgroup --root /sys/fs/cgroup/memory --name a --memory 1G -- touch "$ran"
	assert_equal "$stderr" "sbx-cgroup: fatal: hard limits unsupported: /sys/fs/cgroup/memory is not on a cgroup v2 file system"
	run -101 --separate-stderr sbx-cgroup --root /sys/fs/cgroup --name a -- touch "$ran"
	assert_equal "$stderr" "sbx-cgroup: fatal: hard limits unsupported: /sys/fs/cgroup is not on a cgroup v2 file system"
	assert_not_exist "$ran"
}

@test "--name and --parent must be plain names that cannot clash with interface files" {
	local opt extra
	for opt in name parent; do
		extra=()
		[ $opt = name ] || extra=(--name a)
		bad "--$opt: invalid name '': empty" --root "$SCRATCH" --$opt "" "${extra[@]}"
		bad "--$opt: invalid name '..': contains '.'" --root "$SCRATCH" --$opt .. "${extra[@]}"
		bad "--$opt: invalid name 'a/b': contains '/'" --root "$SCRATCH" --$opt a/b "${extra[@]}"
		bad "--$opt: invalid name 'cpu.max': contains '.'" --root "$SCRATCH" --$opt cpu.max "${extra[@]}"
		bad "--$opt: invalid name '-x': starts with '-'" --root "$SCRATCH" --$opt=-x "${extra[@]}"
		bad "--$opt: invalid name 'a b': invalid character" --root "$SCRATCH" --$opt "a b" "${extra[@]}"
		# A control character never reaches the terminal raw.
		bad "--$opt: invalid name 'a\\x0a': invalid character" --root "$SCRATCH" --$opt "a"$'\n' "${extra[@]}"
		bad "--$opt: invalid name '$(printf 'x%.0s' {1..65})': longer than 64 characters" \
			--root "$SCRATCH" --$opt "$(printf 'x%.0s' {1..65})" "${extra[@]}"
	done
}

@test "--cpu takes a whole percentage of one core, 1 to 100000" {
	bad "--cpu: invalid percentage '': empty" --root "$SCRATCH" --name a --cpu ""
	bad "--cpu: invalid percentage '0': zero not allowed" --root "$SCRATCH" --name a --cpu 0
	bad "--cpu: invalid percentage '-50': negative" --root "$SCRATCH" --name a --cpu -50
	bad "--cpu: invalid percentage 'inf': not a number" --root "$SCRATCH" --name a --cpu inf
	bad "--cpu: invalid percentage 'max': not a number" --root "$SCRATCH" --name a --cpu max
	bad "--cpu: invalid percentage '99999999999999999999': overflow" --root "$SCRATCH" --name a --cpu 99999999999999999999
	bad "--cpu: invalid percentage '100001': too large" --root "$SCRATCH" --name a --cpu 100001
	bad "--cpu: invalid percentage '50x': trailing garbage" --root "$SCRATCH" --name a --cpu 50x
	bad "--cpu: invalid percentage '12.5': trailing garbage" --root "$SCRATCH" --name a --cpu 12.5
}

@test "--memory takes a size in bytes with an optional K, M, G or T" {
	bad "--memory: invalid size '': empty" --root "$SCRATCH" --name a --memory ""
	bad "--memory: invalid size '0': zero not allowed" --root "$SCRATCH" --name a --memory 0
	bad "--memory: invalid size '0G': zero not allowed" --root "$SCRATCH" --name a --memory 0G
	bad "--memory: invalid size '-1G': negative" --root "$SCRATCH" --name a --memory -1G
	bad "--memory: invalid size 'inf': not a number" --root "$SCRATCH" --name a --memory inf
	bad "--memory: invalid size '99999999999999999999': overflow" --root "$SCRATCH" --name a --memory 99999999999999999999
	bad "--memory: invalid size '16777216T': overflow" --root "$SCRATCH" --name a --memory 16777216T
	bad "--memory: invalid size '1025T': too large" --root "$SCRATCH" --name a --memory 1025T
	bad "--memory: invalid size '1Q': trailing garbage" --root "$SCRATCH" --name a --memory 1Q
	bad "--memory: invalid size '1.5G': fractions not allowed" --root "$SCRATCH" --name a --memory 1.5G
}

@test "--pids takes a number of processes, 1 to 4194304" {
	bad "--pids: invalid number '': empty" --root "$SCRATCH" --name a --pids ""
	bad "--pids: invalid number '0': zero not allowed" --root "$SCRATCH" --name a --pids 0
	bad "--pids: invalid number '-8': negative" --root "$SCRATCH" --name a --pids -8
	bad "--pids: invalid number 'max': not a number" --root "$SCRATCH" --name a --pids max
	bad "--pids: invalid number '99999999999999999999': overflow" --root "$SCRATCH" --name a --pids 99999999999999999999
	bad "--pids: invalid number '4194305': too large" --root "$SCRATCH" --name a --pids 4194305
	bad "--pids: invalid number '8k': trailing garbage" --root "$SCRATCH" --name a --pids 8k
}

@test "--timeout takes seconds with up to three decimals" {
	bad "--timeout: invalid duration '': empty" --root "$SCRATCH" --name a --timeout ""
	bad "--timeout: invalid duration '0': zero not allowed" --root "$SCRATCH" --name a --timeout 0
	bad "--timeout: invalid duration '0.000': zero not allowed" --root "$SCRATCH" --name a --timeout 0.000
	bad "--timeout: invalid duration '-1': negative" --root "$SCRATCH" --name a --timeout -1
	bad "--timeout: invalid duration 'inf': not a number" --root "$SCRATCH" --name a --timeout inf
	bad "--timeout: invalid duration '99999999999999999999': overflow" --root "$SCRATCH" --name a --timeout 99999999999999999999
	bad "--timeout: invalid duration '31622400.001': too large" --root "$SCRATCH" --name a --timeout 31622400.001
	bad "--timeout: invalid duration '1.2345': more than three decimals" --root "$SCRATCH" --name a --timeout 1.2345
	bad "--timeout: invalid duration '5s': trailing garbage" --root "$SCRATCH" --name a --timeout 5s
}

@test "fd options take an open fd above 2" {
	local o
	for o in status-fd ready-fd pass-fd; do
		bad "--$o: invalid fd '': empty" --root "$SCRATCH" --name a --$o ""
		bad "--$o: invalid fd '1': 0, 1 and 2 are stdio" --root "$SCRATCH" --name a --$o 1
		bad "--$o: invalid fd '-3': negative" --root "$SCRATCH" --name a --$o -3
		bad "--$o: invalid fd '97': not open; open it for the tool (in the shell: 97<FILE or 97>FILE, or a previous tool's --pass-fd 97)" --root "$SCRATCH" --name a --$o 97
		bad "--$o: invalid fd '9x': trailing garbage" --root "$SCRATCH" --name a --$o 9x
		bad "--$o: invalid fd '99999999999999999999': overflow" --root "$SCRATCH" --name a --$o 99999999999999999999
	done
	bad "--ready-fd: fd 7 is also --status-fd" --root "$SCRATCH" --name a --status-fd 7 --ready-fd 7 7>/dev/null
	bad "--status-fd given twice" --root "$SCRATCH" --name a --status-fd 7 --status-fd 7 7>/dev/null
	bad "--policy-fd: fd 7 is also --baseline-fd" --root "$SCRATCH" --name a --baseline-fd 7 --policy-fd 7 7</dev/null
	# --pass-fd hands its fd on: it may be the status fd the command writes
	# to as well (the README's chain), so parsing accepts it and the run goes
	# on to the host's missing cgroup v2 (101).
	run -101 --separate-stderr sbx-cgroup --root "$SCRATCH" --name a --status-fd 7 --pass-fd 7 --memory 64M -- true 7>/dev/null
	assert_equal "$stderr" "sbx-cgroup: fatal: hard limits unsupported: controller memory is not available in $SCRATCH"
}

@test "each mode takes only its own options" {
	bad "--create and --destroy exclude each other" --root "$SCRATCH" --parent p --create --destroy
	bad "--create needs --root" --parent p --create
	bad "--create needs --parent" --root "$SCRATCH" --create
	bad "--create does not take --name" --root "$SCRATCH" --parent p --name a --create
	bad "--create does not take --timeout" --root "$SCRATCH" --parent p --timeout 1 --create
	bad "--destroy does not take --memory" --root "$SCRATCH" --parent p --memory 1G --destroy
	bad "--destroy needs --parent" --root "$SCRATCH" --destroy
	bad "--user needs --delegate" --root "$SCRATCH" --name a --user 1000
	bad "--delegate needs --user" --delegate "$SCRATCH/d"
	bad "--delegate does not take --root" --delegate "$SCRATCH/d" --root "$SCRATCH" --user 1000
	bad "--delegate does not take --memory" --delegate "$SCRATCH/d" --memory 1G --user 1000
}

@test "--create, --destroy and --delegate take no program" {
	bad "--create takes no program" --root "$SCRATCH" --parent p --create
	bad "--destroy takes no program" --root "$SCRATCH" --parent p --destroy
	bad "--delegate takes no program" --delegate "$SCRATCH/d" --user 1000
	assert_not_exist "$SCRATCH/p"
	assert_not_exist "$SCRATCH/d"
}

@test "--delegate needs an absolute cgroup path, a known non-root user, and root" {
	run -100 --separate-stderr sbx-cgroup --delegate "" --user 1000
	assert_equal "$stderr" "sbx-cgroup: usage: --delegate: invalid path '': empty"
	run -100 --separate-stderr sbx-cgroup --delegate d --user 1000
	assert_equal "$stderr" "sbx-cgroup: usage: --delegate: invalid path 'd': not absolute"
	run -100 --separate-stderr sbx-cgroup --delegate "$SCRATCH/cpu.max" --user 1000
	assert_equal "$stderr" "sbx-cgroup: usage: --delegate: invalid path '$SCRATCH/cpu.max': contains '.'"
	run -100 --separate-stderr sbx-cgroup --delegate "$SCRATCH/d" --user ""
	assert_equal "$stderr" "sbx-cgroup: usage: --user: invalid user '': empty"
	run -100 --separate-stderr sbx-cgroup --delegate "$SCRATCH/d" --user sbx-no-such-user
	assert_equal "$stderr" "sbx-cgroup: usage: --user: invalid user 'sbx-no-such-user': unknown"
	run -100 --separate-stderr sbx-cgroup --delegate "$SCRATCH/d" --user 0
	assert_equal "$stderr" "sbx-cgroup: usage: --user: invalid user '0': root needs no delegation"
	run -100 --separate-stderr sbx-cgroup --delegate "$SCRATCH/d" --user root
	assert_equal "$stderr" "sbx-cgroup: usage: --user: invalid user 'root': root needs no delegation"
	run -100 --separate-stderr sbx-cgroup --delegate "$SCRATCH/d" --user 4294967295
	assert_equal "$stderr" "sbx-cgroup: usage: --user: invalid user '4294967295': too large"
	sbx_test_user
	run -102 --separate-stderr as_user sbx-cgroup --delegate "$SCRATCH/d" --user 1000
	assert_equal "$stderr" "sbx-cgroup: fatal: refusing to delegate: only root can; to fix: run sbx-cgroup --delegate as root, once, for uid 1000"
	assert_not_exist "$SCRATCH/d"
}

@test "every requested limit is refused on the host's controller-less cgroup v2 tree, naming the controller" {
	run -101 --separate-stderr sbx-cgroup --root "$SCRATCH" --name a --memory 64M -- touch "$ran"
	assert_equal "$stderr" "sbx-cgroup: fatal: hard limits unsupported: controller memory is not available in $SCRATCH"
	run -101 --separate-stderr sbx-cgroup --root "$SCRATCH" --name a --cpu 50 -- touch "$ran"
	assert_equal "$stderr" "sbx-cgroup: fatal: hard limits unsupported: controller cpu is not available in $SCRATCH"
	run -101 --separate-stderr sbx-cgroup --root "$SCRATCH" --name a --pids 16 -- touch "$ran"
	assert_equal "$stderr" "sbx-cgroup: fatal: hard limits unsupported: controller pids is not available in $SCRATCH"
	run -101 --separate-stderr sbx-cgroup --root "$SCRATCH/" --name a --pids 16 --memory 1G --cpu 200 -- touch "$ran"
	assert_equal "$stderr" "sbx-cgroup: fatal: hard limits unsupported: controller cpu is not available in $SCRATCH"
	run -101 --separate-stderr sbx-cgroup --root "$SCRATCH" --parent p --name a --memory 64M -- touch "$ran"
	assert_equal "$stderr" "sbx-cgroup: fatal: hard limits unsupported: controller memory is not available in $SCRATCH"
	run -101 --separate-stderr sbx-cgroup --root "$SCRATCH" --parent p --create --pids 8
	assert_equal "$stderr" "sbx-cgroup: fatal: hard limits unsupported: controller pids is not available in $SCRATCH"
	assert_not_exist "$ran"
	assert_not_exist "$SCRATCH/a"
	assert_not_exist "$SCRATCH/p"
}

@test "the refusal is the same for an unprivileged user" {
	sbx_test_user
	run -101 --separate-stderr as_user sbx-cgroup --root "$SCRATCH" --name a --memory 64M -- touch "$ran"
	assert_equal "$stderr" "sbx-cgroup: fatal: hard limits unsupported: controller memory is not available in $SCRATCH"
	assert_not_exist "$SCRATCH/a"
}

@test "an existing child cgroup of the same name is not reused" {
	mkdir "$SCRATCH/busy"
	run -102 --separate-stderr sbx-cgroup --root "$SCRATCH" --name busy -- touch "$ran"
	rmdir "$SCRATCH/busy"
	assert_equal "$stderr" "sbx-cgroup: fatal: refusing to reuse $SCRATCH/busy: it exists already"
	assert_not_exist "$ran"
}

@test "without limits a command runs in its own cgroup, which is removed afterwards" {
	run -3 --separate-stderr sbx-cgroup --root "$SCRATCH" --name a --status-fd 7 \
		-- sh -c 'cat /proc/self/cgroup | grep ^0::; exit 3' 7>"$BATS_TEST_TMPDIR/st"
	assert_equal "$stderr" ""
	assert_output "0::/"
	run -0 grep -c '"event":"exit","code":3,"command_code":3,.*"cleanup":true}$' "$BATS_TEST_TMPDIR/st"
	assert_output 1
	assert_not_exist "$SCRATCH/a"
}

@test "a command that is not found gives 127 and the cgroup is still removed" {
	run -127 --separate-stderr sbx-cgroup --root "$SCRATCH" --name a -- sbx-no-such-command
	assert_equal "$stderr" "sbx-cgroup: fatal: unable to find sbx-no-such-command"
	assert_not_exist "$SCRATCH/a"
}

@test "--create and --destroy make and remove a parent that commands then share" {
	run -0 --separate-stderr sbx-cgroup --root "$SCRATCH" --parent p --create --status-fd 7 7>"$BATS_TEST_TMPDIR/st"
	assert_equal "$stderr" ""
	run -0 cat "$BATS_TEST_TMPDIR/st"
	assert_output "{\"tool\":\"sbx-cgroup\",\"event\":\"exit\"$SBX_VER,\"code\":0,\"cgroup\":\"$SCRATCH/p\",\"created\":true}"
	assert_dir_exist "$SCRATCH/p"
	run -0 --separate-stderr sbx-cgroup --root "$SCRATCH" --parent p --name a -- cat "$SCRATCH/p/a/cgroup.type"
	assert_output "domain"
	assert_not_exist "$SCRATCH/p/a"
	run -0 --separate-stderr sbx-cgroup --root "$SCRATCH" --parent p --destroy
	assert_equal "$stderr" ""
	assert_not_exist "$SCRATCH/p"
	run -111 --separate-stderr sbx-cgroup --root "$SCRATCH" --parent p --destroy
	assert_equal "$stderr" "sbx-cgroup: fatal: unable to open $SCRATCH/p: No such file or directory"
}

@test "--pass-fd hands an fd to the command; the status and ready fds are not passed" {
	run -0 --separate-stderr sbx-cgroup --root "$SCRATCH" --name a --pass-fd 8 --status-fd 7 \
		--ready-fd 9 -- sh -c 'ls /proc/self/fd | sort -n | tr "\n" " "' 7>/dev/null 8>/dev/null 9>/dev/null
	assert_output --regexp '^0 1 2 (3 )?8 $'
}

@test "without clone3 the command is forked, placed in its cgroup, and only then runs" {
	run -0 --separate-stderr "$SBX_TESTBIN/cg-noclone3" sbx-cgroup --root "$SCRATCH" --name a \
		--status-fd 7 -- sh -c 'grep -qx $$ "$0/cgroup.procs" && echo placed' "$SCRATCH/a" \
		7>"$BATS_TEST_TMPDIR/st"
	assert_equal "$stderr" ""
	assert_output "placed"
	run -0 grep -c '"event":"start"'"$SBX_VER"',.*"placement":"fork"}$' "$BATS_TEST_TMPDIR/st"
	assert_output 1
	assert_not_exist "$SCRATCH/a"
}

@test "SIGKILL to sbx-cgroup takes a whole sbx-ns sandbox below it down" {
	sbx_test_user
	local ws i n=0 rc=0
	ws=$(sbx_scratch)
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$ws"
	sbx-cgroup --root "$SCRATCH" --name chain --status-fd 7 -- sbx-ns --uid "$SBX_TEST_UID" \
		--gid "$SBX_TEST_GID" --workspace "$ws" \
		-- sh -c 'sleep 1000 & setsid sleep 1000 & wait' 7>"$BATS_TEST_TMPDIR/st" &
	local sbx=$!
	# sbx-ns, its init, the shell and two sleeps
	wait_for '[ "$(grep -c . "$SCRATCH/chain/cgroup.procs" 2>/dev/null)" -ge 5 ]' ||
		fail "the sandbox did not start: $(grep -c . "$SCRATCH/chain/cgroup.procs") processes"
	kill -KILL "$sbx"
	wait "$sbx" || rc=$?
	assert_equal "$rc" 137
	wait_for 'grep -qx "populated 0" "$SCRATCH/chain/cgroup.events"' || :
	run -0 grep populated "$SCRATCH/chain/cgroup.events"
	assert_output "populated 0"
	# nobody was left to remove it: that is what --destroy or rmdir is for
	rmdir "$SCRATCH/chain"
	rm -rf "$ws"
}

# A command below sbx-ns that plants an executable hook and then outlives its run.
plant='mkdir -p .git/hooks; printf "#!/bin/sh\n" >.git/hooks/pre-commit; chmod 755 .git/hooks/pre-commit; touch planted'
moved="sbx-ns: warning: deny-write: the command created the protected path .git/hooks/pre-commit; moved it to .git/hooks/pre-commit.sbx-denied and cleared its execute bits"

chain_ws() {
	sbx_test_user
	ws=$(sbx_scratch)
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$ws"
}

@test "--timeout ends an sbx-ns below in order: its deny-write end check runs, exit 104" {
	chain_ws
	run -104 --separate-stderr sbx-cgroup --root "$SCRATCH" --name chain --timeout 1 --status-fd 7 \
		-- sbx-ns --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" --workspace "$ws" \
		-- sh -c "$plant; sleep 1000 & setsid sleep 1000 & exec sleep 1000" 7>"$BATS_TEST_TMPDIR/st"
	assert_equal "$stderr" "$moved
sbx-cgroup: killed: timeout of 1 s reached"
	assert_not_exist "$ws/.git/hooks/pre-commit"
	run -0 stat -c %A "$ws/.git/hooks/pre-commit.sbx-denied"
	assert_output "-rw-r--r--"
	run -0 grep -c '"event":"exit","code":104,.*"timed_out":true,"cancelled":false,"leftovers_killed":false,"grace_ms":5000,"grace_expired":false,.*"cleanup":true}$' "$BATS_TEST_TMPDIR/st"
	assert_not_exist "$SCRATCH/chain"
	rm -rf "$ws"
}

@test "cancelling sbx-cgroup (SIGTERM) ends an sbx-ns below in order: its end check runs, exit 143" {
	chain_ws
	local rc=0
	sbx-cgroup --root "$SCRATCH" --name chain --status-fd 7 -- sbx-ns --uid "$SBX_TEST_UID" \
		--gid "$SBX_TEST_GID" --workspace "$ws" -- sh -c "$plant; exec sleep 1000" \
		7>"$BATS_TEST_TMPDIR/st" 2>"$BATS_TEST_TMPDIR/err" &
	local sbx=$!
	wait_for '[ -e "$ws/planted" ]'
	kill -TERM "$sbx"
	wait "$sbx" || rc=$?
	assert_equal "$rc" 143
	run -0 cat "$BATS_TEST_TMPDIR/err"
	assert_output "$moved"
	assert_not_exist "$ws/.git/hooks/pre-commit"
	run -0 grep -c '"cancelled":true,"cancel_signal":15,"leftovers_killed":false,"grace_ms":5000,"grace_expired":false,' "$BATS_TEST_TMPDIR/st"
	assert_not_exist "$SCRATCH/chain"
	rm -rf "$ws"
}

@test "a direct child that ignores SIGTERM gains only the grace: killed at its end, said, exit 104" {
	run -104 --separate-stderr sbx-cgroup --root "$SCRATCH" --name a --timeout 0.5 --status-fd 7 \
		-- sh -c 'exec 2>/dev/null; trap "" TERM; while :; do sleep 1; done' 7>"$BATS_TEST_TMPDIR/st"
	assert_equal "$stderr" "sbx-cgroup: warning: sh (pid $(sed -n 's/.*"event":"start".*"pid":\([0-9]*\).*/\1/p' "$BATS_TEST_TMPDIR/st")) was still running at the end of its grace of 5 s after SIGTERM; killed it (if it was sbx-ns, its deny-write end check did not finish: sbx-ns --recover on that workspace, or its next run, does it)
sbx-cgroup: killed: timeout of 0.5 s reached"
	run -0 grep -c '"timed_out":true,.*"grace_ms":5000,"grace_expired":true,.*"cleanup":true}$' "$BATS_TEST_TMPDIR/st"
	assert_not_exist "$SCRATCH/a"
}

@test "a second cancelling signal cuts the grace short" {
	local rc=0
	sbx-cgroup --root "$SCRATCH" --name a --status-fd 7 -- sh -c 'trap "touch \"\$0.term\"" TERM; touch "$0"; while :; do sleep 1; done' \
		"$ran" 7>"$BATS_TEST_TMPDIR/st" 2>"$BATS_TEST_TMPDIR/err" &
	local sbx=$!
	wait_for '[ -e "$ran" ]'
	# sh outlives the first (its trap notes it); the second comes only once
	# the grace runs: sent together, both could be pending and SIGINT, the
	# lower number, read first
	kill -TERM "$sbx"
	wait_for '[ -e "$ran.term" ]'
	kill -INT "$sbx"
	wait "$sbx" || rc=$?
	assert_equal "$rc" 143
	run -0 grep -c '"grace_expired":true,' "$BATS_TEST_TMPDIR/st"
	run -0 grep -c 'was still running at a second cancelling signal after SIGTERM' "$BATS_TEST_TMPDIR/err"
}

@test "after SIGKILL of the whole chain sbx-ns --recover makes the planted hook inert, and says so" {
	chain_ws
	sbx-cgroup --root "$SCRATCH" --name chain -- sbx-ns --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" \
		--workspace "$ws" -- sh -c "$plant; exec sleep 1000" 2>/dev/null &
	local sbx=$!
	wait_for '[ -e "$ws/planted" ]'
	kill -KILL "$sbx" $(cat "$SCRATCH/chain/cgroup.procs")
	wait "$sbx" || :
	run -0 stat -c %A "$ws/.git/hooks/pre-commit"
	assert_output "-rwxr-xr-x"
	run -0 --separate-stderr sbx-ns --recover --workspace "$ws" --status-fd 7 7>"$BATS_TEST_TMPDIR/st"
	assert_equal "$stderr" "sbx-ns: warning: deny-write: an earlier run's command (killed) created the protected path .git/hooks/pre-commit; moved it to .git/hooks/pre-commit.sbx-denied and cleared its execute bits"
	assert_not_exist "$ws/.git/hooks/pre-commit"
	run -0 tail -1 "$BATS_TEST_TMPDIR/st"
	assert_output '{"tool":"sbx-ns","event":"exit","code":0,"recover":true}'
	# nothing left to take over
	run -0 --separate-stderr sbx-ns --recover --workspace "$ws"
	assert_equal "$stderr" ""
	wait_for 'grep -qx "populated 0" "$SCRATCH/chain/cgroup.events"'
	rmdir "$SCRATCH/chain"
	rm -rf "$ws"
}

@test "sbx-ns --recover takes only the workspace and the status fd" {
	local ws
	ws=$(sbx_scratch)
	run -100 --separate-stderr sbx-ns --recover --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: usage: --recover takes no program"
	run -100 --separate-stderr sbx-ns --recover --workspace "$ws" --net none
	assert_equal "$stderr" "sbx-ns: usage: --recover takes only --workspace or --workspace-fd, and --status-fd, not --net"
	run -100 --separate-stderr sbx-ns --recover
	assert_equal "$stderr" "sbx-ns: usage: missing --workspace or --workspace-fd"
	run -100 --separate-stderr sbx-ns --recover --recover --workspace "$ws"
	assert_regex "$stderr" '^sbx-ns: usage: .*--recover'
	run -100 --separate-stderr sbx-ns --recover --workspace relative
	assert_regex "$stderr" "^sbx-ns: usage: --workspace: invalid path 'relative'"
	rm -rf "$ws"
}

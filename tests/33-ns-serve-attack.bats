#!/usr/bin/env bats
# sbx-ns --serve under attack: a command inside goes for the sandbox's
# pid 1 and the control socket; hand-made clients speak the protocol
# wrongly (tests/serve-raw.py); a client of another uid; clients that go
# away at every step; pid 1 killed from the host while a command runs.

bats_require_minimum_version 1.5.0
load helpers
load ns

RAW="$SBX_ROOT/tests/serve-raw.py"

# A living sandbox: attack_up root|user [sbx-ns options...]. Sets SOCK,
# SRV_PID, SRV_DIR and SRV_P1 (its pid 1 on the host, from the
# namespaces line) and returns once it is ready.
attack_up() {
	local mode=$1 line
	shift
	SRV_DIR=$(mktemp -d "$NS_DIR/srv.XXXXXX")
	chmod 0700 "$SRV_DIR"
	SOCK=$SRV_DIR/s
	mkfifo "$SRV_DIR/ready"
	if [ "$mode" = root ]; then
		sbx-ns --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" --workspace "$NS_WS" --ro "$NS_DIR/bin" \
			--serve "$SOCK" --ready-fd 3 --status-fd 4 "$@" \
			3>"$SRV_DIR/ready" 4>"$SRV_DIR/status" </dev/null >"$SRV_DIR/out" 2>"$SRV_DIR/err" &
	else
		chown "$SBX_TEST_UID:$SBX_TEST_GID" "$SRV_DIR"
		as_user sbx-ns --workspace "$NS_WS" --ro "$NS_DIR/bin" --serve "$SOCK" --ready-fd 3 --status-fd 4 "$@" \
			3>"$SRV_DIR/ready" 4>"$SRV_DIR/status" </dev/null >"$SRV_DIR/out" 2>"$SRV_DIR/err" &
	fi
	SRV_PID=$!
	read -r line <"$SRV_DIR/ready"
	SRV_P1=$(head -1 "$SRV_DIR/status" | sed -n 's/^{"tool":"sbx-ns","event":"namespaces","version":"[^"]*","pid":\([0-9]*\),.*/\1/p')
	[ -n "$SRV_P1" ]
}

attack_down() {
	run -0 sbx-ns --join "$SOCK" --stop
	wait "$SRV_PID"
	SRV_PID=
}

teardown() {
	if [ -n "${SRV_PID:-}" ]; then
		kill -9 "$SRV_PID" 2>/dev/null || true
		wait "$SRV_PID" 2>/dev/null || true
	fi
}

# Signals reach pid 1 (one Landlock domain holds it and its commands) and
# are dropped: init of its pid namespace takes no SIGKILL or SIGSTOP from
# inside and reads the rest only to ignore them.
@test "a command cannot trace, read, stop, kill or take an fd of pid 1, which serves on" {
	for mode in root user; do
		attack_up "$mode"
		run -0 --separate-stderr sbx-ns --join "$SOCK" -- sh -c \
			"for a in 'ptrace 1' 'vm-read 1' 'pidfd-getfd 1 3' 'mem 1' 'list /proc/1/fd' 'read /proc/1/environ' \
			 'signal 1 9' 'signal 1 15' 'signal 1 19'; do $NS_ATT \$a; done" </dev/null
		assert_output "ptrace: EPERM
vm-read: EPERM
pidfd-getfd: EPERM
mem: ENOENT
list: ENOENT
read: ENOENT
signal: ok
signal: ok
signal: ok"
		run -0 --separate-stderr sbx-ns --join "$SOCK" -- "$NS_ATT" euid </dev/null
		assert_output "euid: $SBX_TEST_UID"
		attack_down
		grep -q '"event":"denied","syscall":"ptrace","count":1' "$SRV_DIR/status"
	done
}

@test "pid 1 is not dumpable: its /proc files are root's while it runs as the test user" {
	for mode in root user; do
		attack_up "$mode"
		assert_equal "$(awk '/^Uid:/ { print $2 }' "/proc/$SRV_P1/status")" "$SBX_TEST_UID"
		assert_equal "$(stat -c %u "/proc/$SRV_P1/environ")" 0
		assert_equal "$(stat -c %u "/proc/$SRV_P1/mem")" 0
		attack_down
	done
}

@test "the control socket is the caller's, mode 0600, and nowhere inside the sandbox" {
	attack_up user
	assert_equal "$(stat -c '%a %u' "$SOCK")" "600 $SBX_TEST_UID"
	run -0 --separate-stderr sbx-ns --join "$SOCK" -- "$NS_ATT" list "$SRV_DIR" </dev/null
	assert_output "list: ENOENT"
	attack_down
}

@test "a client of another uid is refused and logged; the caller and root are served" {
	attack_up user
	run -102 --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=+dac_override \
		--ambient-caps=+dac_override sbx-ns --join "$SOCK" -- true
	assert_equal "$stderr" "sbx-ns: fatal: only uid $SBX_TEST_UID and root may join this sandbox"
	run -0 --separate-stderr as_user sbx-ns --join "$SOCK" -- "$NS_ATT" euid </dev/null
	assert_output "euid: $SBX_TEST_UID"
	run -0 --separate-stderr sbx-ns --join "$SOCK" -- "$NS_ATT" euid </dev/null
	assert_output "euid: $SBX_TEST_UID"
	attack_down
	assert_equal "$(cat "$SRV_DIR/err")" "sbx-ns: warning: refused a client of uid 65534 on $SOCK: only uid $SBX_TEST_UID and root may join this sandbox"
}

@test "malformed requests are refused one by one and the sandbox serves on" {
	attack_up root
	local c want
	while IFS='|' read -r c want; do
		run -0 python3 "$RAW" "$SOCK" $c
		assert_output "$want"
	done <<-'EOF'
	verb|error 100 invalid request: unknown verb 'bogus'
	unterminated|error 100 invalid request: not NUL-terminated words
	field|error 100 invalid request: unknown field 'x=1'
	nodash|error 100 missing program
	fds2|error 100 invalid request: 2 fds with it
	fds5|error 100 invalid request: too many fds
	words|error 100 invalid request: too many words
	argv|error 100 too many arguments (at most 4096)
	env|error 100 --setenv: more than 4096 variables
	tty|error 100 fd 0 is a terminal: a terminal never enters the sandbox (--pty gives the command one of its own)
	signal|error 100 invalid request: not NUL-terminated words
	empty|closed
	EOF
	run -0 --separate-stderr sbx-ns --join "$SOCK" -- "$NS_ATT" euid </dev/null
	assert_output "euid: $SBX_TEST_UID"
	# The client bounds the request itself: three arguments of 100,000 bytes.
	local big
	big=$(head -c 100000 /dev/zero | tr '\0' a)
	run -100 --separate-stderr sbx-ns --join "$SOCK" -- echo "$big" "$big" "$big"
	assert_equal "$stderr" "sbx-ns: usage: request too large (at most 262144 bytes)"
	attack_down
}

@test "a client that goes away before its answer takes its command with it" {
	attack_up root
	run -0 python3 "$RAW" "$SOCK" killstart
	run -137 sbx-ns --join "$SOCK" --wait-job 1
	run -0 sbx-ns --join "$SOCK" --jobs
	assert_output "1 ended 137 sleep 1000"
	attack_down
}

@test "the 257th client waits for a free slot; none is reset" {
	attack_up root
	run -0 python3 "$RAW" "$SOCK" hold 256
	assert_output "started"
	attack_down
}

@test "pid 1 killed from the host: the running command's client gets 103, the sandbox cleans up and exits 103" {
	attack_up root
	mkfifo "$SRV_DIR/up"
	sbx-ns --join "$SOCK" -- sh -c 'echo up; exec sleep 1000' >"$SRV_DIR/up" 2>"$SRV_DIR/client.err" </dev/null &
	local client=$! line
	read -r line <"$SRV_DIR/up"
	assert_equal "$line" "up"
	kill -9 "$SRV_P1"
	# wait, not run: a child is waited for by the shell that started it
	local rc=0
	wait "$client" || rc=$?
	assert_equal "$rc" 103
	assert_equal "$(cat "$SRV_DIR/client.err")" "sbx-ns: fatal: the sandbox was lost while the command ran"
	rc=0
	wait "$SRV_PID" || rc=$?
	assert_equal "$rc" 103
	SRV_PID=
	assert_equal "$(cat "$SRV_DIR/err")" "sbx-ns: fatal: the sandbox was lost: its pid 1 ended (Killed)"
	assert_file_not_exist "$SOCK"
	tail -1 "$SRV_DIR/status" | grep -qx '{"tool":"sbx-ns","event":"exit","code":103,"error":"the sandbox was lost: its pid 1 ended (Killed)"}'
}

@test "a later command sees and signals what an earlier one left running (one Landlock domain for the commands)" {
	attack_up user
	run -0 --separate-stderr sbx-ns --join "$SOCK" -- sh -c 'sleep 1000 >/dev/null 2>&1 & echo $! >/tmp/bg' </dev/null
	run -0 --separate-stderr sbx-ns --join "$SOCK" -- sh -c 'test -d /proc/$(cat /tmp/bg) && kill $(cat /tmp/bg) && echo killed' </dev/null
	assert_output "killed"
	attack_down
}

#!/usr/bin/env bats
# sbx-ns: the living sandbox. sbx-ns --serve PATH makes the sandbox once and
# waits; sbx-ns --join PATH runs one command in it, with the confinement of
# a one-shot command, its client's stdio, signals and exit code. What the
# sandbox keeps between commands (/tmp, HOME, processes, the environment),
# jobs, the first program, --ready-port and --connect, the deny-write check
# after each command, the stop (asked, SIGTERM, SIGKILL), the refusals of
# both sides, and who may join.

bats_require_minimum_version 1.5.0
load helpers
load ns

teardown() { bg_end; }

# A directory for one sandbox's socket (SRV/s) and its logs: 0700, owned by
# the identity that serves (ns_root: root, ns_user: the test user).
serve_dir() {
	local d
	d=$(mktemp -d "$NS_DIR/run.XXXXXX")
	chmod 0700 "$d"
	[ "$1" = ns_root ] || chown "$SBX_TEST_UID:$SBX_TEST_GID" "$d"
	echo "$d"
}

# sbx-ns itself for MODE, as an argv (not a function, so that a background
# one's $! is sbx-ns and a signal sent to it reaches it): SBX_CMD.
sbx_cmd() {
	if [ "$1" = ns_root ]; then
		SBX_CMD=("$SBX_BIN/sbx-ns" --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID")
	else
		SBX_CMD=(setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" --init-groups --reset-env --
			 env PATH="$SBX_BIN:/usr/local/bin:/usr/bin:/bin" "$SBX_BIN/sbx-ns")
	fi
}

# serve MODE [run options...] [-- first program...]: start a living sandbox
# at $SRV/s (SOCK) in the background and wait for its ready line. Its status
# lines go to $SRV/status, its stdout and stderr to $SRV/out and $SRV/err;
# SRV_PID is the serving sbx-ns, CLIENT the argv of a client of the same
# identity (join runs it).
serve() {
	local mode=$1 line
	shift
	SRV=$(serve_dir "$mode")
	SOCK=$SRV/s
	mkfifo "$SRV/ready"
	sbx_cmd "$mode"
	"${SBX_CMD[@]}" --serve "$SOCK" --ready-fd 6 --status-fd 5 "$@" \
		6>"$SRV/ready" 5>"$SRV/status" <"/dev/null" >"$SRV/out" 2>"$SRV/err" 3>&- &
	SRV_PID=$!
	BG_PIDS+=("$SRV_PID")
	if [ "$mode" = ns_root ]; then
		CLIENT=("$SBX_BIN/sbx-ns" --join "$SOCK")
	else
		CLIENT=(setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" --init-groups --reset-env --
			env PATH="$SBX_BIN:/usr/local/bin:/usr/bin:/bin" "$SBX_BIN/sbx-ns" --join "$SOCK")
	fi
	# One newline, then EOF; EOF alone means it failed before ready.
	read -r line <"$SRV/ready" || {
		echo "serve: not ready: $(cat "$SRV/err")" >&2
		return 1
	}
}

# The client of the current sandbox, as its server's identity.
join() {
	"${CLIENT[@]}" "$@"
}

# Nothing, not even a socket, at path $1 (bats-file's file asserts look
# at regular files only).
assert_gone() {
	assert [ ! -e "$1" ]
}

# The server's end: its exit code must be $1.
serve_end() {
	local rc=0
	wait "$SRV_PID" || rc=$?
	assert_equal "$rc" "$1"
}

# --stop, then: the client and the server exit 0, PATH is gone, and no
# process is left in the sandbox's pid namespace.
stop_clean() {
	local ns
	ns=$(srv_pidns)
	run -0 --separate-stderr join --stop
	assert_output ""
	assert_equal "$stderr" ""
	serve_end 0
	assert_gone "$SOCK"
	assert_equal "$(pidns_members "$ns")" ""
}

# The sandbox's pid namespace (its inode, from the namespaces status line)
# and the host pid of its pid 1.
srv_pidns() {
	jq -r 'select(.event == "namespaces") | .ns.pid' "$SRV/status"
}
srv_pid1() {
	jq -r 'select(.event == "namespaces") | .pid' "$SRV/status"
}

# The host pids of every process in the pid namespace of inode $1, zombies
# left out (the sandbox's pid 1 stays one until the host's init reaps it,
# once its parent, the server, was killed).
pidns_members() {
	local p k v
	for p in $(stat -L -c '%i %n' /proc/[0-9]*/ns/pid 2>/dev/null |
		   awk -v ino="$1" '$1 == ino { split($2, a, "/"); print a[3] }'); do
		while read -r k v _; do
			[ "$k" = State: ] && break
		done <"/proc/$p/status" 2>/dev/null || continue
		[ "$v" = Z ] || echo "$p"
	done
	:
}

# The members of pid namespace $1 whose command line is $2 (words, spaces).
pidns_running() {
	local p
	for p in $(pidns_members "$1"); do
		[ "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" = "$2 " ] && echo "$p"
	done
	:
}

# $1 with the characters an ERE gives a meaning escaped (for paths).
ere() {
	sed 's/[.[\*^$()+?{}|]/\\&/g' <<<"$1"
}

@test "--serve: namespaces, started, ready, each command's start and end on the status fd; --stop ends everything and removes PATH" {
	local mode ws
	for mode in ns_root ns_user; do
		ws=$(ns_ws)
		serve "$mode" --workspace "$ws" --ro "$NS_DIR/bin"
		assert_socket_exist "$SOCK"
		assert_equal "$(stat -c %a:%u "$SOCK")" "600:$([ "$mode" = ns_root ] && echo 0 || echo "$SBX_TEST_UID")"
		run -0 --separate-stderr join -- "$NS_ATT" cwd
		assert_output "cwd: $ws"
		assert_equal "$stderr" ""
		# A second --serve on a served PATH is refused, naming the stop.
		run -100 --separate-stderr "${SBX_CMD[@]}" --workspace "$ws" --serve "$SOCK" -- sh -c 'exit 9'
		assert_equal "$stderr" "sbx-ns: usage: --serve: invalid path '$SOCK': a sandbox is serving there (sbx-ns --join $SOCK --stop stops it)"
		stop_clean
		assert_equal "$(cat "$SRV/err")" ""
		run -0 cat "$SRV/status"
		assert_line --index 0 --regexp '^\{"tool":"sbx-ns","event":"namespaces"'"$SBX_VER"',"pid":[0-9]+,"ns":\{"user":[0-9]+,"mnt":[0-9]+,"pid":[0-9]+,"ipc":[0-9]+,"uts":[0-9]+,"net":[0-9]+,"cgroup":[0-9]+\}\}$'
		assert_line --index 1 --regexp "^\\{\"tool\":\"sbx-ns\",\"event\":\"started\",\"landlock\":[1-9][0-9]*,\"seccomp\":true,\"net\":\"none\",\"hidepid\":true,\"mounts\":\"(new|classic)\",\"userns\":\"blocked\",\"uid\":$SBX_TEST_UID,\"gid\":$SBX_TEST_GID,\"serve\":\"$(ere "$SOCK")\"\\}\$"
		assert_line --index 2 '{"tool":"sbx-ns","event":"ready"}'
		assert_line --index 3 --regexp "^\\{\"tool\":\"sbx-ns\",\"event\":\"command\",\"id\":1,\"pid\":[0-9]+,\"argv\":\"$(ere "$NS_ATT") cwd\"\\}\$"
		assert_line --index 4 --regexp '^\{"tool":"sbx-ns","event":"command-exit","id":1,"pid":[0-9]+,"code":0\}$'
		assert_line --index 5 '{"tool":"sbx-ns","event":"exit","code":0}'
		assert_equal "${#lines[@]}" 6
	done
}

@test "each command is confined as a one-shot command is: the test user, no capabilities, no new privileges, seccomp, no user namespaces" {
	local mode ws
	for mode in ns_root ns_user; do
		ws=$(ns_ws)
		serve "$mode" --workspace "$ws" --ro "$NS_DIR/bin"
		run -0 --separate-stderr join -- sh -c \
			"awk '/^(Cap...|NoNewPrivs|Seccomp):/ { print \$1, \$2 }' /proc/self/status; $NS_ATT euid; $NS_ATT unshare-user; $NS_ATT write /x; $NS_ATT write $ws/ok"
		assert_output "CapInh: 0000000000000000
CapPrm: 0000000000000000
CapEff: 0000000000000000
CapBnd: 0000000000000000
CapAmb: 0000000000000000
NoNewPrivs: 1
Seccomp: 2
euid: $SBX_TEST_UID
unshare-user: EPERM
write: EROFS
write: ok"
		assert_equal "$stderr" ""
		assert_equal "$(stat -c %u:%g "$ws/ok")" "$SBX_TEST_UID:$SBX_TEST_GID"
		stop_clean
	done
}

@test "the sandbox keeps /tmp, HOME, processes left running and its --setenv between commands; a command's --setenv and --cwd are its own" {
	local mode ws ns
	for mode in ns_root ns_user; do
		ws=$(ns_ws)
		serve "$mode" --workspace "$ws" --setenv SRV_VAR=s1
		ns=$(srv_pidns)
		run -0 --separate-stderr join -- sh -c 'echo t > /tmp/t; echo h > "$HOME/h"; sleep 1000 >/dev/null 2>&1 &'
		assert_equal "$stderr" ""
		# The process the first command left is still in the sandbox.
		assert_equal "$(pidns_running "$ns" "sleep 1000" | wc -l)" 1
		run -0 --separate-stderr join --setenv CMD_VAR=c --setenv SRV_VAR=mine --cwd /tmp -- \
			sh -c 'cat /tmp/t "$HOME/h"; echo "$HOME ${SRV_VAR-unset} ${CMD_VAR-unset}"; pwd'
		assert_output "t
h
/tmp/home mine c
/tmp"
		run -0 --separate-stderr join -- sh -c 'cat /tmp/t "$HOME/h"; echo "$HOME ${SRV_VAR-unset} ${CMD_VAR-unset}"; pwd'
		assert_output "t
h
/tmp/home s1 unset
$ws"
		assert_equal "$(pidns_running "$ns" "sleep 1000" | wc -l)" 1
		stop_clean
	done
}

@test "a command's exit code is the client's: 0, N, 127 for a missing program, 128+N for signal N, 104 for --timeout (its process group goes)" {
	local mode ws pid1
	for mode in ns_root ns_user; do
		ws=$(ns_ws)
		serve "$mode" --workspace "$ws" --ro "$NS_DIR/bin"
		run -0 --separate-stderr join -- "$NS_ATT" exit 0
		run -7 --separate-stderr join -- "$NS_ATT" exit 7
		assert_equal "$stderr" ""
		run -127 --separate-stderr join -- no-such-program
		assert_equal "$stderr" "sbx-ns: fatal: unable to find no-such-program"
		run -127 --separate-stderr join -- /no/such/program
		assert_equal "$stderr" "sbx-ns: fatal: unable to exec /no/such/program: No such file or directory"
		run -137 --separate-stderr join -- "$NS_ATT" kill-self 9
		assert_equal "$stderr" ""
		run -143 --separate-stderr join -- "$NS_ATT" kill-self 15
		run -7 ns_fd5 join --status-fd 5 -- "$NS_ATT" exit 7
		assert_output "{\"tool\":\"sbx-ns\",\"event\":\"exit\"$SBX_VER,\"code\":7}"
		run -137 ns_fd5 join --status-fd 5 -- "$NS_ATT" kill-self 9
		assert_output "{\"tool\":\"sbx-ns\",\"event\":\"exit\"$SBX_VER,\"code\":137,\"signal\":9}"
		run -104 --separate-stderr join --timeout 0.2 -- sh -c 'sleep 100 & sleep 100'
		assert_equal "$stderr" "sbx-ns: killed: its --timeout expired: killed with its process group"
		# The status line says sbx killed it; a command that prints the
		# same words and exits 104 itself gets no such field.
		run -104 --separate-stderr ns_fd5 join --status-fd 5 --timeout 0.2 -- sleep 100
		assert_output "{\"tool\":\"sbx-ns\",\"event\":\"exit\"$SBX_VER,\"code\":104,\"signal\":9,\"killed\":\"its --timeout expired: killed with its process group\"}"
		assert_equal "$stderr" "sbx-ns: killed: its --timeout expired: killed with its process group"
		run -104 --separate-stderr ns_fd5 join --status-fd 5 -- sh -c 'echo "sbx-ns: killed: its --timeout expired: killed with its process group" >&2; exit 104'
		assert_output "{\"tool\":\"sbx-ns\",\"event\":\"exit\"$SBX_VER,\"code\":104}"
		assert_equal "$stderr" "sbx-ns: killed: its --timeout expired: killed with its process group"
		# Both sleeps went with the group: only pid 1 is left.
		pid1=$(srv_pid1)
		wait_for '[ "$(pidns_members "$(srv_pidns)")" = "$pid1" ]'
		run -0 --separate-stderr join --jobs
		assert_line "9 ended 104 sh -c sleep 100 & sleep 100"
		assert_line "10 ended 104 sleep 100"
		stop_clean
	done
}

pipe_in() {
	printf abc | join -- cat
}
pipe_big() {
	head -c 3000000 /dev/zero | join -- wc -c
}

@test "the command's stdin, stdout and stderr are the client's" {
	local mode ws
	for mode in ns_root ns_user; do
		ws=$(ns_ws)
		serve "$mode" --workspace "$ws"
		run -0 --separate-stderr pipe_in
		assert_output "abc"
		assert_equal "$stderr" ""
		run -0 --separate-stderr pipe_big
		assert_output "3000000"
		run -4 --separate-stderr join -- sh -c 'echo out; echo err >&2; exit 4'
		assert_output "out"
		assert_equal "$stderr" "err"
		stop_clean
	done
}

@test "--pty, or a client on a terminal, gives the command a terminal of the sandbox's own; the host's terminal never enters" {
	local ws
	ws=$(ns_ws)
	serve ns_root --workspace "$ws"
	run -3 --separate-stderr join --pty -- sh -c 'tty; stty size; ls -1 /dev/pts; exit 3'
	assert_equal "$(tr -d '\r' <<<"$output")" "/dev/pts/0
24 80
0
ptmx"
	assert_equal "$stderr" ""
	# From a terminal (script(1) gives the client one): a pty implied.
	run -0 script -qec "$SBX_BIN/sbx-ns --join $SOCK -- sh -c 'tty; read x; echo got \$x'" /dev/null <<<"hello"
	assert_line --regexp '^/dev/pts/[0-9]+.$'
	assert_line "got hello"$'\r'
	run -100 script -qec "$SBX_BIN/sbx-ns --join $SOCK --detach -- true" /dev/null </dev/null
	assert_output "sbx-ns: usage: --detach: fd 0 is a terminal, which never enters the sandbox: redirect it or give --stdout and --stderr"$'\r'
	stop_clean
	# A first program on a terminal is refused before anything is made.
	SRV=$(serve_dir ns_root)
	run -100 script -qec "$SBX_BIN/sbx-ns --uid $SBX_TEST_UID --gid $SBX_TEST_GID --workspace $ws --serve $SRV/s -- true" /dev/null </dev/null
	assert_output "sbx-ns: usage: --serve: the first program's stdin is a terminal, which never enters the sandbox: redirect it (for example >init.log 2>&1 </dev/null), or run the program with sbx-ns --join --pty once the sandbox is ready"$'\r'
	assert_gone "$SRV/s"
}

@test "the client's SIGTERM reaches the command; a client killed with SIGKILL takes its command with it (137)" {
	local mode ws c rc up
	for mode in ns_root ns_user; do
		ws=$(ns_ws)
		serve "$mode" --workspace "$ws"
		mkfifo "$SRV/up"
		"${CLIENT[@]}" -- sh -c 'trap "echo got TERM; exit 3" TERM; echo up; while :; do sleep 0.05; done' \
			>"$SRV/up" 2>/dev/null 3>&- &
		c=$!
		BG_PIDS+=("$c")
		exec 7<"$SRV/up"
		read -r up <&7
		assert_equal "$up" "up"
		kill -TERM "$c"
		rc=0
		wait "$c" || rc=$?
		assert_equal "$(cat <&7)" "got TERM"
		exec 7<&-
		assert_equal "$rc" 3

		"${CLIENT[@]}" -- sh -c 'echo up; exec sleep 1000' >"$SRV/up" 2>/dev/null 3>&- &
		c=$!
		BG_PIDS+=("$c")
		exec 7<"$SRV/up"
		read -r up <&7
		assert_equal "$up" "up"
		kill -KILL "$c"
		wait "$c" || :
		exec 7<&-
		# ids start at 1 and count the commands: this one is 2.
		run -137 --separate-stderr join --wait-job 2
		assert_equal "$stderr" ""
		assert_equal "$(pidns_running "$(srv_pidns)" "sleep 1000")" ""
		run -0 --separate-stderr join --jobs
		assert_output "1 ended 3 sh -c trap \"echo got TERM; exit 3\" TERM; echo up; while :; do sleep 0....
2 ended 137 sh -c echo up; exec sleep 1000"
		stop_clean
	done
}

# A listener inside that never accepts, with a backlog of 0: one queued
# connection fills it, and pid 1's next connect waits out its 2 s there.
HOLD_PY='import socket, time
s = socket.socket()
s.bind(("127.0.0.1", 9000))
s.listen(0)
time.sleep(1000)'

@test "--detach prints the job's id once the job has started: --wait-job and --kill-job right after it find it" {
	local ws pid1 hold
	ws=$(ns_ws)
	serve ns_root --workspace "$ws" --net loopback
	pid1=$(srv_pid1)
	run -0 join --detach --stdout /dev/null --stderr /dev/null -- python3 -c "$HOLD_PY"
	wait_for 'join --connect 9000 -- true 2>/dev/null'
	# pid 1 is held in a connect (SYN-SENT in the sandbox's netns) while
	# the next job's request waits behind it.
	join --connect 9000 -- true 2>/dev/null 3>&- &
	hold=$!
	BG_PIDS+=("$hold")
	wait_for '[ -n "$(nsenter --net=/proc/$pid1/ns/net ss -Htn state syn-sent "( dport = :9000 )")" ]'
	run -0 --separate-stderr join --detach --stdout /dev/null --stderr /dev/null -- sh -c 'exit 6'
	assert_output "2"
	run -6 --separate-stderr join --wait-job 2
	assert_equal "$stderr" ""
	run -0 --separate-stderr join --detach --stdout /dev/null --stderr /dev/null -- sleep 100
	assert_output "3"
	run -0 --separate-stderr join --kill-job 3
	run -143 --separate-stderr join --wait-job 3
	run -111 wait "$hold"
	stop_clean
}

@test "--detach runs a job that outlives its client: --jobs, --wait-job and --kill-job" {
	local mode ws c up rc
	for mode in ns_root ns_user; do
		ws=$(ns_ws)
		serve "$mode" --workspace "$ws"
		run -0 --separate-stderr join --detach --stdout /tmp/o --stderr /tmp/e -- sh -c 'echo out; echo err >&2; exit 5'
		assert_output "1"
		assert_equal "$stderr" ""
		run -5 --separate-stderr join --wait-job 1
		assert_output ""
		assert_equal "$stderr" ""
		# An ended job can be waited for again.
		run -5 --separate-stderr join --wait-job 1
		run -0 --separate-stderr join -- cat /tmp/o /tmp/e
		assert_output "out
err"
		run -0 --separate-stderr join --detach --stdout /dev/null --stderr /dev/null -- sleep 100
		assert_output "3"
		run -0 --separate-stderr join --detach --stdout /dev/null --stderr /dev/null -- sleep 200
		assert_output "4"
		run -0 --separate-stderr join --jobs
		assert_output "1 ended 5 sh -c echo out; echo err >&2; exit 5
2 ended 0 cat /tmp/o /tmp/e
3 running - sleep 100
4 running - sleep 200"
		run -0 --separate-stderr join --kill-job 3
		assert_output ""
		assert_equal "$stderr" ""
		run -143 --separate-stderr join --wait-job 3
		run -0 --separate-stderr join --kill-job 4 --signal 9
		run -137 --separate-stderr join --wait-job 4
		# Killing an ended job is not an error.
		run -0 --separate-stderr join --kill-job 4
		run -0 --separate-stderr join --jobs
		assert_output "1 ended 5 sh -c echo out; echo err >&2; exit 5
2 ended 0 cat /tmp/o /tmp/e
3 ended 143 sleep 100
4 ended 137 sleep 200"
		# A job with its client attached cannot be waited for by another.
		mkfifo "$SRV/up"
		"${CLIENT[@]}" -- sh -c 'echo up; exec sleep 1000' >"$SRV/up" 2>/dev/null 3>&- &
		c=$!
		BG_PIDS+=("$c")
		exec 7<"$SRV/up"
		read -r up <&7
		run -100 --separate-stderr join --wait-job 5
		assert_equal "$stderr" "sbx-ns: usage: job 5 has a client already"
		exec 7<&-
		stop_clean
		rc=0
		wait "$c" || rc=$?
		assert_equal "$rc" 103
	done
}

@test "--ready-port waits for a service started by the first program; --connect hands a host program a socket to it" {
	local mode ws
	for mode in ns_root ns_user; do
		ws=$(ns_ws)
		serve "$mode" --workspace "$ws" --net loopback --ready-port 8000 -- \
			sh -c 'python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 &'
		run -0 --separate-stderr join --connect 8000 -- sh -c 'printf "GET / HTTP/1.0\r\n\r\n" >&3; head -1 <&3 | tr -d "\r"'
		assert_output "HTTP/1.0 200 OK"
		assert_equal "$stderr" ""
		run -0 --separate-stderr join --connect 8000 --connect-fd 7 -- sh -c 'printf "GET / HTTP/1.0\r\n\r\n" >&7; head -1 <&7 | tr -d "\r"'
		assert_output "HTTP/1.0 200 OK"
		run -111 --separate-stderr join --connect 8001 -- true
		assert_output ""
		assert_equal "$stderr" "sbx-ns: fatal: unable to connect to 127.0.0.1:8001 in the sandbox: Connection refused"
		run -127 --separate-stderr join --connect 8000 -- no-such-program
		# The first program ended before ready; the service it left runs on.
		run -0 jq -r 'select(.event != "namespaces" and .event != "started") | .event + " " + (.id // "" | tostring)' "$SRV/status"
		assert_output "command 1
command-exit 1
ready "
		stop_clean
	done
}

@test "--ready-port: nothing answering within --ready-timeout is 103 and PATH goes; without the sandbox's own loopback it is refused" {
	local ws
	ws=$(ns_ws)
	SRV=$(serve_dir ns_root)
	run -103 --separate-stderr ns_root --workspace "$ws" --net loopback --serve "$SRV/s" --ready-port 8000 --ready-timeout 0.5 </dev/null
	assert_equal "$stderr" "sbx-ns: fatal: the sandbox did not become ready within 0.500 s: nothing accepted a connection on its 127.0.0.1:8000 (--ready-port, --ready-timeout)"
	assert_gone "$SRV/s"
	run -100 --separate-stderr ns_root --workspace "$ws" --serve "$SRV/s" --ready-port 8000 </dev/null
	assert_equal "$stderr" "sbx-ns: usage: --ready-port needs the sandbox's own loopback: --net loopback or --net broker"
	run -100 --separate-stderr ns_user --workspace "$ws" --ready-port 8000 -- true
	assert_equal "$stderr" "sbx-ns: usage: --ready-port needs --serve"
	assert_gone "$SRV/s"
}

@test "the first program runs first with the server's stdio; its failure stops the sandbox with its code" {
	local mode ws
	for mode in ns_root ns_user; do
		ws=$(ns_ws)
		serve "$mode" --workspace "$ws" -- sh -c 'echo init-out; echo init-err >&2; echo done > /tmp/init-done'
		run -0 --separate-stderr join -- cat /tmp/init-done
		assert_output "done"
		assert_equal "$(cat "$SRV/out")" "init-out"
		assert_equal "$(cat "$SRV/err")" "init-err"
		# The first program was job 1.
		run -0 --separate-stderr join --jobs
		assert_output "1 ended 0 sh -c echo init-out; echo init-err >&2; echo done > /tmp/init-done
2 ended 0 cat /tmp/init-done"
		stop_clean

		SRV=$(serve_dir "$mode")
		sbx_cmd "$mode"
		run -3 --separate-stderr "${SBX_CMD[@]}" --workspace "$ws" --serve "$SRV/s" --ready-fd 6 -- sh -c 'exit 3' 6>"$SRV/ready" </dev/null
		assert_output ""
		assert_equal "$stderr" "sbx-ns: warning: the first program (sh -c exit 3) exited 3: the sandbox stops"
		assert_gone "$SRV/s"
		# Never ready: the ready fd was closed without its newline.
		assert_equal "$(wc -c <"$SRV/ready")" 0
	done
}

@test "a first program that does not end within --ready-timeout: 103 and a message naming it" {
	local ws
	ws=$(ns_ws)
	SRV=$(serve_dir ns_root)
	run -103 --separate-stderr ns_root --workspace "$ws" --serve "$SRV/s" --ready-timeout 0.5 -- sleep 100 </dev/null
	assert_equal "$stderr" "sbx-ns: fatal: the sandbox did not become ready within 0.500 s: the first program did not end (--ready-timeout)"
	assert_gone "$SRV/s"
}

@test "--serve refuses a PATH that is not a new name in a directory of the caller's that the sandbox cannot see" {
	local ws d long
	ws=$(ns_ws)
	d=$(serve_dir ns_root)
	run -100 --separate-stderr ns_root --workspace "$ws" --serve rel/s -- sh -c 'exit 9'
	assert_equal "$stderr" "sbx-ns: usage: --serve: invalid path 'rel/s': not absolute"
	run -100 --separate-stderr ns_root --workspace "$ws" --serve '' -- sh -c 'exit 9'
	assert_equal "$stderr" "sbx-ns: usage: --serve: invalid path '': empty"
	run -100 --separate-stderr ns_root --workspace "$ws" --serve "$d/" -- sh -c 'exit 9'
	assert_equal "$stderr" "sbx-ns: usage: --serve: invalid path '$d': exists"
	touch "$d/file"
	run -100 --separate-stderr ns_root --workspace "$ws" --serve "$d/file" -- sh -c 'exit 9'
	assert_equal "$stderr" "sbx-ns: usage: --serve: invalid path '$d/file': exists"
	# A socket nothing listens on (its creator is gone).
	python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET).bind(sys.argv[1])' "$d/stale"
	run -100 --separate-stderr ns_root --workspace "$ws" --serve "$d/stale" -- sh -c 'exit 9'
	assert_equal "$stderr" "sbx-ns: usage: --serve: invalid path '$d/stale': exists, a socket nothing serves (left by a killed sandbox: remove it)"
	ln -s "$d" "$NS_DIR/link"
	run -100 --separate-stderr ns_root --workspace "$ws" --serve "$NS_DIR/link/s" -- sh -c 'exit 9'
	rm "$NS_DIR/link"
	assert_equal "$stderr" "sbx-ns: usage: --serve: invalid path '$NS_DIR/link/s': its directory is not canonical (a symlink, . or ..)"
	run -100 --separate-stderr ns_root --workspace "$ws" --serve "$d/../$(basename "$d")/s" -- sh -c 'exit 9'
	assert_equal "$stderr" "sbx-ns: usage: --serve: invalid path '$d/../$(basename "$d")/s': its directory is not canonical (a symlink, . or ..)"
	# Another user's directory, each way.
	run -100 --separate-stderr ns_root --workspace "$ws" --serve "$ws/s" -- sh -c 'exit 9'
	assert_equal "$stderr" "sbx-ns: usage: --serve: invalid path '$ws/s': the directory $ws is not the caller's (uid 0); use a directory of your own such as \$XDG_RUNTIME_DIR"
	run -100 --separate-stderr ns_user --workspace "$ws" --serve "$d/s" -- sh -c 'exit 9'
	assert_equal "$stderr" "sbx-ns: usage: --serve: invalid path '$d/s': the directory $d is not the caller's (uid $SBX_TEST_UID); use a directory of your own such as \$XDG_RUNTIME_DIR"
	chmod 0770 "$d"
	run -100 --separate-stderr ns_root --workspace "$ws" --serve "$d/s" -- sh -c 'exit 9'
	assert_equal "$stderr" "sbx-ns: usage: --serve: invalid path '$d/s': others may write the directory $d (chmod go-w $d)"
	chmod 0702 "$d"
	run -100 --separate-stderr ns_root --workspace "$ws" --serve "$d/s" -- sh -c 'exit 9'
	assert_equal "$stderr" "sbx-ns: usage: --serve: invalid path '$d/s': others may write the directory $d (chmod go-w $d)"
	chmod 0700 "$d"
	# sun_path holds 107 bytes and a NUL: 107 is served, 108 refused.
	long=$d/$(printf 'x%.0s' $(seq $((107 - ${#d} - 1))))
	assert_equal "${#long}" 107
	run -9 --separate-stderr ns_root --workspace "$ws" --serve "$long" -- sh -c 'exit 9'
	assert_equal "$stderr" "sbx-ns: warning: the first program (sh -c exit 9) exited 9: the sandbox stops"
	assert_gone "$long"
	run -100 --separate-stderr ns_root --workspace "$ws" --serve "${long}y" -- sh -c 'exit 9'
	assert_equal "$stderr" "sbx-ns: usage: --serve: invalid path '${long}y': too long for a socket (at most 107 bytes)"
	# Inside a root the sandbox sees: the workspace, --ro, --rw, the runtime.
	mkdir "$ws/root-owned"
	run -100 --separate-stderr ns_root --workspace "$ws" --serve "$ws/root-owned/s" -- sh -c 'exit 9'
	assert_equal "$stderr" "sbx-ns: usage: --serve: invalid path '$ws/root-owned/s': inside --workspace $ws, which the sandbox sees (the command could connect to it)"
	run -100 --separate-stderr ns_user --workspace "$ws" --serve "$ws/s" -- sh -c 'exit 9'
	assert_equal "$stderr" "sbx-ns: usage: --serve: invalid path '$ws/s': inside --workspace $ws, which the sandbox sees (the command could connect to it)"
	run -100 --separate-stderr ns_root --workspace "$ws" --ro "$NS_DIR/bin" --serve "$NS_DIR/bin/s" -- sh -c 'exit 9'
	assert_equal "$stderr" "sbx-ns: usage: --serve: invalid path '$NS_DIR/bin/s': inside --ro $NS_DIR/bin, which the sandbox sees (the command could connect to it)"
	run -100 --separate-stderr ns_root --workspace "$ws" --rw "$d" --serve "$d/s" -- sh -c 'exit 9'
	assert_equal "$stderr" "sbx-ns: usage: --serve: invalid path '$d/s': inside --rw $d, which the sandbox sees (the command could connect to it)"
	run -100 --separate-stderr ns_root --workspace "$ws" --serve /etc/sbx-serve-test -- sh -c 'exit 9'
	assert_equal "$stderr" "sbx-ns: usage: --serve: invalid path '/etc/sbx-serve-test': inside --runtime /etc, which the sandbox sees (the command could connect to it)"
	run -100 --separate-stderr ns_root --workspace "$ws" --serve "$d/s" --serve "$d/t" -- sh -c 'exit 9'
	assert_equal "$stderr" "sbx-ns: usage: --serve given twice"
	run -0 ls -A "$d"
	assert_output "file
stale"
}

@test "--join refuses bad requests with 100 and names what is wrong" {
	local ws
	ws=$(ns_ws)
	serve ns_root --workspace "$ws"
	run -100 --separate-stderr join
	assert_equal "$stderr" "sbx-ns: usage: missing program"
	run -100 --separate-stderr join --
	assert_equal "$stderr" "sbx-ns: usage: missing program"
	run -100 --separate-stderr join -- ''
	assert_equal "$stderr" "sbx-ns: usage: empty program name"
	run -100 --separate-stderr join --cwd rel -- true
	assert_equal "$stderr" "sbx-ns: usage: --cwd: invalid path 'rel': not absolute"
	run -100 --separate-stderr join --cwd /tmp --cwd /tmp -- true
	assert_equal "$stderr" "sbx-ns: usage: --cwd given twice"
	run -100 --separate-stderr join --setenv FOO -- true
	assert_equal "$stderr" "sbx-ns: usage: --setenv: invalid variable 'FOO': missing '='"
	run -100 --separate-stderr join --setenv 1A=b -- true
	assert_equal "$stderr" "sbx-ns: usage: --setenv: invalid variable '1A=b': bad name"
	run -100 --separate-stderr join --setenv A=1 --setenv A=2 -- true
	assert_equal "$stderr" "sbx-ns: usage: --setenv: variable A given twice"
	run -100 --separate-stderr join --stdout /tmp/o --stderr /tmp/e -- true
	assert_equal "$stderr" "sbx-ns: usage: --stdout and --stderr go with --detach"
	run -100 --separate-stderr join --detach --stdout /tmp/o -- true
	assert_equal "$stderr" "sbx-ns: usage: --stdout and --stderr go together"
	run -100 --separate-stderr join --detach --pty -- true
	assert_equal "$stderr" "sbx-ns: usage: --detach and --pty are exclusive"
	run -100 --separate-stderr join --signal 9 -- true
	assert_equal "$stderr" "sbx-ns: usage: --signal goes with --kill-job"
	run -100 --separate-stderr join --jobs -- true
	assert_equal "$stderr" "sbx-ns: usage: --jobs, --wait-job, --kill-job and --stop take no program"
	run -100 --separate-stderr join --jobs --stop
	assert_equal "$stderr" "sbx-ns: usage: --jobs, --wait-job, --kill-job, --stop and --connect are exclusive"
	run -100 --separate-stderr join --wait-job 1 --timeout 1
	assert_equal "$stderr" "sbx-ns: usage: --cwd, --setenv, --timeout, --memory, --pids, --cpu, --pty, --detach, --stdout and --stderr are for running a command"
	run -100 --separate-stderr join --wait-job 0
	assert_equal "$stderr" "sbx-ns: usage: --wait-job: invalid number '0': zero not allowed"
	run -100 --separate-stderr join --wait-job -1
	assert_equal "$stderr" "sbx-ns: usage: --wait-job: invalid number '-1': negative"
	run -100 --separate-stderr join --wait-job 99999999999
	assert_equal "$stderr" "sbx-ns: usage: --wait-job: invalid number '99999999999': too large"
	run -100 --separate-stderr join --wait-job 42
	assert_equal "$stderr" "sbx-ns: usage: no job 42 in this sandbox (sbx-ns --join PATH --jobs lists them)"
	run -100 --separate-stderr join --kill-job 42
	assert_equal "$stderr" "sbx-ns: usage: no job 42 in this sandbox (sbx-ns --join PATH --jobs lists them)"
	run -100 --separate-stderr join --timeout 0 -- true
	assert_equal "$stderr" "sbx-ns: usage: --timeout: invalid duration '0': zero not allowed"
	run -100 --separate-stderr join --connect 80 -- true
	assert_equal "$stderr" "sbx-ns: usage: --connect needs a sandbox with its own loopback (--net loopback or --net broker)"
	run -100 --separate-stderr join --connect-fd 4 -- true
	assert_equal "$stderr" "sbx-ns: usage: --connect-fd goes with --connect"
	run -100 --separate-stderr join --bogus -- true
	assert_equal "$stderr" "sbx-ns: usage: unknown option --bogus"
	run -100 --separate-stderr sbx-ns --join rel -- true
	assert_equal "$stderr" "sbx-ns: usage: --join: invalid path 'rel': not absolute"
	run -103 --separate-stderr sbx-ns --join "$SRV/none" -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to join $SRV/none: No such file or directory (no sandbox serves there: start one with sbx-ns ... --serve $SRV/none)"
	# None of them started a command: the jobs are empty, the next id is 1.
	run -0 --separate-stderr join --jobs
	assert_output ""
	run -0 --separate-stderr join --detach --stdout /dev/null --stderr /dev/null -- true
	assert_output "1"
	stop_clean
}

@test "100 clients at once each get their own command's output and exit code" {
	local ws d i fails=0 pids=() bad=""
	ws=$(ns_ws)
	serve ns_root --workspace "$ws"
	d=$SRV/outs
	mkdir "$d"
	for i in $(seq 100); do
		"${CLIENT[@]}" -- sh -c "echo $i; exit $((i % 7))" >"$d/$i" 2>"$d/e$i" 3>&- &
		pids+=($!)
	done
	for i in $(seq 100); do
		rc=0
		wait "${pids[i - 1]}" || rc=$?
		[ "$rc" = $((i % 7)) ] || bad="$bad $i:rc=$rc"
		[ "$(cat "$d/$i")" = "$i" ] || bad="$bad $i:out=$(cat "$d/$i")"
		[ ! -s "$d/e$i" ] || bad="$bad $i:err=$(cat "$d/e$i")"
	done
	assert_equal "$bad" ""
	run -0 --separate-stderr join --jobs
	assert_equal "${#lines[@]}" 100
	refute_line --partial running
	stop_clean
}

@test "deny-write runs after each command: a hook the command creates is moved aside before its client returns" {
	local mode ws
	for mode in ns_root ns_user; do
		# In a repo the hooks directory is read-only.
		ws=$(ns_repo)
		serve "$mode" --workspace "$ws" --ro "$NS_DIR/bin"
		run -0 --separate-stderr join -- "$NS_ATT" write .git/hooks/post-checkout
		assert_output "write: EROFS"
		assert_gone "$ws/.git/hooks/post-checkout"
		stop_clean

		# Where the command makes .git itself, what it made is moved aside.
		ws=$(ns_ws)
		serve "$mode" --workspace "$ws"
		run -0 --separate-stderr join -- sh -c 'mkdir -p .git/hooks; printf "#!/bin/sh\n" > .git/hooks/post-checkout; chmod 755 .git/hooks/post-checkout'
		assert_equal "$stderr" ""
		assert_gone "$ws/.git/hooks/post-checkout"
		assert_file_exist "$ws/.git/hooks/post-checkout.sbx-denied"
		assert_equal "$(stat -c %a "$ws/.git/hooks/post-checkout.sbx-denied")" 644
		assert_equal "$(cat "$SRV/err")" "sbx-ns: warning: deny-write: the command created the protected path .git/hooks/post-checkout; moved it to .git/hooks/post-checkout.sbx-denied and cleared its execute bits"
		run -0 grep -c '"event":"deny-write","path":".git/hooks/post-checkout","action":"moved aside"' "$SRV/status"
		assert_output 1
		# The next command sees it moved too.
		run -0 --separate-stderr join -- ls -A .git/hooks
		assert_output "post-checkout.sbx-denied"
		stop_clean
	done
}

@test "the server stops on SIGTERM: commands and jobs end, their clients get 103, PATH goes, exit 0" {
	local mode ws c up ns rc
	for mode in ns_root ns_user; do
		ws=$(ns_ws)
		serve "$mode" --workspace "$ws"
		ns=$(srv_pidns)
		run -0 --separate-stderr join -- sh -c 'sleep 1000 >/dev/null 2>&1 &'
		run -0 --separate-stderr join --detach --stdout /dev/null --stderr /dev/null -- sleep 1001
		mkfifo "$SRV/up"
		"${CLIENT[@]}" -- sh -c 'echo up; exec sleep 1002' >"$SRV/up" 2>"$SRV/client-err" 3>&- &
		c=$!
		BG_PIDS+=("$c")
		exec 7<"$SRV/up"
		read -r up <&7
		exec 7<&-
		assert_equal "$(pidns_members "$ns" | wc -l)" 4
		kill -TERM "$SRV_PID"
		serve_end 0
		rc=0
		wait "$c" || rc=$?
		assert_equal "$rc" 103
		assert_equal "$(cat "$SRV/client-err")" "sbx-ns: fatal: the sandbox stopped while the command ran"
		assert_gone "$SOCK"
		assert_equal "$(pidns_members "$ns")" ""
		assert_equal "$(jq -c 'select(.event == "exit")' "$SRV/status")" '{"tool":"sbx-ns","event":"exit","code":0}'
	done
}

@test "the server's parent dies: its parent-death signal, SIGTERM, stops the sandbox as --stop does, and PATH goes" {
	local mode ws ns parent
	for mode in ns_root ns_user; do
		ws=$(ns_ws)
		SRV=$(serve_dir "$mode")
		SOCK=$SRV/s
		mkfifo "$SRV/ready"
		sbx_cmd "$mode"
		# A parent that waits for the server, as a script that starts one does.
		sh -c '"$@" & wait' sh "${SBX_CMD[@]}" --workspace "$ws" --serve "$SOCK" --ready-fd 6 --status-fd 5 \
			6>"$SRV/ready" 5>"$SRV/status" </dev/null >"$SRV/out" 2>"$SRV/err" 3>&- &
		parent=$!
		BG_PIDS+=("$parent")
		read -r _ <"$SRV/ready"
		CLIENT=("${SBX_CMD[@]}" --join "$SOCK")
		[ "$mode" = ns_root ] && CLIENT=("$SBX_BIN/sbx-ns" --join "$SOCK")
		ns=$(srv_pidns)
		run -0 --separate-stderr join -- sh -c 'sleep 1000 >/dev/null 2>&1 &'
		kill -KILL "$parent"
		wait "$parent" || :
		wait_for 'jq -e "select(.event == \"exit\")" "$SRV/status" >/dev/null'
		assert_gone "$SOCK"
		assert_equal "$(pidns_members "$ns")" ""
		assert_equal "$(jq -c 'select(.event == "exit")' "$SRV/status")" '{"tool":"sbx-ns","event":"exit","code":0}'
	done
}

@test "a server killed with SIGKILL: the sandbox goes, PATH stays as a socket nothing serves, a new server on a new PATH works" {
	local mode ws ns old
	for mode in ns_root ns_user; do
		ws=$(ns_ws)
		serve "$mode" --workspace "$ws"
		ns=$(srv_pidns)
		run -0 --separate-stderr join -- sh -c 'echo kept > kept; sleep 1000 >/dev/null 2>&1 &'
		kill -KILL "$SRV_PID"
		serve_end 137
		wait_for '[ -z "$(pidns_members "$ns")" ]'
		old=$SOCK
		assert [ -S "$old" ]
		run -103 --separate-stderr join -- true
		assert_equal "$stderr" "sbx-ns: fatal: unable to join $old: Connection refused (no sandbox serves there: start one with sbx-ns ... --serve $old)"
		run -100 --separate-stderr "${SBX_CMD[@]}" --workspace "$ws" --serve "$old" -- sh -c 'exit 9'
		assert_equal "$stderr" "sbx-ns: usage: --serve: invalid path '$old': exists, a socket nothing serves (left by a killed sandbox: remove it)"
		serve "$mode" --workspace "$ws"
		run -0 --separate-stderr join -- cat kept
		assert_output "kept"
		stop_clean
		assert [ -S "$old" ]
	done
}

@test "only the server's uid and root may join: the test user cannot reach root's sandbox, root joins the test user's" {
	local ws
	ws=$(ns_ws)
	serve ns_root --workspace "$ws"
	run -102 --separate-stderr as_user sbx-ns --join "$SOCK" -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to join $SOCK: Permission denied"
	# Even with the directory open to all, the socket itself is 0600.
	chmod 0755 "$SRV"
	run -102 --separate-stderr as_user sbx-ns --join "$SOCK" -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to join $SOCK: Permission denied"
	chmod 0700 "$SRV"
	stop_clean

	serve ns_user --workspace "$ws" --ro "$NS_DIR/bin"
	run -0 --separate-stderr sbx-ns --join "$SOCK" -- "$NS_ATT" euid
	assert_output "euid: $SBX_TEST_UID"
	stop_clean
}

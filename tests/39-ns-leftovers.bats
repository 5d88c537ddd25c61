#!/usr/bin/env bats
# sbx-ns leaves nothing on the host: after every way a run ends (its end,
# its command killed, a refusal, --dry-run, SIGTERM to its process group,
# SIGKILL of sbx-ns, a living sandbox stopped or killed, sbx-session stop)
# the caller's record directory (root: /run/sbx-ns, a user: /tmp/sbx-ns-UID)
# holds nothing of that run once the next run has started; the one thing
# kept is the kept tree of a workspace that is still there (a cost saved,
# gone with the workspace), and the directory goes with the last run that
# leaves it empty. The runs are made in a mount namespace of this file's
# own whose /run and /tmp are fresh: what is listed is exactly what sbx
# made, whatever other runs on this host do.

bats_require_minimum_version 1.5.0
load helpers
load ns

setup_file() {
	ns_setup_file
	# The tools run from a copy outside /tmp, which the namespace below
	# replaces: the checkout may be anywhere, /tmp included.
	mkdir -m 0755 "$NS_DIR/tools"
	cp -p "$SBX_BIN"/* "$SBX_ROOT/contrib/session/sbx-session" "$NS_DIR/tools/"
	export SBX_BIN="$NS_DIR/tools" SESSION="$NS_DIR/tools/sbx-session"
	PATH="$SBX_BIN:$PATH"
	mkfifo "$NS_DIR/hold" "$NS_DIR/ready"
	unshare -m --propagation private sh -c 'mount -t tmpfs -o mode=0755 tmpfs /run &&
		mount -t tmpfs -o mode=1777 tmpfs /tmp && rm -rf /run/mount && echo up >"$1" && read -r _ <"$2"' \
		sh "$NS_DIR/ready" "$NS_DIR/hold" </dev/null >/dev/null 2>&1 3>&- &
	LO_PID=$!
	read -r _ <"$NS_DIR/ready"
	export LO_PID
}

teardown_file() {
	echo >"$NS_DIR/hold"
	ns_teardown_file
}

# Each test starts from nothing (what a failed one left is not the next's).
setup() {
	lo sh -c 'rm -rf /run/* /tmp/*'
}

teardown() {
	local s
	bg_end
	# A session a failed test left: stopped, its directory removed.
	for s in "${LO_SESSIONS[@]}"; do
		lo_session "${s%% *}" stop "${s#* }/sess" >/dev/null 2>&1 || :
		rm -rf "${s#* }"
	done
	LO_SESSIONS=()
}

# In this file's mount namespace.
lo() {
	nsenter -t "$LO_PID" -m -- "$@"
}

# The argv of sbx-ns in that namespace as WHO (root, the command as the
# test user; or user): LO_ARGV, for background runs whose $! is sbx-ns.
lo_argv() {
	if [ "$1" = root ]; then
		LO_ARGV=(nsenter -t "$LO_PID" -m -- sbx-ns --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID")
	else
		LO_ARGV=(nsenter -t "$LO_PID" -m -- setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID"
			--init-groups --reset-env -- env PATH="$SBX_BIN:/usr/local/bin:/usr/bin:/bin" sbx-ns)
	fi
}

# sbx-ns as WHO in that namespace.
lo_ns() {
	lo_argv "$1"
	shift
	"${LO_ARGV[@]}" "$@"
}

# WHO's record directory.
lo_dir() {
	if [ "$1" = root ]; then echo /run/sbx-ns; else echo "/tmp/sbx-ns-$SBX_TEST_UID"; fi
}

ws_key() {
	echo "$(stat -c %D "$1")-$(printf %x "$(stat -c %i "$1")")"
}

# Everything in the namespace's /run and /tmp, sorted; the workspaces given
# are named A, B, C... in the names (tree-A, ws-A-RUN: a record's pid and
# start are RUN).
lo_ls() {
	local args=(-e 's/^$//') n w
	n=A
	for w in "$@"; do
		args+=(-e "s/-$(ws_key "$w")\$/-$n/" -e "s/-$(ws_key "$w")-[0-9]*-[0-9a-f]*\$/-$n-RUN/")
		n=$(echo "$n" | tr A-Y B-Z)
	done
	lo find /run /tmp -mindepth 1 | sed "${args[@]}" | LC_ALL=C sort
}

# A fifo in the workspace the command writes a line to once it runs, then
# waits on for one line back.
hold_fifo() {
	rm -f "$1/up"
	mkfifo -m 0666 "$1/up"
}
HOLD='echo up >up; exec cat up >/dev/null'

# The next run as WHO on workspace WS: what is there while its command
# runs (LO_DURING, listed with the workspaces given after WS, WS first);
# its own end, code and stderr in LO_RC and LO_ERR.
lo_next() {
	local who=$1 ws=$2 p
	shift 2
	hold_fifo "$ws"
	lo_argv "$who"
	"${LO_ARGV[@]}" --workspace "$ws" -- sh -c "$HOLD" 2>"$NS_DIR/next.err" 3>&- &
	p=$!
	BG_PIDS+=("$p")
	read -r _ <"$ws/up"
	LO_DURING=$(lo_ls "$ws" "$@")
	echo >"$ws/up"
	LO_RC=0
	wait "$p" || LO_RC=$?
	LO_ERR=$(cat "$NS_DIR/next.err")
	rm -f "$ws/up"
}

# A directory for a living sandbox's socket, WHO's own, 0700.
srv_dir() {
	local d
	d=$(mktemp -d "$NS_DIR/srv.XXXXXX")
	chmod 0700 "$d"
	[ "$1" = root ] || chown "$SBX_TEST_UID:$SBX_TEST_GID" "$d"
	echo "$d"
}

# sbx-ns --recover as WHO in that namespace.
lo_recover() {
	if [ "$1" = root ]; then
		shift
		lo sbx-ns --recover "$@"
	else
		shift
		lo_ns user --recover "$@"
	fi
}

# Workspaces gone, --recover on a fresh one: nothing is left at all.
assert_all_gone() {
	local ws
	rm -rf "$@"
	ws=$(ns_ws)
	run -0 --separate-stderr lo_recover "$WHO" --workspace "$ws"
	assert_equal "$stderr" ""
	run -0 lo_ls
	assert_output ""
	rm -rf "$ws"
}

# The sandbox's pid 1 is gone (or a zombie: its namespace is empty).
pid1_gone() {
	local s
	s=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 0
	[ -z "$s" ] || [ "$s" = Z ]
}

@test "a run that ends, its command killed or not: only the kept tree of its workspace, gone with the workspace" {
	local a b D
	for WHO in root user; do
		D=$(lo_dir "$WHO")
		a=$(ns_ws)
		run -0 --separate-stderr lo_ns "$WHO" --workspace "$a" -- true
		assert_equal "$stderr" ""
		run -0 lo_ls "$a"
		assert_output "$D
$D/tree-A"
		run -137 --separate-stderr lo_ns "$WHO" --workspace "$a" -- sh -c 'kill -KILL $$'
		run -0 lo_ls "$a"
		assert_output "$D
$D/tree-A"
		# Its workspace removed: the next run, on another, drops its tree.
		b=$(ns_ws)
		rm -rf "$a"
		lo_next "$WHO" "$b"
		assert_equal "$LO_DURING" "$D
$D/ws-A-RUN"
		assert_equal "$LO_RC $LO_ERR" "0 "
		run -0 lo_ls "$b"
		assert_output "$D
$D/tree-A"
		assert_all_gone "$b"
	done
}

@test "refusals and --dry-run leave nothing, before or after the record directory is made, and at clone (106)" {
	local ws srv
	for WHO in root user; do
		ws=$(ns_ws)
		run -100 --separate-stderr lo_ns "$WHO" --workspace
		run -0 lo_ls
		assert_output ""
		run -0 --separate-stderr lo_ns "$WHO" --workspace "$ws" --dry-run -- true
		run -0 lo_ls
		assert_output ""
		# The socket's path exists: refused after the records were read.
		srv=$(srv_dir "$WHO")
		touch "$srv/s"
		run -100 --separate-stderr lo_ns "$WHO" --workspace "$ws" --serve "$srv/s"
		assert_equal "$stderr" "sbx-ns: usage: --serve: invalid path '$srv/s': exists"
		run -0 lo_ls
		assert_output ""
		rm -rf "$srv"
		# A nested .git that is a fifo: refused while the start is planned.
		mkdir "$ws/p"
		mkfifo "$ws/p/.git"
		run -102 --separate-stderr lo_ns "$WHO" --workspace "$ws" -- true
		assert_equal "$stderr" "sbx-ns: fatal: unable to protect p/.git in the workspace: it is a fifo"
		run -0 lo_ls
		assert_output ""
		rm -rf "$ws"
	done
	# No namespaces for this caller: refused at clone, its record made and gone.
	ws=$(ns_ws)
	chmod 0777 "$ws"
	run -106 --separate-stderr lo unshare -Ur sh -c 'echo 1 >/proc/sys/user/max_user_namespaces &&
		exec unshare --user --map-user=1000 --map-group=1000 sbx-ns --workspace "$1" -- true' sh "$ws"
	assert_equal "${stderr%%;*}" "sbx-ns: fatal: unable to create namespaces: No space left on device"
	run -0 lo_ls
	assert_output ""
	rm -rf "$ws"
}

@test "SIGTERM to the caller's process group (the caller dies of it first: sbx-ns gets its parent-death signal) or to sbx-ns's own: the end check runs, the record goes" {
	local ws p pg sp D rc group
	for WHO in root user; do
		D=$(lo_dir "$WHO")
		for group in caller own; do
			ws=$(ns_ws)
			hold_fifo "$ws"
			lo_argv "$WHO"
			if [ "$group" = caller ]; then
				setsid bash -c '"$@"; exit $?' bash "${LO_ARGV[@]}" --workspace "$ws" -- \
					sh -c 'echo L >.env.term; '"$HOLD" 2>"$NS_DIR/err" 3>&- &
			else
				setsid "${LO_ARGV[@]}" --workspace "$ws" -- \
					sh -c 'echo L >.env.term; '"$HOLD" 2>"$NS_DIR/err" 3>&- &
			fi
			p=$!
			BG_PIDS+=("$p")
			read -r _ <"$ws/up"
			run -0 lo_ls "$ws"
			assert_output "$D
$D/ws-A-RUN"
			pg=$(ps -o pgid= -p "$p" | tr -d ' ')
			sp=$p
			[ "$group" = own ] || sp=$(pgrep -P "$p")
			kill -TERM -- "-$pg"
			rc=0
			wait "$p" || rc=$?
			assert_equal "$rc" 143
			# The caller may be gone before sbx-ns is: wait for sbx-ns's end.
			wait_for "[ ! -e /proc/$sp ]"
			run -0 lo_ls "$ws"
			assert_output "$D
$D/tree-A"
			assert_equal "$(cat "$NS_DIR/err")" "sbx-ns: warning: deny-write: the command created the protected path .env.term; moved it to .env.term.sbx-denied"
			assert_all_gone "$ws"
		done
	done
}

# A run as WHO on workspace $2 whose command runs script $3, then holds;
# its sbx-ns SIGKILLed, and its pid 1 gone.
lo_killed() {
	local p pid1 rc
	hold_fifo "$2"
	: >"$NS_DIR/st"
	lo_argv "$1"
	"${LO_ARGV[@]}" --workspace "$2" --status-fd 5 -- sh -c "$3; $HOLD" 5>"$NS_DIR/st" 2>/dev/null 3>&- &
	p=$!
	BG_PIDS+=("$p")
	read -r _ <"$2/up"
	pid1=$(sed -n 's/.*"event":"namespaces"[^{]*,"pid":\([0-9]*\).*/\1/p' "$NS_DIR/st")
	kill -KILL "$p"
	rc=0
	wait "$p" || rc=$?
	assert_equal "$rc" 137
	wait_for "pid1_gone $pid1"
	rm -f "$2/up"
}

@test "SIGKILL of sbx-ns: a run on another workspace leaves its record and says nothing; the next run on its own workspace does its end check and removes it" {
	local a b D
	for WHO in root user; do
		D=$(lo_dir "$WHO")
		a=$(ns_ws)
		b=$(ns_ws)
		lo_killed "$WHO" "$a" 'echo L >.env.killed'
		run -0 lo_ls "$a"
		assert_output "$D
$D/ws-A-RUN"
		# Another workspace's run: nothing done on a, nothing said.
		lo_next "$WHO" "$b" "$a"
		assert_equal "$LO_DURING" "$D
$D/ws-A-RUN
$D/ws-B-RUN"
		assert_equal "$LO_RC $LO_ERR" "0 "
		assert_equal "$(cat "$a/.env.killed")" L
		run -0 lo_ls "$a" "$b"
		assert_output "$D
$D/tree-B
$D/ws-A-RUN"
		# a's own next run: before its command starts.
		lo_next "$WHO" "$a" "$b"
		assert_equal "$LO_DURING" "$D
$D/tree-B
$D/ws-A-RUN"
		assert_equal "$LO_RC" 0
		assert_equal "$LO_ERR" "sbx-ns: warning: deny-write: an earlier run's command (killed) created the protected path .env.killed; moved it to .env.killed.sbx-denied"
		assert_file_exist "$a/.env.killed.sbx-denied"
		run -0 lo_ls "$a" "$b"
		assert_output "$D
$D/tree-A
$D/tree-B"
		assert_all_gone "$a" "$b"
	done
}

@test "--recover on one workspace takes over a killed run's record of another; every line and status event names that workspace as another" {
	local a b D busy="Resource busy"
	# EBUSY's text is musl's in the static build, glibc's in the dynamic one
	[ "$SBX_STATIC" = 1 ] || busy="Device or resource busy"
	for WHO in root user; do
		D=$(lo_dir "$WHO")
		a=$(ns_ws)
		b=$(ns_ws)
		lo_killed "$WHO" "$a" 'echo L >.env.moved; echo L >.env.left; echo L >.env.pinned'
		# One the command did not make (the host's now), one pinned by a
		# bind mount on the host: left, and failed.
		chown 0:0 "$a/.env.left"
		# (mount(8) keeps a note in /run/mount, which is not sbx's)
		lo sh -c 'mount --bind "$1" "$1" && rm -rf /run/mount' sh "$a/.env.pinned"
		run -0 --separate-stderr lo_recover "$WHO" --workspace "$b" --status-fd 5 5>"$NS_DIR/st"
		assert_equal "$stderr" "sbx-ns: warning: deny-write: in another workspace, $a, the protected path .env.left appeared during a run but belongs to another user; left as it is
sbx-ns: warning: deny-write: in another workspace, $a, an earlier run's command (killed) created the protected path .env.moved; moved it to .env.moved.sbx-denied
sbx-ns: warning: deny-write: in another workspace, $a, unable to make the protected path .env.pinned inert (rename: $busy); it is live under its real name: remove it before git runs in $a"
		# (the first line says the version)
		run -0 sed 's/,"version":"[^"]*"//' "$NS_DIR/st"
		assert_output '{"tool":"sbx-ns","event":"deny-write","path":".env.left","action":"left","reason":"belongs to another user","earlier_run":true,"workspace":"'"$a"'"}
{"tool":"sbx-ns","event":"deny-write","path":".env.moved","action":"moved aside","moved_to":".env.moved.sbx-denied","exec_cleared":false,"earlier_run":true,"workspace":"'"$a"'"}
{"tool":"sbx-ns","event":"deny-write","path":".env.pinned","action":"failed","reason":"rename: '"$busy"'","exec_cleared":false,"earlier_run":true,"workspace":"'"$a"'"}
{"tool":"sbx-ns","event":"exit","code":0,"recover":true}'
		# The failed one keeps the record: a's next run refuses until it can.
		run -0 lo_ls "$a"
		assert_output "$D
$D/ws-A-RUN"
		lo sh -c 'umount "$1" && rm -rf /run/mount' sh "$a/.env.pinned"
		run -0 --separate-stderr lo_recover "$WHO" --workspace "$b"
		assert_equal "$stderr" "sbx-ns: warning: deny-write: in another workspace, $a, the protected path .env.left appeared during a run but belongs to another user; left as it is
sbx-ns: warning: deny-write: in another workspace, $a, an earlier run's command (killed) created the protected path .env.pinned; moved it to .env.pinned.sbx-denied"
		run -0 lo_ls "$a"
		assert_output ""
		assert_all_gone "$a" "$b"
	done
}

# A living sandbox as WHO on workspace $2, its socket in a directory of
# WHO's; waits for its ready line. SRV_PID is the serving sbx-ns, CLIENT
# a client's argv, SRV_PID1 the host pid of its pid 1.
lo_serve() {
	local line
	SRV=$(srv_dir "$1")
	mkfifo "$SRV/ready"
	lo_argv "$1"
	"${LO_ARGV[@]}" --workspace "$2" --serve "$SRV/s" --ready-fd 6 --status-fd 5 \
		6>"$SRV/ready" 5>"$SRV/status" </dev/null >/dev/null 2>"$SRV/err" 3>&- &
	SRV_PID=$!
	BG_PIDS+=("$SRV_PID")
	read -r line <"$SRV/ready"
	SRV_PID1=$(sed -n 's/.*"event":"namespaces"[^{]*,"pid":\([0-9]*\).*/\1/p' "$SRV/status")
	CLIENT=("${LO_ARGV[@]}" --join "$SRV/s")
	[ "$1" != root ] || CLIENT=(nsenter -t "$LO_PID" -m -- sbx-ns --join "$SRV/s")
}

@test "a living sandbox stopped, sent SIGTERM or SIGKILLed: nothing of it once the next run has started" {
	local a b D how rc
	for WHO in root user; do
		D=$(lo_dir "$WHO")
		for how in stop term kill; do
			a=$(ns_ws)
			b=$(ns_ws)
			lo_serve "$WHO" "$a"
			run -0 "${CLIENT[@]}" -- sh -c 'echo L >.env.served'
			run -0 lo_ls "$a"
			assert_output "$D
$D/ws-A-RUN"
			case $how in
			stop) run -0 "${CLIENT[@]}" --stop ;;
			term) kill -TERM "$SRV_PID" ;;
			kill) kill -KILL "$SRV_PID" ;;
			esac
			rc=0
			wait "$SRV_PID" || rc=$?
			case $how in
			stop | term)
				assert_equal "$rc" 0
				assert_equal "$(cat "$SRV/err")" "sbx-ns: warning: deny-write: the command created the protected path .env.served; moved it to .env.served.sbx-denied"
				;;
			kill) assert_equal "$rc" 137 ;;
			esac
			wait_for "pid1_gone $SRV_PID1"
			run -0 lo_ls "$a"
			if [ "$how" = kill ]; then
				assert_output "$D
$D/ws-A-RUN"
			else
				assert_output "$D
$D/tree-A"
			fi
			# A SIGKILLed server's record is its workspace's next run's.
			lo_next "$WHO" "$b" "$a"
			assert_equal "$LO_RC $LO_ERR" "0 "
			if [ "$how" = kill ]; then
				assert_equal "$LO_DURING" "$D
$D/ws-A-RUN
$D/ws-B-RUN"
				# (.env.served was moved aside after its command)
				lo_next "$WHO" "$a" "$b"
				assert_equal "$LO_RC $LO_ERR" "0 "
				assert_equal "$LO_DURING" "$D
$D/tree-B
$D/ws-A-RUN"
			else
				assert_equal "$LO_DURING" "$D
$D/tree-B
$D/ws-A-RUN"
			fi
			assert_all_gone "$a" "$b" "$SRV"
		done
	done
}

# contrib/session/sbx-session as WHO in the namespace, with no fd above 2
# (its sandboxes keep what they inherit) and no cgroup limits.
lo_session() {
	local pre=(nsenter -t "$LO_PID" -m --)
	[ "$1" = root ] || pre+=(setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" --init-groups --reset-env --)
	shift
	"${pre[@]}" env PATH="$SBX_BIN:/usr/local/bin:/usr/bin:/bin" SBX_SESSION_NO_CGROUP=1 \
		SBX_SESSION_READY_TIMEOUT=20 python3 -c 'import os, sys
os.closerange(3, 1 << 16)
os.execv(sys.argv[1], sys.argv[1:])' "$SESSION" "$@"
}

@test "sbx-session stop: nothing of its sandboxes once the next run has started" {
	local base d b D
	for WHO in root user; do
		D=$(lo_dir "$WHO")
		base=$(sbx_scratch)
		LO_SESSIONS+=("$WHO $base")
		d=$base/sess
		mkdir -p "$d/shared" "$d/sandbox_scripts" "$d/bash_tools" "$d/sandboxes/one" "$d/sandboxes/two"
		echo 'echo L >.env.session' >"$d/sandboxes/one/init"
		if [ "$WHO" = root ]; then
			echo "$SBX_TEST_UID $SBX_TEST_GID" >"$d/identity"
			chown "$SBX_TEST_UID:$SBX_TEST_GID" "$d/shared"
		else
			chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$base"
		fi
		chmod -R a+rX "$base"
		run -0 --separate-stderr lo_session "$WHO" start "$d"
		assert_output "one ready
two ready"
		run -0 lo_ls "$d/run/one/ws" "$d/run/two/ws"
		assert_output "$D
$D/ws-A-RUN
$D/ws-B-RUN"
		run -0 --separate-stderr lo_session "$WHO" stop "$d"
		assert_output ""
		assert_equal "$stderr" ""
		assert_file_not_exist "$d/run"
		b=$(ns_ws)
		lo_next "$WHO" "$b"
		assert_equal "$LO_DURING" "$D
$D/ws-A-RUN"
		assert_equal "$LO_RC $LO_ERR" "0 "
		assert_all_gone "$b" "$base"
		LO_SESSIONS=()
	done
}

@test "concurrent runs: one killed while others start and end, none loses its record or fails, a held one's record stays" {
	local a b k p D i
	for WHO in root user; do
		D=$(lo_dir "$WHO")
		a=$(ns_ws)
		b=$(ns_ws)
		k=$(ns_ws)
		# A held run on a, and one on k killed while 40 runs on b start and end.
		hold_fifo "$a"
		lo_argv "$WHO"
		"${LO_ARGV[@]}" --workspace "$a" -- sh -c "$HOLD" 2>"$NS_DIR/held.err" 3>&- &
		p=$!
		BG_PIDS+=("$p")
		read -r _ <"$a/up"
		hold_fifo "$k"
		"${LO_ARGV[@]}" --workspace "$k" -- sh -c "$HOLD" 2>/dev/null 3>&- &
		BG_PIDS+=("$!")
		read -r _ <"$k/up"
		export LO_PID SBX_TEST_UID SBX_TEST_GID SBX_BIN WHO b
		export -f lo_ns lo_argv
		seq 40 | xargs -P 8 -I{} bash -c 'lo_ns "$WHO" --workspace "$b" -- true 2>&1; echo "run {}: $?"' \
			>"$NS_DIR/many" 3>&- &
		i=$!
		kill -KILL "${BG_PIDS[1]}"
		wait "$i"
		run -0 grep -cx 'run [0-9]*: 0' "$NS_DIR/many"
		assert_output 40
		run -0 lo_ls "$a" "$b" "$k"
		assert_line "$D/ws-A-RUN"
		assert_line "$D/tree-B"
		echo >"$a/up"
		wait "$p"
		assert_equal "$(cat "$NS_DIR/held.err")" ""
		# k's record waits for k's next run, which takes it over.
		lo_next "$WHO" "$b" "$a" "$k"
		assert_equal "$LO_DURING" "$D
$D/tree-A
$D/tree-B
$D/ws-A-RUN
$D/ws-C-RUN"
		lo_next "$WHO" "$k" "$a" "$b"
		assert_equal "$LO_RC $LO_ERR" "0 "
		assert_equal "$LO_DURING" "$D
$D/tree-B
$D/tree-C
$D/ws-A-RUN"
		assert_all_gone "$a" "$b" "$k"
		BG_PIDS=()
	done
}

@test "the caller's directory planted by another user, a symlink or a directory: refused, left as it is" {
	local ws other=$((SBX_TEST_UID + 1))
	ws=$(ns_ws)
	lo ln -s /var/tmp "/tmp/sbx-ns-$SBX_TEST_UID"
	lo chown -h "$other:$other" "/tmp/sbx-ns-$SBX_TEST_UID"
	run -111 --separate-stderr lo_ns user --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to open /tmp/sbx-ns-$SBX_TEST_UID for the deny-write records: Not a directory"
	run -0 lo stat -c '%F %u %N' "/tmp/sbx-ns-$SBX_TEST_UID"
	assert_output "symbolic link $other '/tmp/sbx-ns-$SBX_TEST_UID' -> '/var/tmp'"
	lo rm "/tmp/sbx-ns-$SBX_TEST_UID"
	lo mkdir -m 0700 "/tmp/sbx-ns-$SBX_TEST_UID"
	lo chown "$other:$other" "/tmp/sbx-ns-$SBX_TEST_UID"
	run -102 --separate-stderr lo_ns user --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to use /tmp/sbx-ns-$SBX_TEST_UID for the deny-write records: owned by uid $other with mode 700, not by uid $SBX_TEST_UID with mode 0700 (remove it, or set XDG_RUNTIME_DIR)"
	run -0 lo_ls
	assert_output "/tmp/sbx-ns-$SBX_TEST_UID"
	lo rmdir "/tmp/sbx-ns-$SBX_TEST_UID"
	rm -rf "$ws"
}

# A record of a killed run on workspace $2 in WHO's directory: its pid 1
# $3 with start $4, .env.* protected, started an hour ago.
fake_record() {
	local d name
	d=$(lo_dir "$1")
	name="ws-$(ws_key "$2")-1-1"
	lo mkdir -p -m 0700 "$d"
	[ "$1" = root ] || lo chown "$SBX_TEST_UID" "$d"
	printf 'sbx-ns deny-write record 1\nuid %s\nstart %s 0\npath %s\nglob 2e656e762e2a\nend\npid %s %s\n' \
		"$SBX_TEST_UID" "$(($(date +%s) - 3600))" "$(printf %s "$2" | od -An -tx1 | tr -d ' \n')" "$3" "$4" |
		lo sh -c 'cat >"$1"' sh "$d/$name"
	[ "$1" = root ] || lo chown "$SBX_TEST_UID" "$d/$name"
	echo "$d/$name"
}

@test "a record locked by a live process stays; once free, with a pid that names another process now, it is taken over" {
	local a b rec p start D
	for WHO in root user; do
		D=$(lo_dir "$WHO")
		a=$(ns_ws)
		b=$(ns_ws)
		echo L >"$a/.env.planted"
		chown "$SBX_TEST_UID:$SBX_TEST_GID" "$a/.env.planted"
		# pid: this shell, alive, with another start than its own.
		start=$(sed 's/.*) //' /proc/$$/stat | cut -d' ' -f20)
		rec=$(fake_record "$WHO" "$a" $$ $((start + 1)))
		# Its lock held by a live process (flock(1), waiting on a fifo).
		mkfifo "$NS_DIR/lock"
		nsenter -t "$LO_PID" -m -- flock "$rec" sh -c 'echo locked; read -r _ <"$1"' sh "$NS_DIR/lock" \
			>"$NS_DIR/locked" 3>&- &
		p=$!
		BG_PIDS+=("$p")
		wait_for "[ -s '$NS_DIR/locked' ]"
		lo_next "$WHO" "$a"
		assert_equal "$LO_RC $LO_ERR" "0 "
		assert_equal "$LO_DURING" "$D
$D/ws-A-RUN
$D/ws-A-RUN"
		assert_equal "$(cat "$a/.env.planted")" L
		echo >"$NS_DIR/lock"
		wait "$p"
		rm "$NS_DIR/lock" "$NS_DIR/locked"
		# A run on another workspace leaves it; a's next run takes it over.
		lo_next "$WHO" "$b" "$a"
		assert_equal "$LO_RC $LO_ERR" "0 "
		assert_equal "$(cat "$a/.env.planted")" L
		lo_next "$WHO" "$a" "$b"
		assert_equal "$LO_RC" 0
		assert_equal "$LO_ERR" "sbx-ns: warning: deny-write: an earlier run's command (killed) created the protected path .env.planted; moved it to .env.planted.sbx-denied"
		assert_equal "$LO_DURING" "$D
$D/tree-A
$D/tree-B
$D/ws-A-RUN"
		assert_all_gone "$a" "$b"
		BG_PIDS=()
	done
}

@test "XDG_RUNTIME_DIR/sbx-ns: the same, and the user's directory is left as it was" {
	local xdg a b
	xdg=$(ns_ws)
	chmod 0700 "$xdg"
	a=$(ns_ws)
	b=$(ns_ws)
	xdg_ns() {
		nsenter -t "$LO_PID" -m -- setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" --init-groups \
			--reset-env -- env PATH="$SBX_BIN:/usr/local/bin:/usr/bin:/bin" XDG_RUNTIME_DIR="$xdg" sbx-ns "$@"
	}
	run -0 --separate-stderr xdg_ns --workspace "$a" -- true
	assert_equal "$stderr" ""
	run -0 ls -A "$xdg" "$xdg/sbx-ns"
	assert_output "$xdg:
sbx-ns

$xdg/sbx-ns:
tree-$(ws_key "$a")"
	rm -rf "$a"
	run -0 --separate-stderr xdg_ns --workspace "$b" --dry-run -- true
	run -0 --separate-stderr xdg_ns --recover --workspace "$b"
	assert_equal "$stderr" ""
	run -0 ls -A "$xdg"
	assert_output ""
	run -0 lo_ls
	assert_output ""
	rm -rf "$xdg" "$b"
}

#!/usr/bin/env bats
# The program of a plan is found and read as the command will find and
# read it: in the sandbox's own view (a living sandbox's root; the root a
# one-shot plan will build), with the command's identity. A name the
# sandbox controls (a workspace symlink to /etc/shadow, to a root-only
# file, to another root, to the host's /proc, through a directory link, a
# ".." path) shows nothing of its target: the plan says "not found", as
# the exec would. A living sandbox's own /tmp is seen: a venv made there
# can be granted and run.

bats_require_minimum_version 1.5.0
load helpers
load ns
load grantsrv

setup_file() {
	ns_setup_file
	# What the sandbox must learn nothing of: a root-only directory's
	# executable, another root's program, a root-only program in a root
	# the sandbox shows (its uid may not run it), a FIFO in that root.
	mkdir -m 0700 "$NS_DIR/secret"
	printf '#!/bin/sh\necho secret\n' >"$NS_DIR/secret/exe"
	chmod 0700 "$NS_DIR/secret/exe"
	mkdir -p "$NS_DIR/other"
	cp /bin/true "$NS_DIR/other/tool"
	chmod 0755 "$NS_DIR/other/tool"
	cp /bin/true "$NS_DIR/bin/rootonly"
	chmod 0700 "$NS_DIR/bin/rootonly"
	mkfifo -m 0777 "$NS_DIR/bin/fifo"
}

setup() { srv_setup; }

teardown() {
	srv_teardown
	bg_end
}

# The links a command in the workspace plants (sh -c "$PLANT" sh WS DIR,
# as the test user or in the sandbox), and the names a plan is asked for:
# every one leads outside what the command may see or run.
PLANT='cd "$1" && mkdir -p sub &&
	ln -s /etc/shadow l-shadow && ln -s "$2/secret/exe" l-secret &&
	ln -s "$2/other/tool" l-other && ln -s /proc/1/exe l-proc1 &&
	ln -s /proc/1/root/etc/shadow l-proc1root && ln -s "$2/secret" dlink &&
	ln -s "$2/bin/rootonly" l-rootonly && ln -s "$2/bin/fifo" l-fifo'
plant() { as_user sh -c "$PLANT" sh "$ws" "$NS_DIR"; }
NAMES=(./l-shadow ./l-secret ./l-other ./l-proc1 ./l-proc1root ./dlink/exe ./l-rootonly ./l-fifo
       sub/../../other/tool ../../../../../../etc/shadow)

# A writer blocked opening the FIFO: whoever opens it to read releases
# it. held: it is still blocked in open (x86_64 openat is 257).
fifo_writer() {
	sh -c 'exec 3>"$1"; echo released' sh "$NS_DIR/bin/fifo" >"$ws.fifo" &
	FIFO_PID=$!
	BG_PIDS+=("$FIFO_PID")
	wait_for '[ "$(cut -d" " -f1 /proc/$FIFO_PID/syscall 2>/dev/null)" = 257 ]'
}
fifo_held() {
	run -0 cut -d' ' -f1 "/proc/$FIFO_PID/syscall"
	assert_output 257
}

# The plan in $1 has a program, and it is "not found".
not_found() {
	run -0 python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))["program"]))' "$1"
	assert_output '{"path": null}'
}

@test "a one-shot --dry-run: a planted link, a directory link or a '..' path shows nothing of its target" {
	local mode name
	plant
	fifo_writer
	for mode in root user; do
		for name in "${NAMES[@]}"; do
			if [ "$mode" = root ]; then
				ns_root --workspace "$ws" --ro "$NS_DIR/bin" --net none --dry-run -- "$name" >"$ws.plan"
			else
				ns_user --workspace "$ws" --ro "$NS_DIR/bin" --net none --dry-run -- "$name" >"$ws.plan"
			fi
			not_found "$ws.plan"
			run grep -c -e "$NS_DIR/secret" -e "$NS_DIR/other" "$ws.plan"
			assert_output 0
		done
	done
	fifo_held
	# Run, each is "not found" as the exec finds it, and no hint names a target.
	run -127 --separate-stderr ns_root --workspace "$ws" --ro "$NS_DIR/bin" --net none -- ./l-secret
	assert_equal "$stderr" "sbx-ns: fatal: unable to exec ./l-secret: No such file or directory"
	run -127 --separate-stderr ns_root --workspace "$ws" --ro "$NS_DIR/bin" --net none -- ./dlink/exe
	assert_equal "$stderr" "sbx-ns: fatal: unable to exec ./dlink/exe: No such file or directory"
	fifo_held
}

@test "a bare name found through a planted link on the command path or the caller's PATH: no hint tells of the target" {
	plant
	as_user sh -c 'mkdir "$1/bin" && ln -s "$2/secret/exe" "$1/bin/tool"' sh "$ws" "$NS_DIR"
	run -127 --separate-stderr env PATH="$ws/bin:$PATH" "$SBX_BIN/sbx-ns" "${id[@]}" --workspace "$ws" \
		--ro "$NS_DIR/bin" --net none -- tool
	assert_equal "$stderr" "sbx-ns: fatal: unable to find tool"
	run -127 --separate-stderr ns_root --workspace "$ws" --ro "$NS_DIR/bin" --net none \
		--command-path "$ws/bin:/usr/bin:/bin" -- tool
	assert_equal "$stderr" "sbx-ns: fatal: unable to find tool"
	# A real program there is found inside, and the plan hashes it.
	as_user sh -c 'rm "$1/bin/tool" && cp /bin/true "$1/bin/tool"' sh "$ws"
	ns_root --workspace "$ws" --ro "$NS_DIR/bin" --net none --command-path "$ws/bin:/usr/bin:/bin" \
		--dry-run -- tool >"$ws.plan"
	run -0 python3 -c 'import json, sys; p = json.load(open(sys.argv[1]))["program"]; print(p["path"], p["sha256"])' "$ws.plan"
	assert_output "$ws/bin/tool $(sha256sum </bin/true | cut -d' ' -f1)"
}

@test "a living sandbox, --join --dry-run and a granted --join: the links show nothing; the command's own /tmp is seen" {
	local mode name
	fifo_writer
	for mode in root user; do
		ws=$(ns_ws)
		srv_up "$mode"
		# The command plants the links itself.
		GRANT=$ws.plant plan -- sh -c "$PLANT" sh "$ws" "$NS_DIR"
		run -0 --separate-stderr "${JOIN[@]}" --grant-fd 3 -- sh -c "$PLANT" sh "$ws" "$NS_DIR" \
			3<"$ws.plant" </dev/null
		assert_equal "$stderr" ""
		for name in "${NAMES[@]}"; do
			"${JOIN[@]}" --dry-run -- "$name" >"$ws.plan" </dev/null
			not_found "$ws.plan"
			run grep -c -e "$NS_DIR/secret" -e "$NS_DIR/other" "$ws.plan"
			assert_output 0
			"${CHECK[@]}" grant --key "$key" --plan "$ws.plan" >"$ws.grant"
			run -127 --separate-stderr granted -- "$name"
			assert_output ""
			assert_equal "$stderr" "sbx-ns: fatal: unable to find $name"
		done
		# A venv in the sandbox's own /tmp, which the host never sees.
		local venv=/tmp/venv.$BATS_TEST_NUMBER.$$
		GRANT=$ws.venv plan -- python3 -m venv --without-pip "$venv"
		run -0 --separate-stderr "${JOIN[@]}" --grant-fd 3 -- python3 -m venv --without-pip "$venv" \
			3<"$ws.venv" </dev/null
		assert_equal "$stderr" ""
		[ ! -e "$venv" ]
		plan -- "$venv/bin/python" -c 'import sys; print(sys.prefix)'
		run -0 python3 -c 'import json, sys; p = json.load(open(sys.argv[1]))["program"]; print(p["path"], p["sha256"])' "$ws.plan"
		assert_output "$venv/bin/python $(sha256sum <"$(readlink -f /usr/bin/python3)" | cut -d' ' -f1)"
		run -0 --separate-stderr granted -- "$venv/bin/python" -c 'import sys; print(sys.prefix)'
		assert_output "$venv"
		assert_equal "$stderr" ""
		srv_down
	done
	fifo_held
}

# One-shot: the plan of PROG... into $ws.plan and its grant into $ws.grant;
# oneshot_granted runs it.
oneshot_plan() {
	ns_root --workspace "$ws" --ro "$NS_DIR/bin" --net none --dry-run "$@" >"$ws.plan" </dev/null
	sbx-check grant --key "$key" --plan "$ws.plan" >"$ws.grant"
}
oneshot_granted() {
	ns_root --workspace "$ws" --ro "$NS_DIR/bin" --net none --grant-fd 3 --grant-key "$key" "$@" \
		3<"$ws.grant" </dev/null
}

@test "a granted program anyone but root could rewrite is held still to the exec: refused while open for writing or writable by others" {
	local prog
	# The command's own program in the workspace: held by a read lease.
	as_user cp /bin/true "$ws/tool"
	oneshot_plan -- "$ws/tool"
	run -0 --separate-stderr oneshot_granted -- "$ws/tool"
	assert_equal "$stderr" ""
	exec 5>>"$ws/tool"
	run -102 --separate-stderr oneshot_granted -- "$ws/tool"
	assert_equal "$stderr" "sbx-ns: fatal: grant refused: the program $ws/tool is open for writing (a granted program runs only while nothing can change it)"
	exec 5>&-
	run -0 --separate-stderr oneshot_granted -- "$ws/tool"
	# Root's, but writable by others: no lease can be had, refused.
	prog=$NS_DIR/bin/open.$BATS_TEST_NUMBER
	cp /bin/true "$prog"
	chmod 0777 "$prog"
	oneshot_plan -- "$prog"
	run -102 --separate-stderr oneshot_granted -- "$prog"
	assert_equal "$stderr" "sbx-ns: fatal: grant refused: the program $prog is writable by group or others and cannot be held still (Permission denied): chmod go-w $prog"
	chmod 0755 "$prog"
	oneshot_plan -- "$prog"
	run -0 --separate-stderr oneshot_granted -- "$prog"
	assert_equal "$stderr" ""
	# The same in a living sandbox.
	srv_up user
	plan -- "$ws/tool"
	exec 5>>"$ws/tool"
	run -102 --separate-stderr granted -- "$ws/tool"
	assert_equal "$stderr" "sbx-ns: fatal: grant refused: the program $ws/tool is open for writing (a granted program runs only while nothing can change it)"
	exec 5>&-
	run -0 --separate-stderr granted -- "$ws/tool"
	assert_equal "$stderr" ""
	srv_down
}

@test "a one-shot --changes run cannot plan a program in its workspace (only the overlay shows it) and says where it can; a living one can" {
	local chg
	chg=$(mktemp -d "$NS_DIR/chg.XXXXXX")
	chmod 0700 "$chg"
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$chg"
	as_user cp /bin/true "$ws/tool"
	run -102 --separate-stderr ns_root --workspace "$ws" --changes "$chg" --net none --dry-run -- ./tool
	assert_output ""
	assert_equal "$stderr" "sbx-ns: fatal: unable to plan the program ./tool: a one-shot run with --changes shows the workspace as an overlay, whose files exist only once it runs (run it in a living sandbox: --serve with --changes)"
	ns_root --workspace "$ws" --changes "$chg" --net none --dry-run -- true >"$ws.plan"
	run -0 python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["program"]["path"])' "$ws.plan"
	assert_output /usr/bin/true
	# A living sandbox plans it in its overlay, and the grant runs it.
	srv_up user --changes "$chg"
	plan -- ./tool
	run -0 python3 -c 'import json, sys; p = json.load(open(sys.argv[1]))["program"]; print(p["path"], p["sha256"])' "$ws.plan"
	assert_output "$ws/./tool $(sha256sum </bin/true | cut -d' ' -f1)"
	run -0 --separate-stderr granted -- ./tool
	assert_equal "$stderr" ""
	srv_down
}

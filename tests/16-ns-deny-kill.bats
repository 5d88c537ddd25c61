#!/usr/bin/env bats
# sbx-ns: deny-write when runs are killed or share a workspace. SIGKILL at
# several points of setup and run leaves the workspace as it was plus what
# the command wrote, and the next run makes the command's protected paths
# inert; hundreds of concurrent runs on one workspace, some killed, never
# fail for each other's sake and leave it unchanged.

bats_require_minimum_version 1.5.0
load helpers
load ns

teardown() { bg_end; }

# A mount namespace whose /run is this test's own, and in it the test
# user's XDG_RUNTIME_DIR: the records of root (/run/sbx-ns) and of the test
# user ($XDG_RUNTIME_DIR/sbx-ns) there are only this test's runs'. On a host
# where other runs of sbx-ns are killed, the same caller's --recover takes
# over their records and says so; a run in here neither takes over theirs
# nor has its own taken. (/tmp stays the host's: the tree under test may
# be there.) Sets OWN_NS, the argv that runs a program in it, and OWN_XDG,
# which ns_argv gives the test user's runs.
own_records() {
	local ready="$NS_DIR/own.ready"
	OWN_XDG=/run/sbx-test-user
	unshare --mount --propagation private sh -c 'mount -t tmpfs -o mode=0755 sbx-run /run &&
		mkdir -m 0700 "$1" && chown "$2:$3" "$1" && : >"$0" && exec sleep 1000000' \
		"$ready" "$OWN_XDG" "$SBX_TEST_UID" "$SBX_TEST_GID" &
	BG_PIDS+=("$!")
	OWN_NS=(nsenter --target "$!" --mount --)
	wait_for "[ -e '$ready' ]"
}


# Every path with type, mode and owner, and every file's content.
snap() {
	(cd "$1" && find . -printf '%p %y %m %U\n' | LC_ALL=C sort &&
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum)
}

# The sandbox's pid 1 is gone (or a zombie: its namespace is empty).
pid1_gone() {
	local s
	s=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 0
	[ -z "$s" ] || [ "$s" = Z ]
}

# The argv that execs sbx-ns as MODE (ns_root or ns_user), for a
# background job whose pid must be sbx-ns itself (a function would leave a
# subshell in between).
ns_argv() {
	if [ "$1" = ns_root ]; then
		NS_ARGV=(sbx-ns --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID")
	else
		NS_ARGV=(setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" --init-groups
			--reset-env -- env PATH="$SBX_BIN:/usr/local/bin:/usr/bin:/bin"
			${OWN_XDG:+XDG_RUNTIME_DIR="$OWN_XDG"} sbx-ns)
	fi
}

# One kill: runner, point; the workspace afterwards holds exactly what it
# held plus what the command wrote, its protected paths moved aside.
kill_at() {
	local mode=$1 point=$2 ws st p pid1 before after extra
	ws=$(ns_repo)
	st="$NS_DIR/status.$mode.$point"
	before=$(snap "$ws")
	: >"$st"
	ns_argv "$mode"
	"${OWN_NS[@]}" "${NS_ARGV[@]}" --workspace "$ws" --status-fd 5 -- sh -c \
		'echo new > src/new.c; echo L > .env.test; echo w > .git/config.worktree;
		 printf "#!/bin/sh\n" > .git/hooks/post-merge 2>/dev/null; touch written; exec sleep 1000' \
		5>"$st" 3>&- 2>/dev/null &
	p=$!
	case $point in
	now) ;;
	namespaces) wait_for "grep -q namespaces '$st'" ;;
	started) wait_for "grep -q started '$st'" ;;
	written|chain) wait_for "[ -e '$ws/written' ]" ;;
	esac
	pid1=$(sed -n 's/.*"event":"namespaces"[^{]*,"pid":\([0-9]*\).*/\1/p' "$st")
	if [ "$point" = chain ]; then
		kill -9 "$p" "$pid1"
	else
		kill -9 "$p"
	fi
	wait "$p" 2>/dev/null || true
	if [ -n "$pid1" ]; then wait_for "pid1_gone $pid1"; fi
	run -0 --separate-stderr "${OWN_NS[@]}" "${NS_ARGV[@]}" --workspace "$ws" -- true
	if [ "$point" = written ] || [ "$point" = chain ]; then
		assert_equal "$stderr" "sbx-ns: warning: deny-write: an earlier run's command (killed) created the protected path .env.test; moved it to .env.test.sbx-denied
sbx-ns: warning: deny-write: an earlier run's command (killed) created the protected path .git/config.worktree; moved it to .git/config.worktree.sbx-denied"
	fi
	after=$(snap "$ws")
	# Nothing of what was there is gone or changed...
	run -0 comm -23 <(LC_ALL=C sort <<<"$before") <(LC_ALL=C sort <<<"$after")
	assert_output ""
	# ...and what is new is the command's, protected paths moved aside.
	extra=$(comm -13 <(LC_ALL=C sort <<<"$before") <(LC_ALL=C sort <<<"$after") |
		grep -Ev '^(\./src/new\.c f 644|\./\.env\.test\.sbx-denied f 644|\./\.git/config\.worktree\.sbx-denied f 644|\./written f 644) ' |
		grep -Ev '  \./(src/new\.c|\.env\.test\.sbx-denied|\.git/config\.worktree\.sbx-denied|written)$' || true)
	assert_equal "$extra" ""
	assert_file_not_exist "$ws/.env.test"
	assert_file_not_exist "$ws/.git/config.worktree"
}

@test "SIGKILL of sbx-ns at any point: the workspace is what it was plus what the command wrote; the next run moves its protected paths aside" {
	local mode point
	own_records
	for mode in ns_root ns_user; do
		for point in now namespaces started written chain; do
			kill_at "$mode" "$point"
		done
	done
}

@test "a run refused during setup leaves nothing in the workspace" {
	local ws before
	ws=$(ns_repo)
	ln -s /etc "$ws/b"
	before=$(snap "$ws")
	run -102 --separate-stderr ns_user --workspace "$ws" --deny-write missing/x --deny-write b -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to protect b in the workspace: it is a symlink"
	run -102 --separate-stderr ns_root --workspace "$ws" --deny-write missing/x --deny-write b -- true
	assert_equal "$(snap "$ws")" "$before"
}

@test "--timeout: the protected paths the command made are moved aside before the exit is reported" {
	local ws
	ws=$(ns_ws)
	run -104 --separate-stderr ns_fd5 ns_user --status-fd 5 --timeout 1 --workspace "$ws" -- sh -c 'echo x > .env; exec sleep 1000'
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path .env; moved it to .env.sbx-denied"
	run -0 grep -A1 '"event":"deny-write"' <<<"$output"
	assert_output '{"tool":"sbx-ns","event":"deny-write","path":".env","action":"moved aside","moved_to":".env.sbx-denied","exec_cleared":false,"earlier_run":false}
{"tool":"sbx-ns","event":"exit","code":104,"signal":9,"timeout":true}'
}

# One of the concurrent runs: every 10th killed at once, every 10th (+4)
# killed once its command runs, the others must succeed with no message.
one_run() {
	local i=$1 ws=$2 mode p
	mode=ns_user
	[ $((i % 2)) = 0 ] && mode=ns_root
	ns_argv "$mode"
	case $((i % 10)) in
	3)
		"${NS_ARGV[@]}" --workspace "$ws" -- true 2>/dev/null 3>&- &
		p=$!
		kill -9 "$p"
		wait "$p" 2>/dev/null
		echo killed > "$NS_DIR/res/$i"
		;;
	7)
		"${NS_ARGV[@]}" --workspace "$ws" --ready-fd 4 -- sleep 1000 4>"$NS_DIR/res/ready.$i" 2>/dev/null 3>&- &
		p=$!
		wait_for "[ -s \"\$NS_DIR/res/ready.$i\" ]" || true
		kill -9 "$p"
		wait "$p" 2>/dev/null
		echo killed > "$NS_DIR/res/$i"
		;;
	*)
		"${NS_ARGV[@]}" --workspace "$ws" -- sh -c 'read k < .env && test -x .git/hooks/pre-commit && test ! -e .git/config' \
			2>"$NS_DIR/res/err.$i" 3>&-
		echo "rc $? $(cat "$NS_DIR/res/err.$i")" > "$NS_DIR/res/$i"
		;;
	esac
}

@test "200 runs on one workspace missing .git/config, 20 at a time, some killed: none fails, the workspace is unchanged, no record is left" {
	local ws before n
	ws=$(ns_repo)
	rm "$ws/.git/config"
	before=$(snap "$ws")
	mkdir "$NS_DIR/res"
	export -f one_run ns_argv
	export NS_DIR SBX_TEST_UID SBX_TEST_GID SBX_BIN
	seq 200 | xargs -P 20 -I{} bash -c 'one_run {} "$0"' "$ws"
	run -0 bash -c 'cd "$NS_DIR/res" && for f in $(grep -Lx -e "rc 0 " -e killed [0-9]*); do echo "$f: $(cat "$f")"; done'
	assert_output ""
	assert_equal "$(grep -c killed "$NS_DIR"/res/[0-9]* | awk -F: '{s+=$2} END {print s}')" 40
	assert_equal "$(snap "$ws")" "$before"
	# The records of the killed runs are taken over by the next runs.
	local key
	key="ws-$(stat -c %D "$ws")-$(printf %x "$(stat -c %i "$ws")")-"
	wait_for "ns_root --workspace '$ws' -- true && ns_user --workspace '$ws' -- true &&
		! ls /run/sbx-ns /tmp/sbx-ns-$SBX_TEST_UID | grep -q '^$key'"
	assert_equal "$(snap "$ws")" "$before"
}

@test "the records cannot be seen, forged or kept where the command can write; a record that is not one is dropped" {
	local ws xdg key
	ws=$(ns_repo)
	# Root's records: /run/sbx-ns, never inside the sandbox.
	[ -d /run/sbx-ns ]
	run -0 --separate-stderr ns_root --workspace "$ws" -- sh -c 'test ! -e /run/sbx-ns && ! ls -d /tmp/sbx-ns-* 2>/dev/null && echo unseen'
	assert_output "unseen"
	run -102 --separate-stderr ns_root --workspace "$ws" --rw /run -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to keep the deny-write records in /run/sbx-ns: it lies in the writable root /run (the command could forge it)"
	# A user's records: $XDG_RUNTIME_DIR/sbx-ns, which must be its own and private.
	xdg=$(ns_ws)
	chmod 0700 "$xdg"
	mkdir "$xdg/sbx-ns"
	run -102 --separate-stderr as_user env XDG_RUNTIME_DIR="$xdg" sbx-ns --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to use $xdg/sbx-ns for the deny-write records: owned by uid 0 with mode 755, not by uid $SBX_TEST_UID with mode 0700 (remove it, or set XDG_RUNTIME_DIR)"
	chown "$SBX_TEST_UID" "$xdg/sbx-ns"
	chmod 0700 "$xdg/sbx-ns"
	run -102 --separate-stderr as_user env XDG_RUNTIME_DIR="$xdg" sbx-ns --workspace "$ws" --rw "$xdg" -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to keep the deny-write records in $xdg/sbx-ns: it lies in the writable root $xdg (the command could forge it)"
	# Garbage under a record's name is dropped; nothing is moved for it.
	key="ws-$(stat -c %D "$ws")-$(printf %x "$(stat -c %i "$ws")")-1-1"
	printf 'sbx-ns deny-write record 1\nuid %s\nstart 0 0\nglob 2e656e76\nend\npid 1 zz\n' "$SBX_TEST_UID" >"$xdg/sbx-ns/$key"
	chown "$SBX_TEST_UID" "$xdg/sbx-ns/$key"
	run -0 --separate-stderr as_user env XDG_RUNTIME_DIR="$xdg" sbx-ns --workspace "$ws" -- true
	assert_equal "$stderr" ""
	assert_equal "$(cat "$ws/.env")" "KEY=1"
	assert_file_not_exist "$xdg/sbx-ns/$key"
	# What is left: the directories the run's end walk read, for the next.
	run -0 ls -A "$xdg/sbx-ns"
	assert_output "tree-$(stat -c %D "$ws")-$(printf %x "$(stat -c %i "$ws")")"
}

@test "root without a writable /run keeps its records in /tmp/sbx-ns-0" {
	local ws
	ws=$(ns_repo)
	run -0 --separate-stderr unshare -m --propagation private sh -c \
		"mount -t tmpfs -o ro tmpfs /run && exec sbx-ns --uid $SBX_TEST_UID --gid $SBX_TEST_GID --workspace $ws -- sh -c 'echo x > .env.new; read k < .env'"
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path .env.new; moved it to .env.new.sbx-denied"
	[ -d /tmp/sbx-ns-0 ]
	assert_equal "$(stat -c '%U %a' /tmp/sbx-ns-0)" "root 700"
}

@test "a killed run's record about an earlier directory that had the workspace's inode is dropped without a word" {
	local ws xdg key
	ws=$(ns_repo)
	echo new >"$ws/.env.new"
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$ws/.env.new"
	xdg=$(ns_ws)
	chmod 0700 "$xdg"
	mkdir -m 0700 "$xdg/sbx-ns"
	chown "$SBX_TEST_UID" "$xdg/sbx-ns"
	# A complete record of a run that ended (its pid 1 is gone) an hour
	# before this workspace was made: the directory it was about is gone
	# and this one only has its device and inode.
	key="ws-$(stat -c %D "$ws")-$(printf %x "$(stat -c %i "$ws")")-1-1"
	printf 'sbx-ns deny-write record 1\nuid %s\nstart 1 0\nglob 2e656e762e2a\nend\npid 999999999 1\n' "$SBX_TEST_UID" >"$xdg/sbx-ns/$key"
	chown "$SBX_TEST_UID" "$xdg/sbx-ns/$key"
	touch -d '-1 hour' "$xdg/sbx-ns/$key"
	run -0 --separate-stderr as_user env XDG_RUNTIME_DIR="$xdg" sbx-ns --workspace "$ws" -- true
	assert_equal "$stderr" ""
	assert_equal "$(cat "$ws/.env.new")" "new"
	assert_file_not_exist "$xdg/sbx-ns/$key"
}

@test "SIGKILL of the chain: the next run finds the nested repository and commondir the killed command planted" {
	local ws mode p pid1 st
	for mode in ns_root ns_user; do
		ws=$(ns_repo)
		st="$NS_DIR/status.nested.$mode"
		: >"$st"
		ns_argv "$mode"
		"${NS_ARGV[@]}" --workspace "$ws" --status-fd 5 -- sh -c \
			'mkdir -p v/r/.git/hooks && printf "#!/bin/sh\n" > v/r/.git/hooks/pre-commit && chmod 755 v/r/.git/hooks/pre-commit &&
			 echo x > .git/commondir && touch written; exec sleep 1000' 5>"$st" 3>&- 2>/dev/null &
		p=$!
		wait_for "[ -e '$ws/written' ]"
		pid1=$(sed -n 's/.*"event":"namespaces"[^{]*,"pid":\([0-9]*\).*/\1/p' "$st")
		kill -9 "$p" "$pid1"
		wait "$p" 2>/dev/null || true
		wait_for "pid1_gone $pid1"
		run -0 --separate-stderr "$mode" --workspace "$ws" -- true
		assert_equal "$stderr" "sbx-ns: warning: deny-write: an earlier run's command (killed) created the protected path .git/commondir; moved it to .git/commondir.sbx-denied
sbx-ns: warning: deny-write: an earlier run's command (killed) created the protected path v/r/.git/hooks/pre-commit; moved it to v/r/.git/hooks/pre-commit.sbx-denied and cleared its execute bits"
	done
}

@test "a run killed in another pid namespace: a run in this one keeps its record (it cannot see whether that sandbox still lives); one in that namespace takes it over" {
	local ws u c o p k n rec
	own_records
	ws=$(ns_repo)
	ns_argv ns_root
	# The writer: sbx-ns in a pid namespace of its own, sharing /run/sbx-ns.
	"${OWN_NS[@]}" unshare --pid --kill-child --mount-proc sh -c '"$@"; exec sleep 1000' sh \
		"${NS_ARGV[@]}" --workspace "$ws" -- sh -c 'echo L > .env.test; touch written; exec sleep 1000' \
		2>/dev/null 3>&- &
	u=$!
	BG_PIDS+=("$u")
	wait_for "[ -e '$ws/written' ]"
	c=$(pgrep -P "$u")
	o=$(pgrep -P "$c")
	p=$(pgrep -P "$o")
	k=$(pgrep -P "$p")
	# A process that entered the sandbox's pid namespace and whose parent,
	# outside it, does not reap it: killed with the sandbox, it keeps the
	# sandbox's pid 1 ending (a still running command, to a reader that
	# cannot see that namespace).
	nsenter --target "$p" --pid -- sleep 1000 &
	n=$!
	BG_PIDS+=("$n")
	wait_for "pgrep -P $n >/dev/null"
	kill -STOP "$n"
	kill -9 "$o"
	wait_for "[ ! -e /proc/$k ] && [ ! -e /proc/$o ]"
	run -1 pid1_gone "$p"
	rec=$(cd /proc/"$u"/root/run/sbx-ns && ls ws-*)
	run -0 --separate-stderr "${OWN_NS[@]}" "${NS_ARGV[@]}" --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: warning: deny-write: a killed run's record /run/sbx-ns/$rec was written in another pid namespace (pid:[$(stat -L -c %i /proc/"$c"/ns/pid)]), whose sandbox this run cannot see; kept, for the next run in that pid namespace (or sbx-ns --recover there) to take over; if none is left, check what its command created in $ws and remove the record"
	assert_equal "$(cat "$ws/.env.test")" "L"
	# Its sandbox gone, a run in that pid namespace takes the record over.
	kill -CONT "$n"
	wait_for "pid1_gone $p"
	run -0 --separate-stderr nsenter --target "$c" --pid --mount -- "${NS_ARGV[@]}" --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: warning: deny-write: an earlier run's command (killed) created the protected path .env.test; moved it to .env.test.sbx-denied"
	assert_file_not_exist "$ws/.env.test"
	run -0 ls /proc/"$u"/root/run/sbx-ns
	refute_output --partial "$rec"
}

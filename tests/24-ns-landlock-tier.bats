#!/usr/bin/env bats
# The Landlock tier: where user namespaces cannot be created and the baseline says
# "fallback": "landlock", sbx-ns runs the command without namespaces under Landlock and
# its seccomp filter, says so, and refuses what it cannot keep. tests/progs/ns-nouserns
# makes namespace creation fail (EPERM for CLONE_NEWUSER, as a container's seccomp
# profile does); nothing in sbx-ns can be told to take this path otherwise.

load helpers
load ns

setup_file() {
	ns_setup_file
	cp "$SBX_TESTBIN/ns-nouserns" "$SBX_TESTBIN/ns-landlockabi" "$NS_DIR/bin/"
	chmod 0755 "$NS_DIR/bin/ns-nouserns" "$NS_DIR/bin/ns-landlockabi"
	mkdir -m 0700 "$NS_DIR/secret"
	echo hidden >"$NS_DIR/secret/key"
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$NS_DIR/secret"
	mkdir -m 0755 "$NS_DIR/conf"
	local roots="\"readableRoots\":[\"$NS_DIR\"],\"writableRoots\":[\"$NS_DIR\"],\"network\":{\"mode\":\"localhost\"}"
	printf '{"sandbox":{"fallback":"landlock","denyWrite":[],%s}}\n' "$roots" >"$NS_DIR/conf/landlock.json"
	printf '{"sandbox":{"fallback":"landlock",%s}}\n' "$roots" >"$NS_DIR/conf/landlock-deny.json"
	printf '{"sandbox":{"fallback":"landlock","tierDenyWrite":"unenforced",%s}}\n' "$roots" >"$NS_DIR/conf/unenforced.json"
	printf '{"sandbox":{"fallback":"landlock","denyWrite":[]}}\n' >"$NS_DIR/conf/request.json"
	# The request that gives deny-write up too, and names the attempt program's directory.
	printf '{"sandbox":{"denyWrite":[],"readableRoots":["%s"]}}\n' "$NS_DIR/bin" >"$NS_DIR/conf/nodeny.json"
	printf '{"sandbox":{"denyWrite":[],"network":{"mode":"localhost"}}}\n' >"$NS_DIR/conf/loopback.json"
	chmod 0644 "$NS_DIR"/conf/*.json
	export NS_BASE=$NS_DIR/conf/landlock.json
}

teardown_file() {
	ns_teardown_file
}

teardown() {
	[ -z "${outside:-}" ] || kill "$outside" 2>/dev/null || true
}

warning='sbx-ns: WARNING: no user namespaces here \(Operation not permitted\): the command runs in the landlock tier: Landlock ABI [0-9]+ and seccomp, but no pid, mount or network namespace; other processes of the same user are visible; no fresh /proc'

# tier root|user ARGS...: sbx-ns under ns-nouserns, as root for the test user or as it,
# fd 4 on the request that gives deny-write up (--policy-fd 4).
tier() {
	local who=$1
	shift
	exec 4<"${NS_REQ:-$NS_DIR/conf/nodeny.json}"
	if [ "$who" = root ]; then
		"$NS_DIR/bin/ns-nouserns" "$SBX_BIN/sbx-ns" --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" "$@"
	else
		as_user "$NS_DIR/bin/ns-nouserns" "$SBX_BIN/sbx-ns" "$@"
	fi
}

@test "the tier runs the command, says so on stderr and in the status, and cleans its TMPDIR" {
	local ws who t
	for who in root user; do
		ws=$(ns_ws)
		run -0 --separate-stderr ns_fd5 tier "$who" --baseline "$NS_BASE" --policy-fd 4 \
			--workspace "$ws" --status-fd 5 -- sh -c 'id -u >id; echo "$TMPDIR" >tmpdir; touch "$TMPDIR/t"
				echo "$HOME $XDG_CACHE_HOME $XDG_CONFIG_HOME" >home; w=$PWD; cd && echo h >.rc && cat .rc >"$w/home-written"'
		assert_regex "$stderr" "^$warning\$"
		assert_line --index 0 '{"tool":"sbx-ns","event":"policy"'"$SBX_VER"',"baseline":true,"clamped":[],"unsafe_fallback":false}'
		assert_line --index 1 --regexp "^\\{\"tool\":\"sbx-ns\",\"event\":\"started\",\"isolation\":\"landlock\",\"reason\":\"Operation not permitted\",\"landlock\":[1-9][0-9]*,\"landlock_net\":(true|false),\"landlock_scoped\":(true|false),\"landlock_lost\":\[[a-z\",-]*\],\"seccomp\":true,\"net\":\"none\",\"deny_write\":\"none\",\"tmpdir\":\"/tmp/sbx-landlock\\.[A-Za-z0-9]{6}\",\"uid\":$SBX_TEST_UID,\"gid\":$SBX_TEST_GID\\}\$"
		assert_line --index 2 '{"tool":"sbx-ns","event":"exit","code":0,"isolation":"landlock"}'
		assert_equal "$(cat "$ws/id")" "$SBX_TEST_UID"
		assert_regex "$(cat "$ws/tmpdir")" '^/tmp/sbx-landlock\.[A-Za-z0-9]{6}$'
		assert_not_exist "$(cat "$ws/tmpdir")"
		# HOME is an empty directory of its own in the private TMPDIR: the host has no /tmp/home.
		t=$(cat "$ws/tmpdir")
		assert_equal "$(cat "$ws/home")" "$t/home $t/home/.cache $t/home/.config"
		assert_equal "$(cat "$ws/home-written")" "h"
	done
}

@test "in the tier, writes outside are denied and the host unchanged, secrets unreadable, no socket, no signal out" {
	local ws who
	for who in root user; do
		ws=$(ns_ws)
		run -0 --separate-stderr tier "$who" --baseline "$NS_BASE" --policy-fd 4 --workspace "$ws" -- sh -c "
			$NS_ATT write $ws/ok; $NS_ATT write /tmp/${NS_DIR##*/}-escape; $NS_ATT write $NS_DIR/escape
			$NS_ATT write /etc/sbx-tier-escape; $NS_ATT read $NS_DIR/secret/key; $NS_ATT socket-inet
			$NS_ATT socket-unix; $NS_ATT socketpair; $NS_ATT mount-tmpfs; $NS_ATT unshare-user"
		assert_output "write: ok
write: EACCES
write: EACCES
write: EACCES
read: EACCES
socket-inet: EPERM
socket-unix: EPERM
socketpair: ok
mount-tmpfs: EPERM
unshare-user: EPERM"
		assert_not_exist /tmp/${NS_DIR##*/}-escape
		assert_not_exist "$NS_DIR/escape"
	done
	# A process of the test user outside: Landlock ABI 6 scoping refuses the signal.
	setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" --init-groups sleep 600 3>&- &
	outside=$!
	ws=$(ns_ws)
	run -0 --separate-stderr tier user --baseline "$NS_BASE" --policy-fd 4 --workspace "$ws" -- "$NS_ATT" kill "$outside"
	assert_output "kill: EPERM"
	run -0 kill -0 "$outside"
}

@test "below Landlock ABI 6 the WARNING and the status say what is lost, and it is" {
	local ws abi rc
	for abi in 7 5 2; do
		# A process of the test user outside, which ns-attempt sends SIGTERM.
		setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" --init-groups sleep 600 3>&- &
		outside=$!
		ws=$(ns_ws)
		echo keep >"$NS_DIR/victim"
		chown "$SBX_TEST_UID:$SBX_TEST_GID" "$NS_DIR/victim"
		run -0 --separate-stderr as_user "$NS_DIR/bin/ns-landlockabi" "$abi" "$NS_DIR/bin/ns-nouserns" \
			"$SBX_BIN/sbx-ns" --baseline "$NS_BASE" --policy-fd 4 --workspace "$ws" --status-fd 5 -- sh -c "
			$NS_ATT kill $outside; python3 -c 'import os, sys
try:
    os.truncate(sys.argv[1], 0); print(\"truncate: ok\")
except OSError as e:
    print(\"truncate:\", e.strerror)' $NS_DIR/victim" 4<"$NS_DIR/conf/nodeny.json" 5>"$ws.status"
		case $abi in
		7) assert_output "kill: EPERM
truncate: Permission denied"
		   assert_regex "$stderr" "^$warning\$"
		   run -0 grep -c '"landlock":7,"landlock_net":true,"landlock_scoped":true,"landlock_lost":\[\],' "$ws.status"
		   assert_equal "$(cat "$NS_DIR/victim")" keep ;;
		5) assert_output "kill: ok
truncate: Permission denied"
		   assert_regex "$stderr" "^$warning; below Landlock ABI 6 nothing stops signalling processes of its user outside\$"
		   run -0 grep -c '"landlock":5,"landlock_net":true,"landlock_scoped":false,"landlock_lost":\["signal"\],' "$ws.status" ;;
		2) assert_output "kill: ok
truncate: ok"
		   assert_regex "$stderr" "^$warning; below Landlock ABI 6 nothing stops signalling processes of its user outside, ioctls on the devices it may open, truncating files of its user outside the writable roots \\(truncate\\(2\\)\\)\$"
		   run -0 grep -c '"landlock":2,"landlock_net":false,"landlock_scoped":false,"landlock_lost":\["signal","device-ioctl","truncate"\],' "$ws.status"
		   assert_equal "$(cat "$NS_DIR/victim")" "" ;;
		esac
		[ "$abi" = 7 ] && kill "$outside"
		rc=0
		wait "$outside" || rc=$?
		assert_equal "$rc" 143
	done
}

@test "the tier refuses (106) what it cannot keep: deny-write inside the workspace, a network, a bind elsewhere" {
	local ws pre='sbx-ns: fatal: unable to create namespaces (Operation not permitted) and unable to use the landlock tier the baseline allows:'
	ws=$(ns_ws)
	run -106 --separate-stderr tier root --baseline "$NS_DIR/conf/landlock-deny.json" --policy-fd 4 --workspace "$ws" -- true
	assert_equal "$stderr" "$pre the deny-write glob .env applies inside the writable workspace and Landlock cannot keep what it matches read-only (only an empty denyWrite in both the baseline and the request, or the baseline's \"tierDenyWrite\": \"unenforced\", gives deny-write up)"
	run -106 --separate-stderr tier user --baseline "$NS_BASE" --workspace "$ws" -- true
	assert_equal "$stderr" "$pre the deny-write glob .env applies inside the writable workspace and Landlock cannot keep what it matches read-only (only an empty denyWrite in both the baseline and the request, or the baseline's \"tierDenyWrite\": \"unenforced\", gives deny-write up)"
	run -106 --separate-stderr tier user --baseline "$NS_BASE" --deny-write 'none*' --workspace "$ws" -- true
	assert_equal "$stderr" "$pre the deny-write glob none* applies inside the writable workspace and Landlock cannot keep what it matches read-only (only an empty denyWrite in both the baseline and the request, or the baseline's \"tierDenyWrite\": \"unenforced\", gives deny-write up)"
	NS_REQ=$NS_DIR/conf/loopback.json run -106 --separate-stderr tier user --baseline "$NS_BASE" --policy-fd 4 --workspace "$ws" -- true
	assert_equal "$stderr" "$pre --net loopback needs a network namespace (only none and broker are kept without one)"
	run -106 --separate-stderr tier user --baseline "$NS_BASE" --policy-fd 4 --ro-bind "$NS_DIR/bin" /opt/x --workspace "$ws" -- true
	assert_equal "$stderr" "$pre --ro-bind needs a mount namespace"
	run -106 --separate-stderr tier user --baseline "$NS_BASE" --policy-fd 4 --tmp-in-workspace --workspace "$ws" -- true
	assert_equal "$stderr" "$pre --tmp-in-workspace needs a mount namespace"
	# Without Landlock there is no tier.
	run -106 --separate-stderr as_user "$NS_DIR/bin/ns-nolandlock" "$NS_DIR/bin/ns-nouserns" "$SBX_BIN/sbx-ns" \
		--baseline "$NS_BASE" --policy-fd 4 --workspace "$ws" -- true 4<"$NS_DIR/conf/nodeny.json"
	assert_equal "$stderr" "$pre this kernel has no Landlock"
}

@test "the baseline's tierDenyWrite: unenforced runs the tier with deny-write given up, and says so twice" {
	local ws who
	for who in root user; do
		ws=$(ns_ws)
		if [ "$who" = root ]; then
			run -0 --separate-stderr "$NS_DIR/bin/ns-nouserns" "$SBX_BIN/sbx-ns" --uid "$SBX_TEST_UID" \
				--gid "$SBX_TEST_GID" --baseline "$NS_DIR/conf/unenforced.json" --workspace "$ws" \
				--status-fd 5 -- sh -c 'echo KEY=1 >.env; cat .env' 5>"$ws.status"
		else
			run -0 --separate-stderr as_user "$NS_DIR/bin/ns-nouserns" "$SBX_BIN/sbx-ns" \
				--baseline "$NS_DIR/conf/unenforced.json" --workspace "$ws" \
				--status-fd 5 -- sh -c 'echo KEY=1 >.env; cat .env' 5>"$ws.status"
		fi
		assert_output "KEY=1"
		assert_equal "${#stderr_lines[@]}" 2
		assert_regex "${stderr_lines[0]}" "^$warning\$"
		assert_equal "${stderr_lines[1]}" 'sbx-ns: WARNING: deny-write is not enforced in the landlock tier (the baseline says "tierDenyWrite": "unenforced"): the command may write .env and what the other deny-write globs match inside the writable roots'
		run -0 grep -c '"isolation":"landlock",.*"deny_write":"unenforced"' "$ws.status"
	done
	# A request cannot say it.
	ws=$(ns_ws)
	run -102 --separate-stderr as_user "$NS_DIR/bin/ns-nouserns" "$SBX_BIN/sbx-ns" --baseline "$NS_DIR/conf/landlock-deny.json" \
		--policy-fd 4 --workspace "$ws" -- true 4< <(printf '{"sandbox":{"tierDenyWrite":"unenforced"}}')
	assert_regex "$stderr" '^sbx-ns: fatal: policy refused: --policy-fd 4: \$\.sandbox\.tierDenyWrite: only a baseline may leave deny-write unenforced in the landlock tier$'
}

@test "only the baseline offers the tier: a request cannot ask for it, and without it the run fails closed" {
	local ws
	ws=$(ns_ws)
	NS_REQ=$NS_DIR/conf/request.json run -102 --separate-stderr tier user --policy-fd 4 --workspace "$ws" -- true
	assert_regex "$stderr" '^sbx-ns: fatal: policy refused: .*: \$\.sandbox\.fallback: landlock comes only from a baseline$'
	run -106 --separate-stderr tier user --policy-fd 4 --workspace "$ws" -- true
	assert_regex "$stderr" '^sbx-ns: fatal: unable to create namespaces: Operation not permitted'
	refute_regex "$stderr" 'WARNING'
}

@test "what the command leaves behind in its session is killed when it ends" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr tier user --baseline "$NS_BASE" --policy-fd 4 --workspace "$ws" \
		-- sh -c 'sleep 600 >/dev/null 2>&1 & echo $! >pid'
	# Gone (and reaped by init) without anyone killing it here; alive, tail would wait 20 s.
	run -0 timeout 20 tail --pid="$(cat "$ws/pid")" -f /dev/null
}

# A command that leaves one descendant of each kind: a writer in its own process group
# (setpgid, job control), one in its own session (setsid), a double fork, one that ignores
# SIGTERM; each writes its pid to the workspace. Waits on nothing: they must be gone, and
# reaped, when sbx-ns returns.
leave_behind='set -m; (while :; do echo x >>log; sleep 0.1; done) & echo $! >p1; set +m
	setsid sleep 600 & echo $! >p2
	(sleep 600 & echo $! >p3) &
	(trap "" TERM; exec sleep 600) & echo $! >p4
	wait_p() { while [ ! -s "$1" ]; do sleep 0.01; done; }; wait_p p3'

@test "in the tier every descendant (setpgid, setsid, double fork, SIGTERM ignored) is gone when sbx-ns returns" {
	local ws who p
	for who in root user; do
		ws=$(ns_ws)
		run -0 --separate-stderr tier "$who" --baseline "$NS_BASE" --policy-fd 4 --workspace "$ws" \
			-- sh -c "$leave_behind"
		for p in p1 p2 p3 p4; do
			[ -s "$ws/$p" ] || fail "$who: $p not written"
			[ ! -e "/proc/$(cat "$ws/$p")" ] || fail "$who: $p (pid $(cat "$ws/$p")) outlived sbx-ns"
		done
	done
}

# The tier's outer process (sbx-ns exec'd by ns-nouserns, $!), its keeper, and the
# TMPDIR from the status line, for a run in the background.
tier_bg() {
	local who=$1
	shift
	# tier's two ways, exec'd: $! is sbx-ns itself
	(
		exec 4<"$NS_DIR/conf/nodeny.json" 5>"$BATS_TEST_TMPDIR/st" 2>/dev/null
		if [ "$who" = root ]; then
			exec "$NS_DIR/bin/ns-nouserns" "$SBX_BIN/sbx-ns" --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" \
				--baseline "$NS_BASE" --policy-fd 4 --status-fd 5 "$@"
		fi
		exec setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" --init-groups --reset-env -- \
			"$NS_DIR/bin/ns-nouserns" "$SBX_BIN/sbx-ns" --baseline "$NS_BASE" --policy-fd 4 --status-fd 5 "$@"
	) &
	outer=$!
	wait_for '[ -s "$ws/p4" ]' || fail "the command did not start"
	tmpdir=$(sed -n 's/.*"tmpdir":"\([^"]*\)".*/\1/p' "$BATS_TEST_TMPDIR/st")
	[ -d "$tmpdir" ] || fail "no TMPDIR: $(cat "$BATS_TEST_TMPDIR/st")"
	[ "$(cat /proc/$outer/comm)" = sbx-ns ] || fail "$outer is not sbx-ns"
	keeper=$(tr -d " " </proc/$outer/task/$outer/children)
	[ "$(cat /proc/$keeper/comm)" = sbx-ns ] || fail "no keeper below $outer"
}

@test "SIGKILL of the tier's outer: its keeper kills every descendant and removes the TMPDIR" {
	local ws who p outer keeper tmpdir
	for who in root user; do
		ws=$(ns_ws)
		tier_bg "$who" --workspace "$ws" -- sh -c "$leave_behind; exec sleep 600"
		kill -KILL "$outer"
		wait "$outer" || :
		for p in p1 p2 p3 p4; do
			wait_for '[ ! -e "/proc/$(cat "$ws/$p")" ]' || fail "$who: $p outlived the outer"
		done
		wait_for '[ ! -e "/proc/$keeper" ]' || fail "$who: the keeper stayed"
		assert_not_exist "$tmpdir"
	done
}

@test "a TMPDIR that outlived both outer and keeper (SIGKILL) is removed by the next tier run, a live one never" {
	local ws who outer keeper tmpdir live
	for who in root user; do
		ws=$(ns_ws)
		# a live run alongside: its TMPDIR must stay
		tier_bg "$who" --workspace "$ws" -- sh -c 'echo $$ >p4; exec sleep 600'
		live=$tmpdir
		local live_outer=$outer
		ws=$(ns_ws)
		tier_bg "$who" --workspace "$ws" -- sh -c 'echo $$ >p4; exec sleep 600'
		# stopped first, so that neither sees the other die and cleans up
		kill -STOP "$keeper" "$outer"
		kill -KILL "$keeper" "$outer"
		wait "$outer" || :
		wait_for '[ ! -e "/proc/$(cat "$ws/p4")" ]' || fail "$who: the command outlived its keeper"
		# Every sbx-ns run of this caller's sweeps what killed tier runs
		# left, so another run on this host may have taken it already.
		run -0 --separate-stderr tier "$who" --baseline "$NS_BASE" --policy-fd 4 --workspace "$ws" -- true
		assert_not_exist "$tmpdir"
		assert_dir_exist "$live"
		kill -TERM "$live_outer"
		wait "$live_outer" || :
		assert_not_exist "$live"
	done
}

#!/usr/bin/env bats
# What every tool keeps, whatever its job: --version; a run given
# --status-fd ends it with an "exit" line also when it is refused before
# anything started; a status line that cannot be written is said once on
# stderr; names from untrusted places never reach the terminal raw; a policy
# fd whose writer never closes it is refused instead of hanging.

bats_require_minimum_version 1.5.0
load helpers
load ns


# Run "$@" with fd 5 on the captured stdout.
fd5() { "$@" 5>&1; }
# Run "$@" with fd 5 a pipe whose reader is gone, SIGPIPE at its default.
epipe5() {
	/usr/bin/python3 -c 'import os, signal, sys
r, w = os.pipe(); os.close(r); os.dup2(w, 5)
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}

@test "every tool answers --version with its name and the release, exit 0" {
	local t
	for t in sbx-broker sbx-cgroup sbx-check sbx-ns sbx-quota sbx-seatbelt; do
		run -0 --separate-stderr "$t" --version
		assert_output --regexp "^$t [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{40}, (clean|dirty)|unknown)\)\$"
		assert_equal "$stderr" ""
	done
}

@test "a usage error after --status-fd ends the status with an exit line (sbx-ns, sbx-cgroup, sbx-quota, sbx-seatbelt)" {
	local ws
	ws=$(ns_ws)
	run -100 --separate-stderr fd5 sbx-ns --status-fd 5 --workspace "$ws" --bogus -- true
	assert_output '{"tool":"sbx-ns","event":"exit"'"$SBX_VER"',"code":100,"stage":"setup","error":"unknown option --bogus"}'
	assert_equal "$stderr" "sbx-ns: usage: unknown option --bogus"
	run -100 --separate-stderr fd5 sbx-cgroup --status-fd 5 --root /nonexistent --name a --pids 0 -- true
	assert_line --index 0 --regexp '^\{"tool":"sbx-cgroup","event":"exit"'"$SBX_VER"',"code":100,'
	assert_equal "${#lines[@]}" 1
	run -100 --separate-stderr fd5 sbx-quota verify --status-fd 5 --workspace "$ws" --disk 0 -- true
	assert_line --index 0 --regexp '^\{"tool":"sbx-quota","event":"exit"'"$SBX_VER"',"code":100,'
	assert_equal "${#lines[@]}" 1
	run -100 --separate-stderr fd5 sbx-seatbelt --status-fd 5 --workspace "$ws" --memory -1 -- true
	assert_line --index 0 --regexp '^\{"tool":"sbx-seatbelt","event":"exit"'"$SBX_VER"',"code":100,'
	assert_equal "${#lines[@]}" 1
}

@test "a refusal (102) after --status-fd ends with one exit line, root and unprivileged" {
	local ws
	ws=$(ns_ws)
	ln -s /etc/passwd "$ws/.env"
	run -102 --separate-stderr fd5 ns_root --status-fd 5 --workspace "$ws" -- true
	assert_output '{"tool":"sbx-ns","event":"exit"'"$SBX_VER"',"code":102,"stage":"setup","error":"unable to protect .env in the workspace: it is a symlink"}'
	assert_equal "$stderr" "sbx-ns: fatal: unable to protect .env in the workspace: it is a symlink"
	run -102 --separate-stderr fd5 ns_user --status-fd 5 --workspace "$ws" -- true
	assert_output '{"tool":"sbx-ns","event":"exit"'"$SBX_VER"',"code":102,"stage":"setup","error":"unable to protect .env in the workspace: it is a symlink"}'
}

# Each refusal class that stops a tool before its command starts: a limit the
# host cannot enforce (101), a broker that does not answer (102), no
# isolation (106), a failed system call (111). The workspace is on the
# host's disk, which has neither cgroup v2 nor project quotas.
@test "refusals 101, 102 (broker), 106 and 111 after --status-fd end it with the one exit line" {
	local ws
	ws=$(ns_ws)
	run -101 --separate-stderr fd5 sbx-cgroup --status-fd 5 --root "$ws" --name a --memory 64M -- true
	assert_output "{\"tool\":\"sbx-cgroup\",\"event\":\"exit\"$SBX_VER,\"code\":101,\"stage\":\"setup\",\"error\":\"hard limits unsupported: $ws is not on a cgroup v2 file system\"}"
	run -111 --separate-stderr fd5 sbx-cgroup --status-fd 5 --root "$ws/none" --name a --memory 64M -- true
	assert_output "{\"tool\":\"sbx-cgroup\",\"event\":\"exit\"$SBX_VER,\"code\":111,\"stage\":\"setup\",\"error\":\"unable to open $ws/none: No such file or directory\"}"
	run -101 --separate-stderr fd5 sbx-quota verify --status-fd 5 --workspace "$ws" --disk 1M -- true
	assert_output --regexp '^\{"tool":"sbx-quota","event":"exit"'"$SBX_VER"',"code":101,"stage":"setup","error":"hard limits unsupported: .*"\}$'
	run -111 --separate-stderr fd5 sbx-quota verify --status-fd 5 --workspace "$ws/none" --disk 1M -- true
	assert_output "{\"tool\":\"sbx-quota\",\"event\":\"exit\"$SBX_VER,\"code\":111,\"stage\":\"setup\",\"error\":\"unable to open workspace $ws/none: No such file or directory\"}"
	run -106 --separate-stderr fd5 sbx-seatbelt --status-fd 5 --workspace "$ws" -- true
	assert_output '{"tool":"sbx-seatbelt","event":"exit"'"$SBX_VER"',"code":106,"stage":"setup","error":"unable to run /usr/bin/sandbox-exec: Seatbelt exists only on macOS (on Linux confine with sbx-ns)"}'
	# A socket nobody listens on: the broker "does not answer".
	/usr/bin/python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$NS_DIR/mute.sock"
	run -102 --separate-stderr fd5 ns_root --status-fd 5 --workspace "$ws" --net "broker:$NS_DIR/mute.sock" -- true
	assert_output "{\"tool\":\"sbx-ns\",\"event\":\"exit\"$SBX_VER,\"code\":102,\"stage\":\"setup\",\"error\":\"refusing to run: the broker at $NS_DIR/mute.sock does not answer: Connection refused (a socket nobody listens on: start the broker with sbx-broker --listen $NS_DIR/mute.sock)\"}"
	rm -f "$NS_DIR/mute.sock"
}

@test "a run that ends normally still writes exactly one exit line" {
	local ws
	ws=$(ns_ws)
	run -3 --separate-stderr fd5 ns_user --status-fd 5 --workspace "$ws" -- sh -c 'exit 3'
	assert_equal "$(printf '%s\n' "${lines[@]}" | grep -c '"event":"exit"')" 1
	assert_line --index -1 --partial '"event":"exit","code":3'
	# The version: on the first line (the outer's), never again (pid 1 and
	# the command's reports are the outer's lines too).
	assert_line --index 0 --regexp '^\{"tool":"sbx-ns","event":"namespaces"'"$SBX_VER"',"pid":'
	assert_equal "$(printf '%s\n' "${lines[@]}" | grep -c '"version"')" 1
}

# sbx-ns as pid 1 of a pid namespace (a container's entrypoint), the container's /proc
# masked (a file bound over /proc/interrupts): its sandbox's pid 1, also pid 1, is refused
# a fresh /proc and dies; only the outer reports it. Its mount namespace is
# the host's less what would make the run another's: no other proc mount
# (one the host has elsewhere, a chroot's, would let the kernel grant a fresh
# proc), and a /run of its own (root's deny-write records, /run/sbx-ns, are
# then its own: a run of root's killed on this host meanwhile would be taken
# over and said on stderr).
@test "sbx-ns as pid 1 whose sandbox is refused a fresh /proc ends its status with one exit line" {
	local ws
	ws=$(ns_ws)
	run -106 --separate-stderr fd5 env KUBERNETES_SERVICE_HOST=198.18.0.1 unshare --pid --fork --mount \
		--propagation private --mount-proc sh -c 'for m in $(awk "\$9 == \"proc\" && \$5 != \"/proc\" { print \$5 }" \
			/proc/self/mountinfo | tac); do umount -l "$m" || exit; done &&
		mount -t tmpfs -o mode=0755 sbx-run /run &&
		mount --bind /dev/null /proc/interrupts &&
		exec sbx-ns --uid "$0" --gid "$1" --status-fd 5 --workspace "$2" -- /bin/true' \
		"$SBX_TEST_UID" "$SBX_TEST_GID" "$ws"
	assert_equal "$(printf '%s\n' "${lines[@]}" | grep -c '"event":"exit"')" 1
	assert_line --index -1 '{"tool":"sbx-ns","event":"exit","code":106,"stage":"setup"}'
	assert_equal "$stderr" "sbx-ns: fatal: unable to mount proc on /proc: Operation not permitted (Kubernetes: KUBERNETES_SERVICE_HOST is set); in a container, unmask /proc: podman --security-opt unmask=/proc/*, docker --security-opt systempaths=unconfined, Kubernetes securityContext procMount: Unmasked (with hostUsers: false; podman kube play before 4.7 ignores procMount: run it with contrib/kubernetes/runc-procmount, installed by contrib/kubernetes/setup-debian12.sh, or a newer podman)"
}

@test "a file name with terminal escapes is written escaped on stderr, and JSON-escaped on the status fd" {
	local ws name
	ws=$(ns_ws)
	name=$'.env\e[31mRED\a'
	ln -s /etc/passwd "$ws/$name"
	run -102 --separate-stderr fd5 ns_root --status-fd 5 --workspace "$ws" --deny-write '.env*' -- true
	assert_equal "$stderr" 'sbx-ns: fatal: unable to protect .env\x1b[31mRED\x07 in the workspace: it is a symlink'
	assert_output '{"tool":"sbx-ns","event":"exit"'"$SBX_VER"',"code":102,"stage":"setup","error":"unable to protect .env\u001b[31mRED\u0007 in the workspace: it is a symlink"}'
	# Nothing raw: no ESC or BEL byte reached stderr.
	run -0 bash -c '! printf %s "$1" | grep -q "[[:cntrl:]]"' _ "$stderr"
	# An 8-bit CSI (U+009B, a C1 control) and a byte that is not UTF-8 are
	# escaped too; a printable non-ASCII name is left readable.
	rm "$ws/$name"
	name=$'.env\xc2\x9b2J\xff-é'
	ln -s /etc/passwd "$ws/$name"
	run -102 --separate-stderr ns_root --workspace "$ws" --deny-write '.env*' -- true
	assert_equal "$stderr" 'sbx-ns: fatal: unable to protect .env\xc2\x9b2J\xff-é in the workspace: it is a symlink'
}

@test "a status fd that cannot be written is reported once on stderr; the run is not failed for it" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr ns_user --status-fd 5 --workspace "$ws" -- true 5>/dev/full
	assert_equal "$stderr" "sbx-ns: warning: unable to write a status line to fd 5: No space left on device (said once; later lines may be lost too)"
	# A reader that went away (EPIPE): said once too, and SIGPIPE does not end the run.
	run -0 --separate-stderr epipe5 sbx-ns --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" --status-fd 5 --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: warning: unable to write a status line to fd 5: Broken pipe (said once; later lines may be lost too)"
}

# A tool refused before it started still writes its exit line, and when the
# fd cannot take it that is said after the refusal, once.
@test "an exit line that cannot be written on a refusal is said once on stderr (sbx-cgroup, sbx-quota, sbx-seatbelt, sbx-ns)" {
	local ws w="unable to write a status line to fd 5: No space left on device (said once; later lines may be lost too)"
	ws=$(ns_ws)
	run -101 --separate-stderr sbx-cgroup --status-fd 5 --root "$ws" --name a --memory 64M -- true 5>/dev/full
	assert_equal "$stderr" "sbx-cgroup: fatal: hard limits unsupported: $ws is not on a cgroup v2 file system
sbx-cgroup: warning: $w"
	run -100 --separate-stderr sbx-quota verify --status-fd 5 --workspace "$ws" -- true 5>/dev/full
	assert_equal "$stderr" "sbx-quota: usage: missing --disk
sbx-quota: warning: $w"
	run -106 --separate-stderr sbx-seatbelt --status-fd 5 --workspace "$ws" -- true 5>/dev/full
	assert_equal "$stderr" "sbx-seatbelt: fatal: unable to run /usr/bin/sandbox-exec: Seatbelt exists only on macOS (on Linux confine with sbx-ns)
sbx-seatbelt: warning: $w"
	run -100 --separate-stderr ns_user --status-fd 5 --workspace "$ws" --bogus -- true 5>/dev/full
	assert_equal "$stderr" "sbx-ns: usage: unknown option --bogus
sbx-ns: warning: $w"
	# A reader that went away: the tool's own exit code, not death by SIGPIPE (141).
	w="unable to write a status line to fd 5: Broken pipe (said once; later lines may be lost too)"
	run -100 --separate-stderr epipe5 sbx-quota verify --status-fd 5 --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-quota: usage: missing --disk
sbx-quota: warning: $w"
	run -106 --separate-stderr epipe5 sbx-seatbelt --status-fd 5 --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-seatbelt: fatal: unable to run /usr/bin/sandbox-exec: Seatbelt exists only on macOS (on Linux confine with sbx-ns)
sbx-seatbelt: warning: $w"
	run -100 --separate-stderr epipe5 sbx-ns --status-fd 5 --bogus
	assert_equal "$stderr" "sbx-ns: usage: unknown option --bogus
sbx-ns: warning: $w"
}

# Every fd a tool reads to its end of file. The tools wait side by side, so
# the test takes one bounded wait, not one per tool.
@test "an fd read to end of file whose writer never closes it is refused after a bounded wait (100), not a hang" {
	local ws f="$BATS_TEST_TMPDIR/fifo" key="$BATS_TEST_TMPDIR/key" i
	ws=$(ns_ws)
	mkfifo "$f"
	chmod 0666 "$f"
	head -c 32 /dev/urandom >"$key"
	chmod 0600 "$key"
	# The test holds a writer open for as long as the tools read.
	exec 7<>"$f"
	local -a cmds=(
		"ns_user --workspace $ws --policy-fd 3 -- true"
		"sbx-cgroup --root $ws --name x --baseline-fd 3 -- true"
		"sbx-quota verify --workspace $ws --policy-fd 3 -- true"
		"sbx-check grant --key $key --plan-fd 3"
		"ns_root --workspace $ws --grant-key $key --grant-fd 3 -- true"
	)
	for i in "${!cmds[@]}"; do
		( set +e; ${cmds[$i]} 3<"$f" 2>"$BATS_TEST_TMPDIR/err.$i"; echo $? >"$BATS_TEST_TMPDIR/rc.$i" ) &
	done
	wait
	exec 7>&-
	local w="no end of file after 10 s (the writer must close its end)"
	local -a want=(
		"sbx-ns: usage: --policy-fd 3: $w"
		"sbx-cgroup: usage: --baseline-fd 3: $w"
		"sbx-quota: usage: --policy-fd 3: $w"
		"sbx-check: usage: --plan-fd: fd 3: $w"
		"sbx-ns: usage: --grant-fd 3: $w"
	)
	for i in "${!cmds[@]}"; do
		assert_equal "$(cat "$BATS_TEST_TMPDIR/err.$i")" "${want[$i]}"
		assert_equal "$(cat "$BATS_TEST_TMPDIR/rc.$i")" 100
	done
}

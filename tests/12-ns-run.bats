#!/usr/bin/env bats
# sbx-ns: what the command gets, as root (command as the test user) and as
# the unprivileged test user: its workspace, read-only roots, /tmp, /dev,
# its exit status, signals, the status and ready fds, and nothing more.

bats_require_minimum_version 1.5.0
load helpers
load ns


# ENOSPC is a namespace count limit, named with its value where it is spent.
LIMIT="a namespace count limit is reached (user.max_user_namespaces=0 here); an administrator must raise it: sysctl -w user.max_user_namespaces=15000"

@test "the workspace is writable and files land on the host owned by the command's identity" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr ns_root --workspace "$ws" --ro "$NS_DIR/bin" -- "$NS_ATT" write "$ws/by-root"
	assert_output "write: ok"
	run -0 --separate-stderr ns_user --workspace "$ws" --ro "$NS_DIR/bin" -- "$NS_ATT" write "$ws/by-user"
	assert_output "write: ok"
	assert_equal "$(stat -c %u:%g "$ws/by-root")" "$SBX_TEST_UID:$SBX_TEST_GID"
	assert_equal "$(stat -c %u:%g "$ws/by-user")" "$SBX_TEST_UID:$SBX_TEST_GID"
	assert_equal "$(cat "$ws/by-user")" "pwned"
}

@test "the command holds no capability in any set, bounding and ambient included, as root's run and as the user's" {
	local ws mode
	ws=$(ns_ws)
	for mode in ns_root ns_user; do
		run -0 --separate-stderr "$mode" --workspace "$ws" --ro "$NS_DIR/bin" -- \
			awk '/^Cap/ { print $1, $2 }' /proc/self/status
		assert_output "CapInh: 0000000000000000
CapPrm: 0000000000000000
CapEff: 0000000000000000
CapBnd: 0000000000000000
CapAmb: 0000000000000000"
	done
}

@test "the cwd is the workspace and the command runs as the chosen or the calling identity" {
	local ws
	ws=$(ns_ws)
	ns_expect "$ws" "cwd: $ws" cwd
	ns_expect "$ws" "euid: $SBX_TEST_UID" euid
}

@test "a --ro path is readable and not writable, a --rw path is writable" {
	local ws ro rw
	ws=$(ns_ws)
	ro=$(ns_ws)
	rw=$(ns_ws)
	echo data > "$ro/f"
	run -0 --separate-stderr ns_user --workspace "$ws" --ro "$NS_DIR/bin" --ro "$ro" --rw "$rw" -- \
		sh -c "cat $ro/f; $NS_ATT write $ro/g; $NS_ATT write $ro/f; $NS_ATT write $rw/h"
	assert_output "data
write: EROFS
write: EROFS
write: ok"
	assert_file_not_exist "$ro/g"
	assert_equal "$(cat "$ro/f")" "data"
	assert_file_exist "$rw/h"
}

@test "/tmp, /dev/shm and /dev/null are writable; /, /dev and the runtime are not" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr ns_root --workspace "$ws" --ro "$NS_DIR/bin" -- sh -c \
		"$NS_ATT write /tmp/x; $NS_ATT write /dev/shm/x; $NS_ATT append /dev/null; $NS_ATT write /x; $NS_ATT write /dev/x; $NS_ATT write /usr/x; $NS_ATT write /etc/x; $NS_ATT mkdir /home"
	assert_output "write: ok
write: ok
append: ok
write: EROFS
write: EROFS
write: EROFS
write: EROFS
mkdir: EROFS"
}

@test "the private /tmp is not the host's /tmp and vanishes with the sandbox" {
	local ws
	ws=$(ns_ws)
	run -0 ns_user --workspace "$ws" -- sh -c 'ls -A /tmp; echo x > /tmp/mine; echo x > /tmp/home/mine'
	assert_output "home"
	run -0 ns_user --workspace "$ws" -- ls -A /tmp /tmp/home
	assert_output "/tmp:
home

/tmp/home:"
}

@test "--tmp-in-workspace puts /tmp and /dev/shm in the workspace's .sbx-tmp" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr ns_root --tmp-in-workspace --workspace "$ws" -- sh -c 'echo a > /tmp/t; echo b > /dev/shm/s'
	assert_equal "$(cat "$ws/.sbx-tmp/tmp/t")" "a"
	assert_equal "$(cat "$ws/.sbx-tmp/shm/s")" "b"
	assert_equal "$(stat -c %u:%a "$ws/.sbx-tmp/tmp")" "$SBX_TEST_UID:700"
	run -0 --separate-stderr ns_user --tmp-in-workspace --workspace "$ws" -- cat /tmp/t
	assert_output "a"
}

@test "--tmp-in-workspace refuses a .sbx-tmp that is a symlink or someone else's" {
	local ws
	ws=$(ns_ws)
	ln -s /etc "$ws/.sbx-tmp"
	run -102 --separate-stderr ns_root --tmp-in-workspace --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to use $ws/.sbx-tmp for /tmp: not a directory"
	rm "$ws/.sbx-tmp"
	mkdir "$ws/.sbx-tmp"
	run -102 --separate-stderr ns_root --tmp-in-workspace --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to use $ws/.sbx-tmp for /tmp: owned by uid 0, not $SBX_TEST_UID"
}

@test "nothing of the host outside the roots exists inside" {
	local ws
	ws=$(ns_ws)
	run -0 ns_user --workspace "$ws" -- ls -A /
	assert_output "bin
dev
etc
lib
lib64
proc
sbin
tmp
usr
var"
	run -0 ns_user --workspace "$ws" -- ls -A /dev
	assert_output "fd
full
null
ptmx
pts
random
shm
stderr
stdin
stdout
tty
urandom
zero"
}

@test "the environment holds only PATH, HOME, TMPDIR, XDG_CACHE_HOME, XDG_CONFIG_HOME and what --setenv and --keep-env name" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr env -i SECRET=s KEEP=k "$SBX_BIN/sbx-ns" --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" \
		--workspace "$ws" --ro "$NS_DIR/bin" --setenv A=1 --keep-env KEEP --keep-env ABSENT -- "$NS_ATT" env
	assert_output "PATH=/usr/local/bin:/usr/bin:/bin
HOME=/tmp/home
TMPDIR=/tmp
XDG_CACHE_HOME=/tmp/home/.cache
XDG_CONFIG_HOME=/tmp/home/.config
KEEP=k
A=1"
	run -0 --separate-stderr ns_user --workspace "$ws" --ro "$NS_DIR/bin" --setenv PATH=/bin --setenv HOME=/tmp -- "$NS_ATT" env
	assert_output "TMPDIR=/tmp
XDG_CACHE_HOME=/tmp/.cache
XDG_CONFIG_HOME=/tmp/.config
PATH=/bin
HOME=/tmp"
}

@test "the command's exit code passes through, and 128+N when killed by signal N" {
	local ws
	ws=$(ns_ws)
	run -7 --separate-stderr ns_user --workspace "$ws" --ro "$NS_DIR/bin" -- "$NS_ATT" exit 7
	run -0 --separate-stderr ns_root --workspace "$ws" --ro "$NS_DIR/bin" -- "$NS_ATT" exit 0
	run -137 --separate-stderr ns_user --workspace "$ws" --ro "$NS_DIR/bin" -- "$NS_ATT" kill-self 9
	run -143 --separate-stderr ns_root --workspace "$ws" --ro "$NS_DIR/bin" -- "$NS_ATT" kill-self 15
	assert_equal "$stderr" ""
}

@test "a missing or unexecutable program exits 127 or 126 and says so" {
	local ws
	ws=$(ns_ws)
	run -127 --separate-stderr ns_user --workspace "$ws" -- no-such-program
	assert_equal "$stderr" "sbx-ns: fatal: unable to find no-such-program"
	run -127 --separate-stderr ns_user --workspace "$ws" -- /no/such/program
	assert_equal "$stderr" "sbx-ns: fatal: unable to exec /no/such/program: No such file or directory"
	echo data > "$ws/plain"
	run -126 --separate-stderr ns_root --workspace "$ws" -- "$ws/plain"
	assert_equal "$stderr" "sbx-ns: fatal: unable to exec $ws/plain: Permission denied"
}

@test "the status fd reports namespaces, the sandbox and the exit, one JSON object per line" {
	local ws
	ws=$(ns_ws)
	run -3 ns_fd5 ns_user --workspace "$ws" --ro "$NS_DIR/bin" --status-fd 5 -- "$NS_ATT" exit 3
	assert_line --index 0 --regexp '^\{"tool":"sbx-ns","event":"namespaces"'"$SBX_VER"',"pid":[0-9]+,"ns":\{"user":[0-9]+,"mnt":[0-9]+,"pid":[0-9]+,"ipc":[0-9]+,"uts":[0-9]+,"net":[0-9]+,"cgroup":[0-9]+\}\}$'
	assert_line --index 1 --regexp "^\\{\"tool\":\"sbx-ns\",\"event\":\"started\",\"landlock\":[1-9][0-9]*,\"seccomp\":true,\"net\":\"none\",\"hidepid\":true,\"mounts\":\"${SBX_TEST_MOUNTS:-new}\",\"userns\":\"blocked\",\"uid\":$SBX_TEST_UID,\"gid\":$SBX_TEST_GID\\}\$"
	assert_line --index 2 '{"tool":"sbx-ns","event":"exit","code":3}'
	assert_equal "${#lines[@]}" 3
	run -137 ns_fd5 ns_root --workspace "$ws" --ro "$NS_DIR/bin" --status-fd 5 -- "$NS_ATT" kill-self 9
	assert_line --index 2 '{"tool":"sbx-ns","event":"exit","code":137,"signal":9}'
}

@test "the namespaces in the status are new ones, not the caller's" {
	local ws host
	ws=$(ns_ws)
	host=$(stat -L -c %i /proc/self/ns/net)
	run -0 ns_fd5 ns_user --workspace "$ws" --status-fd 5 -- true
	refute_line --partial "\"net\":$host,"
	assert_line --index 0 --partial '"event":"namespaces"'
}

@test "a setup failure inside the sandbox is reported with stage setup and the step's exit code" {
	local ws d
	ws=$(ns_ws)
	d=$(mktemp -d /tmp/sbx-ns-test.XXXXXX)
	chmod 0755 "$d"
	run -111 --separate-stderr ns_fd5 ns_root --tmp-in-workspace --workspace "$ws" --ro "$d" --status-fd 5 -- true
	rmdir "$d"
	assert_line --index 1 '{"tool":"sbx-ns","event":"exit","code":111,"stage":"setup"}'
	assert_equal "$stderr" "sbx-ns: fatal: unable to create mount point $d: ${d#/} is not on the sandbox's own tmpfs"
}

@test "a --ro path under the host's /tmp appears in the private /tmp" {
	local ws d
	ws=$(ns_ws)
	d=$(mktemp -d /tmp/sbx-ns-test.XXXXXX)
	chmod 0755 "$d"
	echo hi > "$d/f"
	run -0 --separate-stderr ns_user --workspace "$ws" --ro "$d" -- cat "$d/f"
	rm -r "$d"
	assert_output "hi"
}

@test "blocked user namespaces are refused with 106, naming what the administrator must change" {
	local ws
	ws=$(ns_ws)
	chmod 0777 "$ws"
	run -106 --separate-stderr unshare --user --map-root-user sh -c \
		"echo 0 > /proc/sys/user/max_user_namespaces && exec sbx-ns --uid 1 --gid 1 --deny-write 'none*' --workspace $ws --status-fd 3 -- true 3>&1"
	assert_output "{\"tool\":\"sbx-ns\",\"event\":\"exit\"$SBX_VER,\"code\":106,\"stage\":\"setup\",\"error\":\"unable to create namespaces: No space left on device; $LIMIT\"}"
	assert_equal "$stderr" "sbx-ns: fatal: unable to create namespaces: No space left on device; $LIMIT"
}

@test "the ready fd gets one newline just before the command starts" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr ns_user --workspace "$ws" --ready-fd 4 -- sh -c "od -An -c $ws/ready" 4>"$ws/ready"
	assert_output "  \\n"
}

@test "SIGTERM to sbx-ns reaches the command through pid 1" {
	local ws pid
	ws=$(ns_ws)
	ns_user --workspace "$ws" --ro "$NS_DIR/bin" --ready-fd 4 -- "$NS_ATT" sleep 60 4>"$ws/ready" 3>&- &
	pid=$!
	wait_for '[ -s "$ws/ready" ]'
	# The command runs: the signal has someone to reach.
	wait_for 'pgrep -f "ns-attempt sleep 60" >/dev/null'
	kill -TERM "$(pgrep -P "$pid" -x sbx-ns)"
	local rc=0
	wait "$pid" || rc=$?
	assert_equal "$rc" 143
}

@test "killing whatever started sbx-ns kills the whole sandbox" {
	local ws parent
	ws=$(ns_ws)
	bash -c "sbx-ns --uid $SBX_TEST_UID --gid $SBX_TEST_GID --workspace $ws --ro $NS_DIR/bin --ready-fd 4 -- $NS_ATT sleep 997 4>$ws/ready & wait" 3>&- &
	parent=$!
	wait_for '[ -s "$ws/ready" ]'
	run -0 pgrep -f "ns-attempt sleep 997"
	kill -KILL "$parent"
	wait_for '! pgrep -f "ns-attempt sleep 997" >/dev/null'
	run -1 pgrep -f "ns-attempt sleep 997"
	run -1 pgrep -f "sbx-ns --uid $SBX_TEST_UID --gid $SBX_TEST_GID --workspace $ws"
}

@test "--require-landlock runs where the kernel has Landlock" {
	local ws
	ws=$(ns_ws)
	run -0 ns_fd5 ns_user --require-landlock --workspace "$ws" --status-fd 5 -- true
	assert_line --regexp '"landlock":[1-9][0-9]*,'
}

@test "--runtime replaces the system set; none leaves only /proc, /dev and /tmp" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr ns_root --runtime /usr:/bin:/lib:/lib64 --workspace "$ws" -- /bin/ls -A /
	assert_output "bin
dev
lib
lib64
proc
tmp
usr
var"
	run -127 --separate-stderr ns_root --runtime none --workspace "$ws" -- /bin/true
	assert_equal "$stderr" "sbx-ns: fatal: unable to find /bin/true: /bin/true exists on the host but is not visible in the sandbox (show it with --ro $(realpath /bin))"
}

@test "a status reader that goes away does not end the sandbox" {
	local ws
	ws=$(ns_ws)
	# A reader that opens the pipe and goes away: a background job the
	# shell waits for (a process substitution's $! could already be
	# reaped, and wait then failed now and then).
	mkfifo "$BATS_TEST_TMPDIR/st"
	true <"$BATS_TEST_TMPDIR/st" &
	exec 6>"$BATS_TEST_TMPDIR/st"
	wait $! # the reader is gone
	run -4 --separate-stderr ns_user --workspace "$ws" --status-fd 6 -- sh -c 'sleep 0.2; echo ran; exit 4'
	exec 6>&-
	assert_output "ran"
	# Said once, and the command's outcome stands.
	assert_equal "$stderr" "sbx-ns: warning: unable to write a status line to fd 6: Broken pipe (said once; later lines may be lost too)"
}

@test "without Landlock the sandbox still runs and says none; --require-landlock refuses with 106" {
	local ws
	ws=$(ns_ws)
	run -0 ns_fd5 "$NS_DIR/bin/ns-nolandlock" "$SBX_BIN/sbx-ns" --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" \
		--workspace "$ws" --status-fd 5 -- sh -c 'echo hi > x; cat x'
	assert_line --partial '"event":"started","landlock":"none",'
	assert_line "hi"
	run -0 --separate-stderr as_user "$NS_DIR/bin/ns-nolandlock" "$SBX_BIN/sbx-ns" --workspace "$ws" -- cat x
	assert_output "hi"
	run -106 --separate-stderr as_user "$NS_DIR/bin/ns-nolandlock" "$SBX_BIN/sbx-ns" --require-landlock --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to use Landlock: this kernel does not offer it (--require-landlock)"
	run -106 --separate-stderr "$NS_DIR/bin/ns-nolandlock" "$SBX_BIN/sbx-ns" --uid 1 --gid 1 --require-landlock --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to use Landlock: this kernel does not offer it (--require-landlock)"
}

@test "a --ro path inside the workspace is ignored with a warning on the status fd (--deny-write makes it read-only)" {
	local ws
	ws=$(ns_ws)
	mkdir "$ws/vendor"
	echo v > "$ws/vendor/lib"
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$ws/vendor"
	run -0 --separate-stderr ns_fd5 ns_user --workspace "$ws" --ro "$ws/vendor" --ro "$NS_DIR/bin" --status-fd 5 -- \
		sh -c "$NS_ATT append vendor/lib >&2; $NS_ATT write other >&2"
	assert_equal "$(head -1 <<<"$output")" '{"tool":"sbx-ns","event":"warning"'"$SBX_VER"',"option":"--ro","path":"'"$ws/vendor"'","reason":"inside the workspace: ignored"}'
	assert_equal "$stderr" "append: ok
write: ok"
	run -0 --separate-stderr ns_user --workspace "$ws" --deny-write vendor/lib --ro "$NS_DIR/bin" -- \
		sh -c "$NS_ATT append vendor/lib; $NS_ATT write other"
	assert_output "append: EROFS
write: ok"
}

@test "ordinary programs work inside: threads and subprocesses (clone3 falls back to clone), a pty, git" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr ns_user --workspace "$ws" -- python3 -c '
import os, pty, subprocess, threading
print(subprocess.run(["true"]).returncode)
t = threading.Thread(target=print, args=("thread",)); t.start(); t.join()
m, s = os.openpty(); os.write(m, b"hi\n"); print(os.read(s, 3), os.ttyname(s))'
	assert_output "0
thread
b'hi\\n' /dev/pts/0"
	run -0 --separate-stderr ns_root --workspace "$ws" -- sh -c 'git init -q repo && cd repo && git config user.email a@b && git config user.name n && echo x > f && git add f && git commit -qm m && git log --format=%s'
	assert_output "m"
}

@test "HOME is a private directory in the sandbox's /tmp: nothing of it reaches the workspace" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr ns_user --workspace "$ws" -- sh -c \
		'echo c > "$HOME/.gitconfig" && mkdir -p "$XDG_CACHE_HOME/pip" "$XDG_CONFIG_HOME" && stat -c "%A %U" "$HOME" && pwd'
	assert_output "drwx------ $SBX_TEST_USER
$ws"
	run -0 ls -A "$ws"
	assert_output ""
	# With --tmp-in-workspace it is kept under .sbx-tmp/tmp, outside the project's files.
	run -0 --separate-stderr ns_root --workspace "$ws" --tmp-in-workspace -- sh -c 'echo c > "$HOME/.gitconfig"'
	assert_equal "$(cat "$ws/.sbx-tmp/tmp/home/.gitconfig")" c
	rm -r "$ws/.sbx-tmp/tmp/home"
	ln -s /etc "$ws/.sbx-tmp/tmp/home"
	run -102 --separate-stderr ns_root --workspace "$ws" --tmp-in-workspace -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to use /tmp/home as HOME: not a directory of uid $SBX_TEST_UID (it is kept in the workspace's .sbx-tmp/tmp with --tmp-in-workspace)"
}

@test "--home DIR: a real, writable HOME the caller chooses, XDG_CACHE_HOME and XDG_CONFIG_HOME below it" {
	local ws home
	ws=$(ns_ws)
	home=$(ns_ws)
	for mode in ns_root ns_user; do
		run -0 --separate-stderr "$mode" --workspace "$ws" --home "$home" -- sh -c \
			'echo "$HOME $XDG_CACHE_HOME $XDG_CONFIG_HOME" && mkdir -p "$XDG_CACHE_HOME/pip" && echo c > "$HOME/.gitconfig"'
		assert_output "$home $home/.cache $home/.config"
		assert_equal "$stderr" ""
	done
	assert_dir_exist "$home/.cache/pip"
	assert_equal "$(cat "$home/.gitconfig")" c
}

@test "root dropping to a uid that cannot write the workspace gets a warning naming owner and mode, on stderr and the status" {
	local ws
	ws=$(ns_ws)
	chown 0:0 "$ws"
	run -0 --separate-stderr ns_fd5 ns_root --status-fd 5 --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: warning: uid $SBX_TEST_UID cannot write to the workspace $ws (owner uid 0, group 0, mode 0755): chown -R $SBX_TEST_UID:$SBX_TEST_GID $ws"
	assert_line -n 0 "{\"tool\":\"sbx-ns\",\"event\":\"warning\"$SBX_VER,\"option\":\"--uid\",\"path\":\"$ws\",\"reason\":\"uid $SBX_TEST_UID cannot write to the workspace $ws (owner uid 0, group 0, mode 0755): chown -R $SBX_TEST_UID:$SBX_TEST_GID $ws\"}"
	chown 4242:4242 "$ws"
	run -0 --separate-stderr ns_root --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: warning: uid $SBX_TEST_UID cannot write to the workspace $ws (owner uid 4242, group 4242, mode 0755): chown -R $SBX_TEST_UID:$SBX_TEST_GID $ws, or run it as --uid 4242 --gid 4242"
	chmod 0777 "$ws"
	run -0 --separate-stderr ns_root --workspace "$ws" -- true
	assert_equal "$stderr" ""
}

@test "exit 127 for a program the host has but the sandbox does not show says so and names the option" {
	local ws hidden
	ws=$(ns_ws)
	hidden=$(ns_ws)
	cp "$SBX_TESTBIN/ns-attempt" "$hidden/prog"
	chmod 0755 "$hidden/prog"
	run -127 --separate-stderr ns_user --workspace "$ws" -- "$hidden/prog"
	assert_equal "$stderr" "sbx-ns: fatal: unable to find $hidden/prog: $hidden/prog exists on the host but is not visible in the sandbox (show it with --ro $hidden)"
	run -127 --separate-stderr ns_root --workspace "$ws" --setenv PATH="$hidden:/usr/bin" -- prog
	assert_equal "$stderr" "sbx-ns: fatal: unable to find prog: $hidden/prog exists on the host but is not visible in the sandbox (show it with --ro $hidden)"
	run -127 --separate-stderr ns_user --workspace "$ws" -- /nonexistent/prog
	assert_equal "$stderr" "sbx-ns: fatal: unable to exec /nonexistent/prog: No such file or directory"
	run -0 --separate-stderr ns_user --workspace "$ws" --ro "$hidden" -- "$hidden/prog" read "$hidden/prog"
}

@test "exit 127 for a dynamic program whose loader a custom --runtime leaves out names the loader" {
	local ws
	ws=$(ns_ws)
	run -127 --separate-stderr ns_user --workspace "$ws" --runtime /usr -- /usr/bin/true
	assert_equal "$stderr" "sbx-ns: fatal: unable to exec /usr/bin/true: its program loader /lib64/ld-linux-x86-64.so.2 is not in the sandbox (add it to --runtime)"
	run -0 --separate-stderr ns_user --workspace "$ws" --runtime /usr:/lib:/lib64 -- /usr/bin/true
}

@test "--pty gives the command a terminal of the sandbox's own devpts, relayed to the caller; stdin's end is the pty's EOF" {
	local ws
	ws=$(ns_ws)
	run -7 ns_root --workspace "$ws" --pty -- sh -c 'tty; test -t 0 && test -t 1 && test -t 2 && echo tty; cat; echo done; exit 7' </dev/null
	assert_output $'/dev/pts/0\r\ntty\r\ndone\r'
	run -4 ns_user --workspace "$ws" --pty -- sh -c 'tty; exit 4' </dev/null
	assert_output $'/dev/pts/0\r'
	run -100 --separate-stderr ns_user --workspace "$ws" --pty --serve /var/tmp/x -- true
	assert_equal "$stderr" "sbx-ns: usage: --pty is for a command: a living sandbox's commands ask for one (sbx-ns --join PATH --pty)"
}

#!/usr/bin/env bats
# sbx-ns: the escape catalog. Each attempt runs from inside a sandbox,
# once started by root (command as the test user) and once by the test
# user, through tests/progs/ns-attempt.c, and must fail in exactly the
# expected way and leave the host unchanged.

bats_require_minimum_version 1.5.0
load helpers
load ns

setup_file() {
	ns_setup_file
	echo "sibling secret" > "$NS_DIR/secret"
	chmod 0644 "$NS_DIR/secret"
	mkdir -p "$NS_DIR/outside"
	chmod 0777 "$NS_DIR/outside"
	echo "host file" > "$NS_DIR/ws/victim-target"
	ln -s "$NS_DIR/outside" "$NS_DIR/ws/link-out"
	ln -s /etc/passwd "$NS_DIR/ws/link-passwd"
	echo data > "$NS_DIR/ws/file"
	chown -h "$SBX_TEST_UID:$SBX_TEST_GID" "$NS_DIR/ws/file" "$NS_DIR/ws/link-out" "$NS_DIR/ws/link-passwd"
	ns_home_ssh
}


@test "writing outside the writable roots fails, directly and through planted symlinks" {
	local sum
	sum=$(md5sum /etc/passwd)
	ns_expect "$NS_WS" "write: EROFS" write /etc/sbx-ns-escape
	ns_expect "$NS_WS" "write: EROFS" write /usr/sbx-ns-escape
	ns_expect "$NS_WS" "write: EROFS" write /sbx-ns-escape
	ns_expect "$NS_WS" "write: ENOENT" write "$NS_WS/link-out/escaped"
	ns_expect "$NS_WS" "write: EROFS" write "$NS_WS/link-passwd"
	ns_expect "$NS_WS" "write: ENOENT" write "$NS_DIR/outside/escaped"
	assert_file_not_exist /etc/sbx-ns-escape
	assert_file_not_exist /usr/sbx-ns-escape
	assert_file_not_exist /sbx-ns-escape
	assert_file_not_exist "$NS_DIR/outside/escaped"
	assert_equal "$(md5sum /etc/passwd)" "$sum"
}

@test "the caller's ~/.ssh and a sibling directory's secret cannot be read" {
	ns_expect "$NS_WS" "read: ENOENT" read "$NS_HOME/.ssh/id_rsa"
	ns_expect "$NS_WS" "read: ENOENT" read /root/.ssh/id_rsa
	ns_expect "$NS_WS" "read: ENOENT" read "$NS_DIR/secret"
}

@test "mounting, remounting and the new mount API are denied" {
	ns_expect "$NS_WS" "mount-tmpfs: EPERM" mount-tmpfs
	ns_expect "$NS_WS" "remount: EPERM" remount /
	ns_expect "$NS_WS" "remount: EPERM" remount /usr
	ns_expect "$NS_WS" "remount: EPERM" remount "$NS_WS"
	ns_expect "$NS_WS" "fsopen: EPERM" fsopen
}

@test "new namespaces cannot be created: unshare, clone with namespace flags, clone3, setns" {
	ns_expect "$NS_WS" "unshare-user: EPERM" unshare-user
	ns_expect "$NS_WS" "unshare-net: EPERM" unshare-net
	ns_expect "$NS_WS" "clone-newuser: EPERM" clone-newuser
	ns_expect "$NS_WS" "clone3: ENOSYS" clone3
	ns_expect "$NS_WS" "setns: EPERM" setns
	ns_expect "$NS_WS" "unshare-files: ok" unshare-files
	ns_expect "$NS_WS" "fork: ok" fork
}

@test "util-linux unshare -U fails inside" {
	run -1 --separate-stderr ns_user --workspace "$NS_WS" -- unshare -U true
	assert_equal "$stderr" "unshare: unshare failed: Operation not permitted"
}

@test "pid 1 can neither be traced nor read nor killed, and no host process is visible" {
	ns_expect "$NS_WS" "ptrace: EPERM" ptrace 1
	ns_expect "$NS_WS" "vm-read: EPERM" vm-read 1
	ns_expect "$NS_WS" "kill: EPERM" kill 1
	ns_expect "$NS_WS" "pids: none" pids
}

@test "a host process cannot be signalled by its pid" {
	local pid
	sleep 1000 3>&- &
	pid=$!
	ns_expect "$NS_WS" "kill: ESRCH" kill "$pid"
	run -0 kill -0 "$pid"
	kill "$pid"
}

@test "TIOCSTI is denied, also with the high bits of the command set" {
	ns_expect "$NS_WS" "tiocsti: EPERM" tiocsti
	ns_expect "$NS_WS" "tiocsti-high: EPERM" tiocsti-high
}

@test "project id, PROJINHERIT and inode flags cannot be changed" {
	ns_expect "$NS_WS" "fssetxattr: EPERM" fssetxattr "$NS_WS/file"
	ns_expect "$NS_WS" "fssetxattr-high: EPERM" fssetxattr-high "$NS_WS/file"
	ns_expect "$NS_WS" "setflags: EPERM" setflags "$NS_WS/file"
}

@test "keyrings, bpf, perf, io_uring, userfaultfd, open_by_handle_at and personality are denied" {
	ns_expect "$NS_WS" "keyctl: EPERM" keyctl
	ns_expect "$NS_WS" "bpf: EPERM" bpf
	ns_expect "$NS_WS" "perf: EPERM" perf
	ns_expect "$NS_WS" "io-uring: EPERM" io-uring
	ns_expect "$NS_WS" "userfaultfd: EPERM" userfaultfd
	ns_expect "$NS_WS" "open-by-handle: EPERM" open-by-handle
	ns_expect "$NS_WS" "personality: EPERM" personality
}

@test "SysV IPC is the sandbox's own (its IPC namespace); a POSIX message queue Landlock refuses to make" {
	ns_expect "$NS_WS" "msgget: ok" msgget
	ns_expect "$NS_WS" "shmget: ok" shmget
	ns_expect "$NS_WS" "semget: ok" semget
	# mq_open creates a file on the kernel's mqueue mount, beneath no Landlock rule.
	ns_expect "$NS_WS" "mq-open: EACCES" mq-open "sbx-full-$$"
	run -0 "$NS_ATT" mq-unlink "sbx-full-$$"
	assert_output "mq-unlink: ENOENT"
}

@test "an x32 system call and int 0x80 kill the process" {
	ns_expect "$NS_WS" "x32: SIGSYS" x32
	ns_expect "$NS_WS" "$(ns_int80_want)" int80
}

@test "offline: socket() fails for every family, socketpair works" {
	ns_expect "$NS_WS" "socket-inet: EPERM" socket-inet
	ns_expect "$NS_WS" "socket-unix: EPERM" socket-unix
	ns_expect "$NS_WS" "socket-netlink: EPERM" socket-netlink
	ns_expect "$NS_WS" "socketpair: ok" socketpair
}

@test "an abstract unix socket the test opened on the host cannot be reached" {
	local pid name=sbx-ns-test-$$
	python3 -c "
import socket, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind('\0$name'); s.listen(1); time.sleep(60)" 3>&- &
	pid=$!
	wait_for 'grep -q "@$name\$" /proc/net/unix'
	ns_expect "$NS_WS" "connect-abstract: EPERM" connect-abstract "$name"
	kill "$pid"
}

@test "an fd the caller leaked is closed before the command starts" {
	run -0 --separate-stderr ns_root --workspace "$NS_WS" --ro "$NS_DIR/bin" -- "$NS_ATT" read-fd 7 7<"$NS_DIR/secret"
	assert_output "read-fd: EBADF"
	run -0 --separate-stderr ns_user --workspace "$NS_WS" --ro "$NS_DIR/bin" -- "$NS_ATT" read-fd 7 7<"$NS_DIR/secret"
	assert_output "read-fd: EBADF"
}

@test "a setuid-root binary copied inside gains nothing" {
	cp "$NS_ATT" "$NS_WS/suid"
	chown 0:0 "$NS_WS/suid"
	chmod 4755 "$NS_WS/suid"
	run -0 --separate-stderr ns_root --workspace "$NS_WS" -- "$NS_WS/suid" euid
	assert_output "euid: $SBX_TEST_UID"
	run -0 --separate-stderr ns_user --workspace "$NS_WS" -- "$NS_WS/suid" euid
	assert_output "euid: $SBX_TEST_UID"
	rm -f "$NS_WS/suid"
}

@test "sbx-ns inside sbx-ns is refused: user namespaces are blocked in the sandbox" {
	local bin
	bin=$(ns_ws)
	cp "$SBX_BIN/sbx-ns" "$bin/sbx-ns"
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$bin/sbx-ns"
	chmod 0755 "$bin/sbx-ns"
	run -106 --separate-stderr ns_user --workspace "$NS_WS" --ro "$bin" -- "$bin/sbx-ns" --deny-write "none*" --workspace "$NS_WS" -- true
	# Only the sysctls this kernel has are named.
	local clone= aa=
	[ -e /proc/sys/kernel/unprivileged_userns_clone ] && clone="sysctl kernel.unprivileged_userns_clone=1, "
	[ -e /proc/sys/kernel/apparmor_restrict_unprivileged_userns ] &&
		aa="kernel.apparmor_restrict_unprivileged_userns=0 (or an AppArmor profile for sbx-ns), "
	assert_equal "$stderr" "sbx-ns: fatal: unable to create namespaces: Operation not permitted; user namespaces are blocked for this caller; an administrator must allow them: ${clone}user.max_user_namespaces above 0, ${aa}no container seccomp policy denying clone with CLONE_NEWUSER"
}

@test "the host is unchanged after the catalog" {
	assert_file_not_exist /etc/sbx-ns-escape
	assert_file_not_exist /usr/sbx-ns-escape
	run -0 ls -A "$NS_DIR/outside"
	assert_output ""
	assert_equal "$(cat "$NS_DIR/secret")" "sibling secret"
}

@test "sysctls cannot be written and pid 1's /proc entries do not exist" {
	ns_expect "$NS_WS" "append: EACCES" append /proc/sys/user/max_user_namespaces
	ns_expect "$NS_WS" "append: EACCES" append /proc/sys/kernel/hostname
	ns_expect "$NS_WS" "read: ENOENT" read /proc/1/environ
}

@test "root's run clears the supplementary groups" {
	run -0 --separate-stderr ns_root --workspace "$NS_WS" -- id -G
	assert_output "$SBX_TEST_GID"
}

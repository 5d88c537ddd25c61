#!/usr/bin/env bats
# The escape catalog of tests/14-ns-escape.bats against the Landlock tier: the same
# attempts (tests/progs/ns-attempt.c), from a command started by root for the test user
# and by the test user, with namespace creation made to fail by tests/progs/ns-nouserns
# and a baseline saying "fallback": "landlock". What the tier stops is asserted as in the
# full sandbox (with the errno the tier gives); what it cannot stop by design has a test
# of its own, "known difference", pinning today's behaviour so that a change in either
# direction is noticed (docs/policies.md: The Landlock tier, known differences).

load helpers
load ns

setup_file() {
	ns_setup_file
	cp "$SBX_TESTBIN/ns-nouserns" "$SBX_BIN/sbx-ns" "$NS_DIR/bin/"
	chmod 0755 "$NS_DIR/bin/ns-nouserns" "$NS_DIR/bin/sbx-ns"
	# The workspaces live in $NS_DIR/tier (the writable root); $NS_DIR is outside it.
	mkdir -m 0755 "$NS_DIR/tier" "$NS_DIR/conf"
	echo "sibling secret" >"$NS_DIR/secret"
	chmod 0644 "$NS_DIR/secret"
	mkdir -m 0777 "$NS_DIR/outside"
	ns_home_ssh
	printf '{"sandbox":{"fallback":"landlock","denyWrite":[],"readableRoots":["%s","%s"],"writableRoots":["%s"]}}\n' \
		"$NS_DIR/tier" "$NS_DIR/bin" "$NS_DIR/tier" >"$NS_DIR/conf/base.json"
	printf '{"sandbox":{"denyWrite":[],"readableRoots":["%s"]}}\n' "$NS_DIR/bin" >"$NS_DIR/conf/request.json"
	chmod 0644 "$NS_DIR"/conf/*.json
}

teardown_file() {
	ns_teardown_file
}

teardown() {
	[ -z "${outside:-}" ] || kill "$outside" 2>/dev/null || true
	[ -z "${ipcs_made:-}" ] || ipcrm $ipcs_made 2>/dev/null || :
	[ -z "${mq:-}" ] || "$NS_ATT" mq-unlink "$mq-out" >/dev/null
	[ -z "${mq:-}" ] || "$NS_ATT" mq-unlink "$mq-in" >/dev/null
}

warning='sbx-ns: WARNING: no user namespaces here \(Operation not permitted\): the command runs in the landlock tier: '

# A workspace in the tier's writable root, owned by the test user, with the planted links.
tier_ws() {
	local d
	d=$(mktemp -d "$NS_DIR/tier/ws.XXXXXX")
	chmod 0755 "$d"
	echo data >"$d/file"
	ln -s "$NS_DIR/outside" "$d/link-out"
	ln -s /etc/passwd "$d/link-passwd"
	chown -hR "$SBX_TEST_UID:$SBX_TEST_GID" "$d"
	echo "$d"
}

# tier root|user WS CMD...: CMD in the tier, started by root for the test user or by it.
tier() {
	local who=$1 ws=$2
	shift 2
	if [ "$who" = root ]; then
		"$NS_DIR/bin/ns-nouserns" "$SBX_BIN/sbx-ns" --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" \
			--baseline "$NS_DIR/conf/base.json" --policy-fd 4 --workspace "$ws" -- "$@" 4<"$NS_DIR/conf/request.json"
	else
		as_user "$NS_DIR/bin/ns-nouserns" "$SBX_BIN/sbx-ns" --baseline "$NS_DIR/conf/base.json" \
			--policy-fd 4 --workspace "$ws" -- "$@" 4<"$NS_DIR/conf/request.json"
	fi
}

# tier_expect "expected output" ATTEMPTS: each attempt (one word list per line) through
# ns-attempt in one run of the tier, as root for the test user and as the test user; the
# only line on stderr is the tier's WARNING.
tier_expect() {
	local want=$1 attempts=$2 who ws
	for who in root user; do
		ws=$(tier_ws)
		run -0 --separate-stderr tier "$who" "$ws" sh -c "while read -r a; do $NS_ATT \$a; done" <<<"${attempts//@WS@/$ws}"
		assert_output "$want"
		assert_regex "$stderr" "^$warning"
		assert_equal "${#stderr_lines[@]}" 1
	done
}

# A process of the test user outside the sandbox.
start_outside() {
	setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" --init-groups sleep 600 3>&- &
	outside=$!
}

@test "mounting, namespaces, TIOCSTI, inode flags, kernel interfaces, x32, sockets: refused as in the full sandbox" {
	tier_expect "mount-tmpfs: EPERM
remount: EPERM
remount: EPERM
remount: EPERM
fsopen: EPERM
unshare-user: EPERM
unshare-net: EPERM
clone-newuser: EPERM
clone3: ENOSYS
setns: EPERM
unshare-files: ok
fork: ok
tiocsti: EPERM
tiocsti-high: EPERM
fssetxattr: EPERM
fssetxattr-high: EPERM
setflags: EPERM
keyctl: EPERM
bpf: EPERM
perf: EPERM
io-uring: EPERM
userfaultfd: EPERM
open-by-handle: EPERM
personality: EPERM
x32: SIGSYS
$(ns_int80_want)
socket-inet: EPERM
socket-unix: EPERM
socket-netlink: EPERM
socketpair: ok
connect-abstract: EPERM
ptrace: EPERM
vm-read: EPERM
kill: EPERM
append: EACCES
append: EACCES" "mount-tmpfs
remount /
remount /usr
remount @WS@
fsopen
unshare-user
unshare-net
clone-newuser
clone3
setns
unshare-files
fork
tiocsti
tiocsti-high
fssetxattr @WS@/file
fssetxattr-high @WS@/file
setflags @WS@/file
keyctl
bpf
perf
io-uring
userfaultfd
open-by-handle
personality
x32
int80
socket-inet
socket-unix
socket-netlink
socketpair
connect-abstract sbx-tier-escape
ptrace 1
vm-read 1
kill 1
append /proc/sys/user/max_user_namespaces
append /proc/sys/kernel/hostname"
}

@test "writes outside, through planted symlinks, and secrets: refused by Landlock (EACCES), the host unchanged" {
	local sum
	sum=$(md5sum /etc/passwd)
	# The full sandbox answers EROFS and ENOENT here: no such path or a read-only mount.
	tier_expect "write: EACCES
write: EACCES
write: EACCES
write: EACCES
write: EACCES
write: EACCES
read: EACCES
read: EACCES
read: EACCES" "write /etc/sbx-ns-escape
write /usr/sbx-ns-escape
write /sbx-ns-escape
write @WS@/link-out/escaped
write @WS@/link-passwd
write $NS_DIR/outside/escaped
read $NS_HOME/.ssh/id_rsa
read /root/.ssh/id_rsa
read $NS_DIR/secret"
	assert_not_exist /etc/sbx-ns-escape
	assert_not_exist /usr/sbx-ns-escape
	assert_not_exist /sbx-ns-escape
	run -0 ls -A "$NS_DIR/outside"
	assert_output ""
	assert_equal "$(md5sum /etc/passwd)" "$sum"
	assert_equal "$(cat "$NS_DIR/secret")" "sibling secret"
}

# sbx-ns inside the tier fails closed before it reaches the namespaces (the full sandbox:
# 106 at clone): the directory of its deny-write records in the host's /tmp can be
# neither listed nor written, nor made when it is not there.
@test "a leaked fd is closed, a setuid-root copy gains nothing, groups are cleared, unshare -U and sbx-ns inside fail" {
	local ws who
	ws=$(tier_ws)
	cp "$NS_ATT" "$ws/suid"
	chown 0:0 "$ws/suid"
	chmod 4755 "$ws/suid"
	for who in root user; do
		run -0 --separate-stderr tier "$who" "$ws" sh -c "$NS_ATT read-fd 7; $ws/suid euid; id -G; unshare -U true 2>&1
			$NS_DIR/bin/sbx-ns --deny-write 'none*' --workspace $ws -- true 2>&1; echo \$?" 7<"$NS_DIR/secret"
		assert_equal "${#lines[@]}" 6
		assert_equal "${lines[0]}" "read-fd: EBADF"
		assert_equal "${lines[1]}" "euid: $SBX_TEST_UID"
		assert_equal "${lines[2]}" "$SBX_TEST_GID"
		assert_equal "${lines[3]}" "unshare: unshare failed: Operation not permitted"
		# The host's record directory of the test user exists or not,
		# as earlier runs left it: either way sbx-ns stops there.
		assert_regex "${lines[4]}" "^sbx-ns: fatal: unable to (read /tmp/sbx-ns-$SBX_TEST_UID: Permission denied|create /tmp/sbx-ns-$SBX_TEST_UID for the deny-write records: Permission denied; to fix: .*)\$"
		assert_equal "${lines[5]}" 111
	done
}

@test "known difference: the host's processes are listed, pid 1 is the host's and its cmdline readable" {
	local who ws
	for who in root user; do
		ws=$(tier_ws)
		# The full sandbox: "pids: none", and /proc/1/environ does not exist (ENOENT).
		run -0 --separate-stderr tier "$who" "$ws" sh -c "$NS_ATT pids; $NS_ATT read /proc/1/environ; $NS_ATT read /proc/1/cmdline"
		assert_line --index 0 --regexp '^pids: [0-9]+( [0-9]+)+$'
		assert_line --index 1 "read: EACCES"
		assert_line --index 2 "read: ok"
	done
}

@test "known difference: a same-user process outside is visible, its cmdline readable; its environ, tracing and signals are not" {
	local who ws
	start_outside
	for who in root user; do
		ws=$(tier_ws)
		# The full sandbox: no such process (ENOENT, ESRCH).
		run -0 --separate-stderr tier "$who" "$ws" sh -c "tr '\\0' ' ' </proc/$outside/cmdline; echo
			for a in 'read /proc/$outside/environ' 'ptrace $outside' 'vm-read $outside' 'kill $outside'; do $NS_ATT \$a; done"
		assert_output "sleep 600 
read: EACCES
ptrace: EPERM
vm-read: EPERM
kill: EPERM"
	done
	run -0 kill -0 "$outside"
}

@test "known difference: the metadata of the host's files is visible; directories outside the roots cannot be listed, contents not read" {
	local who ws
	for who in root user; do
		ws=$(tier_ws)
		# The full sandbox: neither $NS_DIR nor the secret exists in its root. Landlock
		# does not govern stat(2) or a path walk; listing needs its READ_DIR right, given
		# below the roots only.
		run -0 --separate-stderr tier "$who" "$ws" sh -c "$NS_ATT list $NS_DIR; $NS_ATT list /; stat -c '%s %U' $NS_DIR/secret; $NS_ATT read $NS_DIR/secret; $NS_ATT list $ws; $NS_ATT list /usr/bin"
		assert_output "list: EACCES
list: EACCES
15 root
read: EACCES
list: ok
list: ok"
	done
}

@test "SysV IPC and POSIX message queues (the host's, no IPC namespace): nothing made, an outside one neither used nor removed" {
	local q m s
	ipcs_made=
	run -0 as_user ipcmk -Q
	q=${output##* }
	ipcs_made="-q $q"
	run -0 as_user ipcmk -M 4096
	m=${output##* }
	ipcs_made+=" -m $m"
	run -0 as_user ipcmk -S 1
	s=${output##* }
	ipcs_made+=" -s $s"
	mq="sbx-tier-$$"
	run -0 as_user "$NS_ATT" mq-open "$mq-out"
	assert_output "mq-open: ok"
	tier_expect "msgget: EPERM
shmget: EPERM
semget: EPERM
mq-open: EPERM
msgsnd: EPERM
shmat: EPERM
semop: EPERM
msgctl-rm: EPERM
shmctl-rm: EPERM
semctl-rm: EPERM
mq-unlink: EPERM
read: ok" "msgget
shmget
semget
mq-open $mq-in
msgsnd $q
shmat $m
semop $s
msgctl-rm $q
shmctl-rm $m
semctl-rm $s
mq-unlink $mq-out
read /proc/sysvipc/msg"
	# Their list in the host's /proc stays readable (known difference: the host's /proc).
	# Still there, untouched (the queue empty, the semaphore 0), and nothing made inside.
	run -0 ipcs -q -i "$q"
	assert_output --partial $'\tqnum=0\t'
	run -0 ipcs -m -i "$m"
	assert_output --partial $'\tnattch=0\n'
	run -0 ipcs -s -i "$s"
	assert_line --regexp '^0 +0 '
	run -0 "$NS_ATT" mq-unlink "$mq-in"
	assert_output "mq-unlink: ENOENT"
}

@test "known difference: the hostname and the mount table are the host's" {
	local ws
	ws=$(tier_ws)
	run -0 --separate-stderr tier user "$ws" sh -c 'cat /proc/sys/kernel/hostname; grep -c . /proc/self/mounts'
	assert_line --index 0 "$(cat /proc/sys/kernel/hostname)"
	assert_line --index 1 "$(grep -c . /proc/self/mounts)"
}

@test "no longer a difference: a descendant that leaves the session dies with the run (subreapers)" {
	local ws
	ws=$(tier_ws)
	run -0 --separate-stderr tier user "$ws" sh -c 'setsid sleep 600 >/dev/null 2>&1 </dev/null & echo $! >pid'
	# reaped before sbx-ns returned
	assert_not_exist "/proc/$(cat "$ws/pid")"
}

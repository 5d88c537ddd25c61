#!/usr/bin/env bats
# sbx-ns process policy: --command-path, --allow-exec, --protect, grants
# (--grant-fd/--grant-key/--timeout). The library steps are tested in depth
# by tests/65-grant.bats and tests/66-grant-policy.bats; these prove sbx-ns
# calls them, in its order.

bats_require_minimum_version 1.5.0
load helpers
load ns


ARGV_ONLY="sbx-ns: warning: the grant is argv-only: it binds the command (argv, cwd, env, stdin, timeout), not the sandbox (mounts, network, identity, filters, program); a plan grant binds both: sbx-check grant --plan"

setup() {
	ws=$(ns_ws)
	key="$NS_DIR/key.$BATS_TEST_NUMBER"
	head -c 32 /dev/urandom >"$key"
	chmod 0600 "$key"
}

# The environment sbx-ns gives the command by default, for argv grants
# (plan grants: tests/67-grant-plan.bats).
grant() {
	sbx-check grant --kind argv --key "$key" --cwd "$ws" --env "PATH=${GPATH:-/usr/local/bin:/usr/bin:/bin}" \
		--env HOME=/tmp/home --env TMPDIR=/tmp --env XDG_CACHE_HOME=/tmp/home/.cache \
		--env XDG_CONFIG_HOME=/tmp/home/.config "$@"
}

@test "sbx-ns refuses bad command paths, allow-exec and protect paths" {
	run -100 --separate-stderr ns_root --workspace "$ws" --command-path /usr/bin::/bin -- true
	assert_equal "$stderr" "sbx-ns: usage: --command-path: invalid path list '/usr/bin::/bin': empty entry 2"
	run -100 --separate-stderr ns_root --workspace "$ws" --command-path bin -- true
	assert_equal "$stderr" "sbx-ns: usage: --command-path: invalid path list 'bin': entry 'bin': not absolute"
	run -100 --separate-stderr ns_root --workspace "$ws" --command-path /bin --setenv PATH=/x -- true
	assert_equal "$stderr" "sbx-ns: usage: --setenv: PATH is set by --command-path"
	run -100 --separate-stderr ns_root --workspace "$ws" --allow-exec bin/true -- true
	assert_equal "$stderr" "sbx-ns: usage: --allow-exec: invalid path 'bin/true': not absolute"
	run -100 --separate-stderr ns_root --workspace "$ws" --protect / -- true
	assert_equal "$stderr" "sbx-ns: usage: --protect: invalid path '/': the whole file system"
	run -100 --separate-stderr ns_root --workspace "$ws" --grant-fd 3 -- true 3</dev/null
	assert_equal "$stderr" "sbx-ns: usage: --grant-fd and --grant-key go together"
}

@test "sbx-ns refuses bad timeouts, grant fds and keys, and command path entries" {
	local t
	for t in "0:zero not allowed" "-1:negative" "inf:not a number" "1x:trailing garbage" \
		"99999999999999999999:overflow"; do
		run -100 --separate-stderr ns_root --workspace "$ws" --timeout "${t%%:*}" -- true
		assert_equal "$stderr" "sbx-ns: usage: --timeout: invalid duration '${t%%:*}': ${t#*:}"
	done
	run -100 --separate-stderr ns_root --workspace "$ws" --timeout '' -- true
	assert_equal "$stderr" "sbx-ns: usage: --timeout: invalid duration '': empty"
	run -100 --separate-stderr ns_root --workspace "$ws" --timeout 1 --timeout 2 -- true
	assert_equal "$stderr" "sbx-ns: usage: --timeout given twice"
	run -100 --separate-stderr ns_root --workspace "$ws" --grant-fd 9 --grant-key "$key" -- true
	assert_equal "$stderr" "sbx-ns: usage: --grant-fd: invalid fd '9': not open; open it for the tool (in the shell: 9<FILE or 9>FILE, or a previous tool's --pass-fd 9)"
	run -100 --separate-stderr ns_root --workspace "$ws" --grant-fd 3 --grant-key "$key" --status-fd 3 -- true 3</dev/null
	assert_equal "$stderr" "sbx-ns: usage: --status-fd: fd 3 is also --grant-fd"
	run -100 --separate-stderr ns_root --workspace "$ws" --grant-key key -- true
	assert_equal "$stderr" "sbx-ns: usage: --grant-key: invalid path 'key': not absolute"
	run -100 --separate-stderr ns_root --workspace "$ws" --grant-key "$key" -- true
	assert_equal "$stderr" "sbx-ns: usage: --grant-fd and --grant-key go together"
	run -100 --separate-stderr ns_root --workspace "$ws" --command-path '' -- true
	assert_equal "$stderr" "sbx-ns: usage: --command-path: invalid path list '': empty entry 1"
	run -100 --separate-stderr ns_root --workspace "$ws" --command-path /bin: -- true
	assert_equal "$stderr" "sbx-ns: usage: --command-path: invalid path list '/bin:': empty entry 2"
	run -100 --separate-stderr ns_root --workspace "$ws" --command-path "$NS_DIR/nope" -- true
	assert_equal "$stderr" "sbx-ns: usage: --command-path: invalid path list '$NS_DIR/nope': entry '$NS_DIR/nope': No such file or directory"
	run -100 --separate-stderr ns_root --workspace "$ws" --command-path /usr/../bin -- true
	assert_equal "$stderr" "sbx-ns: usage: --command-path: invalid path list '/usr/../bin': entry '/usr/../bin': '..' component"
	run -100 --separate-stderr ns_root --workspace "$ws" --command-path /bin --keep-env PATH -- true
	assert_equal "$stderr" "sbx-ns: usage: --keep-env: PATH is set by --command-path"
	run -100 --separate-stderr ns_root --workspace "$ws" --allow-exec "$NS_DIR/bin" -- true
	assert_equal "$stderr" "sbx-ns: usage: --allow-exec: invalid path '$NS_DIR/bin': not a regular file"
	run -100 --separate-stderr ns_root --workspace "$ws" --protect rel -- true
	assert_equal "$stderr" "sbx-ns: usage: --protect: invalid path 'rel': not absolute"
}

@test "the command path finds the program and is the command's PATH" {
	run -0 --separate-stderr ns_root --workspace "$ws" --command-path /usr/bin:/bin -- sh -c 'echo "$PATH"'
	assert_output "/usr/bin:/bin"
	run -127 --separate-stderr ns_root --workspace "$ws" --command-path /usr/sbin -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to find true: /usr/bin/true is on the caller's PATH but not on the sandbox's command path (bring it in with --command-path /usr/bin:/usr/sbin)"
	run -127 --separate-stderr ns_root --workspace "$ws" --command-path /usr/sbin -- sbx-no-such-program
	assert_equal "$stderr" "sbx-ns: fatal: unable to find sbx-no-such-program"
}

@test "protect refuses a workspace or --rw root that would expose a protected path" {
	mkdir -p "$ws/keys"
	run -102 --separate-stderr ns_root --workspace "$ws" --protect "$ws/keys" -- true
	assert_equal "$stderr" "sbx-ns: fatal: refusing to start: protected path $ws/keys is writable through --workspace $ws"
	run -102 --separate-stderr ns_root --workspace "$ws" --protect "$NS_DIR" -- true
	assert_equal "$stderr" "sbx-ns: fatal: refusing to start: protected path $NS_DIR is writable through --workspace $ws"
	run -0 --separate-stderr ns_root --workspace "$ws" --protect /etc --ro "$NS_DIR/bin" -- true
}

@test "allow-exec accepts the listed file and refuses a renamed copy and a symlink to another binary" {
	cp /bin/true "$ws/ok"; cp /bin/true "$ws/copy"; ln -s /bin/false "$ws/fake"
	chmod 0755 "$ws/ok" "$ws/copy"
	run -0 --separate-stderr ns_root --workspace "$ws" --allow-exec "$ws/ok" -- ./ok
	run -102 --separate-stderr ns_root --workspace "$ws" --allow-exec "$ws/ok" -- ./copy
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run ./copy ($ws/./copy): not one of the --allow-exec files"
	run -102 --separate-stderr ns_root --workspace "$ws" --allow-exec "$ws/ok" -- "$ws/fake"
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run $ws/fake: not one of the --allow-exec files"
}

@test "a valid grant runs; each input changed by one byte is refused naming it" {
	grant --timeout 30 --env A=1 --stdin-sha256 "$(printf hi | sha256sum | cut -c1-64)" -- sh -c 'cat; echo "$A"' >"$ws.grant"
	local ok=(--workspace "$ws" --timeout 30 --setenv A=1 --grant-fd 3 --grant-key "$key")
	run -0 --separate-stderr ns_root "${ok[@]}" -- sh -c 'cat; echo "$A"' 3<"$ws.grant" < <(printf hi)
	assert_output "hi1"
	assert_equal "$stderr" "$ARGV_ONLY"
	run -102 --separate-stderr ns_root "${ok[@]}" -- sh -c 'cat; echo "$B"' 3<"$ws.grant" < <(printf hi)
	assert_equal "$stderr" "sbx-ns: fatal: grant refused: argv differs from the grant"
	run -102 --separate-stderr ns_root "${ok[@]}" -- sh -c 'cat; echo "$A"' 3<"$ws.grant" < <(printf hI)
	assert_equal "$stderr" "sbx-ns: fatal: grant refused: stdin differs from the grant"
	run -102 --separate-stderr ns_root --workspace "$ws" --timeout 30 --setenv A=2 --grant-fd 3 --grant-key "$key" \
		-- sh -c 'cat; echo "$A"' 3<"$ws.grant" < <(printf hi)
	assert_equal "$stderr" "sbx-ns: fatal: grant refused: env differs from the grant"
	run -102 --separate-stderr ns_root --workspace "$ws" --timeout 31 --setenv A=1 --grant-fd 3 --grant-key "$key" \
		-- sh -c 'cat; echo "$A"' 3<"$ws.grant" < <(printf hi)
	assert_equal "$stderr" "sbx-ns: fatal: grant refused: timeout differs from the grant"
	ws2=$(ns_ws)
	run -102 --separate-stderr ns_root --workspace "$ws2" --timeout 30 --setenv A=1 \
		--grant-fd 3 --grant-key "$key" -- sh -c 'cat; echo "$A"' 3<"$ws.grant" < <(printf hi)
	assert_equal "$stderr" "sbx-ns: fatal: grant refused: cwd differs from the grant"
	awk '/^mac=/ { c = substr($0, 5, 1); $0 = "mac=" (c == "0" ? "1" : "0") substr($0, 6) } 1' "$ws.grant" >"$ws.forged"
	run -102 --separate-stderr ns_root "${ok[@]}" -- sh -c 'cat; echo "$A"' 3<"$ws.forged" < <(printf hi)
	assert_equal "$stderr" "sbx-ns: fatal: grant refused: the signature does not verify (forged, or made with another key)"
	chmod 0644 "$key"
	run -102 --separate-stderr ns_root "${ok[@]}" -- sh -c 'cat; echo "$A"' 3<"$ws.grant" < <(printf hi)
	assert_equal "$stderr" "sbx-ns: fatal: grant key $key is unsafe: mode 0644 gives group or others access"
}

@test "an unprivileged caller's grant with its own key runs" {
	chown "$SBX_TEST_UID" "$key"
	as_user sbx-check grant --kind argv --key "$key" --cwd "$ws" --env PATH=/usr/local/bin:/usr/bin:/bin \
		--env HOME=/tmp/home --env TMPDIR=/tmp --env XDG_CACHE_HOME=/tmp/home/.cache \
		--env XDG_CONFIG_HOME=/tmp/home/.config -- true >"$ws.grant"
	run -0 --separate-stderr ns_user --workspace "$ws" --grant-fd 3 --grant-key "$key" -- true 3<"$ws.grant" </dev/null
	assert_equal "$stderr" "$ARGV_ONLY"
}

@test "the timeout kills the sandbox with 104" {
	run -104 --separate-stderr ns_root --workspace "$ws" --timeout 0.5 --status-fd 3 -- sleep 30 3>"$ws.status"
	run -0 tail -1 "$ws.status"
	assert_output '{"tool":"sbx-ns","event":"exit","code":104,"signal":9,"timeout":true}'
}

@test "--bind and --ro-bind refuse bad destinations and sources" {
	local sh="$NS_DIR/shared.$BATS_TEST_NUMBER" t d
	mkdir -p "$sh"
	ln -sfn "$sh" "$NS_DIR/shlink"
	for t in "rel:not absolute" "/:the root" "/proc/x:under /proc" "/sys:under /sys" "/dev/shm/x:under /dev" \
		"/a/../b:not canonical (empty, '.' or '..' component)"; do
		run -100 --separate-stderr ns_root --workspace "$ws" --bind "$sh" "${t%%:*}" -- true
		assert_equal "$stderr" "sbx-ns: usage: --bind: invalid destination '${t%%:*}': ${t#*:}"
	done
	# One spelling: "//" and a trailing "/" are squashed, the root stays the root.
	run -100 --separate-stderr ns_root --workspace "$ws" --bind "$sh" /// -- true
	assert_equal "$stderr" "sbx-ns: usage: --bind: invalid destination '/': the root"
	run -100 --separate-stderr ns_root --workspace "$ws" --bind "$sh" /a/./b/ -- true
	assert_equal "$stderr" "sbx-ns: usage: --bind: invalid destination '/a/./b': not canonical (empty, '.' or '..' component)"
	run -100 --separate-stderr ns_root --workspace "$ws" --ro-bind "$sh" '' -- true
	assert_equal "$stderr" "sbx-ns: usage: --ro-bind: invalid destination '': empty"
	run -100 --separate-stderr ns_root --workspace "$ws" --ro-bind "$sh" -- true
	assert_equal "$stderr" "sbx-ns: usage: --ro-bind: missing destination"
	run -100 --separate-stderr ns_root --workspace "$ws" --ro-bind "$sh"
	assert_equal "$stderr" "sbx-ns: usage: --ro-bind: missing destination"
	run -100 --separate-stderr ns_root --workspace "$ws" --bind shared /shared -- true
	assert_equal "$stderr" "sbx-ns: usage: --bind: invalid path 'shared': not absolute"
	run -100 --separate-stderr ns_root --workspace "$ws" --bind "$NS_DIR/shlink" /shared -- true
	assert_equal "$stderr" "sbx-ns: usage: --bind: invalid path '$NS_DIR/shlink': a symlink"
	run -100 --separate-stderr ns_root --workspace "$ws" --bind /proc/self /shared -- true
	assert_equal "$stderr" "sbx-ns: usage: --bind: invalid path '/proc/self': under /proc"
	run -100 --separate-stderr ns_root --workspace "$ws" --bind-fd 9 /shared -- true
	assert_equal "$stderr" "sbx-ns: usage: --bind-fd: invalid fd '9': not open; open it for the tool (in the shell: 9<FILE or 9>FILE, or a previous tool's --pass-fd 9)"
	run -100 --separate-stderr ns_root --workspace "$ws" --ro-bind-fd 3 /shared -- true 3</dev/null
	assert_equal "$stderr" "sbx-ns: usage: --ro-bind-fd: invalid fd '3': not a file or directory"
	run -100 --separate-stderr ns_root --workspace "$ws" --bind "$sh" /shared --ro-bind "$sh" /shared -- true
	assert_equal "$stderr" "sbx-ns: usage: --ro-bind: /shared is already bound (by --bind)"
	run -100 --separate-stderr ns_root --workspace "$ws" --bind "$sh" /usr/shared -- true
	assert_equal "$stderr" "sbx-ns: usage: --bind: invalid destination '/usr/shared': inside /usr (bound by --runtime)"
	run -100 --separate-stderr ns_root --workspace "$ws" --bind "$sh" "$ws/shared" -- true
	assert_equal "$stderr" "sbx-ns: usage: --bind: invalid destination '$ws/shared': inside $ws (bound by --workspace)"
	d=$(dirname "$ws")
	run -100 --separate-stderr ns_root --workspace "$ws" --ro-bind "$sh" "$d" -- true
	assert_equal "$stderr" "sbx-ns: usage: --ro-bind: invalid destination '$d': $ws (bound by --workspace) lies inside it"
	run -100 --separate-stderr ns_root --workspace "$ws" --tmp-in-workspace --bind "$sh" /tmp/shared -- true
	assert_equal "$stderr" "sbx-ns: usage: --bind: invalid destination '/tmp/shared': /tmp is the workspace's with --tmp-in-workspace"
}

@test "a writable --bind may not be a second view of the workspace; --protect sees through --bind" {
	local d sh="$NS_DIR/shared.$BATS_TEST_NUMBER"
	mkdir -p "$ws/sub" "$sh" "$NS_DIR/alias.$BATS_TEST_NUMBER"
	d=$(dirname "$ws")
	run -100 --separate-stderr ns_root --workspace "$ws" --bind "$ws/sub" /shared -- true
	assert_equal "$stderr" "sbx-ns: usage: --bind: invalid path '$ws/sub': overlaps the workspace $ws (a writable second view of it; use --ro-bind)"
	run -100 --separate-stderr ns_root --workspace "$ws" --bind "$d" /shared -- true
	assert_equal "$stderr" "sbx-ns: usage: --bind: invalid path '$d': overlaps the workspace $ws (a writable second view of it; use --ro-bind)"
	run -100 --separate-stderr unshare -m sh -c "mount --bind $d $NS_DIR/alias.$BATS_TEST_NUMBER && exec sbx-ns --uid $SBX_TEST_UID --gid $SBX_TEST_GID --workspace $ws --bind $NS_DIR/alias.$BATS_TEST_NUMBER /shared -- true"
	assert_equal "$stderr" "sbx-ns: usage: --bind: invalid path '$NS_DIR/alias.$BATS_TEST_NUMBER': overlaps the workspace $ws (a writable second view of it; use --ro-bind)"
	run -0 --separate-stderr ns_root --workspace "$ws" --ro-bind "$ws/sub" /opt/sub -- true
	run -102 --separate-stderr ns_root --workspace "$ws" --bind "$sh" /shared --protect "$sh/keys" -- true
	assert_equal "$stderr" "sbx-ns: fatal: refusing to start: protected path $sh/keys is writable through --bind $sh"
}

@test "--rw and --rw-fd may not be a second view of the workspace either: .env stays unchanged" {
	local a="$NS_DIR/alias.$BATS_TEST_NUMBER" d
	mkdir -p "$ws/sub" "$a"
	echo "KEY=1" > "$ws/.env"
	d=$(dirname "$ws")
	run -100 --separate-stderr ns_root --workspace "$ws" --rw "$ws/sub" -- true
	assert_equal "$stderr" "sbx-ns: usage: --rw: invalid path '$ws/sub': overlaps the workspace $ws (a writable second view of it; use --ro)"
	run -100 --separate-stderr ns_user --workspace "$ws" --rw "$d" -- true
	assert_equal "$stderr" "sbx-ns: usage: --rw: invalid path '$d': overlaps the workspace $ws (a writable second view of it; use --ro)"
	# The workspace mounted at a second path, given as --rw or --rw-fd: the
	# command would append to .env through it.
	run -100 --separate-stderr unshare -m sh -c "mount --bind $ws $a && exec sbx-ns --uid $SBX_TEST_UID --gid $SBX_TEST_GID --workspace $ws --rw $a -- sh -c 'echo X >> $a/.env'"
	assert_equal "$stderr" "sbx-ns: usage: --rw: invalid path '$a': overlaps the workspace $ws (a writable second view of it; use --ro)"
	run -100 --separate-stderr unshare -m sh -c "mount --bind $ws $a && exec 3<$a && exec sbx-ns --uid $SBX_TEST_UID --gid $SBX_TEST_GID --workspace $ws --rw-fd 3 -- sh -c 'echo X >> $a/.env'"
	assert_equal "$stderr" "sbx-ns: usage: --rw-fd: invalid path '$a': overlaps the workspace $ws (a writable second view of it; use --ro)"
	assert_equal "$(cat "$ws/.env")" "KEY=1"
	# A read-only second view stays allowed.
	run -0 --separate-stderr unshare -m sh -c "mount --bind $ws $a && exec sbx-ns --uid $SBX_TEST_UID --gid $SBX_TEST_GID --workspace $ws --ro $a -- true"
}

# Two sandboxes at once, each waiting (bounded) for the other's file.
shared_pair() {
	local mode=$1 sh=$2 ws1 ws2 pid
	ws1=$(ns_ws)
	ws2=$(ns_ws)
	rm -f "$sh"/a "$sh"/b
	"$mode" --workspace "$ws1" --bind "$sh" /shared -- sh -c \
		'echo from-a > /shared/a; i=0; while [ ! -e /shared/b ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; cat /shared/b' \
		>"$ws1.out" 2>&1 &
	pid=$!
	run -0 --separate-stderr "$mode" --workspace "$ws2" --bind "$sh" /shared -- sh -c \
		'echo from-b > /shared/b; i=0; while [ ! -e /shared/a ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; cat /shared/a'
	assert_output "from-a"
	wait "$pid"
	assert_equal "$(cat "$ws1.out")" "from-b"
}

@test "a --bind volume is /shared, read-write and the same in two concurrent sandboxes (root and unprivileged)" {
	local sh="$NS_DIR/shared.$BATS_TEST_NUMBER"
	mkdir -p "$sh"
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$sh"
	shared_pair ns_root "$sh"
	shared_pair ns_user "$sh"
	run -0 cat "$sh/a" "$sh/b"
	assert_output "from-a
from-b"
}

@test "an --ro-bind tree is readable and runnable at its fixed place and read-only" {
	local sc="$NS_DIR/scripts.$BATS_TEST_NUMBER" tool="$NS_DIR/tool.$BATS_TEST_NUMBER"
	mkdir -p "$sc"
	printf '#!/bin/sh\necho script ran\n' >"$sc/run.sh"
	chmod 0755 "$sc/run.sh"
	cp "$NS_ATT" "$tool"
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$sc"
	run -0 --separate-stderr ns_user --workspace "$ws" --ro-bind "$sc" /opt/scripts --ro-bind "$tool" /opt/att -- \
		sh -c '/opt/scripts/run.sh; /opt/att write /opt/scripts/x; /opt/att append /opt/scripts/run.sh; /opt/att write /opt/att; ls /opt'
	assert_output "script ran
write: EROFS
append: EROFS
write: EROFS
att
scripts"
}

@test "--ro-bind-fd and --bind-fd bind what the caller opened at DEST; a replaced path is a race" {
	local sc="$NS_DIR/scripts.$BATS_TEST_NUMBER" sh="$NS_DIR/shared.$BATS_TEST_NUMBER" d
	mkdir -p "$sc" "$sh"
	echo r >"$sc/f"
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$sh"
	run -0 --separate-stderr ns_root --workspace "$ws" --ro "$NS_DIR/bin" --ro-bind-fd 3 /opt/scripts --bind-fd 4 /shared -- \
		sh -c "cat /opt/scripts/f; $NS_ATT write /opt/scripts/g; $NS_ATT write /shared/g" 3<"$sc" 4<"$sh"
	assert_output "r
write: EROFS
write: ok"
	run -0 cat "$sh/g"
	assert_output "pwned"
	d=$(ns_ws)
	exec 5<"$d"
	rmdir "$d"
	mkdir "$d"
	run -102 --separate-stderr ns_user --workspace "$ws" --ro-bind-fd 5 /opt/x -- true
	exec 5<&-
	assert_equal "$stderr" "sbx-ns: fatal: unable to bind fd 5: $d (deleted) no longer names the object the fd was opened on (race)"
}

# The denied lines of a status file.
denied_lines() {
	grep '"event":"denied"' "$1" || true
}

@test "mount, unshare and bpf from inside are reported once each, with counts, root and unprivileged" {
	local m
	for m in ns_root ns_user; do
		run -0 --separate-stderr "$m" --workspace "$ws" --ro "$NS_DIR/bin" --status-fd 3 -- \
			sh -c "$NS_ATT mount-tmpfs; $NS_ATT unshare-net; $NS_ATT bpf; $NS_ATT mount-tmpfs; $NS_ATT clone3" 3>"$ws.status"
		assert_output "mount-tmpfs: EPERM
unshare-net: EPERM
bpf: EPERM
mount-tmpfs: EPERM
clone3: ENOSYS"
		run -0 denied_lines "$ws.status"
		assert_output '{"tool":"sbx-ns","event":"denied","syscall":"mount","count":1}
{"tool":"sbx-ns","event":"denied","syscall":"unshare","count":1}
{"tool":"sbx-ns","event":"denied","syscall":"bpf","count":1}
{"tool":"sbx-ns","event":"denied","syscall":"mount","count":2}'
		run -0 tail -1 "$ws.status"
		assert_output '{"tool":"sbx-ns","event":"exit","code":0}'
	done
}

@test "--quiet-denials keeps plain EPERM and reports nothing; a read-only mount's EROFS is never a denial" {
	run -0 --separate-stderr ns_user --workspace "$ws" --ro "$NS_DIR/bin" --quiet-denials --status-fd 3 -- \
		sh -c "$NS_ATT mount-tmpfs; $NS_ATT bpf" 3>"$ws.status"
	assert_output "mount-tmpfs: EPERM
bpf: EPERM"
	run -0 denied_lines "$ws.status"
	assert_output ""
	run -0 --separate-stderr ns_user --workspace "$ws" --ro "$NS_DIR/bin" --status-fd 3 -- \
		sh -c "$NS_ATT write /usr/x; $NS_ATT write $NS_DIR/bin/x" 3>"$ws.status"
	assert_output "write: EROFS
write: EROFS"
	run -0 denied_lines "$ws.status"
	assert_output ""
	run -100 --separate-stderr ns_user --workspace "$ws" --quiet-denials --quiet-denials -- true
	assert_equal "$stderr" "sbx-ns: usage: --quiet-denials given twice"
	run -100 --separate-stderr ns_user --workspace "$ws" --quiet-denials=1 -- true
	assert_equal "$stderr" "sbx-ns: usage: --quiet-denials takes no value"
}

# Not again in make check's classic leg (tests/check.sh): how sbx-ns mounts
# the sandbox plays no part in how its supervisor counts and reports denials.
# bats test_tags=classic:left-out
@test "a million denied calls in a tight loop finish and give a bounded number of lines" {
	cp "$SBX_TESTBIN/ns-deny-loop" "$NS_DIR/bin/"
	run -0 --separate-stderr ns_user --workspace "$ws" --ro "$NS_DIR/bin" --status-fd 3 -- \
		"$NS_DIR/bin/ns-deny-loop" 1000000 3>"$ws.status"
	assert_output "mount: 1000000 of 1000000 failed with EPERM"
	run -0 denied_lines "$ws.status"
	assert_equal "$(head -1 <<<"$output")" '{"tool":"sbx-ns","event":"denied","syscall":"mount","count":1}'
	assert_equal "$(tail -1 <<<"$output")" '{"tool":"sbx-ns","event":"denied","syscall":"mount","count":1000000}'
	# one line per second at most while it loops, plus the first and the last
	[ "$(wc -l <<<"$output")" -le 120 ]
}

@test "a denied call whose supervisor was killed fails with ENOSYS, never succeeds (root in a private mount namespace, and unprivileged)" {
	local d
	d=$(ns_ws)
	run -0 --separate-stderr unshare -m "$SBX_TESTBIN/ns-notify-gone" "$d"
	assert_output "mount: ENOSYS"
	cp "$SBX_TESTBIN/ns-notify-gone" "$NS_DIR/bin/"
	run -0 --separate-stderr as_user "$NS_DIR/bin/ns-notify-gone" "$d"
	assert_output "mount: ENOSYS"
}

@test "killing the outer sbx-ns (the supervisor) ends the sandbox; no denied call went through" {
	local pid1 outer
	ns_user --workspace "$ws" --ro "$NS_DIR/bin" --status-fd 3 -- \
		sh -c "while :; do $NS_ATT mount-tmpfs >>log; done" 3>"$ws.status" &
	wait_for '[ -s "$ws/log" ]'
	pid1=$(sed -n 's/.*"event":"namespaces"[^{]*,"pid":\([0-9]*\).*/\1/p' "$ws.status")
	outer=$(awk '/^PPid:/ { print $2 }' "/proc/$pid1/status")
	run -0 grep -c sbx-ns "/proc/$outer/comm"
	kill -KILL "$outer"
	wait_for '[ ! -e "/proc/$pid1" ]'
	wait || true
	run -1 test -e "/proc/$pid1"
	run -1 grep -v -E '^mount-tmpfs: (EPERM|ENOSYS)$' "$ws/log"
	assert_output ""
}

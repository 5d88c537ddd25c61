#!/usr/bin/env bats
# sbx-ns: one spelling for every path option ("/dir/" and "//dir//" are
# "/dir"; '.', '..' and symlinks still refused), a denied socket named by
# its family, a rename onto a protected path reported as deny-write, and an
# explicit --runtime within the default set under a baseline.

bats_require_minimum_version 1.5.0
load helpers
load ns

setup_file() {
	ns_setup_file
	mkdir -p "$NS_DIR/ro" "$NS_DIR/rw" "$NS_DIR/home"
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$NS_DIR/rw" "$NS_DIR/home"
	ln -s "$NS_WS" "$NS_DIR/link"
	touch "$NS_DIR/file"
}

# The mounts of a --dry-run plan, one "kind option source destination" a line.
plan_mounts() {
	python3 -c 'import json, sys
d = json.load(sys.stdin)
for m in d["mounts"]:
    if "option" in m:
        print(m["kind"], m["option"], m["source"], m["destination"])
print("deny", *d["deny_write"]["globs"])'
}

@test "a trailing or doubled slash names the same path for every path option" {
	run -0 --separate-stderr ns_root --workspace "/$NS_WS/" --ro "$NS_DIR//ro/" --rw "//$NS_DIR/rw//" \
		--home "$NS_DIR/home/" --ro-bind "$NS_DIR/ro//" //shared/ro// --bind "$NS_DIR/rw/" /shared/rw/ \
		--runtime /usr/://lib/:/lib64//:/bin/ --deny-write '.git//config/' --deny-write .env/ \
		--dry-run -- /bin/pwd
	assert_equal "$stderr" ""
	run -0 plan_mounts <<<"$output"
	assert_output "runtime --runtime /usr /usr
symlink --runtime usr/lib /lib
symlink --runtime usr/lib64 /lib64
symlink --runtime usr/bin /bin
workspace --workspace $NS_WS $NS_WS
ro --ro $NS_DIR/ro $NS_DIR/ro
rw --rw $NS_DIR/rw $NS_DIR/rw
rw --home $NS_DIR/home $NS_DIR/home
bind --ro-bind $NS_DIR/ro /shared/ro
bind --bind $NS_DIR/rw /shared/rw
deny .git/config .env"
}

@test "the command runs in the squashed workspace, as root's and as the user's" {
	local w
	for w in "$NS_WS/" "//$NS_WS//"; do
		run -0 --separate-stderr ns_root --workspace "$w" -- /bin/pwd
		assert_output "$NS_WS"
		assert_equal "$stderr" ""
		run -0 --separate-stderr ns_user --workspace "$w" -- /bin/pwd
		assert_output "$NS_WS"
		assert_equal "$stderr" ""
	done
}

@test "squashing lets no refused path through: the root, '.', '..', a symlink with a trailing slash" {
	local o
	for o in --workspace --ro --rw; do
		run -100 --separate-stderr ns_root --workspace "$NS_WS" "$o" /// -- true
		[ "$o" = --workspace ] && run -100 --separate-stderr ns_root --workspace /// -- true
		assert_equal "$stderr" "sbx-ns: usage: $o: invalid path '/': the root"
		run -100 --separate-stderr ns_root --workspace "$NS_WS" "$o" "$NS_DIR/link/" -- true
		[ "$o" = --workspace ] && run -100 --separate-stderr ns_root --workspace "$NS_DIR/link/" -- true
		assert_equal "$stderr" "sbx-ns: usage: $o: invalid path '$NS_DIR/link': a symlink"
		run -100 --separate-stderr ns_root --workspace "$NS_WS" "$o" "$NS_DIR//ro/./" -- true
		[ "$o" = --workspace ] && run -100 --separate-stderr ns_root --workspace "$NS_DIR//ro/./" -- true
		assert_equal "$stderr" "sbx-ns: usage: $o: invalid path '$NS_DIR/ro/.': not canonical"
		run -100 --separate-stderr ns_root --workspace "$NS_WS" "$o" "$NS_DIR/ro/../ro/" -- true
		[ "$o" = --workspace ] && run -100 --separate-stderr ns_root --workspace "$NS_DIR/ro/../ro/" -- true
		assert_equal "$stderr" "sbx-ns: usage: $o: invalid path '$NS_DIR/ro/../ro': not canonical"
	done
	run -100 --separate-stderr ns_root --workspace "$NS_WS" --runtime /usr/:/./lib -- true
	assert_equal "$stderr" "sbx-ns: usage: --runtime: invalid path '/./lib': not canonical"
	run -100 --separate-stderr ns_root --workspace "$NS_WS" --runtime /usr/::/lib -- true
	assert_equal "$stderr" "sbx-ns: usage: --runtime: invalid list '/usr::/lib': empty entry"
	run -100 --separate-stderr ns_root --workspace "$NS_WS" --runtime /// -- true
	assert_equal "$stderr" "sbx-ns: usage: --runtime: invalid path '/': the root"
	run -100 --separate-stderr ns_root --workspace "$NS_WS" --deny-write .git/../x/ -- true
	assert_equal "$stderr" "sbx-ns: usage: --deny-write: invalid glob '.git/../x': '.' and '..' are not allowed"
	run -100 --separate-stderr ns_root --workspace "$NS_WS" --deny-write // -- true
	assert_equal "$stderr" "sbx-ns: usage: --deny-write: invalid glob '/': absolute (globs are relative to the workspace)"
	run -100 --separate-stderr ns_root --workspace "$NS_WS" --ro "$NS_DIR/file/" -- true
	assert_equal "$stderr" "sbx-ns: usage: --ro: invalid path '$NS_DIR/file/': not a directory"
}

@test "the other path options take the same spelling: --serve, --protect, --allow-exec, --join" {
	run -100 --separate-stderr ns_root --workspace "$NS_WS" --serve /// -- true
	assert_equal "$stderr" "sbx-ns: usage: --serve: invalid path '/': names no file"
	run -100 --separate-stderr ns_root --workspace "$NS_WS" --protect /// -- true
	assert_equal "$stderr" "sbx-ns: usage: --protect: invalid path '/': the whole file system"
	run -0 --separate-stderr ns_root --workspace "$NS_WS" --allow-exec //bin//true/ -- /bin/true
	assert_equal "$stderr" ""
	run -102 --separate-stderr ns_root --workspace "$NS_WS" --allow-exec /bin/true/ -- /bin/false
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run /bin/false: not one of the --allow-exec files"
	run -103 --separate-stderr sbx-ns --join "//$NS_DIR/none.sock/" --jobs
	assert_equal "$stderr" "sbx-ns: fatal: unable to join $NS_DIR/none.sock: No such file or directory (no sandbox serves there: start one with sbx-ns ... --serve $NS_DIR/none.sock)"
}

# The last count of each denied socket family, from the status lines.
families() {
	python3 -c 'import json, sys
last = {}
for l in sys.stdin:
    if not l.startswith("{"):
        continue
    d = json.loads(l)
    if d.get("event") == "denied":
        last[(d["syscall"], d.get("family"))] = d["count"]
for (s, f), c in sorted(last.items(), key=str):
    print(s, f, c)'
}

@test "a denied socket is reported with its address family, each family on its own lines" {
	run -0 --separate-stderr ns_fd5 ns_user --workspace "$NS_WS" --status-fd 5 --net none -- /usr/bin/python3 -c '
import socket
for f in (socket.AF_UNIX, socket.AF_NETLINK, socket.AF_INET6, socket.AF_UNIX, socket.AF_PACKET, 46, 1000):
    try:
        socket.socket(f, socket.SOCK_DGRAM if f in (socket.AF_NETLINK, 46, 1000) else socket.SOCK_STREAM)
    except OSError as e:
        print(f, e.errno)'
	assert_equal "$stderr" ""
	run -0 families <<<"$output"
	assert_output "socket AF_INET6 1
socket AF_NETLINK 1
socket AF_PACKET 1
socket AF_UNIX 2
socket 1000 1
socket 46 1"
}

@test "id asking the name service daemon is named as AF_UNIX" {
	run -0 --separate-stderr ns_fd5 ns_user --workspace "$NS_WS" --status-fd 5 --net none -- /usr/bin/id -un
	assert_equal "$stderr" ""
	assert_line --regexp '^\{"tool":"sbx-ns","event":"denied","syscall":"socket","family":"AF_UNIX","count":[1-9][0-9]*\}$'
	refute_line --regexp '"syscall":"socket","count"'
}

@test "under a baseline, an explicit --runtime within the default set is allowed; a sibling or a superset is not" {
	local d
	d=$(ns_ws)
	printf '{"sandbox":{"readableRoots":["."],"writableRoots":["."]}}\n' >"$d.base.json"
	chmod 0644 "$d.base.json"
	run -0 --separate-stderr ns_user --workspace "$d" --baseline "$d.base.json" --runtime /usr:/lib:/lib64:/bin -- /bin/true
	assert_equal "$stderr" ""
	run -0 --separate-stderr ns_user --workspace "$d" --baseline "$d.base.json" --runtime /usr/:/lib:/lib64:/etc/ssl// \
		-- /usr/bin/ls -d /etc/ssl /usr/share
	assert_output "/etc/ssl
/usr/share"
	assert_equal "$stderr" ""
	local r
	for r in /usr:/lib:/lib64:/var /usr:/lib:/lib64:/srv/ /opt /; do
		run -102 --separate-stderr ns_user --workspace "$d" --baseline "$d.base.json" --runtime "$r" -- /usr/bin/true
		r=${r##*:}
		[ "$r" = / ] || r=${r%/}
		assert_equal "$stderr" "sbx-ns: fatal: policy refused: --runtime: $r is not within the effective readable roots"
	done
	# Nor a walk out of a default entry, nor a name that only begins like one.
	run -102 --separate-stderr ns_user --workspace "$d" --baseline "$d.base.json" --runtime /usr:/lib:/lib64:/usr/../opt -- /usr/bin/true
	assert_equal "$stderr" "sbx-ns: fatal: policy refused: --runtime: /usr/../opt is not within the effective readable roots"
	mkdir -p "$NS_DIR/usr"
	run -102 --separate-stderr ns_user --workspace "$d" --baseline "$d.base.json" --runtime "/usr:/lib:/lib64:$NS_DIR/usr" -- /usr/bin/true
	assert_equal "$stderr" "sbx-ns: fatal: policy refused: --runtime: $NS_DIR/usr is not within the effective readable roots"
	rm -f "$d.base.json"
}

# The deny-write lines of a status stream, without their counts' timing:
# the last line of each path and operation.
deny_lines() {
	python3 -c 'import json, sys
last = {}
for l in sys.stdin:
    if l.startswith("{") and json.loads(l).get("event") == "deny-write":
        d = json.loads(l)
        last[(d["path"], d["operation"])] = l.strip()
print("\n".join(last.values()))'
}

@test "git writing a protected config: the refused rename of its lock file is named, before git's own error" {
	local ws
	ws=$(ns_ws)
	as_user git init -q "$ws"
	cp "$ws/.git/config" "$ws/config.before"
	run -4 --separate-stderr ns_fd5 ns_user --workspace "$ws" --status-fd 5 -- /usr/bin/git config user.email u@example.org
	assert_equal "$stderr" "sbx-ns: warning: deny-write: refused a rename onto the protected path .git/config (from $ws/.git/config.lock); the command sees EBUSY
error: could not write config file .git/config: Device or resource busy"
	run -0 deny_lines <<<"$output"
	assert_output '{"tool":"sbx-ns","event":"deny-write","path":".git/config","action":"refused","operation":"rename onto","from":"'"$ws"'/.git/config.lock","protected":true,"count":1}'
	cmp "$ws/.git/config" "$ws/config.before"
	assert_file_not_exist "$ws/.git/config.lock"
}

@test "every form of rename onto or of a protected path is named: renameat from a dirfd, an exchange, an absolute name" {
	local ws a="$NS_DIR/bin/ns-attempt"
	ws=$(ns_repo)
	run -0 --separate-stderr ns_user --workspace "$ws" --ro "$NS_DIR/bin" -- sh -c \
		"echo x > .git/x; echo x > x; $a renameat x config .git; $a exchange x .env; $a exchange .env.local x; $a rename $ws//x $ws/.env; $a rename x y"
	assert_output "renameat: EBUSY
exchange: EBUSY
exchange: EBUSY
rename: EBUSY
rename: ok"
	assert_equal "$stderr" "sbx-ns: warning: deny-write: refused a rename onto the protected path .git/config (from x); the command sees EBUSY
sbx-ns: warning: deny-write: refused an exchange of the protected path .env (with x); the command sees EBUSY
sbx-ns: warning: deny-write: refused an exchange of the protected path .env.local (with x); the command sees EBUSY
sbx-ns: warning: deny-write: refused a rename onto the protected path .env (from $ws//x); the command sees EBUSY"
	assert_equal "$(cat "$ws/.env")" "KEY=1"
	assert_equal "$(cat "$ws/.env.local")" "KEY=2"
	assert_equal "$(cat "$ws/y")" "x"
}

@test "renames that deny-write does not refuse are not reported: a symlink to a protected path, a missing source, another mount" {
	local ws a="$NS_DIR/bin/ns-attempt"
	ws=$(ns_repo)
	run -0 --separate-stderr ns_user --workspace "$ws" --ro "$NS_DIR/bin" -- sh -c \
		"echo x > x; ln -s .git/config link; $a rename nothing .env; $a rename x .git/hooks/pre-commit; $a rename x link; cat link"
	assert_output "rename: ENOENT
rename: EXDEV
rename: ok
x"
	assert_equal "$stderr" ""
	assert_equal "$(cat "$ws/.git/config")" "[core]"
}

@test "a loop of refused renames gives one warning and a bounded count; --quiet-denials gives none" {
	local ws
	ws=$(ns_repo)
	run -0 --separate-stderr ns_fd5 ns_user --workspace "$ws" --status-fd 5 -- /usr/bin/python3 -c '
import os
open("x", "w").close()
n = 0
for i in range(500):
    try:
        os.rename("x", ".env")
    except OSError as e:
        n += e.errno == 16
print(n)'
	assert_line 500
	assert_equal "$stderr" "sbx-ns: warning: deny-write: refused a rename onto the protected path .env (from x); the command sees EBUSY"
	run -0 deny_lines <<<"$output"
	assert_output '{"tool":"sbx-ns","event":"deny-write","path":".env","action":"refused","operation":"rename onto","from":"x","protected":true,"count":500}'
	run -0 --separate-stderr ns_user --workspace "$ws" --quiet-denials -- /usr/bin/python3 -c '
import os
try:
    os.rename("x", ".env")
except OSError as e:
    print(e.errno)'
	assert_output 16
	assert_equal "$stderr" ""
}

@test "a rename through a symlink the command made is looked up as the command sees it" {
	local ws a="$NS_DIR/bin/ns-attempt"
	ws=$(ns_repo)
	run -0 --separate-stderr ns_fd5 ns_user --workspace "$ws" --ro "$NS_DIR/bin" --status-fd 5 -- sh -c \
		"echo x > .git/x; ln -s .git gl; ln -s $ws/.git ga;
		 $a rename gl/x gl/config; $a rename ga/x ga/config; cd .git && $a rename x config"
	assert_equal "$(grep -c '^rename: EBUSY$' <<<"$output")" 3
	assert_equal "$stderr" "sbx-ns: warning: deny-write: refused a rename onto the protected path .git/config (from gl/x); the command sees EBUSY"
	run -0 deny_lines <<<"$output"
	assert_output '{"tool":"sbx-ns","event":"deny-write","path":".git/config","action":"refused","operation":"rename onto","from":"gl/x","protected":true,"count":3}'
	assert_equal "$(cat "$ws/.git/config")" "[core]"
}

@test "a namespace count limit other than the user namespaces' is named when it is the one spent" {
	local ws k
	ws=$(ns_ws)
	chmod 0777 "$ws"
	for k in mnt net pid; do
		run -106 --separate-stderr unshare --user --map-root-user sh -c \
			"echo 0 > /proc/sys/user/max_${k}_namespaces && exec sbx-ns --uid 1 --gid 1 --deny-write 'none*' --workspace $ws -- true"
		assert_output ""
		assert_equal "$stderr" "sbx-ns: fatal: unable to create namespaces: No space left on device; a namespace count limit is reached (user.max_${k}_namespaces=0 here); an administrator must raise it: sysctl -w user.max_${k}_namespaces=15000"
	done
}

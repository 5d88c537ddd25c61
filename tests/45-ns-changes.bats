#!/usr/bin/env bats
# sbx-ns --changes DIR: the workspace is an overlay whose upper layer is
# DIR/upper. The command edits its workspace as usual; the real workspace
# is never written; every requirement on DIR is refused with one line;
# base.jsonl records the workspace's state of each changed path; DIR/lock
# is held while a sandbox uses it.

bats_require_minimum_version 1.5.0
load helpers
load ns

# A workspace with a file, a directory and a protected file, and an empty
# change set beside it, both of the test user. Sets WS and CHG.
fresh() {
	WS=$(ns_ws)
	CHG=$(mktemp -d "$NS_DIR/chg.XXXXXX")
	chmod 0700 "$CHG"
	echo hello >"$WS/a"
	mkdir "$WS/d"
	echo f >"$WS/d/f"
	echo S=1 >"$WS/.env"
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$WS" "$CHG"
}

# Everything the host sees of the workspace: names, types, modes, sizes,
# mtimes, inodes and contents.
snap() {
	(cd "$1" && find . -printf '%p %y %m %s %T@ %i\n' | sort &&
		find . -type f -print0 | sort -z | xargs -0 -r sha256sum)
}

both() {
	printf '%s\n' ns_root ns_user
}

edits='echo new >a; echo b >b; rm d/f; mkdir e; mv a a2; chmod 600 b; ln -s /etc/passwd l; cat a2 b; ls'

@test "writes, deletes, renames, mkdir and chmod land in the change set, never in the workspace" {
	for mode in $(both); do
		fresh
		before=$(snap "$WS")
		run -0 --separate-stderr $mode --workspace "$WS" --changes "$CHG" -- /bin/sh -c "$edits"
		assert_output "new
b
a2
b
d
e
l"
		assert_equal "$stderr" ""
		assert_equal "$(snap "$WS")" "$before"
		assert_equal "$(cat "$CHG/upper/a2")" "new"
		assert [ -c "$CHG/upper/a" ]
		assert [ -c "$CHG/upper/d/f" ]
		run -0 cat "$CHG/changeset"
		assert_output "{\"version\":1,\"workspace\":\"$WS\",\"dev\":$(stat -c %d "$WS"),\"ino\":$(stat -c %i "$WS")}"
		run -0 sh -c "cut -d, -f1,2 '$CHG/base.jsonl' | sort"
		assert_output '{"path":"a","type":"file"
{"path":"a2","type":"none"}
{"path":"b","type":"none"}
{"path":"d","type":"dir"
{"path":"d/f","type":"file"
{"path":"e","type":"none"}
{"path":"l","type":"none"}'
		run -0 grep -c '"path":"a","type":"file","dev":'"$(stat -c %d "$WS/a")"',"ino":'"$(stat -c %i "$WS/a")"',"size":6,' "$CHG/base.jsonl"
		assert_equal "$(stat -c '%a %U' "$CHG" "$CHG/changeset" "$CHG/lock" "$CHG/work" "$CHG/base.jsonl")" "700 $SBX_TEST_USER
600 $SBX_TEST_USER
600 $SBX_TEST_USER
700 $SBX_TEST_USER
600 $SBX_TEST_USER"
	done
}

@test "a second run with the same change set sees the first's changes, and base.jsonl gets lines only for new paths" {
	for mode in $(both); do
		fresh
		run -0 $mode --workspace "$WS" --changes "$CHG" -- /bin/sh -c 'echo one >a; rm d/f'
		run -0 $mode --workspace "$WS" --changes "$CHG" -- /bin/sh -c 'cat a; ls d; echo two >>a; echo c >c'
		assert_output "one"
		assert_equal "$(cat "$WS/a")" "hello"
		assert_equal "$(cat "$CHG/upper/a")" "one
two"
		run -0 sh -c "cut -d, -f1 '$CHG/base.jsonl'"
		assert_output '{"path":"a"
{"path":"d"
{"path":"d/f"
{"path":"c"'
	done
}

@test "a workspace path changed on the host during the run is recorded as changed" {
	fresh
	mkfifo "$NS_DIR/go.$$"
	exec 7<>"$NS_DIR/go.$$"
	ns_root --workspace "$WS" --changes "$CHG" -- /bin/sh -c 'echo x >a; read l' <&7 &
	pid=$!
	wait_for "[ -e '$CHG/upper/a' ]"
	echo changed >"$WS/a"
	echo go >"$NS_DIR/go.$$"
	wait "$pid"
	exec 7>&-
	rm "$NS_DIR/go.$$"
	run -0 cat "$CHG/base.jsonl"
	assert_output '{"path":"a","type":"changed"}'
}

@test "deny-write paths stay read-only inside a change-set run, and nothing reaches the host" {
	for mode in $(both); do
		fresh
		mkdir -p "$WS/.git/hooks"
		echo c >"$WS/.git/config"
		chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$WS"
		before=$(snap "$WS")
		run -0 --separate-stderr $mode --workspace "$WS" --changes "$CHG" -- /bin/sh -c \
			'echo x >>.env; echo y >>.git/config; echo h >.git/hooks/pre-commit; echo ok >ok; true'
		assert_equal "$stderr" "/bin/sh: 1: cannot create .env: Read-only file system
/bin/sh: 1: cannot create .git/config: Read-only file system
/bin/sh: 1: cannot create .git/hooks/pre-commit: Read-only file system"
		assert_equal "$(snap "$WS")" "$before"
		assert_equal "$(ls -A "$CHG/upper")" "ok"
	done
}

@test "--dry-run shows the overlay in the plan and creates nothing" {
	fresh
	run -0 --separate-stderr ns_root --workspace "$WS" --changes "$CHG" --dry-run -- true
	run -0 python3 -c 'import json, sys
d = json.loads(sys.argv[1])
for m in d["mounts"]:
    if m.get("kind") == "workspace":
        print(json.dumps(m["overlay"], sort_keys=True))' "$output"
	assert_output "{\"changes\": \"$CHG\", \"dev\": $(stat -c %d "$CHG"), \"ino\": $(stat -c %i "$CHG"), \"options\": \"userxattr\", \"upper\": \"$CHG/upper\", \"work\": \"$CHG/work\"}"
	assert_equal "$(ls -A "$CHG")" ""
}

@test "malformed --changes values are usage errors (100)" {
	fresh
	run -100 --separate-stderr ns_root --workspace "$WS" --changes "" -- true
	assert_equal "$stderr" "sbx-ns: usage: --changes: invalid path '': empty"
	run -100 --separate-stderr ns_root --workspace "$WS" --changes chg -- true
	assert_equal "$stderr" "sbx-ns: usage: --changes: invalid path 'chg': not absolute"
	run -100 --separate-stderr ns_root --workspace "$WS" --changes "$CHG" --changes "$CHG" -- true
	assert_equal "$stderr" "sbx-ns: usage: --changes given twice"
	run -100 --separate-stderr ns_root --workspace "$WS" --changes "$CHG/x$(printf '\t')y" -- true
	assert_equal "$stderr" "sbx-ns: usage: --changes: invalid path: control character"
	run -100 --separate-stderr ns_root --workspace "$WS" --changes "$CHG/../x" -- true
	assert_equal "$stderr" "sbx-ns: usage: --changes: invalid path '$CHG/../x': not canonical"
	run -100 --separate-stderr ns_root --workspace "$WS" --changes "$CHG" --tmp-in-workspace -- true
	assert_equal "$stderr" "sbx-ns: usage: --changes and --tmp-in-workspace are exclusive (the scratch directories would be written in the real workspace)"
}

@test "every requirement on DIR is refused with one line (102), before anything is made" {
	fresh
	r="sbx-ns: fatal: --changes: refusing"
	run -102 --separate-stderr ns_root --workspace "$WS" --changes "$NS_DIR/none" -- true
	assert_equal "$stderr" "$r $NS_DIR/none: it does not exist (create it empty, mode 0700)"
	ln -s "$CHG" "$NS_DIR/chglink"
	run -102 --separate-stderr ns_root --workspace "$WS" --changes "$NS_DIR/chglink" -- true
	assert_equal "$stderr" "$r $NS_DIR/chglink: a symlink on its path (name the real directory)"
	mkdir "$CHG/in"
	ln -s "$CHG" "$NS_DIR/dirlink"
	run -102 --separate-stderr ns_root --workspace "$WS" --changes "$NS_DIR/dirlink/in" -- true
	assert_equal "$stderr" "$r $NS_DIR/dirlink/in: a symlink on its path (name the real directory)"
	rmdir "$CHG/in"
	touch "$NS_DIR/plain"
	run -102 --separate-stderr ns_root --workspace "$WS" --changes "$NS_DIR/plain" -- true
	assert_equal "$stderr" "$r $NS_DIR/plain: not a directory"
	chmod 0770 "$CHG"
	run -102 --separate-stderr ns_root --workspace "$WS" --changes "$CHG" -- true
	assert_equal "$stderr" "$r $CHG: group- or other-writable (chmod go-w it)"
	chmod 0702 "$CHG"
	run -102 --separate-stderr ns_user --workspace "$WS" --changes "$CHG" -- true
	assert_equal "$stderr" "$r $CHG: group- or other-writable (chmod go-w it)"
	chmod 0700 "$CHG"
	chown 1 "$CHG"
	run -102 --separate-stderr ns_root --workspace "$WS" --changes "$CHG" -- true
	assert_equal "$stderr" "$r $CHG: owned by uid 1, not by the caller (chown it, or use a directory of your own)"
	chown root "$CHG"
	run -102 --separate-stderr ns_user --workspace "$WS" --changes "$CHG" -- true
	assert_equal "$stderr" "$r $CHG: owned by uid 0, not by the caller (chown it, or use a directory of your own)"
	chown "$SBX_TEST_UID" "$CHG"
	mkdir -m 0700 "$WS/chg"
	chown "$SBX_TEST_UID" "$WS/chg"
	run -102 --separate-stderr ns_user --workspace "$WS" --changes "$WS/chg" -- true
	assert_equal "$stderr" "$r $WS/chg: inside the workspace $WS (make it beside the workspace)"
	run -102 --separate-stderr ns_user --workspace "$WS/d" --changes "$WS" -- true
	assert_equal "$stderr" "$r $WS: it holds the workspace $WS/d (make it beside the workspace)"
	echo x >"$CHG/stray"
	run -102 --separate-stderr ns_user --workspace "$WS" --changes "$CHG" -- true
	assert_equal "$stderr" "$r $CHG: neither empty nor a change set (name an empty directory)"
	rm "$CHG/stray"
	assert_equal "$(ls -A "$CHG" "$WS/chg")" "$CHG:

$WS/chg:"
}

@test "a change set on another filesystem than the workspace is refused (102)" {
	fresh
	mnt=$(mktemp -d "$NS_DIR/mnt.XXXXXX")
	mount -t tmpfs -o mode=0755 tmpfs "$mnt"
	mkdir -m 0700 "$mnt/chg"
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$mnt/chg"
	run -102 --separate-stderr ns_root --workspace "$WS" --changes "$mnt/chg" -- true
	s=$stderr
	run -102 --separate-stderr ns_user --workspace "$WS" --changes "$mnt/chg" -- true
	umount "$mnt"
	assert_equal "$s" "sbx-ns: fatal: --changes: refusing $mnt/chg: on another filesystem than the workspace (make it on the workspace's filesystem)"
	assert_equal "$stderr" "$s"
}

@test "a change set of another workspace is refused (102), by path and by identity" {
	fresh
	run -0 ns_user --workspace "$WS" --changes "$CHG" -- true
	other=$(ns_ws)
	run -102 --separate-stderr ns_user --workspace "$other" --changes "$CHG" -- true
	assert_equal "$stderr" "sbx-ns: fatal: --changes: refusing $CHG: a change set of another workspace, not of $other (use another directory)"
	# the same path, another directory
	mv "$WS" "$WS.old"
	mkdir "$WS"
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$WS"
	run -102 --separate-stderr ns_user --workspace "$WS" --changes "$CHG" -- true
	assert_equal "$stderr" "sbx-ns: fatal: --changes: refusing $CHG: a change set of another workspace, not of $WS (use another directory)"
}

@test "a change set in use by a running sandbox is refused (102); a living sandbox holds it for life" {
	fresh
	mkfifo "$NS_DIR/go.$$"
	exec 7<>"$NS_DIR/go.$$"
	ns_root --workspace "$WS" --changes "$CHG" -- /bin/sh -c 'echo x >a; read l' <&7 &
	pid=$!
	wait_for "[ -e '$CHG/upper/a' ]"
	run -102 --separate-stderr ns_user --workspace "$WS" --changes "$CHG" -- true
	assert_equal "$stderr" "sbx-ns: fatal: --changes: refusing $CHG: it is in use by a running sandbox (wait for it to end, or use another directory)"
	run -1 flock -n "$CHG/lock" true
	echo go >"$NS_DIR/go.$$"
	wait "$pid"
	exec 7>&-
	rm "$NS_DIR/go.$$"
	run -0 flock -n "$CHG/lock" true

	srv=$(mktemp -d "$NS_DIR/srv.XXXXXX")
	mkfifo "$srv/ready"
	ns_root --workspace "$WS" --changes "$CHG" --serve "$srv/s" --ready-fd 6 6>"$srv/ready" </dev/null >/dev/null 2>"$srv/err" &
	pid=$!
	read -r line <"$srv/ready"
	run -0 sbx-ns --join "$srv/s" -- /bin/sh -c 'cat a; echo y >y'
	assert_output "x"
	run -0 sbx-ns --join "$srv/s" -- cat y
	assert_output "y"
	run -102 --separate-stderr ns_root --workspace "$WS" --changes "$CHG" -- true
	assert_equal "$stderr" "sbx-ns: fatal: --changes: refusing $CHG: it is in use by a running sandbox (wait for it to end, or use another directory)"
	run -0 sbx-ns --join "$srv/s" --stop
	wait "$pid"
	assert_equal "$(cat "$srv/err")" ""
	assert [ ! -e "$WS/y" ]
	run -0 sh -c "cut -d, -f1 '$CHG/base.jsonl'"
	assert_output '{"path":"a"
{"path":"y"'
	run -0 flock -n "$CHG/lock" true
}

@test "SIGKILL of sbx-ns mid-run releases the lock; the change set stays usable" {
	fresh
	mkfifo "$NS_DIR/go.$$"
	exec 7<>"$NS_DIR/go.$$"
	ns_root --workspace "$WS" --changes "$CHG" -- /bin/sh -c 'echo x >a; read l' <&7 &
	pid=$!
	wait_for "[ -e '$CHG/upper/a' ]"
	kill -KILL "$pid"
	wait "$pid" || true
	exec 7>&-
	rm "$NS_DIR/go.$$"
	wait_for "flock -n '$CHG/lock' true"
	run -0 --separate-stderr ns_user --workspace "$WS" --changes "$CHG" -- cat a
	assert_output "x"
	assert_equal "$(cat "$WS/a")" "hello"
	run -0 sh -c "cut -d, -f1,2 '$CHG/base.jsonl'"
	assert_output '{"path":"a","type":"file"'
}

@test "attacks: a symlink out of the workspace, a hard link and a 4,096-byte name do not reach the host" {
	for mode in $(both); do
		fresh
		out=$(mktemp -d "$NS_DIR/out.XXXXXX")
		echo secret >"$out/t"
		chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$out"
		ln -s "$out/t" "$WS/lnk"
		ln -s "$out" "$WS/dlnk"
		ln "$WS/a" "$WS/hard"
		before=$(snap "$WS")
		run -0 --separate-stderr $mode --workspace "$WS" --changes "$CHG" -- /bin/sh -c \
			'echo w >lnk 2>/dev/null; echo w >dlnk/n 2>/dev/null; echo w >hard; cat a; n=$(printf "%0255d" 0); mkdir -p $n/$n/$n/$n/$n/$n/$n/$n/$n/$n/$n/$n/$n/$n/$n; echo deep >$n/$n/$n/$n/$n/$n/$n/$n/$n/$n/$n/$n/$n/$n/$n/x; true'
		assert_output "hello"
		assert_equal "$(cat "$out/t")" "secret"
		assert [ ! -e "$out/n" ]
		assert_equal "$(snap "$WS")" "$before"
		assert_equal "$(cat "$CHG/upper/hard")" "w"
		assert_equal "$(wc -l <"$CHG/base.jsonl")" "17"
	done
}

@test "DIR swapped for a symlink after the check is not mounted (the layers are opened again and compared)" {
	fresh
	run -0 ns_user --workspace "$WS" --changes "$CHG" -- true
	mv "$CHG/upper" "$CHG/upper.real"
	ln -s upper.real "$CHG/upper"
	run -102 --separate-stderr ns_user --workspace "$WS" --changes "$CHG" -- true
	assert_equal "$stderr" "sbx-ns: fatal: --changes: refusing $CHG: upper is not a directory (a damaged change set: discard it)"
}

@test "without a mount namespace (where the Landlock tier would run) a change set is refused (106)" {
	fresh
	cp "$SBX_TESTBIN/ns-nouserns" "$NS_DIR/bin/"
	chmod 0755 "$NS_DIR/bin/ns-nouserns"
	printf '{"sandbox":{"fallback":"landlock","readableRoots":["%s"],"writableRoots":["%s"]}}\n' "$NS_DIR" "$NS_DIR" >"$NS_DIR/tier.json"
	chmod 0644 "$NS_DIR/tier.json"
	before=$(snap "$WS")
	run -106 --separate-stderr as_user "$NS_DIR/bin/ns-nouserns" "$SBX_BIN/sbx-ns" --baseline "$NS_DIR/tier.json" \
		--workspace "$WS" --changes "$CHG" -- /bin/sh -c 'echo x >a'
	assert_equal "$stderr" "sbx-ns: fatal: --changes: unable to use change set $CHG: no mount namespace for the sandbox (Operation not permitted), and the Landlock tier would write the real workspace"
	assert_equal "$(snap "$WS")" "$before"
}

#!/usr/bin/env bats
# The other process-policy steps a launcher takes before anything is set
# up, driven through grant-verify (tests/progs) as sbx-ns calls them:
# --command-path (lib/cmdpath.h), --allow-exec (lib/policy/allowexec.h),
# --protect against the writable roots (lib/policy/protect.h). Bad input first.

bats_require_minimum_version 1.5.0
load helpers

setup() {
	scratch=$(sbx_scratch)
	gv="$SBX_TESTBIN/grant-verify"
	mkdir -p "$scratch/bin" "$scratch/other"
	printf '#!/bin/sh\necho "hello from $0 PATH=$PATH"\n' >"$scratch/bin/hello"
	chmod 0755 "$scratch/bin/hello"
	: >"$scratch/file"
}

teardown() {
	rm -rf "$scratch"
}

@test "command-path refuses empty entries, relative entries, dot components and non-directories" {
	local v want
	while IFS='|' read -r v want; do
		run -100 --separate-stderr "$gv" --command-path "$v" -- true
		assert_equal "$stderr" "grant-verify: usage: --command-path: invalid path list '$v': $want"
	done <<'EOF'
|empty entry 1
:/bin|empty entry 1
/bin:|empty entry 2
/usr/bin::/bin|empty entry 2
bin|entry 'bin': not absolute
/bin:.|entry '.': not absolute
/usr/bin/../sbin|entry '/usr/bin/../sbin': '..' component
/usr/./bin|entry '/usr/./bin': '.' component
/no/such/dir|entry '/no/such/dir': No such file or directory
/etc/passwd|entry '/etc/passwd': not a directory
EOF
	run -100 --separate-stderr "$gv" --command-path /bin --command-path /usr/bin -- true
	assert_equal "$stderr" "grant-verify: usage: --command-path given twice"
	run -100 --separate-stderr "$gv" --command-path
	assert_equal "$stderr" "grant-verify: usage: --command-path needs a value"
}

@test "command-path finds the program and becomes its PATH" {
	ln -s "$scratch/bin" "$scratch/binlink"
	run -0 --separate-stderr "$gv" --command-path "$scratch/bin:/usr/bin:/bin" -- hello
	assert_equal "$output" "hello from $scratch/bin/hello PATH=$scratch/bin:/usr/bin:/bin"
	assert_equal "$stderr" ""
	# A symlink to a directory is a directory.
	run -0 --separate-stderr "$gv" --command-path "$scratch/binlink:/bin" -- hello
	assert_equal "$output" "hello from $scratch/binlink/hello PATH=$scratch/binlink:/bin"
	# Only the listed directories are searched.
	run -127 --separate-stderr "$gv" --command-path "$scratch/other" -- hello
	assert_equal "$stderr" "grant-verify: fatal: unable to find hello"
	run -127 --separate-stderr "$gv" --command-path "$scratch/bin" -- sh -c true
	assert_equal "$stderr" "grant-verify: fatal: unable to find sh"
	# The command path owns PATH.
	run -100 --separate-stderr "$gv" --command-path /bin --setenv PATH=/tmp -- true
	assert_equal "$stderr" "grant-verify: usage: --setenv: PATH is set by --command-path"
}

@test "a grant covers the command path through PATH" {
	head -c 32 /dev/urandom >"$scratch/key"
	chmod 0600 "$scratch/key"
	sbx-check grant --kind argv --key "$scratch/key" --cwd / --env "PATH=$scratch/bin:/bin" -- hello >"$scratch/grant"
	run -0 --separate-stderr "$gv" --grant-fd 3 --grant-key "$scratch/key" \
		--command-path "$scratch/bin:/bin" -- hello 3<"$scratch/grant" </dev/null
	assert_equal "$output" "hello from $scratch/bin/hello PATH=$scratch/bin:/bin"
	run -102 --separate-stderr "$gv" --grant-fd 3 --grant-key "$scratch/key" \
		--command-path "$scratch/bin:/usr/bin" -- hello 3<"$scratch/grant" </dev/null
	assert_equal "$stderr" "grant-verify: fatal: grant refused: env differs from the grant"
}

@test "allow-exec refuses an empty, relative, missing or non-file path" {
	run -100 --separate-stderr "$gv" --allow-exec "" -- true
	assert_equal "$stderr" "grant-verify: usage: --allow-exec: invalid path '': empty"
	run -100 --separate-stderr "$gv" --allow-exec bin/true -- true
	assert_equal "$stderr" "grant-verify: usage: --allow-exec: invalid path 'bin/true': not absolute"
	run -100 --separate-stderr "$gv" --allow-exec "$scratch/none" -- true
	assert_equal "$stderr" "grant-verify: usage: --allow-exec: invalid path '$scratch/none': No such file or directory"
	run -100 --separate-stderr "$gv" --allow-exec "$scratch/bin" -- true
	assert_equal "$stderr" "grant-verify: usage: --allow-exec: invalid path '$scratch/bin': not a regular file"
	ln -s "$scratch/none" "$scratch/dangling"
	run -100 --separate-stderr "$gv" --allow-exec "$scratch/dangling" -- true
	assert_equal "$stderr" "grant-verify: usage: --allow-exec: invalid path '$scratch/dangling': No such file or directory"
}

@test "allow-exec accepts the listed file and refuses a renamed copy and a symlink to another binary" {
	cp /bin/true "$scratch/bin/ok"
	cp /bin/true "$scratch/bin/copy"
	ln -s /bin/false "$scratch/bin/fake-ok"
	ln -s "$scratch/bin/ok" "$scratch/bin/alias"
	ln "$scratch/bin/ok" "$scratch/bin/hardlink"
	local cp="$scratch/bin"
	run -0 --separate-stderr "$gv" --command-path "$cp" --allow-exec "$scratch/bin/ok" -- ok
	assert_equal "$stderr" ""
	run -0 --separate-stderr "$gv" --allow-exec "$scratch/bin/ok" -- "$scratch/bin/ok"
	# A symlink or a hard link to the listed file is that file.
	run -0 --separate-stderr "$gv" --command-path "$cp" --allow-exec "$scratch/bin/ok" -- alias
	run -0 --separate-stderr "$gv" --command-path "$cp" --allow-exec "$scratch/bin/ok" -- hardlink
	# A byte-identical copy is another file.
	run -102 --separate-stderr "$gv" --command-path "$cp" --allow-exec "$scratch/bin/ok" -- copy
	assert_equal "$stderr" "grant-verify: fatal: refusing to run copy ($scratch/bin/copy): not one of the --allow-exec files"
	# A symlink named like an allowed program but pointing elsewhere.
	run -102 --separate-stderr "$gv" --command-path "$cp" --allow-exec "$scratch/bin/ok" -- fake-ok
	assert_equal "$stderr" "grant-verify: fatal: refusing to run fake-ok ($scratch/bin/fake-ok): not one of the --allow-exec files"
	run -102 --separate-stderr "$gv" --allow-exec "$scratch/bin/ok" -- /bin/false
	assert_equal "$stderr" "grant-verify: fatal: refusing to run /bin/false: not one of the --allow-exec files"
	# Several may be listed. A listed script runs as the file that was
	# checked (its interpreter reads /dev/fd/N, never the name again);
	# what the interpreter does next is OS isolation's business.
	run -0 --separate-stderr "$gv" --command-path "$cp" --allow-exec /bin/false \
		--allow-exec "$scratch/bin/hello" -- hello
	assert_output --regexp "^hello from /dev/fd/[0-9]+ PATH=$cp\$"
	run -127 --separate-stderr "$gv" --command-path "$cp" --allow-exec "$scratch/bin/ok" -- nothing
	assert_equal "$stderr" "grant-verify: fatal: unable to find nothing"
}

@test "allow-exec: the listed name replaced by another file is refused" {
	cp /bin/true "$scratch/bin/ok"
	cp /bin/true "$scratch/new"
	run -0 --separate-stderr "$gv" --allow-exec "$scratch/bin/ok" -- "$scratch/bin/ok"
	mv "$scratch/new" "$scratch/bin/ok"
	run -102 --separate-stderr "$gv" --allow-exec /bin/true --allow-exec /bin/false -- "$scratch/bin/ok"
	assert_equal "$stderr" "grant-verify: fatal: refusing to run $scratch/bin/ok: not one of the --allow-exec files"
}

@test "protect refuses an empty, relative, dot-dot or whole-filesystem path" {
	local v want
	while IFS='|' read -r v want; do
		run -100 --separate-stderr "$gv" --protect "$v" -- true
		assert_equal "$stderr" "grant-verify: usage: --protect: invalid path '$v': $want"
	done <<'EOF'
|empty
etc|not absolute
./etc|not absolute
/etc/../root|'..' component
/etc/.|'.' component
/|the whole file system
//|the whole file system
EOF
	ln -s / "$scratch/root"
	run -100 --separate-stderr "$gv" --protect "$scratch/root" -- true
	assert_equal "$stderr" "grant-verify: usage: --protect: invalid path '$scratch/root': the whole file system"
}

@test "protect refuses a writable root that is, contains or lies inside a protected path" {
	mkdir -p "$scratch/ws/keys/sub" "$scratch/ws2"
	run -102 --separate-stderr "$gv" --protect "$scratch/ws/keys" --rw "$scratch/ws" -- true
	assert_equal "$stderr" "grant-verify: fatal: refusing to start: protected path $scratch/ws/keys is writable through --rw $scratch/ws"
	run -102 --separate-stderr "$gv" --protect "$scratch/ws/keys" --rw "$scratch/ws/keys" -- true
	assert_equal "$stderr" "grant-verify: fatal: refusing to start: protected path $scratch/ws/keys is writable through --rw $scratch/ws/keys"
	run -102 --separate-stderr "$gv" --protect "$scratch/ws/keys" --rw "$scratch/ws/keys/sub" -- true
	assert_equal "$stderr" "grant-verify: fatal: refusing to start: protected path $scratch/ws/keys is writable through --rw $scratch/ws/keys/sub"
	# Not yet existing: still protected by its name.
	run -102 --separate-stderr "$gv" --protect "$scratch/ws/later/x" --rw "$scratch/ws" -- true
	assert_equal "$stderr" "grant-verify: fatal: refusing to start: protected path $scratch/ws/later/x is writable through --rw $scratch/ws"
	# Named through a symlink: resolved.
	ln -s "$scratch/ws" "$scratch/wslink"
	run -102 --separate-stderr "$gv" --protect "$scratch/wslink/keys" --rw "$scratch/ws" -- true
	assert_equal "$stderr" "grant-verify: fatal: refusing to start: protected path $scratch/ws/keys is writable through --rw $scratch/ws"
	# Siblings and names that only start alike are not exposed.
	run -0 --separate-stderr "$gv" --protect "$scratch/ws/keys" --rw "$scratch/ws2" -- true
	run -0 --separate-stderr "$gv" --protect "$scratch/ws2" --rw "$scratch/ws" -- true
	run -0 --separate-stderr "$gv" --protect "$scratch/ws" --protect /etc --rw "$scratch/ws2" --rw "$scratch/other" -- true
	assert_equal "$stderr" ""
}

@test "protect sees a writable root through a bind mount of its parent" {
	mkdir -p "$scratch/real/keys" "$scratch/alias"
	mount --bind "$scratch/real" "$scratch/alias"
	run -102 --separate-stderr "$gv" --protect "$scratch/alias/keys" --rw "$scratch/real" -- true
	umount "$scratch/alias"
	assert_equal "$stderr" "grant-verify: fatal: refusing to start: protected path $scratch/alias/keys is writable through --rw $scratch/real"
}

@test "allow-exec takes a relative program from the directory the command starts in" {
	cp /bin/true "$scratch/bin/ok"
	cp /bin/true "$scratch/bin/copy"
	run -0 --separate-stderr "$gv" --cwd "$scratch/bin" --allow-exec "$scratch/bin/ok" -- ./ok
	assert_equal "$stderr" ""
	run -102 --separate-stderr "$gv" --cwd "$scratch/bin" --allow-exec "$scratch/bin/ok" -- ./copy
	assert_equal "$stderr" "grant-verify: fatal: refusing to run ./copy ($scratch/bin/./copy): not one of the --allow-exec files"
	run -127 --separate-stderr "$gv" --cwd "$scratch" --allow-exec "$scratch/bin/ok" -- ./ok
	assert_equal "$stderr" "grant-verify: fatal: unable to find ./ok"
}

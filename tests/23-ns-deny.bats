#!/usr/bin/env bats
# sbx-ns: deny-write. The defaults (.env, .env.*, .git/config,
# .git/hooks/**) in a repo-shaped workspace and in an empty one, renames of
# ancestors, placeholders removed afterwards, --deny-write replacing the
# defaults, and the refusals (symlinks, hard links).

bats_require_minimum_version 1.5.0
load helpers
load 29-ns-helpers

setup_file() { ns_setup_file; }
teardown_file() { ns_teardown_file; }

# A repo-shaped workspace owned by the test user.
repo() {
	local ws
	ws=$(ns_ws)
	mkdir -p "$ws/.git/hooks" "$ws/src"
	echo "[core]" > "$ws/.git/config"
	echo "#!/bin/sh" > "$ws/.git/hooks/pre-commit"
	echo "KEY=1" > "$ws/.env"
	echo "KEY=2" > "$ws/.env.local"
	echo "int main;" > "$ws/src/main.c"
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$ws"
	echo "$ws"
}

# Both identities, one shell line of attempts, one expected transcript.
both() {
	local ws=$1 script=$2 want=$3
	run -0 --separate-stderr ns_root --workspace "$ws" --ro "$NS_DIR/bin" -- sh -c "$script"
	assert_output "$want"
	assert_equal "$stderr" ""
	run -0 --separate-stderr ns_user --workspace "$ws" --ro "$NS_DIR/bin" -- sh -c "$script"
	assert_output "$want"
	assert_equal "$stderr" ""
}

@test "the defaults protect .env, .env.*, .git/config and .git/hooks in a repo; the rest is writable" {
	local ws a="$NS_DIR/bin/ns-attempt"
	ws=$(repo)
	both "$ws" "$a append .env; $a append .env.local; $a append .git/config; $a append .git/hooks/pre-commit; $a write .git/hooks/post-commit; $a unlink .env; $a append src/main.c; $a write new.c" \
"append: EROFS
append: EROFS
append: EROFS
append: EROFS
write: EROFS
unlink: EBUSY
append: ok
write: ok"
	assert_equal "$(cat "$ws/.env")" "KEY=1"
	assert_equal "$(cat "$ws/.env.local")" "KEY=2"
	assert_equal "$(cat "$ws/.git/config")" "[core]"
	assert_file_not_exist "$ws/.git/hooks/post-commit"
}

@test "renaming or removing an ancestor of a protected path fails, so it stays protected" {
	local ws a="$NS_DIR/bin/ns-attempt"
	ws=$(repo)
	both "$ws" "$a rename .git .git2; $a rename .git/hooks .git/h2; $a rmdir .git/hooks; $a write .git2/config" \
"rename: EBUSY
rename: EBUSY
rmdir: EBUSY
write: ENOENT"
	assert_equal "$(cat "$ws/.git/config")" "[core]"
	assert_dir_exist "$ws/.git"
}

@test "a workspace without .env or .git gets placeholders that cannot be written, removed afterwards" {
	local ws a="$NS_DIR/bin/ns-attempt"
	ws=$(ns_ws)
	both "$ws" "$a write .env; $a mkdir .git; $a write .git/config; $a mkdir .git/hooks; $a rename .env x; $a write ok" \
"write: EROFS
mkdir: EEXIST
write: EROFS
mkdir: EROFS
rename: EBUSY
write: ok"
	run -0 ls -A "$ws"
	assert_output "ok"
}

@test "a repo without hooks gets a placeholder for .git/hooks; creating a hook fails" {
	local ws a="$NS_DIR/bin/ns-attempt"
	ws=$(repo)
	rm -r "$ws/.git/hooks"
	both "$ws" "$a mkdir .git/hooks; $a write .git/hooks/pre-commit; $a write .git/description" \
"mkdir: EEXIST
write: EROFS
write: ok"
	assert_file_not_exist "$ws/.git/hooks"
}

@test "a glob matches every existing name: .env.* covers .env.production" {
	local ws a="$NS_DIR/bin/ns-attempt"
	ws=$(repo)
	echo p > "$ws/.env.production"
	chown "$SBX_TEST_UID" "$ws/.env.production"
	both "$ws" "$a append .env.production; $a write .env.new; rm .env.new" \
"append: EROFS
write: ok"
}

@test "--deny-write replaces the defaults" {
	local ws a="$NS_DIR/bin/ns-attempt"
	ws=$(repo)
	echo s > "$ws/secret.txt"
	mkdir "$ws/docs"
	echo d > "$ws/docs/a"
	chown -R "$SBX_TEST_UID" "$ws/secret.txt" "$ws/docs"
	run -0 --separate-stderr ns_user --deny-write 'secret*' --deny-write 'docs/**' --workspace "$ws" --ro "$NS_DIR/bin" -- \
		sh -c "$a append secret.txt; $a append docs/a; $a write docs/b; $a append .env; $a append .git/config"
	assert_output "append: EROFS
append: EROFS
write: EROFS
append: ok
append: ok"
}

@test "a denied path that is a symlink is refused" {
	local ws
	ws=$(ns_ws)
	ln -s /etc/hostname "$ws/.env"
	run -102 --separate-stderr ns_user --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to protect .env in the workspace: it is a symlink"
	rm "$ws/.env"
	mkdir "$ws/real"
	ln -s real "$ws/.git"
	run -102 --separate-stderr ns_root --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to protect .git in the workspace: it is a symlink"
}

@test "a denied file with a second hard link is refused" {
	local ws
	ws=$(repo)
	ln "$ws/.env" "$ws/alias"
	run -102 --separate-stderr ns_user --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to protect .env in the workspace: it has 2 hard links"
}

@test "a hard link to a protected file cannot be made inside" {
	local ws a="$NS_DIR/bin/ns-attempt"
	ws=$(repo)
	both "$ws" "$a link .env alias; $a link .git/config cfg" \
"link: EXDEV
link: EXDEV"
}

@test "a placeholder shared by two concurrent runs stays until neither needs it" {
	local ws a="$NS_DIR/bin/ns-attempt" pa pb
	ws=$(ns_ws)
	ns_user --workspace "$ws" --ro "$NS_DIR/bin" --ready-fd 4 -- sh -c 'while [ ! -e a-go ]; do sleep 0.02; done' 4>"$NS_DIR/ready-a" 3>&- &
	pa=$!
	for _ in $(seq 200); do [ -s "$NS_DIR/ready-a" ] && break; sleep 0.02; done
	ns_user --workspace "$ws" --ro "$NS_DIR/bin" --ready-fd 4 -- sh -c "while [ ! -e b-go ]; do sleep 0.02; done; $a write .env" \
		>"$NS_DIR/out-b" 4>"$NS_DIR/ready-b" 3>&- &
	pb=$!
	for _ in $(seq 200); do [ -s "$NS_DIR/ready-b" ] && break; sleep 0.02; done
	touch "$ws/a-go"
	wait "$pa"
	assert_file_exist "$ws/.env"
	touch "$ws/b-go"
	wait "$pb"
	assert_equal "$(cat "$NS_DIR/out-b")" "write: EROFS"
	assert_equal "$(stat -c %s "$ws/.env")" 0
}

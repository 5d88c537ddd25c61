#!/usr/bin/env bats
# sbx-ns: deny-write. The defaults (.env, .env.*, git's config and hooks,
# also of worktrees and submodules) in a repo-shaped workspace and in an
# empty one, renames of ancestors, nothing created in the workspace,
# protected paths the command creates moved aside afterwards, --deny-write
# replacing the defaults, and the refusals (symlinks, hard links).

bats_require_minimum_version 1.5.0
load helpers
load ns



# Both identities, one shell line of attempts, one expected transcript (and
# sbx-ns's own lines on stderr, none unless given).
both() {
	local ws=$1 script=$2 want=$3 err=${4:-}
	run -0 --separate-stderr ns_root --workspace "$ws" --ro "$NS_DIR/bin" -- sh -c "$script"
	assert_output "$want"
	assert_equal "$stderr" "$err"
	run -0 --separate-stderr ns_user --workspace "$ws" --ro "$NS_DIR/bin" -- sh -c "$script"
	assert_output "$want"
	assert_equal "$stderr" "$err"
}

@test "the defaults protect .env, .env.*, .git/config and .git/hooks in a repo; the rest is writable" {
	local ws a="$NS_DIR/bin/ns-attempt"
	ws=$(ns_repo)
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
	ws=$(ns_repo)
	both "$ws" "$a rename .git .git2; $a rename .git/hooks .git/h2; $a rmdir .git/hooks; $a write .git2/config" \
"rename: EBUSY
rename: EBUSY
rmdir: EBUSY
write: ENOENT" \
"sbx-ns: warning: deny-write: refused a rename of the directory .git (to .git2), which holds protected paths; the command sees EBUSY
sbx-ns: warning: deny-write: refused a rename of the protected path .git/hooks (to .git/h2); the command sees EBUSY"
	assert_equal "$(cat "$ws/.git/config")" "[core]"
	assert_dir_exist "$ws/.git"
}

# Both identities, each in a fresh workspace: ns_each CALLBACK runs
# CALLBACK WS RUNNER for ns_root and ns_user.
ns_each() {
	local fn=$1 ws mode
	for mode in ns_root ns_user; do
		ws=$(ns_ws)
		"$fn" "$ws" "$mode"
	done
}

created_in_empty() {
	local ws=$1 mode=$2
	run -0 --separate-stderr ns_fd5 "$mode" --status-fd 5 --workspace "$ws" -- sh -c \
		'ls -A; test -e .git || echo no-git; echo K=1 > .env; mkdir -p .git/hooks;
		 printf "#!/bin/sh\n" > .git/hooks/pre-commit; chmod 4755 .git/hooks/pre-commit;
		 echo s > .git/hooks/pre-commit.sample; printf "[core]\n\tfsmonitor = ./x\n" > .git/config; echo ok > ok'
	assert_line "no-git"
	run -0 grep -c '"event":"deny-write"' <<<"$output"
	assert_output 3
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path .env; moved it to .env.sbx-denied
sbx-ns: warning: deny-write: the command created the protected path .git/config; moved it to .git/config.sbx-denied
sbx-ns: warning: deny-write: the command created the protected path .git/hooks/pre-commit; moved it to .git/hooks/pre-commit.sbx-denied and cleared its execute bits"
	run -0 ls -A "$ws" "$ws/.git" "$ws/.git/hooks"
	assert_output "$ws:
.env.sbx-denied
.git
ok

$ws/.git:
config.sbx-denied
hooks

$ws/.git/hooks:
pre-commit.sample
pre-commit.sbx-denied"
	assert_equal "$(stat -c %a "$ws/.git/hooks/pre-commit.sbx-denied")" 644
	assert_equal "$(cat "$ws/.env.sbx-denied")" "K=1"
}

@test "nothing is created in a workspace without .env or .git; what the command creates there under a protected name is moved aside" {
	ns_each created_in_empty
}

@test "the status line of a moved path escapes its name" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr ns_fd5 ns_user --status-fd 5 --workspace "$ws" -- sh -c 'printf x > "$(printf ".env.a\nb\033")"'
	run -0 grep '"event":"deny-write"' <<<"$output"
	assert_output '{"tool":"sbx-ns","event":"deny-write","path":".env.a\u000ab\u001b","action":"moved aside","moved_to":".env.a\u000ab\u001b.sbx-denied","exec_cleared":false,"earlier_run":false}'
	assert_equal "$stderr" 'sbx-ns: warning: deny-write: the command created the protected path .env.a\x0ab\x1b; moved it to .env.a\x0ab\x1b.sbx-denied'
}

@test "a repo without hooks gets no placeholder; a hook the command creates is moved aside, the config stays read-only" {
	local ws a="$NS_DIR/bin/ns-attempt"
	ws=$(ns_repo)
	rm -r "$ws/.git/hooks"
	run -0 --separate-stderr ns_user --workspace "$ws" --ro "$NS_DIR/bin" -- sh -c \
		"$a mkdir .git/hooks; $a write .git/hooks/pre-commit; $a write .git/description; $a append .git/config"
	assert_output "mkdir: ok
write: ok
write: ok
append: EROFS"
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path .git/hooks/pre-commit; moved it to .git/hooks/pre-commit.sbx-denied"
	assert_file_not_exist "$ws/.git/hooks/pre-commit"
	assert_equal "$(cat "$ws/.git/hooks/pre-commit.sbx-denied")" "pwned"
	assert_equal "$(cat "$ws/.git/config")" "[core]"
}

@test "a .git file or symlink the command puts where git looks is moved aside" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr ns_user --workspace "$ws" -- sh -c 'mkdir evil; echo "gitdir: evil" > .git'
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path .git; moved it to .git.sbx-denied"
	run -0 --separate-stderr ns_root --workspace "$ws" -- sh -c 'ln -s evil .git'
	assert_regex "$stderr" '^sbx-ns: warning: deny-write: the command created the protected path \.git; moved it to \.git\.sbx-denied-[0-9a-f]{16}$'
	assert_equal "$(readlink "$ws/${stderr##* moved it to }")" "evil"
	assert_file_not_exist "$ws/.git"
}

@test "the defaults cover worktree configs and submodules' configs and hooks at any depth; git's samples are left" {
	local ws a="$NS_DIR/bin/ns-attempt"
	ws=$(ns_repo)
	mkdir -p "$ws/.git/worktrees/w" "$ws/.git/modules/a/hooks" "$ws/.git/modules/a/modules/b"
	echo c > "$ws/.git/config.worktree"
	echo c > "$ws/.git/worktrees/w/config.worktree"
	echo c > "$ws/.git/modules/a/config"
	echo h > "$ws/.git/modules/a/hooks/post-checkout"
	echo c > "$ws/.git/modules/a/modules/b/config"
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$ws"
	both "$ws" "$a append .git/config.worktree; $a append .git/worktrees/w/config.worktree; $a append .git/modules/a/config; $a write .git/modules/a/hooks/pre-commit; $a append .git/modules/a/modules/b/config; $a write .git/modules/a/index" \
"append: EROFS
append: EROFS
append: EROFS
write: EROFS
append: EROFS
write: ok"
	run -0 --separate-stderr ns_user --workspace "$ws" -- sh -c \
		'mkdir -p .git/modules/a/modules/c/hooks; echo x > .git/modules/a/modules/c/config; echo s > .git/modules/a/modules/c/hooks/update.sample; echo h > .git/modules/a/modules/c/hooks/update'
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path .git/modules/a/modules/c/config; moved it to .git/modules/a/modules/c/config.sbx-denied
sbx-ns: warning: deny-write: the command created the protected path .git/modules/a/modules/c/hooks/update; moved it to .git/modules/a/modules/c/hooks/update.sbx-denied"
	assert_file_exist "$ws/.git/modules/a/modules/c/hooks/update.sample"
}

@test "a protected path that appears during the run but is not the command's is left and reported" {
	local ws
	ws=$(ns_ws)
	# Made by root on the host while a run of the test user goes on.
	ns_root --workspace "$ws" --ready-fd 4 -- sh -c 'while [ ! -e go ]; do sleep 0.02; done' 4>"$NS_DIR/ready-h" 3>&- 2>"$NS_DIR/err-h" &
	local p=$!
	wait_for '[ -s "$NS_DIR/ready-h" ]' || { kill "$p"; false; }
	echo root > "$ws/.env"
	touch "$ws/go"
	wait "$p"
	assert_equal "$(cat "$NS_DIR/err-h")" "sbx-ns: warning: deny-write: the protected path .env appeared during a run but belongs to another user; left as it is"
	assert_equal "$(cat "$ws/.env")" "root"
}

@test "a glob matches every existing name: .env.* covers .env.production" {
	local ws a="$NS_DIR/bin/ns-attempt"
	ws=$(ns_repo)
	echo p > "$ws/.env.production"
	chown "$SBX_TEST_UID" "$ws/.env.production"
	both "$ws" "$a append .env.production; $a write .env.new; rm .env.new" \
"append: EROFS
write: ok"
}

@test "--deny-write replaces the defaults" {
	local ws a="$NS_DIR/bin/ns-attempt"
	ws=$(ns_repo)
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
	ws=$(ns_repo)
	ln "$ws/.env" "$ws/alias"
	run -102 --separate-stderr ns_user --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to protect .env in the workspace: it has 2 hard links"
}

@test "a hard link to a protected file cannot be made inside" {
	local ws a="$NS_DIR/bin/ns-attempt"
	ws=$(ns_repo)
	both "$ws" "$a link .env alias; $a link .git/config cfg" \
"link: EXDEV
link: EXDEV"
}

@test "a run that ends does not lift the protection of a run still going" {
	local ws a="$NS_DIR/bin/ns-attempt" pa pb
	ws=$(ns_ws)
	# A creates .env; B starts while it is there and protects it; A ends
	# and moves it aside; what B then writes at .env is moved aside by B.
	ns_user --workspace "$ws" --ro "$NS_DIR/bin" -- sh -c "echo A > .env; touch a-made; while [ ! -e a-go ]; do sleep 0.02; done" 2>"$NS_DIR/err-a" 3>&- &
	pa=$!
	wait_for '[ -e "$ws/a-made" ]' || { kill "$pa"; false; }
	ns_root --workspace "$ws" --ro "$NS_DIR/bin" --ready-fd 4 -- sh -c "$a append .env; while [ ! -e b-go ]; do sleep 0.02; done; $a write .env" \
		>"$NS_DIR/out-b" 2>"$NS_DIR/err-b" 4>"$NS_DIR/ready-b" 3>&- &
	pb=$!
	wait_for '[ -s "$NS_DIR/ready-b" ]' || { kill "$pa" "$pb"; false; }
	touch "$ws/a-go"
	wait "$pa"
	assert_equal "$(cat "$NS_DIR/err-a")" "sbx-ns: warning: deny-write: the command created the protected path .env; moved it to .env.sbx-denied"
	touch "$ws/b-go"
	wait "$pb"
	assert_equal "$(cat "$NS_DIR/out-b")" "append: EROFS
write: ok"
	run -0 cat "$NS_DIR/err-b"
	assert_regex "$output" '^sbx-ns: warning: deny-write: the command created the protected path \.env; moved it to \.env\.sbx-denied-[0-9a-f]{16}$'
	assert_file_not_exist "$ws/.env"
	assert_equal "$(cat "$ws/.env.sbx-denied")" "A"
	assert_equal "$(cat "$ws/${output##* moved it to }")" "pwned"
}

moved_in() {
	local ws=$1 mode=$2
	# Files made before the run, moved into place by the command: their
	# own times are old, the directory moved is the command's doing.
	mkdir -p "$ws/evil/hooks"
	echo '[core] fsmonitor = x' > "$ws/evil/config"
	printf '#!/bin/sh\n' > "$ws/evil/hooks/pre-commit"
	chmod 755 "$ws/evil/hooks/pre-commit"
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$ws"
	touch -d '2001-01-01' "$ws/evil/config" "$ws/evil/hooks/pre-commit"
	run -0 --separate-stderr "$mode" --workspace "$ws" -- mv evil .git
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path .git/config; moved it to .git/config.sbx-denied
sbx-ns: warning: deny-write: the command created the protected path .git/hooks/pre-commit; moved it to .git/hooks/pre-commit.sbx-denied and cleared its execute bits"
	assert_file_not_exist "$ws/.git/config"
	assert_file_not_exist "$ws/.git/hooks/pre-commit"
}

@test "a directory of old files moved into place as .git by the command is the command's" {
	ns_each moved_in
}

@test "a \"**\" in the middle is followed at most 64 directories below the workspace; a deeper tree the command made is moved aside whole" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr ns_user --workspace "$ws" -- sh -c \
		'mkdir -p .git/modules && cd .git/modules && for i in $(seq 70); do mkdir d && cd d; done && echo x > config'
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path .git/modules$(printf '/d%.0s' $(seq 63)); moved it to .git/modules$(printf '/d%.0s' $(seq 62))/d.sbx-denied"
}

@test "a hook in a directory the command made read-only is still moved aside, and the directory's mode is kept" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr ns_user --workspace "$ws" -- sh -c \
		'mkdir -p .git/hooks && printf "#!/bin/sh\n" > .git/hooks/pre-commit && chmod 755 .git/hooks/pre-commit && chmod 555 .git/hooks'
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path .git/hooks/pre-commit; moved it to .git/hooks/pre-commit.sbx-denied and cleared its execute bits"
	assert_equal "$(stat -c %a "$ws/.git/hooks")" 555
	assert_file_not_exist "$ws/.git/hooks/pre-commit"
}

@test "a config hidden in a .git the command made unsearchable is still found and moved aside; the modes are put back" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr ns_user --workspace "$ws" -- sh -c \
		'mkdir -p .git/hooks && printf "[core]\n\tfsmonitor = x\n" > .git/config && echo h > .git/hooks/post-checkout && chmod 000 .git/hooks && chmod 000 .git && chmod 311 .'
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path .git/config; moved it to .git/config.sbx-denied
sbx-ns: warning: deny-write: the command created the protected path .git/hooks; moved it to .git/hooks.sbx-denied"
	assert_equal "$(stat -c %a "$ws" "$ws/.git")" "311
0"
	chmod 755 "$ws" "$ws/.git"
	run -0 ls -A "$ws/.git"
	assert_output "config.sbx-denied
hooks.sbx-denied"
}

@test "the config git init writes is left in place; one line more that git init does not write and it is moved aside" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr ns_user --workspace "$ws" -- git init -q .
	assert_equal "$stderr" ""
	assert_file_exist "$ws/.git/config"
	ws=$(ns_ws)
	run -0 --separate-stderr ns_root --workspace "$ws" -- sh -c 'git init -q . && git config core.hooksPath h'
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path .git/config; moved it to .git/config.sbx-denied"
	ws=$(ns_ws)
	run -0 --separate-stderr ns_user --workspace "$ws" -- sh -c 'git init -q . && printf "\tbare = false # x\n" >> .git/config'
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path .git/config; moved it to .git/config.sbx-denied"
}

@test "the remote and branch lines git clone writes are left in a new repository; a remote that runs a program is moved aside" {
	local ws url
	# What git clone adds to git init's lines, made with git's own commands.
	ws=$(ns_ws)
	run -0 --separate-stderr ns_user --workspace "$ws" -- sh -c 'git init -q r && cd r &&
		git remote add origin https://git.example.org/x.git && git remote add up user@git.example.org:x.git &&
		git config branch.main.remote origin && git config branch.main.merge refs/heads/main'
	assert_equal "$stderr" ""
	run -0 grep -c -e '^	url = user@git.example.org:x.git$' -e '^	merge = refs/heads/main$' "$ws/r/.git/config"
	assert_output 2
	# Each of these names a program or a local repository: the config goes.
	for url in 'ext::sh -c touch% /tmp/x' 'fd::3' '-oProxyCommand=x' 'file:///tmp/r' '/tmp/r' 'ssh://-oProxyCommand=x/r' 'https://a.example/x;y'; do
		ws=$(ns_ws)
		run -0 --separate-stderr ns_user --workspace "$ws" -- sh -c 'git init -q r2 && git -C r2 config remote.origin.url "$1"' sh "$url"
		assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path r2/.git/config; moved it to r2/.git/config.sbx-denied"
	done
	ws=$(ns_ws)
	run -0 --separate-stderr ns_user --workspace "$ws" -- sh -c 'git init -q r && git -C r remote add origin https://git.example.org/x.git && git -C r config remote.origin.uploadpack "touch /tmp/x"'
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path r/.git/config; moved it to r/.git/config.sbx-denied"
	ws=$(ns_ws)
	run -0 --separate-stderr ns_user --workspace "$ws" -- sh -c 'git init -q r && git -C r config branch.main.remote "-x"'
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path r/.git/config; moved it to r/.git/config.sbx-denied"
}

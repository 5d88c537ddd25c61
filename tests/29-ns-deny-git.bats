#!/usr/bin/env bats
# sbx-ns: deny-write's git rule. Whatever a run leaves in the workspace,
# git run afterwards on the host by the user (status, commit, log) runs no
# program the command planted: git's redirect files (commondir, gitfiles,
# worktrees, modules), nested and bare-shaped repositories, the files a
# protected config includes; and a moved-aside name the command cannot
# pre-create, or exit 102 when the end check cannot complete.

bats_require_minimum_version 1.5.0
load helpers
load ns

setup_file() {
	ns_setup_file
	mkdir -p "$NS_DIR/mk" "$NS_DIR/home"
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$NS_DIR/mk" "$NS_DIR/home"
}

setup() {
	MARK="$NS_DIR/mk/ran.$BATS_TEST_NUMBER"
	rm -f "$MARK"
}

# git as the user on the host, with a HOME of its own and nothing else.
host_git() {
	as_user env HOME="$NS_DIR/home" git -c user.name=t -c user.email=t@example.org -C "$@"
}

# A real repository with one commit, owned by the test user.
git_ws() {
	local ws
	ws=$(ns_ws)
	host_git "$ws" init -q
	echo a >"$ws/a"
	host_git "$ws" add a
	host_git "$ws" commit -qm one
	echo "$ws"
}

# Shell text for the command: a program that touches MARK, and config
# lines that make git run it (fsmonitor on status, a hooks directory on
# commit, the pager).
evil() {
	local ws=$1
	printf '%s' "mkdir -p $ws/.evilhooks && printf '#!/bin/sh\ntouch $MARK\n' > $ws/.evilhooks/pre-commit && chmod 755 $ws/.evilhooks/pre-commit && cp $ws/.evilhooks/pre-commit $ws/.evilfsm && "
}
EVILCFG='\n[core]\n\tfsmonitor = WS/.evilfsm\n\thooksPath = WS/.evilhooks\n\tpager = WS/.evilfsm\n'
evil_cfg() { printf '%s' "printf '${EVILCFG//WS/$1}'"; }

# git status, commit and log on the host: nothing planted may run.
host_clean() {
	local d
	for d in "$@"; do
		host_git "$d" status >/dev/null 2>&1 || true
		host_git "$d" commit -q --allow-empty -m probe >/dev/null 2>&1 || true
		host_git "$d" log -1 >/dev/null 2>&1 || true
	done
	assert_file_not_exist "$MARK"
}

@test "the probe sees what it looks for: a planted fsmonitor outside any sandbox runs on the host" {
	local ws
	ws=$(git_ws)
	as_user sh -c "cd $ws && $(evil "$ws") $(evil_cfg "$ws") >> .git/config"
	host_git "$ws" status >/dev/null
	assert_file_exist "$MARK"
}

@test "a .git/commondir naming a directory the command made is moved aside; host git runs nothing" {
	local ws
	ws=$(git_ws)
	run -0 --separate-stderr ns_user --workspace "$ws" -- sh -c \
		"$(evil "$ws") mkdir .git/x && ln -s ../objects .git/x/objects && ln -s ../refs .git/x/refs &&
		 cp .git/config .git/x/config && $(evil_cfg "$ws") >> .git/x/config && echo x > .git/commondir"
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path .git/commondir; moved it to .git/commondir.sbx-denied"
	host_clean "$ws"
}

@test "a bare-shaped directory the command made has its config moved aside, also inside .git" {
	local ws
	ws=$(git_ws)
	run -0 --separate-stderr ns_root --workspace "$ws" -- sh -c \
		"$(evil "$ws") mkdir -p tools/objects tools/refs .git/x && echo 'ref: refs/heads/main' > tools/HEAD &&
		 $(evil_cfg "$ws") > tools/config && cp tools/HEAD .git/x/HEAD && echo x > .git/x/commondir && cp tools/config .git/x/config"
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path .git/x/commondir; moved it to .git/x/commondir.sbx-denied
sbx-ns: warning: deny-write: the command created the protected path .git/x/config; moved it to .git/x/config.sbx-denied
sbx-ns: warning: deny-write: the command created the protected path tools/config; moved it to tools/config.sbx-denied"
	host_clean "$ws" "$ws/tools"
}

@test "a submodule's .git file cannot be rewritten; a gitdir the command made beside it has its config moved aside" {
	local ws
	ws=$(git_ws)
	as_user mkdir "$ws/.git/modules"
	host_git "$ws" init -q --separate-git-dir="$ws/.git/modules/sub" "$ws/sub"
	echo s >"$ws/sub/s"
	host_git "$ws/sub" add s
	host_git "$ws/sub" commit -qm s
	host_git "$ws" add sub 2>/dev/null
	host_git "$ws" commit -qm sub
	run -0 --separate-stderr ns_user --workspace "$ws" --ro "$NS_DIR/bin" -- sh -c \
		"$(evil "$ws") cp -r .git/modules/sub sub/.g && $(evil_cfg "$ws") >> sub/.g/config &&
		 $NS_ATT write sub/.git; mkdir lib && echo 'gitdir: ../sub/.g' > lib/.git"
	assert_output "write: EROFS"
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path lib/.git; moved it to lib/.git.sbx-denied
sbx-ns: warning: deny-write: the command created the protected path sub/.g/config; moved it to sub/.g/config.sbx-denied"
	assert_equal "$(cat "$ws/sub/.git")" "gitdir: $ws/.git/modules/sub"
	host_clean "$ws" "$ws/sub"
}

@test "a linked worktree outside the workspace: its commondir and gitdir are read-only, a new config.worktree is moved aside" {
	local ws out
	ws=$(git_ws)
	out=$(ns_ws)
	host_git "$ws" worktree add -q "$out/wt"
	run -0 --separate-stderr ns_user --workspace "$ws" --ro "$NS_DIR/bin" -- sh -c \
		"$(evil "$ws") mkdir .git/y && ln -s ../objects .git/y/objects && ln -s ../refs .git/y/refs &&
		 cp .git/config .git/y/config && $(evil_cfg "$ws") >> .git/y/config &&
		 $NS_ATT write .git/worktrees/wt/commondir; $NS_ATT write .git/worktrees/wt/gitdir;
		 $(evil_cfg "$ws") > .git/worktrees/wt/config.worktree"
	assert_output "write: EROFS
write: EROFS"
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path .git/worktrees/wt/config.worktree; moved it to .git/worktrees/wt/config.worktree.sbx-denied"
	host_git "$ws" config extensions.worktreeConfig true
	host_clean "$ws" "$out/wt"
}

@test "a nested repository the command creates has its config and hooks moved aside" {
	local ws
	ws=$(git_ws)
	run -0 --separate-stderr ns_user --workspace "$ws" -- sh -c \
		"$(evil "$ws") git init -q vendor/lib && cp .evilfsm vendor/lib/.git/hooks/pre-commit &&
		 $(evil_cfg "$ws") >> vendor/lib/.git/config"
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path vendor/lib/.git/config; moved it to vendor/lib/.git/config.sbx-denied
sbx-ns: warning: deny-write: the command created the protected path vendor/lib/.git/hooks/pre-commit; moved it to vendor/lib/.git/hooks/pre-commit.sbx-denied and cleared its execute bits"
	host_clean "$ws" "$ws/vendor/lib"
}

@test "an existing nested repository is protected like the top one" {
	local ws a="$NS_DIR/bin/ns-attempt"
	ws=$(git_ws)
	host_git "$ws" init -q vendor/lib
	as_user mkdir -p "$ws/deep/a/b"
	host_git "$ws/deep/a/b" init -q --bare m.git
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$ws"
	run -0 --separate-stderr ns_root --workspace "$ws" --ro "$NS_DIR/bin" -- sh -c \
		"$a append vendor/lib/.git/config; $a write vendor/lib/.git/hooks/pre-commit; $a rename vendor v2;
		 $a append deep/a/b/m.git/config; $a write deep/a/b/m.git/hooks/pre-commit; $a write vendor/lib/.git/description"
	assert_output "append: EROFS
write: EROFS
rename: EBUSY
append: EROFS
write: EROFS
write: ok"
	assert_equal "$stderr" "sbx-ns: warning: deny-write: refused a rename of the directory vendor (to v2), which holds protected paths; the command sees EBUSY"
}

@test "a commondir in a submodule's git directory: an existing one is read-only, a new one is moved aside" {
	local ws a="$NS_DIR/bin/ns-attempt"
	ws=$(git_ws)
	host_git "$ws" init -q --bare .git/modules/a
	host_git "$ws" init -q --bare .git/modules/b
	echo ../a >"$ws/.git/modules/b/commondir"
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$ws"
	run -0 --separate-stderr ns_user --workspace "$ws" --ro "$NS_DIR/bin" -- sh -c \
		"$a write .git/modules/b/commondir; echo ../b > .git/modules/a/commondir"
	assert_output "write: EROFS"
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path .git/modules/a/commondir; moved it to .git/modules/a/commondir.sbx-denied"
}

@test "the files a protected config includes from the workspace are protected; a missing one the command creates is moved aside" {
	local ws a="$NS_DIR/bin/ns-attempt"
	ws=$(git_ws)
	printf '[include]\n\tpath = ../shared.gitconfig\n[includeIf "gitdir:/"]\n\tpath = "../conf/missing"\n' >>"$ws/.git/config"
	printf '[user]\n\tname = t\n' >"$ws/shared.gitconfig"
	mkdir "$ws/conf"
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$ws"
	run -0 --separate-stderr ns_user --workspace "$ws" --ro "$NS_DIR/bin" -- sh -c \
		"$(evil "$ws") $a append shared.gitconfig; $(evil_cfg "$ws") > conf/missing"
	assert_output "append: EROFS"
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path conf/missing; moved it to conf/missing.sbx-denied"
	host_clean "$ws"
}

@test "a nested .git that is a fifo or a symlink is moved aside; an existing one is refused" {
	local ws
	ws=$(git_ws)
	run -0 --separate-stderr ns_user --workspace "$ws" -- sh -c 'mkdir -p p q && mkfifo p/.git && ln -s ../.git q/.git'
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path p/.git; moved it to p/.git.sbx-denied
sbx-ns: warning: deny-write: the command created the protected path q/.git; moved it to q/.git.sbx-denied"
	mv "$ws/p/.git.sbx-denied" "$ws/p/.git"
	run -102 --separate-stderr ns_user --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to protect p/.git in the workspace: it is a fifo"
	rm "$ws/p/.git"
	mv "$ws/q/.git.sbx-denied" "$ws/q/.git"
	run -102 --separate-stderr ns_user --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to protect q/.git in the workspace: it is a symlink"
}

@test "--deny-write without .git/config drops git's rule; naming .git/config keeps all of it" {
	local ws a="$NS_DIR/bin/ns-attempt"
	ws=$(git_ws)
	run -0 --separate-stderr ns_user --deny-write .secrets --workspace "$ws" --ro "$NS_DIR/bin" -- sh -c \
		"$a append .git/config; echo x > .git/commondir.new"
	assert_output "append: ok"
	assert_equal "$stderr" ""
	run -0 --separate-stderr ns_user --deny-write .secrets --deny-write .git/config --workspace "$ws" --ro "$NS_DIR/bin" -- sh -c \
		"$a append .git/config; echo x > .git/commondir"
	assert_output "append: EROFS"
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path .git/commondir; moved it to .git/commondir.sbx-denied"
}

@test "decoys: with NAME.sbx-denied and -2 to -99 taken, the hook is moved to a name the command cannot predict" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr ns_user --workspace "$ws" -- sh -c \
		'mkdir -p .git/hooks; for s in "" $(seq -f -%g 2 99); do touch .git/hooks/pre-commit.sbx-denied$s; done;
		 printf "#!/bin/sh\n" > .git/hooks/pre-commit; chmod 6755 .git/hooks/pre-commit'
	assert_regex "$stderr" '^sbx-ns: warning: deny-write: the command created the protected path \.git/hooks/pre-commit; moved it to \.git/hooks/pre-commit\.sbx-denied-[0-9a-f]{16} and cleared its execute bits$'
	assert_file_not_exist "$ws/.git/hooks/pre-commit"
	local to=${stderr##* moved it to }
	to=${to% and cleared*}
	assert_equal "$(stat -c %a "$ws/$to")" 644
}

@test "an end check that cannot make a hook inert exits 102 with a status event and a line naming the path" {
	local ws st="$NS_DIR/st.$BATS_TEST_NUMBER" busy="Resource busy"
	# EBUSY's text is musl's in the static build, glibc's in the dynamic one
	[ "$SBX_STATIC" = 1 ] || busy="Device or resource busy"
	ws=$(ns_ws)
	# The host pins the hook with a bind mount while the run goes on: the
	# rename at the end fails (EBUSY), the hook stays at its name.
	run -102 --separate-stderr unshare -m --propagation private sh -c '
		ws=$1; shift
		"$@" --workspace "$ws" --status-fd 5 -- sh -c "mkdir -p .git/hooks; printf \"#!/bin/sh\n\" > .git/hooks/pre-commit; chmod 755 .git/hooks/pre-commit; touch made; until [ -e go ]; do sleep 0.02; done" 5>"'"$st"'" &
		p=$!
		until [ -e "$ws/made" ]; do sleep 0.02; done
		mount --bind "$ws/.git/hooks/pre-commit" "$ws/.git/hooks/pre-commit"
		touch "$ws/go"
		wait $p; rc=$?
		"$@" --workspace "$ws" -- true 2>"'"$st.again"'"; echo $? >>"'"$st.again"'"
		exit $rc' sh "$ws" sbx-ns --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID"
	assert_equal "$stderr" "sbx-ns: warning: deny-write: unable to make the protected path .git/hooks/pre-commit inert (rename: $busy); it is live under its real name: remove it before git runs in $ws"
	run -0 grep '"event":"deny-write"' "$st"
	assert_output '{"tool":"sbx-ns","event":"deny-write","path":".git/hooks/pre-commit","action":"failed","reason":"rename: '"$busy"'","exec_cleared":true,"earlier_run":false}'
	run -0 grep -c '"event":"exit","code":102' "$st"
	# While the hook stays pinned, the next run refuses before its command.
	assert_equal "$(cat "$st.again")" "sbx-ns: warning: deny-write: unable to make the protected path .git/hooks/pre-commit inert (rename: $busy); it is live under its real name: remove it before git runs in $ws
sbx-ns: fatal: deny-write: the end check of an earlier run on this workspace could not complete (said above); the command does not run until it can
102"
	# The record was kept: the next run (the pin gone) tries again first.
	run -0 --separate-stderr ns_root --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: warning: deny-write: an earlier run's command (killed) created the protected path .git/hooks/pre-commit; moved it to .git/hooks/pre-commit.sbx-denied"
	assert_file_not_exist "$ws/.git/hooks/pre-commit"
}

@test "the directory a protected config names in core.hooksPath is protected like hooks/; a missing one the command makes is moved aside" {
	local ws a="$NS_DIR/bin/ns-attempt"
	ws=$(git_ws)
	mkdir "$ws/.husky"
	printf '#!/bin/sh\n' >"$ws/.husky/pre-commit"
	chmod 755 "$ws/.husky/pre-commit"
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$ws"
	host_git "$ws" config core.hooksPath .husky
	run -0 --separate-stderr ns_user --workspace "$ws" --ro "$NS_DIR/bin" -- sh -c \
		"$a append .husky/pre-commit; $a write .husky/post-checkout; $a rename .husky h"
	assert_output "append: EROFS
write: EROFS
rename: EBUSY"
	assert_equal "$stderr" "sbx-ns: warning: deny-write: refused a rename of the protected path .husky (to h); the command sees EBUSY"
	host_git "$ws" config core.hooksPath "$ws/hooks2"
	run -0 --separate-stderr ns_user --workspace "$ws" -- sh -c \
		"mkdir hooks2 && printf '#!/bin/sh\ntouch $MARK\n' > hooks2/pre-commit && chmod 755 hooks2/pre-commit"
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path hooks2/pre-commit; moved it to hooks2/pre-commit.sbx-denied and cleared its execute bits"
	host_clean "$ws"
}

@test "in a tree older than the timestamp grain, what the command plants deep in old directories is found (the end walk reads again only what changed)" {
	local ws t0
	ws=$(git_ws)
	as_user mkdir -p "$ws/p/b/c" "$ws/x/y/z" "$ws/m/n"
	host_git "$ws/m/n" init -q
	t0=$(date +%s%N)
	# Directories whose ctime is older than the start by more than 2 s
	# are not read again unless they changed: wait until they are.
	wait_for "[ \$(date +%s%N) -gt $((t0 + 2500000000)) ]"
	run -0 --separate-stderr ns_user --workspace "$ws" -- sh -c \
		"$(evil "$ws") git init -q p/b/c/r && $(evil_cfg "$ws") >> p/b/c/r/.git/config &&
		 mkdir x/y/z/t && mv p/b/c/r x/y/z/t/r && echo ../../.git > m/n/.git/commondir &&
		 mkdir -p x/y/z/t/s && echo 'ref: refs/heads/main' > x/y/z/t/s/HEAD && mkdir x/y/z/t/s/objects x/y/z/t/s/refs && cp .evilfsm x/y/z/t/s/config"
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path m/n/.git/commondir; moved it to m/n/.git/commondir.sbx-denied
sbx-ns: warning: deny-write: the command created the protected path x/y/z/t/r/.git/config; moved it to x/y/z/t/r/.git/config.sbx-denied
sbx-ns: warning: deny-write: the command created the protected path x/y/z/t/s/config; moved it to x/y/z/t/s/config.sbx-denied and cleared its execute bits"
	host_clean "$ws" "$ws/x/y/z/t/r" "$ws/m/n"
}

@test "the next run's start reads again only what changed: an old nested repository stays protected, a new one is found" {
	local ws t0 a="$NS_DIR/bin/ns-attempt"
	ws=$(git_ws)
	as_user mkdir -p "$ws/v/w"
	host_git "$ws/v/w" init -q lib
	t0=$(date +%s%N)
	wait_for "[ \$(date +%s%N) -gt $((t0 + 2500000000)) ]"
	run -0 --separate-stderr ns_user --workspace "$ws" -- true
	host_git "$ws/v" init -q new
	run -0 --separate-stderr ns_user --workspace "$ws" --ro "$NS_DIR/bin" -- sh -c \
		"$a append v/w/lib/.git/config; $a write v/w/lib/.git/hooks/pre-commit; $a append v/new/.git/config"
	assert_output "append: EROFS
write: EROFS
append: EROFS"
	assert_equal "$stderr" ""
}

@test "a tree deeper than 128 directories: refused at the start; one the command makes is moved aside whole at the bound" {
	local ws deep
	ws=$(ns_ws)
	deep=$(printf 'd/%.0s' $(seq 130))
	run -0 --separate-stderr ns_user --workspace "$ws" -- sh -c "mkdir -p ${deep}r/.git/hooks && echo x > ${deep}r/.git/config"
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path $(printf 'd/%.0s' $(seq 128))d; moved it to $(printf 'd/%.0s' $(seq 128))d.sbx-denied"
	ws=$(ns_ws)
	mkdir -p "$ws/$deep"
	run -102 --separate-stderr ns_user --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to check below $(printf 'd/%.0s' $(seq 128))d in the workspace for git directories: deeper than 128 directories"
}

@test "a nested repository the command made unreadable is still looked into; its modes are put back" {
	local ws
	ws=$(git_ws)
	run -0 --separate-stderr ns_user --workspace "$ws" -- sh -c \
		'git init -q v/r && printf "[core]\n\tfsmonitor = x\n" >> v/r/.git/config && chmod 000 v/r/.git && chmod 100 v/r'
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path v/r/.git/config; moved it to v/r/.git/config.sbx-denied"
	assert_equal "$(stat -c %a "$ws/v/r" "$ws/v/r/.git")" "100
0"
}

@test "names with control characters in a nested repository's path are escaped in both reports" {
	local ws
	ws=$(git_ws)
	run -0 --separate-stderr ns_fd5 ns_user --status-fd 5 --workspace "$ws" -- sh -c \
		'd="$(printf "v\033]0;x\007")"; mkdir -p "$d/.git" && printf "[core]\n\tfsmonitor = x\n" > "$d/.git/config"'
	run -0 grep '"event":"deny-write"' <<<"$output"
	assert_output '{"tool":"sbx-ns","event":"deny-write","path":"v\u001b]0;x\u0007/.git/config","action":"moved aside","moved_to":"v\u001b]0;x\u0007/.git/config.sbx-denied","exec_cleared":false,"earlier_run":false}'
	assert_equal "$stderr" 'sbx-ns: warning: deny-write: the command created the protected path v\x1b]0;x\x07/.git/config; moved it to v\x1b]0;x\x07/.git/config.sbx-denied'
}

@test "an include whose path holds a symlink is refused at the start; one the command makes is moved aside" {
	local ws
	ws=$(git_ws)
	printf '[include]\n\tpath = ../conf/x\n' >>"$ws/.git/config"
	run -0 --separate-stderr ns_user --workspace "$ws" -- sh -c 'mkdir real && echo "[core]" > real/x && ln -s real conf'
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path conf; moved it to conf.sbx-denied"
	as_user ln -s real "$ws/conf"
	run -102 --separate-stderr ns_user --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to protect conf/x in the workspace (named by .git/config): a symlink on its path"
}

@test "a program a protected config names by a path in the workspace is protected; a missing one the command makes is moved aside" {
	local ws a="$NS_DIR/bin/ns-attempt"
	ws=$(git_ws)
	mkdir "$ws/tools"
	printf '#!/bin/sh\n' >"$ws/tools/fsm.sh"
	chmod 755 "$ws/tools/fsm.sh"
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$ws/tools"
	host_git "$ws" config core.fsmonitor tools/fsm.sh
	host_git "$ws" config filter.x.clean "sh scripts/clean.sh --opt=a/b"
	host_git "$ws" config alias.t '!./run/t.sh'
	host_git "$ws" config remote.origin.fetch '+refs/heads/*:refs/remotes/origin/*'
	run -0 --separate-stderr ns_user --workspace "$ws" --ro "$NS_DIR/bin" -- sh -c \
		"$a append tools/fsm.sh; mkdir scripts run && printf '#!/bin/sh\ntouch $MARK\n' > scripts/clean.sh && cp scripts/clean.sh run/t.sh && chmod 755 run/t.sh"
	assert_output "append: EROFS"
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path run/t.sh; moved it to run/t.sh.sbx-denied and cleared its execute bits
sbx-ns: warning: deny-write: the command created the protected path scripts/clean.sh; moved it to scripts/clean.sh.sbx-denied"
	host_git "$ws" t >/dev/null 2>&1 || true
	host_clean "$ws"
}

@test "a git directory whose HEAD the command removed is still checked at the end" {
	local ws
	ws=$(git_ws)
	host_git "$ws" init -q --bare .git/modules/a
	run -0 --separate-stderr ns_user --workspace "$ws" -- sh -c 'rm .git/modules/a/HEAD && echo ../b > .git/modules/a/commondir'
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path .git/modules/a/commondir; moved it to .git/modules/a/commondir.sbx-denied"
}

@test "what the caller's global config names by a relative path is taken from every repository: hooks it names are moved aside" {
	local ws h="$NS_DIR/home.$BATS_TEST_NUMBER"
	ws=$(git_ws)
	mkdir "$h"
	printf '[core]\n\thooksPath = .githooks\n' >"$h/.gitconfig"
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$h"
	run -0 --separate-stderr as_user env HOME="$h" sbx-ns --workspace "$ws" -- sh -c \
		"mkdir .githooks && printf '#!/bin/sh\ntouch $MARK\n' > .githooks/pre-commit && chmod 755 .githooks/pre-commit"
	assert_equal "$stderr" "sbx-ns: warning: deny-write: the command created the protected path .githooks/pre-commit; moved it to .githooks/pre-commit.sbx-denied and cleared its execute bits"
	as_user env HOME="$h" git -c user.name=t -c user.email=t@example.org -C "$ws" commit -q --allow-empty -m probe
	assert_file_not_exist "$MARK"
}

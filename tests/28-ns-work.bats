#!/usr/bin/env bats
# sbx-ns: real developer work with the defaults, as root dropping to the
# test user and as the test user: GNU hello from Debian's source package
# (pinned in tests/work/manifest, fetched and verified by deps/build.sh
# --fetch, cached under build/work-src) through ./configure && make &&
# make check; git init, add, commit, a branch and a merge; a venv running
# Debian's pytest. Nothing of sbx's ends up in the workspace or a commit.

bats_require_minimum_version 1.5.0
load helpers
load ns

setup_file() {
	ns_setup_file
	ns_work_src
	# GNU hello as the test user builds in the background, beside the test
	# as root (each build is one core's work); it holds a lock until its
	# results are written, and its test waits for that lock.
	local lock
	exec {lock}>"$NS_DIR/hello.ns_user.lock"
	flock "$lock"
	hello_build ns_user </dev/null >/dev/null 2>&1 3>&- &
	exec {lock}>&-
}

teardown_file() {
	flock -w 600 "$NS_DIR/hello.ns_user.lock" true || :
	ns_teardown_file
}

# Every entry of the workspace, for "nothing of sbx's" checks.
entries() {
	(cd "$1" && find . -path ./.git -prune -o -print | LC_ALL=C sort)
}

# hello_build MODE: GNU hello in a fresh workspace through ./configure, make
# and make check under sbx-ns MODE; its workspace, output, stderr and exit
# status go to $NS_DIR/hello.MODE.{ws,out,err,rc}.
hello_build() {
	local mode=$1 ws rc=0
	ws=$(ns_ws)
	ns_hello "$ws"
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$ws"
	echo "$ws" >"$NS_DIR/hello.$mode.ws"
	"$mode" --workspace "$ws/hello-2.10" -- sh -c \
		'./configure >/dev/null && make >/dev/null 2>&1 && make check >check.log 2>&1 && ./hello' \
		>"$NS_DIR/hello.$mode.out" 2>"$NS_DIR/hello.$mode.err" || rc=$?
	echo "$rc" >"$NS_DIR/hello.$mode.rc"
}

hello_check() {
	local mode=$1 ws
	ws=$(cat "$NS_DIR/hello.$mode.ws")
	assert_equal "$(cat "$NS_DIR/hello.$mode.rc")" 0
	assert_equal "$(cat "$NS_DIR/hello.$mode.out")" "Hello, world!"
	assert_equal "$(cat "$NS_DIR/hello.$mode.err")" ""
	# greeting-2 skips itself without a translated locale, outside too.
	run -0 grep -E '^# (PASS|FAIL|ERROR):' "$ws/hello-2.10/check.log"
	assert_output "# PASS:  4
# FAIL:  0
# ERROR: 0"
	run -0 find "$ws" -name '*sbx*'
	assert_output ""
}

@test "GNU hello from Debian's source package: ./configure && make && make check, as root dropping to a uid" {
	hello_build ns_root
	hello_check ns_root
}

@test "GNU hello from Debian's source package: ./configure && make && make check, as an unprivileged user" {
	# Started by setup_file; done once its lock is free.
	flock -w 600 "$NS_DIR/hello.ns_user.lock" true
	hello_check ns_user
}

git_in() {
	local mode=$1 ws
	ws=$(ns_ws)
	echo 'print("hi")' > "$ws/main.py"
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$ws"
	run -0 --separate-stderr "$mode" --workspace "$ws" -- sh -c '
		export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.org GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.org
		git init -q -b main . && git add -A && git commit -qm one &&
		git checkout -qb topic && echo "x = 1" > lib.py && git add -A && git commit -qm two &&
		git checkout -q main && echo "# main" >> main.py && git commit -qam three &&
		git merge -q --no-edit topic && git log --format=%s && git ls-files && git status --porcelain'
	assert_output "Merge branch 'topic'
three
two
one
lib.py
main.py"
	# git init's own config sets nothing that runs a program: it stays.
	assert_equal "$stderr" ""
	assert_file_exist "$ws/.git/config"
	# The host's git sees the same history; the hooks are git's samples.
	run -0 as_user git -C "$ws" log --format=%s
	assert_output "Merge branch 'topic'
three
two
one"
	run -0 find "$ws/.git/hooks" -type f ! -name '*.sample'
	assert_output ""
	run -0 find "$ws" -name '*sbx*'
	assert_output ""
}

@test "git init, add -A, commit, a branch and a merge, as root dropping to a uid" {
	git_in ns_root
}

@test "git init, add -A, commit, a branch and a merge, as an unprivileged user" {
	git_in ns_user
}

venv_in() {
	local mode=$1 ws
	ws=$(ns_ws)
	cat > "$ws/test_calc.py" <<'EOF'
def add(a, b):
    return a + b

def test_add():
    assert add(2, 3) == 5
EOF
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$ws"
	run -0 --separate-stderr "$mode" --workspace "$ws" -- sh -c \
		'python3 -m venv --system-site-packages --without-pip venv && venv/bin/python -m pytest -q -p no:cacheprovider test_calc.py'
	assert_line -p "1 passed"
	assert_equal "$stderr" ""
	run -0 find "$ws" -name '*sbx*'
	assert_output ""
}

@test "python3 -m venv and Debian's pytest in it, as root dropping to a uid" {
	venv_in ns_root
}

@test "python3 -m venv and Debian's pytest in it, as an unprivileged user" {
	venv_in ns_user
}

#!/usr/bin/env bats
# --version names the release and the commit a binary was built from:
# "TOOL VERSION (commit HASH, clean|dirty)", or "(commit unknown)". `make -s
# version` says what a build of a tree will name: its git HEAD and state,
# else a release tarball's COMMIT file, else unknown; a COMMIT file that is
# not one 'commit HASH' and one 'date SECONDS' line stops the build.

load helpers
load tree

TOOLS=$(cd "$SBX_ROOT/cmd" && ls)

# One clean copy of the tree for the file (tests/tree.bash), $TREE/t: the
# tests that change it put it back, and the release trees are made from its
# HEAD, which no test moves.
setup_file() {
	TREE=$(sbx_scratch)
	export TREE
	tree_clone "$TREE/t"
}

teardown_file() {
	rm -rf "$TREE"
}

setup() {
	scratch=$(sbx_scratch)
}

teardown() {
	rm -rf "$scratch"
}

release() { sed -n 's/^#define SBX_VERSION "\(.*\)"$/\1/p' "$SBX_ROOT/lib/opts.h"; }

# What a build of the tree under test names: HEAD and whether git sees a
# change, or a release tarball's COMMIT file.
tree_commit() {
	if [ -e "$SBX_ROOT/.git" ]; then
		if [ -z "$(sgit status --porcelain)" ]; then
			echo "$(sgit rev-parse HEAD), clean"
		else
			echo "$(sgit rev-parse HEAD), dirty"
		fi
	else
		echo "$(sed -n 's/^commit //p' "$SBX_ROOT/COMMIT"), clean"
	fi
}

# The file's clean copy of the tree in copy; its HEAD and HEAD's time in
# head and epoch.
clone() {
	copy=$TREE/t
	head=$(git -C "$copy" rev-parse HEAD)
	epoch=$(git -C "$copy" log -1 --format=%ct)
}

@test "every tool's --version names the release and the commit of the tree it was built from" {
	local t want
	want="$(release) (commit $(tree_commit))"
	for t in $TOOLS; do
		run -0 --separate-stderr "$SBX_BIN/$t" --version
		assert_equal "$output" "$t $want"
		assert_equal "$stderr" ""
	done
}

@test "the binaries hold no path of the tree; each man page documents the --version line" {
	local t root
	root=$(realpath "$SBX_ROOT")
	for t in $TOOLS; do
		run -1 grep -c -F -e "$root" -e "$SBX_ROOT" "$SBX_BIN/$t"
		assert_output 0
		run -0 grep -c -F '.BI "'"$t"' " VERSION " (commit " HASH ", " STATE )' "$SBX_ROOT/man/$t.1"
		assert_output 1
	done
}

@test "make -s version: clean in a clone, dirty with a changed or an untracked file, clean again" {
	clone
	run -0 --separate-stderr make -s -C "$copy" version
	assert_output "VERSION=$(release)
COMMIT=$head, clean
SOURCE_DATE_EPOCH=$epoch"
	assert_equal "$stderr" ""
	echo x >"$copy/lib/new.c"
	run -0 make -s -C "$copy" version
	assert_line "COMMIT=$head, dirty"
	rm "$copy/lib/new.c"
	echo >>"$copy/lib/opts.h"
	run -0 make -s -C "$copy" version
	assert_line "COMMIT=$head, dirty"
	git -C "$copy" checkout -q lib/opts.h
	# What .gitignore covers (the build's own output) changes nothing.
	mkdir -p "$copy/build" "$copy/bin"
	echo x >"$copy/build/x"
	echo x >"$copy/bin/x"
	run -0 make -s -C "$copy" version
	assert_line "COMMIT=$head, clean"
}

@test "make -s version: SOURCE_DATE_EPOCH is the commit's time unless the caller sets one" {
	clone
	run -0 env SOURCE_DATE_EPOCH=1700000000 make -s -C "$copy" version
	assert_line "SOURCE_DATE_EPOCH=1700000000"
	run -0 make -s -C "$copy" version
	assert_line "SOURCE_DATE_EPOCH=$epoch"
}

@test "make -s version: a tree without git names the commit of its COMMIT file, else unknown" {
	local r=$scratch/r
	clone
	mkdir "$r"
	git -C "$copy" archive HEAD | tar -x -C "$r"
	printf 'commit %s\ndate %s\n' "$head" 1700000001 >"$r/COMMIT"
	run -0 --separate-stderr make -s -C "$r" version
	assert_output "VERSION=$(release)
COMMIT=$head, clean
SOURCE_DATE_EPOCH=1700000001"
	rm "$r/COMMIT"
	run -0 make -s -C "$r" version
	assert_output "VERSION=$(release)
COMMIT=unknown
SOURCE_DATE_EPOCH="
}

# $stderr is make's one line for an $(error MESSAGE) of the Makefile.
make_error() {
	[[ $stderr =~ ^Makefile:[0-9]+:\ \*\*\*\ (.*)\.\ \ Stop\.$ ]] || fail "not one make error: $stderr"
	assert_equal "${BASH_REMATCH[1]}" "$1"
}

@test "make: a COMMIT file without a full hash or a date stops the build with one line" {
	local r=$scratch/r f
	clone
	mkdir "$r"
	git -C "$copy" archive HEAD | tar -x -C "$r"
	for f in "commit ${head:0:12}\ndate 1700000001\n" "date 1700000001\n" \
		"commit ${head^^}\ndate 1700000001\n" "commit $head \ndate 1700000001\n" \
		"commit $head\ncommit $head\ndate 1700000001\n"; do
		printf "$f" >"$r/COMMIT"
		run -2 --separate-stderr make -s -C "$r" version
		assert_equal "$output" ""
		make_error "sbx: version: COMMIT: not one line 'commit HASH' (40 hex digits); take the file from the release tarball"
	done
	for f in "commit $head\n" "commit $head\ndate -1\n" "commit $head\ndate 17e8\n" "commit $head\ndate \n" \
		"commit $head\ndate 1\ndate 2\n"; do
		printf "$f" >"$r/COMMIT"
		run -2 --separate-stderr make -s -C "$r" version
		make_error "sbx: version: COMMIT: not one line 'date SECONDS'; take the file from the release tarball"
	done
}

#!/usr/bin/env bats
# The build itself: one binary per tool, static and stripped (or dynamic
# PIE with STATIC=0), and the usage contract every tool shares.

load helpers

tools() { (cd "$SBX_ROOT/cmd" && ls -d */ | tr -d /); }

@test "every tool under cmd/ has been built" {
	local t n=0
	for t in $(tools); do
		assert_file_executable "$SBX_BIN/$t"
		n=$((n + 1))
	done
	[ "$n" -ge 1 ]
}

@test "each binary is static and stripped in the default build" {
	local t size
	[ "${SBX_STATIC:-1}" = 1 ] || return 0
	for t in $(tools); do
		run -0 readelf -d "$SBX_BIN/$t"
		assert_output --partial "There is no dynamic section in this file."
		run -0 readelf -lW "$SBX_BIN/$t"
		refute_output --partial "INTERP"
		run -0 readelf -SW "$SBX_BIN/$t"
		refute_output --partial ".symtab"
		size=$(stat -c %s "$SBX_BIN/$t")
		echo "# $t: static, stripped, $size bytes" >&3
	done
}

@test "each binary links dynamically as a PIE with STATIC=0" {
	local t
	[ "${SBX_STATIC:-1}" = 0 ] || return 0
	for t in $(tools); do
		run -0 readelf -hW "$SBX_BIN/$t"
		assert_output --regexp "Type: +DYN"
		run -0 readelf -lW "$SBX_BIN/$t"
		assert_output --partial "INTERP"
	done
}

@test "each tool prints its usage with --help and exits 0" {
	local t
	for t in $(tools); do
		run -0 --separate-stderr "$SBX_BIN/$t" --help
		assert_output --regexp "^usage: $t "
		assert_equal "$stderr" ""
	done
}

@test "each tool refuses an unknown option with exit 100" {
	local t
	for t in $(tools); do
		run -100 --separate-stderr "$SBX_BIN/$t" --no-such-option
		assert_equal "$stderr" "$t: usage: unknown option --no-such-option"
	done
}

@test "each tool's --help starts with its man page's synopsis, and lists --version" {
	local t syn help
	for t in $(tools); do
		assert_file_exist "$SBX_ROOT/man/$t.1"
		run -0 "$SBX_BIN/$t" --help
		help=$(sed -n "1s/^usage: //p; 2,/^[^ ]/s/^       \($t .*\)/\1/p" <<<"$output")
		syn=$(sed -n '/^\.SH SYNOPSIS/,/^\.SH/p' "$SBX_ROOT/man/$t.1" | grep -v '^\.' | sed 's/^ *//; s/\\-/-/g')
		assert_equal "$help" "$syn"
		assert_line --regexp '^  --version  +print the version and exit'
	done
}

@test "the man pages render without a groff warning, also at 80 columns" {
	local f
	run -0 --separate-stderr groff -man -ww -z "$SBX_ROOT"/man/*.1
	assert_equal "$stderr" ""
	for f in "$SBX_ROOT"/man/*.1; do
		run -0 --separate-stderr env MANWIDTH=80 man --warnings -l "$f"
		assert_equal "$stderr" ""
	done
}

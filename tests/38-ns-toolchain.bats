#!/usr/bin/env bats
# sbx-ns: a bare command name that the caller's PATH resolves to another file
# than the sandbox's command path does (a toolchain manager's shims, a
# user's own bin directory), or that only the caller's PATH finds, is said
# in one line naming the options that bring the caller's one in; those
# options work as said.

bats_require_minimum_version 1.5.0
load helpers
load ns

setup_file() { ns_setup_file; }
teardown_file() { ns_teardown_file; }

# A toolchain laid out as pyenv's or nvm's: ROOT/.tool/bin/NAME, a script
# that says which one ran, beside a library directory. Prints the bin dir.
tool() {
	local root
	root=$(mktemp -d "$NS_DIR/home.XXXXXX")
	mkdir -p "$root/.tool/bin" "$root/.tool/lib"
	printf '#!/bin/sh\necho "tool %s"\n' "$1" >"$root/.tool/bin/$1"
	chmod -R a+rX "$root"
	chmod 0755 "$root/.tool/bin/$1"
	realpath "$root/.tool/bin"
}

# with_path PATH CMD...: CMD with the caller's PATH set to PATH.
with_path() {
	PATH=$1 "${@:2}"
}

@test "a name the caller's PATH finds elsewhere warns, names --ro and --command-path, and those run the caller's one" {
	local ws bin
	ws=$(ns_ws)
	bin=$(tool true)
	run -0 --separate-stderr with_path "$bin:$SBX_BIN:/usr/bin:/bin" ns_root --workspace "$ws" -- true
	assert_output ""
	assert_equal "$stderr" "sbx-ns: warning: true is /usr/bin/true in the sandbox but $bin/true on the caller's PATH (for that one: --ro ${bin%/bin} --command-path $bin:/usr/local/bin:/usr/bin:/bin)"
	run -0 --separate-stderr with_path "$bin:$SBX_BIN:/usr/bin:/bin" ns_root --workspace "$ws" \
		--ro "${bin%/bin}" --command-path "$bin:/usr/local/bin:/usr/bin:/bin" -- true
	assert_output "tool true"
	assert_equal "$stderr" ""
}

@test "the warning is a status line too, with the option and the caller's file" {
	local ws bin msg
	ws=$(ns_ws)
	bin=$(tool true)
	msg="true is /usr/bin/true in the sandbox but $bin/true on the caller's PATH (for that one: --ro ${bin%/bin} --command-path $bin:/usr/local/bin:/usr/bin:/bin)"
	run -0 --separate-stderr with_path "$bin:$SBX_BIN:/usr/bin:/bin" ns_fd5 ns_root --status-fd 5 --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: warning: $msg"
	assert_line -n 0 "{\"tool\":\"sbx-ns\",\"event\":\"warning\"$SBX_VER,\"option\":\"--command-path\",\"path\":\"$bin/true\",\"reason\":\"$msg\"}"
}

@test "a name only the caller's PATH finds is exit 127 naming the options, which bring it in, as root and unprivileged" {
	local ws bin
	ws=$(ns_ws)
	bin=$(tool sbxtool)
	run -127 --separate-stderr with_path "$bin:$SBX_BIN:/usr/bin:/bin" ns_root --workspace "$ws" -- sbxtool
	assert_output ""
	assert_equal "$stderr" "sbx-ns: fatal: unable to find sbxtool: $bin/sbxtool is on the caller's PATH but not in the sandbox (bring it in with --ro ${bin%/bin} --command-path $bin:/usr/local/bin:/usr/bin:/bin)"
	run -0 --separate-stderr with_path "$bin:$SBX_BIN:/usr/bin:/bin" ns_root --workspace "$ws" \
		--ro "${bin%/bin}" --command-path "$bin:/usr/local/bin:/usr/bin:/bin" -- sbxtool
	assert_output "tool sbxtool"
	assert_equal "$stderr" ""
	run -127 --separate-stderr as_user env PATH="$bin:$SBX_BIN:/usr/bin:/bin" sbx-ns --workspace "$ws" -- sbxtool
	assert_equal "$stderr" "sbx-ns: fatal: unable to find sbxtool: $bin/sbxtool is on the caller's PATH but not in the sandbox (bring it in with --ro ${bin%/bin} --command-path $bin:/usr/local/bin:/usr/bin:/bin)"
	run -0 --separate-stderr as_user env PATH="$bin:$SBX_BIN:/usr/bin:/bin" sbx-ns --workspace "$ws" \
		--ro "${bin%/bin}" --command-path "$bin:/usr/local/bin:/usr/bin:/bin" -- sbxtool
	assert_output "tool sbxtool"
}

@test "a directory the sandbox shows but searches later gets only the --command-path that puts it first" {
	local ws bin
	ws=$(ns_ws)
	bin=$(tool true)
	run -0 --separate-stderr with_path "$bin:$SBX_BIN:/usr/bin:/bin" ns_root --workspace "$ws" \
		--ro "${bin%/bin}" --command-path "/usr/bin:$bin" -- true
	assert_equal "$stderr" "sbx-ns: warning: true is /usr/bin/true in the sandbox but $bin/true on the caller's PATH (for that one: --command-path $bin:/usr/bin)"
	run -0 --separate-stderr with_path "$bin:$SBX_BIN:/usr/bin:/bin" ns_root --workspace "$ws" \
		--ro "${bin%/bin}" --command-path "$bin:/usr/bin" -- true
	assert_output "tool true"
	assert_equal "$stderr" ""
}

@test "the same file by another path, an absolute path, or a name the caller's PATH lacks: no warning" {
	local ws links
	ws=$(ns_ws)
	links=$(mktemp -d "$NS_DIR/links.XXXXXX")
	chmod 0755 "$links"
	ln -s /usr/bin/true "$links/true"
	run -0 --separate-stderr with_path "$links:$SBX_BIN:/usr/bin:/bin" ns_root --workspace "$ws" -- true
	assert_equal "$stderr" ""
	bin=$(tool true)
	run -0 --separate-stderr with_path "$bin:$SBX_BIN:/usr/bin:/bin" ns_root --workspace "$ws" -- /usr/bin/true
	assert_equal "$stderr" ""
	run -0 --separate-stderr with_path "$SBX_BIN" ns_root --workspace "$ws" -- true
	assert_equal "$stderr" ""
}

@test "a file on the caller's PATH that is not executable, or not a regular file, is not offered" {
	local ws bin
	ws=$(ns_ws)
	bin=$(tool sbxtool)
	chmod 0644 "$bin/sbxtool"
	mkdir "$bin/sbxdir"
	run -127 --separate-stderr with_path "$bin:$SBX_BIN:/usr/bin:/bin" ns_root --workspace "$ws" -- sbxtool
	assert_equal "$stderr" "sbx-ns: fatal: unable to find sbxtool"
	run -127 --separate-stderr with_path "$bin:$SBX_BIN:/usr/bin:/bin" ns_root --workspace "$ws" -- sbxdir
	assert_equal "$stderr" "sbx-ns: fatal: unable to find sbxdir"
}

@test "control characters in the name reach the message escaped, and the dry-run plan carries the hint" {
	local ws bin name
	ws=$(ns_ws)
	name=$'sbx\033tool'
	bin=$(tool "$name")
	run -127 --separate-stderr with_path "$bin:$SBX_BIN:/usr/bin:/bin" ns_root --workspace "$ws" -- "$name"
	assert_equal "$stderr" "sbx-ns: fatal: unable to find sbx\\x1btool: $bin/sbx\\x1btool is on the caller's PATH but not in the sandbox (bring it in with --ro ${bin%/bin} --command-path $bin:/usr/local/bin:/usr/bin:/bin)"
	bin=$(tool sbxtool)
	run -0 --separate-stderr with_path "$bin:$SBX_BIN:/usr/bin:/bin" ns_root --workspace "$ws" --dry-run -- sbxtool
	assert_output --partial "\"hint\":\"$bin/sbxtool is on the caller's PATH but not in the sandbox (bring it in with --ro ${bin%/bin} --command-path $bin:/usr/local/bin:/usr/bin:/bin)\""
}

@test "a toolchain outside a hidden directory is offered its own bin directory" {
	local ws d
	ws=$(ns_ws)
	d=$(mktemp -d "$NS_DIR/opt.XXXXXX")
	mkdir "$d/bin"
	printf '#!/bin/sh\necho opt\n' >"$d/bin/sbxopt"
	chmod -R a+rX "$d"
	chmod 0755 "$d/bin/sbxopt"
	d=$(realpath "$d")
	run -127 --separate-stderr with_path "$d/bin:$SBX_BIN:/usr/bin:/bin" ns_root --workspace "$ws" -- sbxopt
	assert_equal "$stderr" "sbx-ns: fatal: unable to find sbxopt: $d/bin/sbxopt is on the caller's PATH but not in the sandbox (bring it in with --ro $d/bin --command-path $d/bin:/usr/local/bin:/usr/bin:/bin)"
}

@test "sbx-ns(1)'s apt entry brings apt's package lists in: apt-cache finds a package it cannot without" {
	local ws row
	ws=$(ns_ws)
	row=$(sed -n '/^apt (apt\\-get download, apt\\-cache)$/{n;p}' "$SBX_ROOT/man/sbx-ns.1")
	assert_equal "$row" ".B \\-\\-ro /var/lib/apt/lists"
	run -100 --separate-stderr ns_root --workspace "$ws" -- apt-cache show hello
	assert_equal "$stderr" "E: No packages found"
	run -0 --separate-stderr ns_root --workspace "$ws" --ro /var/lib/apt/lists -- apt-cache show hello
	assert_line -n 0 "Package: hello"
}

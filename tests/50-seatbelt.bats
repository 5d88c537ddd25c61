#!/usr/bin/env bats
# sbx-seatbelt on Linux: the option grammar, the profile generator (golden
# files in tests/seatbelt/, regenerate with the commands in each test and
# review the diff), and the refusal to run anything where Seatbelt does not
# exist. Nothing here runs sandbox-exec: that needs real macOS.

load helpers
bats_require_minimum_version 1.5.0

setup() {
	golden=$SBX_ROOT/tests/seatbelt
	out=$BATS_TEST_TMPDIR/out
}

@test "--help prints the synopsis of the man page" {
	run -0 --separate-stderr sbx-seatbelt --help
	assert_equal "$stderr" ""
	assert_equal "$(head -2 <<<"$output")" "usage: $(sed -n '/^\.SH SYNOPSIS/,/^\.fi/p' "$SBX_ROOT/man/sbx-seatbelt.1" | sed '1,2d;$d;4,$s/^/       /')"
	assert_line "  --interval SECONDS     the sampling interval; default: 0.1"
}

@test "a missing workspace, program or option value is a usage error" {
	run -100 --separate-stderr sbx-seatbelt true
	assert_equal "$stderr" "sbx-seatbelt: usage: missing --workspace"
	run -100 --separate-stderr sbx-seatbelt --workspace /w
	assert_equal "$stderr" "sbx-seatbelt: usage: missing program"
	run -100 --separate-stderr sbx-seatbelt --workspace
	assert_equal "$stderr" "sbx-seatbelt: usage: --workspace needs a value"
	run -100 --separate-stderr sbx-seatbelt --workspace /w --bogus true
	assert_equal "$stderr" "sbx-seatbelt: usage: unknown option --bogus"
}

@test "every option that may appear once refuses a repeat" {
	for o in "--workspace /w" "--net none" "--cpu 5" "--memory 1M" "--disk 1M" "--interval 1" \
		"--require-hard-limits" "--print-profile" "--status-fd 4"; do
		set -- $o
		run -100 --separate-stderr sbx-seatbelt --workspace /w $o $o true 4>/dev/null
		assert_equal "$stderr" "sbx-seatbelt: usage: $1 given twice"
	done
}

@test "workspace paths that cannot be named in a profile are refused" {
	run -100 --separate-stderr sbx-seatbelt --workspace= true
	assert_equal "$stderr" "sbx-seatbelt: usage: --workspace: invalid path '': empty"
	run -100 --separate-stderr sbx-seatbelt --workspace ws true
	assert_equal "$stderr" "sbx-seatbelt: usage: --workspace: invalid path 'ws': not absolute"
	run -100 --separate-stderr sbx-seatbelt --workspace /a/../b true
	assert_equal "$stderr" "sbx-seatbelt: usage: --workspace: invalid path '/a/../b': '..' component"
	run -100 --separate-stderr sbx-seatbelt --workspace /a/./b true
	assert_equal "$stderr" "sbx-seatbelt: usage: --workspace: invalid path '/a/./b': '.' component"
	run -100 --separate-stderr sbx-seatbelt --workspace / true
	assert_equal "$stderr" "sbx-seatbelt: usage: --workspace: invalid path '/': the root cannot be the workspace"
	run -100 --separate-stderr sbx-seatbelt --workspace $'/a\nb' true
	assert_equal "$stderr" "sbx-seatbelt: usage: --workspace: invalid path '/a\\x0ab': contains a newline"
	run -100 --separate-stderr sbx-seatbelt --workspace $'/a\rb' true
	assert_equal "$stderr" "sbx-seatbelt: usage: --workspace: invalid path '/a\\x0db': contains a newline"
	run -100 --separate-stderr sbx-seatbelt --workspace $'/a\xff\xc3\xa9' true
	assert_equal "$stderr" "sbx-seatbelt: usage: --workspace: invalid path '/a\\xff\\xc3\\xa9': not valid UTF-8"
	run -100 --separate-stderr sbx-seatbelt --workspace $'/a\xc0\xaf' true
	assert_equal "$stderr" "sbx-seatbelt: usage: --workspace: invalid path '/a\\xc0\\xaf': not valid UTF-8"
	run -100 --separate-stderr sbx-seatbelt --workspace "/$(printf 'a%.0s' $(seq 4200))" true
	assert_equal "$stderr" "sbx-seatbelt: usage: --workspace: invalid path '/$(printf 'a%.0s' $(seq 199))...': too long"
}

@test "read-only paths that cannot be named in a profile are refused" {
	run -100 --separate-stderr sbx-seatbelt --workspace /w --ro '' true
	assert_equal "$stderr" "sbx-seatbelt: usage: --ro: invalid path '': empty"
	run -100 --separate-stderr sbx-seatbelt --workspace /w --ro lib true
	assert_equal "$stderr" "sbx-seatbelt: usage: --ro: invalid path 'lib': not absolute"
	run -100 --separate-stderr sbx-seatbelt --workspace /w --ro /ok --ro $'/x\ny' true
	assert_equal "$stderr" "sbx-seatbelt: usage: --ro: invalid path '/x\\x0ay': contains a newline"
	run -100 --separate-stderr sbx-seatbelt --workspace /w --ro $'/\xe6\x97' true
	assert_equal "$stderr" "sbx-seatbelt: usage: --ro: invalid path '/\\xe6\\x97': not valid UTF-8"
}

@test "deny-write globs outside the workspace or with dot components are refused" {
	run -100 --separate-stderr sbx-seatbelt --workspace /w --deny-write '' true
	assert_equal "$stderr" "sbx-seatbelt: usage: --deny-write: invalid glob '': empty"
	run -100 --separate-stderr sbx-seatbelt --workspace /w --deny-write /etc/passwd true
	assert_equal "$stderr" "sbx-seatbelt: usage: --deny-write: invalid glob '/etc/passwd': outside the workspace"
	run -100 --separate-stderr sbx-seatbelt --workspace /w --deny-write /wx true
	assert_equal "$stderr" "sbx-seatbelt: usage: --deny-write: invalid glob '/wx': outside the workspace"
	run -100 --separate-stderr sbx-seatbelt --workspace /w --deny-write ../x true
	assert_equal "$stderr" "sbx-seatbelt: usage: --deny-write: invalid glob '../x': '..' component"
	run -100 --separate-stderr sbx-seatbelt --workspace /w --deny-write 'a**b' true
	assert_equal "$stderr" "sbx-seatbelt: usage: --deny-write: invalid glob 'a**b': '**' must be a whole component"
	run -100 --separate-stderr sbx-seatbelt --workspace /w --deny-write $'a\nb' true
	assert_equal "$stderr" "sbx-seatbelt: usage: --deny-write: invalid glob 'a\\x0ab': contains a newline"
}

@test "--net accepts none or one broker port and nothing else" {
	run -100 --separate-stderr sbx-seatbelt --workspace /w --net '' true
	assert_equal "$stderr" "sbx-seatbelt: usage: --net: invalid value '': expected none or broker-port=N"
	run -100 --separate-stderr sbx-seatbelt --workspace /w --net host true
	assert_equal "$stderr" "sbx-seatbelt: usage: --net: invalid value 'host': expected none or broker-port=N"
	run -100 --separate-stderr sbx-seatbelt --workspace /w --net broker-port= true
	assert_equal "$stderr" "sbx-seatbelt: usage: --net broker-port: invalid number '': empty"
	run -100 --separate-stderr sbx-seatbelt --workspace /w --net broker-port=0 true
	assert_equal "$stderr" "sbx-seatbelt: usage: --net broker-port: invalid number '0': zero not allowed"
	run -100 --separate-stderr sbx-seatbelt --workspace /w --net broker-port=-1 true
	assert_equal "$stderr" "sbx-seatbelt: usage: --net broker-port: invalid number '-1': negative"
	run -100 --separate-stderr sbx-seatbelt --workspace /w --net broker-port=65536 true
	assert_equal "$stderr" "sbx-seatbelt: usage: --net broker-port: invalid number '65536': too large"
	run -100 --separate-stderr sbx-seatbelt --workspace /w --net broker-port=80x true
	assert_equal "$stderr" "sbx-seatbelt: usage: --net broker-port: invalid number '80x': trailing garbage"
}

@test "limits refuse empty, zero, negative, infinite, overflowing and garbage values" {
	for o in --cpu --memory --disk; do
		kind=size; [ $o = --cpu ] && kind=percentage
		run -100 --separate-stderr sbx-seatbelt --workspace /w $o '' true
		assert_equal "$stderr" "sbx-seatbelt: usage: $o: invalid $kind '': empty"
		run -100 --separate-stderr sbx-seatbelt --workspace /w $o 0 true
		assert_equal "$stderr" "sbx-seatbelt: usage: $o: invalid $kind '0': zero not allowed"
		run -100 --separate-stderr sbx-seatbelt --workspace /w $o -1 true
		assert_equal "$stderr" "sbx-seatbelt: usage: $o: invalid $kind '-1': negative"
		run -100 --separate-stderr sbx-seatbelt --workspace /w $o inf true
		assert_equal "$stderr" "sbx-seatbelt: usage: $o: invalid $kind 'inf': not a number"
		run -100 --separate-stderr sbx-seatbelt --workspace /w $o 99999999999999999999 true
		assert_equal "$stderr" "sbx-seatbelt: usage: $o: invalid $kind '99999999999999999999': overflow"
		run -100 --separate-stderr sbx-seatbelt --workspace /w $o 5Q true
		assert_equal "$stderr" "sbx-seatbelt: usage: $o: invalid $kind '5Q': trailing garbage"
	done
	run -100 --separate-stderr sbx-seatbelt --workspace /w --cpu 6401 true
	assert_equal "$stderr" "sbx-seatbelt: usage: --cpu: invalid percentage '6401': too large"
	run -100 --separate-stderr sbx-seatbelt --workspace /w --memory 2000000T true
	assert_equal "$stderr" "sbx-seatbelt: usage: --memory: invalid size '2000000T': too large"
}

@test "--interval and --status-fd refuse bad values" {
	run -100 --separate-stderr sbx-seatbelt --workspace /w --interval 0 true
	assert_equal "$stderr" "sbx-seatbelt: usage: --interval: invalid duration '0': zero not allowed"
	run -100 --separate-stderr sbx-seatbelt --workspace /w --interval 0.001 true
	assert_equal "$stderr" "sbx-seatbelt: usage: --interval: invalid duration '0.001': below 0.01"
	run -100 --separate-stderr sbx-seatbelt --workspace /w --interval 11 true
	assert_equal "$stderr" "sbx-seatbelt: usage: --interval: invalid duration '11': too large"
	run -100 --separate-stderr sbx-seatbelt --workspace /w --interval -1 true
	assert_equal "$stderr" "sbx-seatbelt: usage: --interval: invalid duration '-1': negative"
	run -100 --separate-stderr sbx-seatbelt --workspace /w --status-fd 1 true
	assert_equal "$stderr" "sbx-seatbelt: usage: --status-fd: invalid fd '1': 0, 1 and 2 are stdio"
	run -100 --separate-stderr sbx-seatbelt --workspace /w --status-fd 77 true
	assert_equal "$stderr" "sbx-seatbelt: usage: --status-fd: invalid fd '77': not open; open it for the tool (in the shell: 77<FILE or 77>FILE, or a previous tool's --pass-fd 77)"
	run -100 --separate-stderr sbx-seatbelt --workspace /w --status-fd x true
	assert_equal "$stderr" "sbx-seatbelt: usage: --status-fd: invalid fd 'x': not a number"
}

@test "--print-profile runs nothing, so a program is a usage error" {
	run -100 --separate-stderr sbx-seatbelt --workspace /w --print-profile true
	assert_equal "$stderr" "sbx-seatbelt: usage: --print-profile runs nothing: no program allowed"
}

@test "--require-hard-limits is refused with 101, even for printing" {
	run -101 --separate-stderr sbx-seatbelt --workspace /w --require-hard-limits true
	assert_equal "$stderr" "sbx-seatbelt: fatal: --require-hard-limits: Seatbelt has no hard limits; its limits are sampled, not hard"
	run -101 --separate-stderr sbx-seatbelt --workspace /w --memory 1G --require-hard-limits --print-profile
	assert_equal "$stderr" "sbx-seatbelt: fatal: --require-hard-limits: Seatbelt has no hard limits; its limits are sampled, not hard"
	assert_output ""
}

@test "the minimal profile matches its golden file" {
	sbx-seatbelt --workspace /Users/dev/project --print-profile >"$out"
	run -0 diff -u "$golden/minimal.sbpl" "$out"
}

@test "the full profile (read-only paths, broker port, deny-write globs) matches its golden file" {
	sbx-seatbelt --workspace /var/folders/zz/T/ws --ro /opt/homebrew --ro /usr/local/lib \
		--net broker-port=3128 --deny-write '.git/hooks/*' --deny-write '**/.env' \
		--deny-write 'secrets/*.pem' --print-profile >"$out"
	run -0 diff -u "$golden/full.sbpl" "$out"
}

@test "quotes, backslashes, regex metacharacters, spaces and unicode match their golden file" {
	sbx-seatbelt --workspace '/Users/dév/my "quoted" ws\back (1)+[x]{2}^$|?*.' \
		--ro '/opt/a b/"c"' --ro '/Users/zoë/日本' --deny-write 'a b/"q"/x\y' \
		--deny-write '日本/*.tar.gz' --deny-write 'c++/[ab]{1,2}|(x)^$' --print-profile >"$out"
	run -0 diff -u "$golden/escaping.sbpl" "$out"
}

@test "no caller-supplied text reaches the profile body, only parameters" {
	sbx-seatbelt --workspace '/w/") (allow default) ("' --ro '/r/") (allow network*) ("' \
		--deny-write 'x") (allow file-write* (subpath "/' --print-profile >"$out"
	run -0 sed -n '/^(version 1)/,$p' "$out"
	refute_output --partial 'allow default'
	refute_output --partial 'allow network'
	refute_output --partial '"/w'
	run -0 grep -c '^;   WS=/w/") (allow default) ("$' "$out"
	assert_output 1
}

@test "/var, /tmp and /etc are canonicalised to /private as macOS resolves them" {
	run -0 --separate-stderr sbx-seatbelt --workspace //tmp//job/ --ro /etc/ssl --ro /var/db/x \
		--ro /private/tmp/y --ro /variable --deny-write /tmp/job/out --print-profile
	assert_line --index 1 ';   WS=/private/tmp/job'
	assert_line --index 2 ';   RO0=/private/etc/ssl'
	assert_line --index 3 ';   RO1=/private/var/db/x'
	assert_line --index 4 ';   RO2=/private/tmp/y'
	assert_line --index 5 ';   RO3=/variable'
	assert_line ';   DENY0=^/private/tmp/job/out(/.*)?$'
	assert_line ';   TMPDIR=/private/tmp/job/.tmp'
}

@test "networking: none has no network rule, a broker port exactly one loopback rule and never a local rule" {
	run -0 sbx-seatbelt --workspace /w --net none --print-profile
	refute_output --partial network
	run -0 sbx-seatbelt --workspace /w --net broker-port=9 --print-profile
	assert_line '(allow network-outbound (remote ip "localhost:9"))'
	run -0 grep -c network <(sbx-seatbelt --workspace /w --net broker-port=9 --print-profile)
	assert_output 1
	refute_output --partial 'local ip'
}

@test "running on Linux is refused with 106 after the workspace checks, and nothing is created" {
	ws=$(sbx_scratch)
	run -106 --separate-stderr sbx-seatbelt --workspace "$ws" --memory 1G -- true
	assert_equal "$stderr" "sbx-seatbelt: fatal: unable to run /usr/bin/sandbox-exec: Seatbelt exists only on macOS (on Linux confine with sbx-ns)"
	assert_output ""
	assert_not_exists "$ws/.tmp"
	rmdir "$ws"
}

@test "an unprivileged user gets the same refusal" {
	sbx_test_user
	ws=$(sbx_scratch)
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$ws"
	run -106 --separate-stderr as_user sbx-seatbelt --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-seatbelt: fatal: unable to run /usr/bin/sandbox-exec: Seatbelt exists only on macOS (on Linux confine with sbx-ns)"
	rmdir "$ws"
}

@test "a workspace that does not exist fails with 111" {
	run -111 --separate-stderr sbx-seatbelt --workspace /var/tmp/sbx-no-such-ws -- true
	assert_equal "$stderr" "sbx-seatbelt: fatal: unable to open /var/tmp/sbx-no-such-ws: No such file or directory"
}

@test "a workspace reached through a symlink is refused with 102" {
	ws=$(sbx_scratch)
	mkdir "$ws/real"
	ln -s real "$ws/link"
	run -102 --separate-stderr sbx-seatbelt --workspace "$ws/link" -- true
	assert_equal "$stderr" "sbx-seatbelt: fatal: refusing workspace $ws/link: it resolves to $ws/real through a symlink"
	rm -rf "$ws"
}

@test "a hard link anywhere in the workspace is refused with 102 and left alone" {
	ws=$(sbx_scratch)
	mkdir -p "$ws/a/b"
	echo secret >"$ws/a/b/f"
	ln "$ws/a/b/f" "$ws/g"
	run -102 --separate-stderr sbx-seatbelt --workspace "$ws" -- true
	assert_regex "$stderr" "^sbx-seatbelt: fatal: refusing workspace: $ws/(a/b/f|g) has 2 hard links\$"
	run -0 cat "$ws/g"
	assert_output secret
	rm -rf "$ws"
}

@test "a hard link to a file outside the workspace is refused too" {
	ws=$(sbx_scratch)
	echo outside >"$ws.outside"
	mkdir "$ws/w"
	ln "$ws.outside" "$ws/w/in"
	run -102 --separate-stderr sbx-seatbelt --workspace "$ws/w" -- true
	assert_equal "$stderr" "sbx-seatbelt: fatal: refusing workspace: $ws/w/in has 2 hard links"
	rm -rf "$ws" "$ws.outside"
}

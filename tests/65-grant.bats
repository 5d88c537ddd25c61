#!/usr/bin/env bats
# Grants: `sbx-check grant` makes them; grant-verify (tests/progs) runs the
# verifier's steps exactly as a launcher calls them (lib/policy/grant.h): read
# stdin into a sealed copy, verify argv, cwd, environment, stdin digest and
# timeout, then run the command on the verified bytes. Bad input first.

bats_require_minimum_version 1.5.0
load helpers

setup() {
	scratch=$(sbx_scratch)
	key="$scratch/key"
	head -c 32 /dev/urandom >"$key"
	chmod 0600 "$key"
	gv="$SBX_TESTBIN/grant-verify"
	printf 'line one\nline two\n' >"$scratch/in"
	insha=$(sha256sum <"$scratch/in" | cut -c1-64)
}

teardown() {
	rm -rf "$scratch"
}

# The grant every verification test starts from.
make_grant() {
	sbx-check grant --kind argv --key "$key" --cwd /tmp --timeout 30 --env A=1 --env LANG=C \
		--stdin-file "$scratch/in" -- sh -c 'cat; echo "$A"' >"$scratch/grant"
}

# Verify against the given run (options, then -- argv); stdin from $2.
verify() {
	local in=$1
	shift
	"$gv" --grant-fd 3 --grant-key "$key" "$@" 3<"$scratch/grant" <"$in"
}

@test "grant refuses bad options with usage errors" {
	run -100 --separate-stderr sbx-check grant -- true
	assert_equal "$stderr" "sbx-check: usage: grant: missing --key"
	run -100 --separate-stderr sbx-check grant --kind argv --key
	assert_equal "$stderr" "sbx-check: usage: --key needs a value"
	run -100 --separate-stderr sbx-check grant --kind argv --key "" -- true
	assert_equal "$stderr" "sbx-check: usage: --key: invalid path '': empty"
	run -100 --separate-stderr sbx-check grant --kind argv --key var/key -- true
	assert_equal "$stderr" "sbx-check: usage: --key: invalid path 'var/key': not absolute"
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --key "$key" -- true
	assert_equal "$stderr" "sbx-check: usage: --key given twice"
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key"
	assert_equal "$stderr" "sbx-check: usage: missing program"
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key" -- ""
	assert_equal "$stderr" "sbx-check: usage: empty program name"
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --json -- true
	assert_equal "$stderr" "sbx-check: usage: unknown option --json"
	run -0 --separate-stderr sbx-check grant --kind argv --key "$key" true
	assert_equal "$stderr" ""
}

@test "grant refuses an empty, zero, negative, infinite, overflowing or garbage timeout" {
	local t want
	while IFS='|' read -r t want; do
		run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --timeout "$t" -- true
		assert_equal "$stderr" "sbx-check: usage: --timeout: invalid duration '$t': $want"
	done <<'EOF'
|empty
0|zero not allowed
-1|negative
inf|not a number
1x|trailing garbage
99999999999999999999|overflow
1.0001|more than three decimals
604801|too large
EOF
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --timeout 1 --timeout 2 -- true
	assert_equal "$stderr" "sbx-check: usage: --timeout given twice"
}

@test "grant refuses a bad stdin digest or stdin file" {
	ln -s "$scratch/in" "$scratch/in-link"
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --stdin-sha256 "" -- true
	assert_equal "$stderr" "sbx-check: usage: --stdin-sha256: invalid digest '': empty"
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --stdin-sha256 abc -- true
	assert_equal "$stderr" "sbx-check: usage: --stdin-sha256: invalid digest 'abc': not 64 hex digits"
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --stdin-sha256 "${insha^^}" -- true
	assert_equal "$stderr" "sbx-check: usage: --stdin-sha256: invalid digest '${insha^^}': not lower-case hex"
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --stdin-sha256 "$insha" --stdin-file "$scratch/in" -- true
	assert_equal "$stderr" "sbx-check: usage: --stdin-sha256 and --stdin-file are exclusive"
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --stdin-file "" -- true
	assert_equal "$stderr" "sbx-check: usage: --stdin-file: invalid path '': empty"
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --stdin-file in -- true
	assert_equal "$stderr" "sbx-check: usage: --stdin-file: invalid path 'in': not absolute"
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --stdin-file "$scratch/none" -- true
	assert_equal "$stderr" "sbx-check: usage: --stdin-file: unable to find '$scratch/none': No such file or directory"
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --stdin-file "$scratch/in-link" -- true
	assert_equal "$stderr" "sbx-check: usage: --stdin-file: '$scratch/in-link' is a symlink"
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --stdin-file "$scratch" -- true
	assert_equal "$stderr" "sbx-check: usage: --stdin-file: '$scratch' is not a regular file"
	# More than sbx-ns reads for a granted command: a grant that could never run.
	truncate -s $(((64 << 20) + 1)) "$scratch/big"
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --stdin-file "$scratch/big" -- true
	assert_output ""
	assert_equal "$stderr" "sbx-check: usage: --stdin-file: '$scratch/big' is larger than 64 MiB, the most sbx-ns reads for a granted command (its grant binds every byte): give larger input as a file the command opens"
	truncate -s $((64 << 20)) "$scratch/big"
	run -0 sbx-check grant --kind argv --key "$key" --stdin-file "$scratch/big" -- true
	assert_line --index 7 "stdin-sha256=$(sha256sum <"$scratch/big" | cut -d' ' -f1)"
	rm "$scratch/big"
}

@test "grant refuses a bad working directory or environment entry" {
	local d
	for d in tmp ./tmp; do
		run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --cwd "$d" -- true
		assert_equal "$stderr" "sbx-check: usage: --cwd: invalid directory '$d': not absolute"
	done
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --cwd "" -- true
	assert_equal "$stderr" "sbx-check: usage: --cwd: invalid directory '': empty"
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --cwd /tmp/../etc -- true
	assert_equal "$stderr" "sbx-check: usage: --cwd: invalid directory '/tmp/../etc': '..' component"
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --cwd /tmp/. -- true
	assert_equal "$stderr" "sbx-check: usage: --cwd: invalid directory '/tmp/.': '.' component"
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --cwd /tmp/ -- true
	assert_equal "$stderr" "sbx-check: usage: --cwd: invalid directory '/tmp/': not canonical"
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --cwd //tmp -- true
	assert_equal "$stderr" "sbx-check: usage: --cwd: invalid directory '//tmp': not canonical"
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --env A -- true
	assert_equal "$stderr" "sbx-check: usage: --env: invalid variable 'A': missing '='"
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --env =1 -- true
	assert_equal "$stderr" "sbx-check: usage: --env: invalid variable '=1': empty name"
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --env 1A=1 -- true
	assert_equal "$stderr" "sbx-check: usage: --env: invalid variable '1A=1': bad name"
	run -100 --separate-stderr sbx-check grant --kind argv --key "$key" --env A=1 --env A=2 -- true
	assert_equal "$stderr" "sbx-check: usage: --env: variable A given twice"
}

@test "a key readable, writable or executable by group or others is refused" {
	local m
	for m in 0644 0640 0604 0620 0602 0610 0601; do
		chmod "$m" "$key"
		run -102 --separate-stderr sbx-check grant --kind argv --key "$key" -- true
		assert_equal "$stderr" "sbx-check: fatal: grant key $key is unsafe: mode $m gives group or others access"
		assert_output ""
	done
	chmod 0400 "$key"
	run -0 --separate-stderr sbx-check grant --kind argv --key "$key" -- true
}

@test "a key that is a symlink, not a regular file, too short or someone else's is refused" {
	sbx_test_user
	ln -s "$key" "$scratch/link"
	run -102 --separate-stderr sbx-check grant --kind argv --key "$scratch/link" -- true
	assert_equal "$stderr" "sbx-check: fatal: grant key $scratch/link is unsafe: a symlink"
	run -102 --separate-stderr sbx-check grant --kind argv --key "$scratch" -- true
	assert_equal "$stderr" "sbx-check: fatal: grant key $scratch is unsafe: not a regular file"
	mkfifo -m 0600 "$scratch/fifo"
	run -102 --separate-stderr sbx-check grant --kind argv --key "$scratch/fifo" -- true
	assert_equal "$stderr" "sbx-check: fatal: grant key $scratch/fifo is unsafe: not a regular file"
	head -c 31 /dev/urandom >"$scratch/short"
	chmod 0600 "$scratch/short"
	run -102 --separate-stderr sbx-check grant --kind argv --key "$scratch/short" -- true
	assert_equal "$stderr" "sbx-check: fatal: grant key $scratch/short is unusable: 31 bytes, at least 32 needed"
	run -111 --separate-stderr sbx-check grant --kind argv --key "$scratch/none" -- true
	assert_equal "$stderr" "sbx-check: fatal: unable to open grant key $scratch/none: No such file or directory"
	# Root may use the caller's key only when it is root's or the caller's.
	chown "$SBX_TEST_UID" "$key"
	run -102 --separate-stderr sbx-check grant --kind argv --key "$key" -- true
	assert_equal "$stderr" "sbx-check: fatal: grant key $key is unsafe: owned by uid $SBX_TEST_UID (not root or the caller)"
	# The owner itself may; root's key is unreadable to it.
	run -0 --separate-stderr as_user sbx-check grant --kind argv --key "$key" -- true
	chown 0 "$key"
	run -111 --separate-stderr as_user sbx-check grant --kind argv --key "$key" -- true
	assert_equal "$stderr" "sbx-check: fatal: unable to open grant key $key: Permission denied"
}

@test "an argv grant is ten strict lines and depends on every input" {
	make_grant
	run -0 cat "$scratch/grant"
	assert_line --index 0 "sbx-grant-v2"
	assert_line --index 1 "kind=argv"
	assert_line --index 2 "expires=never"
	assert_line --index 3 "nonce=none"
	assert_line --index 4 --regexp '^argv=[0-9a-f]{64}$'
	assert_line --index 5 --regexp '^cwd=[0-9a-f]{64}$'
	assert_line --index 6 --regexp '^env=[0-9a-f]{64}$'
	assert_line --index 7 "stdin-sha256=$insha"
	assert_line --index 8 "timeout-ms=30000"
	assert_line --index 9 --regexp '^mac=[0-9a-f]{64}$'
	assert_equal "${#lines[@]}" 10
	# Same inputs, same grant; the environment's order does not matter.
	run -0 sbx-check grant --kind argv --key "$key" --cwd /tmp --timeout 30 --env LANG=C --env A=1 \
		--stdin-sha256 "$insha" -- sh -c 'cat; echo "$A"'
	assert_equal "$output" "$(cat "$scratch/grant")"
	# No stdin option: the empty stdin; no timeout: 0.
	run -0 sbx-check grant --kind argv --key "$key" -- true
	assert_line --index 7 "stdin-sha256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	assert_line --index 8 "timeout-ms=0"
}

@test "a valid grant runs the command on exactly the verified stdin" {
	make_grant
	run -0 --separate-stderr verify "$scratch/in" --cwd /tmp --timeout 30 --setenv LANG=C --setenv A=1 \
		-- sh -c 'cat; echo "$A"'
	assert_equal "$stderr" ""
	assert_equal "$output" "$(printf 'line one\nline two\n1')"
}

@test "the command cannot rewrite the verified stdin" {
	sbx-check grant --kind argv --key "$key" --stdin-file "$scratch/in" --cwd / -- \
		sh -c 'if printf x 2>/dev/null >&0; then echo written; else echo sealed; fi; cat' >"$scratch/grant"
	run -0 --separate-stderr verify "$scratch/in" -- \
		sh -c 'if printf x 2>/dev/null >&0; then echo written; else echo sealed; fi; cat'
	assert_equal "$output" "$(printf 'sealed\nline one\nline two')"
}

@test "stdin with NUL bytes and a large stdin are hashed and passed whole" {
	head -c 3000000 /dev/urandom >"$scratch/big"
	printf 'a\0b' >>"$scratch/big"
	sbx-check grant --kind argv --key "$key" --stdin-file "$scratch/big" --cwd / -- sha256sum >"$scratch/grant"
	run -0 --separate-stderr verify "$scratch/big" -- sha256sum
	assert_equal "$output" "$(sha256sum <"$scratch/big")"
}

@test "argv changed by one byte is refused naming argv" {
	make_grant
	run -102 --separate-stderr verify "$scratch/in" --cwd /tmp --timeout 30 --setenv LANG=C --setenv A=1 \
		-- sh -c 'cat; echo "$B"'
	assert_equal "$stderr" "grant-verify: fatal: grant refused: argv differs from the grant"
	assert_output ""
	# The same bytes split differently are another argv.
	run -102 --separate-stderr verify "$scratch/in" --cwd /tmp --timeout 30 --setenv LANG=C --setenv A=1 \
		-- sh -c 'cat;' 'echo "$A"'
	assert_equal "$stderr" "grant-verify: fatal: grant refused: argv differs from the grant"
}

@test "cwd changed by one byte is refused naming cwd" {
	make_grant
	run -102 --separate-stderr verify "$scratch/in" --cwd /tmq --timeout 30 --setenv LANG=C --setenv A=1 \
		-- sh -c 'cat; echo "$A"'
	assert_equal "$stderr" "grant-verify: fatal: grant refused: cwd differs from the grant"
	assert_output ""
}

@test "the environment changed by one byte, or by one more variable, is refused naming env" {
	make_grant
	run -102 --separate-stderr verify "$scratch/in" --cwd /tmp --timeout 30 --setenv LANG=C --setenv A=2 \
		-- sh -c 'cat; echo "$A"'
	assert_equal "$stderr" "grant-verify: fatal: grant refused: env differs from the grant"
	run -102 --separate-stderr verify "$scratch/in" --cwd /tmp --timeout 30 --setenv LANG=C --setenv A=1 \
		--setenv B= -- sh -c 'cat; echo "$A"'
	assert_equal "$stderr" "grant-verify: fatal: grant refused: env differs from the grant"
	run -102 --separate-stderr verify "$scratch/in" --cwd /tmp --timeout 30 --setenv LANG=C \
		-- sh -c 'cat; echo "$A"'
	assert_equal "$stderr" "grant-verify: fatal: grant refused: env differs from the grant"
	assert_output ""
}

@test "stdin changed by one byte is refused naming stdin" {
	make_grant
	printf 'line one\nline twO\n' >"$scratch/in2"
	run -102 --separate-stderr verify "$scratch/in2" --cwd /tmp --timeout 30 --setenv LANG=C --setenv A=1 \
		-- sh -c 'cat; echo "$A"'
	assert_equal "$stderr" "grant-verify: fatal: grant refused: stdin differs from the grant"
	assert_output ""
	run -102 --separate-stderr verify /dev/null --cwd /tmp --timeout 30 --setenv LANG=C --setenv A=1 \
		-- sh -c 'cat; echo "$A"'
	assert_equal "$stderr" "grant-verify: fatal: grant refused: stdin differs from the grant"
}

@test "the timeout changed by one millisecond, or missing, is refused naming timeout" {
	make_grant
	run -102 --separate-stderr verify "$scratch/in" --cwd /tmp --timeout 30.001 --setenv LANG=C --setenv A=1 \
		-- sh -c 'cat; echo "$A"'
	assert_equal "$stderr" "grant-verify: fatal: grant refused: timeout differs from the grant"
	run -102 --separate-stderr verify "$scratch/in" --cwd /tmp --setenv LANG=C --setenv A=1 \
		-- sh -c 'cat; echo "$A"'
	assert_equal "$stderr" "grant-verify: fatal: grant refused: timeout differs from the grant"
	assert_output ""
}

@test "several differences are all named" {
	make_grant
	run -102 --separate-stderr verify /dev/null --cwd / --timeout 1 --setenv LANG=C \
		-- sh -c 'cat'
	assert_equal "$stderr" "grant-verify: fatal: grant refused: argv, cwd, env, stdin, timeout differ from the grant"
}

@test "a forged MAC, an edited field and another key's grant are refused as forgeries" {
	local args=(--cwd /tmp --timeout 30 --setenv LANG=C --setenv A=1 -- sh -c 'cat; echo "$A"')
	make_grant
	cp "$scratch/grant" "$scratch/good"
	# One hex digit of the MAC.
	awk '/^mac=/ { c = substr($0, 5, 1); $0 = "mac=" (c == "0" ? "1" : "0") substr($0, 6) } 1' \
		"$scratch/good" >"$scratch/grant"
	run -102 --separate-stderr verify "$scratch/in" "${args[@]}"
	assert_equal "$stderr" "grant-verify: fatal: grant refused: the signature does not verify (forged, or made with another key)"
	assert_output ""
	# A field edited to match another run: the MAC no longer covers it.
	sbx-check grant --kind argv --key "$key" --cwd / -- true >"$scratch/other"
	{ sed -n 1,4p "$scratch/good"; sed -n 5,6p "$scratch/other"; sed -n 7,10p "$scratch/good"; } >"$scratch/grant"
	run -102 --separate-stderr "$gv" --grant-fd 3 --grant-key "$key" --cwd / --timeout 30 --setenv LANG=C \
		--setenv A=1 -- true 3<"$scratch/grant" <"$scratch/in"
	assert_equal "$stderr" "grant-verify: fatal: grant refused: the signature does not verify (forged, or made with another key)"
	# The right run, signed with another key.
	head -c 32 /dev/urandom >"$scratch/key2"
	chmod 0600 "$scratch/key2"
	sbx-check grant --kind argv --key "$scratch/key2" --cwd /tmp --timeout 30 --env A=1 --env LANG=C \
		--stdin-file "$scratch/in" -- sh -c 'cat; echo "$A"' >"$scratch/grant"
	run -102 --separate-stderr verify "$scratch/in" "${args[@]}"
	assert_equal "$stderr" "grant-verify: fatal: grant refused: the signature does not verify (forged, or made with another key)"
	# And the original still verifies.
	cp "$scratch/good" "$scratch/grant"
	run -0 --separate-stderr verify "$scratch/in" "${args[@]}"
}

@test "a malformed, empty, oversized or unreadable grant is refused" {
	make_grant
	: >"$scratch/empty"
	run -102 --separate-stderr "$gv" --grant-fd 3 --grant-key "$key" -- true 3<"$scratch/empty" </dev/null
	assert_equal "$stderr" "grant-verify: fatal: grant refused: malformed (empty)"
	sed 's/^cwd=/cwd =/' "$scratch/grant" >"$scratch/bad"
	run -102 --separate-stderr "$gv" --grant-fd 3 --grant-key "$key" -- true 3<"$scratch/bad" </dev/null
	assert_equal "$stderr" "grant-verify: fatal: grant refused: malformed (line 6: expected 'cwd=')"
	{ cat "$scratch/grant"; echo; } >"$scratch/bad"
	run -102 --separate-stderr "$gv" --grant-fd 3 --grant-key "$key" -- true 3<"$scratch/bad" </dev/null
	assert_equal "$stderr" "grant-verify: fatal: grant refused: malformed (line 11: trailing data after 'mac=')"
	head -c 5000 /dev/zero >"$scratch/bad"
	run -102 --separate-stderr "$gv" --grant-fd 3 --grant-key "$key" -- true 3<"$scratch/bad" </dev/null
	assert_equal "$stderr" "grant-verify: fatal: grant refused: malformed (longer than the largest grant)"
	sed 's/$/\r/' "$scratch/grant" >"$scratch/bad"
	run -102 --separate-stderr "$gv" --grant-fd 3 --grant-key "$key" -- true 3<"$scratch/bad" </dev/null
	assert_equal "$stderr" "grant-verify: fatal: grant refused: malformed (line 1: expected 'sbx-grant-v2')"
	run -111 --separate-stderr "$gv" --grant-fd 3 --grant-key "$key" -- true 3>"$scratch/wo" </dev/null
	assert_equal "$stderr" "grant-verify: fatal: unable to read the grant from fd 3: Bad file descriptor"
}

@test "the verifier's grant options are checked before anything runs" {
	make_grant
	run -100 --separate-stderr "$gv" --grant-fd 3 -- true 3<"$scratch/grant"
	assert_equal "$stderr" "grant-verify: usage: --grant-fd and --grant-key go together"
	run -100 --separate-stderr "$gv" --grant-key "$key" -- true
	assert_equal "$stderr" "grant-verify: usage: --grant-fd and --grant-key go together"
	run -100 --separate-stderr "$gv" --grant-fd 9 --grant-key "$key" -- true
	assert_equal "$stderr" "grant-verify: usage: --grant-fd: invalid fd '9': not open; open it for the tool (in the shell: 9<FILE or 9>FILE, or a previous tool's --pass-fd 9)"
	run -100 --separate-stderr "$gv" --grant-fd 3 --grant-key key -- true 3<"$scratch/grant"
	assert_equal "$stderr" "grant-verify: usage: --grant-key: invalid path 'key': not absolute"
	chmod 0644 "$key"
	run -102 --separate-stderr "$gv" --grant-fd 3 --grant-key "$key" -- true 3<"$scratch/grant"
	assert_equal "$stderr" "grant-verify: fatal: grant key $key is unsafe: mode 0644 gives group or others access"
}

@test "sbx-check grant --prune DIR: bad input, and a directory it may not use or cannot prune, are refused before anything is removed" {
	local nd="$scratch/nd" rec
	mkdir -m 0700 "$nd"
	rec=$(printf %064d 7)
	printf 'used 1 pid 1 expires 1\n' >"$nd/$rec"
	bad() {
		local code=$1 msg=$2
		shift 2
		run "-$code" --separate-stderr sbx-check grant "$@"
		assert_output ""
		assert_equal "$stderr" "sbx-check: $msg"
		[ -f "$nd/$rec" ]
	}
	bad 100 "usage: --prune needs a value" --prune
	bad 100 "usage: --prune: invalid path '': empty" --prune ""
	bad 100 "usage: --prune: invalid path 'nd': not absolute" --prune nd
	bad 100 "usage: --prune: invalid path '$nd/../nd': '..' component" --prune "$nd/../nd"
	bad 100 "usage: --prune: invalid path '/': the whole file system" --prune /
	bad 100 "usage: --prune given twice" --prune "$nd" --prune "$nd"
	bad 100 "usage: --prune DIR takes no other option and no program" --prune "$nd" --key "$key"
	bad 100 "usage: --prune DIR takes no other option and no program" --key "$key" --prune "$nd"
	bad 100 "usage: --prune DIR takes no other option and no program" --prune "$nd" -- true
	ln -s "$nd" "$scratch/link"
	bad 102 "fatal: grant nonce directory $scratch/link is unsafe: $scratch/link is a symbolic link" --prune "$scratch/link"
	bad 111 "fatal: unable to open the grant nonce directory $scratch/none (at $scratch/none): No such file or directory" --prune "$scratch/none"
	bad 111 "fatal: unable to open the grant nonce directory $nd/$rec (at $nd/$rec): Not a directory" --prune "$nd/$rec"
	chmod 0770 "$nd"
	bad 102 "fatal: grant nonce directory $nd is unsafe: $nd has mode 0770, writable by group or others: chmod go-w $nd" --prune "$nd"
	chmod 0700 "$nd"
	# Root's directory, pruned by another user: it may look, not remove.
	chmod 0755 "$scratch" "$nd"
	sbx_test_user
	run -111 --separate-stderr as_user sbx-check grant --prune "$nd"
	assert_equal "$stderr" "sbx-check: fatal: unable to prune $nd (at $nd/expiring): Permission denied"
	[ -f "$nd/$rec" ]
	# Its mark damaged: nothing goes, and the message says how to mend it.
	mkdir -m 0700 "$nd/expiring"
	printf 'pruned x\n' >"$nd/expiring/pruned"
	bad 111 "fatal: unable to prune $nd: $nd/expiring/pruned is not one line 'pruned SECONDS' (up to which expiry records were removed): write one line 'pruned SECONDS' there, SECONDS the latest expiry ever pruned or later (two hours ago is, on a clock never set back)" --prune "$nd"
	printf 'pruned 1\n' >"$nd/expiring/pruned"
	run -0 --separate-stderr sbx-check grant --prune "$nd"
	assert_output --regexp "^$nd: removed 1 nonces of grants expired by [-0-9T:]+Z; kept 0 of grants not expired by then, 0 that never expire, 0 whose expiry cannot be read\$"
	assert_equal "$stderr" ""
	[ ! -e "$nd/$rec" ]
}

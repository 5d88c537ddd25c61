#!/usr/bin/env bats
# sbx-ns: bad input first. Every option's garbage is a usage error (100)
# with one exact message, and nothing is created.

bats_require_minimum_version 1.5.0
load helpers
load ns

setup_file() {
	ns_setup_file
	ln -s "$NS_WS" "$NS_DIR/link"
	touch "$NS_DIR/file"
}


# bad MESSAGE ARGS...: exit 100, nothing on stdout, exactly MESSAGE on stderr.
bad() {
	local want=$1
	shift
	run -100 --separate-stderr sbx-ns "$@"
	assert_output ""
	assert_equal "$stderr" "sbx-ns: usage: $want"
}

@test "--help prints the usage lines and the options and exits 0" {
	run -0 --separate-stderr sbx-ns --help
	assert_line --index 0 "usage: sbx-ns [OPTION]... [--] PROG [ARG]..."
	assert_line --index 1 "       sbx-ns [OPTION]... --serve PATH [--] [PROG [ARG]...]"
	assert_line --index 2 "       sbx-ns --join PATH [OPTION]... [--] PROG [ARG]..."
	assert_line --index 3 "       sbx-ns --join PATH (--jobs | --wait-job ID | --kill-job ID | --stop)"
	assert_line --index 4 "       sbx-ns --join PATH --connect PORT [--connect-fd N] [--] HOSTPROG [ARG]..."
	assert_line --index 5 "       sbx-ns --recover (--workspace DIR | --workspace-fd FD) [--status-fd FD]"
	assert_line "  --workspace DIR        the directory it may write, and its working directory"
	assert_line "  --home DIR             a writable HOME; default: /tmp/home, gone at the end"
	assert_line "  --join PATH            the living sandbox's control socket (first argument)"
	assert_line "Full reference: man sbx-ns"
	assert_equal "$stderr" ""
}

@test "a missing program, an empty one and a missing workspace are usage errors" {
	bad "missing program" --workspace "$NS_WS"
	bad "missing program" --workspace "$NS_WS" --
	bad "empty program name" --workspace "$NS_WS" -- ""
	bad "missing --workspace or --workspace-fd" -- true
}

@test "unknown options, short options and values given to flags are refused" {
	bad "unknown option --bind-mount" --bind-mount /a /b -- true
	bad "unknown option -w (options are long: --name)" -w "$NS_WS" -- true
	bad "--tmp-in-workspace takes no value" --tmp-in-workspace=1 --workspace "$NS_WS" -- true
	bad "--require-landlock takes no value" --require-landlock=yes -- true
	bad "--ro needs a value" --workspace "$NS_WS" --ro
}

@test "--workspace refuses empty, relative, missing, symlinked and non-canonical paths" {
	bad "--workspace: invalid path '': empty" --workspace "" -- true
	bad "--workspace: invalid path 'ws': not absolute" --workspace ws -- true
	bad "--workspace: invalid path './ws': not absolute" --workspace ./ws -- true
	bad "--workspace: invalid path '$NS_DIR/none': does not exist" --workspace "$NS_DIR/none" -- true
	bad "--workspace: invalid path '$NS_DIR/link': a symlink" --workspace "$NS_DIR/link" -- true
	bad "--workspace: invalid path '$NS_DIR/link/x': has a symlink in its path" --workspace "$NS_DIR/link/x" -- true
	bad "--workspace: invalid path '$NS_DIR/ws/../ws': not canonical" --workspace "$NS_DIR/ws/../ws" -- true
	bad "--workspace: invalid path '$NS_DIR/ws/..': not canonical" --workspace "$NS_DIR//ws/../" -- true
	bad "--workspace: invalid path '$NS_DIR/./ws': not canonical" --workspace "$NS_DIR/./ws/" -- true
	bad "--workspace: invalid path '$NS_DIR/link': a symlink" --workspace "$NS_DIR/link/" -- true
	bad "--workspace: invalid path '$NS_DIR/file': not a directory" --workspace "$NS_DIR/file" -- true
}

@test "--workspace refuses / and every place that collides with the runtime or /tmp" {
	local d
	bad "--workspace: invalid path '/': the root" --workspace / -- true
	bad "--workspace: invalid path '/': the root" --workspace /// -- true
	for d in /usr /usr/share /bin /sbin /lib /lib64 /dev /dev/shm /proc /proc/self /sys; do
		bad "--workspace: invalid path '$d': under /$(cut -d/ -f2 <<<"$d")" --workspace "$d" -- true
	done
	for d in /tmp /tmp/x; do
		bad "--workspace: invalid path '$d': under /tmp, where the sandbox mounts its own /tmp (use a directory under /var/tmp)" --workspace "$d" -- true
	done
}

@test "--workspace and --workspace-fd are exclusive and given once" {
	bad "--workspace given twice" --workspace "$NS_WS" --workspace "$NS_WS" -- true
	bad "--workspace and --workspace-fd are exclusive" --workspace "$NS_WS" --workspace-fd 3 -- true 3<"$NS_WS"
}

@test "fd options refuse empty, zero, negative, infinite, overflowing, garbage and closed fds" {
	local o
	for o in --workspace-fd --ro-fd --rw-fd --status-fd --ready-fd; do
		bad "$o: invalid fd '': empty" "$o" "" -- true
		bad "$o: invalid fd '0': 0, 1 and 2 are stdio" "$o" 0 -- true
		bad "$o: invalid fd '2': 0, 1 and 2 are stdio" "$o" 2 -- true
		bad "$o: invalid fd '-1': negative" "$o" -1 -- true
		bad "$o: invalid fd 'inf': not a number" "$o" inf -- true
		bad "$o: invalid fd '99999999999999999999': overflow" "$o" 99999999999999999999 -- true
		bad "$o: invalid fd '4294967296': too large" "$o" 4294967296 -- true
		bad "$o: invalid fd '3x': trailing garbage" "$o" 3x -- true
		bad "$o: invalid fd ' 3': whitespace not allowed" "$o" " 3" -- true
		bad "$o: invalid fd '+3': sign not allowed" "$o" +3 -- true
		bad "$o: invalid fd '77': not open; open it for the tool (in the shell: 77<FILE or 77>FILE, or a previous tool's --pass-fd 77)" "$o" 77 -- true
	done
}

@test "fd binds refuse fds that are not files or directories, and the same fd twice" {
	bad "--ro-fd: invalid fd '3': not a file or directory" --ro-fd 3 -- true 3</dev/null
	bad "--rw-fd: invalid fd '3': not a file or directory" --rw-fd 3 -- true 3< <(true)
	bad "--workspace-fd: invalid fd '3': not a directory" --workspace-fd 3 -- true 3<"$NS_DIR/file"
	bad "--ro-fd: fd 3 given twice" --ro-fd 3 --ro-fd 3 -- true 3<"$NS_DIR/file"
	bad "--ro: invalid path '/etc/..': not canonical" --ro /etc/.. -- true
	bad "--ro-fd: invalid path '/proc/version': under /proc" --ro-fd 3 -- true 3</proc/version
}

@test "--ro and --rw refuse empty, relative, missing, symlinks, / and /proc /sys /dev" {
	local o
	for o in --ro --rw; do
		bad "$o: invalid path '': empty" "$o" "" -- true
		bad "$o: invalid path 'x': not absolute" "$o" x -- true
		bad "$o: invalid path '$NS_DIR/none': does not exist" "$o" "$NS_DIR/none" -- true
		bad "$o: invalid path '$NS_DIR/link': a symlink" "$o" "$NS_DIR/link" -- true
		bad "$o: invalid path '/': the root" "$o" / -- true
		bad "$o: invalid path '/proc/1': under /proc" "$o" /proc/1 -- true
		bad "$o: invalid path '/sys': under /sys" "$o" /sys -- true
		bad "$o: invalid path '/dev/null': under /dev" "$o" /dev/null -- true
		bad "$o: invalid path '/dev/shm': under /dev" "$o" /dev/shm -- true
	done
}

@test "a path bound twice is refused" {
	bad "--rw: invalid path '$NS_WS': overlaps the workspace $NS_WS (a writable second view of it; use --ro)" --uid 1 --gid 1 --workspace "$NS_WS" --rw "$NS_WS" -- true
	bad "--rw: $NS_DIR/bin is already bound (by --ro)" --uid 1 --gid 1 --workspace "$NS_WS" --ro "$NS_DIR/bin" --rw "$NS_DIR/bin" -- true
	bad "--ro: /usr is already bound (by --runtime)" --uid 1 --gid 1 --workspace "$NS_WS" --ro /usr -- true
}

@test "--runtime refuses empty lists, empty entries and bad paths" {
	bad "--runtime: empty (use --runtime none for no system paths)" --runtime "" --workspace "$NS_WS" -- true
	bad "--runtime: invalid list ':': empty entry" --uid 1 --gid 1 --runtime : --workspace "$NS_WS" -- true
	bad "--runtime: invalid list '/usr::/etc': empty entry" --uid 1 --gid 1 --runtime /usr::/etc --workspace "$NS_WS" -- true
	bad "--runtime: invalid path 'usr': not absolute" --uid 1 --gid 1 --runtime usr --workspace "$NS_WS" -- true
	bad "--runtime: invalid path '/nonexistent': does not exist" --uid 1 --gid 1 --runtime /nonexistent --workspace "$NS_WS" -- true
	bad "--runtime: invalid path '/proc': under /proc" --uid 1 --gid 1 --runtime /proc --workspace "$NS_WS" -- true
	bad "--runtime given twice" --runtime none --runtime none -- true
}

@test "--deny-write refuses empty, absolute, dot components, ** twice in a row or inside a name" {
	bad "--deny-write: invalid glob '': empty" --deny-write "" -- true
	bad "--deny-write: invalid glob '/etc/x': absolute (globs are relative to the workspace)" --deny-write /etc/x -- true
	bad "--deny-write: invalid glob 'a/../b': '.' and '..' are not allowed" --deny-write a//../b/ -- true
	bad "--deny-write: invalid glob '../x': '.' and '..' are not allowed" --deny-write ../x -- true
	bad "--deny-write: invalid glob './x': '.' and '..' are not allowed" --deny-write ./x -- true
	bad "--deny-write: invalid glob 'a/**/**/b': '**/**'" --deny-write 'a/**/**/b' -- true
	bad "--deny-write: invalid glob 'a/b**': '**' must be a whole component" --deny-write 'a/b**' -- true
}

@test "--uid and --gid refuse garbage, 0, -1 and out-of-range values" {
	local o
	for o in --uid --gid; do
		bad "$o: invalid number '': empty" "$o" "" -- true
		bad "$o: invalid number '0': zero not allowed" "$o" 0 -- true
		bad "$o: invalid number '-1': negative" "$o" -1 -- true
		bad "$o: invalid number 'inf': not a number" "$o" inf -- true
		bad "$o: invalid number '4294967295': too large" "$o" 4294967295 -- true
		bad "$o: invalid number '99999999999999999999': overflow" "$o" 99999999999999999999 -- true
		bad "$o: invalid number '12a': trailing garbage" "$o" 12a -- true
		bad "$o given twice" "$o" 5 "$o" 5 -- true
	done
}

@test "root must name both --uid and --gid; an unprivileged caller may name neither" {
	sbx_test_user
	bad "running as root needs --uid and --gid (the command never runs as root)" --workspace "$NS_WS" -- true
	bad "running as root needs --uid and --gid (the command never runs as root)" --uid 5 --workspace "$NS_WS" -- true
	run -100 --separate-stderr as_user sbx-ns --uid 5 --workspace "$NS_WS" -- true
	assert_equal "$stderr" "sbx-ns: usage: --uid: only root chooses the command's identity"
	run -100 --separate-stderr as_user sbx-ns --gid 5 --workspace "$NS_WS" -- true
	assert_equal "$stderr" "sbx-ns: usage: --gid: only root chooses the command's identity"
}

@test "--setenv and --keep-env refuse bad names and a name given twice" {
	bad "--setenv: invalid variable '': missing '='" --setenv "" -- true
	bad "--setenv: invalid variable 'FOO': missing '='" --setenv FOO -- true
	bad "--setenv: invalid variable '=x': empty name" --setenv =x -- true
	bad "--setenv: invalid variable '1A=x': bad name" --setenv 1A=x -- true
	bad "--setenv: invalid variable 'A B=x': bad name" --setenv "A B=x" -- true
	bad "--setenv: variable A given twice" --setenv A=1 --setenv A=2 -- true
	bad "--keep-env: invalid variable '': empty name" --keep-env "" -- true
	bad "--keep-env: invalid variable 'A=B': bad name" --keep-env A=B -- true
	bad "--keep-env: variable HOME given twice" --keep-env HOME --keep-env HOME -- true
	bad "--keep-env: variable A given twice" --setenv A=1 --keep-env A -- true
}

@test "--net takes none, loopback, broker:PATH[,port=N] or host, once" {
	bad "--net: invalid mode '': empty" --net "" -- true
	bad "--net: invalid mode 'all' (none, loopback, broker:PATH[,transparent][,port=N], host)" --net all -- true
	bad "--net: invalid mode 'None' (none, loopback, broker:PATH[,transparent][,port=N], host)" --net None -- true
	bad "--net given twice" --net none --net none -- true
	bad "--net given twice" --net loopback --net host -- true
}

@test "the status and ready fds must differ from each other and from bound fds" {
	bad "--ready-fd: fd 3 is also --status-fd" --workspace "$NS_WS" --status-fd 3 --ready-fd 3 -- true 3>/dev/null
	bad "--status-fd: fd 3 is also --ro-fd" --workspace "$NS_WS" --ro-fd 3 --status-fd 3 -- true 3<"$NS_DIR/file"
	# The status fd accepted first and then claimed by another option: no
	# exit line is written into what is also someone else's fd.
	bad "--ready-fd: fd 3 is also --status-fd" --workspace "$NS_WS" --status-fd 3 --ready-fd 3 -- true 3>"$BATS_TEST_TMPDIR/st"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/st")" ""
}

@test "a bind that would hide an earlier one is refused (binds apply in argv order)" {
	bad "--ro: $NS_DIR would hide $NS_DIR/bin (bound earlier by --ro; give it later)" \
		--uid 1 --gid 1 --ro "$NS_DIR/bin" --ro "$NS_DIR" --workspace "$NS_WS" -- true
	bad "--ro: $NS_DIR would hide $NS_WS (bound earlier by --workspace; give it later)" \
		--uid 1 --gid 1 --workspace "$NS_WS" --ro "$NS_DIR" -- true
}

@test "the policy options refuse garbage, repeats, shared fds and a clamp without a baseline" {
	bad "--baseline: invalid path '': empty" --workspace "$NS_WS" --baseline "" -- true
	bad "--baseline: invalid path 'rel.json': not absolute" --workspace "$NS_WS" --baseline rel.json -- true
	bad "--baseline and --baseline-fd are exclusive" --workspace "$NS_WS" --baseline /a --baseline-fd 7 -- true 7</dev/null
	bad "--baseline-fd: invalid fd '9': not open; open it for the tool (in the shell: 9<FILE or 9>FILE, or a previous tool's --pass-fd 9)" --workspace "$NS_WS" --baseline-fd 9 -- true
	bad "--baseline-fd: invalid fd 'abc': not a number" --workspace "$NS_WS" --baseline-fd abc -- true
	bad "--baseline-fd: invalid fd '0': 0, 1 and 2 are stdio" --workspace "$NS_WS" --baseline-fd 0 -- true
	bad "--policy-fd: invalid fd '-1': negative" --workspace "$NS_WS" --policy-fd -1 -- true
	bad "--policy-fd given twice" --workspace "$NS_WS" --policy-fd 7 --policy-fd 7 -- true 7</dev/null
	bad "--clamp needs --baseline or --baseline-fd" --workspace "$NS_WS" --clamp -- true
	bad "--clamp given twice" --workspace "$NS_WS" --clamp --clamp -- true
	bad "--print-policy given twice" --workspace "$NS_WS" --print-policy --print-policy
	bad "--print-policy takes no value" --workspace "$NS_WS" --print-policy=yes
	bad "--policy-fd: fd 7 is also --baseline-fd" --workspace "$NS_WS" --baseline-fd 7 --policy-fd 7 -- true 7</dev/null
	bad "--status-fd: fd 7 is also --baseline-fd" --workspace "$NS_WS" --baseline-fd 7 --status-fd 7 -- true 7</dev/null
	bad "--ro-fd: fd 7 is also --policy-fd" --workspace "$NS_WS" --policy-fd 7 --ro-fd 7 -- true 7</usr/share
	bad "--policy-fd and --ro are exclusive (one source per request)" --workspace "$NS_WS" --uid 1000 --gid 1000 --policy-fd 7 --ro /usr/share -- true 7</dev/null
	bad "missing --workspace or --workspace-fd" --print-policy
}

@test "--home takes a path like --rw, once" {
	bad "--home: invalid path 'rel': not absolute" --workspace "$NS_WS" --home rel -- true
	bad "--home: invalid path '/nonexistent': does not exist" --workspace "$NS_WS" --home /nonexistent -- true
	bad "--home given twice" --workspace "$NS_WS" --home /var/tmp --home /var/tmp -- true
	bad "--home: invalid path '$NS_WS': overlaps the workspace $NS_WS (a writable second view of it; give a directory outside the workspace)" --uid 1 --gid 1 --workspace "$NS_WS" --home "$NS_WS" -- true
}

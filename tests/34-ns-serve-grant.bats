#!/usr/bin/env bats
# Grants in a living sandbox: sbx-ns --serve PATH --grant-key FILE runs only
# commands that come with a grant (sbx-ns --join PATH --grant-fd FD), each
# checked as a one-shot run's grant is, against the plan of that command in
# that sandbox (sbx-ns --join PATH --dry-run prints it): the command (argv,
# cwd, env, stdin, timeout), the sandbox (identity, mounts, deny-write, net,
# filters, Landlock, policy) and the program's file. Every refusal is the
# one-shot's (102) and the sandbox serves on; expiry, single use (raced),
# the program changed after the grant, the key kept out of the sandbox, and
# hand-made requests.

bats_require_minimum_version 1.5.0
load helpers
load ns
load grantsrv

setup() { srv_setup; }

teardown() { srv_teardown; }

# The known good command, granted once per test: the sandbox serves on.
good_grant() {
	GRANT=$ws.good plan -- sh -c 'echo ok'
}
serves_on() {
	GRANT=$ws.good run -0 --separate-stderr granted -- sh -c 'echo ok'
	assert_output "ok"
	assert_equal "$stderr" ""
}

# refused WHAT [join options...] -- PROG...: refused 102 with exactly
# "grant refused: WHAT", nothing on stdout, and the sandbox serves on.
refused() {
	local what=$1
	shift
	run -102 --separate-stderr granted "$@"
	assert_output ""
	assert_equal "$stderr" "sbx-ns: fatal: grant refused: $what"
	serves_on
}

# The grant $ws.grant with its expiry set to $1, signed again with the key.
resign() { ns_grant_resign "$key" "$ws.grant" "$1"; }

@test "a granted command runs, its command line says the grant's kind; a one-shot --dry-run of the same options makes the same grant" {
	local mode
	for mode in root user; do
		ws=$(ns_ws)
		srv_up "$mode"
		plan -- sh -c 'echo ran; cat'
		run -0 --separate-stderr granted -- sh -c 'echo ran; cat'
		assert_output "ran"
		assert_equal "$stderr" ""
		# Its stdin is bound too: the same bytes run, others do not.
		printf 'line 1\nline 2\n' >"$ws.in"
		GRANT_OPTS="--stdin-file $ws.in" plan -- sh -c 'echo ran; cat'
		run -0 --separate-stderr "${JOIN[@]}" --grant-fd 3 -- sh -c 'echo ran; cat' 3<"$ws.grant" <"$ws.in"
		assert_output "ran
line 1
line 2"
		run -102 --separate-stderr "${JOIN[@]}" --grant-fd 3 -- sh -c 'echo ran; cat' 3<"$ws.grant" </dev/null
		assert_equal "$stderr" "sbx-ns: fatal: grant refused: stdin differs from the grant"
		# The one-shot's dry run of the server's options: the same plan, the same grant.
		plan -- sh -c 'echo ran; cat'
		if [ "$mode" = root ]; then
			sbx-ns "${id[@]}" --workspace "$ws" --ro "$NS_DIR/bin" --net none --dry-run -- sh -c 'echo ran; cat' \
				</dev/null >"$ws.plan1"
		else
			as_user sbx-ns --workspace "$ws" --ro "$NS_DIR/bin" --net none --dry-run -- sh -c 'echo ran; cat' \
				</dev/null >"$ws.plan1"
		fi
		"${CHECK[@]}" grant --key "$key" --plan "$ws.plan1" >"$ws.grant1"
		run -0 cmp "$ws.grant" "$ws.grant1"
		srv_down
		run -0 grep -c '"event":"command",' "$SRV/status"
		assert_output 2
		run -0 grep '"event":"command",' "$SRV/status"
		assert_line --index 0 --regexp '^\{"tool":"sbx-ns","event":"command","id":1,"pid":[0-9]+,"argv":"sh -c echo ran; cat","grant":"plan"\}$'
		assert_line --index 1 --regexp '^\{"tool":"sbx-ns","event":"command","id":2,"pid":[0-9]+,"argv":"sh -c echo ran; cat","grant":"plan"\}$'
	done
}

@test "without a grant every command is refused 102, and the sandbox serves on; a sandbox without --grant-key takes none" {
	srv_up
	good_grant
	local v
	for v in "-- true" "--detach -- true" "--cwd /tmp -- true"; do
		# shellcheck disable=SC2086
		run -102 --separate-stderr "${JOIN[@]}" $v </dev/null
		assert_output ""
		assert_equal "$stderr" "sbx-ns: fatal: grant refused: this sandbox runs only granted commands (it was started with --grant-key): give one with sbx-ns --join PATH --grant-fd FD"
		serves_on
	done
	# The other verbs take no grant: they run nothing.
	run -0 --separate-stderr "${JOIN[@]}" --jobs
	assert_line --index 0 "1 ended 0 sh -c echo ok"
	srv_down
	GRANT_KEY= srv_up
	run -0 --separate-stderr "${JOIN[@]}" --dry-run -- true
	cp "$ws.good" "$ws.grant"
	run -100 --separate-stderr granted -- sh -c 'echo ok'
	assert_output ""
	assert_equal "$stderr" "sbx-ns: usage: --grant-fd: this sandbox checks no grants (it was started without --grant-key)"
	run -0 --separate-stderr "${JOIN[@]}" -- sh -c 'echo ungranted' </dev/null
	assert_output "ungranted"
	srv_down
}

@test "a tampered, forged, truncated, oversized, NUL-holding, endless or v1 grant is refused as the one-shot refuses it" {
	srv_up
	good_grant
	plan -- true
	cp "$ws.grant" "$ws.orig"
	# One hex digit of the argv digest changed.
	awk '/^argv=/ { v = substr($0, 6); $0 = "argv=" (substr(v, 1, 1) == "0" ? "1" : "0") substr(v, 2) } 1' \
		"$ws.orig" >"$ws.grant"
	run -0 diff <(grep -v '^argv=' "$ws.orig") <(grep -v '^argv=' "$ws.grant")
	refused "the signature does not verify (forged, or made with another key)" -- true
	# Signed with another key.
	head -c 32 /dev/urandom >"$key.other"
	chmod 0600 "$key.other"
	sbx-check grant --key "$key.other" --plan "$ws.plan" >"$ws.grant"
	refused "the signature does not verify (forged, or made with another key)" -- true
	head -c 300 "$ws.orig" >"$ws.grant"
	refused "malformed (line 8: expected 'stdin-sha256=')" -- true
	: >"$ws.grant"
	refused "malformed (empty)" -- true
	# These never leave the client: a request's words end at a NUL.
	head -c 3000 /dev/zero | tr '\0' a >"$ws.grant"
	refused "malformed (longer than the largest grant)" -- true
	{ head -c 100 "$ws.orig"; printf '\0'; tail -c +101 "$ws.orig"; } >"$ws.grant"
	refused "malformed (contains a NUL byte)" -- true
	run -102 --separate-stderr "${JOIN[@]}" --grant-fd 3 -- true 3< <(yes) </dev/null
	assert_equal "$stderr" "sbx-ns: fatal: grant refused: malformed (longer than the largest grant)"
	printf 'sbx-grant-v1\nargv=%064d\ncwd=%064d\nenv=%064d\nstdin-sha256=%064d\ntimeout-ms=0\nmac=%064d\n' 0 0 0 0 0 >"$ws.grant"
	refused "an sbx-grant-v1 grant binds only the command, not the sandbox; reissue it: sbx-ns OPTIONS --dry-run -- PROG ARGS >PLAN; sbx-check grant --key FILE --plan PLAN (or --kind argv for a grant of the command only)" -- true
	cp "$ws.orig" "$ws.grant"
	run -0 granted -- true
	srv_down
}

@test "a grant for another program, arguments, environment, directory or timeout is refused naming what differs" {
	local bin="$NS_DIR/bin.$BATS_TEST_NUMBER" early="$NS_DIR/early.$BATS_TEST_NUMBER"
	mkdir -p "$bin" "$early"
	cp /bin/true "$bin/tool"
	cp /bin/false "$early/tool"
	chmod 0755 "$bin/tool" "$early/tool"
	srv_up --ro "$bin" --ro "$early"
	good_grant
	plan -- sh -c 'echo ok'
	refused "argv differs from the grant" -- sh -c 'echo other'
	refused "argv, program differ from the grant" -- /bin/true
	refused "env differs from the grant" --setenv A=1 -- sh -c 'echo ok'
	refused "cwd differs from the grant" --cwd /tmp -- sh -c 'echo ok'
	refused "timeout differs from the grant" --timeout 5 -- sh -c 'echo ok'
	# The same name found earlier on the command's own PATH: another file.
	GRANT_OPTS= plan --setenv "PATH=$bin:$early" -- tool
	run -0 --separate-stderr granted --setenv "PATH=$bin:$early" -- tool
	assert_equal "$stderr" ""
	refused "env, program differ from the grant" --setenv "PATH=$early:$bin" -- tool
	# The request's --setenv, --cwd and --timeout are the plan's.
	plan --setenv A=1 --cwd /tmp --timeout 5 -- sh -c 'echo "$A $PWD"'
	run -0 --separate-stderr granted --setenv A=1 --cwd /tmp --timeout 5 -- sh -c 'echo "$A $PWD"'
	assert_output "1 /tmp"
	srv_down
}

@test "a grant for another sandbox is refused: another --net, --ro, --uid, --deny-write, --quiet-denials" {
	srv_up
	good_grant
	local opts o=() uid=$((SBX_TEST_UID + 1))
	for opts in "--net loopback|net, filters differ" "--net host|net, filters differ" \
		"--ro $NS_DIR/ws|mounts differs" "--deny-write nothing|deny-write differs" \
		"--quiet-denials|filters differs" "--uid $uid --gid $uid|identity, mounts differ"; do
		read -r -a o <<<"${opts%%|*}"
		# (the one-shot's plan of the server's options, one of them changed)
		[ "${o[0]}" = --uid ] || o+=("${id[@]}")
		[ "${o[0]}" = --net ] || o+=(--net none)
		sbx-ns --workspace "$ws" --ro "$NS_DIR/bin" "${o[@]}" --dry-run -- true </dev/null >"$ws.plan" 2>/dev/null
		sbx-check grant --key "$key" --plan "$ws.plan" >"$ws.grant"
		refused "${opts#*|} from the grant" -- true
	done
	srv_down
}

@test "an expired grant is refused with the one-shot's message; --expires lets it run until then" {
	srv_up
	good_grant
	GRANT_OPTS="--expires 3600" plan -- true
	run -0 --separate-stderr granted -- true
	resign 1700000000
	run -102 --separate-stderr granted -- true
	assert_output ""
	[[ $stderr =~ ^"sbx-ns: fatal: grant refused: expired at 2023-11-14T22:13:20Z ("[0-9]+" s ago); reissue it: sbx-ns OPTIONS --dry-run -- PROG ARGS >PLAN; sbx-check grant --key FILE --plan PLAN --expires SEC"$ ]]
	serves_on
	resign $(( $(date +%s) + 400 * 86400 ))
	run -102 --separate-stderr granted -- true
	[[ $stderr == "sbx-ns: fatal: grant refused: it expires at "*", more than 366 days ahead (made on a clock set wrong?); reissue it: "* ]]
	serves_on
	srv_down
}

@test "a single-use grant runs once: used twice it is refused; a dry run checks it without using it; no --grant-nonce-dir: refused" {
	local nd="$NS_DIR/nonces.$BATS_TEST_NUMBER"
	mkdir -m 0700 "$nd"
	srv_up --grant-nonce-dir "$nd"
	good_grant
	GRANT_OPTS="--single-use" plan -- sh -c 'echo once'
	run -0 grep -E '^nonce=[0-9a-f]{64}$' "$ws.grant"
	local nonce=${output#nonce=}
	run -0 --separate-stderr granted --dry-run -- sh -c 'echo once'
	assert_equal "$stderr" ""
	assert_output --partial '"event":"plan","argv":["sh","-c","echo once"]'
	[ ! -e "$nd/$nonce" ]
	run -0 --separate-stderr granted -- sh -c 'echo once'
	assert_output "once"
	[ -f "$nd/$nonce" ]
	refused "already used (single-use: its nonce is recorded in $nd/$nonce); make a new one: sbx-check grant --single-use ..." -- sh -c 'echo once'
	run -102 --separate-stderr granted --dry-run -- sh -c 'echo once'
	assert_equal "$stderr" "sbx-ns: fatal: grant refused: already used (single-use: its nonce is recorded in $nd/$nonce); make a new one: sbx-check grant --single-use ..."
	srv_down
	# A sandbox with nowhere to record it.
	srv_up
	good_grant
	GRANT_OPTS="--single-use" plan -- true
	refused "single-use (it carries a nonce) and no --grant-nonce-dir names where to record it" -- true
	srv_down
	rm -rf "$nd"
}

@test "eight joins racing on one single-use grant: exactly one runs" {
	local nd="$NS_DIR/nonces.$BATS_TEST_NUMBER" f="$NS_DIR/go.$BATS_TEST_NUMBER" i pids=() ok=0 used=0
	mkdir -m 0700 "$nd"
	mkfifo "$f"
	srv_up --grant-nonce-dir "$nd"
	GRANT_OPTS="--single-use" plan -- sh -c 'echo ran'
	# Every client reads its stdin whole before it asks: all block on the
	# fifo until the one writer closes it, then they race from there.
	exec 7<>"$f"
	for i in 1 2 3 4 5 6 7 8; do
		( set +e; sbx-ns --join "$SOCK" --grant-fd 3 -- sh -c 'echo ran' 3<"$ws.grant" <"$f" \
			>"$ws.out.$i" 2>"$ws.err.$i"
		  echo $? >"$ws.rc.$i" ) 7>&- &
		pids+=($!)
	done
	wait_for "[ \"\$(find /proc/[0-9]*/fd/0 -lname '$f' 2>/dev/null | wc -l)\" -eq 8 ]"
	exec 7>&-
	wait "${pids[@]}"
	for i in 1 2 3 4 5 6 7 8; do
		case $(cat "$ws.rc.$i") in
		0) ok=$((ok + 1)); assert_equal "$(cat "$ws.out.$i")" "ran" ;;
		102) used=$((used + 1)); assert_equal "$(cat "$ws.err.$i")" \
			"sbx-ns: fatal: grant refused: already used (single-use: its nonce is recorded in $nd/$(sed -n 's/^nonce=//p' "$ws.grant")); make a new one: sbx-check grant --single-use ..." ;;
		*) cat "$ws.err.$i"; false ;;
		esac
	done
	assert_equal "$ok" 1
	assert_equal "$used" 7
	assert_equal "$(ls "$nd" | wc -l)" 1
	srv_down
	rm -rf "$nd" "$f"
}

@test "the program changed after the grant was issued is refused; a bind that shows another file at its path: that file is hashed and run" {
	local bin="$NS_DIR/bin.$BATS_TEST_NUMBER"
	mkdir -p "$bin"
	cp /bin/true "$bin/tool"
	chmod 0755 "$bin/tool"
	srv_up --ro "$bin"
	good_grant
	plan -- "$bin/tool"
	run -0 granted -- "$bin/tool"
	# Rewritten in place (same inode, other bytes).
	cat /bin/false >"$bin/tool"
	refused "program differs from the grant" -- "$bin/tool"
	# Replaced by a copy of the granted bytes (another inode).
	cp /bin/true "$bin/tool.new"
	chmod 0755 "$bin/tool.new"
	mv "$bin/tool.new" "$bin/tool"
	refused "program differs from the grant" -- "$bin/tool"
	# Removed: the plan has no program then.
	rm "$bin/tool"
	refused "program differs from the grant" -- "$bin/tool"
	srv_down
	# A bind shows alt's file at d/tool: the plan hashes the file the
	# sandbox shows there, never the host's d/tool, and the grant runs it.
	local d="$NS_DIR/d.$BATS_TEST_NUMBER" alt="$NS_DIR/alt.$BATS_TEST_NUMBER"
	mkdir -p "$d" "$alt"
	cp /bin/true "$d/tool"
	printf '#!/bin/sh\necho planted >%s\n' "$ws/ran" >"$alt/tool"
	chmod 0755 "$d/tool" "$alt/tool"
	srv_up --ro-bind "$alt" "$d"
	good_grant
	plan -- "$d/tool"
	run -0 python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["program"]["sha256"])' "$ws.plan"
	assert_output "$(sha256sum <"$alt/tool" | cut -d' ' -f1)"
	run -0 --separate-stderr granted -- "$d/tool"
	assert_equal "$stderr" ""
	assert_equal "$(cat "$ws/ran")" planted
	# Rewritten since: refused at exec, and not run.
	rm "$ws/ran"
	printf '#!/bin/sh\necho other >%s\n' "$ws/ran" >"$alt/tool"
	refused "program differs from the grant" -- "$d/tool"
	[ ! -e "$ws/ran" ]
	srv_down
}

@test "an argv-only grant runs with the one-shot's warning; its command line says argv-only" {
	srv_up
	GRANT_OPTS="--kind argv" plan -- sh -c 'echo argv'
	run -0 --separate-stderr granted -- sh -c 'echo argv'
	assert_output "argv"
	assert_equal "$stderr" "sbx-ns: warning: the grant is argv-only: it binds the command (argv, cwd, env, stdin, timeout), not the sandbox (mounts, network, identity, filters, program); a plan grant binds both: sbx-check grant --plan"
	srv_down
	run -0 grep '"event":"command",' "$SRV/status"
	assert_output --regexp '^\{"tool":"sbx-ns","event":"command","id":1,"pid":[0-9]+,"argv":"sh -c echo argv","grant":"argv-only"\}$'
}

@test "--timeout is the command's and bound: a grant made with it runs only with it, and the command is killed at it" {
	srv_up
	good_grant
	plan --timeout 1 -- sleep 30
	refused "timeout differs from the grant" -- sleep 30
	run -104 --separate-stderr granted --timeout 1 -- sleep 30
	assert_output ""
	assert_equal "$stderr" "sbx-ns: killed: its --timeout expired: killed with its process group"
	serves_on
	srv_down
}

@test "a detached granted job: its stdin is empty, as the grant says; with its own stdin bound" {
	srv_up
	plan -- sh -c 'cat >/tmp/in; echo done >/tmp/job'
	run -0 --separate-stderr granted --detach --stdout /tmp/o --stderr /tmp/e -- sh -c 'cat >/tmp/in; echo done >/tmp/job'
	local id=$output
	run -0 "${JOIN[@]}" --wait-job "$id"
	plan -- sh -c 'cat /tmp/in /tmp/job'
	run -0 --separate-stderr granted -- sh -c 'cat /tmp/in /tmp/job'
	assert_output "done"
	srv_down
}

@test "the grant key never enters the sandbox: pid 1 holds no copy of it, the server does" {
	srv_up
	local p1
	p1=$(head -1 "$SRV/status" | sed -n 's/^{"tool":"sbx-ns","event":"namespaces","version":"[^"]*","pid":\([0-9]*\),.*/\1/p')
	[ -n "$p1" ]
	count() {
		python3 - "$1" "$key" <<'EOF'
import sys
pid, key = sys.argv[1], open(sys.argv[2], "rb").read()
n = 0
with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
    for line in maps:
        span, perm = line.split()[:2]
        if "r" not in perm:
            continue
        a, b = (int(x, 16) for x in span.split("-"))
        try:
            mem.seek(a)
            n += mem.read(b - a).count(key)
        except (OSError, OverflowError, ValueError):
            pass
print(n)
EOF
	}
	run -0 count "$SRV_PID"
	assert_output 1
	run -0 count "$p1"
	assert_output 0
	srv_down
}

@test "refusals of the options: --serve with --grant-fd or a first program under --grant-key; --join's --grant-fd with --pty, a verb or a terminal" {
	local s="$NS_DIR/srv.$BATS_TEST_NUMBER"
	mkdir -m 0700 "$s"
	run -100 --separate-stderr sbx-ns "${id[@]}" --workspace "$ws" --serve "$s/s" --grant-key "$key" --grant-fd 3 3</dev/null
	assert_equal "$stderr" "sbx-ns: usage: --serve: a living sandbox takes no --grant-fd: it runs no one program; with --grant-key FILE each command needs a grant of its own (sbx-ns --join PATH --grant-fd FD -- prog args)"
	run -100 --separate-stderr sbx-ns "${id[@]}" --workspace "$ws" --serve "$s/s" --grant-key "$key" -- true </dev/null
	assert_equal "$stderr" "sbx-ns: usage: --serve with --grant-key takes no first program: every command of a granted sandbox runs under a grant of its own; run it with sbx-ns --join PATH --grant-fd FD once the sandbox is ready"
	run -100 --separate-stderr sbx-ns "${id[@]}" --workspace "$ws" --serve "$s/s" --grant-fd 3 3</dev/null
	assert_equal "$stderr" "sbx-ns: usage: --serve: a living sandbox takes no --grant-fd: it runs no one program; with --grant-key FILE each command needs a grant of its own (sbx-ns --join PATH --grant-fd FD -- prog args)"
	run -100 --separate-stderr sbx-ns "${id[@]}" --workspace "$ws" --serve "$s/s" --grant-nonce-dir "$s"
	assert_equal "$stderr" "sbx-ns: usage: --grant-nonce-dir needs --grant-key"
	# An unsafe nonce directory stops the server before it serves.
	chmod 0777 "$s"
	run -102 --separate-stderr sbx-ns "${id[@]}" --workspace "$ws" --serve "$s/s" --grant-key "$key" --grant-nonce-dir "$s"
	assert_equal "$stderr" "sbx-ns: fatal: grant nonce directory $s is unsafe: $s has mode 0777, writable by group or others: chmod go-w $s"
	chmod 0700 "$s"
	[ ! -e "$s/s" ]
	srv_up
	: >"$ws.grant"
	run -100 --separate-stderr granted --pty -- true
	assert_equal "$stderr" "sbx-ns: usage: --pty and --grant-fd are exclusive: a grant binds the command's stdin, and a terminal's is not bound"
	run -100 --separate-stderr granted --jobs
	assert_equal "$stderr" "sbx-ns: usage: --grant-fd and --dry-run are for running a command"
	run -100 --separate-stderr "${JOIN[@]}" --dry-run --detach -- true
	assert_equal "$stderr" "sbx-ns: usage: --dry-run shows a command's plan: no --pty, --detach, --stdout, --stderr, --memory, --pids or --cpu"
	run -100 --separate-stderr script -qec "$(printf '%q ' "${JOIN[@]}") --grant-fd 3 -- true 3<$ws.grant </dev/null" /dev/null
	assert_output --partial "sbx-ns: usage: --grant-fd: fd 1 is a terminal, which never enters the sandbox, and a granted command gets no pty: redirect it"
	srv_down
}

@test "a granted command's stdin: exactly 64 MiB runs; endless (/dev/zero) or one byte more is refused (100) by the client, and by the server from a hand-made client, with the one-shot's message; the sandbox serves on" {
	local big="sbx-ns: usage: --grant-fd: stdin is larger than 64 MiB, the most sbx-ns reads for a granted command (its grant binds every byte): give larger input as a file the command opens"
	srv_up
	good_grant
	head -c $((64 << 20)) /dev/zero >"$ws.in"
	GRANT_OPTS="--stdin-file $ws.in" plan -- wc -c
	run -0 --separate-stderr "${JOIN[@]}" --grant-fd 3 -- wc -c 3<"$ws.grant" <"$ws.in"
	assert_output "67108864"
	assert_equal "$stderr" ""
	run -100 --separate-stderr "${JOIN[@]}" --grant-fd 3 -- wc -c 3<"$ws.grant" </dev/zero
	assert_output ""
	assert_equal "$stderr" "$big"
	serves_on
	echo >>"$ws.in"
	run -100 --separate-stderr "${JOIN[@]}" --grant-fd 3 -- wc -c 3<"$ws.grant" <"$ws.in"
	assert_output ""
	assert_equal "$stderr" "$big"
	serves_on
	# A client of its own that sends a file in memory one byte too big
	# (sparse: nothing is read of it).
	run -0 python3 - "$SOCK" "$ws.grant" <<'EOF'
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
mfd = os.memfd_create("in")
os.ftruncate(mfd, (64 << 20) + 1)
socket.send_fds(s, [b"run\0grant=" + open(sys.argv[2], "rb").read() + b"\0--\0wc\0-c\0"], [mfd, 1, 2])
print(s.recv(65536).decode())
EOF
	assert_output "error 100 ${big#sbx-ns: usage: }"
	serves_on
	rm -f "$ws.in"
	srv_down
}

@test "hand-made requests: a grant with a pipe for stdin, two grants, a grant with a pty, a plan with fds: refused; the sandbox serves on" {
	srv_up
	good_grant
	plan -- true
	raw() {
		python3 - "$SOCK" "$ws.grant" "$1" <<'EOF'
import os, socket, sys
path, grant, case = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(path)
w = lambda *x: b"".join(v.encode() + b"\0" for v in x)
r, wr = os.pipe()
os.close(wr)
mfd = os.memfd_create("in")
if case == "pipe":
    socket.send_fds(s, [w("run", "grant=" + grant, "--", "true")], [r, 1, 2])
elif case == "two":
    socket.send_fds(s, [w("run", "grant=" + grant, "grant=" + grant, "--", "true")], [mfd, 1, 2])
elif case == "pty":
    s.send(w("run", "grant=" + grant, "pty=24x80", "--", "true"))
elif case == "planfds":
    socket.send_fds(s, [w("plan", "grant=" + grant, "--", "true")], [mfd, 1])
elif case == "memfd":
    socket.send_fds(s, [w("run", "grant=" + grant, "--", "true")], [mfd, 1, 2])
print(s.recv(65536).decode())
EOF
	}
	run -0 raw pipe
	assert_output "error 100 invalid request: a granted command's stdin is a file in memory (sbx-ns --join --grant-fd sends a sealed copy of its own)"
	serves_on
	run -0 raw two
	assert_output "error 100 invalid request: two grants"
	serves_on
	run -0 raw pty
	assert_output "error 100 --pty: a granted command gets no terminal, since its grant binds its stdin: redirect its stdin, stdout and stderr"
	serves_on
	run -0 raw planfds
	assert_output "error 100 invalid request: 2 fds with it"
	serves_on
	# An unsealed file in memory is copied, and what was copied runs.
	run -0 raw memfd
	assert_output "started"
	serves_on
	srv_down
}

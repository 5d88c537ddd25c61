#!/usr/bin/env bats
# Plan grants in sbx-ns: a grant made with `sbx-check grant --plan` from a
# --dry-run binds the whole sandbox (mounts with their identities, network,
# deny-write, identity, filters, Landlock, policy, the program's file and
# content); a run whose plan differs is refused (102) naming what differs.
# Expiry, single use (nonces under --grant-nonce-dir, raced), old grants,
# the argv kind, and bad input of every new option.

bats_require_minimum_version 1.5.0
load helpers
load ns

setup() {
	ws=$(ns_ws)
	key="$NS_DIR/key.$BATS_TEST_NUMBER"
	head -c 32 /dev/urandom >"$key"
	chmod 0600 "$key"
	secret="$NS_DIR/secret.$BATS_TEST_NUMBER"
	mkdir -p "$secret"
	echo "s3cret" >"$secret/token"
	id=(--uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID")
}

# The run the grant is for: --net none, the workspace only.
base=(--net none)

# plan ARGS... -- PROG...: the dry run's plan into $ws.plan, a grant for it
# (with $GRANT_OPTS) into $ws.grant.
plan() {
	sbx-ns --workspace "$ws" "${id[@]}" --dry-run "$@" >"$ws.plan" </dev/null
	# shellcheck disable=SC2086
	sbx-check grant --key "$key" --plan "$ws.plan" ${GRANT_OPTS:-} >"$ws.grant"
}

# granted ARGS... -- PROG...: run sbx-ns with the grant on fd 3, the status
# on fd 4 into $ws.status, stdin empty.
granted() {
	sbx-ns --workspace "$ws" --grant-fd 3 --grant-key "$key" --status-fd 4 "$@" \
		3<"$ws.grant" 4>"$ws.status" </dev/null
}

refused() {
	local what=$1
	shift
	run -102 --separate-stderr granted "$@"
	assert_output ""
	assert_equal "$stderr" "sbx-ns: fatal: grant refused: $what from the grant"
	run -0 tail -1 "$ws.status"
	assert_output --partial '"event":"exit"'
	assert_output --partial '"code":102,"stage":"setup"'
}

@test "the grant of a --net none plan runs that plan, and the status line names its kind" {
	plan "${base[@]}" -- sh -c 'echo ran'
	run -0 --separate-stderr granted "${id[@]}" "${base[@]}" -- sh -c 'echo ran'
	assert_output "ran"
	assert_equal "$stderr" ""
	run -0 grep '"event":"started"' "$ws.status"
	assert_output --partial '"grant":"plan"'
}

@test "the reproduced attack: --net host, an extra --ro, --deny-write, another --uid are each refused by name" {
	plan "${base[@]}" -- sh -c 'cat "$0"; echo ran' "$secret/token"
	local cmd=(-- sh -c 'cat "$0"; echo ran' "$secret/token")
	refused "net, filters differ" "${id[@]}" --net host "${cmd[@]}"
	refused "mounts differs" "${id[@]}" "${base[@]}" --ro "$secret" "${cmd[@]}"
	refused "deny-write differs" "${id[@]}" "${base[@]}" --deny-write nothing "${cmd[@]}"
	refused "deny-write differs" "${id[@]}" "${base[@]}" --deny-write .env --deny-write '.git/**' "${cmd[@]}"
	# (the first line warns that uid 4321 cannot write to the workspace)
	run -102 --separate-stderr granted --uid 4321 --gid 4321 "${base[@]}" "${cmd[@]}"
	assert_output ""
	assert_equal "${stderr_lines[1]}" "sbx-ns: fatal: grant refused: identity, mounts differ from the grant"
	assert_equal "${#stderr_lines[@]}" 2
	run -102 --separate-stderr granted --uid 4321 --gid 4321 --net host --ro "$secret" --deny-write nothing "${cmd[@]}"
	assert_equal "${stderr_lines[1]}" "sbx-ns: fatal: grant refused: identity, mounts, deny-write, net, filters differ from the grant"
	# The seccomp denials mode and Landlock's requirement are bound too.
	refused "filters differs" "${id[@]}" "${base[@]}" --quiet-denials "${cmd[@]}"
	refused "landlock differs" "${id[@]}" "${base[@]}" --require-landlock "${cmd[@]}"
	# None of that changed the grant: the planned run still runs.
	run -0 --separate-stderr granted "${id[@]}" "${base[@]}" "${cmd[@]}"
	assert_output --partial "ran"
}

@test "a mount whose identity changed is refused: the workspace replaced by another directory at its path" {
	plan "${base[@]}" -- true
	mv "$ws" "$ws.old"
	mkdir "$ws"
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$ws"
	refused "mounts differs" "${id[@]}" "${base[@]}" -- true
	rmdir "$ws"
	mv "$ws.old" "$ws"
	run -0 granted "${id[@]}" "${base[@]}" -- true
}

@test "another binary at the program's path, or found first on PATH, is refused naming program" {
	local bin="$NS_DIR/bin.$BATS_TEST_NUMBER" early="$NS_DIR/early.$BATS_TEST_NUMBER"
	mkdir -p "$bin" "$early"
	cp /bin/true "$bin/tool"
	chmod 0755 "$bin/tool"
	plan "${base[@]}" --ro "$bin" -- "$bin/tool"
	run -0 granted "${id[@]}" "${base[@]}" --ro "$bin" -- "$bin/tool"
	# Rewritten in place (same inode, other bytes).
	cat /bin/false >"$bin/tool"
	refused "program differs" "${id[@]}" "${base[@]}" --ro "$bin" -- "$bin/tool"
	# Replaced by a copy of the same bytes (another inode).
	cp /bin/true "$bin/tool.new"
	chmod 0755 "$bin/tool.new"
	mv "$bin/tool.new" "$bin/tool"
	refused "program differs" "${id[@]}" "${base[@]}" --ro "$bin" -- "$bin/tool"
	# By name through the command path: the same name found earlier on it.
	plan "${base[@]}" --ro "$bin" --ro "$early" --command-path "$early:$bin" -- tool
	run -0 granted "${id[@]}" "${base[@]}" --ro "$bin" --ro "$early" --command-path "$early:$bin" -- tool
	cp /bin/false "$early/tool"
	chmod 0755 "$early/tool"
	refused "program differs" "${id[@]}" "${base[@]}" --ro "$bin" --ro "$early" --command-path "$early:$bin" -- tool
}

@test "the file the sandbox would run is checked at exec: a bind that shows another file there is refused" {
	local d="$NS_DIR/d.$BATS_TEST_NUMBER" alt="$NS_DIR/alt.$BATS_TEST_NUMBER" marker="$ws/ran"
	mkdir -p "$d" "$alt"
	cp /bin/true "$d/tool"
	printf '#!/bin/sh\necho planted >%s\n' "$marker" >"$alt/tool"
	chmod 0755 "$d/tool" "$alt/tool"
	# The host's lookup finds d/tool (hashed); the sandbox shows alt's at that path.
	plan "${base[@]}" --ro-bind "$alt" "$d" -- "$d/tool"
	run -102 --separate-stderr granted "${id[@]}" "${base[@]}" --ro-bind "$alt" "$d" -- "$d/tool"
	assert_equal "$stderr" "sbx-ns: fatal: grant refused: program differs from the grant ($d/tool in the sandbox is not the file $d/tool that was hashed, or it changed since)"
	[ ! -e "$marker" ]
	run -0 tail -1 "$ws.status"
	assert_output '{"tool":"sbx-ns","event":"exit","code":102,"stage":"setup"}'
}

@test "the plan names the program's file, content and allow-exec entry" {
	sbx-ns --workspace "$ws" "${id[@]}" --allow-exec /bin/true --dry-run -- true >"$ws.plan"
	python3 - "$ws.plan" <<'EOF'
import hashlib, json, os, sys
p = json.load(open(sys.argv[1]))["program"]
real = "/usr/bin/true" if p["path"] == "/usr/bin/true" else "/bin/true"
st = os.stat(real)
want = {"path": p["path"], "dev": st.st_dev, "ino": st.st_ino, "size": st.st_size,
        "sha256": hashlib.sha256(open(real, "rb").read()).hexdigest(), "allow_exec": "/bin/true"}
assert p == want, (p, want)
EOF
	sbx-ns --workspace "$ws" "${id[@]}" --dry-run -- no-such-program-here >"$ws.plan"
	run -0 python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["program"])' "$ws.plan"
	assert_output "{'path': None}"
}

@test "an expired grant is refused with when and how to reissue it; --expires SEC lets it run until then" {
	GRANT_OPTS="--expires 3600" plan "${base[@]}" -- true
	run -0 grep -E '^expires=[0-9]+$' "$ws.grant"
	local exp=${output#expires=} now
	now=$(date +%s)
	((exp >= now + 3590 && exp <= now + 3600))
	run -0 --separate-stderr granted "${id[@]}" "${base[@]}" -- true
	# The same grant with its expiry moved into the past, signed again with
	# the key (as the documented MAC: HMAC over every line before mac=).
	resign() { ns_grant_resign "$key" "$ws.grant" "$1"; }
	resign 1700000000
	run -102 --separate-stderr granted "${id[@]}" "${base[@]}" -- true
	assert_output ""
	[[ $stderr =~ ^"sbx-ns: fatal: grant refused: expired at 2023-11-14T22:13:20Z ("[0-9]+" s ago); reissue it: sbx-ns OPTIONS --dry-run -- PROG ARGS >PLAN; sbx-check grant --key FILE --plan PLAN --expires SEC"$ ]]
	# Expired a second ago: refused as well (the end is exclusive).
	resign "$(date +%s)"
	run -102 --separate-stderr granted "${id[@]}" "${base[@]}" -- true
	[[ $stderr == "sbx-ns: fatal: grant refused: expired at "* ]]
	# A grant that claims to last years (made on a clock set far ahead).
	resign $(( $(date +%s) + 400 * 86400 ))
	run -102 --separate-stderr granted "${id[@]}" "${base[@]}" -- true
	assert_output ""
	[[ $stderr == "sbx-ns: fatal: grant refused: it expires at "*", more than 366 days ahead (made on a clock set wrong?); reissue it: "* ]]
	# The expiry is signed: edited without the key, it is a forgery.
	sed -i 's/^expires=.*/expires=9999999999/' "$ws.grant"
	run -102 --separate-stderr granted "${id[@]}" "${base[@]}" -- true
	assert_equal "$stderr" "sbx-ns: fatal: grant refused: the signature does not verify (forged, or made with another key)"
}

@test "sbx-check grant refuses a zero, negative, overflowing, garbage, repeated or too long --expires" {
	sbx-ns --workspace "$ws" "${id[@]}" --dry-run -- true >"$ws.plan"
	local t
	for t in "0|zero not allowed" "-1|negative" "x|not a number" "1x|trailing garbage" \
		"99999999999999999999|overflow" "|empty" "31622401|too large"; do
		run -100 --separate-stderr sbx-check grant --key "$key" --plan "$ws.plan" --expires "${t%%|*}"
		assert_output ""
		assert_equal "$stderr" "sbx-check: usage: --expires: invalid number '${t%%|*}': ${t#*|}"
	done
	run -100 --separate-stderr sbx-check grant --key "$key" --plan "$ws.plan" --expires 5 --expires 5
	assert_equal "$stderr" "sbx-check: usage: --expires given twice"
	run -100 --separate-stderr sbx-check grant --key "$key" --plan "$ws.plan" --single-use --single-use
	assert_equal "$stderr" "sbx-check: usage: --single-use given twice"
	run -100 --separate-stderr sbx-check grant --key "$key" --plan "$ws.plan" --single-use=1
	assert_equal "$stderr" "sbx-check: usage: --single-use takes no value"
	run -0 sbx-check grant --key "$key" --plan "$ws.plan" --expires 31622400
}

@test "sbx-check grant: a grant of the command only must be asked for as --kind argv" {
	sbx-ns --workspace "$ws" "${id[@]}" --dry-run -- true >"$ws.plan"
	run -100 --separate-stderr sbx-check grant --key "$key" -- true
	assert_equal "$stderr" "sbx-check: usage: grant: without --plan a grant binds only the command: give --plan (from sbx-ns --dry-run), or --kind argv for the weaker kind"
	run -100 --separate-stderr sbx-check grant --key "$key" --kind plan -- true
	assert_equal "$stderr" "sbx-check: usage: --kind plan needs --plan or --plan-fd"
	run -100 --separate-stderr sbx-check grant --key "$key" --kind full --plan "$ws.plan"
	assert_equal "$stderr" "sbx-check: usage: --kind: invalid kind 'full': plan or argv"
	run -100 --separate-stderr sbx-check grant --key "$key" --kind "" --plan "$ws.plan"
	assert_equal "$stderr" "sbx-check: usage: --kind: invalid kind '': plan or argv"
	run -100 --separate-stderr sbx-check grant --key "$key" --kind argv --kind argv -- true
	assert_equal "$stderr" "sbx-check: usage: --kind given twice"
	# The plan's argv kind: its command lines only.
	run -0 sbx-check grant --key "$key" --kind argv --plan "$ws.plan"
	assert_line --index 1 "kind=argv"
	assert_equal "${#lines[@]}" 10
	run -0 sbx-check grant --key "$key" --plan "$ws.plan"
	assert_line --index 1 "kind=plan"
	assert_equal "${#lines[@]}" 18
	# A plan with a key no grant field covers is refused, never half bound.
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["capabilities"]=[]; print(json.dumps(d))' \
		"$ws.plan" >"$ws.plan2"
	run -100 --separate-stderr sbx-check grant --key "$key" --plan "$ws.plan2"
	assert_equal "$stderr" "sbx-check: usage: --plan: $ws.plan2: the plan has a key no grant field covers: \"capabilities\""
}

@test "an argv grant runs with a warning and its status line says argv-only" {
	GRANT_OPTS="--kind argv" plan "${base[@]}" -- true
	run -0 --separate-stderr granted "${id[@]}" --net host -- true
	assert_equal "$stderr" "sbx-ns: warning: the grant is argv-only: it binds the command (argv, cwd, env, stdin, timeout), not the sandbox (mounts, network, identity, filters, program); a plan grant binds both: sbx-check grant --plan"
	run -0 grep '"event":"started"' "$ws.status"
	assert_output --partial '"grant":"argv-only"'
}

@test "an old v1 grant is refused with the command that reissues it" {
	printf 'sbx-grant-v1\nargv=%064d\ncwd=%064d\nenv=%064d\nstdin-sha256=%064d\ntimeout-ms=0\nmac=%064d\n' 0 0 0 0 0 >"$ws.grant"
	run -102 --separate-stderr granted "${id[@]}" -- true
	assert_output ""
	assert_equal "$stderr" "sbx-ns: fatal: grant refused: an sbx-grant-v1 grant binds only the command, not the sandbox; reissue it: sbx-ns OPTIONS --dry-run -- PROG ARGS >PLAN; sbx-check grant --key FILE --plan PLAN (or --kind argv for a grant of the command only)"
}

@test "every line of a plan grant tampered, the grant truncated, or endless, is refused" {
	plan "${base[@]}" -- true
	cp "$ws.grant" "$ws.good"
	local n ln line
	n=$(wc -l <"$ws.good")
	for ((ln = 2; ln <= n; ln++)); do
		line=$(sed -n "${ln}p" "$ws.good")
		# one hex digit (or the kind's, expiry's, nonce's value) changed on line ln
		awk -v i="$ln" 'NR == i {
			split($0, kv, "="); v = kv[2]
			if (v == "plan") v = "argv"; else if (v == "never") v = "1999999999";
			else if (v == "none") v = sprintf("%064d", 7);
			else v = (substr(v, 1, 1) == "0" ? "1" : "0") substr(v, 2)
			$0 = kv[1] "=" v } 1' "$ws.good" >"$ws.grant"
		run -102 --separate-stderr granted "${id[@]}" "${base[@]}" -- true
		if [ "$line" = "kind=plan" ]; then
			assert_equal "$stderr" "sbx-ns: fatal: grant refused: malformed (line 10: expected 'mac=')"
		else
			assert_equal "$stderr" "sbx-ns: fatal: grant refused: the signature does not verify (forged, or made with another key)"
		fi
	done
	head -c 300 "$ws.good" >"$ws.grant"
	run -102 --separate-stderr granted "${id[@]}" "${base[@]}" -- true
	assert_equal "$stderr" "sbx-ns: fatal: grant refused: malformed (line 8: expected 'stdin-sha256=')"
	run -102 --separate-stderr sbx-ns --workspace "$ws" --grant-fd 3 --grant-key "$key" "${id[@]}" -- true 3< <(yes) </dev/null
	assert_equal "$stderr" "sbx-ns: fatal: grant refused: malformed (longer than the largest grant)"
	cp "$ws.good" "$ws.grant"
	run -0 granted "${id[@]}" "${base[@]}" -- true
}

@test "a single-use grant runs once, a dry run does not use it, a replay is refused" {
	local nd="$NS_DIR/nonces.$BATS_TEST_NUMBER"
	mkdir -m 0700 "$nd"
	GRANT_OPTS="--single-use" plan "${base[@]}" -- true
	run -0 grep -E '^nonce=[0-9a-f]{64}$' "$ws.grant"
	local nonce=${output#nonce=}
	# Without a place to record it: refused, never silently reusable.
	refused_nodir() {
		run -102 --separate-stderr granted "${id[@]}" "${base[@]}" -- true
		assert_equal "$stderr" "sbx-ns: fatal: grant refused: single-use (it carries a nonce) and no --grant-nonce-dir names where to record it"
	}
	refused_nodir
	run -0 --separate-stderr granted "${id[@]}" "${base[@]}" --grant-nonce-dir "$nd" --dry-run -- true
	run -0 --separate-stderr granted "${id[@]}" "${base[@]}" --grant-nonce-dir "$nd" --dry-run -- true
	[ ! -e "$nd/$nonce" ]
	run -0 --separate-stderr granted "${id[@]}" "${base[@]}" --grant-nonce-dir "$nd" -- true
	assert_equal "$stderr" ""
	[ -f "$nd/$nonce" ]
	run -102 --separate-stderr granted "${id[@]}" "${base[@]}" --grant-nonce-dir "$nd" -- true
	assert_output ""
	assert_equal "$stderr" "sbx-ns: fatal: grant refused: already used (single-use: its nonce is recorded in $nd/$nonce); make a new one: sbx-check grant --single-use ..."
	run -102 --separate-stderr granted "${id[@]}" "${base[@]}" --grant-nonce-dir "$nd" --dry-run -- true
	assert_equal "$stderr" "sbx-ns: fatal: grant refused: already used (single-use: its nonce is recorded in $nd/$nonce); make a new one: sbx-check grant --single-use ..."
	# A multi-use grant with the directory given runs as often as asked.
	plan "${base[@]}" -- true
	run -0 granted "${id[@]}" "${base[@]}" --grant-nonce-dir "$nd" -- true
	run -0 granted "${id[@]}" "${base[@]}" --grant-nonce-dir "$nd" -- true
	rm -rf "$nd"
}

@test "eight runs racing on one single-use grant: exactly one runs" {
	local nd="$NS_DIR/nonces.$BATS_TEST_NUMBER" f="$NS_DIR/go.$BATS_TEST_NUMBER" i pids=() ok=0 used=0
	mkdir -m 0700 "$nd"
	mkfifo "$f"
	GRANT_OPTS="--single-use" plan "${base[@]}" -- sh -c 'echo ran'
	# All of them block reading stdin (empty, as granted) until the one
	# writer closes it: then they race from the same point.
	exec 7<>"$f"
	for i in 1 2 3 4 5 6 7 8; do
		( set +e; sbx-ns --workspace "$ws" "${id[@]}" "${base[@]}" --grant-fd 3 --grant-key "$key" \
			--grant-nonce-dir "$nd" -- sh -c 'echo ran' 3<"$ws.grant" <"$f" >"$ws.out.$i" 2>"$ws.err.$i"
		  echo $? >"$ws.rc.$i" ) 7>&- &
		pids+=($!)
	done
	# every one holds it as its stdin (and only the test holds it as fd 7)
	wait_for "[ \"\$(find /proc/[0-9]*/fd/0 -lname '$f' 2>/dev/null | wc -l)\" -eq 8 ]"
	exec 7>&-
	wait "${pids[@]}"
	for i in 1 2 3 4 5 6 7 8; do
		case $(cat "$ws.rc.$i") in
		0) ok=$((ok + 1)); assert_equal "$(cat "$ws.out.$i")" "ran" ;;
		102) used=$((used + 1)); run -0 cat "$ws.err.$i"; assert_output --partial "grant refused: already used" ;;
		*) cat "$ws.err.$i"; false ;;
		esac
	done
	assert_equal "$ok" 1
	assert_equal "$used" 7
	assert_equal "$(ls "$nd" | wc -l)" 1
	rm -rf "$nd" "$f"
}

@test "the nonce directory is refused when relative, a symlink, not a directory, writable by others, someone else's, missing or inside the workspace" {
	local nd="$NS_DIR/nonces.$BATS_TEST_NUMBER"
	mkdir -m 0700 "$nd"
	GRANT_OPTS="--single-use" plan "${base[@]}" -- true
	bad() {
		local code=$1 want=$2
		shift 2
		run "-$code" --separate-stderr granted "${id[@]}" "${base[@]}" "$@" -- true
		assert_output ""
		assert_equal "$stderr" "sbx-ns: $want"
	}
	bad 100 "usage: --grant-nonce-dir: invalid path 'nonces': not absolute" --grant-nonce-dir nonces
	bad 100 "usage: --grant-nonce-dir: invalid path '': empty" --grant-nonce-dir ""
	bad 100 "usage: --grant-nonce-dir given twice" --grant-nonce-dir "$nd" --grant-nonce-dir "$nd"
	run -100 --separate-stderr sbx-ns --workspace "$ws" "${id[@]}" --grant-nonce-dir "$nd" -- true
	assert_equal "$stderr" "sbx-ns: usage: --grant-nonce-dir needs --grant-fd and --grant-key"
	ln -s "$nd" "$nd.link"
	bad 102 "fatal: grant nonce directory $nd.link is unsafe: $nd.link is a symbolic link" --grant-nonce-dir "$nd.link"
	mkdir -m 0700 "$nd/sub"
	bad 102 "fatal: grant nonce directory $nd.link/sub is unsafe: $nd.link is a symbolic link" --grant-nonce-dir "$nd.link/sub"
	bad 111 "fatal: unable to open the grant nonce directory $NS_DIR/x (at $NS_DIR/x): No such file or directory" --grant-nonce-dir "$NS_DIR//x/"
	bad 100 "usage: --grant-nonce-dir: invalid path '$nd/../x': '..' component" --grant-nonce-dir "$nd/../x"
	bad 100 "usage: --grant-nonce-dir: invalid path '/': the whole file system" --grant-nonce-dir /
	bad 100 "usage: --grant-nonce-dir: invalid path '/': the whole file system" --grant-nonce-dir //
	bad 111 "fatal: unable to open the grant nonce directory $nd.none (at $nd.none): No such file or directory" --grant-nonce-dir "$nd.none"
	touch "$nd.file"
	bad 111 "fatal: unable to open the grant nonce directory $nd.file (at $nd.file): Not a directory" --grant-nonce-dir "$nd.file"
	chmod 0770 "$nd"
	bad 102 "fatal: grant nonce directory $nd is unsafe: $nd has mode 0770, writable by group or others: chmod go-w $nd" --grant-nonce-dir "$nd"
	chmod 1777 "$nd"
	bad 102 "fatal: grant nonce directory $nd is unsafe: $nd has mode 1777, writable by group or others: chmod go-w $nd" --grant-nonce-dir "$nd"
	# An ancestor others may write to (and not sticky): they could swap DIR.
	chmod 0777 "$nd"
	bad 102 "fatal: grant nonce directory $nd/sub is unsafe: $nd has mode 0777, writable by group or others: chmod go-w $nd" --grant-nonce-dir "$nd/sub"
	chmod 0700 "$nd"
	chown "$SBX_TEST_UID" "$nd"
	bad 102 "fatal: grant nonce directory $nd is unsafe: $nd is owned by uid $SBX_TEST_UID (not root or the caller)" --grant-nonce-dir "$nd"
	bad 102 "fatal: grant nonce directory $nd/sub is unsafe: $nd is owned by uid $SBX_TEST_UID (not root or the caller)" --grant-nonce-dir "$nd/sub"
	chown 0 "$nd"
	# Inside the workspace (the command could delete its record), or
	# holding the workspace.
	mkdir -m 0700 "$ws/.nonces"
	# (owned by the command's user, the workspace is refused as an ancestor first)
	bad 102 "fatal: grant nonce directory $ws/.nonces is unsafe: $ws is owned by uid $SBX_TEST_UID (not root or the caller)" --grant-nonce-dir "$ws/.nonces"
	chown 0 "$ws"
	# (the first line warns that the command's uid cannot write to it now)
	bad_last() {
		run -102 --separate-stderr granted "${id[@]}" "${base[@]}" --grant-nonce-dir "$1" -- true
		assert_output ""
		assert_equal "${#stderr_lines[@]}" 2
		assert_equal "${stderr_lines[1]}" "sbx-ns: fatal: grant nonce directory $1 is unsafe: the sandbox's writable root --workspace $ws is, contains or lies inside it; choose a directory outside every writable root"
	}
	bad_last "$ws/.nonces"
	bad_last "$NS_DIR"
	chown "$SBX_TEST_UID" "$ws"
	# Through another writable root.
	local rw="$NS_DIR/rw.$BATS_TEST_NUMBER"
	mkdir -p "$rw/n"
	chmod 0700 "$rw/n"
	GRANT_OPTS="--single-use" plan "${base[@]}" --rw "$rw" -- true
	run -102 --separate-stderr granted "${id[@]}" "${base[@]}" --rw "$rw" --grant-nonce-dir "$rw/n" -- true
	assert_equal "$stderr" "sbx-ns: fatal: grant nonce directory $rw/n is unsafe: the sandbox's writable root --rw $rw is, contains or lies inside it; choose a directory outside every writable root"
	rm -rf "$nd" "$nd.link" "$nd.file" "$rw"
}

@test "a plan grant made and used by an unprivileged caller, with its own nonce directory" {
	local nd="$NS_DIR/unonces.$BATS_TEST_NUMBER"
	mkdir -m 0700 "$nd"
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$nd" "$key"
	as_user sbx-ns --workspace "$ws" "${base[@]}" --dry-run -- true >"$ws.plan" </dev/null
	as_user sbx-check grant --key "$key" --plan "$ws.plan" --single-use >"$ws.grant"
	run -0 --separate-stderr as_user sbx-ns --workspace "$ws" "${base[@]}" --grant-fd 3 --grant-key "$key" \
		--grant-nonce-dir "$nd" -- true 3<"$ws.grant" </dev/null
	assert_equal "$stderr" ""
	run -102 --separate-stderr as_user sbx-ns --workspace "$ws" "${base[@]}" --grant-fd 3 --grant-key "$key" \
		--grant-nonce-dir "$nd" -- true 3<"$ws.grant" </dev/null
	assert_output ""
	[[ $stderr == "sbx-ns: fatal: grant refused: already used "* ]]
	# The root caller's nonce directory is not the user's.
	run -102 --separate-stderr as_user sbx-ns --workspace "$ws" "${base[@]}" --grant-fd 3 --grant-key "$key" \
		--grant-nonce-dir "$NS_DIR" -- true 3<"$ws.grant" </dev/null
	[[ $stderr == "sbx-ns: fatal: grant nonce directory $NS_DIR is unsafe: "* ]]
	rm -rf "$nd"
}

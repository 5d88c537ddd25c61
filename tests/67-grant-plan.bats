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

teardown() { bg_end; }

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

@test "the plan hashes the file the sandbox will show at the program's path: a bind's, and a rewrite since is refused at exec" {
	local d="$NS_DIR/d.$BATS_TEST_NUMBER" alt="$NS_DIR/alt.$BATS_TEST_NUMBER" marker="$ws/ran"
	mkdir -p "$d" "$alt"
	cp /bin/true "$d/tool"
	printf '#!/bin/sh\necho planted >%s\n' "$marker" >"$alt/tool"
	chmod 0755 "$d/tool" "$alt/tool"
	plan "${base[@]}" --ro-bind "$alt" "$d" -- "$d/tool"
	run -0 python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["program"]["sha256"])' "$ws.plan"
	assert_output "$(sha256sum <"$alt/tool" | cut -d' ' -f1)"
	run -0 --separate-stderr granted "${id[@]}" "${base[@]}" --ro-bind "$alt" "$d" -- "$d/tool"
	assert_equal "$stderr" ""
	assert_equal "$(cat "$marker")" planted
	rm "$marker"
	printf '#!/bin/sh\necho other >%s\n' "$marker" >"$alt/tool"
	refused "program differs" "${id[@]}" "${base[@]}" --ro-bind "$alt" "$d" -- "$d/tool"
	[ ! -e "$marker" ]
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

# What a granted command's stdin may be at most: 64 MiB (read whole and
# hashed before anything runs), for a one-shot run as for a --join.
STDIN_BIG="sbx-ns: usage: --grant-fd: stdin is larger than 64 MiB, the most sbx-ns reads for a granted command (its grant binds every byte): give larger input as a file the command opens"

@test "a granted run's stdin: exactly 64 MiB runs; endless (/dev/zero) or one byte more is refused (100) naming the bound and the fix" {
	head -c $((64 << 20)) /dev/zero >"$ws.in"
	GRANT_OPTS="--stdin-file $ws.in" plan "${base[@]}" -- wc -c
	run -0 --separate-stderr sbx-ns --workspace "$ws" --grant-fd 3 --grant-key "$key" "${id[@]}" "${base[@]}" \
		-- wc -c 3<"$ws.grant" <"$ws.in"
	assert_output "67108864"
	assert_equal "$stderr" ""
	run -100 --separate-stderr sbx-ns --workspace "$ws" --grant-fd 3 --grant-key "$key" --status-fd 4 \
		"${id[@]}" "${base[@]}" -- wc -c 3<"$ws.grant" 4>"$ws.status" </dev/zero
	assert_output ""
	assert_equal "$stderr" "$STDIN_BIG"
	run -0 sed 's/,"version":"[^"]*"//' "$ws.status"
	assert_output '{"tool":"sbx-ns","event":"exit","code":100,"stage":"setup","error":"'"${STDIN_BIG#sbx-ns: usage: }"'"}'
	echo >>"$ws.in"
	run -100 --separate-stderr sbx-ns --workspace "$ws" --grant-fd 3 --grant-key "$key" "${id[@]}" "${base[@]}" \
		-- wc -c 3<"$ws.grant" <"$ws.in"
	assert_output ""
	assert_equal "$stderr" "$STDIN_BIG"
	rm -f "$ws.in"
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

# Expired single-use grants: their records go again. A grant's expiry is
# signed, so a grant that expired three days ago is made by signing one
# again (ns_grant_resign), and it is used while it was valid by a run whose
# clock (CLOCK_REALTIME, and only that run's) reads a minute before its
# expiry (tests/progs/clock-set.c): no test waits for a clock.

# clock_at T: CLOCK, the prefix that runs a program with its clock at T
# (seconds since 1970).
clock_at() {
	local f="$NS_DIR/now.$BATS_TEST_NUMBER"
	echo "$1" >"$f"
	CLOCK=("$SBX_TESTBIN/clock-set" --realtime "$f")
}

# granted_with GRANT ARGS...: sbx-ns with GRANT on fd 3, after the prefix
# in PRE (a clock, a mount namespace), stdin empty.
granted_with() {
	local g=$1
	shift
	"${PRE[@]}" sbx-ns --workspace "$ws" --grant-fd 3 --grant-key "$key" "${id[@]}" "${base[@]}" "$@" \
		3<"$g" </dev/null
}

utc() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }

# The refusal of a single-use grant expiring at $1 once $2's records of
# grants expiring up to $3 were removed.
pruned_msg() {
	echo "sbx-ns: fatal: grant refused: single-use and expiring at $(utc "$1"), and $2 holds no nonces of grants expiring up to $(utc "$3") any more (is the clock set back?); make a new one: sbx-check grant --single-use ..."
}

@test "a single-use grant's record names its expiry; an hour and more after that, the next granted run removes it, and the grant replayed is refused as expired, and with the clock set back as pruned" {
	local nd="$NS_DIR/nonces.$BATS_TEST_NUMBER" E h nonce fresh PRE=()
	mkdir -m 0700 "$nd"
	GRANT_OPTS="--single-use" plan "${base[@]}" -- true
	mv "$ws.grant" "$ws.fresh"
	fresh=$(sed -n 's/^nonce=//p' "$ws.fresh")
	GRANT_OPTS="--single-use" plan "${base[@]}" -- true
	E=$(($(date +%s) - 3 * 86400))
	h=$((E - E % 3600))
	ns_grant_resign "$key" "$ws.grant" "$E"
	nonce=$(sed -n 's/^nonce=//p' "$ws.grant")
	# Used while it was valid: recorded with its expiry, linked by its hour.
	clock_at $((E - 60))
	PRE=("${CLOCK[@]}")
	run -0 --separate-stderr granted_with "$ws.grant" --grant-nonce-dir "$nd" -- true
	assert_equal "$stderr" ""
	run -0 cat "$nd/$nonce"
	assert_output --regexp "^used $((E - 60)) pid [0-9]+ expires $E\$"
	[ "$nd/$nonce" -ef "$nd/expiring/$h/$nonce" ]
	run -102 --separate-stderr granted_with "$ws.grant" --grant-nonce-dir "$nd" -- true
	assert_equal "$stderr" "sbx-ns: fatal: grant refused: already used (single-use: its nonce is recorded in $nd/$nonce); make a new one: sbx-check grant --single-use ..."
	# The next granted run, now: its own record stays, the expired one goes.
	PRE=()
	run -0 --separate-stderr granted_with "$ws.fresh" --grant-nonce-dir "$nd" -- true
	assert_equal "$stderr" ""
	run -0 cat "$nd/$fresh"
	assert_output --regexp "^used [0-9]+ pid [0-9]+ expires never\$"
	run -0 sh -c 'cd "$1" && find . | sed "s/$2/FRESH/" | LC_ALL=C sort' sh "$nd" "$fresh"
	assert_output ".
./FRESH
./expiring
./expiring/pruned"
	assert_equal "$(cat "$nd/expiring/pruned")" "pruned $((h + 3599))"
	# Replayed: expired, as it was anyway; on a clock set back before its
	# expiry, refused all the same (and in a dry run).
	run -102 --separate-stderr granted_with "$ws.grant" --grant-nonce-dir "$nd" -- true
	assert_output ""
	assert_regex "$stderr" "^sbx-ns: fatal: grant refused: expired at $(utc "$E") \\([0-9]+ s ago\\); reissue it: "
	PRE=("${CLOCK[@]}")
	run -102 --separate-stderr granted_with "$ws.grant" --grant-nonce-dir "$nd" -- true
	assert_output ""
	assert_equal "$stderr" "$(pruned_msg "$E" "$nd" $((h + 3599)))"
	run -102 --separate-stderr granted_with "$ws.grant" --grant-nonce-dir "$nd" --dry-run -- true
	assert_equal "$stderr" "$(pruned_msg "$E" "$nd" $((h + 3599)))"
	[ ! -e "$nd/$nonce" ]
	rm -rf "$nd"
}

@test "a replay that could record its nonce only because a prune removed its record while it checked is refused: the mark is read again once recorded" {
	local nd="$NS_DIR/nonces.$BATS_TEST_NUMBER" held="$NS_DIR/held.$BATS_TEST_NUMBER" go="$NS_DIR/go.$BATS_TEST_NUMBER"
	local E nonce p rc m PRE=()
	mkdir -m 0700 "$nd"
	mkfifo "$held" "$go"
	GRANT_OPTS="--single-use --expires 3600" plan "${base[@]}" -- sh -c 'echo ran'
	E=$(sed -n 's/^expires=//p' "$ws.grant")
	nonce=$(sed -n 's/^nonce=//p' "$ws.grant")
	run -0 --separate-stderr granted_with "$ws.grant" --grant-nonce-dir "$nd" -- sh -c 'echo ran'
	assert_output ran
	# The replay, held at the very call that makes its record (it has
	# checked the mark and found the grant unexpired)...
	PRE=("$SBX_TESTBIN/open-hold" "$nonce" "$held" "$go")
	granted_with "$ws.grant" --grant-nonce-dir "$nd" -- sh -c 'echo ran' >"$ws.out" 2>"$ws.err" &
	p=$!
	BG_PIDS+=("$p")
	read -r _ <"$held"
	[ -f "$nd/$nonce" ]
	# ...while a prune on a clock three days ahead removes that record...
	clock_at $((E + 3 * 86400))
	run -0 --separate-stderr "${CLOCK[@]}" sbx-check grant --prune "$nd"
	[ ! -e "$nd/$nonce" ]
	m=$(sed -n 's/^pruned //p' "$nd/expiring/pruned")
	((m >= E))
	# ...then makes it: it finds the mark raised, and refuses.
	echo go >"$go"
	rc=0
	wait "$p" || rc=$?
	assert_equal "$rc" 102
	assert_equal "$(cat "$ws.out")" ""
	assert_equal "$(cat "$ws.err")" "$(pruned_msg "$E" "$nd" "$m")"
	rm -rf "$nd" "$held" "$go"
}

# A nonce directory on a tmpfs of its own (an fsync per record on a disk
# makes 100,000 of them take a minute), in a mount namespace of the
# test's: ND_NS runs a program there.
nd_tmpfs() {
	local ready="$NS_DIR/nd.ready.$BATS_TEST_NUMBER"
	mkdir -m 0700 "$1"
	unshare -m --propagation private sh -c 'mount -t tmpfs -o mode=0700 sbx-nonces "$1" && : >"$2" &&
		exec sleep 1000000' sh "$1" "$ready" &
	BG_PIDS+=("$!")
	ND_NS=(nsenter -t "$!" -m --)
	wait_for "[ -e '$ready' ]"
}

# The records at the top of directory $1, counted.
records() {
	"${ND_NS[@]}" ls -A "$1" | grep -cE '^[0-9a-f]{64}$'
}

# The end of the last hour sbx-check grant --prune removes at time $1.
prune_top() {
	local t=$(($1 - 7200))
	echo $((t - t % 3600 + 3599))
}

@test "100,000 expired nonces: a granted run removes 16 of them, sbx-check grant --prune the rest, keeping what has not expired, never expires or cannot be read; the expired grant replayed is refused" {
	local nd="$NS_DIR/nonces.$BATS_TEST_NUMBER" E nonce now t0 t1 m PRE
	nd_tmpfs "$nd"
	GRANT_OPTS="--single-use" plan "${base[@]}" -- true
	mv "$ws.grant" "$ws.fresh"
	GRANT_OPTS="--single-use" plan "${base[@]}" -- true
	now=$(date +%s)
	E=$((now - 3 * 86400))
	ns_grant_resign "$key" "$ws.grant" "$E"
	nonce=$(sed -n 's/^nonce=//p' "$ws.grant")
	# 100,001 records of grants that expired (the grant's among them), 10
	# of grants that expire tomorrow, 10 that never do, one an older
	# sbx-ns wrote (no expiry) and one that is not a record.
	run -0 "${ND_NS[@]}" "$SBX_TESTBIN/grant-nonces" "$nd" "$E" 100000 "$nonce"
	run -0 "${ND_NS[@]}" "$SBX_TESTBIN/grant-nonces" "$nd" $((now + 86400)) 10
	run -0 "${ND_NS[@]}" "$SBX_TESTBIN/grant-nonces" "$nd" never 10
	"${ND_NS[@]}" sh -c 'printf "used 1 pid 1\n" >"$1/$(printf %064d 1)"; printf x >"$1/$(printf %064d 2)"' sh "$nd"
	assert_equal "$(records "$nd")" 100023
	# One granted run: its own record in, 16 expired ones out.
	PRE=("${ND_NS[@]}")
	run -0 --separate-stderr granted_with "$ws.fresh" --grant-nonce-dir "$nd" -- true
	assert_equal "$stderr" ""
	assert_equal "$(records "$nd")" $((100023 + 1 - 16))
	# --prune: the rest, one line saying what went and what stayed.
	t0=$(date +%s)
	run -0 --separate-stderr "${ND_NS[@]}" sbx-check grant --prune "$nd"
	t1=$(date +%s)
	assert_equal "$stderr" ""
	m=$("${ND_NS[@]}" sed -n 's/^pruned //p' "$nd/expiring/pruned")
	[ "$m" = "$(prune_top "$t0")" ] || [ "$m" = "$(prune_top "$t1")" ]
	assert_output "$nd: removed $((100001 - 16)) nonces of grants expired by $(utc "$m"); kept 10 of grants not expired by then, 11 that never expire, 2 whose expiry cannot be read"
	assert_equal "$(records "$nd")" 23
	run -0 "${ND_NS[@]}" env LC_ALL=C ls "$nd/expiring"
	assert_output "$((now + 86400 - (now + 86400) % 3600))
pruned"
	run -0 --separate-stderr "${ND_NS[@]}" sbx-check grant --prune "$nd"
	m=$("${ND_NS[@]}" sed -n 's/^pruned //p' "$nd/expiring/pruned")
	assert_output "$nd: removed 0 nonces of grants expired by $(utc "$m"); kept 10 of grants not expired by then, 11 that never expire, 2 whose expiry cannot be read"
	# The grant replayed: expired; on a clock set back, pruned.
	run -102 --separate-stderr granted_with "$ws.grant" --grant-nonce-dir "$nd" -- true
	assert_regex "$stderr" "^sbx-ns: fatal: grant refused: expired at $(utc "$E") "
	clock_at $((E - 60))
	PRE=("${ND_NS[@]}" "${CLOCK[@]}")
	run -102 --separate-stderr granted_with "$ws.grant" --grant-nonce-dir "$nd" -- true
	assert_output ""
	assert_equal "$stderr" "$(pruned_msg "$E" "$nd" "$m")"
}

@test "runs pruning and replaying at once: no replay of a pruned grant runs, on a clock set back or not, and each fresh single-use grant runs exactly once" {
	local nd="$NS_DIR/nonces.$BATS_TEST_NUMBER" f="$NS_DIR/go.$BATS_TEST_NUMBER" E i r n nonces=() pids=() ran=0
	nd_tmpfs "$nd"
	mkfifo "$f"
	E=$(($(date +%s) - 3 * 86400))
	# 20 grants used while valid, among 20,000 other expired records; 5
	# fresh ones, each raced by two runs.
	sbx-ns --workspace "$ws" "${id[@]}" "${base[@]}" --dry-run -- sh -c 'echo ran' >"$ws.plan" </dev/null
	for i in $(seq 20); do
		sbx-check grant --key "$key" --plan "$ws.plan" --single-use >"$ws.old.$i"
		ns_grant_resign "$key" "$ws.old.$i" "$E"
		nonces+=("$(sed -n 's/^nonce=//p' "$ws.old.$i")")
	done
	for i in $(seq 5); do
		sbx-check grant --key "$key" --plan "$ws.plan" --single-use >"$ws.new.$i"
	done
	run -0 "${ND_NS[@]}" "$SBX_TESTBIN/grant-nonces" "$nd" "$E" 20000 "${nonces[@]}"
	# Every one waits on the fifo (the runs read it as their stdin, empty
	# as granted) until the one writer closes it.
	clock_at $((E - 60))
	exec 7<>"$f"
	for i in $(seq 20); do
		( set +e; "${ND_NS[@]}" "${CLOCK[@]}" sbx-ns \
			--workspace "$ws" --grant-fd 3 --grant-key "$key" "${id[@]}" "${base[@]}" --grant-nonce-dir "$nd" \
			-- sh -c 'echo ran' 3<"$ws.old.$i" <"$f" >"$ws.out.old.$i" 2>"$ws.err.old.$i"
		  echo $? >"$ws.rc.old.$i" ) 7>&- &
		pids+=($!)
	done
	for i in $(seq 10); do
		( set +e; "${ND_NS[@]}" sbx-ns --workspace "$ws" --grant-fd 3 --grant-key "$key" "${id[@]}" "${base[@]}" \
			--grant-nonce-dir "$nd" -- sh -c 'echo ran' 3<"$ws.new.$(((i + 1) / 2))" <"$f" \
			>"$ws.out.new.$i" 2>"$ws.err.new.$i"
		  echo $? >"$ws.rc.new.$i" ) 7>&- &
		pids+=($!)
	done
	for i in 1 2; do
		( "${ND_NS[@]}" sh -c 'cat >/dev/null; exec sbx-check grant --prune "$1"' sh "$nd" <"$f" \
			>"$ws.out.prune.$i" 2>&1; echo $? >"$ws.rc.prune.$i" ) 7>&- &
		pids+=($!)
	done
	# (each replay is clock-set and its sbx-ns, each prune sh and cat)
	wait_for "[ \"\$(find /proc/[0-9]*/fd/0 -lname '$f' 2>/dev/null | wc -l)\" -eq $((20 * 2 + 10 + 2 * 2)) ]"
	exec 7>&-
	wait "${pids[@]}"
	# (r, not i: bats 1.8's run with a flag sets the caller's i to 2)
	for r in $(seq 20); do
		run -0 cat "$ws.rc.old.$r" "$ws.out.old.$r" "$ws.err.old.$r"
		case $output in
		"102
sbx-ns: fatal: grant refused: already used (single-use: its nonce is recorded in $nd/${nonces[r - 1]}); make a new one: sbx-check grant --single-use ...") ;;
		"102
sbx-ns: fatal: grant refused: single-use and expiring at $(utc "$E"), and $nd holds no nonces of grants expiring up to "*) ;;
		*) fail "replay $r (its nonce ${nonces[r - 1]}): $output" ;;
		esac
	done
	for i in $(seq 10); do
		n=$(cat "$ws.rc.new.$i")
		if [ "$n" = 0 ]; then
			ran=$((ran + 1))
			assert_equal "$(cat "$ws.out.new.$i")" ran
		else
			assert_equal "$n" 102
			run -0 cat "$ws.err.new.$i"
			assert_output --partial "grant refused: already used"
		fi
	done
	assert_equal "$ran" 5
	assert_equal "$(cat "$ws.rc.prune.1") $(cat "$ws.rc.prune.2")" "0 0"
	# Whatever the two prunes and 30 runs left, one more leaves only the
	# five fresh grants' records.
	run -0 "${ND_NS[@]}" sbx-check grant --prune "$nd"
	assert_equal "$(records "$nd")" 5
	rm -f "$f"
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

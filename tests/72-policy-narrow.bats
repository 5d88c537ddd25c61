#!/usr/bin/env bats
# Policies that only narrow, as an administrator uses them: a real job (an
# npm install of a package from a registry through sbx-broker, then node
# using it) observed while enforced (sbx-ns --observe), narrowed
# (sbx-check policy narrow), shadowed (sbx-ns --shadow-policy), enforced
# (the narrowed file as the baseline and as the broker's --allow-policy),
# and the same job with one more host refused, the refusal naming the
# policy and the host. Then what narrowing refuses: records of other plans
# and identities, cut, edited or repeated records, files not of its format,
# and a shadow candidate wider than the baseline.
#
# The registry is static files made here (`npm pack` of a package, its
# metadata document) served by nginx in namespace "o" on 198.18.7.5 as
# registry.sbx.test; extra.sbx.test is the origin of tests/ns-net.bash (198.18.7.2,
# "hello"). The broker and sbx-ns run in "h": nothing leaves the machine.

load helpers
load ns-net
load tlsorigin
bats_require_minimum_version 1.5.0

setup_file() {
	local p=$BATS_FILE_TMPDIR/pkg tgz sha1 integ
	net_setup_file
	ip -n "$NO" addr add 198.18.7.5/24 dev "vo$$"
	printf '198.18.7.5 registry.sbx.test\n198.18.7.2 extra.sbx.test\n' >>"$NET_DIR/hosts"
	# The package and the registry's two files for it.
	REG=$NS_DIR/reg
	mkdir -p "$p" "$REG/o" "$REG/www/sbxpad/-"
	printf '{"name":"sbxpad","version":"1.0.0","main":"index.js"}\n' >"$p/package.json"
	printf 'module.exports = (s) => "[" + s + "]";\n' >"$p/index.js"
	tgz=$(cd "$p" && HOME=$BATS_FILE_TMPDIR npm pack --silent --cache "$BATS_FILE_TMPDIR/npmcache" \
		--pack-destination "$REG/www/sbxpad/-")
	sha1=$(sha1sum "$REG/www/sbxpad/-/$tgz" | cut -d' ' -f1)
	integ=sha512-$(openssl dgst -sha512 -binary "$REG/www/sbxpad/-/$tgz" | base64 -w0)
	printf '{"name":"sbxpad","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":"sbxpad","version":"1.0.0","main":"index.js","dist":{"tarball":"http://registry.sbx.test/sbxpad/-/%s","shasum":"%s","integrity":"%s"}}}}\n' \
		"$tgz" "$sha1" "$integ" >"$REG/www/sbxpad/index.json"
	tls_nginx_head "$REG/o" 256 >"$REG/o/nginx.conf"
	cat >>"$REG/o/nginx.conf" <<-EOF
		access_log $REG/o/access.log;
		server {
			listen 198.18.7.5:80;
			root $REG/www;
			location = /sbxpad { default_type application/json; alias $REG/www/sbxpad/index.json; }
		}
	}
	EOF
	chmod -R a+rX "$REG"
	tls_nginx "$NO" "$REG/o"
	REG_PIDS=("${BG_PIDS[@]}")
	BG_PIDS=()
	net_wait_port "$NO" 198.18.7.5 80
	# The administrator's baseline: every name under sbx.test, the workspace.
	POL=$NS_DIR/pol
	mkdir -m 0755 "$POL"
	printf '{"sandbox":{"network":{"mode":"allowlist","allowlist":["*.sbx.test"]},"readableRoots":["."],"writableRoots":["."]},"resources":{"memory_mb":2048,"max_processes":256}}\n' >"$POL/base.json"
	chmod 0644 "$POL/base.json"
	net_broker base --allow-private-networks --allow-policy "$POL/base.json"
	OBS=$NS_DIR/obs
	mkdir -m 0755 "$OBS"
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$OBS"
	# A second baseline, for the quick jobs: no network.
	printf '{"sandbox":{"network":{"mode":"none"},"readableRoots":["."],"writableRoots":["."]},"resources":{"memory_mb":2048}}\n' >"$POL/none.json"
	chmod 0644 "$POL/none.json"
	export REG POL OBS REG_PIDS_S="${REG_PIDS[*]}"
}

teardown_file() {
	BG_PIDS=($REG_PIDS_S)
	bg_end
	net_teardown_file
}

teardown() { bg_end; }

# The job: install the package, use it, and, when the workspace names one,
# fetch from one more host.
JOB='set -e
npm install --no-audit --no-fund --no-update-notifier --loglevel=error --registry http://registry.sbx.test/ sbxpad >/dev/null
node -e "console.log(require(\"sbxpad\")(\"ok\"))"
if [ -f extra-host ]; then curl -sSf "http://$(cat extra-host)/"; fi'

# A workspace as the job finds it: no package installed.
fresh_ws() {
	rm -rf "$NS_WS/node_modules" "$NS_WS/package.json" "$NS_WS/package-lock.json" "$NS_WS/extra-host"
}

# job BASELINE BROKER [SBX-NS OPTIONS...]: the job as the test user under
# BASELINE, through broker NAME, status lines on fd 3 into $BATS_TEST_TMPDIR/st.
job() {
	local base=$1 broker=$2
	shift 2
	nsh_user --baseline "$base" --workspace "$NS_WS" --net "broker:$NET_DIR/$broker.sock" --status-fd 3 "$@" \
		-- sh -c "$JOB" 3>"$BATS_TEST_TMPDIR/st"
}

# quick [SBX-NS OPTIONS...]: a job of no network, as the test user under
# the second baseline.
quick() {
	nsh_user --baseline "$POL/none.json" --workspace "$NS_WS" "$@" -- sh -c 'echo hi >out'
}

# narrow ARGS...: sbx-check policy narrow as the test user (the records
# are the user's).
narrow() {
	as_user sbx-check policy narrow "$@"
}

# The lines of a status file that are shadow events, without the tool.
shadow_lines() {
	grep '"event":"shadow"' "$BATS_TEST_TMPDIR/st" | sed 's/^{"tool":"sbx-ns","event":"shadow",//'
}

@test "a job observed three times, narrowed, shadowed twice, enforced; one more host is then refused by the narrowed policy, by name" {
	local i want
	for i in 1 2 3; do
		fresh_ws
		run -0 --separate-stderr job "$POL/base.json" base --observe "$OBS/job$i"
		assert_output "[ok]"
		assert_equal "$stderr" ""
	done
	# What the records hold: the registry reached, node run, the package written.
	run -0 grep -c '^{"event":"net","decision":"allowed","host":"registry.sbx.test","port":80,"method":"GET",' "$OBS/job1"
	run -0 grep -F '"path":"/usr/bin/node","dev":' "$OBS/job1"
	assert_output --partial "\"sha256\":\"$(sha256sum "$(readlink -f /usr/bin/node)" | cut -d' ' -f1)\""
	run -0 grep -Fx '{"event":"write","path":"node_modules/sbxpad/index.js"}' "$OBS/job1"

	run -0 --separate-stderr as_user sbx-check policy narrow --baseline "$POL/base.json" "$OBS/job1" "$OBS/job2" "$OBS/job3"
	want='{"sandbox":{"mode":"native","network":{"mode":"allowlist","allowlist":["registry.sbx.test"]},"readableRoots":[],"writableRoots":["."],"denyWrite":[".env",".env.*",".git/config",".git/config.worktree",".git/hooks/**",".git/worktrees/*/config.worktree",".git/modules/**/config",".git/modules/**/hooks/**"],"fallback":"fail-closed","unsafeAllowHostProcess":false},"resources":{"memory_mb":2048,"max_processes":256,"require_hard_limits":true}}'
	assert_output "$want"
	assert_equal "$stderr" "sbx-check: note: narrowed from 3 observations: network.allowlist 1 name (headroom 1.50); limits not learned: a record has no peaks of a cgroup of its run's own"
	printf '%s\n' "$output" >"$POL/narrow.json"

	for i in 1 2; do
		fresh_ws
		run -0 --separate-stderr job "$POL/base.json" base --shadow-policy "$POL/narrow.json"
		assert_output "[ok]"
		assert_equal "$stderr" "sbx-ns: note: shadow policy $POL/narrow.json: nothing would be refused"
		run -0 shadow_lines
		assert_output "\"shadow\":\"summary\",\"policy\":\"$POL/narrow.json\",\"would_refuse\":0,\"not_checked\":0}"
	done

	net_broker narrow --allow-private-networks --allow-policy "$POL/narrow.json"
	fresh_ws
	run -0 --separate-stderr job "$POL/narrow.json" narrow
	assert_output "[ok]"
	assert_equal "$stderr" ""

	# One more host: the shadow says so and refuses nothing; the narrowed
	# policy refuses it, and says which policy and which host.
	fresh_ws
	echo extra.sbx.test >"$NS_WS/extra-host"
	run -0 --separate-stderr job "$POL/base.json" base --shadow-policy "$POL/narrow.json"
	assert_output "[ok]
hello"
	assert_equal "$stderr" "sbx-ns: note: shadow policy $POL/narrow.json: 1 action would be refused: sandbox.network.allowlist extra.sbx.test:80 (1)"
	run -0 shadow_lines
	assert_output "\"shadow\":\"would-refuse\",\"field\":\"sandbox.network.allowlist\",\"value\":\"extra.sbx.test\",\"port\":80,\"count\":1}
\"shadow\":\"summary\",\"policy\":\"$POL/narrow.json\",\"would_refuse\":1,\"not_checked\":0}"
	fresh_ws
	echo extra.sbx.test >"$NS_WS/extra-host"
	run -22 --separate-stderr job "$POL/narrow.json" narrow
	assert_output "[ok]"
	assert_equal "$stderr" "curl: (22) The requested URL returned error: 403
sbx-ns: note: the broker refused 1 connection: extra.sbx.test:80: host extra.sbx.test not on the allowlist (--allow-policy $POL/narrow.json) (1)"
}

@test "two observations that disagree give the union, still within the baseline" {
	fresh_ws
	run -0 job "$POL/base.json" base --observe "$OBS/u1"
	fresh_ws
	echo extra.sbx.test >"$NS_WS/extra-host"
	run -0 job "$POL/base.json" base --observe "$OBS/u2"
	assert_output "[ok]
hello"
	run -0 --separate-stderr narrow --baseline "$POL/base.json" "$OBS/u1" "$OBS/u2"
	assert_output --partial '"network":{"mode":"allowlist","allowlist":["extra.sbx.test","registry.sbx.test"]},'
	assert_equal "$stderr" "sbx-check: note: narrowed from 2 observations: network.allowlist 2 names (headroom 1.50); limits not learned: a record has no peaks of a cgroup of its run's own"
}

@test "a run that connects nowhere narrows the network to none; its record names what it ran and wrote" {
	fresh_ws
	run -0 --separate-stderr nsh_user --baseline "$POL/base.json" --workspace "$NS_WS" --observe "$OBS/n1" \
		-- sh -c 'mkdir -p d && echo x >d/f && exec /bin/true'
	assert_equal "$stderr" ""
	run -1 grep -c '"event":"net"' "$OBS/n1"
	assert_output 0
	run -0 grep -Fx '{"event":"write","path":"d/f"}' "$OBS/n1"
	run -0 grep -c -F "{\"event\":\"exec\",\"path\":\"/bin/true\",\"dev\":$(stat -L -c %d /bin/true),\"ino\":$(stat -L -c %i /bin/true),\"size\":$(stat -L -c %s /bin/true),\"sha256\":\"$(sha256sum /bin/true | cut -d' ' -f1)\",\"count\":1}" "$OBS/n1"
	run -0 --separate-stderr narrow --baseline "$POL/base.json" "$OBS/n1"
	assert_output --partial '"network":{"mode":"none","allowlist":[]},'
	assert_equal "$stderr" "sbx-check: note: narrowed from 1 observation: network.allowlist 0 names, network none (no run connected) (headroom 1.50); limits not learned: a record has no peaks of a cgroup of its run's own"
}

@test "narrowing refuses records of another plan, another identity, another baseline, a failed run and a run without one" {
	run -0 quick --observe "$OBS/p1"
	run -0 quick --setenv SBX_X=1 --observe "$OBS/p2"
	run -102 --separate-stderr narrow --baseline "$POL/none.json" "$OBS/p1" "$OBS/p2"
	assert_equal "$stderr" "sbx-check: fatal: $OBS/p2: refused: another plan: env differs from $OBS/p1's"
	run -0 ip netns exec "$NH" "$SBX_BIN/sbx-ns" --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" --baseline "$POL/none.json" \
		--workspace "$NS_WS" --observe "$OBS/p3" -- sh -c 'echo hi >out'
	chmod 0644 "$OBS/p3"
	run -102 --separate-stderr narrow --baseline "$POL/none.json" "$OBS/p1" "$OBS/p3"
	assert_equal "$stderr" "sbx-check: fatal: $OBS/p3: refused: another identity: the command ran as uid $SBX_TEST_UID gid $SBX_TEST_GID (started by uid 0), in $OBS/p1 as uid $SBX_TEST_UID gid $SBX_TEST_GID (started by uid $SBX_TEST_UID)"
	run -102 --separate-stderr narrow --baseline "$POL/base.json" "$OBS/p1"
	assert_equal "$stderr" "sbx-check: fatal: $OBS/p1: refused: its run had another baseline than $POL/base.json"
	run -0 nsh_user --workspace "$NS_WS" --observe "$OBS/p4" -- true
	run -102 --separate-stderr narrow --baseline "$POL/none.json" "$OBS/p4"
	assert_equal "$stderr" "sbx-check: fatal: $OBS/p4: refused: its run had no baseline; observe runs under the baseline that narrowing starts from ($POL/none.json)"
	run -3 nsh_user --baseline "$POL/none.json" --workspace "$NS_WS" --observe "$OBS/p5" -- sh -c 'exit 3'
	run -102 --separate-stderr narrow --baseline "$POL/none.json" "$OBS/p5"
	assert_equal "$stderr" "sbx-check: fatal: $OBS/p5: refused: its run ended with code 3; narrow from runs that did their job"
}

# as_user_sh SCRIPT ARGS...: a shell script as the test user (the files it
# makes are the user's, mode 0600).
as_user_sh() {
	as_user sh -c "umask 077; $1" sh "${@:2}"
}

@test "narrowing refuses a record cut short, edited, with a line repeated or given twice, and a file of another format" {
	local f=$OBS/r1 run_id n
	run -0 quick --observe "$f"
	n=$(($(wc -l <"$f") - 1))
	run_id=$(head -n1 "$f" | sed 's/.*"run":"\([0-9a-f]*\)".*/\1/')
	as_user_sh 'head -n -1 "$1" >"$2"; head -c -9 "$1" >"$3"' "$f" "$OBS/r-cut" "$OBS/r-cut2"
	for g in r-cut r-cut2; do
		run -102 --separate-stderr narrow --baseline "$POL/none.json" "$OBS/$g"
		assert_equal "$stderr" "sbx-check: fatal: $OBS/$g: refused: truncated: the record has no end line (its run was killed, or the file was cut)"
	done
	as_user_sh 'sed "s/\"count\":1}/\"count\":9}/" "$1" >"$2"' "$f" "$OBS/r-edit"
	run -102 --separate-stderr narrow --baseline "$POL/none.json" "$OBS/r-edit"
	assert_equal "$stderr" "sbx-check: fatal: $OBS/r-edit: refused: its end line does not match the $n lines before it (the record was edited, or lines were added or repeated)"
	as_user_sh 'sed "2p" "$1" >"$2"' "$f" "$OBS/r-twice"
	run -102 --separate-stderr narrow --baseline "$POL/none.json" "$OBS/r-twice"
	assert_equal "$stderr" "sbx-check: fatal: $OBS/r-twice: refused: its end line does not match the $((n + 1)) lines before it (the record was edited, or lines were added or repeated)"
	as_user_sh 'cp "$1" "$2"' "$f" "$OBS/r-copy"
	run -102 --separate-stderr narrow --baseline "$POL/none.json" "$f" "$OBS/r-copy"
	assert_equal "$stderr" "sbx-check: fatal: $OBS/r-copy: refused: the same run as $f (run $run_id): a record given twice"
	run -102 --separate-stderr narrow --baseline "$POL/none.json" "$f" "$f"
	assert_equal "$stderr" "sbx-check: fatal: $f: refused: the same run as $f (run $run_id): a record given twice"
	# Not a record at all: a policy, an empty file, a status line.
	as_user_sh ': >"$1"; printf "{\"tool\":\"sbx-ns\",\"event\":\"exit\",\"code\":0}\n" >"$2"' "$OBS/r-empty" "$OBS/r-status"
	for g in "$POL/none.json" "$OBS/r-empty" "$OBS/r-status"; do
		run -100 --separate-stderr narrow --baseline "$POL/none.json" "$g"
		assert_equal "$stderr" "sbx-check: usage: $g: not an observation record (its first line is not the start of sbx-ns --observe's record, sbx-observe-v1)"
	done
	# Its grammar, whatever the digest says: an unknown key, a line that
	# is not JSON, each with a digest made anew.
	as_user_sh 'python3 - "$1" "$2" "$3" <<"PY"
import hashlib, json, sys
lines = open(sys.argv[1], "rb").read().split(b"\n")[:-2]
def write(path, body):
    data = b"".join(l + b"\n" for l in body)
    end = {"event": "end", "code": 0, "lines": len(body), "sha256": hashlib.sha256(data).hexdigest()}
    open(path, "wb").write(data + json.dumps(end, separators=(",", ":")).encode() + b"\n")
write(sys.argv[2], lines[:1] + [b"{\"event\":\"write\",\"path\":\"x\",\"mode\":1}"] + lines[1:])
write(sys.argv[3], lines[:1] + [b"{\"event\":\"write\","] + lines[1:])
PY' "$f" "$OBS/r-key" "$OBS/r-json"
	run -100 --separate-stderr narrow --baseline "$POL/none.json" "$OBS/r-key"
	assert_equal "$stderr" "sbx-check: usage: $OBS/r-key:2: not an observation record line: unknown key \"mode\""
	run -100 --separate-stderr narrow --baseline "$POL/none.json" "$OBS/r-json"
	assert_equal "$stderr" "sbx-check: usage: $OBS/r-json:2: not an observation record line: string or '}' expected near end of file"
	# Trusted as a baseline is: written by no one else, no symlink.
	chmod 0660 "$f"
	run -102 --separate-stderr narrow --baseline "$POL/none.json" "$f"
	assert_equal "$stderr" "sbx-check: fatal: $f: refused: writable by group or others (mode 0660)"
	ln -s "$OBS/r-copy" "$OBS/r-link"
	run -102 --separate-stderr narrow --baseline "$POL/none.json" "$OBS/r-link"
	assert_equal "$stderr" "sbx-check: fatal: $OBS/r-link: refused: a symbolic link"
}

@test "a shadow candidate wider than the baseline is refused for shadow use, naming the field" {
	local c=$POL/wide.json b="--baseline $POL/base.json"
	printf '{"sandbox":{"network":{"mode":"allowlist","allowlist":["registry.sbx.test"]},"readableRoots":["."],"writableRoots":["."]},"resources":{"memory_mb":4096,"max_processes":256}}\n' >"$c"
	run -102 --separate-stderr nsh_user --baseline "$POL/base.json" --shadow-policy "$c" --workspace "$NS_WS" -- true
	assert_equal "$stderr" "sbx-ns: fatal: shadow policy refused: --shadow-policy $c is wider than the baseline: --shadow-policy $c: \$.resources.memory_mb: 4096 MiB is more than the baseline's 2048 MiB ($b: \$.resources.memory_mb)"
	printf '{"sandbox":{"network":{"mode":"allowlist","allowlist":["registry.sbx.test","other.example"]},"readableRoots":["."],"writableRoots":["."]},"resources":{"memory_mb":1024,"max_processes":256}}\n' >"$c"
	run -102 --separate-stderr nsh_user --baseline "$POL/base.json" --shadow-policy "$c" --workspace "$NS_WS" -- true
	assert_equal "$stderr" "sbx-ns: fatal: shadow policy refused: --shadow-policy $c is wider than the baseline: --shadow-policy $c: \$.sandbox.network.allowlist[1]: other.example is not within the baseline's allowlist ($b: \$.sandbox.network.allowlist)"
	printf '{"sandbox":{"network":{"mode":"allowlist","allowlist":["registry.sbx.test"]},"readableRoots":["."],"writableRoots":["."]},"resources":{"max_processes":256}}\n' >"$c"
	run -102 --separate-stderr nsh_user --baseline "$POL/base.json" --shadow-policy "$c" --workspace "$NS_WS" -- true
	assert_equal "$stderr" "sbx-ns: fatal: shadow policy refused: --shadow-policy $c is wider than the baseline: resources.memory_mb: no limit is wider than the baseline's 2048 MiB ($b: \$.resources.memory_mb)"
	printf '{"sandbox":{"network":{"mode":"allowlist","allowlist":["registry.sbx.test"]},"readableRoots":["."],"writableRoots":["."],"denyWrite":[".env"]},"resources":{"memory_mb":1024,"max_processes":256}}\n' >"$c"
	run -102 --separate-stderr nsh_user --baseline "$POL/base.json" --shadow-policy "$c" --workspace "$NS_WS" -- true
	assert_equal "$stderr" "sbx-ns: fatal: shadow policy refused: --shadow-policy $c is wider than the baseline: sandbox.denyWrite: lacks the baseline's .env.* ($b: default)"
}

@test "a shadow candidate that refuses the request says so at the start, with the field and the value, and refuses nothing" {
	local c=$POL/none-net.json
	sed 's/"mode":"allowlist","allowlist":\["\*.sbx.test"\]/"mode":"none"/' "$POL/base.json" >"$c"
	run -0 --separate-stderr nsh_user --baseline "$POL/base.json" --shadow-policy "$c" --workspace "$NS_WS" \
		--net loopback --status-fd 3 -- sh -c 'echo ran' 3>"$BATS_TEST_TMPDIR/st"
	assert_output ran
	assert_equal "$stderr" "sbx-ns: note: shadow policy $c: 1 action would be refused: sandbox.network.mode localhost (loopback)"
	run -0 shadow_lines
	assert_output "\"shadow\":\"would-refuse\",\"field\":\"sandbox.network.mode\",\"value\":\"localhost (loopback)\"}
\"shadow\":\"summary\",\"policy\":\"$c\",\"would_refuse\":1,\"not_checked\":0}"
}

@test "a limit the candidate narrows and this run cannot measure is said to be not checked" {
	local c=$POL/small.json
	sed 's/"memory_mb":2048/"memory_mb":64/' "$POL/none.json" >"$c"
	run -0 --separate-stderr quick --shadow-policy "$c" --status-fd 3 3>"$BATS_TEST_TMPDIR/st"
	assert_equal "$stderr" "sbx-ns: note: shadow policy $c: nothing would be refused (some limits not checked: see the status fd)"
	run -0 shadow_lines
	assert_output "\"shadow\":\"not-checked\",\"field\":\"resources.memory_mb\",\"why\":\"no cgroup v2 hierarchy here\"}
\"shadow\":\"summary\",\"policy\":\"$c\",\"would_refuse\":0,\"not_checked\":1}"
}

@test "a living sandbox is observed over all of its commands" {
	local srv=$OBS/srv line
	mkdir -m 0700 "$srv"
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$srv"
	mkfifo "$srv/ready"
	as_user sbx-ns --baseline "$POL/none.json" --workspace "$NS_WS" --serve "$srv/s" --observe "$OBS/live" \
		--ready-fd 3 </dev/null 3>"$srv/ready" 2>"$srv/err" &
	BG_PIDS+=($!)
	read -r line <"$srv/ready"
	run -0 as_user sbx-ns --join "$srv/s" -- sh -c 'echo a >a'
	run -0 as_user sbx-ns --join "$srv/s" -- /bin/true
	run -0 as_user sbx-ns --join "$srv/s" --stop
	wait "${BG_PIDS[0]}"
	assert_equal "$(cat "$srv/err")" ""
	run -0 grep -c '^{"tool":"sbx-ns","event":"observe","record":"sbx-observe-v1","run":"[0-9a-f]*","serve":true,' "$OBS/live"
	run -0 grep -c -e '"event":"exec","path":"/bin/true"' -e '"event":"exec","path":"/usr/bin/sh"' "$OBS/live"
	assert_output 2
	run -0 grep -Fx '{"event":"write","path":"a"}' "$OBS/live"
	run -0 --separate-stderr narrow --baseline "$POL/none.json" "$OBS/live"
}

@test "a dry run shows the execs watched, and makes no record" {
	run -0 --separate-stderr nsh_user --workspace "$NS_WS" --observe "$OBS/dry" --dry-run -- true
	assert_output --partial '"seccomp":{"filter":"offline","denials":"notify","exec":"notify"},'
	[ ! -e "$OBS/dry" ]
}

@test "the options' bad values are refused, each with its message" {
	local ws=$NS_WS
	: >"$OBS/exists"
	run -100 --separate-stderr nsh_user --workspace "$ws" --observe "$OBS/exists" -- true
	assert_equal "$stderr" "sbx-ns: usage: --observe: $OBS/exists exists: a record is never overwritten; name a new file"
	run -100 --separate-stderr nsh_user --workspace "$ws" --observe "$ws/rec" -- true
	assert_equal "$stderr" "sbx-ns: usage: --observe: $ws/rec lies within the writable root $ws (--workspace): the command could rewrite its own record; keep it where only the caller writes"
	run -100 --separate-stderr nsh_user --workspace "$ws" --observe "$OBS/none/rec" -- true
	assert_equal "$stderr" "sbx-ns: usage: --observe: invalid path '$OBS/none/rec': its directory does not exist"
	run -100 --separate-stderr nsh_user --workspace "$ws" --observe rec -- true
	assert_equal "$stderr" "sbx-ns: usage: --observe: invalid path 'rec': not absolute"
	run -100 --separate-stderr nsh_user --workspace "$ws" --observe "$OBS/a" --observe "$OBS/b" -- true
	assert_equal "$stderr" "sbx-ns: usage: --observe given twice"
	run -100 --separate-stderr nsh_user --workspace "$ws" --observe "$OBS/q" --quiet-denials -- true
	assert_equal "$stderr" "sbx-ns: usage: --observe needs the supervisor, and --quiet-denials runs without one"
	run -100 --separate-stderr nsh_user --workspace "$ws" --shadow-policy "$POL/none.json" -- true
	assert_equal "$stderr" "sbx-ns: usage: --shadow-policy needs --baseline or --baseline-fd: a candidate is held to a baseline"
	run -100 --separate-stderr nsh_user --workspace "$ws" --baseline "$POL/none.json" --clamp --shadow-policy "$POL/none.json" -- true
	assert_equal "$stderr" "sbx-ns: usage: --shadow-policy and --clamp are exclusive: under the candidate a clamped request would be narrowed, not refused"
	run -100 --separate-stderr nsh_user --workspace "$ws" --baseline "$POL/none.json" --shadow-policy "$OBS/nothing" -- true
	assert_equal "$stderr" "sbx-ns: usage: --shadow-policy $OBS/nothing: invalid path '$OBS/nothing': does not exist"

	run -100 --separate-stderr as_user sbx-check policy
	assert_equal "$stderr" "sbx-check: usage: policy: missing action (narrow)"
	run -100 --separate-stderr as_user sbx-check policy widen
	assert_equal "$stderr" "sbx-check: usage: policy: unknown action 'widen' (narrow)"
	run -100 --separate-stderr narrow "$OBS/p1"
	assert_equal "$stderr" "sbx-check: usage: policy narrow: missing --baseline FILE (a narrowed policy is held to it)"
	run -100 --separate-stderr narrow --baseline "$POL/none.json"
	assert_equal "$stderr" "sbx-check: usage: policy narrow: missing observation records (sbx-ns --observe FILE)"
	run -100 --separate-stderr narrow --baseline "$POL/none.json" obs
	assert_equal "$stderr" "sbx-check: usage: policy narrow: invalid path 'obs': not absolute"
	run -100 --separate-stderr narrow --baseline "$POL/none.json" --baseline "$POL/none.json" "$OBS/p1"
	assert_equal "$stderr" "sbx-check: usage: --baseline given twice"
	for h in "" 0 0.99 -1 101 1.555 1. .5 abc 1e2 99999999999999999999 "1 "; do
		run -100 --separate-stderr narrow --baseline "$POL/none.json" --headroom "$h" "$OBS/p1"
		case $h in
		"") assert_equal "$stderr" "sbx-check: usage: --headroom: invalid value '': empty" ;;
		0 | 0.99 | 101) assert_equal "$stderr" "sbx-check: usage: --headroom: invalid value '$h': from 1 to 100 (a limit below the peak would refuse what the runs did)" ;;
		*) assert_equal "$stderr" "sbx-check: usage: --headroom: invalid value '$h': a number from 1 to 100 with at most two decimals" ;;
		esac
	done
	run -100 --separate-stderr narrow --baseline "$POL/none.json" --headroom 2 --headroom 3 "$OBS/p1"
	assert_equal "$stderr" "sbx-check: usage: --headroom given twice"

	printf '{"sandbox":{"network":{"mode":"none"}}}\n' >"$POL/nonet.json"
	run -100 --separate-stderr "$SBX_BIN/sbx-broker" --listen "$BATS_TEST_TMPDIR/s" --allow-policy "$POL/nonet.json"
	assert_equal "$stderr" "sbx-broker: usage: --allow-policy $POL/nonet.json: its network mode is none, not allowlist: it names no host for a broker"
	run -100 --separate-stderr "$SBX_BIN/sbx-broker" --listen "$BATS_TEST_TMPDIR/s" --allow-policy "$POL/base.json" --allow-host a.sbx.test
	assert_equal "$stderr" "sbx-broker: usage: --allow-policy and --allow-host are exclusive (one list of allowed names)"
	printf '{"sandbox":{"network":{"mode":"allowlist","allowlist":[]}}}\n' >"$POL/empty.json"
	run -100 --separate-stderr "$SBX_BIN/sbx-broker" --listen "$BATS_TEST_TMPDIR/s" --allow-policy "$POL/empty.json"
	assert_equal "$stderr" "sbx-broker: usage: --allow-policy $POL/empty.json: its network.allowlist is empty: it allows no host"
	chmod 0666 "$POL/empty.json"
	run -102 --separate-stderr "$SBX_BIN/sbx-broker" --listen "$BATS_TEST_TMPDIR/s" --allow-policy "$POL/empty.json"
	assert_equal "$stderr" "sbx-broker: fatal: --allow-policy $POL/empty.json: refused: writable by group or others (mode 0666)"
}

@test "an observed or shadowed run refuses the Landlock tier: it has neither the supervisor nor the broker's channel" {
	cp "$SBX_TESTBIN/ns-nouserns" "$NS_DIR/bin/"
	chmod 0755 "$NS_DIR/bin/ns-nouserns"
	printf '{"sandbox":{"fallback":"landlock","denyWrite":[],"readableRoots":["."],"writableRoots":["."]}}\n' >"$POL/tier.json"
	run -106 --separate-stderr as_user "$NS_DIR/bin/ns-nouserns" sbx-ns --baseline "$POL/tier.json" --workspace "$NS_WS" \
		--observe "$OBS/tier" -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to create namespaces (Operation not permitted): the Landlock tier would run the command without the supervisor and the broker's channel that --observe needs"
	[ ! -e "$OBS/tier" ]
	run -106 --separate-stderr as_user "$NS_DIR/bin/ns-nouserns" sbx-ns --baseline "$POL/tier.json" --workspace "$NS_WS" \
		--shadow-policy "$POL/tier.json" -- true
	assert_equal "$stderr" "sbx-ns: fatal: unable to create namespaces (Operation not permitted): the Landlock tier would run the command without the supervisor and the broker's channel that --shadow-policy needs"
}

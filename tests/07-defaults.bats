#!/usr/bin/env bats
# Every default a man page states that a run can show, taken from the man
# page's own text and compared with what the tool really does: a page and a
# tool that drift apart fail here. Not here, because only waiting would show
# them: sbx-ns --ready-timeout (30 s), sbx-cgroup's grace (5 s).

bats_require_minimum_version 1.5.0
load helpers
load ns

teardown() { bg_end; }

# The man page as text, one line per paragraph and single spaces, so that
# a phrase the roff source breaks across lines is found whole.
man_text() {
	groff -man -Tascii -rLL=5000n -rHY=0 -P-cbou "$SBX_ROOT/man/$1.1" 2>/dev/null | tr -s ' '
}

# documented TOOL ERE [REPLACEMENT]: what TOOL's man page says, the groups
# of the first line matching ERE (\1 unless told); the test fails when the
# page no longer says it.
documented() {
	local v
	local d=$'\001'
	v=$(man_text "$1" | sed -nE "s$d.*$2.*$d${3:-\\1}${d}p" | head -1)
	[ -n "$v" ] || fail "man/$1.1 does not say: $2"
	printf '%s\n' "$v"
}

# ----- sbx-ns ---------------------------------------------------------------------

@test "sbx-ns: the command's environment is exactly the documented one, HOME /tmp/home" {
	local want ws
	ws=$(ns_ws)
	want=$(documented sbx-ns 'The environment is otherwise empty except PATH=([^,]+), HOME \(([^ ,]+), or --home\), TMPDIR=([^,]+), XDG_CACHE_HOME=\$HOME(/[^ ]+) and XDG_CONFIG_HOME=\$HOME(/[^ ]+) ' \
		'PATH=\1 HOME=\2 TMPDIR=\3 XDG_CACHE_HOME=\2\4 XDG_CONFIG_HOME=\2\5' | tr ' ' '\n' | sort)
	assert_equal "$(grep -c . <<<"$want")" 5
	# The caller's own variables stay out.
	run -0 --separate-stderr env FOO=bar HOME=/root "$SBX_BIN/sbx-ns" --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" \
		--workspace "$ws" -- /usr/bin/env
	assert_equal "$(sort <<<"$output")" "$want"
	run -0 --separate-stderr ns_user --workspace "$ws" -- /usr/bin/env
	assert_equal "$(sort <<<"$output")" "$want"
}

@test "sbx-ns: HOME is /tmp/home, a directory of the command's with the documented mode, not the workspace" {
	local home mode ws
	ws=$(ns_ws)
	home=$(documented sbx-ns 'Without it HOME is ([^ ,]+), a directory of the sandbox.s own /tmp')
	mode=$(documented sbx-ns 'Without it HOME is [^ ,]+, a directory of the sandbox.s own /tmp, mode 0?([0-7]+),')
	assert_equal "$home" /tmp/home
	run -0 --separate-stderr ns_root --workspace "$ws" -- /bin/sh -c 'echo "$HOME"; stat -c "%a %u" "$HOME"'
	assert_output "$home
$mode $SBX_TEST_UID"
	# The --workspace entry says where HOME is, and never that it is the workspace.
	run -0 documented sbx-ns '^ *The workspace: bound read-write at the same path, and the command.s working directory \(([^)]*)\)'
	assert_output "its HOME is not the workspace: see --home"
}

@test "sbx-ns: the working directory is the workspace" {
	local ws
	ws=$(ns_ws)
	documented sbx-ns '^ *The workspace: bound read-write at the same path, and the (command.s working directory)'
	run -0 --separate-stderr ns_root --workspace "$ws" -- /bin/pwd -P
	assert_output "$ws"
	run -0 --separate-stderr ns_user --workspace "$ws" -- /bin/pwd -P
	assert_output "$ws"
}

@test "sbx-ns: the command keeps the caller's umask; the root's directories keep theirs whatever it is" {
	local ws mode
	ws=$(ns_ws)
	mode=$(documented sbx-ns 'The directories made on the tmpfs to hold mount points have mode ([0-7]+) whatever the caller.s umask; the command itself gets the (caller.s umask)')
	assert_equal "$mode" 0755
	# A root caller with umask 027: the mount points above the workspace
	# must still let the command's uid through (they were 0750 and the
	# run ended "unable to enter the workspace").
	run -0 --separate-stderr sh -c 'umask 027 && exec "$@"' sh \
		"$SBX_BIN/sbx-ns" --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" --workspace "$ws" -- \
		/bin/sh -c 'umask; stat -c %a /var /var/tmp "${PWD%/*}"'
	assert_output "0027
${mode#0}
${mode#0}
${mode#0}"
	assert_equal "$stderr" ""
	run -0 --separate-stderr sh -c 'umask 077 && exec "$@"' sh setpriv --reuid="$SBX_TEST_UID" \
		--regid="$SBX_TEST_GID" --init-groups "$SBX_BIN/sbx-ns" --workspace "$ws" -- /bin/sh -c umask
	assert_output "0077"
}

@test "sbx-ns: the default --net is none: no socket, and the status says so" {
	local ws mode
	ws=$(ns_ws)
	mode=$(documented sbx-ns '^ *([a-z]+) +\(the default\): a new network namespace with nothing up \(lo is down\), and socket\(\) denied for every family')
	assert_equal "$mode" none
	run -0 --separate-stderr ns_root --workspace "$ws" --ro "$NS_DIR/bin" --status-fd 3 -- \
		/bin/sh -c '"$0" socket-inet; "$0" socket-unix' "$NS_ATT" 3>"$ws.status"
	assert_output "socket-inet: EPERM
socket-unix: EPERM"
	run -0 grep -c "\"event\":\"started\".*\"net\":\"$mode\"" "$ws.status"
	rm -f "$ws.status"
}

@test "sbx-ns: the runtime set is the documented paths, read-only, and nothing else of the host" {
	local ws set p want=() top
	ws=$(ns_ws)
	set=$(documented sbx-ns 'the runtime set read-only \(([^)]+) where they exist')
	assert_equal "$set" "/usr, /bin, /sbin, /lib, /lib64 and /etc"
	top=${ws#/}
	want=(dev proc tmp "${top%%/*}")
	for p in $(sed 's/,//g; s/ and / /' <<<"$set"); do
		[ -e "$p" ] && want+=("${p#/}")
	done
	run -0 --separate-stderr ns_root --workspace "$ws" -- /bin/ls -A /
	assert_equal "$(sort <<<"$output")" "$(printf '%s\n' "${want[@]}" | sort -u)"
	for p in $(sed 's/,//g; s/ and / /' <<<"$set"); do
		[ -e "$p" ] || continue
		if [ -L "$p" ]; then
			run -0 ns_root --workspace "$ws" -- /bin/readlink "$p"
			assert_output "$(readlink "$p")"
		else
			run -0 ns_root --workspace "$ws" -- /bin/sh -c 'cut -d" " -f5,6 /proc/self/mountinfo'
			assert_line --regexp "^$p ro,"
		fi
	done
}

@test "sbx-ns: a caller runs the command as itself; root must name the identity" {
	local ws
	ws=$(ns_ws)
	documented sbx-ns 'an unprivileged caller gets everything through user namespaces and the (command runs as the caller)'
	documented sbx-ns '(root must name a non-root identity with --uid and --gid)'
	run -0 --separate-stderr ns_user --workspace "$ws" -- /usr/bin/id -u
	assert_output "$SBX_TEST_UID"
	run -100 --separate-stderr sbx-ns --workspace "$ws" -- /usr/bin/id -u
	assert_equal "$stderr" "sbx-ns: usage: running as root needs --uid and --gid (the command never runs as root)"
}

@test "sbx-ns: the default deny-write set is the documented one, and holds" {
	local ws globs
	ws=$(ns_ws)
	globs=$(documented sbx-ns 'The default set is (.+); giving --deny-write replaces it' | sed 's/, / /g; s/ and / /' | tr ' ' '\n')
	assert_equal "$(grep -c . <<<"$globs")" 8
	run -0 --separate-stderr ns_root --workspace "$ws" --dry-run -- /bin/true
	run -0 python3 -c 'import json, sys; print("\n".join(json.loads(sys.argv[1])["deny_write"]["globs"]))' "$output"
	assert_output "$globs"
	echo keep >"$ws/.env"
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$ws/.env"
	run -2 --separate-stderr ns_root --workspace "$ws" -- /bin/sh -c 'echo changed >.env'
	assert_equal "$stderr" "/bin/sh: 1: cannot create .env: Read-only file system"
	assert_equal "$(cat "$ws/.env")" keep
}

@test "sbx-ns: without --timeout there is no time limit" {
	local ws t
	ws=$(ns_ws)
	t=$(documented sbx-ns 'Without it there is no time limit \("timeout_ms":([0-9]+) in the plan --dry-run prints\)')
	run -0 --separate-stderr ns_root --workspace "$ws" --dry-run -- /bin/true
	assert_output --partial "\"timeout_ms\":$t,"
}

@test "sbx-ns: a living sandbox's command starts in the workspace" {
	local ws srv line
	ws=$(ns_ws)
	documented sbx-ns '^ *The command.s working directory, an absolute path inside the sandbox \(default: (the workspace)\)'
	srv=$(mktemp -d "$NS_DIR/run.XXXXXX")
	chmod 0700 "$srv"
	mkfifo "$srv/ready"
	"$SBX_BIN/sbx-ns" --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" --workspace "$ws" --serve "$srv/s" \
		--ready-fd 6 6>"$srv/ready" </dev/null >/dev/null 2>"$srv/err" 3>&- &
	BG_PIDS+=("$!")
	read -r line <"$srv/ready" || fail "not ready: $(cat "$srv/err")"
	run -0 --separate-stderr sbx-ns --join "$srv/s" -- /bin/pwd -P
	assert_output "$ws"
	run -0 sbx-ns --join "$srv/s" --stop
	wait "${BG_PIDS[-1]}"
}

@test "sbx-ns: --net broker:PATH's default port is the documented one" {
	local ws port dir line
	ws=$(ns_ws)
	port=$(documented sbx-ns 'the broker.s service on 127\.0\.0\.1:N and \[::1\]:N \(default ([0-9]+)\)')
	dir=$(mktemp -d "$NS_DIR/b.XXXXXX")
	mkfifo "$dir/ready"
	sbx-broker --listen "$dir/s" --allow-host example.org --ready-fd 3 3>"$dir/ready" </dev/null >/dev/null 2>"$dir/err" &
	BG_PIDS+=("$!")
	read -r line <"$dir/ready" || fail "broker not ready: $(cat "$dir/err")"
	run -0 --separate-stderr ns_root --workspace "$ws" --net "broker:$dir/s" -- /bin/sh -c 'echo "$HTTP_PROXY"'
	assert_output "http://127.0.0.1:$port"
}

# ----- sbx-broker -----------------------------------------------------------------

# Start a broker on $B/s with ARGS, its log on $B/log; waits until it listens.
broker() {
	local line
	B=$(mktemp -d "$NS_DIR/b.XXXXXX")
	mkfifo "$B/ready"
	sbx-broker --listen "$B/s" --ready-fd 3 "$@" 3>"$B/ready" </dev/null >/dev/null 2>"$B/log" &
	BG_PIDS+=("$!")
	read -r line <"$B/ready" || fail "broker not ready: $(cat "$B/log")"
}

@test "sbx-broker: the default mode is allowlist" {
	local mode
	mode=$(documented sbx-broker '^ *([a-z]+) \(the default\) needs at least one --allow-host')
	run -100 --separate-stderr sbx-broker --listen "$NS_DIR/none.sock"
	assert_equal "$stderr" "sbx-broker: usage: --mode $mode needs at least one --allow-host"
}

@test "sbx-broker: the default ports are the documented ones" {
	local ports
	ports=$(documented sbx-broker 'Given at all, the list replaces the default, ([0-9]+) and ([0-9]+)\.' '\1 \2')
	broker --allow-host example.org
	run -0 python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"SBX-PROBE 2\n")
print(s.makefile().readline().strip())
' "$B/s"
	assert_output "SBX-PORTS $ports"
}

@test "sbx-broker: the default limits, log and socket mode are the documented ones" {
	local wall req resp lookups sub sb peer resv nofile conns log mode
	wall=$(documented sbx-broker 'Lifetime of each connection, from accept to close \(default ([0-9]+),')
	req=$(documented sbx-broker 'Bytes from the client per connection \(default ([0-9]+)M\)')
	resp=$(documented sbx-broker 'Bytes to the client per connection \(default ([0-9]+)M\)')
	lookups=$(documented sbx-broker 'at once \(default ([0-9]+), 1 to 100000\)')
	sub=$(documented sbx-broker 'less 64 for the broker.s own, \(RLIMIT_NOFILE - ([0-9]+)\) / ([0-9]+)' '\1 \2')
	sb=$(documented sbx-broker 'Connections served at once for one sandbox handed over by sbx-ns\(1\) \(default: a ([a-z]+) of --max-connections')
	peer=$(documented sbx-broker 'Connections served at once for one uid on --listen-tcp \(default: a ([a-z]+) of --max-connections')
	resv=$(documented sbx-broker 'answered 503 short of them \(default: a ([a-z]+) of --max-connections')
	log=$(documented sbx-broker 'Where the log goes \(default ([a-z]+)\)')
	mode=$(documented sbx-broker 'The socket.s permission bits, octal \(at most 0777; default: (as the umask leaves them)\)')
	assert_equal "$sb $peer $resv $log" "quarter quarter sixteenth stderr"
	nofile=$(ulimit -Hn)
	conns=$(((nofile - ${sub% *}) / ${sub#* }))
	local umask_was
	umask_was=$(umask)
	umask 027
	broker --allow-host example.org
	umask "$umask_was"
	# The log went to stderr.
	run -0 head -1 "$B/log"
	assert_output --regexp "^\{\"tool\":\"sbx-broker\",\"event\":\"listening\",\"time\":\"[^\"]+\",\"max_wall_time_ms\":$((wall * 1000)),\"max_request_bytes\":$((req << 20)),\"max_response_bytes\":$((resp << 20)),\"max_connections\":$conns,\"max_sandbox_connections\":$((conns / 4)),\"max_sandbox_lookups\":$lookups,\"max_peer_connections\":$((conns / 4)),\"reserved_connections\":$((conns / 16)),"
	# 0777 as umask 027 leaves it.
	assert_equal "$(stat -c %a "$B/s")" 750
}

# ----- sbx-cgroup, sbx-check, sbx-seatbelt -------------------------------------------

@test "sbx-cgroup --sampled samples at the documented interval" {
	local secs
	secs=$(documented sbx-cgroup 'processes are counted at each sample \(every ([0-9.]+) s\)')
	run -0 --separate-stderr sh -c 'exec "$@" 4>&1' sh sbx-cgroup --sampled --memory 64M --status-fd 4 -- /bin/true
	assert_line --partial "\"event\":\"meter\",\"enforcement\":\"sampled, not hard\",\"interval_ms\":$(python3 -c "print(round(float('$secs') * 1000))"),"
}

@test "sbx-check grant: the documented defaults of --cwd, --timeout, the stdin and --kind" {
	local key cwd t stdin kind ws
	ws=$(ns_ws)
	key=$NS_DIR/grant.key
	head -c 32 /dev/urandom >"$key"
	chmod 0600 "$key"
	cwd=$(documented sbx-check 'grant: the command.s working directory as the launcher will set it .* Default: (the current directory)\.')
	t=$(documented sbx-check 'the run.s timeout, seconds with up to three decimals, at most one week\. Default: none \(([0-9]+)\)\.')
	documented sbx-check '(Without either option the stdin is empty)\.'
	kind=$(documented sbx-check '^ *grant: the kind\. ([a-z]+) \(the default with --plan\)')
	assert_equal "$cwd" "the current directory"
	run -0 --separate-stderr sh -c 'cd "$1" && sbx-check grant --key "$2" --kind argv -- /bin/true' sh "$ws" "$key"
	local dflt=$output
	assert_line "timeout-ms=$t"
	assert_line "stdin-sha256=$(: | sha256sum | cut -d' ' -f1)"
	run -0 --separate-stderr sh -c 'cd / && sbx-check grant --key "$2" --kind argv --cwd "$1" -- /bin/true' sh "$ws" "$key"
	assert_equal "$(grep ^cwd= <<<"$output")" "$(grep ^cwd= <<<"$dflt")"
	ns_root --workspace "$ws" --dry-run -- /bin/true >"$NS_DIR/plan.json"
	run -0 --separate-stderr sbx-check grant --key "$key" --plan "$NS_DIR/plan.json"
	assert_line "kind=$kind"
}

@test "sbx-seatbelt: the default --net is none" {
	local ws
	ws=$(ns_ws)
	documented sbx-seatbelt '^ *none \((the default)\): no network at all'
	run -0 --separate-stderr sbx-seatbelt --workspace "$ws" --print-profile
	local dflt=$output
	run -0 --separate-stderr sbx-seatbelt --workspace "$ws" --net none --print-profile
	assert_equal "$output" "$dflt"
	run -0 --separate-stderr sbx-seatbelt --workspace "$ws" --net broker-port=3128 --print-profile
	[ "$output" != "$dflt" ]
}

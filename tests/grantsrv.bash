# Shared by the suites of granted living sandboxes (34-ns-serve-grant,
# 68-ns-plan-view): `load grantsrv` after ns.

# Each test's: ws (a workspace), key (a grant key), id (--uid/--gid of the
# test user); the server it started is killed at its end.
srv_setup() {
	ws=$(ns_ws)
	key="$NS_DIR/key.$BATS_TEST_NUMBER"
	head -c 32 /dev/urandom >"$key"
	chmod 0600 "$key"
	id=(--uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID")
	SRV_PID=
}
srv_teardown() {
	if [ -n "${SRV_PID:-}" ]; then
		kill -9 "$SRV_PID" 2>/dev/null || :
		wait "$SRV_PID" 2>/dev/null || :
	fi
}

# srv_up [root|user] [run options...]: a living sandbox on $ws at $SOCK,
# --grant-key $key unless GRANT_KEY= is set empty, its status in
# $SRV/status; returns once it is ready. JOIN: the client, as the server's
# identity, CHECK sbx-check as that identity (the key is its own).
srv_up() {
	local mode=root line
	case ${1:-} in root | user) mode=$1; shift ;; esac
	SRV=$(mktemp -d "$NS_DIR/srv.XXXXXX")
	chmod 0700 "$SRV"
	SOCK=$SRV/s
	mkfifo "$SRV/ready"
	local k=()
	[ "${GRANT_KEY-x}" = "" ] || k=(--grant-key "$key")
	if [ "$mode" = root ]; then
		sbx-ns "${id[@]}" --workspace "$ws" --ro "$NS_DIR/bin" --net none "${k[@]}" \
			--serve "$SOCK" --ready-fd 3 --status-fd 4 "$@" \
			3>"$SRV/ready" 4>"$SRV/status" </dev/null >"$SRV/out" 2>"$SRV/err" &
		JOIN=(sbx-ns --join "$SOCK")
		CHECK=(sbx-check)
	else
		chown "$SBX_TEST_UID:$SBX_TEST_GID" "$SRV" "$key"
		as_user sbx-ns --workspace "$ws" --ro "$NS_DIR/bin" --net none "${k[@]}" \
			--serve "$SOCK" --ready-fd 3 --status-fd 4 "$@" \
			3>"$SRV/ready" 4>"$SRV/status" </dev/null >"$SRV/out" 2>"$SRV/err" &
		JOIN=(as_user sbx-ns --join "$SOCK")
		CHECK=(as_user sbx-check)
	fi
	SRV_PID=$!
	read -r line <"$SRV/ready" || {
		echo "srv_up: not ready: $(cat "$SRV/err")" >&2
		return 1
	}
}

# The stop: the client and the server exit 0, and the server said nothing.
srv_down() {
	local rc=0
	run -0 --separate-stderr "${JOIN[@]}" --stop
	assert_equal "$stderr" ""
	wait "$SRV_PID" || rc=$?
	SRV_PID=
	assert_equal "$rc" 0
	assert_equal "$(cat "$SRV/err")" ""
}

# plan [join options...] -- PROG...: the plan of that command in the
# sandbox into $ws.plan, and a grant for it (with $GRANT_OPTS) into GRANT
# (default $ws.grant).
plan() {
	"${JOIN[@]}" --dry-run "$@" >"$ws.plan" </dev/null
	# shellcheck disable=SC2086
	"${CHECK[@]}" grant --key "$key" --plan "$ws.plan" ${GRANT_OPTS:-} >"${GRANT:-$ws.grant}"
}

# granted [join options...] -- PROG...: the command with the grant on fd 3
# (GRANT, default $ws.grant), stdin empty.
granted() {
	"${JOIN[@]}" --grant-fd 3 "$@" 3<"${GRANT:-$ws.grant}" </dev/null
}


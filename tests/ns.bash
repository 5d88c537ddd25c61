# Shared by the sbx-ns suites (tests/1N-ns-*.bats, 2N-ns-*.bats): `load ns`.
# A scratch tree per file: bin/ holds the attempt program (bound read-only
# into the sandbox), ws/ a workspace owned by the unprivileged test user,
# so the same workspace serves root runs (--uid/--gid of that user) and runs
# as that user.

# A suite that loads this file gets the scratch tree per file as its
# setup_file and teardown_file; one that needs more defines its own and
# calls these.
setup_file() { ns_setup_file; }
teardown_file() { ns_teardown_file; }

ns_setup_file() {
	sbx_test_user
	NS_DIR=$(sbx_scratch)
	mkdir -p "$NS_DIR/bin" "$NS_DIR/ws"
	cp "$SBX_TESTBIN/ns-attempt" "$SBX_TESTBIN/ns-nolandlock" "$NS_DIR/bin/"
	chmod 0755 "$NS_DIR/bin/ns-attempt" "$NS_DIR/bin/ns-nolandlock"
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$NS_DIR/ws"
	export NS_DIR NS_WS="$NS_DIR/ws" NS_ATT="$NS_DIR/bin/ns-attempt"
}

ns_teardown_file() {
	[ -n "${NS_DIR:-}" ] && rm -rf "$NS_DIR"
}

# A fake key in the test user's ~/.ssh (the escape catalogs try to read it);
# exports NS_HOME.
ns_home_ssh() {
	NS_HOME=$(getent passwd "$SBX_TEST_USER" | cut -d: -f6)
	mkdir -p "$NS_HOME/.ssh"
	[ -f "$NS_HOME/.ssh/id_rsa" ] || echo "fake key" >"$NS_HOME/.ssh/id_rsa"
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$NS_HOME/.ssh"
	chmod 0700 "$NS_HOME/.ssh"
	export NS_HOME
}

# What int 0x80 must give inside a sandbox: SIGSYS from the filter, or,
# on a kernel that runs no 32-bit code (ia32 emulation off, as on some
# hypervisors), the fault it gives outside too, before any filter sees
# it. Never "ok".
ns_int80_want() {
	local out
	out=$("$NS_ATT" int80)
	if [ "$out" = "int80: Segmentation fault" ]; then
		echo "$out"
	else
		echo "int80: SIGSYS"
	fi
}

# A fresh workspace for one test, owned by the test user.
ns_ws() {
	local d
	d=$(mktemp -d "$NS_DIR/ws.XXXXXX")
	chmod 0755 "$d"
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$d"
	echo "$d"
}

# Real work's sources (tests/work/manifest: Debian's GNU hello), fetched and
# verified by deps/build.sh --fetch once and cached in build/work-src; from
# setup_file: exports WORK_SRC.
ns_work_src() {
	WORK_SRC=$SBX_ROOT/build/work-src
	"$SBX_ROOT/deps/build.sh" --fetch "$SBX_ROOT/tests/work/manifest" "$WORK_SRC"
	chmod 0755 "$WORK_SRC"
	export WORK_SRC
}

# ns_hello WS: GNU hello's source unpacked into WS (WS/hello-2.10), root's.
ns_hello() {
	tar -xzf "$WORK_SRC/hello_2.10.orig.tar.gz" -C "$1"
}

# ns_grant_resign KEY GRANT EXPIRES: the grant file GRANT with its expiry
# set to EXPIRES (seconds since the epoch), signed again with KEY as the
# documented MAC is made: HMAC over every line before mac=.
ns_grant_resign() {
	python3 - "$@" <<'EOF'
import hashlib, hmac, sys
key, path, exp = open(sys.argv[1], "rb").read(), sys.argv[2], sys.argv[3]
lines = [l for l in open(path).read().split("\n") if l]
lines = [("expires=" + exp) if l.startswith("expires=") else l for l in lines if not l.startswith("mac=")]
body = "".join(l + "\n" for l in lines)
mac = hmac.new(key, b"sbx-grant-v2 mac\0" + body.encode(), hashlib.sha256).hexdigest()
open(path, "w").write(body + "mac=" + mac + "\n")
EOF
}

# sbx-ns as root, the command as the test user.
ns_root() {
	sbx-ns --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" "$@"
}

# sbx-ns as the test user.
ns_user() {
	as_user sbx-ns "$@"
}

# Run one attempt in both modes and expect the same line from each.
# Usage: ns_expect WS "expected line" attempt [args...]
ns_expect() {
	local ws=$1 want=$2
	shift 2
	run -0 --separate-stderr ns_root --workspace "$ws" --ro "$NS_DIR/bin" -- "$NS_ATT" "$@"
	assert_output "$want"
	assert_equal "$stderr" ""
	run -0 --separate-stderr ns_user --workspace "$ws" --ro "$NS_DIR/bin" -- "$NS_ATT" "$@"
	assert_output "$want"
	assert_equal "$stderr" ""
}

# Run "$@" with fd 5 on the captured stdout: `run ns_fd5 ns_user --status-fd 5 ...`
# (a redirection written after `run` would point at the test's own stdout).
ns_fd5() {
	"$@" 5>&1
}

# A repo-shaped workspace owned by the test user: .env, .env.local,
# .git/config, an executable .git/hooks/pre-commit, src/main.c.
ns_repo() {
	local ws
	ws=$(ns_ws)
	mkdir -p "$ws/.git/hooks" "$ws/src"
	echo "[core]" > "$ws/.git/config"
	echo "#!/bin/sh" > "$ws/.git/hooks/pre-commit"
	chmod 755 "$ws/.git/hooks/pre-commit"
	echo "KEY=1" > "$ws/.env"
	echo "KEY=2" > "$ws/.env.local"
	echo "int main;" > "$ws/src/main.c"
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$ws"
	echo "$ws"
}

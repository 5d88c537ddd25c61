# Shared by every bats file: `load helpers`.
# SBX_ROOT is the repository, SBX_BIN the directory of the binaries under test.
# What only some suites share lives beside it: ns.bash (the sbx-ns
# suites: a scratch tree, sbx-ns as root and as the test user, a repo-shaped
# workspace) and ns-net.bash (their network namespaces, origins
# and brokers). tests/vm/helpers/ is the VM's. netns.bash (two network
# namespaces joined by a veth pair) and wait.bash (wait_for, net_wait_port)
# are sourced here and by the benches.
. "${BASH_SOURCE[0]%/*}/netns.bash"
. "${BASH_SOURCE[0]%/*}/wait.bash"

SBX_ROOT="$(cd "${BASH_SOURCE[0]%/*}/.." && pwd)"
: "${SBX_BIN:=$SBX_ROOT/bin}"
: "${SBX_TESTBIN:=$SBX_ROOT/build/obj-static/testbin}"
export SBX_ROOT SBX_BIN SBX_TESTBIN
# The system's own command path, whatever the caller's shell adds (pyenv's
# shims, ~/.cargo/bin): sbx-ns tells when the caller's PATH finds a bare
# name elsewhere than the sandbox does, which must not depend on who runs
# the suite.
PATH="$SBX_BIN:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# The field the first status line of a run carries after "event", for
# tests that compare whole lines: ,"version":"X.Y.Z" from the binaries
# under test ("sbx-ns X.Y.Z (commit HASH, STATE)").
read -r _ SBX_VER _ < <("$SBX_BIN/sbx-ns" --version)
SBX_VER=',"version":"'"$SBX_VER"'"'

bats_require_minimum_version 1.5.0

# sbx-ns keeps the host's CA variables and binds what they name
# (tests/37-ns-ca.bats); every other suite states the command's whole
# environment and plan, so it runs without whatever the host sets.
unset SSL_CERT_FILE SSL_CERT_DIR NODE_EXTRA_CA_CERTS REQUESTS_CA_BUNDLE CURL_CA_BUNDLE GIT_SSL_CAINFO PIP_CERT
# `make check` exports the build's SOURCE_DATE_EPOCH and its own make
# state; the builds a suite makes (a copy of the tree, a release tarball, a
# package) take their date from their own commit, COMMIT file or changelog,
# and run as a user's top-level make would.
unset SOURCE_DATE_EPOCH MAKELEVEL MAKEFLAGS MFLAGS MAKEOVERRIDES
# bats-support, bats-assert and bats-file, sourced file by file: every test
# loads them again, and their load.bash files start one dirname process per
# file, 17 per test, which cost as much as the tests themselves.
for _lib in /usr/lib/bats/bats-support /usr/lib/bats/bats-assert /usr/lib/bats/bats-file; do
	for _f in "$_lib"/src/*.bash; do
		. "$_f"
	done
done
unset _lib _f

# A skipped test is a failed test: a broken environment must never look like
# a passing suite. What this host cannot run belongs in tests/vm/.
skip() {
	echo "skip is not allowed (strict mode): ${*:-no reason}" >&2
	return 1
}

# The unprivileged user the suites run commands as (created once, as root).
SBX_TEST_USER=sbxtest
sbx_test_user() {
	if ! id -u "$SBX_TEST_USER" >/dev/null 2>&1; then
		useradd --create-home --shell /bin/bash "$SBX_TEST_USER" >/dev/null 2>&1 ||
			id -u "$SBX_TEST_USER" >/dev/null
	fi
	SBX_TEST_UID=$(id -u "$SBX_TEST_USER")
	SBX_TEST_GID=$(id -g "$SBX_TEST_USER")
	export SBX_TEST_UID SBX_TEST_GID
}

# Run a command as the unprivileged user, with a clean environment; with
# --offline first, in a network namespace of its own made by root (no
# route, no resolver: nothing can be downloaded).
as_user() {
	local pre=()
	if [ "${1-}" = --offline ]; then
		pre=(unshare -n --)
		shift
	fi
	"${pre[@]}" setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" --init-groups \
		--reset-env -- env PATH="$SBX_BIN:/usr/local/bin:/usr/bin:/bin" "$@"
}

# A scratch directory the unprivileged user can also use.
sbx_scratch() {
	local d
	d=$(mktemp -d /var/tmp/sbx-test.XXXXXX)
	chmod 0755 "$d"
	echo "$d"
}

# curl says how long a refused connect took ("after 0 ms"), 1 ms or more on a
# loaded machine: the count is not what a test checks, so it reads as 0.
curl_ms() {
	output=$(sed -E 's/ after [0-9]+ ms: / after 0 ms: /' <<<"$output")
	stderr=$(sed -E 's/ after [0-9]+ ms: / after 0 ms: /' <<<"${stderr-}")
}

# Background processes a test started (BG_PIDS+=("$!")); bg_end, from a
# teardown, kills and reaps those still running, so that a failed test
# leaves none behind.
BG_PIDS=()
bg_end() {
	local p
	for p in "${BG_PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null || :
		wait "$p" 2>/dev/null || :
	done
	BG_PIDS=()
}

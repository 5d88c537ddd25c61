#!/bin/bash
# contrib/python/sbx_session.py against real living sandboxes
# (tests/python/test_sbx_session.py, unittest): as root, whose sandboxes
# run as the test user, then as the test user. SBX_BIN names the tools
# under test (default: bin/). The last line is "python: N passed, N failed".
set -u
cd "$(dirname "$0")/../.." || exit 111
# The system's python3 (Debian's), whatever the caller's shell adds.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
: "${SBX_BIN:=$PWD/bin}"
export SBX_BIN
user=sbxtest
id -u "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user" >/dev/null 2>&1 || id -u "$user" >/dev/null
# A directory of a third uid, which neither identity may use.
others=$(mktemp -d /var/tmp/sbx-py-others.XXXXXX)
out=$(mktemp)
trap 'rm -rf "$others" "$out"' EXIT
chown nobody: "$others"
chmod 0755 "$others"
# -B: no __pycache__ in the tree.
SBX_PY_OTHERS_DIR=$others python3 -B tests/python/test_sbx_session.py 2>&1 | tee "$out"
setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" --init-groups --reset-env -- \
	env PATH=/usr/local/bin:/usr/bin:/bin SBX_BIN="$SBX_BIN" SBX_PY_OTHERS_DIR="$others" \
	python3 -B tests/python/test_sbx_session.py 2>&1 | tee -a "$out"
grep -E '^python-(root|user): [0-9]+ passed, [0-9]+ failed$' "$out" |
	awk '{ p += $2; f += $4; n++ } END { if (n < 2) f++; printf "python: %d passed, %d failed\n", p, f; exit f > 0 }'

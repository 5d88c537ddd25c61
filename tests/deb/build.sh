#!/bin/bash
# tests/deb/build.sh: the Debian package of the tree under test, built once for
# its content and kept; prints the path of the .deb. tests/90-deb.bats,
# tests/09-reproducible.bats and tests/vm/debian.sh all take the package from here.
#
# The tree ($SBX_ROOT) is cloned as tests/tree.bash clones it: its working tree,
# when it differs from HEAD, committed on top and dated as HEAD, so one content
# gives one commit, and that commit names the cache entry
# $SBX_DEB_CACHE/COMMIT (default $SBX_ROOT/build/deb). On a miss the entry gets
# the commit's files and a COMMIT file naming it, as a release tarball holds
# them (src/sbx), the pinned libraries `make` built ($SBX_ROOT/build/deps), and
# `dpkg-buildpackage -us -uc -b` in a network namespace with no network, the
# pinned sources from the download cache (SBX_DEPS_CACHE, default
# $SBX_ROOT/build/deps-src), its unit tests left to make check
# (DEB_BUILD_OPTIONS=nocheck), two jobs as make check's builds. The entry keeps the built tree for a rebuild
# (dpkg-buildpackage -nc) and build.log; older entries are removed.
#
# As root (unshare). Exit status: 0, with the .deb's path on stdout; 1 when
# dpkg-buildpackage fails (the log's last lines on stderr); 2 when the tree
# cannot be copied.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SBX_ROOT=${SBX_ROOT:-$(cd "$here/../.." && pwd)}
cache=${SBX_DEB_CACHE:-$SBX_ROOT/build/deb}
die() { echo "sbx-deb: fatal: $*" >&2; exit "${2:-2}"; }
# The package takes its date from debian/changelog and runs make as a user's
# top-level build does, whatever `make check` exports.
unset SOURCE_DATE_EPOCH MAKELEVEL MAKEFLAGS MFLAGS MAKEOVERRIDES
# shellcheck source=SCRIPTDIR/../tree.bash
. "$here/../tree.bash"

mkdir -p "$cache" || die "unable to create $cache"
cache=$(cd "$cache" && pwd)
exec 9>"$cache/.lock"
flock 9
clone=$cache/.clone
rm -rf "$clone"
tree_clone "$clone" || die "unable to clone $SBX_ROOT into $clone"
commit=$(git -C "$clone" rev-parse HEAD)
entry=$cache/$commit
deb=$(cat "$entry/deb" 2>/dev/null || :)
if [ -n "$deb" ] && [ -f "$deb" ]; then
	rm -rf "$clone"
	echo "$deb"
	exit 0
fi

rm -rf "$entry"
src=$entry/src/sbx
mkdir -p "$src/build" || die "unable to create $src"
git -C "$clone" archive HEAD | tar -x -C "$src" || die "unable to copy $commit into $src"
printf 'commit %s\ndate %s\n' "$commit" "$(git -C "$clone" log -1 --format=%ct)" >"$src/COMMIT"
rm -rf "$clone"
[ -f "$SBX_ROOT/build/deps/.stamp" ] || die "no pinned libraries in $SBX_ROOT/build/deps; build them first with \`make deps\`"
cp -a "$SBX_ROOT/build/deps/." "$src/build/deps/" || die "unable to copy $SBX_ROOT/build/deps into $src"
echo "sbx-deb: building the package of $commit in $src" >&2
(cd "$src" && SBX_DEPS_CACHE=${SBX_DEPS_CACHE:-$SBX_ROOT/build/deps-src} DEB_BUILD_OPTIONS="nocheck parallel=2" \
	unshare -n dpkg-buildpackage -us -uc -b) >"$entry/build.log" 2>&1 ||
	{ tail -n 30 "$entry/build.log" >&2; die "dpkg-buildpackage failed in $src (log: $entry/build.log)" 1; }
deb=$(ls "$entry"/src/sbx_*_amd64.deb) || die "dpkg-buildpackage made no sbx_*_amd64.deb in $entry/src" 1
echo "$deb" >"$entry/deb"
for old in "$cache"/*/; do
	[ "${old%/}" = "$entry" ] || rm -rf "${old%/}"
done
echo "$deb"

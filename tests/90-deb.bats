#!/usr/bin/env bats
# The Debian package (debian/): built with dpkg-buildpackage from a copy of
# the tree in a network namespace with no network, from the pinned sources
# deps/build.sh verified into its cache; checked by lintian; installed,
# upgraded, removed and purged with dpkg in a minimal Debian 12 root made
# offline from a verified debootstrap tarball (tests/deb/chroot.sh), never on
# the host.

bats_require_minimum_version 1.5.0
load helpers
load recipes

# The committed tree into $1, as a release tarball holds it: HEAD's files
# and a COMMIT file naming HEAD (what --version then names).
copy_tree() {
	mkdir -p "$1"
	git -C "$SBX_ROOT" archive HEAD | tar -x -C "$1"
	printf 'commit %s\ndate %s\n' "$(git -C "$SBX_ROOT" rev-parse HEAD)" \
		"$(git -C "$SBX_ROOT" log -1 --format=%ct)" >"$1/COMMIT"
}

# dpkg-buildpackage in $1 with no network; the pinned sources from $2.
build_deb() {
	(cd "$1" && SBX_DEPS_CACHE=$2 unshare -n dpkg-buildpackage -us -uc -b "${@:3}")
}

# Runs a command in the root, with its own /proc and no network.
in_root() {
	unshare -mpfn --mount-proc="$ROOT/proc" chroot "$ROOT" "$@" </dev/null
}

# Every entry of the root outside /proc, /sys and /dev: type, mode, owner,
# path, and the SHA-256 of each regular file but dpkg's log and backups;
# not the backups the group tools keep of /etc/group and /etc/gshadow (their
# previous version) nor adduser's lock file (in /run, a tmpfs when booted).
listing() {
	(cd "$ROOT" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev \
		-o -path ./etc/group- -o -path ./etc/gshadow- -o -path ./run/adduser \) -prune -o \
		-printf '%y %m %u:%g %p\n' | LC_ALL=C sort)
	(cd "$ROOT" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev \
		-o -path ./etc/group- -o -path ./etc/gshadow- -o -path ./run/adduser \
		-o -path ./var/log/dpkg.log -o -path './var/lib/dpkg/*-old' \) -prune -o \
		-type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
}

# The tools: every cmd/TOOL.
tools() {
	(cd "$SBX_ROOT/cmd" && printf '%s\n' */ | tr -d / | LC_ALL=C sort)
}

setup_file() {
	export D=$BATS_FILE_TMPDIR
	export SRC=$D/src/sbx
	export ROOT=$D/root
	read -r _ REL _ < <("$SBX_BIN/sbx-ns" --version)
	export REL HEAD_COMMIT DEB
	local cache=${SBX_DEPS_CACHE:-$SBX_ROOT/build/deps-src}
	# The package of the tree under test, built once for its content
	# (tests/deb/build.sh); its built tree, for the rebuild.
	DEB=$("$SBX_ROOT/tests/deb/build.sh") || return 1
	mkdir -p "$D/src"
	cp -a "${DEB%/*}/sbx" "$SRC"
	HEAD_COMMIT=$(sed -n 's/^commit //p' "$SRC/COMMIT")
	mkdir "$D/x"
	dpkg-deb -x "$DEB" "$D/x"
	# The same tree again with a higher version: a rebuild of the release.
	local log=$SRC/debian/changelog
	{
		printf 'sbx (%s+1) unstable; urgency=medium\n\n  * Rebuild.\n\n' "$REL"
		printf ' -- %s  %s\n\n' "$(dpkg-parsechangelog -l "$log" -S Maintainer)" \
			"$(date -R -d @$(($(dpkg-parsechangelog -l "$log" -S Timestamp) + 86400)))"
		cat "$log"
	} >"$D/changelog"
	cp "$D/changelog" "$log"
	DEB_BUILD_OPTIONS=nocheck build_deb "$SRC" "$cache" -nc >"$D/build2.log" 2>&1 || { tail -n 30 "$D/build2.log"; return 1; }
	export DEB2=$D/src/sbx_${REL}+1_amd64.deb
	"$SBX_ROOT/tests/deb/chroot.sh" "$ROOT"
	cp "$DEB" "$DEB2" "$ROOT/tmp/"
	listing >"$D/before"
}

@test "the package is the static build of the tree's commit: each tool names it, the package's version their release" {
	[ -f "$DEB" ]
	[ -f "$DEB2" ] || { tail -n 20 "$D/build2.log"; false; }
	run -0 dpkg-deb -f "$DEB" Package Version Architecture Built-Using
	local bu
	bu=$({ dpkg-query -W -f='${source:Package} (= ${source:Version})\n' musl-dev
		awk '!/^#/ && NF { print $1 " (= " $2 ")" }' "$SBX_ROOT/deps/manifest"; } | sort -u | paste -sd, - | sed 's/,/, /g')
	assert_output "Package: sbx
Version: $REL
Architecture: amd64
Built-Using: $bu"
	local t n=0
	for t in $(tools); do
		run -0 file -b "$D/x/usr/bin/$t"
		assert_output --partial "statically linked"
		run -0 "$D/x/usr/bin/$t" --version
		assert_output "$t $REL (commit $HEAD_COMMIT, clean)"
		n=$((n + 1))
	done
	[ "$n" -ge 7 ]
	cmp "$SBX_ROOT/contrib/session/sbx-session" "$D/x/usr/bin/sbx-session"
}

@test "the package installs what make install does: one list" {
	run -0 make -C "$SBX_ROOT" --no-print-directory -s install DESTDIR="$D/mi" PREFIX=/usr \
		SYSTEMD_UNIT_DIR=/lib/systemd/system APPARMOR=yes
	(cd "$D/mi" && find . ! -type d | LC_ALL=C sort) >"$D/mi.list"
	dpkg-deb -c "$DEB" | awk '$1 !~ /^d/ { print $6 }' | grep -v -e '^\./usr/share/doc/sbx/' -e '^\./usr/share/lintian/overrides/sbx$' |
		sed 's/\.gz$//' | LC_ALL=C sort >"$D/deb.list"
	run -0 cat "$D/deb.list"
	assert_output "$({
		printf '%s\n' ./etc/apparmor.d/sbx-ns ./lib/systemd/system/sbx-broker@.service \
			./lib/systemd/system/sbx-broker@.socket ./usr/bin/sbx-session ./usr/share/sbx/manifest
		tools | sed 's|^|./usr/bin/|'
		(cd "$SBX_ROOT/man" && printf './usr/share/man/man1/%s\n' *.1)
	} | LC_ALL=C sort)"
	# A man page for every tool.
	for t in $(tools); do
		assert_line "./usr/share/man/man1/$t.1"
	done
	run -0 diff "$D/mi.list" "$D/deb.list"
	# The units and the profile name the installed tools; nothing else of them changes.
	local u
	for u in sbx-broker@.service sbx-broker@.socket; do
		sed 's|/usr/local/bin/|/usr/bin/|g' "$SBX_ROOT/contrib/systemd/$u" | cmp - "$D/x/lib/systemd/system/$u"
	done
	run -0 grep '^ExecStart=' "$D/x/lib/systemd/system/sbx-broker@.service"
	assert_output 'ExecStart=/usr/bin/sbx-broker $SBX_BROKER_ARGS'
	run -0 grep '^profile' "$D/x/etc/apparmor.d/sbx-ns"
	assert_output "profile sbx-ns /usr/bin/sbx-ns flags=(unconfined) {"
	# The same tools in both manifests.
	run -0 diff <(awk '{ print $2 }' "$D/mi/usr/share/sbx/manifest") <(awk '{ print $2 }' "$D/x/usr/share/sbx/manifest")
	run -0 dpkg-deb -I "$DEB" conffiles
	assert_output "/etc/apparmor.d/sbx-ns"
}

@test "make install refuses an APPARMOR that is not auto or yes" {
	# make ends a failed recipe with its own 2, after the recipe's line.
	run -2 --separate-stderr make -C "$SBX_ROOT" --no-print-directory -s install DESTDIR="$D/bad" APPARMOR=no
	assert_equal "${stderr_lines[0]}" "sbx: usage: APPARMOR is auto or yes, not 'no'"
	assert_regex "${stderr_lines[1]}" '^make: \*\*\* \[Makefile:[0-9]+: install\] Error 100$'
	assert_equal "${#stderr_lines[@]}" 2
	assert_not_exist "$D/bad"
}

@test "lintian: no error, and each warning and override is one docs/package.md explains" {
	run -0 --separate-stderr lintian --fail-on error --pedantic --tag-display-limit 0 "$DEB"
	refute_line --regexp '^E: '
	# Again with the overrides shown (lintian's exit then counts them).
	run -0 --separate-stderr lintian --fail-on none --pedantic --show-overrides --tag-display-limit 0 "$DEB"
	local tags tag
	tags=$(grep -Eo '^[WO]: sbx: [a-z0-9-]+' <<<"$output" | awk '{ print $3 }' | sort -u)
	[ -n "$tags" ]
	for tag in $tags; do
		grep -q "^| \`$tag\` |" "$SBX_ROOT/docs/package.md" || { echo "docs/package.md does not explain $tag"; false; }
	done
	# And it lists no tag lintian no longer reports.
	run -0 sed -n '/^| lintian tag |/,/^$/p' "$SBX_ROOT/docs/package.md"
	for tag in $(grep -Eo '^\| `[a-z0-9-]+`' <<<"$output" | tr -d '|` '); do
		grep -qx "$tag" <<<"$tags" || { echo "docs/package.md explains $tag, which lintian does not report"; false; }
	done
}

@test "without the pinned sources in the cache the build stops before the network and names make deps" {
	copy_tree "$D/nocache/sbx"
	mkdir "$D/empty"
	run ! build_deb "$D/nocache/sbx" "$D/empty"
	assert_line "sbx: fatal: unable to build deps libseccomp=2.5.4-1+deb12u1 offline: its sources are not in the download cache $D/empty; fetch them first with \`make deps\` (or point SBX_DEPS_CACHE at a cache that holds them)"
	run -0 find "$D/empty" -type f
	assert_output ""
	assert_not_exist "$D/nocache/sbx/build/deps/.stamp"
	run -100 --separate-stderr env SBX_DEPS_OFFLINE=yes "$SBX_ROOT/deps/build.sh" "$D/nocache/prefix"
	assert_equal "$stderr" "sbx: usage: SBX_DEPS_OFFLINE is 0 or 1, not 'yes'"
}

@test "dpkg -i in a Debian 12 root: the tools, the manifest sbx-check tools verifies, the profile disabled for its old parser" {
	run -0 in_root dpkg -i "/tmp/${DEB##*/}"
	assert_line "sbx: /etc/apparmor.d/sbx-ns is disabled (/etc/apparmor.d/disable/sbx-ns): this apparmor_parser does not know its AppArmor 4.0 rules; sbx-ns needs the profile only where AppArmor restricts user namespaces, which takes AppArmor 4.0"
	run -0 in_root dpkg-query -W -f='${Status} ${Version}' sbx
	assert_output "install ok installed $REL"
	run -0 in_root sbx-ns --version
	assert_output "sbx-ns $REL (commit $HEAD_COMMIT, clean)"
	run -0 in_root sbx-check tools
	assert_line --regexp "^manifest +ok +/usr/bin/\\.\\./share/sbx/manifest lists $(tools | wc -l) tools\$"
	assert_line --regexp '^sbx-ns +ok +path=/usr/bin/sbx-ns .* linkage=static links=1 owner=0 mode=0755 manifest=intact$'
	assert_line "result: all checks passed (exit 0)"
	run -0 readlink "$ROOT/etc/apparmor.d/disable/sbx-ns"
	assert_output "../sbx-ns"
	# The host has no AppArmor: nothing was loaded, nothing cached.
	run -0 find "$ROOT/var/cache/apparmor" -name sbx-ns
	assert_output ""
	assert_file_exist "$ROOT/usr/share/man/man1/sbx-ns.1.gz"
	assert_file_exist "$ROOT/lib/systemd/system/sbx-broker@.socket"
	assert_file_exist "$ROOT/usr/bin/sbx-session"
	# The group the broker's socket units give their sockets to: a system group, made
	# by the package.
	run -0 in_root getent group sbx
	assert_regex "$output" '^sbx:x:[0-9]+:$'
	local gid=${output#sbx:x:}
	gid=${gid%:}
	[ "$gid" -lt 1000 ] || fail "group sbx has gid $gid, not a system group's"
	assert_file_exist "$ROOT/var/lib/sbx/group-created"
}

@test "upgrade to a higher version keeps a modified conffile" {
	echo "# a site's change" >>"$ROOT/etc/apparmor.d/sbx-ns"
	run -0 in_root dpkg -i "/tmp/${DEB2##*/}"
	refute_line --partial "is disabled"
	run -0 in_root dpkg-query -W -f='${Status} ${Version}' sbx
	assert_output "install ok installed $REL+1"
	run -0 tail -n 1 "$ROOT/etc/apparmor.d/sbx-ns"
	assert_output "# a site's change"
	run -0 in_root sbx-check tools
	assert_line "result: all checks passed (exit 0)"
}

@test "remove keeps the conffile; purge leaves nothing of sbx" {
	run -0 in_root dpkg -r sbx
	assert_not_exist "$ROOT/usr/bin/sbx-ns"
	assert_not_exist "$ROOT/usr/share/sbx"
	assert_file_exist "$ROOT/etc/apparmor.d/sbx-ns"
	run -0 in_root dpkg-query -W -f='${db:Status-Abbrev}' sbx
	assert_output "rc "
	run -0 in_root dpkg --purge sbx
	listing >"$D/after"
	diff "$D/before" "$D/after"
	run -1 grep -r sbx "$ROOT/var/lib/dpkg/triggers"
	run -2 in_root getent group sbx
}

@test "a group sbx the administrator made, or one with a member, stays on purge" {
	in_root groupadd --system sbx
	run -0 in_root dpkg -i "/tmp/${DEB##*/}"
	assert_not_exist "$ROOT/var/lib/sbx/group-created"
	run -0 in_root dpkg --purge sbx
	run -0 in_root getent group sbx
	in_root groupdel sbx
	run -0 in_root dpkg -i "/tmp/${DEB##*/}"
	in_root gpasswd -a nobody sbx >/dev/null
	run -0 in_root dpkg --purge sbx
	run -0 in_root getent group sbx
	assert_regex "$output" '^sbx:x:[0-9]+:nobody$'
	assert_not_exist "$ROOT/var/lib/sbx"
}

# The README's install recipe, as written, in the root (tests/recipes.bash):
# from a copy of the source whose parent holds the package, as
# dpkg-buildpackage leaves it; then the root is purged back to its state.
@test "the README's package recipe as written: dpkg -i of the package, then what it installed" {
	mkdir -p "$ROOT/root/src/sbx"
	cp "$DEB" "$ROOT/root/src/"
	recipes_setup
	RECIPE_CHROOT=$ROOT RECIPE_CWD=/root/src/sbx recipes_run_kind env=deb || { rm -rf "$RECIPE_DIR"; false; }
	rm -rf "$RECIPE_DIR" "$ROOT/root/src" "$ROOT/tmp/recipe.sh"
	run -0 in_root dpkg --purge sbx
}

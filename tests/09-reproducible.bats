#!/usr/bin/env bats
# Reproducible builds and the release. Two clean copies of the tree under
# test, in two directories of different names, are built for real: one by
# root with `make` (time zone UTC, umask 022) on a copy of the deps prefix
# the tree under test built (by root, earlier, in its own directory), one by
# the test user as its Debian package (dpkg-buildpackage; another time zone,
# locale and umask 077, later) with its own deps prefix built by
# deps/build.sh from the verified download cache (no network). Their tools,
# deps archives and libsbx must be byte-identical, and the test user's .deb
# the one tests/deb/build.sh built (by root, in build/deb, earlier; the
# package tests/90-deb and the VM take), whose tools are make's; where they
# are not, diffoscope says where. (One deps build in the suite, not two: the
# deps are still built twice, by two users, in two directories, at two
# times.) `make dist` in both copies must give the same
# tarball and SHA256SUMS, and binaries equal to the git build's, which
# `sbx-check tools --manifest` accepts and a tampered one fails.

load helpers
load tree

# The builds are done once, in setup_file, and timed; the tests look at them.
setup_file() {
	sbx_test_user
	R=$(mktemp -d /var/tmp/sbx-repro.XXXXXX)
	chmod 0755 "$R"
	# Not A and B: make takes B from the environment (make B=DIR).
	TA=$R/a
	# The test user's copy in a directory of its own, where its package goes.
	TB=$R/b/second-copy-of-the-tree
	export R TA TB DEB
	CACHE=$(realpath "${SBX_DEPS_CACHE:-$SBX_ROOT/build/deps-src}")
	compgen -G "$CACHE/*.dsc" >/dev/null ||
		fail "no verified deps source cache at $CACHE: build the tree first (make deps)"
	tree_clone "$TA"
	mkdir "$R/b"
	tree_clone "$TB"
	[ -f "$SBX_ROOT/build/deps/.stamp" ] ||
		fail "no deps prefix at $SBX_ROOT/build/deps: build the tree first (make deps)"
	mkdir -p "$TA/build/deps"
	cp -a "$SBX_ROOT/build/deps/." "$TA/build/deps/"
	touch "$TA/build/deps/.stamp"
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$R/b"
	local t0 t1 t2 td
	td=$(date +%s)
	DEB=$("$SBX_ROOT/tests/deb/build.sh") || fail "tests/deb/build.sh failed"
	t0=$(date +%s)
	(cd "$TA" && env TZ=UTC LANG=C SBX_DEPS_CACHE="$CACHE" SBX_DEPS_JOBS=2 \
		bash -c 'umask 022 && make -j2 all') >"$R/a.log" 2>&1 ||
		fail "the build of $TA failed: $(tail -n 20 "$R/a.log")"
	t1=$(date +%s)
	# The test user's deps come from a copy of the cache holding just the
	# pinned files, built without the network.
	mkdir "$R/cache"
	grep -v -e '^#' -e '^$' "$SBX_ROOT/deps/manifest" | while read -r _ _ f _; do
		cp "$CACHE/$f" "$R/cache/$f"
	done
	chmod -R a+rX "$R/cache"
	as_user --offline env TZ=Pacific/Chatham LANG=C.UTF-8 SBX_DEPS_CACHE="$R/cache" SBX_DEPS_JOBS=2 \
		DEB_BUILD_OPTIONS='nocheck parallel=2' \
		bash -c "umask 077 && cd '$TB' && dpkg-buildpackage -us -uc -b" >"$R/b.log" 2>&1 ||
		fail "the package build of $TB as $SBX_TEST_USER failed: $(tail -n 20 "$R/b.log")"
	t2=$(date +%s)
	(cd "$TA" && make -j2 dist) >"$R/a-dist.log" 2>&1 ||
		fail "make dist in $TA failed: $(tail -n 20 "$R/a-dist.log")"
	as_user env TZ=Asia/Kathmandu bash -c "umask 077 && cd '$TB' && make -j2 dist" >"$R/b-dist.log" 2>&1 ||
		fail "make dist in $TB as $SBX_TEST_USER failed: $(tail -n 20 "$R/b-dist.log")"
	echo "the package (tests/deb/build.sh) $((t0 - td)) s, make as root $((t1 - t0)) s, the package as $SBX_TEST_USER $((t2 - t1)) s, make dist twice $(($(date +%s) - t2)) s" >"$R/times"
}

teardown_file() {
	rm -rf "$R"
}

setup() {
	VERSION=$(sed -n 's/^#define SBX_VERSION "\(.*\)"$/\1/p' "$TA/lib/opts.h")
	HEAD=$(git -C "$TA" rev-parse HEAD)
}

# Byte for byte, else what diffoscope finds (its first 60 lines).
same() {
	cmp -s "$1" "$2" && return 0
	echo "$1 and $2 differ:"
	diffoscope --no-progress --text - "$1" "$2" | head -n 60
	return 1
}

@test "two builds of one commit, by root with make and by $SBX_TEST_USER as the package in two directories, give identical tools, deps archives and libsbx" {
	local f n=0 bad=0
	echo "# builds with their deps prefix (-j2): $(cat "$R/times")" >&3
	assert_equal "$(git -c safe.directory="$TB" -C "$TB" rev-parse HEAD)" "$HEAD"
	for f in "$TA"/bin/* "$TA"/build/deps/lib/*.a "$TA"/build/obj-static/libsbx.a; do
		same "$f" "$TB/${f#"$TA"/}" || bad=1
		n=$((n + 1))
	done
	assert_equal "$bad" 0
	[ "$n" -ge 11 ] || fail "only $n files compared"
	run -0 ls "$TB/bin"
	assert_equal "$output" "$(ls "$TA/bin")"
}

@test "the test user's deps prefix is built from a copy of the cache holding just the pinned files, without the network, complete and once" {
	local want
	want=$(grep -v -e '^#' -e '^$' "$SBX_ROOT/deps/manifest" | awk '!s[$1]++ { printf "  DEPS    %s %s\n", $1, $2 }')
	run -0 grep '^  DEPS ' "$R/b.log"
	assert_output "$want"
	[ "${#lines[@]}" -ge 5 ] || fail "only ${#lines[@]} libraries built"
	assert_file_exists "$TB/build/deps/.stamp"
	assert_file_exists "$TB/build/deps/include/openssl/ssl.h"
	assert_file_exists "$TB/build/deps/include/sys/capability.h"
	assert_link_exists "$TB/build/deps/kinc/linux"
	# Built once: the same prefix again is left alone, silently.
	run -0 --separate-stderr as_user --offline env SBX_DEPS_CACHE="$R/cache" "$TB/deps/build.sh" "$TB/build/deps"
	assert_output ""
	assert_equal "$stderr" ""
}

@test "two package builds of one commit, by root and by $SBX_TEST_USER in two directories at two times, give one .deb, its tools make's" {
	local x=$R/deb n=0 t
	same "$DEB" "$R/b/${DEB##*/}"
	assert_equal "$(sed -n 's/^commit //p' "${DEB%/*}/sbx/COMMIT")" "$HEAD"
	mkdir "$x"
	dpkg-deb -x "$DEB" "$x"
	for t in "$TA"/bin/*; do
		same "$t" "$x/usr/bin/${t##*/}"
		n=$((n + 1))
	done
	[ "$n" -ge 7 ] || fail "only $n tools compared"
	# Its manifest is make install's, byte for byte.
	run -0 make -C "$TA" --no-print-directory -s install DESTDIR="$R/mi" PREFIX=/usr APPARMOR=yes
	same "$R/mi/usr/share/sbx/manifest" "$x/usr/share/sbx/manifest"
}

@test "the builds name the copy's commit, clean; an untracked file makes it dirty, and its removal clean and identical again" {
	local t
	for t in "$TA"/bin/*; do
		run -0 "$t" --version
		assert_output "${t##*/} $VERSION (commit $HEAD, clean)"
	done
	echo x >"$TA/notes"
	run -0 make -C "$TA" -j2 all
	# Only the file that holds the commit is compiled again, and the
	# seccomp filter sbx-ns generates with libsbx.
	assert_equal "$(grep '^  CC' <<<"$output")" "  CC      lib/opts.c
  CC      cmd/sbx-ns/seccomp.c"
	run -0 "$TA/bin/sbx-ns" --version
	assert_output "sbx-ns $VERSION (commit $HEAD, dirty)"
	rm "$TA/notes"
	run -0 make -C "$TA" -j2 all
	run -0 "$TA/bin/sbx-ns" --version
	assert_output "sbx-ns $VERSION (commit $HEAD, clean)"
	for t in "$TA"/bin/*; do
		same "$t" "$TB/bin/${t##*/}"
	done
}

@test "make dist: one tarball and SHA256SUMS from both copies; names sorted, owner 0:0, mtime the commit's, gzip without name or time" {
	local rel=$TA/build/release tgz epoch
	tgz=$rel/sbx-$VERSION.tar.gz
	epoch=$(git -C "$TA" log -1 --format=%ct)
	same "$tgz" "$TB/build/release/sbx-$VERSION.tar.gz"
	same "$rel/SHA256SUMS" "$TB/build/release/SHA256SUMS"
	run -0 ls "$rel"
	assert_output "SHA256SUMS
sbx-$VERSION.tar.gz
$(ls "$TA/cmd")"
	run -0 bash -c "cd '$rel' && sha256sum -c --strict SHA256SUMS"
	assert_equal "$(cut -d' ' -f3 "$rel/SHA256SUMS")" "sbx-$VERSION.tar.gz
$(ls "$TA/cmd")"
	# gzip: no file name (FLG bit 3) and MTIME 0.
	run -0 od -An -tx1 -j3 -N5 "$tgz"
	assert_output " 00 00 00 00 00"
	# Each directory's entries in byte order, directories before what they hold.
	run -0 tar -tzf "$tgz"
	assert_equal "$output" "$(python3 -c 'import sys
names = sys.stdin.read().splitlines()
print("\n".join(sorted(names, key=lambda p: [c.encode() for c in p.rstrip("/").split("/")])))' <<<"$output")"
	assert_line "sbx-$VERSION/COMMIT"
	assert_line "sbx-$VERSION/Makefile"
	refute_line --regexp '^sbx-[^/]*/(bin|build)/'
	run -0 bash -c "tar --numeric-owner -tvzf '$tgz' | awk '\$2 != \"0/0\"'"
	assert_output ""
	run -0 bash -c "TZ=UTC tar --full-time -tvzf '$tgz' | awk '{ print \$4 \" \" \$5 }' | sort -u"
	assert_output "$(TZ=UTC date -d "@$epoch" '+%Y-%m-%d %H:%M:%S')"
	run -0 tar -xzOf "$tgz" "sbx-$VERSION/COMMIT"
	assert_output "commit $HEAD
date $epoch"
}

@test "make dist: the tools built from the tarball are the git build's, and name its commit" {
	local t
	for t in "$TA"/bin/*; do
		same "$t" "$TA/build/release/${t##*/}"
	done
	run -0 "$TA/build/release/sbx-check" --version
	assert_output "sbx-check $VERSION (commit $HEAD, clean)"
}

@test "sbx-check tools --manifest SHA256SUMS: the release's tools pass; a tampered one is corrupt, named on one line" {
	local rel=$TA/build/release t=$R/tampered want
	run -0 --separate-stderr "$rel/sbx-check" tools --manifest "$rel/SHA256SUMS"
	assert_equal "$stderr" ""
	assert_line "manifest           ok             $rel/SHA256SUMS lists $(ls "$TA/cmd" | wc -l) tools"
	assert_line --regexp "^sbx-ns +ok +path=$rel/sbx-ns .* manifest=intact\$"
	assert_line "result: all checks passed (exit 0)"
	mkdir "$t"
	cp -p "$rel"/* "$t/"
	want=$(sed -n 's/  sbx-ns$//p' "$rel/SHA256SUMS")
	printf 'x' >>"$t/sbx-ns"
	run -108 --separate-stderr "$t/sbx-check" tools --manifest "$rel/SHA256SUMS"
	assert_equal "$stderr" ""
	assert_line --regexp "^sbx-ns +corrupt +SHA-256 differs from the manifest \\($want\\) path=$t/sbx-ns .* manifest=mismatch\$"
	assert_equal "$(grep -c '^sbx-[a-z]* *corrupt ' <<<"$output")" 1
	assert_line "result: an sbx tool is corrupt or unsafe (exit 108)"
	# The release's own check says the same of it.
	run -1 bash -c "cd '$t' && sha256sum -c --quiet SHA256SUMS 2>/dev/null"
	assert_output "sbx-ns: FAILED"
}

@test "make dist refuses a tree with changes, a SOURCE_DATE_EPOCH that is not seconds, a tree without git" {
	local x=$R/unpacked
	echo x >"$TA/notes"
	run -2 --separate-stderr make -s -C "$TA" dist
	assert_equal "${stderr%%$'\n'*}" "sbx: dist: $TA: uncommitted changes or untracked files; commit or remove them (the tarball is HEAD)"
	rm "$TA/notes"
	run -2 --separate-stderr env SOURCE_DATE_EPOCH=1e9 make -s -C "$TA" dist
	assert_equal "${stderr%%$'\n'*}" "sbx: dist: SOURCE_DATE_EPOCH '1e9': not a number of seconds; unset it or set one"
	mkdir "$x"
	tar -xzf "$TA/build/release/sbx-$VERSION.tar.gz" -C "$x"
	run -2 --separate-stderr make -s -C "$x/sbx-$VERSION" dist
	assert_equal "${stderr%%$'\n'*}" "sbx: dist: $x/sbx-$VERSION: not a git checkout; make dist from a clone"
}

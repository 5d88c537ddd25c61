#!/usr/bin/env bats
# The pinned dependency build (deps/) and the static toolchain it feeds:
# sources verified against deps/manifest, a tampered source refused, the
# package check, and a probe program linking libseccomp and libcap with
# musl that runs its checks against the kernel.

bats_require_minimum_version 1.5.0
load helpers

setup_file() {
	export DEPS_PREFIX=${SBX_DEPS_PREFIX:-$SBX_ROOT/build/deps}
	export DEPS_CACHE=${SBX_DEPS_CACHE:-$SBX_ROOT/build/deps-src}
	# `make STATIC=0 check` has not built the prefix; both are no-ops when
	# everything is there already.
	"$SBX_ROOT/deps/packages.sh" build
	"$SBX_ROOT/deps/build.sh" "$DEPS_PREFIX" >/dev/null
	sbx_test_user
	SCRATCH=$(sbx_scratch)
	export SCRATCH
	musl-gcc -std=gnu11 -O2 -Wall -Wextra -Werror -Wformat=2 -Wshadow \
		-D_GNU_SOURCE -ffunction-sections -fdata-sections \
		-isystem "$DEPS_PREFIX/kinc" -I"$DEPS_PREFIX/include" \
		-static -Wl,--gc-sections -L"$DEPS_PREFIX/lib" \
		-o "$SCRATCH/probe" "$SBX_ROOT/tests/toolchain/probe.c" -lseccomp -lcap
	cp "$SBX_ROOT/deps/packages.sh" "$SCRATCH/packages.sh"
	chmod 0755 "$SCRATCH/probe" "$SCRATCH/packages.sh"
}

teardown_file() {
	rm -rf "$SCRATCH"
}

# Manifest entries without comments: PACKAGE VERSION FILE SHA256.
entries() {
	grep -v -e '^#' -e '^$' "$SBX_ROOT/deps/manifest"
}

# A copy of the download cache holding just the pinned files.
copy_cache() {
	mkdir -p "$1"
	local pkg ver file sum
	while read -r pkg ver file sum; do
		cp "$DEPS_CACHE/$file" "$1/$file"
	done < <(entries)
}

probe_output="probe: rtnetlink ok: lo
probe: libcap ok: dropped cap_net_raw, raw socket refused
probe: seccomp ok: socket() refused with EPERM"

@test "deps/build.sh without a prefix is a usage error" {
	run -100 --separate-stderr "$SBX_ROOT/deps/build.sh"
	assert_equal "$stderr" "sbx: usage: deps/build.sh PREFIX | deps/build.sh --fetch MANIFEST CACHE"
	assert_output ""
}

@test "deps/build.sh with an empty prefix or two prefixes is a usage error" {
	run -100 --separate-stderr "$SBX_ROOT/deps/build.sh" ""
	assert_equal "$stderr" "sbx: usage: deps/build.sh PREFIX | deps/build.sh --fetch MANIFEST CACHE"
	run -100 --separate-stderr "$SBX_ROOT/deps/build.sh" a b
	assert_equal "$stderr" "sbx: usage: deps/build.sh PREFIX | deps/build.sh --fetch MANIFEST CACHE"
}

# One line per package: its version and how many dsc, orig and debian files
# it has; a malformed or repeated entry prints a "bad line".
manifest_summary() {
	entries | awk '
		NF != 4 || length($4) != 64 || $4 ~ /[^0-9a-f]/ || seen[$3]++ { print "bad line: " $0 }
		{ ver[$1] = (ver[$1] == "" || ver[$1] == $2) ? $2 : "two versions" }
		$3 ~ /\.dsc$/ { dsc[$1]++ }
		$3 ~ /\.orig\.tar\.[a-z0-9]+$/ { orig[$1]++ }
		$3 ~ /\.debian\.tar\.[a-z0-9]+$/ { deb[$1]++ }
		END { for (p in ver) print p, ver[p], dsc[p] + 0, orig[p] + 0, deb[p] + 0 }' | sort
}

@test "the manifest pins a dsc, an orig and a debian tarball of each library, each with a SHA-256" {
	run -0 manifest_summary
	assert_output "jansson 2.14-2 1 1 1
libcap2 1:2.66-4+deb12u3 1 1 1
libseccomp 2.5.4-1+deb12u1 1 1 1
nettle 3.8.1-2 1 1 1
openssl 3.0.20-1~deb12u2 1 1 1"
}

@test "every pinned file in the download cache matches its SHA-256" {
	local pkg ver file sum got bad=""
	while read -r pkg ver file sum; do
		got=$(sha256sum <"$DEPS_CACHE/$file" 2>/dev/null) || got="missing"
		got=${got%% *}
		[ "$got" = "$sum" ] || bad="$bad $file:$got"
	done < <(entries)
	assert_equal "$bad" ""
}

@test "the stamp of the built prefix names the pinned versions" {
	run -0 cat "$DEPS_PREFIX/.stamp"
	assert_output "$(entries | awk '!seen[$1]++ { print $1, $2 }')"
}

@test "an up-to-date prefix is left alone, silently" {
	run -0 --separate-stderr "$SBX_ROOT/deps/build.sh" "$DEPS_PREFIX"
	assert_output ""
	assert_equal "$stderr" ""
}

# That a copy of the cache holding just the pinned files builds a complete
# prefix without the network, once, is proven by tests/09-reproducible,
# whose second build does exactly that (and compares its archives with
# this prefix's), rather than by a third build of every library here.

@test "a tampered source tarball in the cache stops the build before anything is unpacked" {
	local cache=$BATS_TEST_TMPDIR/cache file=libcap2_2.66.orig.tar.xz want got
	copy_cache "$cache"
	want=$(entries | awk -v f="$file" '$3 == f { print $4 }')
	printf 'x' | dd of="$cache/$file" bs=1 seek=1000 conv=notrunc status=none
	got=$(sha256sum <"$cache/$file")
	got=${got%% *}
	run -111 --separate-stderr env SBX_DEPS_CACHE="$cache" \
		"$SBX_ROOT/deps/build.sh" "$BATS_TEST_TMPDIR/deps"
	assert_equal "$stderr" "sbx: fatal: unable to verify deps $file: sha256 mismatch (expected $want, got $got)"
	assert_output ""
	assert_file_not_exists "$BATS_TEST_TMPDIR/deps/.stamp"
	assert_not_exists "$BATS_TEST_TMPDIR/deps/lib"
	assert_not_exists "$BATS_TEST_TMPDIR/deps.work"
	# The bad file stays for inspection: it is never fetched over.
	run -111 --separate-stderr env SBX_DEPS_CACHE="$cache" \
		"$SBX_ROOT/deps/build.sh" "$BATS_TEST_TMPDIR/deps"
	assert_equal "$stderr" "sbx: fatal: unable to verify deps $file: sha256 mismatch (expected $want, got $got)"
}

@test "a tampered dsc in the cache is refused the same way" {
	local cache=$BATS_TEST_TMPDIR/cache file=libseccomp_2.5.4-1+deb12u1.dsc want got
	copy_cache "$cache"
	want=$(entries | awk -v f="$file" '$3 == f { print $4 }')
	echo " 0000000000000000000000000000000000000000000000000000000000000000 1 extra.tar.gz" >>"$cache/$file"
	got=$(sha256sum <"$cache/$file")
	got=${got%% *}
	run -111 --separate-stderr env SBX_DEPS_CACHE="$cache" \
		"$SBX_ROOT/deps/build.sh" "$BATS_TEST_TMPDIR/deps"
	assert_equal "$stderr" "sbx: fatal: unable to verify deps $file: sha256 mismatch (expected $want, got $got)"
	assert_file_not_exists "$BATS_TEST_TMPDIR/deps/.stamp"
}

@test "a source missing from the cache while the archive is unreachable stops the build and names the index" {
	local cache=$BATS_TEST_TMPDIR/cache
	copy_cache "$cache"
	rm "$cache/libcap2_2.66.orig.tar.xz"
	run -111 --separate-stderr unshare -n env SBX_DEPS_CACHE="$cache" \
		"$SBX_ROOT/deps/build.sh" "$BATS_TEST_TMPDIR/deps"
	assert_equal "${stderr_lines[-1]}" "sbx: fatal: unable to update the private deps source list $cache/apt/sources.list: no source index was fetched (log: $BATS_TEST_TMPDIR/deps-log/fetch.log)"
	assert_output ""
	assert_not_exists "$BATS_TEST_TMPDIR/deps/.stamp"
	assert_not_exists "$BATS_TEST_TMPDIR/deps/lib"
}

@test "deps/build.sh refuses to empty a directory it did not make" {
	mkdir -p "$BATS_TEST_TMPDIR/usr/include"
	echo keep >"$BATS_TEST_TMPDIR/usr/include/mine.h"
	run -111 --separate-stderr "$SBX_ROOT/deps/build.sh" "$BATS_TEST_TMPDIR/usr"
	assert_equal "$stderr" "sbx: fatal: unable to use deps prefix $BATS_TEST_TMPDIR/usr: not empty and not made by deps/build.sh"
	assert_file_exists "$BATS_TEST_TMPDIR/usr/include/mine.h"
}

@test "deps/build.sh refuses a prefix whose path has a blank, before building anything" {
	run -111 --separate-stderr "$SBX_ROOT/deps/build.sh" "$BATS_TEST_TMPDIR/a b/deps"
	assert_equal "$stderr" "sbx: fatal: unable to use deps prefix $BATS_TEST_TMPDIR/a b/deps: the path contains whitespace"
	assert_output ""
	assert_not_exists "$BATS_TEST_TMPDIR/a b"
}

@test "deps/packages.sh without a known mode is a usage error" {
	run -100 --separate-stderr "$SBX_ROOT/deps/packages.sh"
	assert_equal "$stderr" "sbx: usage: deps/packages.sh build|test|vm|dynamic|bench|soak"
	run -100 --separate-stderr "$SBX_ROOT/deps/packages.sh" bulid
	assert_equal "$stderr" "sbx: usage: deps/packages.sh build|test|vm|dynamic|bench|soak"
	run -100 --separate-stderr "$SBX_ROOT/deps/packages.sh" build test
	assert_equal "$stderr" "sbx: usage: deps/packages.sh build|test|vm|dynamic|bench|soak"
}

@test "deps/packages.sh takes only package names from SBX_PACKAGES_EXTRA, never apt options" {
	run -100 --separate-stderr env SBX_PACKAGES_EXTRA="--allow-unauthenticated" \
		"$SBX_ROOT/deps/packages.sh" build
	assert_equal "$stderr" "sbx: usage: SBX_PACKAGES_EXTRA holds package names, not '--allow-unauthenticated'"
	run -100 --separate-stderr env SBX_PACKAGES_EXTRA="gperf a/b" \
		"$SBX_ROOT/deps/packages.sh" build
	assert_equal "$stderr" "sbx: usage: SBX_PACKAGES_EXTRA holds package names, not 'a/b'"
}

@test "deps/packages.sh waits for another install's lock instead of failing; a bad wait is a usage error" {
	run -100 --separate-stderr env SBX_APT_LOCK_WAIT=5s "$SBX_ROOT/deps/packages.sh" build
	assert_equal "$stderr" "sbx: usage: SBX_APT_LOCK_WAIT is a number of seconds, not '5s'"
	apt-get remove -y -q sl >/dev/null 2>&1 || true
	# Another "install" holds dpkg's locks until apt-get, started by
	# packages.sh, has tried the front-end lock twice: inotify sees each
	# attempt open the lock file, and a second one by the same apt-get means
	# it is waiting (one that gives up at once tries once; a later apt-get
	# is another process).
	local ready="$BATS_TEST_TMPDIR/held"
	python3 - "$ready" <<-'PY' &
	import ctypes, fcntl, os, select, sys
	lock = "/var/lib/dpkg/lock-frontend"
	f = open(lock, "w"); fcntl.lockf(f, fcntl.LOCK_EX)
	g = open("/var/lib/dpkg/lock", "w"); fcntl.lockf(g, fcntl.LOCK_EX)
	libc = ctypes.CDLL(None, use_errno=True)
	ino = libc.inotify_init1(os.O_CLOEXEC)
	IN_OPEN = 0x20
	if ino < 0 or libc.inotify_add_watch(ino, lock.encode(), IN_OPEN) < 0:
	    sys.exit("inotify on %s: %s" % (lock, os.strerror(ctypes.get_errno())))
	open(sys.argv[1], "w").close()
	def apt_gets():
	    found = set()
	    for p in os.listdir("/proc"):
	        try:
	            if p.isdigit() and open("/proc/%s/comm" % p).read().strip() == "apt-get":
	                found.add(p)
	        except OSError:
	            pass
	    return found
	seen = set()
	while True:
	    if not select.select([ino], [], [], 60)[0]:
	        sys.exit("no apt-get tried %s twice within 60 s" % lock)
	    os.read(ino, 4096)
	    now = apt_gets()
	    if now & seen:
	        break
	    seen |= now
	PY
	local holder=$!
	wait_for '[ -e "$ready" ]'
	run -0 --separate-stderr env SBX_PACKAGES_EXTRA=sl "$SBX_ROOT/deps/packages.sh" build
	wait "$holder"
	assert_equal "$stderr" "sbx: installing build packages: sl"
	run -0 dpkg-query -W -f='${db:Status-Abbrev}' sl
	assert_output --partial "ii"
	apt-get remove -y -q sl >/dev/null 2>&1
}

@test "deps/packages.sh is silent when every build package is installed" {
	run -0 --separate-stderr "$SBX_ROOT/deps/packages.sh" build
	assert_output ""
	assert_equal "$stderr" ""
}

@test "deps/packages.sh as a normal user names the missing packages and how to install them" {
	run -1 --separate-stderr as_user env SBX_PACKAGES_EXTRA="nonexistent-pkg-sbx gperf" \
		"$SCRATCH/packages.sh" build
	assert_equal "$stderr" "sbx: fatal: missing packages: nonexistent-pkg-sbx (as root: apt-get install nonexistent-pkg-sbx)"
	assert_output ""
}

@test "the probe is a static executable with no dynamic section" {
	run -0 readelf -d "$SCRATCH/probe"
	assert_output "
There is no dynamic section in this file."
	run -0 file -b "$SCRATCH/probe"
	assert_output --partial "statically linked"
}

@test "the probe lists links over rtnetlink, drops cap_net_raw with libcap and denies socket() with libseccomp" {
	run -0 --separate-stderr unshare -n "$SCRATCH/probe"
	assert_output "$probe_output"
	assert_equal "$stderr" ""
}

@test "the probe passes as an unprivileged user inside its own user namespace" {
	run -0 --separate-stderr as_user unshare -Urn "$SCRATCH/probe"
	assert_output "$probe_output"
	assert_equal "$stderr" ""
}

@test "the probe as an unprivileged user outside a user namespace cannot drop a bounding capability" {
	run -111 --separate-stderr as_user "$SCRATCH/probe"
	assert_equal "$stderr" "probe: fatal: unable to drop cap_net_raw from the bounding set: Operation not permitted"
}

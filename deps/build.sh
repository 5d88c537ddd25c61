#!/bin/bash
# deps/build.sh PREFIX: build the libraries pinned in deps/manifest as static
# musl archives into PREFIX (PREFIX/include, PREFIX/lib, PREFIX/kinc).
#
# The sources are Debian's own source packages, fetched with `apt-get source`
# through a private source list and private package lists (the machine's
# lists are never touched), kept in a download cache (build/deps-src, or
# $SBX_DEPS_CACHE), and checked file by file against the SHA-256 sums in the
# manifest before anything is unpacked. A file already in the cache is never
# fetched again, so a cache that goes bad is reported, not silently replaced.
#
# deps/build.sh --fetch MANIFEST CACHE only fetches what another manifest
# of the same form pins into CACHE and verifies it (the real-work tests'
# sources, tests/work/manifest).
#
# SBX_DEPS_OFFLINE=1 never fetches: a pinned file missing from the cache
# stops the build and names the step that fetches it (the Debian package's
# build, which must not reach the network).
#
# PREFIX/.stamp is written last; while it is newer than the manifest and this
# script, the prefix is complete and the script exits at once. Build logs go
# to PREFIX/../deps-log/PACKAGE.log. V=1 shows each command.
set -euo pipefail

# Whatever make or the caller set for its own compiles must not leak into
# the libraries' builds (a parent `make CC=...` reaches sub-makes this way;
# `make install DESTDIR=...` would install them there).
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES CC CFLAGS CPPFLAGS LDFLAGS LDLIBS DESTDIR
# Two builds of one manifest give the same archives byte for byte, whoever
# builds where and when: one locale (the order of globbed objects, tools'
# messages), one time zone, one umask; archives without timestamps or
# owners (ar D); the build's directories mapped away (see build_one).
export LC_ALL=C TZ=UTC
umask 022

suite=bookworm
component=main

usage() {
	echo "sbx: usage: deps/build.sh PREFIX | deps/build.sh --fetch MANIFEST CACHE" >&2
	exit 100
}
die() {
	echo "sbx: fatal: $*" >&2
	exit 111
}

# Fetch and verify only: the cache holds exactly what the manifest pins.
fetch_only() {
	[ $# -eq 2 ] && [ -n "$1" ] && [ -n "$2" ] || usage
	manifest=$(absolute "$1")
	cache=$(absolute "$2")
	logdir=$cache/log
	read_manifest
	mkdir -p "$cache" "$logdir"
	exec 9>"$cache/.lock"
	flock 9
	fetch_missing
	local entry f s got
	for entry in "${files[@]}"; do
		read -r _ _ f s <<<"$entry"
		[ -f "$cache/$f" ] || die "unable to verify $f: not in $cache"
		got=$(sha256sum <"$cache/$f")
		got=${got%% *}
		[ "$got" = "$s" ] || die "unable to verify $f: sha256 mismatch (expected $s, got $got)"
	done
}

main() {
	case ${SBX_DEPS_OFFLINE:-0} in
	0 | 1) ;;
	*) echo "sbx: usage: SBX_DEPS_OFFLINE is 0 or 1, not '$SBX_DEPS_OFFLINE'" >&2; exit 100 ;;
	esac
	if [ "${1:-}" = --fetch ]; then
		shift
		fetch_only "$@"
		exit 0
	fi
	if [ $# -ne 1 ] || [ -z "$1" ]; then
		usage
	fi
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	manifest=$root/deps/manifest
	self=$root/deps/build.sh
	prefix=$(absolute "$1")
	fresh && exit 0
	# configure and the compiler flags cannot quote a path with blanks.
	if [[ $prefix == *[[:space:]]* ]]; then
		die "unable to use deps prefix $prefix: the path contains whitespace"
	fi
	check_prefix

	mkdir -p "$(dirname "$prefix")"
	# Two builds of one tree (make in two terminals) would interleave their
	# installs; the second waits and then finds the first one's stamp.
	exec 9>"$prefix.lock"
	flock 9
	fresh && exit 0

	cache=$(absolute "${SBX_DEPS_CACHE:-$root/build/deps-src}")
	logdir=$(dirname "$prefix")/deps-log
	work=$prefix.work
	jobs=${SBX_DEPS_JOBS:-$(nproc)}

	read_manifest
	check_prefix
	mkdir -p "$cache" "$logdir"
	fetch_missing
	copy_and_verify
	claim_prefix
	link_kernel_headers
	local pkg
	for pkg in "${packages[@]}"; do
		build_one "$pkg"
	done
	rm -rf "$work"
	printf '%s\n' "${stamp_lines[@]}" >"$prefix/.stamp.tmp"
	mv "$prefix/.stamp.tmp" "$prefix/.stamp"
}

absolute() {
	local p=$1
	case $p in /*) ;; *) p=$(pwd)/$p ;; esac
	while [ "$p" != / ] && [[ $p == */ ]]; do
		p=${p%/}
	done
	printf '%s\n' "$p"
}

fresh() {
	[ -f "$prefix/.stamp" ] && [ "$prefix/.stamp" -nt "$manifest" ] &&
		[ "$prefix/.stamp" -nt "$self" ]
}

# Fills files[] ("PKG VERSION FILE SHA256"), packages[] (first-seen order),
# version[PKG], and the stamp's content.
read_manifest() {
	[ -r "$manifest" ] || die "unable to read deps manifest $manifest: not readable"
	files=()
	packages=()
	stamp_lines=()
	declare -gA version=()
	local n=0 line pkg ver file sum extra
	while IFS= read -r line || [ -n "$line" ]; do
		n=$((n + 1))
		case $line in '' | '#'*) continue ;; esac
		read -r pkg ver file sum extra <<<"$line"
		if [ -z "$sum" ] || [ -n "$extra" ] || [[ ! $sum =~ ^[0-9a-f]{64}$ ]] ||
			[[ $file == */* ]] || [[ $file == .* ]]; then
			die "unable to read deps manifest $manifest: line $n is not PACKAGE VERSION FILE SHA256"
		fi
		if [ -z "${version[$pkg]:-}" ]; then
			packages+=("$pkg")
			version[$pkg]=$ver
			stamp_lines+=("$pkg $ver")
		elif [ "${version[$pkg]}" != "$ver" ]; then
			die "unable to read deps manifest $manifest: line $n gives $pkg a second version"
		fi
		files+=("$pkg $ver $file $sum")
	done <"$manifest"
	[ ${#files[@]} -gt 0 ] || die "unable to read deps manifest $manifest: no entries"
}

# The prefix is emptied before a rebuild, so refuse a directory that this
# script did not make (deps/build.sh /usr must not remove /usr/include).
check_prefix() {
	if [ -e "$prefix" ] && [ ! -d "$prefix" ]; then
		die "unable to use deps prefix $prefix: not a directory"
	fi
	if [ -d "$prefix" ] && [ ! -e "$prefix/.sbx-deps" ] &&
		[ -n "$(ls -A "$prefix")" ]; then
		die "unable to use deps prefix $prefix: not empty and not made by deps/build.sh"
	fi
}

# Only once every source is verified: a refused source leaves the prefix as
# it was.
claim_prefix() {
	mkdir -p "$prefix"
	: >"$prefix/.sbx-deps"
	rm -rf "${prefix:?}/.stamp" "${prefix:?}/include" "${prefix:?}/lib" "${prefix:?}/kinc"
}

fetch_missing() {
	local pkg entry p f s want
	for pkg in "${packages[@]}"; do
		want=0
		for entry in "${files[@]}"; do
			read -r p _ f s <<<"$entry"
			[ "$p" = "$pkg" ] && [ ! -e "$cache/$f" ] && want=1
		done
		[ $want = 1 ] || continue
		if [ "${SBX_DEPS_OFFLINE:-0}" = 1 ]; then
			die "unable to build deps $pkg=${version[$pkg]} offline: its sources are not in the download cache $cache; fetch them first with \`make deps\` (or point SBX_DEPS_CACHE at a cache that holds them)"
		fi
		fetch "$pkg" "${version[$pkg]}"
	done
}

# apt-get source into a scratch directory, then move in only the files the
# cache lacks: a file already cached is never replaced behind our back.
fetch() {
	local pkg=$1 ver=$2 log=$logdir/fetch.log tmp entry p f s
	[ -n "${apt_opts:-}" ] || setup_apt "$log"
	tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
	# As root apt downloads as its unprivileged _apt user, who must be able
	# to write there; the files are handed back to us before use.
	if [ "$(id -u)" = 0 ] && id -u _apt >/dev/null 2>&1; then
		chown _apt "$tmp"
	fi
	if ! (cd "$tmp" && apt-get "${apt_opts[@]}" -q source --download-only "$pkg=$ver") >>"$log" 2>&1; then
		rm -rf "$tmp"
		tail -n 5 "$log" >&2
		die "unable to download deps $pkg=$ver: apt-get source failed (log: $log)"
	fi
	for entry in "${files[@]}"; do
		read -r p _ f s <<<"$entry"
		if [ "$p" = "$pkg" ] && [ ! -e "$cache/$f" ] && [ -f "$tmp/$f" ]; then
			cp "$tmp/$f" "$cache/$f.part"
			mv "$cache/$f.part" "$cache/$f"
		fi
	done
	rm -rf "$tmp"
}

# A private source list (deb-src for the suite, on the same mirrors and with
# the same keyring as the machine's own deb entries) and private lists and
# cache directories: updating the machine's lists with only a deb-src entry
# would drop its binary package lists.
setup_apt() {
	local log=$1 aptdir=$cache/apt
	mkdir -p "$aptdir/lists/partial" "$aptdir/cache/archives/partial"
	mirrors | awk -v suite="$suite" -v comp="$component" '
		!seen[$1]++ {
			if ($2 != "") printf "deb-src [signed-by=%s] %s %s %s\n", $2, $1, suite, comp
			else printf "deb-src %s %s %s\n", $1, suite, comp
		}' >"$aptdir/sources.list"
	if [ ! -s "$aptdir/sources.list" ]; then
		echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite $component" >"$aptdir/sources.list"
	fi
	apt_opts=(-o "Dir::Etc::SourceList=$aptdir/sources.list"
		-o "Dir::Etc::SourceParts=/dev/null"
		-o "Dir::State::Lists=$aptdir/lists"
		-o "Dir::Cache=$aptdir/cache")
	if ! apt-get "${apt_opts[@]}" -q update >>"$log" 2>&1; then
		tail -n 5 "$log" >&2
		die "unable to update the private deps source list $aptdir/sources.list: apt-get update failed (log: $log)"
	fi
	# apt-get update only warns when the archive cannot be reached.
	if ! compgen -G "$aptdir/lists/*_Sources*" >/dev/null; then
		tail -n 5 "$log" >&2
		die "unable to update the private deps source list $aptdir/sources.list: no source index was fetched (log: $log)"
	fi
}

# Prints "URI KEYRING" for every enabled `deb` entry of the machine that
# carries $suite and $component, from both source list formats.
mirrors() {
	local d=/etc/apt
	shopt -s nullglob
	local sources=("$d"/sources.list.d/*.sources) lists=("$d"/sources.list.d/*.list)
	[ -f "$d/sources.list" ] && lists+=("$d/sources.list")
	shopt -u nullglob
	if [ ${#sources[@]} -gt 0 ]; then
		awk -v suite="$suite" -v comp="$component" '
			function has(list, word) { return (" " list " ") ~ (" " word " ") }
			function flush() {
				if (has(types, "deb") && has(suites, suite) && has(comps, comp) && enabled != "no") {
					if (key !~ /^\//) key = ""
					n = split(uris, u, " ")
					for (i = 1; i <= n; i++) print u[i], key
				}
				types = uris = suites = comps = key = enabled = ""
			}
			FNR == 1 { flush() }
			/^[ \t]*#/ { next }
			/^[ \t]*$/ { flush(); next }
			/^[A-Za-z-]+:/ {
				f = tolower(substr($0, 1, index($0, ":") - 1))
				v = substr($0, index($0, ":") + 1)
				gsub(/^[ \t]+|[ \t]+$/, "", v)
				if (f == "types") types = v
				else if (f == "uris") uris = v
				else if (f == "suites") suites = v
				else if (f == "components") comps = v
				else if (f == "signed-by") key = v
				else if (f == "enabled") enabled = tolower(v)
			}
			END { flush() }' "${sources[@]}"
	fi
	if [ ${#lists[@]} -gt 0 ]; then
		awk -v suite="$suite" -v comp="$component" '
			$1 == "deb" {
				opts = ""; i = 2
				if ($2 ~ /^\[/) {
					for (; i <= NF; i++) { opts = opts " " $i; if ($i ~ /\]$/) { i++; break } }
				}
				ok = 0
				for (j = i + 2; j <= NF; j++) if ($j == comp) ok = 1
				if ($(i + 1) != suite || !ok) next
				key = ""
				if (match(opts, /signed-by=[^] ]+/)) key = substr(opts, RSTART + 10, RLENGTH - 10)
				print $i, key
			}' "${lists[@]}"
	fi
}

# Copies the pinned files into a fresh work tree and checks the copies, so
# that what is unpacked is exactly what was checked, and nothing that sits in
# the cache without a manifest entry is ever used.
copy_and_verify() {
	local entry p f s got
	rm -rf "$work"
	mkdir -p "$work/src"
	for entry in "${files[@]}"; do
		read -r p _ f s <<<"$entry"
		if [ ! -f "$cache/$f" ]; then
			rm -rf "$work"
			die "unable to verify deps $f: not in the download cache $cache"
		fi
		cp "$cache/$f" "$work/src/$f"
	done
	for entry in "${files[@]}"; do
		read -r p _ f s <<<"$entry"
		got=$(sha256sum <"$work/src/$f")
		got=${got%% *}
		if [ "$got" != "$s" ]; then
			rm -rf "$work"
			die "unable to verify deps $f: sha256 mismatch (expected $s, got $got)"
		fi
	done
}

# musl-gcc brings no kernel headers; the distribution's are plain uapi
# headers that work with any libc. The tools compile with -isystem on it too.
link_kernel_headers() {
	local d
	mkdir -p "$prefix/kinc"
	for d in /usr/include/linux /usr/include/asm-generic /usr/include/x86_64-linux-gnu/asm; do
		[ -d "$d" ] || die "unable to find kernel headers $d: install linux-libc-dev (deps/packages.sh build)"
		ln -sfn "$d" "$prefix/kinc/$(basename "$d")"
	done
}

build_one() {
	local pkg=$1 ver=${version[$1]} dsc
	log=$logdir/$pkg.log
	current=$pkg
	printf '  %-7s %s %s\n' DEPS "$pkg" "$ver"
	: >"$log"
	dsc=$(dsc_of "$pkg")
	src=$work/$pkg
	# Our own check above replaces dpkg-source's signature check; it still
	# applies the Debian patch series.
	step "dpkg-source -x" dpkg-source --no-check -x "$work/src/$dsc" "$src"
	# A date a library records (OpenSSL's "built on") is its own release's,
	# as Debian builds it: the prefix depends on the manifest and this
	# script alone, never on the commit or the hour that built it.
	SOURCE_DATE_EPOCH=$(dpkg-parsechangelog -l "$src/debian/changelog" -STimestamp) ||
		die "unable to read the release date of $pkg from $src/debian/changelog"
	export SOURCE_DATE_EPOCH
	cflags="-O2 -ffunction-sections -fdata-sections -fstack-protector-strong -isystem $prefix/kinc"
	# Where the sources were unpacked and the prefix sits, as the debug
	# information and __FILE__ would name them, become fixed names.
	cflags+=" -ffile-prefix-map=$prefix=/usr/src/sbx-deps/prefix -ffile-prefix-map=$work=/usr/src/sbx-deps"
	case $pkg in
	libseccomp) build_libseccomp ;;
	libcap2) build_libcap2 ;;
	jansson) build_jansson ;;
	nettle) build_nettle ;;
	openssl) build_openssl ;;
	*) die "unable to build deps $pkg: deps/build.sh has no recipe for it" ;;
	esac
}

dsc_of() {
	local entry p f
	for entry in "${files[@]}"; do
		read -r p _ f _ <<<"$entry"
		if [ "$p" = "$1" ] && [[ $f == *.dsc ]]; then
			printf '%s\n' "$f"
			return
		fi
	done
	die "unable to build deps $1: the manifest lists no .dsc for it"
}

# Runs one build step with its output in the package's log; on failure shows
# the end of the log and names the step.
step() {
	local what=$1
	shift
	if [ "${V:-0}" = 1 ]; then
		echo "+ $*" >&2
	fi
	echo "+ $*" >>"$log"
	if ! "$@" >>"$log" 2>&1; then
		tail -n 20 "$log" >&2
		die "unable to build deps $current: $what failed (log: $log)"
	fi
}

build_libseccomp() {
	cd "$src"
	step configure ./configure CC=musl-gcc CFLAGS="$cflags" \
		--prefix="$prefix" --enable-static --disable-shared \
		--disable-python --disable-dependency-tracking --disable-silent-rules
	# Only the library: the tools and tests are not needed and take longer.
	step make make -j"$jobs" -C src
	step "make install" make -C src install
	step "make install" make -C include install
	rm -f "$prefix/lib/libseccomp.la"
}

# Only libcap.a: no shared library, no setcap/capsh, no PAM module, no Go.
build_libcap2() {
	cd "$src"
	step make make -C libcap CC=musl-gcc BUILD_CC=gcc COPTS="$cflags" \
		SHARED=no PAM_CAP=no GOLANG=no USE_GPERF=yes libcap.a
	step install install -D -m 0644 libcap/libcap.a "$prefix/lib/libcap.a"
	step install install -D -m 0644 libcap/include/sys/capability.h \
		"$prefix/include/sys/capability.h"
}

# Policies are JSON: jansson decodes strictly (duplicate keys refused with
# JSON_REJECT_DUPLICATES) and says where an error is.
build_jansson() {
	local c defs
	cd "$src/src"
	# The release tarball ships no configure script (it would need autotools
	# or cmake); the library is a dozen C files, so compile them directly
	# with the answers configure would find on Linux with musl.
	step jansson_config.h sed -e 's/@json_inline@/inline/' \
		-e 's/@json_have_long_long@/1/' -e 's/@json_have_localeconv@/1/' \
		-e 's/@json_have_atomic_builtins@/1/' -e 's/@json_have_sync_builtins@/1/' \
		-e 'w jansson_config.h' jansson_config.h.in
	: >jansson_private_config.h
	defs="-DHAVE_STDINT_H=1 -DHAVE_UNISTD_H=1 -DHAVE_FCNTL_H=1 -DHAVE_SYS_STAT_H=1
		-DHAVE_SYS_TIME_H=1 -DHAVE_SYS_TYPES_H=1 -DHAVE_SCHED_H=1 -DHAVE_CLOSE=1
		-DHAVE_OPEN=1 -DHAVE_READ=1 -DHAVE_GETPID=1 -DHAVE_GETTIMEOFDAY=1
		-DHAVE_SCHED_YIELD=1 -DHAVE_LOCALECONV=1 -DHAVE_ATOMIC_BUILTINS=1
		-DHAVE_SYNC_BUILTINS=1 -DUSE_URANDOM=1"
	for c in dump error hashtable hashtable_seed load memory pack_unpack \
		strbuffer strconv utf value version; do
		# shellcheck disable=SC2086 # defs and cflags are word lists
		step "compile $c.c" musl-gcc $cflags $defs -I. -c -o "$c.o" "$c.c"
	done
	step ar ar rcsD libjansson.a ./*.o
	step install install -D -m 0644 libjansson.a "$prefix/lib/libjansson.a"
	step install install -D -m 0644 jansson.h "$prefix/include/jansson.h"
	step install install -D -m 0644 jansson_config.h "$prefix/include/jansson_config.h"
}

# SHA-256 and HMAC for tool identity and grants: only libnettle, without the
# public-key half (which would pull in GMP). With its x86-64 assembly and
# --enable-fat: the SHA-256 compression function is chosen once at start
# (a constructor reading CPUID; NETTLE_FAT_OVERRIDE names the features
# instead) between the plain x86-64 code and SHA-NI, which hashes a
# granted interpreter of several MB about four times faster than C. The
# assembly goes through m4 (deps/packages.sh build).
build_nettle() {
	cd "$src"
	step configure ./configure CC=musl-gcc CFLAGS="$cflags" \
		--prefix="$prefix" --libdir="$prefix/lib" --enable-static --disable-shared \
		--disable-public-key --disable-documentation --disable-openssl --enable-fat \
		--disable-dependency-tracking
	step make make -j"$jobs" libnettle.a
	step "make install" make install-headers install-static
}

# TLS for sbx-broker's service routes alone: libssl.a and libcrypto.a, no
# programs, no shared objects, no engines or loadable modules, no tests or
# manuals; no config file read at start (the broker sets what it needs in
# code); no SSLv3, DTLS, SRP, no deprecated API, and none of what a TLS
# client of the web PKI never needs (CMS, OCSP, CT, old or national
# ciphers): each "no-" is code neither built nor linked.
build_openssl() {
	cd "$src"
	# The prefix is compiled in (ENGINESDIR, MODULESDIR, unused here): a
	# fixed one, installed under $prefix through DESTDIR, keeps the
	# archives free of where they were built.
	step configure ./Configure linux-x86_64 CC=musl-gcc CFLAGS="$cflags" \
		--prefix=/usr/local/lib/sbx-deps --libdir=lib --openssldir=/etc/ssl \
		no-shared no-module no-engine no-dso no-tests no-afalgeng no-autoload-config \
		no-comp no-ssl3 no-dtls no-srp no-legacy no-ui-console no-async no-deprecated \
		no-cms no-ts no-ct no-ocsp no-srtp no-cmp no-rfc3779 no-idea no-seed no-camellia \
		no-aria no-sm2 no-sm3 no-sm4 no-whirlpool no-md4 no-mdc2 no-rc2 no-rc4 no-bf \
		no-cast no-des no-dsa no-gost no-siphash no-scrypt no-ec2m no-psk no-ocb \
		no-padlockeng no-capieng no-dgram no-nextprotoneg no-sctp no-ssl-trace no-ktls \
		no-weak-ssl-ciphers
	# OpenSSL_version(OPENSSL_CFLAGS) would name the compiler's flags, paths
	# included: it names the compiler alone.
	step buildinf.h make crypto/buildinf.h CC=musl-gcc LIB_CFLAGS= CPPFLAGS_Q=
	step make make -j"$jobs" build_libs
	step "make install" make install_dev DESTDIR="$work/openssl-root"
	mkdir -p "$prefix/include" "$prefix/lib"
	cp -R "$work/openssl-root/usr/local/lib/sbx-deps/include/openssl" "$prefix/include/"
	cp "$work/openssl-root/usr/local/lib/sbx-deps/lib/libssl.a" \
		"$work/openssl-root/usr/local/lib/sbx-deps/lib/libcrypto.a" "$prefix/lib/"
}

main "$@"

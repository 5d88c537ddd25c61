#!/bin/sh
# deps/packages.sh MODE: make sure the Debian packages that MODE needs are
# installed.
#
#   build    static musl build of the tools and of the pinned dependencies
#   test     the bats suite, the peers it compares with, the fuzzers
#   vm       the QEMU suite (a stock Debian kernel, busybox, static bash)
#   dynamic  `make STATIC=0`, against the distribution's -dev packages
#   bench    the peers only `make bench` runs (beyond test's)
#   soak     what only `make soak` needs (beyond test's and vm's)
#
# All present: silent, exit 0. Some missing, as root: one line naming them,
# then apt-get (an `apt-get update` first only when apt does not know one of
# them). Some missing, not root: one line naming them and the command that
# would install them, exit 1, so nothing is half built.
#
# SBX_PACKAGES_EXTRA="a b" adds package names to MODE's list; the tests use it
# to name a package that cannot be installed.
set -euf

usage() {
	echo "sbx: usage: deps/packages.sh build|test|vm|dynamic|bench|soak" >&2
	exit 100
}

[ $# -eq 1 ] || usage
case $1 in
build)
	# dpkg-dev: apt-get source and dpkg-source; gperf: libseccomp's and
	# libcap's name tables; gcc: libcap's build-time helper; linux-libc-dev:
	# the kernel headers that musl-gcc is pointed at; perl: OpenSSL's Configure;
	# debhelper: the Debian package (dpkg-buildpackage, debian/); m4:
	# nettle's assembly (SHA-NI).
	want="musl-tools gcc make gperf dpkg-dev ca-certificates xz-utils bzip2 linux-libc-dev file binutils perl debhelper m4"
	;;
test)
	# git, gcc, make, python3-venv, python3-pytest: the real-work suite (28-ns-work); podman, runc, uidmap, slirp4netns,
	# fuse-overlayfs, catatonit (the pause process of `podman kube play`): the container suite (80-container); docker.io (dockerd,
	# containerd and the docker client, started by the suite itself): the docker suite (82-docker); openssh-server, openssh-client, bind9-dnsutils (dig): the
	# transparent sandbox's ssh and DNS clients (23-ns-net-transparent); apparmor (apparmor_parser): the profile's suite (11-ns-apparmor); nginx, fcgiwrap (git-http-backend behind it): the TLS
	# origin of the service routes (tests/tlsorigin.bash) and their bench's peer; strace (a kill at the Nth rename) and rsync (the peer of
	# bench/changes.sh): the change sets' suite (46-changes); lintian, debootstrap: the Debian package's suite (90-deb);
	# systemd (systemd-analyze, systemd-socket-activate): the broker's units (85-systemd-units); diffoscope-minimal: where two builds of one commit differ (09-reproducible).
	want="bats bats-assert bats-support bats-file bubblewrap curl wget python3 python3-venv python3-pytest git gcc make openssl iproute2 socat tinyproxy hyperfine clang libclang-rt-14-dev file binutils man-db util-linux xfsprogs e2fsprogs podman runc uidmap slirp4netns fuse-overlayfs catatonit docker.io openssh-server openssh-client bind9-dnsutils apparmor nginx fcgiwrap strace rsync lintian debootstrap systemd diffoscope-minimal"
	;;
vm)
	want="qemu-system-x86 linux-image-amd64 busybox-static bash-static xfsprogs e2fsprogs"
	;;
bench)
	# squid: a peer of bench/sbx-broker.sh (started by the bench in a
	# namespace of its own with a private configuration).
	want="squid"
	;;
soak)
	# gnuplot-nox: the soak's plot of join latency and RSS over time
	# (build/soak/latency.svg); the short soak of make check draws none.
	want="gnuplot-nox"
	;;
dynamic)
	want="gcc make pkg-config libseccomp-dev libcap-dev libjansson-dev nettle-dev libssl-dev file binutils"
	;;
*)
	usage
	;;
esac
mode=$1
# SBX_APT_LOCK_WAIT: how long to wait for another install's locks.
case ${SBX_APT_LOCK_WAIT:=300} in
'' | *[!0-9]*) echo "sbx: usage: SBX_APT_LOCK_WAIT is a number of seconds, not '$SBX_APT_LOCK_WAIT'" >&2; exit 100 ;;
esac
want="$want ${SBX_PACKAGES_EXTRA:-}"

missing=
for p in $want; do
	# Only package names reach apt-get: never an option.
	case $p in
	[a-z0-9]*) ;;
	*) echo "sbx: usage: SBX_PACKAGES_EXTRA holds package names, not '$p'" >&2; exit 100 ;;
	esac
	case $p in
	*[!a-z0-9+.:-]*) echo "sbx: usage: SBX_PACKAGES_EXTRA holds package names, not '$p'" >&2; exit 100 ;;
	esac
	case $(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || :) in
	ii*) ;;
	*) missing="$missing $p" ;;
	esac
done
missing=${missing# }
[ -n "$missing" ] || exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "sbx: fatal: missing packages: $missing (as root: apt-get install $missing)" >&2
	exit 1
fi

echo "sbx: installing $mode packages: $missing" >&2
log=$(mktemp "${TMPDIR:-/tmp}/sbx-packages.XXXXXX")
trap 'rm -f "$log"' EXIT
export DEBIAN_FRONTEND=noninteractive

# apt only needs fresh lists when it has never heard of one of the packages
# (a new machine has no lists at all).
need_update=0
for p in $missing; do
	if ! apt-cache show --no-all-versions "$p" >/dev/null 2>&1; then
		need_update=1
		break
	fi
done

# Another install running (unattended upgrades, a second build) holds the
# package manager's locks: wait for them, bounded, instead of failing.
lock_wait="-o DPkg::Lock::Timeout=$SBX_APT_LOCK_WAIT"
install() {
	# shellcheck disable=SC2086 # word splitting of the lists is intended
	apt-get $lock_wait install -y -q --no-install-recommends $missing >>"$log" 2>&1
}
fail() {
	tail -n 15 "$log" >&2
	echo "sbx: fatal: unable to install packages: $1 failed" >&2
	exit 111
}

if [ $need_update = 1 ]; then
	apt-get $lock_wait update -q >>"$log" 2>&1 || fail "apt-get update"
fi
if ! install; then
	# Lists older than the archive name files that are gone: refresh once.
	[ $need_update = 1 ] && fail "apt-get install"
	apt-get $lock_wait update -q >>"$log" 2>&1 || fail "apt-get update"
	install || fail "apt-get install"
fi
exit 0

#!/bin/sh
# contrib/kubernetes/setup-debian12.sh: what a fresh Debian 12 needs to play
# the manifests of contrib/kubernetes/ with `podman kube play`. Run as root;
# it changes only what is missing, so running it again changes nothing.
#
#  1. apt-get installs podman, runc, catatonit (the pod's pause process),
#     uidmap, slirp4netns, fuse-overlayfs and python3 (for runc-procmount).
#  2. A subordinate id range for the user "containers" in /etc/subuid and
#     /etc/subgid (hostUsers: false takes the pod's ids from it), unless it
#     has one.
#  3. contrib/kubernetes/runc-procmount as /usr/local/libexec/sbx/runc-procmount:
#     podman 4.3 ignores procMount; the wrapper applies it.
#  4. /etc/containers/containers.conf.d/sbx.conf, a drop-in read after
#     /etc/containers/containers.conf (never touched): runtime runc through
#     the wrapper, and explicit ulimits, since crun refuses hosts with hybrid
#     cgroups and runc cannot start a container without them there.
# podman reads the drop-in unless CONTAINERS_CONF names another file.
set -eu

prog=setup-debian12.sh
die() { echo "$prog: fatal: $*" >&2; exit "${code:-1}"; }
say() { echo "$prog: $*"; }

[ $# -eq 0 ] || { echo "$prog: usage: $prog (no arguments; run as root)" >&2; exit 100; }
[ "$(id -u)" -eq 0 ] || code=100 die "run it as root: it installs packages and writes /etc"
os=
# shellcheck disable=SC1091
[ ! -r /etc/os-release ] || os=$(. /etc/os-release && echo "${ID:-}:${VERSION_ID:-}")
[ "$os" = debian:12 ] || code=100 die "this is for Debian 12 (bookworm), not '${os:-unknown}' (/etc/os-release): take its steps by hand"

here=$(cd "$(dirname "$0")" && pwd)
wrapper=/usr/local/libexec/sbx/runc-procmount
conf=/etc/containers/containers.conf.d/sbx.conf
mark="# Written by sbx's contrib/kubernetes/setup-debian12.sh; it rewrites this file."
[ -f "$here/runc-procmount" ] || die "unable to find $here/runc-procmount: run the script from its place in sbx's tree"

# 1. The packages.
pkgs="podman runc catatonit uidmap slirp4netns fuse-overlayfs python3"
missing=
for p in $pkgs; do
	[ "$(dpkg-query -W -f '${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing="$missing $p"
done
if [ -n "$missing" ]; then
	say "installing$missing"
	apt-get update -q >/dev/null || die "apt-get update failed: check /etc/apt/sources.list"
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >/dev/null ||
		die "apt-get install$missing failed"
fi

# 2. The subordinate ids of "containers": the upper half of the id space,
# as podman's documentation has it, unless another range there overlaps.
first=2147483647 count=2147483648
for f in /etc/subuid /etc/subgid; do
	[ -e "$f" ] || continue
	grep -q '^containers:' "$f" && continue
	awk -F: -v a="$first" -v n="$count" -v f="$f" -v r="$first-$((first + count - 1))" '$2 != "" && $3 != "" && $2 + $3 > a && $2 < a + n {
		print "'"$prog"': fatal: " f " line " NR " (" $0 ") overlaps " r ": give the user containers a free range by hand (usermod has no user to take it)" > "/dev/stderr"; bad = 1 }
		END { exit bad }' "$f" || exit 1
done
for f in /etc/subuid /etc/subgid; do
	[ -e "$f" ] || { : >"$f" && chmod 0644 "$f"; }
	grep -q '^containers:' "$f" && continue
	echo "containers:$first:$count" >>"$f"
	say "$f: containers:$first:$count"
done

# 3. The wrapper.
if ! cmp -s "$here/runc-procmount" "$wrapper"; then
	install -d -m 0755 "${wrapper%/*}"
	install -m 0755 "$here/runc-procmount" "$wrapper.new"
	mv -f "$wrapper.new" "$wrapper"
	say "installed $wrapper"
fi

# 4. The drop-in: ours, or refused.
want=$(cat <<-EOF
	$mark
	# podman reads it after /etc/containers/containers.conf.
	[containers]
	default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]
	[engine]
	runtime = "runc"
	[engine.runtimes]
	runc = ["$wrapper"]
	EOF
)
if [ -e "$conf" ] || [ -L "$conf" ]; then
	if [ -L "$conf" ] || [ ! -f "$conf" ] || [ "$(head -n 1 "$conf")" != "$mark" ]; then
		die "$conf exists and is not this script's: move it aside, or merge runtime = \"runc\", runc = [\"$wrapper\"] and default_ulimits into it by hand"
	fi
fi
if [ "$(cat "$conf" 2>/dev/null)" != "$want" ]; then
	install -d -m 0755 "${conf%/*}"
	printf '%s\n' "$want" >"$conf.new"
	chmod 0644 "$conf.new"
	mv -f "$conf.new" "$conf"
	say "wrote $conf"
fi
say "ready: podman kube play contrib/kubernetes/sbx-pod.yaml (after building the image: README, \"Containers and Kubernetes\")"

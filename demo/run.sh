#!/bin/bash
# The README's first command (`make demo`): what this host enforces, the
# proof that the sandbox holds, then an untrusted script (demo/untrusted.sh)
# run through the fullest chain this host offers, one line per attempt.
# Builds nothing (make does). Environment: SBX_BIN (the built tools);
# optional SBX_DEMO_CGROUP_ROOT (a delegated cgroup v2 directory, for a
# non-root caller) and SBX_DEMO_QUOTA_WS (a directory under a project quota).
# Exit: 0 the demo ran and nothing escaped; 106 no isolation here; 107 the
# proof failed or something escaped (the untrusted script never runs then).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=${SBX_BIN:-$here/../bin}
check=$BIN/sbx-check

say() { printf '\n== %s\n' "$*"; }
note() { printf '   %s\n' "$*"; }

[ -x "$check" ] || { echo "demo: fatal: $check not built (run make demo)" >&2; exit 100; }

say "sbx-check host: what this machine can enforce"
"$check" host
host_rc=$?

say "sbx-check proof: the real chain on a scratch workspace"
"$check" proof
proof_rc=$?
case $proof_rc in
0 | 101) ;;
106) note "no isolation on this host: the untrusted script is not run"; exit 106 ;;
*) note "the proof failed (exit $proof_rc): the untrusted script is not run"; exit 107 ;;
esac

say "an untrusted script through the chain"
scratch=$(mktemp -d /var/tmp/sbx-demo.XXXXXX) || exit 111
cg=
nets=() pids=()
cleanup() {
	local p n
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	for n in "${nets[@]}"; do
		for p in $(ip netns pids "$n" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
		ip netns del "$n" 2>/dev/null
	done
	rm -rf "$scratch"
	[ -z "$cg" ] || rmdir "$cg" 2>/dev/null
}
trap cleanup EXIT
chmod 0755 "$scratch"
home=$scratch/home ws=$scratch/home/project outside=$scratch/outside
mkdir -p "$home/.ssh" "$ws/.git/hooks" "$outside"
chmod 0777 "$outside"
printf -- '-----BEGIN OPENSSH PRIVATE KEY-----\nfake key of the demo user\n-----END OPENSSH PRIVATE KEY-----\n' >"$home/.ssh/id_ed25519"
chmod 0644 "$home/.ssh/id_ed25519"   # readable by anyone: only the sandbox protects it
echo "TOKEN=demo-secret" >"$ws/.env"
printf '[core]\n' >"$ws/.git/config"
cp "$here/untrusted.sh" "$ws/untrusted.sh"
cp "$check" "$ws/.sbx-probe"
chmod 0755 "$ws/untrusted.sh" "$ws/.sbx-probe"
ids=()
if [ "$(id -u)" = 0 ]; then
	ids=(--uid 65534 --gid 65534)   # sbx-ns never runs a command as root
	chown -R 65534:65534 "$ws"
fi
note "workspace $ws, fake key $home/.ssh/id_ed25519, outside dir $outside"

# Hard limits: sbx-cgroup on a cgroup we may use; it refuses (101) where the
# controllers are missing, and then nothing runs under it.
chain=()
limits=0
root=${SBX_DEMO_CGROUP_ROOT:-}
if [ -z "$root" ] && [ "$(id -u)" = 0 ]; then
	mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
	if [ -n "$mnt" ]; then
		cg=$mnt/sbx-demo-$$
		mkdir "$cg" && root=$cg
		# In a pure cgroup v2 tree the new parent must pass the controllers on.
		[ -n "$root" ] && echo "+cpu +memory +pids" >"$root/cgroup.subtree_control" 2>/dev/null
	fi
fi
if [ -z "$root" ]; then
	note "cgroup limits: no cgroup root to use (set SBX_DEMO_CGROUP_ROOT): no cpu, memory or pids limits"
elif [ ! -x "$BIN/sbx-cgroup" ]; then
	note "cgroup limits: sbx-cgroup is not built: no cpu, memory or pids limits"
else
	out=$("$BIN/sbx-cgroup" --root "$root" --name probe --pids 64 --memory 128M -- /bin/true 2>&1)
	rc=$?
	if [ "$rc" = 0 ]; then
		chain=("$BIN/sbx-cgroup" --root "$root" --name untrusted --pids 64 --memory 128M --)
		limits=1
		note "cgroup limits: enforced (--pids 64 --memory 128M, swap 0)"
	else
		note "cgroup limits: UNAVAILABLE here; sbx-cgroup refuses, fail-closed (exit $rc):"
		note "  $out"
		note "  so the rest runs without cpu, memory and pids limits"
	fi
fi

if [ -n "${SBX_DEMO_QUOTA_WS:-}" ] && [ -x "$BIN/sbx-quota" ]; then
	note "quota: $SBX_DEMO_QUOTA_WS is checked by: sbx-check proof --quota-workspace $SBX_DEMO_QUOTA_WS"
elif [ -x "$BIN/sbx-quota" ]; then
	out=$("$BIN/sbx-quota" verify --workspace "$ws" --disk 64M -- /bin/true 2>&1)
	rc=$?
	if [ "$rc" = 0 ]; then
		note "quota: $ws is under a project quota of at most 64M"
	else
		note "quota: UNAVAILABLE here; sbx-quota refuses, fail-closed (exit $rc):"
		note "  $out"
		note "  so the rest runs without a disk limit"
	fi
else
	note "quota: sbx-quota is not built: no disk limit"
fi

# The broker: as root, a test origin and sbx-broker in two network
# namespaces made here (198.18.98.0/24 on a veth pair, no default route), so
# nothing the script fetches can leave them. sbx-broker allows allowed.test
# only; its own /etc/hosts maps allowed.test and forbidden.test to the origin.
net=offline
netns_broker() {
	local nh=sbx-demo-$$-h no=sbx-demo-$$-o fd line i
	ip netns add "$nh" && nets+=("$nh") || return 1
	ip netns add "$no" && nets+=("$no") || return 1
	ip link add "sbxdm$$h" netns "$nh" type veth peer name "sbxdm$$o" netns "$no" || return 1
	ip -n "$nh" addr add 198.18.98.1/24 dev "sbxdm$$h" &&
		ip -n "$no" addr add 198.18.98.2/24 dev "sbxdm$$o" &&
		ip -n "$nh" link set "sbxdm$$h" up && ip -n "$no" link set "sbxdm$$o" up &&
		ip -n "$nh" link set lo up && ip -n "$no" link set lo up || return 1
	mkdir -p "$scratch/www"
	echo "hello from the demo's test origin" >"$scratch/www/index.html"
	printf '198.18.98.2 allowed.test\n198.18.98.2 forbidden.test\n' >"$scratch/hosts"
	ip netns exec "$no" python3 -m http.server --bind 198.18.98.2 --directory "$scratch/www" 80 \
		</dev/null >/dev/null 2>&1 &
	pids+=($!)
	for i in $(seq 1 100); do
		ip netns exec "$no" python3 -c 'import socket; socket.create_connection(("198.18.98.2", 80), 0.5).close()' \
			2>/dev/null && break
		sleep 0.05
	done
	mkfifo "$scratch/ready" || return 1
	exec {fd}<>"$scratch/ready"
	ip netns exec "$nh" unshare -m --propagation private sh -c \
		'mount --bind "$0" /etc/hosts && exec "$@"' "$scratch/hosts" \
		"$BIN/sbx-broker" --listen "$scratch/broker.sock" --allow-host allowed.test \
		--allow-private-networks --ready-fd 3 3>"$scratch/ready" </dev/null >/dev/null 2>&1 &
	pids+=($!)
	read -r -t 10 -u "$fd" line
	i=$?
	exec {fd}<&-
	[ "$i" = 0 ] && chmod 0666 "$scratch/broker.sock"
}
netopts=()
if [ "$(id -u)" != 0 ]; then
	note "network: the sandbox is offline (the broker demo needs root for its test network)"
elif [ ! -x "$BIN/sbx-broker" ] || ! command -v ip >/dev/null || ! command -v python3 >/dev/null; then
	note "network: the sandbox is offline (the broker demo needs sbx-broker, ip and python3)"
elif netns_broker; then
	net=broker
	netopts=(--net "broker:$scratch/broker.sock")
	note "network: through sbx-broker, which allows allowed.test only (a test origin in a private"
	note "  network namespace; forbidden.test is mapped to the same origin)"
else
	note "network: the broker's test network could not be built: the sandbox is offline"
fi

note "running: ${chain[*]:+${chain[*]##*/} }sbx-ns ${ids[*]} ${netopts[*]} --workspace $ws -- /bin/bash untrusted.sh"
echo
"${chain[@]}" "$BIN/sbx-ns" "${ids[@]}" "${netopts[@]}" --workspace "$ws" -- \
	/bin/bash "$ws/untrusted.sh" "$home/.ssh/id_ed25519" "$outside" "$ws" "$limits" "$net"
rc=$?
echo
case $rc in
105) note "the chain exited 105: the memory hog got the sandbox OOM-killed inside its cgroup" ;;
103) note "the chain exited 103: a limit was exceeded and the sandbox was terminated" ;;
*) note "the chain exited $rc" ;;
esac

# What the host sees afterwards is the real verdict.
escaped=()
[ -e "$outside/escaped" ] && escaped+=("$outside/escaped")
[ -e "$ws/.git/hooks/pre-commit" ] && escaped+=("$ws/.git/hooks/pre-commit")
[ "$(cat "$ws/.env")" = "TOKEN=demo-secret" ] || escaped+=("$ws/.env")
say "on the host afterwards"
if [ ${#escaped[@]} -gt 0 ]; then
	note "ESCAPED: ${escaped[*]}"
	exit 107
fi
note "nothing outside the workspace changed; .env and .git/hooks are intact"
[ -e "$ws/result.txt" ] && note "the workspace holds the script's legitimate output: result.txt"
if [ "$host_rc" = 101 ] || [ "$limits" = 0 ]; then
	note "hard limits (cgroup cpu/memory/pids, disk quota) are NOT available on this host:"
	note "see the sbx-check host lines above for what an administrator must change"
fi
exit 0

#!/bin/bash
# What sbx-cgroup's ordered end (freeze, kill all but the direct child, thaw, SIGTERM, a
# grace; cmd/sbx-cgroup/ending.c) adds to a timeout: the time from the deadline to
# sbx-cgroup's exit, with sbx-ns below (whose outer then runs its deny-write end check)
# and with a plain command, side by side with an older build that writes cgroup.kill at
# once (SBX_OLD_BIN; optional). Medians of RUNS interleaved runs, ratios printed.
#
#   SBX_CGROUP_ROOT=DIR bench/sbx-cgroup-end.sh [RUNS]   (default 20; as root; needs SBX_BIN,
#   a cgroup v2 directory DIR this user may make children in; SBX_BENCH_UID, default 65534)
set -euo pipefail
runs=${1:-20}
case $runs in '' | *[!0-9]* | 0) echo "bench: usage: bench/sbx-cgroup-end.sh [RUNS]" >&2; exit 100 ;; esac
: "${SBX_BIN:?set SBX_BIN to the directory of the sbx binaries}"
: "${SBX_CGROUP_ROOT:?set SBX_CGROUP_ROOT to a cgroup v2 directory}"
[ "$(id -u)" = 0 ] || { echo "bench: run as root (sbx-ns drops to SBX_BENCH_UID)" >&2; exit 111; }
uid=${SBX_BENCH_UID:-65534}
work=$(mktemp -d /var/tmp/sbx-cgroup-end.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 0755 "$work"
mkdir "$work/ws"
chown "$uid:$uid" "$work/ws"
timeout_ms=200
us() { local t=${EPOCHREALTIME/./}; echo "${t#0}"; }
# one BIN KIND: the microseconds from the deadline to sbx-cgroup's exit
one() {
	local bin=$1 kind=$2 a b
	local cmd=(sleep 100)
	[ "$kind" = ns ] && cmd=("$bin/sbx-ns" --uid "$uid" --gid "$uid" --workspace "$work/ws" -- sleep 100)
	a=$(us)
	"$bin/sbx-cgroup" --root "$SBX_CGROUP_ROOT" --name "bench-end-$$" --timeout 0.2 -- "${cmd[@]}" 2>/dev/null || :
	b=$(us)
	echo $((b - a - timeout_ms * 1000))
}
for ((i = 0; i < runs; i++)); do
	row="$(one "$SBX_BIN" ns) $(one "$SBX_BIN" plain)"
	[ -z "${SBX_OLD_BIN:-}" ] || row="$row $(one "$SBX_OLD_BIN" ns) $(one "$SBX_OLD_BIN" plain)"
	echo "$row"
done >"$work/end.txt"
awk -v old="${SBX_OLD_BIN:+1}" '
	{ for (i = 1; i <= NF; i++) v[i, NR] = $i; nf = NF }
	function med(c,   a, n, i, j, t) {
		n = NR; for (i = 1; i <= n; i++) a[i] = v[c, i]
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	END {
		printf "deadline to exit, median of %d: sbx-ns below %.1f ms, plain command %.1f ms\n", NR, med(1) / 1000, med(2) / 1000
		if (old) printf "older build (cgroup.kill at once): sbx-ns below %.1f ms, plain %.1f ms; this/old %.2fx and %.2fx\n",
			med(3) / 1000, med(4) / 1000, med(1) / med(3), med(2) / med(4)
	}' "$work/end.txt"

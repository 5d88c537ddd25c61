#!/bin/bash
# What sbx adds inside a container: `podman run` of the image built from
# contrib/container/ running `sbx-ns --workspace /ws -- true` against the same
# image, same flags, running `true` without sbx; interleaved in one run,
# medians and the ratio (absolute times on these shared machines mean little).
#
#   bench/sbx-container.sh [RUNS]   (default 30; as root; needs SBX_BIN, podman, runc)
#
# Both use the README's least-privilege flags (no network, no capabilities,
# no_new_privs, /proc unmasked, read-only root, a tmpfs workspace) and runc
# with explicit ulimits (this host's cgroups are hybrid).
set -euo pipefail
runs=${1:-30}
case $runs in '' | *[!0-9]* | 0) echo "bench: usage: bench/sbx-container.sh [RUNS]" >&2; exit 100 ;; esac
: "${SBX_BIN:?set SBX_BIN to the directory of the sbx binaries}"
for t in podman runc python3; do
	command -v "$t" >/dev/null || { echo "bench: $t is missing" >&2; exit 111; }
done
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /var/tmp/sbx-container-bench.XXXXXX)
img="localhost/sbx-bench-$$:latest"
export CONTAINERS_CONF="$work/containers.conf"
pm() { podman --storage-driver vfs --log-level error "$@"; }
trap 'pm rmi -f "$img" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
printf '[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]\n[engine]\nruntime = "runc"\n' \
	>"$CONTAINERS_CONF"
"$root/contrib/container/context.sh" "$work/ctx" "$SBX_BIN"
pm build -q -f "$root/contrib/container/Containerfile" -t "$img" "$work/ctx" >/dev/null

flags=(--rm --network none --cap-drop=ALL --security-opt no-new-privileges
       --security-opt 'unmask=/proc/*' --read-only --mount type=tmpfs,destination=/ws,U=true)
# One warm-up each, and a check that both really run.
pm run "${flags[@]}" "$img" --workspace /ws -- /bin/true
pm run "${flags[@]}" --entrypoint /bin/true "$img"

ns() { date +%s%N; }
: >"$work/sbx"
: >"$work/plain"
for _ in $(seq "$runs"); do
	t0=$(ns)
	pm run "${flags[@]}" "$img" --workspace /ws -- /bin/true
	t1=$(ns)
	pm run "${flags[@]}" --entrypoint /bin/true "$img"
	t2=$(ns)
	echo $((t1 - t0)) >>"$work/sbx"
	echo $((t2 - t1)) >>"$work/plain"
done
python3 - "$work/sbx" "$work/plain" "$runs" <<'PY'
import statistics, sys
sbx = [int(l) / 1e6 for l in open(sys.argv[1])]
plain = [int(l) / 1e6 for l in open(sys.argv[2])]
ms, mp = statistics.median(sbx), statistics.median(plain)
print(f"podman run, {sys.argv[3]} interleaved runs each (median):")
print(f"  image running sbx-ns ... -- true   {ms:8.1f} ms")
print(f"  same image running true            {mp:8.1f} ms")
print(f"  sbx adds                           {ms - mp:8.1f} ms  ratio {ms / mp:.3f}x")
PY

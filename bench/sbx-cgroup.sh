#!/bin/bash
# Per-command overhead of sbx-cgroup (create the child cgroup, write and read back
# cpu.max/memory.max/memory.swap.max/pids.max, place the command, kill, wait empty, rmdir)
# against a shell script doing the same steps with mkdir, echo and cat, measured side by
# side in the test VM (the host has no controllers; TCG makes absolute times meaningless,
# so only the ratio counts). Both roles run it: root, and the owner of a delegated subtree.
#
#   bench/sbx-cgroup.sh [RUNS]        (default 40; needs SBX_BIN with static binaries)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
runs=${1:-40}
case $runs in '' | *[!0-9]* | 0) echo "bench: usage: bench/sbx-cgroup.sh [RUNS]" >&2; exit 100 ;; esac
: "${SBX_BIN:?set SBX_BIN to the directory of the static sbx binaries}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The VM runs .bats files; the measurement is one test that prints its figures as TAP
# comments, which the runner passes through.
cat >"$work/90-bench-sbx-cgroup.bats" <<EOF
#!/usr/bin/env bats
load helpers/vm
RUNS=$runs
EOF
cat >>"$work/90-bench-sbx-cgroup.bats" <<'EOF'

# The same work as sbx-cgroup, written as an administrator would in shell.
shell_run() {
	local cg=$1
	mkdir "$cg"
	echo "100000 100000" >"$cg/cpu.max"
	echo 67108864 >"$cg/memory.max"
	echo 0 >"$cg/memory.swap.max"
	echo 64 >"$cg/pids.max"
	[ "$(cat "$cg/cpu.max")" = "100000 100000" ] && [ "$(cat "$cg/memory.max")" = 67108864 ] &&
		[ "$(cat "$cg/memory.swap.max")" = 0 ] && [ "$(cat "$cg/pids.max")" = 64 ] || return 1
	sh -c 'echo $$ >"$1/cgroup.procs" && exec true' sh "$cg"
	echo 1 >"$cg/cgroup.kill"
	until grep -q '^populated 0' "$cg/cgroup.events"; do :; done
	rmdir "$cg"
}

sbx_run() {
	sbx-cgroup --root "$SBX_VM_CGROUP" --name "$1" --cpu 100 --memory 64M --pids 64 -- true
}

us() { local t=${EPOCHREALTIME/./}; echo "${t#0}"; }

@test "benchmark: sbx-cgroup against a shell script doing mkdir and echo" {
	local i t0 t1 sbx=0 sh=0
	for i in 1 2 3; do sbx_run warm$i; shell_run "$SBX_VM_CGROUP/warmsh$i"; done
	for ((i = 0; i < RUNS; i++)); do
		t0=$(us); sbx_run b$i; t1=$(us); sbx=$((sbx + t1 - t0))
		t0=$(us); shell_run "$SBX_VM_CGROUP/s$i"; t1=$(us); sh=$((sh + t1 - t0))
	done
	local ratio
	ratio=$(awk -v a=$sbx -v b=$sh 'BEGIN { printf "%.2f", a / b }')
	echo "# sbx-cgroup bench ($SBX_VM_ROLE, $RUNS runs each, interleaved): sbx-cgroup $((sbx / RUNS)) us/run, shell $((sh / RUNS)) us/run, ratio sbx-cgroup/shell $ratio" >&3
}
EOF

SBX_ROOT=$root SBX_VM_WORK=${SBX_VM_WORK:-$root/build/vm-bench} \
	"$root/tests/vm/run.sh" --suite "$work/90-bench-sbx-cgroup.bats" | tee "$work/out"
echo "bench: $(grep -o 'ratio sbx-cgroup/shell [0-9.]*' "$work/out" | tr '\n' ' ')"

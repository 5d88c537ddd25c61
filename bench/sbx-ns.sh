#!/bin/bash
# Startup and syscall cost of sbx-ns against bubblewrap, side by side in one
# run (a ratio; absolute times on these shared machines mean little).
#
#   bench/sbx-ns.sh [RUNS]      (default 300; needs SBX_BIN, bwrap, musl-gcc, python3)
#
# Startup: a static `true` in user+mount+pid+ipc+uts+net(+cgroup) namespaces
# with the same binds (/usr read-only, the merged-/usr symlinks, /etc
# read-only, /proc, /dev, a tmpfs /tmp, the workspace read-write, cwd the
# workspace), sbx-ns also with its deny-write defaults, Landlock and the
# seccomp filter, against `bwrap --unshare-all --die-with-parent
# --new-session`. Run as root (sbx-ns --uid/--gid of nobody) and as an
# unprivileged user when one named sbxtest exists.
# Syscalls: a loop of getppid() inside sbx-ns against the same loop outside.
set -euo pipefail
. "$(dirname "$0")/common.bash"
runs=${1:-300}
case $runs in '' | *[!0-9]* | 0) echo "bench: usage: bench/sbx-ns.sh [RUNS]" >&2; exit 100 ;; esac
: "${SBX_BIN:?set SBX_BIN to the directory of the sbx binaries}"
bench_need bwrap musl-gcc python3
bench_work ns-bench
mkdir "$work/ws"
loop=$(dirname "$0")/getppid.c
musl-gcc -static -O2 "$loop" -o "$work/bin/loop"
musl-gcc -static -O2 -DFLOOR -isystem /usr/include -isystem /usr/include/x86_64-linux-gnu "$loop" -o "$work/bin/floor" 2>/dev/null ||
	gcc -static -O2 -DFLOOR "$loop" -o "$work/bin/floor"
chmod -R a+rX "$work"
mkdir -m 1777 "$work/out"

# Interleaved (one sbx-ns run, then one bwrap run, RUNS times) so that the
# machine's load drifting during the measurement hits both alike; medians.
startup() {
	local who=$1 ws=$2 ids=$3 run=$4
	local sbx=("$SBX_BIN/sbx-ns" $ids --workspace "$ws" --ro "$work/bin" -- "$work/bin/true")
	local bw=(bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr
		--symlink usr/bin /bin --symlink usr/sbin /sbin --symlink usr/lib /lib
		--symlink usr/lib64 /lib64 --ro-bind /etc /etc --ro-bind "$work/bin" "$work/bin"
		--proc /proc --dev /dev --tmpfs /tmp --bind "$ws" "$ws" --chdir "$ws" "$work/bin/true")
	$run bash -c '
		runs=$1; shift; n=$1; shift
		sbx=("${@:1:$n}"); bw=("${@:$((n + 1))}")
		us() { local t=${EPOCHREALTIME/./}; echo "${t#0}"; }
		for ((i = 0; i < 20; i++)); do "${sbx[@]}"; "${bw[@]}"; done
		for ((i = 0; i < runs; i++)); do
			a=$(us); "${sbx[@]}" || exit 1; b=$(us); "${bw[@]}" || exit 1; c=$(us)
			echo "$((b - a)) $((c - b))"
		done' bench "$runs" "${#sbx[@]}" "${sbx[@]}" "${bw[@]}" >"$work/out/$who.txt"
	read -r s b < <(python3 -c '
import statistics, sys
rows = [tuple(map(int, l.split())) for l in open(sys.argv[1])]
print("%.3f %.3f" % (statistics.median(r[0] for r in rows) / 1000, statistics.median(r[1] for r in rows) / 1000))' "$work/out/$who.txt")
	printf '%-6s startup median of %d: sbx-ns %s ms, bwrap %s ms, ratio %.2f (target <= 0.70)\n' \
		"$who" "$runs" "$s" "$b" "$(python3 -c "print($s/$b)")"
}

startup root "$work/ws" "--uid 65534 --gid 65534" ""
if id sbxtest >/dev/null 2>&1; then
	mkdir "$work/ws-user"
	chown sbxtest: "$work/ws-user"
	startup user "$work/ws-user" "" "setpriv --reuid=sbxtest --regid=sbxtest --init-groups --"
fi

# Alternate inside and outside, 7 rounds, and compare the medians.
# bwrap runs the same loop in the same kinds of namespaces without a filter:
# what the pid namespace itself costs getppid.
outs=() ins=() bws=() floors=()
for _ in $(seq 15); do
	outs+=("$("$work/bin/loop")")
	floors+=("$("$work/bin/floor")")
	ins+=("$("$SBX_BIN/sbx-ns" --uid 65534 --gid 65534 --workspace "$work/ws" --ro "$work/bin" -- "$work/bin/loop")")
	bws+=("$(bwrap --unshare-all --die-with-parent --ro-bind "$work/bin" "$work/bin" --proc /proc --dev /dev "$work/bin/loop")")
done
med() { printf '%s\n' "$@" | sort -n | sed -n 8p; }
out=$(med "${outs[@]}")
in=$(med "${ins[@]}")
bw=$(med "${bws[@]}")
floor=$(med "${floors[@]}")
printf 'getppid: outside %s ns, bwrap (no filter) %s ns, inside sbx-ns %s ns: overhead %.1f%% vs outside, %.1f%% vs bwrap (target < 10%%)\n' \
	"$out" "$bw" "$in" "$(python3 -c "print(($in/$out-1)*100)")" "$(python3 -c "print(($in/$bw-1)*100)")"
printf 'getppid under a one-instruction allow-all filter: %s ns: %.1f%% vs outside (the least any seccomp filter costs here)\n' \
	"$floor" "$(python3 -c "print(($floor/$out-1)*100)")"

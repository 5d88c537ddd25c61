#!/bin/bash
# A living sandbox (sbx-ns --serve) against one-shot sandboxes and a running
# container, side by side in one run (ratios; absolute times on these shared
# machines mean little).
#
#   bash bench/sbx-ns-serve.sh [RUNS] [GIT_RUNS]
#        (default 100 and 20; as root; SBX_BIN defaults to the repository's bin/;
#         needs bwrap, podman, runc, git, musl-gcc, python3, setpriv: `make bench`
#         installs them with deps/packages.sh test, this script installs nothing;
#         3 minutes measured on a 2-core machine busy with the test suite)
#
# Every command runs as nobody (root's sbx-ns runs commands only as --uid N):
#   join      sbx-ns --join SOCK -- CMD into a living sandbox started once
#             (sbx-ns --uid --gid --workspace W --ro BIN --serve SOCK --ready-fd 3)
#   one-shot  sbx-ns --uid --gid --workspace W --ro BIN -- CMD
#   bwrap     bwrap --unshare-all --die-with-parent --new-session with the binds of
#             bench/sbx-ns.sh (/usr, the merged-/usr links, /etc, BIN read-only,
#             /proc, /dev, a tmpfs /tmp, W read-write, cwd W), --uid/--gid nobody
#   podman    podman exec --user nobody CTR CMD into a container started once
#             (runc, vfs, --network none, its own --root/--runroot/--tmpdir
#             under the temporary directory, BIN read-only and both
#             workspaces mounted at their paths, cwd the workspace, an image
#             built FROM scratch here holding the static true, a static
#             keeper, and git with its libraries copied from the host)
# 1. a static `true` (musl), W an empty directory: RUNS interleaved runs of
#    each, medians;
# 2. `git status` in a checkout of 10,000 committed files (W the checkout,
#    mounted at the same path in the container): GIT_RUNS interleaved runs;
#    the podman row is left out, and the output says so, when git cannot run
#    in the image;
#    ratios join/one-shot (target <= 0.5) and join/podman exec (<= 0.05);
# 3. 1,000 sequential joins of `true` into the living sandbox of part 1:
#    open fds, VmRSS, threads and child processes of the serving sbx-ns and of
#    the sandbox's pid 1 (its descendant whose innermost pid is 1), before and
#    after, and the growth; then --stop, and the server must exit 0.
# Everything lives in a directory under /var/tmp, removed at exit with the
# container, the image store and the servers. No network: the container has
# none, the sandboxes none.
set -euo pipefail
runs=${1:-100}
gitruns=${2:-20}
usage() { echo "bench: usage: bench/sbx-ns-serve.sh [RUNS] [GIT_RUNS]" >&2; exit 100; }
case $runs$gitruns in '' | *[!0-9]*) usage ;; esac
if [ "$runs" -eq 0 ] || [ "$gitruns" -eq 0 ]; then usage; fi
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/checkout.bash"
. "$root/bench/common.bash"
: "${SBX_BIN:=$root/bin}"
[ "$(id -u)" = 0 ] || { echo "bench: run as root (the commands run as nobody)" >&2; exit 100; }
for t in bwrap podman runc git musl-gcc python3 setpriv; do
	command -v "$t" >/dev/null || { echo "bench: $t is missing (deps/packages.sh test installs it)" >&2; exit 111; }
done
[ -x "$SBX_BIN/sbx-ns" ] || { echo "bench: no $SBX_BIN/sbx-ns (make, or set SBX_BIN)" >&2; exit 111; }
case $("$SBX_BIN/sbx-ns" --help 2>&1 || :) in
*--serve*) ;;
*) echo "bench: $SBX_BIN/sbx-ns has no --serve" >&2; exit 111 ;;
esac
SBX=$SBX_BIN/sbx-ns
GIT=$(command -v git)
nob=$(id -u nobody)
nog=$(id -g nobody)

work=$(mktemp -d /var/tmp/sbx-ns-serve-bench.XXXXXX)
chmod 0755 "$work"
ctr=sbx-serve-bench-$$
img=localhost/sbx-serve-bench-$$:latest
export CONTAINERS_CONF=$work/containers.conf
pm() {
	podman --root "$work/podman/root" --runroot "$work/podman/run" --tmpdir "$work/podman/tmp" \
		--storage-driver vfs --runtime runc --cgroup-manager cgroupfs --log-level error "$@"
}
declare -A spid=() # server name -> pid of its sbx-ns --serve
trees=()
cleanup() {
	local n i t
	for n in "${!spid[@]}"; do
		kill -0 "${spid[$n]}" 2>/dev/null || continue
		timeout 10 "$SBX" --join "$work/sock/$n" --stop >/dev/null 2>&1 || :
		for ((i = 0; i < 50; i++)); do kill -0 "${spid[$n]}" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "${spid[$n]}" 2>/dev/null || :
	done
	if [ -d "$work/podman" ]; then
		pm rm -f -t 0 "$ctr" >/dev/null 2>&1 || :
		pm rmi -f "$img" >/dev/null 2>&1 || :
	fi
	# Nothing may stay mounted below the directory before it goes.
	findmnt -rn -o TARGET | awk -v w="$work/" 'index($0, w) == 1' | sort -r |
		while read -r m; do umount -l "$m" || :; done
	# and sbx-ns's kept trees of the two workspaces (see bench/sbx-ns-deny.sh)
	for t in "${trees[@]}"; do rm -f "$t"; done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
printf '[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]\n[engine]\nruntime = "runc"\n' \
	>"$CONTAINERS_CONF"
mkdir "$work/bin" "$work/ws" "$work/sock" "$work/ctx" "$work/home" "$work/podman"
chmod 0700 "$work/sock"
chown "$nob:$nog" "$work/ws" "$work/home"
printf 'int main(void){return 0;}\n' | musl-gcc -static -O2 -x c - -o "$work/bin/true"
# The container's keeper: sleeps until killed.
printf '#include <unistd.h>\nint main(void){for(;;)pause();}\n' | musl-gcc -static -O2 -x c - -o "$work/bin/keep"
chmod -R a+rX "$work/bin"

# The checkout: 10,000 files in 100 directories, dated an hour back so that
# none is racily clean, committed once; then its owner and the index's stat
# data made nobody's, who runs git everywhere (git compares the owner it sees
# with the index's), so no run rewrites the index.
echo "bench: making a git checkout of 10000 files..." >&2
repo=$work/repo
mkdir "$repo"
for d in "$work/ws" "$repo"; do trees+=("/run/sbx-ns/tree-$(stat -c %D "$d")-$(printf %x "$(stat -c %i "$d")")"); done
bench_checkout "$repo" 10000 100
chown -R "$nob:$nog" "$repo"
asnobody() { HOME=$work/home setpriv --reuid="$nob" --regid="$nog" --clear-groups -- "$@"; }
asnobody "$GIT" -C "$repo" update-index -q --really-refresh
asnobody "$GIT" -C "$repo" status >/dev/null

# The image: FROM scratch, the static true and keeper, git and every library
# ldd names for it, at their host paths.
cp "$work/bin/true" "$work/bin/keep" "$work/ctx/"
podgit=1
for f in "$GIT" $(ldd "$GIT" | awk '/\//{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }'); do
	cp -L --parents "$f" "$work/ctx/" || podgit=0
done
printf 'FROM scratch\nCOPY . /\nENTRYPOINT ["/keep"]\n' >"$work/Containerfile"
echo "bench: building the image and starting the container..." >&2
pm build -q -f "$work/Containerfile" -t "$img" "$work/ctx" >/dev/null
pm run -d --name "$ctr" --network none --cap-drop=ALL --security-opt no-new-privileges --read-only \
	--ulimit nofile=20000:20000 --ulimit nproc=4096:4096 -v "$work/bin:$work/bin:ro" -v "$work/ws:$work/ws" -v "$repo:$repo" "$img" >/dev/null
pex=(pm exec --user "$nob:$nog")

# serve NAME WORKSPACE: a living sandbox on $work/sock/NAME, ready when its
# newline came; its pid in spid[NAME].
serve() {
	mkfifo "$work/ready-$1"
	"$SBX" --uid "$nob" --gid "$nog" --workspace "$2" --ro "$work/bin" --serve "$work/sock/$1" --ready-fd 3 \
		3>"$work/ready-$1" </dev/null >"$work/serve-$1.log" 2>&1 &
	spid[$1]=$!
	# EOF (the server died) or 30 s without the line: no sandbox.
	if ! read -r -t 30 _ <"$work/ready-$1"; then
		echo "bench: sbx-ns --serve did not become ready:" >&2
		cat "$work/serve-$1.log" >&2
		exit 1
	fi
}
echo "bench: starting the living sandboxes..." >&2
serve true "$work/ws"
serve git "$repo"

bw() { bench_bwrap "$1" --uid "$nob" --gid "$nog" "${@:2}"; } # bw WORKSPACE CMD...

# bench NAME RUNS WITH_PODMAN WORKSPACE CMD...: interleaved runs of join,
# one-shot and bwrap in a turning order, then podman exec's, one line of
# microseconds per round in
# $work/NAME.times. Each must succeed; 5 rounds of warm-up first.
bench() {
	local name=$1 n=$2 pod=$3 ws=$4 i a b c d e
	shift 4
	local join=("$SBX" --join "$work/sock/$name" -- "$@")
	local one=("$SBX" --uid "$nob" --gid "$nog" --workspace "$ws" --ro "$work/bin" -- "$@")
	local pod_cmd=("${pex[@]}" -w "$ws" "$ctr" "$@")
	[ "$pod" = 1 ] || pod_cmd=(:)
	for ((i = 0; i < 5; i++)); do
		"${join[@]}" >/dev/null; "${one[@]}" >/dev/null; bw "$ws" "$@" >/dev/null; "${pod_cmd[@]}" >/dev/null
	done
	: >"$work/$name.times"
	# join, one-shot and bwrap interleaved, the order turning each round;
	# podman exec in rounds of its own afterwards: what it leaves running
	# after it returns (conmon, runc's cleanup) would slow whatever ran
	# next.
	local -a t=(0 0 0) p=()
	local k tool
	for ((i = 0; i < n; i++)); do
		for ((k = 0; k < 3; k++)); do
			tool=$(((i + k) % 3))
			a=$(us)
			case $tool in
			0) "${join[@]}" >/dev/null || { echo "bench: $name: join failed" >&2; exit 1; } ;;
			1) "${one[@]}" >/dev/null || { echo "bench: $name: one-shot sbx-ns failed" >&2; exit 1; } ;;
			2) bw "$ws" "$@" >/dev/null || { echo "bench: $name: bwrap failed" >&2; exit 1; } ;;
			esac
			b=$(us)
			t[tool]=$((b - a))
		done
		p[i]="${t[0]} ${t[1]} ${t[2]}"
	done
	for ((i = 0; i < n; i++)); do
		a=$(us)
		"${pod_cmd[@]}" >/dev/null || { echo "bench: $name: podman exec failed" >&2; exit 1; }
		b=$(us)
		echo "${p[i]} $((b - a))" >>"$work/$name.times"
	done
}

# Each of the four must see a clean checkout (git status exits 0 and says
# so); podman's row goes when git cannot run in the image.
clean='nothing to commit, working tree clean'
check_git() {
	local out
	out=$("$@" 2>&1) && [[ $out == *"$clean"* ]]
}
check_git "$SBX" --join "$work/sock/git" -- "$GIT" status ||
	{ echo "bench: git status in the living sandbox:" >&2; "$SBX" --join "$work/sock/git" -- "$GIT" status >&2 || :; exit 1; }
check_git "$SBX" --uid "$nob" --gid "$nog" --workspace "$repo" --ro "$work/bin" -- "$GIT" status ||
	{ echo "bench: git status in a one-shot sbx-ns failed" >&2; exit 1; }
check_git bw "$repo" "$GIT" status || { echo "bench: git status in bwrap failed" >&2; exit 1; }
if [ $podgit = 1 ] && ! check_git "${pex[@]}" -w "$repo" "$ctr" "$GIT" status; then
	podgit=0
fi
index_before=$(stat -c '%i %s %Y' "$repo/.git/index")

echo "bench: 1. true, $runs rounds..." >&2
bench true "$runs" 1 "$work/ws" "$work/bin/true"
echo "bench: 2. git status, $gitruns rounds..." >&2
bench git "$gitruns" "$podgit" "$repo" "$GIT" status
index_after=$(stat -c '%i %s %Y' "$repo/.git/index")

python3 - "$work/true.times" "$work/git.times" "$podgit" <<'PY'
import statistics, sys
def table(path, title, pod):
    rows = [list(map(int, l.split())) for l in open(path)]
    j, o, b, p = (statistics.median(c) / 1000 for c in zip(*rows))
    print(f"{title}, median of {len(rows)} interleaved rounds:")
    print(f"  sbx-ns --join (living sandbox)   {j:9.2f} ms")
    print(f"  sbx-ns one-shot                  {o:9.2f} ms")
    print(f"  bwrap                            {b:9.2f} ms")
    if pod:
        print(f"  podman exec (running container)  {p:9.2f} ms")
    else:
        print("  podman exec                      n/a (git does not run in the image)")
    print(f"  join/one-shot      {j / o:6.3f}  (target <= 0.5)")
    if pod:
        print(f"  join/podman exec   {j / p:6.3f}  (target <= 0.05)")
    print(f"  join/bwrap         {j / b:6.3f}")
table(sys.argv[1], "1. static true", True)
table(sys.argv[2], "2. git status, checkout of 10000 files", sys.argv[3] == "1")
PY
[ "$index_before" = "$index_after" ] || echo "  note: .git/index was rewritten during part 2 (a run saw other stat data)"

# 3. Leaks: 1,000 joins into the living sandbox of part 1.
srv=${spid[true]}
# The sandbox's pid 1: the server's descendant whose innermost pid is 1
# (breadth first, at most 64 processes looked at).
pid1=
queue=("$srv")
for ((k = 0; k < 64 && ${#queue[@]}; k++)); do
	p=${queue[0]}
	queue=("${queue[@]:1}")
	if [ "$p" != "$srv" ]; then
		ns=$(awk '/^NSpid:/{ print NF - 1, $NF }' "/proc/$p/status" 2>/dev/null || :)
		if [ "$ns" != "" ] && [ "${ns% *}" -gt 1 ] && [ "${ns#* }" = 1 ]; then pid1=$p; break; fi
	fi
	# shellcheck disable=SC2207 # pids: no spaces
	queue+=($(cat /proc/"$p"/task/*/children 2>/dev/null || :))
done
[ -n "$pid1" ] || { echo "bench: no pid 1 of a pid namespace below the server $srv" >&2; exit 1; }
# stats PID: open fds, VmRSS kB, threads, child processes
stats() {
	local fds rss thr kids
	fds=$(find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
	rss=$(awk '/^VmRSS:/{ print $2 }' "/proc/$1/status")
	thr=$(awk '/^Threads:/{ print $2 }' "/proc/$1/status")
	kids=$(cat /proc/"$1"/task/*/children 2>/dev/null | wc -w)
	echo "$fds $rss $thr $kids"
}
echo "bench: 3. 1000 joins..." >&2
s0=$(stats "$srv")
p0=$(stats "$pid1")
a=$(us)
for ((i = 0; i < 1000; i++)); do
	"$SBX" --join "$work/sock/true" -- "$work/bin/true" || { echo "bench: join $i failed" >&2; exit 1; }
done
b=$(us)
sleep 0.2 # let the last command's end be reaped
s1=$(stats "$srv")
p1=$(stats "$pid1")
python3 - "$s0" "$s1" "$p0" "$p1" "$srv" "$pid1" "$((b - a))" <<'PY'
import sys
s0, s1, p0, p1 = (list(map(int, a.split())) for a in sys.argv[1:5])
print(f"3. 1000 sequential joins of true into one living sandbox ({int(sys.argv[7]) / 1e6:.1f} s, "
      f"{int(sys.argv[7]) / 1000 / 1000:.2f} ms each)")
print(f"  {'':28} {'fds':>6} {'VmRSS kB':>9} {'threads':>8} {'children':>9}")
for name, b, a in ((f"server sbx-ns (pid {sys.argv[5]})", s0, s1), (f"sandbox pid 1 (pid {sys.argv[6]})", p0, p1)):
    print(f"  {name:28}")
    print(f"  {'  before':28} {b[0]:6} {b[1]:9} {b[2]:8} {b[3]:9}")
    print(f"  {'  after':28} {a[0]:6} {a[1]:9} {a[2]:8} {a[3]:9}")
    print(f"  {'  growth':28} {a[0] - b[0]:+6} {a[1] - b[1]:+9} {a[2] - b[2]:+8} {a[3] - b[3]:+9}")
PY

# --stop ends both servers; each must exit 0.
for n in true git; do
	"$SBX" --join "$work/sock/$n" --stop >/dev/null
	rc=0
	for ((i = 0; i < 100; i++)); do kill -0 "${spid[$n]}" 2>/dev/null || break; sleep 0.1; done
	kill -0 "${spid[$n]}" 2>/dev/null && { echo "bench: the $n server still runs 10 s after --stop" >&2; exit 1; }
	wait "${spid[$n]}" || rc=$?
	unset "spid[$n]"
	[ "$rc" = 0 ] || { echo "bench: the $n server exited $rc after --stop:" >&2; cat "$work/serve-$n.log" >&2; exit 1; }
done
echo "  both servers exited 0 after --stop"

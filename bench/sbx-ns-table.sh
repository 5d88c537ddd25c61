#!/bin/bash
# sbx-ns against another build of itself and against its peers and floors,
# in one run: the table of docs/benchmarks.md (ratios; absolute times on
# these shared machines mean little).
#
#   bench/sbx-ns-table.sh [RUNS] [GIT_RUNS]
#       (default 200 and 10; as root; needs SBX_BIN, bwrap, git, musl-gcc,
#        python3, setpriv and unshare; SBX_OLD_BIN: the build to compare with,
#        e.g. an older commit's bin/, else SBX_BIN itself; the unprivileged
#        runs are sbxtest's, nobody's where there is no such user)
#
# Every row's cases run interleaved (one run of each in turn, RUNS rounds),
# medians; the load average is printed with the table.
#   start     a static true, unprivileged, no network: sbx-ns
#             --workspace W --ro BIN --net none (new and old), bwrap
#             --unshare-all with the same binds (bench_bwrap), and the floor:
#             unshare -Urmpinu --fork of the same namespaces, nothing else
#   join      sbx-ns --join SOCK -- BIN/true into a living sandbox of the
#             same options (each build into its own server), against the
#             host's own fork and exec of /bin/true (the same runner:
#             bench/steps.c)
#   grant     python3 -S -c 0 (the system interpreter, hashed whole) as root
#             dropping to nobody, with a plan grant and without
#   walk      a static true on a checkout of 50,000 files in 500 directories
#             (bench_checkout), as root dropping to nobody, the tree the last
#             run kept removed first (the first run, or one after a day),
#             against bwrap on the same checkout
#   status    git status on that checkout, GIT_RUNS rounds: one-shot on the
#             plain workspace, in a new empty change set (--changes), and,
#             as root without a sandbox, after a bare bind mount and after
#             a bare overlay mount on a new upper layer (what the kernel's
#             overlay costs by itself)
set -euo pipefail
runs=${1:-200}
gitruns=${2:-10}
for v in "$runs" "$gitruns"; do
	case $v in '' | *[!0-9]* | 0*) echo "bench: usage: bench/sbx-ns-table.sh [RUNS] [GIT_RUNS]" >&2; exit 100 ;; esac
done
: "${SBX_BIN:?set SBX_BIN to the directory of the sbx binaries}"
: "${SBX_OLD_BIN:=$SBX_BIN}"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$root/bench/common.bash"
. "$root/bench/checkout.bash"
bench_need bwrap git musl-gcc python3 setpriv unshare
[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 100; }
bench_user
bench_work ns-table-bench
musl-gcc -static -O2 "$root/bench/steps.c" -o "$work/bin/steps"
mkdir "$work/ws" "$work/sock" "$work/out" "$work/g"
chown "$user:$ugid" "$work/ws" "$work/sock" "$work/out"
chmod -R a+rX "$work/bin"
nob=$(id -u nobody) nog=$(id -g nobody)
opts=(--workspace "$work/ws" --ro "$work/bin" --net none)
declare -A bin=([new]=$SBX_BIN [old]=$SBX_OLD_BIN)

# --- start and join: one runner, every case in turn ---
spids=()
stop() {
	local b
	for b in new old; do
		as "${bin[$b]}/sbx-ns" --join "$work/sock/$b" --stop >/dev/null 2>&1 </dev/null || :
	done
	wait "${spids[@]}" 2>/dev/null || :
}
trap 'stop; rm -rf "$work"' EXIT
for b in new old; do
	mkfifo "$work/ready-$b"
	chown "$user:$ugid" "$work/ready-$b"
	as "${bin[$b]}/sbx-ns" "${opts[@]}" --serve "$work/sock/$b" --ready-fd 3 3>"$work/ready-$b" </dev/null \
		>/dev/null 2>"$work/serve-$b.log" &
	spids+=($!)
	read -r -t 30 _ <"$work/ready-$b" || { echo "bench: the $b server did not become ready:" >&2; cat "$work/serve-$b.log" >&2; exit 1; }
done
uptime >"$work/load"
echo "bench: start and join, $runs rounds..." >&2
cases=(:: "$SBX_BIN/sbx-ns" "${opts[@]}" -- "$work/bin/true"
	:: "$SBX_OLD_BIN/sbx-ns" "${opts[@]}" -- "$work/bin/true"
	:: "$(command -v bwrap)" --unshare-all --die-with-parent --new-session --ro-bind /usr /usr
	--symlink usr/bin /bin --symlink usr/sbin /sbin --symlink usr/lib /lib --symlink usr/lib64 /lib64
	--ro-bind /etc /etc --ro-bind "$work/bin" "$work/bin" --proc /proc --dev /dev --tmpfs /tmp
	--bind "$work/ws" "$work/ws" --chdir "$work/ws" "$work/bin/true"
	:: "$(command -v unshare)" -Urmpinu --fork "$work/bin/true"
	:: "$SBX_BIN/sbx-ns" --join "$work/sock/new" -- "$work/bin/true"
	:: "$SBX_OLD_BIN/sbx-ns" --join "$work/sock/old" -- "$work/bin/true"
	:: /bin/true)
as "$work/bin/steps" 10 "$work/out/warm" "${cases[@]}" </dev/null
as "$work/bin/steps" "$runs" "$work/out/start" "${cases[@]}" </dev/null
stop

# --- grant: python3, hashed, as root dropping to nobody ---
py=$(readlink -f /usr/bin/python3)
head -c 32 /dev/urandom >"$work/key"
chmod 0600 "$work/key"
chown nobody:nogroup "$work/ws"
sbxr() { "${bin[$1]}/sbx-ns" --uid "$nob" --gid "$nog" "${opts[@]}" "${@:2}" </dev/null; }
for b in new old; do
	sbxr "$b" --dry-run -- "$py" -S -c 0 >"$work/g/$b.plan"
	"${bin[$b]}/sbx-check" grant --key "$work/key" --plan "$work/g/$b.plan" >"$work/g/$b.grant"
done
echo "bench: grant, $runs rounds..." >&2
for ((i = -5; i < runs; i++)); do
	a=$(us); sbxr new -- "$py" -S -c 0
	b=$(us); sbxr new --grant-fd 3 --grant-key "$work/key" -- "$py" -S -c 0 3<"$work/g/new.grant"
	c=$(us); sbxr old -- "$py" -S -c 0
	d=$(us); sbxr old --grant-fd 3 --grant-key "$work/key" -- "$py" -S -c 0 3<"$work/g/old.grant"
	e=$(us)
	[ "$i" -lt 0 ] || echo "$((b - a)) $((c - b)) $((d - c)) $((e - d))" >>"$work/out/grant"
done

# --- walk: the first run on a checkout of 50,000 files ---
echo "bench: a checkout of 50,000 files..." >&2
co=$work/co
mkdir "$co"
echo "KEY=1" >"$co/.env"
bench_checkout "$co" 50000 500
chown -R nobody:nogroup "$co"
tree=/run/sbx-ns/tree-$(stat -c %D "$co")-$(printf %x "$(stat -c %i "$co")")
cold() { "${bin[$1]}/sbx-ns" --uid "$nob" --gid "$nog" --workspace "$co" --ro "$work/bin" --net none -- "$work/bin/true"; }
bw() { bench_bwrap "$co" --uid "$nob" --gid "$nog" "$work/bin/true"; }
# Directories changed less than 2 s before a walk are read again: let the
# new checkout age first.
sleep 3
echo "bench: walk, $runs rounds..." >&2
for ((i = -5; i < runs; i++)); do
	rm -f "$tree"
	a=$(us); cold new; b=$(us)
	rm -f "$tree"
	c=$(us); cold old; d=$(us)
	e=$(us); bw; f=$(us)
	[ "$i" -lt 0 ] || echo "$((b - a)) $((d - c)) $((f - e))" >>"$work/out/walk"
done
rm -f "$tree"

# --- status: git status on the checkout, plain and in a new change set ---
chown -R "$user:$ugid" "$co"
gs=(git status --porcelain)
runu() { as "$@" </dev/null >/dev/null; }
kernel() {
	local k=$work/kernel m=$work/kernel/m o
	rm -rf "$k"
	mkdir -p "$m" "$k/upper" "$k/work"
	chown "$user:$ugid" "$k/upper"
	o=(--bind "$co")
	[ "$1" = bind ] || o=(-t overlay overlay -o "lowerdir=$co,upperdir=$k/upper,workdir=$k/work,userxattr")
	# shellcheck disable=SC2016 # the inner shell expands them
	unshare -m sh -c 'm=$1; shift; mount "$@" "$m" && cd "$m" && exec env HOME=/nonexistent \
		setpriv --reuid='"$user"' --regid='"$ugid"' --init-groups -- git status --porcelain' kernel "$m" "${o[@]}" \
		</dev/null >/dev/null
}
fresh() { rm -rf "$work/chg"; mkdir -m 0700 "$work/chg"; chown "$user:$ugid" "$work/chg"; }
echo "bench: git status, $gitruns rounds..." >&2
for ((i = -2; i < gitruns; i++)); do
	row=()
	for b in new old; do
		t0=$(us); runu "${bin[$b]}/sbx-ns" --workspace "$co" -- "${gs[@]}"; t1=$(us)
		fresh
		t2=$(us); runu "${bin[$b]}/sbx-ns" --workspace "$co" --changes "$work/chg" -- "${gs[@]}"; t3=$(us)
		row+=($((t1 - t0)) $((t3 - t2)))
	done
	a=$(us); kernel bind
	b=$(us); kernel overlay
	c=$(us)
	[ "$i" -lt 0 ] || echo "${row[*]} $((b - a)) $((c - b))" >>"$work/out/status"
done

python3 - "$work/out" "$runs" "$gitruns" "$(cat "$work/load")" "$(uptime)" "$(stat -c %s "$py")" <<'PY'
import statistics as st, sys
out, runs, gitruns, load0, load1, pysz = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6])
med = lambda v: st.median(v) / 1000

# the runner's marks: spawn K ... waited K
t = {}
start = None
for line in open(f"{out}/start"):
    f = line.split()
    if len(f) == 6 and f[0] == "sbx-mark" and f[4] in ("spawn", "waited"):
        if f[4] == "spawn":
            start = int(f[1])
        else:
            t.setdefault(int(f[5]), []).append(int(f[1]) - start)
new, old, bw, floor, jnew, jold, host = (st.median(t[k]) / 1e6 for k in range(7))
cols = lambda path: [med(c) for c in zip(*[list(map(int, l.split())) for l in open(path)])]
gp, gg, gop, gog = cols(f"{out}/grant")
wnew, wold, wbw = cols(f"{out}/walk")
snew, snewc, sold, soldc, sbind, sovl = cols(f"{out}/status")

print(f"load average before: {load0.split('load average:')[1].strip()}; after: {load1.split('load average:')[1].strip()}")
print(f"medians of {runs} interleaved rounds ({gitruns} for git status); ms\n")
print(f"| what | sbx now | sbx before | peer or floor | ratio now (before) | target |")
print(f"| --- | --- | --- | --- | --- | --- |")
print(f"| one-shot start of a static `true`, unprivileged, offline | {new:.2f} | {old:.2f} | bubblewrap {bw:.2f}; unshare -Urmpinu --fork {floor:.2f} "
      f"| {new / bw:.2f}x bubblewrap ({old / bw:.2f}x); {new / floor:.2f}x the floor ({old / floor:.2f}x) | <= 0.6x bubblewrap, <= 1.25x the floor |")
print(f"| a joined `true` into a living sandbox | {jnew:.2f} | {jold:.2f} | the host's fork+exec of /bin/true {host:.2f}; one-shot {new:.2f} "
      f"| {jnew / host:.2f}x the host ({jold / host:.2f}x); {jnew / new:.2f}x one-shot ({jold / old:.2f}x) | <= 1.5x the host, <= 0.3x one-shot |")
print(f"| a granted python3 ({pysz / 1e6:.1f} MB hashed), root to nobody | {gg:.2f} | {gog:.2f} | no grant {gp:.2f} (before {gop:.2f}) "
      f"| {gg / gp:.2f}x ({gog / gop:.2f}x) | <= 1.2x |")
print(f"| the first run on a 50,000-file checkout (no kept tree) | {wnew:.2f} | {wold:.2f} | bubblewrap {wbw:.2f} "
      f"| {wnew / wbw:.2f}x ({wold / wbw:.2f}x) | <= 1.5x |")
print(f"| `git status` on 50,000 files, one-shot with a new --changes | {snewc:.1f} | {soldc:.1f} | the plain workspace {snew:.1f} (before {sold:.1f}) "
      f"| {snewc / snew:.2f}x ({soldc / sold:.2f}x) | <= 2x |")
print(f"\ngit status without a sandbox: after a bind mount {sbind:.1f} ms, after an overlay mount {sovl:.1f} ms: "
      f"the kernel's overlay adds {sovl - sbind:.1f} ms ({sovl / sbind:.2f}x)")
print(f"the change set adds {snewc - snew:.1f} ms to sbx-ns (before {soldc - sold:.1f}): "
      f"{snewc - snew - (sovl - sbind):.1f} ms above the kernel's overlay (before {soldc - sold - (sovl - sbind):.1f})")
PY

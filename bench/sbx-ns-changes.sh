#!/bin/bash
# What a change set (sbx-ns --changes DIR: the workspace an overlay, its
# upper layer DIR/upper) costs real work, against the same sbx-ns run on
# the plain workspace, side by side in one run (ratios; absolute times on
# these shared machines mean little).
#
#   bench/sbx-ns-changes.sh [BUILDS] [RUNS] [FILES]
#       (default 5 builds, 20 runs, 50000 files; run as root; needs SBX_BIN,
#        git, python3, setpriv, tar and the network or a filled cache for
#        GNU hello's source)
#
# GNU hello: Debian's source package (tests/work/manifest, fetched and
# verified by deps/build.sh --fetch into build/work-src, as the real-work
# tests do) through ./configure && make && make check, BUILDS rounds, each
# on a fresh copy of the source: the plain workspace and the workspace with
# a new empty change set, same flags and the sandbox's own /tmp in both,
# their order turning every round.
# git status: a git checkout of FILES committed files in 500 directories
# (with its loose objects), made once and kept under /var/tmp/sbx-bench
# (the first run takes a while), RUNS rounds in a turning order, each of
#   one-shot sbx-ns on the plain workspace, in a change set that earlier
#   runs used ("warm": it holds what git wrote), and as the first run in a
#   new empty change set;
#   --join into a living sandbox (--serve) on the plain workspace and into
#   one with a change set, both started once (their overlay stays mounted);
#   as root, no sandbox: git status after a bare bind mount and after a
#   bare overlay mount on a new upper layer (what the kernel's overlay
#   costs by itself).
# Each time is also split at git's end: what follows is the teardown
# (unmounting an overlay frees every inode and dentry a run looked up).
# Both as root dropping to the test user (sbxtest; nobody where there is
# none) and as sbxtest itself where sbx-ns runs change sets for it.
set -euo pipefail
usage() { echo "bench: usage: bench/sbx-ns-changes.sh [BUILDS] [RUNS] [FILES]" >&2; exit 100; }
[ $# -le 3 ] || usage
builds=${1-5} runs=${2-20} files=${3-50000}
for v in "$builds" "$runs" "$files"; do
	case $v in '' | *[!0-9]* | 0*) usage ;; esac
	[ "${#v}" -le 7 ] || usage
done
[ "$files" -ge 10 ] || usage
: "${SBX_BIN:?set SBX_BIN to the directory of the sbx binaries}"
for t in git python3 setpriv tar; do
	command -v "$t" >/dev/null || { echo "bench: $t is missing" >&2; exit 111; }
done
[ "$(id -u)" = 0 ] || { echo "bench: run as root (the commands run as the test user)" >&2; exit 100; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$root/bench/checkout.bash"
user=sbxtest
id "$user" >/dev/null 2>&1 || user=nobody
uid=$(id -u "$user") gid=$(id -g "$user")

src=$root/build/work-src
"$root/deps/build.sh" --fetch "$root/tests/work/manifest" "$src"
tarball=$src/hello_2.10.orig.tar.gz

work=$(mktemp -d /var/tmp/sbx-ns-changes-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 0755 "$work"

# The checkout, kept between runs in a directory of root's (never one
# someone else planted); complete once its stamp exists.
cache=/var/tmp/sbx-bench
[ -d "$cache" ] || mkdir -m 0755 "$cache"
if [ -L "$cache" ] || [ ! -d "$cache" ] || [ "$(stat -c %u "$cache")" != 0 ] ||
	[ $((0$(stat -c %a "$cache") & 022)) != 0 ]; then
	echo "bench: unable to use $cache: not root's own directory, or group- or other-writable (remove it)" >&2
	exit 111
fi
co=$cache/git-$files
if [ ! -f "$co.stamp" ]; then
	echo "bench: making a git checkout of $files files in $co (once)..." >&2
	rm -rf "$co"
	bench_checkout "$co" "$files" 500
	date -u +%FT%TZ >"$co.stamp"
fi
chown -R "$uid:$gid" "$co"

us() { local t=${EPOCHREALTIME/./}; echo "${t#0}"; }
# run MODE CMD...: CMD as root (MODE root) or as the user (MODE user); T
# its time in microseconds, its output in $work/out. Any exit status but
# 0, or anything on stderr, ends the bench.
run() {
	local mode=$1 a b rc=0
	shift
	[ "$mode" = root ] || set -- setpriv --reuid="$uid" --regid="$gid" --init-groups -- "$@"
	a=$(us)
	"$@" </dev/null >"$work/out" 2>"$work/err" || rc=$?
	b=$(us)
	B=$b
	if [ "$rc" != 0 ] || [ -s "$work/err" ]; then
		echo "bench: $* exited $rc:" >&2
		cat "$work/err" >&2
		exit 1
	fi
	T=$((b - a))
}
# timed MODE ARGS...: a one-shot sbx-ns (root drops to the user).
timed() {
	local mode=$1
	shift
	if [ "$mode" = root ]; then
		run root "$SBX_BIN/sbx-ns" --uid "$uid" --gid "$gid" "$@"
	else
		run user "$SBX_BIN/sbx-ns" "$@"
	fi
}
# fresh_chg DIR MODE: a new empty change set of the caller's.
fresh_chg() {
	rm -rf "$1"
	mkdir -m 0700 "$1"
	[ "$2" = root ] || chown "$uid:$gid" "$1"
}
# turn I WORD...: the words rotated by I, one a line (a turning order).
turn() {
	local i=$1 k j
	shift
	for ((k = 0; k < $#; k++)); do
		j=$(((i + k) % $# + 1))
		echo "${!j}"
	done
}
med() { python3 -c 'import statistics, sys; print(statistics.median(int(x) for x in sys.argv[1:]))' "$@"; }
ratio() { python3 -c 'import sys; print("%.2f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$1" "$2"; }
ms() { python3 -c 'import sys; print("%.1f" % (float(sys.argv[1]) / 1000))' "$1"; }
sec() { python3 -c 'import sys; print("%.2f" % (float(sys.argv[1]) / 1e6))' "$1"; }

# hello MODE: BUILDS rounds, plain and change set.
hello() {
	local mode=$1 i d side plain=() chg=() cmd
	cmd='./configure >/dev/null && make >/dev/null 2>&1 && make check >check.log 2>&1 && ./hello'
	for ((i = 0; i < builds; i++)); do
		d=$work/hello-$mode-$i
		mkdir -p "$d/plain" "$d/chg"
		tar -xzf "$tarball" -C "$d/plain"
		tar -xzf "$tarball" -C "$d/chg"
		chown -R "$uid:$gid" "$d/plain" "$d/chg"
		fresh_chg "$d/changes" "$mode"
		for side in $(turn "$i" plain chg); do
			if [ "$side" = plain ]; then
				timed "$mode" --workspace "$d/plain/hello-2.10" -- sh -c "$cmd"
				plain+=("$T")
			else
				timed "$mode" --workspace "$d/chg/hello-2.10" --changes "$d/changes" -- sh -c "$cmd"
				chg+=("$T")
			fi
			[ "$(cat "$work/out")" = "Hello, world!" ] ||
				{ echo "bench: hello ($mode, $side) printed: $(cat "$work/out")" >&2; exit 1; }
		done
		# The change set took the build; the real workspace saw none of it.
		if [ ! -f "$d/changes/upper/config.status" ] || [ -e "$d/chg/hello-2.10/config.status" ] ||
			[ ! -f "$d/plain/hello-2.10/config.status" ]; then
			echo "bench: hello ($mode): the build did not land where expected" >&2
			exit 1
		fi
		rm -rf "$d"
	done
	local p c
	p=$(med "${plain[@]}") c=$(med "${chg[@]}")
	printf '%-4s GNU hello ./configure && make && make check, median of %d rounds: plain %s s, change set %s s: %sx (target <= 1.10)\n' \
		"$mode" "$builds" "$(sec "$p")" "$(sec "$c")" "$(ratio "$c" "$p")"
}

# git status, then its end (ns since the epoch) on stdout: the time from
# there to the run's end is the sandbox's teardown.
gs=(sh -c 'git status >/dev/null && exec date +%s%N')
# rec MODE NAME: the last run's time and teardown, for the table.
rec() { echo "$2 $T $((B - $(cat "$work/out") / 1000))" >>"$work/times-$1"; }
# serve MODE NAME ARGS...: a living sandbox on the checkout, socket
# $work/sock-MODE/NAME, ready when its --ready-fd line arrives.
serves=()
serve() {
	local mode=$1 name=$2 sock=$work/sock-$1/$2
	shift 2
	local sbx=("$SBX_BIN/sbx-ns" --uid "$uid" --gid "$gid")
	[ "$mode" = root ] || sbx=(setpriv --reuid="$uid" --regid="$gid" --init-groups -- "$SBX_BIN/sbx-ns")
	mkfifo "$work/ready-$mode-$name"
	"${sbx[@]}" --workspace "$co" "$@" --serve "$sock" --ready-fd 3 3>"$work/ready-$mode-$name" \
		</dev/null >"$work/serve-$mode-$name.log" 2>&1 &
	serves+=("$mode $sock")
	if ! read -r -t 60 _ <"$work/ready-$mode-$name"; then
		echo "bench: sbx-ns --serve ($mode) did not become ready:" >&2
		cat "$work/serve-$mode-$name.log" >&2
		exit 1
	fi
}
stop_all() {
	local s
	for s in "${serves[@]}"; do
		if [ "${s%% *}" = root ]; then
			timeout 30 "$SBX_BIN/sbx-ns" --join "${s#* }" --stop
		else
			timeout 30 setpriv --reuid="$uid" --regid="$gid" --init-groups -- "$SBX_BIN/sbx-ns" --join "${s#* }" --stop
		fi >/dev/null 2>&1 </dev/null || :
	done
	serves=()
	wait
}
trap 'stop_all; rm -rf "$work"' EXIT
# kernel bind|overlay: git status as the user after a bare mount in a new
# mount namespace, no sandbox (an overlay on a new upper layer as sbx-ns
# mounts it: userxattr).
kernel() {
	local k=$work/kernel m=$work/kernel/m opt
	rm -rf "$k"
	mkdir -p "$m" "$k/upper" "$k/work"
	chown "$uid:$gid" "$k/upper"
	chmod "$(stat -c %a "$co")" "$k/upper"
	opt=(--bind "$co")
	[ "$1" = bind ] || opt=(-t overlay overlay -o "lowerdir=$co,upperdir=$k/upper,workdir=$k/work,userxattr")
	# shellcheck disable=SC2016 # the inner shell expands them
	run root unshare -m sh -c 'm=$1; shift; mount "$@" "$m" && cd "$m" && exec env HOME=/nonexistent \
		setpriv --reuid='"$uid"' --regid='"$gid"' --init-groups -- '"${gs[*]@Q}" kernel "$m" "${opt[@]}"
}

# status MODE: RUNS rounds of git status on the checkout.
status() {
	local mode=$1 i side
	local warm=$work/status-warm-$mode cold=$work/status-cold-$mode
	fresh_chg "$warm" "$mode"
	fresh_chg "$work/serve-chg-$mode" "$mode"
	mkdir -m 0700 "$work/sock-$mode"
	[ "$mode" = root ] || chown "$uid:$gid" "$work/sock-$mode"
	serve "$mode" plain
	serve "$mode" chg --changes "$work/serve-chg-$mode"
	local sides=(plain warm cold join-plain join-chg)
	[ "$mode" = user ] || sides+=(bind overlay)
	for ((i = -3; i < runs; i++)); do
		fresh_chg "$cold" "$mode"
		for side in $(turn $((i + 3)) "${sides[@]}"); do
			case $side in
			plain) timed "$mode" --workspace "$co" -- "${gs[@]}" ;;
			warm) timed "$mode" --workspace "$co" --changes "$warm" -- "${gs[@]}" ;;
			cold) timed "$mode" --workspace "$co" --changes "$cold" -- "${gs[@]}" ;;
			join-*) run "$mode" "$SBX_BIN/sbx-ns" --join "$work/sock-$mode/${side#join-}" -- "${gs[@]}" ;;
			bind | overlay) kernel "$side" ;;
			esac
			# the first three rounds warm up
			[ "$i" -lt 0 ] || rec "$mode" "$side"
		done
	done
	stop_all
	python3 - "$work/times-$mode" "$mode" "$files" "$runs" "$(cd "$warm/upper" && find . -mindepth 1 | LC_ALL=C sort | tr '\n' ' ')" <<'PY'
import statistics, sys
t = {}
for l in open(sys.argv[1]):
    k, a, b = l.split()
    t.setdefault(k, ([], []))
    t[k][0].append(int(a) / 1000)
    t[k][1].append(int(b) / 1000)
m = {k: (statistics.median(v[0]), statistics.median(v[1])) for k, v in t.items()}
mode, files, runs, held = sys.argv[2:]
print(f"{mode} git status, checkout of {files} files, median of {runs} rounds (time; of it, from git's end to the exit):")
rows = [("plain", "one-shot sbx-ns, plain workspace", None),
        ("warm", "one-shot, change set used before (warm)", "plain"),
        ("cold", "one-shot, first run in a new change set", "plain"),
        ("join-plain", "living sandbox (--join), plain workspace", None),
        ("join-chg", "living sandbox (--join), change set", "join-plain"),
        ("bind", "no sandbox: a bind mount", None),
        ("overlay", "no sandbox: a new overlay (the kernel's own)", "bind")]
for k, name, base in rows:
    if k in m:
        r = f"  {m[k][0] / m[base][0]:.2f}x" if base else ""
        print(f"  {name:46s} {m[k][0]:7.1f} ms ({m[k][1]:6.1f} ms){r}")
print(f"  target <= 1.20x; the warm change set holds: {held}")
PY
}

modes=(root)
if [ "$user" = sbxtest ]; then
	probe=$work/probe
	mkdir -m 0755 "$probe" "$probe/ws"
	chown "$uid:$gid" "$probe/ws"
	fresh_chg "$probe/chg" user
	if err=$(setpriv --reuid="$uid" --regid="$gid" --init-groups -- \
		"$SBX_BIN/sbx-ns" --workspace "$probe/ws" --changes "$probe/chg" -- true 2>&1 </dev/null); then
		modes+=(user)
	else
		echo "user: no change set for $user here: $err"
	fi
fi
for m in "${modes[@]}"; do hello "$m"; done
for m in "${modes[@]}"; do status "$m"; done
# Nothing of sbx's may be left in the checkout.
if [ -n "$(git -c safe.directory='*' -C "$co" status --porcelain --ignored)" ]; then
	echo "bench: the checkout $co changed (remove $co.stamp to make it again)" >&2
	exit 1
fi

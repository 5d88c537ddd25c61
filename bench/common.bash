# Sourced by the benches that time sbx-ns against a static `true`
# (bench/sbx-ns.sh, bench/sbx-ns-deny.sh, bench/sbx-ns-grant.sh,
# bench/sbx-ns-serve.sh, bench/sbx-ns-tier.sh, bench/sbx-ns-steps.sh,
# bench/sbx-ns-table.sh, bench/sbx-ns-observe.sh).

# bench_need TOOL...: each is on PATH, or the bench ends (111) naming the
# first that is not.
bench_need() {
	local t
	for t; do
		command -v "$t" >/dev/null || { echo "bench: $t is missing" >&2; exit 111; }
	done
}

# bench_user: $user, the user the unprivileged runs are (the test user
# sbxtest where there is one, else nobody), and $ugid its group; `as CMD...`
# runs CMD as that user.
bench_user() {
	user=sbxtest
	id "$user" >/dev/null 2>&1 || user=nobody
	ugid=$(id -g "$user")
}
as() { setpriv --reuid="$user" --regid="$ugid" --init-groups -- "$@"; }

# bench_work NAME: $work, a new directory /var/tmp/sbx-NAME.XXXXXX (mode
# 0755) removed at exit, its bin/ holding a static `true` (musl-gcc).
bench_work() {
	work=$(mktemp -d "/var/tmp/sbx-$1.XXXXXX")
	trap 'rm -rf "$work"' EXIT
	chmod 0755 "$work"
	mkdir "$work/bin"
	printf 'int main(void){return 0;}\n' | musl-gcc -static -O2 -x c - -o "$work/bin/true"
}

# bench_steps_start SCRIPT NAME RUNS: the start of a bench that times RUNS
# interleaved rounds of bench/steps.c as another user: RUNS a positive
# number without leading zeros (else SCRIPT's usage, 100), as root, with
# SBX_BIN set; then $runs, bench_user, bench_work NAME and $work/bin/steps.
bench_steps_start() {
	case $3 in '' | *[!0-9]* | 0*) echo "bench: usage: bench/$1 [RUNS]" >&2; exit 100 ;; esac
	runs=$3
	: "${SBX_BIN:?set SBX_BIN to the directory of the sbx binaries}"
	bench_need musl-gcc python3 setpriv
	[ "$(id -u)" = 0 ] || { echo "bench: run as root (the runs are another user's)" >&2; exit 100; }
	bench_user
	bench_work "$2"
	musl-gcc -static -O2 "$root/bench/steps.c" -o "$work/bin/steps"
}

# bench_bwrap WS ARGS...: bwrap --unshare-all with the binds the benches give
# sbx-ns (/usr read-only, the merged-/usr links, /etc and $work/bin
# read-only, /proc, /dev, a tmpfs /tmp, WS read-write and the cwd), then
# ARGS (--uid, --gid, the command).
bench_bwrap() {
	bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr \
		--symlink usr/bin /bin --symlink usr/sbin /sbin --symlink usr/lib /lib \
		--symlink usr/lib64 /lib64 --ro-bind /etc /etc --ro-bind "$work/bin" "$work/bin" \
		--proc /proc --dev /dev --tmpfs /tmp --bind "$1" "$1" --chdir "$1" "${@:2}"
}

# The time in microseconds.
us() { local t=${EPOCHREALTIME/./}; echo "${t#0}"; }

#!/bin/bash
# Runs the VM test suite on Debian's stock kernel under QEMU (TCG): the host kernel has
# no cgroup v2 controllers and no XFS/ext4 project quotas, so those limits are proven here.
#
#   tests/vm/run.sh [--suite FILE_OR_DIR...] [--kernel FILE [--modules DIR]] [--init FILE]
#                   [--debian-root DIR]
#
# Environment: SBX_ROOT (repo root), SBX_BIN (dir of static sbx-* binaries, may be empty),
# SBX_TESTBIN (dir of static test programs from tests/progs, optional; its vm/, or else
# $SBX_ROOT/build/obj-static/testbin/vm, holds the VM's helpers from tests/vm/helpers:
# `make test-progs` builds both),
# SBX_VM_WORK (work dir, default $SBX_ROOT/build/vm), SBX_VM_TIMEOUT (seconds for the whole
# VM, default 600), SBX_VM_TEST_TIMEOUT (seconds for one test in the VM, default 120),
# SBX_VM_ROLES (the roles to run, "root user" by default, or one of them), SBX_VM_MEMORY
# (the VM's memory, QEMU's -m, default 1G), SBX_VM_HOST_FILES (host files and directories
# copied into the VM at their own paths, each program with the libraries ldd names: what
# a suite needs beyond busybox, such as git), SBX_VM_EXTRA (a directory copied to
# /sbx/extra: a suite's own scripts and data), SBX_VM_TCG (multi, the default: a host thread
# per vCPU; single: both vCPUs in one thread, for a kernel whose code patching at boot
# races QEMU's multi-threaded TCG).
# --kernel and --init replace the kernel or the VM's /init; they exist to test the harness.
# --kernel with --modules boots another kernel with its own modules directory (one that
# has a modules.dep), e.g. Debian 11's 5.10 from tests/vm/kernel.sh.
# --debian-root DIR boots the VM into DIR, a Debian root (tests/vm/debian.sh makes one),
# from a disk instead of the busybox root: the suite, bats and the helpers are added to
# DIR, which becomes the disk's file system (DIR is changed: give a scratch copy). The
# kernel boots with AppArmor active (apparmor=1 security=apparmor), as Debian's does.
#
# Exit status: 0 every test passed in both roles; 1 a test failed, a result is missing or
# truncated, the VM did not boot or timed out; 2 usage or host setup error.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SBX_ROOT=${SBX_ROOT:-$(cd "$here/../.." && pwd)}
SBX_BIN=${SBX_BIN:-}
SBX_TESTBIN=${SBX_TESTBIN:-}
work=${SBX_VM_WORK:-$SBX_ROOT/build/vm}
timeout_s=${SBX_VM_TIMEOUT-600}
test_timeout_s=${SBX_VM_TEST_TIMEOUT-120}
roles=${SBX_VM_ROLES-root user}
memory=${SBX_VM_MEMORY-1G}
tcg=${SBX_VM_TCG-multi}
host_files=${SBX_VM_HOST_FILES-}
extra=${SBX_VM_EXTRA-}

die() { echo "vm: fatal: $*" >&2; exit 2; }
fail() { echo "vm: FAIL: $*"; }

suite=() kernel= init_override= moddir= debroot=
while [ $# -gt 0 ]; do
	case $1 in
	--suite)
		shift
		while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do suite+=("$1"); shift; done
		[ ${#suite[@]} -gt 0 ] || die "--suite needs at least one file or directory"
		;;
	--kernel) [ $# -ge 2 ] || die "--kernel needs a file"; kernel=$2; shift 2 ;;
	--init) [ $# -ge 2 ] || die "--init needs a file"; init_override=$2; shift 2 ;;
	--modules) [ $# -ge 2 ] || die "--modules needs a directory"; moddir=$2; shift 2 ;;
	--debian-root) [ $# -ge 2 ] || die "--debian-root needs a directory"; debroot=$2; shift 2 ;;
	*) die "usage: tests/vm/run.sh [--suite FILE_OR_DIR...] [--kernel FILE [--modules DIR]] [--init FILE] [--debian-root DIR]" ;;
	esac
done
case $timeout_s in '' | *[!0-9]* | 0*) die "SBX_VM_TIMEOUT must be a positive number of seconds" ;; esac
case $test_timeout_s in '' | *[!0-9]* | 0*) die "SBX_VM_TEST_TIMEOUT must be a positive number of seconds" ;; esac
case $roles in 'root user' | root | user) ;; *) die "SBX_VM_ROLES must be 'root user', root or user, not '$roles'" ;; esac
case $memory in [1-9]*[MG]) ;; *) memory=bad ;; esac
case ${memory%[MG]} in *[!0-9]* | ??????*) die "SBX_VM_MEMORY must be a size such as 1G or 2048M, not '${SBX_VM_MEMORY-}'" ;; esac
for f in $host_files; do
	case $f in /*) [ -e "$f" ] || die "SBX_VM_HOST_FILES: $f does not exist" ;; *) die "SBX_VM_HOST_FILES: $f is not an absolute path" ;; esac
done
[ -z "$extra" ] || [ -d "$extra" ] || die "SBX_VM_EXTRA: $extra is not a directory"
case $tcg in multi | single) ;; *) die "SBX_VM_TCG must be multi or single, not '$tcg'" ;; esac
if [ -n "$moddir" ]; then
	[ -n "$kernel" ] || die "--modules needs --kernel"
	[ -f "$moddir/modules.dep" ] || die "$moddir has no modules.dep (run depmod)"
fi
if [ -n "$debroot" ]; then
	[ -x "$debroot/usr/bin/dpkg" ] || die "--debian-root $debroot holds no Debian root (no usr/bin/dpkg)"
	debroot=$(cd "$debroot" && pwd)
fi
[ ${#suite[@]} -gt 0 ] || suite=("$here")
files=()
for s in "${suite[@]}"; do
	if [ -d "$s" ]; then
		for f in "$s"/*.bats; do [ -e "$f" ] && files+=("$f"); done
	elif [ -f "$s" ]; then
		files+=("$s")
	else
		die "no such suite file or directory: $s"
	fi
done
[ ${#files[@]} -gt 0 ] || die "the suite holds no .bats file"

# --- packages -------------------------------------------------------------------------
ensure_packages() {
	local extra="bats bats-assert bats-support bats-file cpio gzip musl-tools"
	if [ -x "$SBX_ROOT/deps/packages.sh" ]; then
		SBX_PACKAGES_EXTRA="${SBX_PACKAGES_EXTRA:-} $extra" "$SBX_ROOT/deps/packages.sh" vm ||
			die "packages for the VM suite are missing"
		return 0
	fi
	local want=(qemu-system-x86 linux-image-amd64 busybox-static bash-static xfsprogs
		e2fsprogs $extra)
	local missing=() p
	for p in "${want[@]}"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "vm: installing missing packages: ${missing[*]}"
	[ "$(id -u)" = 0 ] || die "need root to install: ${missing[*]}"
	apt-get update -qq >/dev/null || die "apt-get update failed"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null || die "apt-get install failed: ${missing[*]}"
}
ensure_packages

# --- kernel and modules ---------------------------------------------------------------
find_kernel() {
	local k v
	# Newest first; the running host kernel has no modules dir and is skipped.
	for k in $(ls -1 /boot/vmlinuz-* 2>/dev/null | sort -rV); do
		v=${k#/boot/vmlinuz-}
		[ -f "/lib/modules/$v/modules.dep" ] && { echo "$k"; return 0; }
	done
	return 1
}
if [ -n "$moddir" ]; then
	moddir=$(cd "$moddir" && pwd)
	kver=$(basename "$moddir")
elif [ -n "$kernel" ]; then
	kver=$(ls -1 /lib/modules | sort -rV | head -n1)
	moddir=/lib/modules/$kver
else
	kernel=$(find_kernel) || die "no /boot/vmlinuz-* with a /lib/modules dir (install linux-image-amd64)"
	kver=${kernel#/boot/vmlinuz-}
	moddir=/lib/modules/$kver
fi
[ -r "$kernel" ] || die "cannot read $kernel (Debian installs it readable by root only)"

case $work in *,*) die "SBX_VM_WORK must not contain a comma (QEMU option syntax): $work" ;; esac
mkdir -p "$work" || die "unable to create $work"
work=$(cd "$work" && pwd)
# One run per work dir: a second one would rebuild the image and disks under the first.
exec 9>"$work/lock"
flock -n 9 || die "another run is using $work (set SBX_VM_WORK)"
rm -rf "$work/root" "$work/results.log" "$work/console.log"
mkdir -p "$work/root"
root=$work/root

# Resolve modules.list through modules.dep (and softdeps through modules.alias) into a load
# order, dependencies first. Each output line: "hard|soft relpath".
resolve_modules() {
	awk -v list="$here/modules.list" -v dir="$moddir" '
	function norm(s) { gsub(/-/, "_", s); return s }
	function base(p,   b) { b = p; sub(/.*\//, "", b); sub(/\.ko(\.xz|\.zst|\.gz)?$/, "", b); return norm(b) }
	FNR == 1 { file++ }
	file == 1 { sub(/#.*/, ""); if (NF) want[++nwant] = norm($1); next }
	file == 2 { p = $1; sub(/:$/, "", p); m = base(p); path[m] = p
		    deps[m] = ""; for (i = 2; i <= NF; i++) deps[m] = deps[m] " " base($i); next }
	file == 3 && $1 == "softdep" { m = norm($2); pre = 0
		    for (i = 3; i <= NF; i++) { if ($i == "pre:") pre = 1; else if ($i == "post:") pre = 0; else if (pre) soft[m] = soft[m] " " $i }
		    next }
	file == 4 && $1 == "alias" { alias[norm($2)] = alias[norm($2)] " " $3; next }
	function add(m, kind,   n, a, i, t, k) {
		if (m in done) return
		if (!(m in path)) {
			if (kind == "hard") { print "missing " m; return }
			return
		}
		done[m] = 1
		n = split(soft[m], a, " ")
		for (i = 1; i <= n; i++) {
			t = norm(a[i])
			if (t in path) add(t, "soft")
			else { k = split(alias[t], al, " "); for (j = 1; j <= k; j++) add(norm(al[j]), "soft") }
		}
		n = split(deps[m], a, " ")
		for (i = 1; i <= n; i++) add(a[i], kind)
		print kind " " path[m]
	}
	END { for (w = 1; w <= nwant; w++) add(want[w], "hard") }
	' "$here/modules.list" "$moddir/modules.dep" "$moddir/modules.softdep" "$moddir/modules.alias"
}
mods=$(resolve_modules)
if grep -q '^missing ' <<<"$mods"; then
	# Built into the kernel is fine; absent altogether is not.
	while read -r _ m; do
		grep -Eq "/${m}\.ko" "$moddir/modules.builtin" ||
			grep -Eq "/${m//_/[-_]}\.ko" "$moddir/modules.builtin" ||
			die "kernel module $m is neither built in nor in $moddir"
	done < <(grep '^missing ' <<<"$mods")
	mods=$(grep -v '^missing ' <<<"$mods")
fi
mkdir -p "$root/lib/modules/$kver" "$root/etc"
: >"$root/etc/sbxvm-modules"
while read -r kind rel; do
	[ -n "$rel" ] || continue
	out=$root/lib/modules/$kver/${rel%.xz}
	out=${out%.zst}
	out=${out%.gz}
	mkdir -p "$(dirname "$out")"
	case $rel in
	*.xz) xz -dc "$moddir/$rel" >"$out" ;;
	*.zst) zstd -qdc "$moddir/$rel" >"$out" ;;
	*.gz) gzip -dc "$moddir/$rel" >"$out" ;;
	*) cp "$moddir/$rel" "$out" ;;
	esac
	echo "$kind /lib/modules/$kver/${out#"$root/lib/modules/$kver/"}" >>"$root/etc/sbxvm-modules"
done <<<"$mods"

# --- test helpers ---------------------------------------------------------------------
# Built by `make test-progs` (tests/vm/helpers/NAME.c -> TESTBIN/vm/NAME), like tests/progs;
# a missing or stale one stops the run rather than testing an old binary.
helpers=${SBX_TESTBIN:-$SBX_ROOT/build/obj-static/testbin}/vm
mkdir -p "$root/sbx/bin" "$root/sbx/helpers" "$root/sbx/testbin" "$root/sbx/tests/helpers"
for src in "$here"/helpers/*.c; do
	[ -e "$src" ] || continue
	bin=$helpers/$(basename "${src%.c}")
	[ -x "$bin" ] || die "$bin is not built (run: make test-progs)"
	[ "$bin" -nt "$src" ] || die "$bin is older than $src (run: make test-progs)"
done
# --- root file system -----------------------------------------------------------------
for d in bin sbin usr/bin usr/sbin usr/lib usr/libexec proc sys dev tmp run mnt/xfs mnt/ext4 \
	home/sbxuser root var/tmp; do
	mkdir -p "$root/$d"
done
cp /bin/busybox "$root/bin/busybox"
for a in $("$root/bin/busybox" --list-full); do
	[ -e "$root/$a" ] || ln -s /bin/busybox "$root/$a"
done
rm -f "$root/bin/bash" && cp /bin/bash-static "$root/bin/bash"
install -m 0755 "$here/pkill.sh" "$root/usr/bin/pkill"
cp /usr/bin/bats "$root/usr/bin/bats"
cp -r /usr/lib/bats-core "$root/usr/lib/"
cp -r /usr/libexec/bats-core "$root/usr/libexec/"
cp -r /usr/lib/bats "$root/usr/lib/"
# The tools are meant to be static; a dynamic build (STATIC=0) gets its loader and
# libraries copied along so that it runs in the VM too.
add_program() {
	cp "$1" "$2/"
	local lib
	if [ -n "$(readelf -l "$1" 2>/dev/null | grep 'program interpreter')" ]; then
		for lib in $(ldd "$1" 2>/dev/null | grep -o '/[^ ]*'); do
			[ -e "$root$lib" ] || { mkdir -p "$root$(dirname "$lib")" && cp -L "$lib" "$root$lib"; }
		done
	fi
}
if [ -n "$SBX_BIN" ] && [ -d "$SBX_BIN" ]; then
	for b in "$SBX_BIN"/sbx-*; do [ -f "$b" ] && add_program "$b" "$root/sbx/bin"; done
fi
if [ -n "$SBX_TESTBIN" ] && [ -d "$SBX_TESTBIN" ]; then
	for b in "$SBX_TESTBIN"/*; do [ -f "$b" ] && [ -x "$b" ] && add_program "$b" "$root/sbx/testbin"; done
fi
for src in "$here"/helpers/*.c; do
	[ -e "$src" ] && add_program "$helpers/$(basename "${src%.c}")" "$root/sbx/helpers"
done
cp "$here"/helpers/* "$root/sbx/tests/helpers/"
# The README's demo, so the VM can show it with every limit enforced.
mkdir -p "$root/sbx/demo" && cp "$SBX_ROOT"/demo/*.sh "$root/sbx/demo/"
mkdir -p "$root/sbx/contrib/session" && cp "$SBX_ROOT/contrib/session/sbx-session" "$root/sbx/contrib/session/"
# The pages whose recipes 62-recipes runs, and the runner they share with the host.
mkdir -p "$root/sbx/docs" && cp "$SBX_ROOT/README.md" "$root/sbx/" && cp "$SBX_ROOT"/docs/*.md "$root/sbx/docs/"
cp "$SBX_ROOT/tests/recipes.bash" "$root/sbx/tests/helpers/"
rm -f "$root"/sbx/tests/helpers/*.[ch]
# What a suite needs beyond busybox, at the host's paths; ELF programs with their libraries.
for f in $host_files; do
	mkdir -p "$root$(dirname "$f")"
	rm -f "$root$f" # a busybox link there: cp would write through it
	if [ -d "$f" ]; then
		cp -a "$f" "$root$(dirname "$f")/"
	else
		add_program "$f" "$root$(dirname "$f")"
	fi
done
[ -z "$extra" ] || cp -a "$extra" "$root/sbx/extra"
for f in "${files[@]}"; do
	[ -e "$root/sbx/tests/$(basename "$f")" ] && die "two suite files named $(basename "$f")"
	cp "$f" "$root/sbx/tests/"
done
if [ -n "$init_override" ]; then
	cp "$init_override" "$root/init"
else
	cp "$here/init.sh" "$root/init"
fi
chmod 0755 "$root/init"
printf 'root:x:0:0:root:/root:/bin/bash\nsbxuser:x:1000:1000:sbx test user:/home/sbxuser:/bin/bash\n' \
	>"$root/etc/passwd"
printf 'root:x:0:\nsbxuser:x:1000:\n' >"$root/etc/group"
chmod -R a+rX "$root/sbx" "$root/usr" "$root/etc"
chmod 1777 "$root/tmp" "$root/var/tmp"
rm -f "$work/root.img"
if [ -n "$debroot" ]; then
	# The initramfs only loads the modules and switches to the disk (init.sh); what the
	# runs need goes into the Debian root: /init, /sbx, bats, the test user, and busybox
	# for the few commands a minimal Debian root lacks (poweroff, insmod), last on PATH.
	cp -a "$root/sbx" "$root/init" "$debroot/" || die "unable to copy the suite into $debroot"
	for d in usr/bin/bats usr/lib/bats-core usr/libexec/bats-core usr/lib/bats; do
		mkdir -p "$debroot/$(dirname "$d")" && cp -a "/$d" "$debroot/$(dirname "$d")/" ||
			die "unable to copy /$d into $debroot"
	done
	cp /bin/busybox "$debroot/sbx/busybox"
	mkdir -p "$debroot/sbx/busybox-bin" "$debroot/mnt/xfs" "$debroot/mnt/ext4" "$debroot/home/sbxuser"
	for a in $("$root/bin/busybox" --list-full); do
		[ -e "$debroot/$a" ] || [ -e "$debroot/usr/$a" ] ||
			ln -sf /sbx/busybox "$debroot/sbx/busybox-bin/${a##*/}"
	done
	grep -q '^sbxuser:' "$debroot/etc/passwd" || {
		echo 'sbxuser:x:1000:1000:sbx test user:/home/sbxuser:/bin/bash' >>"$debroot/etc/passwd" &&
			echo 'sbxuser:x:1000:' >>"$debroot/etc/group"
	} || die "unable to add sbxuser to $debroot"
	: >"$debroot/.sbxvm-debian-root"
	: >"$root/etc/sbxvm-rootdisk"
	truncate -s 2G "$work/root.img"
	mkfs.ext4 -q -F -d "$debroot" "$work/root.img" || die "mkfs.ext4 -d $debroot failed"
fi
(cd "$root" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc -R 0:0 --quiet | gzip -1 >"$work/initramfs.gz") ||
	die "unable to build the initramfs"

# --- disks ----------------------------------------------------------------------------
rm -f "$work/xfs.img" "$work/ext4.img"
truncate -s 512M "$work/xfs.img"
mkfs.xfs -q "$work/xfs.img" || die "mkfs.xfs failed"
truncate -s 256M "$work/ext4.img"
mkfs.ext4 -q -F -O quota,project -E quotatype=prjquota "$work/ext4.img" ||
	die "mkfs.ext4 failed"

# --- boot -----------------------------------------------------------------------------
echo "vm: kernel $kernel, $(wc -l <"$root/etc/sbxvm-modules") modules, suite: $(cd "$root/sbx/tests" && ls *.bats | tr '\n' ' ')"
: >"$work/results.log"
: >"$work/console.log"
start=$(date +%s)
set +e
# no_timer_check: under TCG on a loaded host the kernel's check that the
# timer interrupt arrives through the IO-APIC can time out and panic the
# boot ("IO-APIC + timer doesn't work"); the check proves nothing here.
timeout -k 5 "$timeout_s" qemu-system-x86_64 \
	-accel tcg,thread="$tcg" -cpu max -m "$memory" -smp 2 -no-reboot \
	-display none -monitor none -nic none \
	-kernel "$kernel" -initrd "$work/initramfs.gz" \
	-append "console=ttyS0 no_timer_check cgroup_no_v1=all panic=-1 oops=panic quiet loglevel=4 sbxvm.test_timeout=$test_timeout_s sbxvm.roles=${roles// /,}${debroot:+ apparmor=1 security=apparmor}" \
	-serial "file:$work/console.log" -serial "file:$work/results.log" \
	-drive "file=$work/xfs.img,format=raw,if=virtio,cache=unsafe" \
	-drive "file=$work/ext4.img,format=raw,if=virtio,cache=unsafe" \
	${debroot:+-drive "file=$work/root.img,format=raw,if=virtio,cache=unsafe"} \
	</dev/null >"$work/qemu.log" 2>&1 &
qpid=$!
# timeout runs QEMU in its own process group: a ^C or a killed make must not leave it behind.
trap 'kill $qpid 2>/dev/null' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# Stream results as they arrive; tail stops once QEMU (or timeout) is gone. Both run in
# the background so that the wait below, unlike a foreground pipeline, lets a signal's
# trap run at once.
tail -n +1 -f --pid=$qpid "$work/results.log" 2>/dev/null | tr -d '\r' |
	awk '/^SBXVM BEGIN /{sub(/^SBXVM BEGIN /, "vm: "); print; fflush(); next}
	     /^SBXVM ROLE /{role=$3; next}
	     /^SBXVM ROLE-END /{sub(/^seconds=/, "", $5); print "[" role "] finished in " $5 " s"; role=""; fflush(); next}
	     /^SBXVM /{next} role!=""{print "[" role "] " $0; fflush()}' &
spid=$!
wait $qpid
qrc=$?
wait $spid
trap - EXIT INT TERM
# The verdict below runs without set -e: an empty grep must not end the report.
elapsed=$(($(date +%s) - start))

# --- verdict --------------------------------------------------------------------------
# Parse the whole channel again: per role, the plan, every result, the end markers.
summary=$(tr -d '\r' <"$work/results.log" | awk -v want="$(wc -w <<<"$roles")" '
	/^SBXVM BEGIN /   { begin = 1; sub(/^SBXVM BEGIN /, ""); info = $0; next }
	/^SBXVM FATAL /   { sub(/^SBXVM FATAL /, ""); fatal = fatal $0 "; "; next }
	/^SBXVM ROLE /    { role = $3; roles = roles " " role; plan[role] = -1; n[role] = 0; next }
	/^SBXVM ROLE-END / { ended[$3] = 1; role = ""; next }
	/^SBXVM END$/     { end = 1; next }
	role == "" { next }
	/^1\.\.[0-9]+$/   { plan[role] = substr($0, 4) + 0; next }
	/^ok /            { n[role]++; if ($0 ~ / # [Ss][Kk][Ii][Pp]/) { fail++; bad = bad "[" role "] " $0 "\n" } else pass++; next }
	/^not ok /        { n[role]++; fail++; bad = bad "[" role "] " $0 "\n"; next }
	END {
		printf "begin=%d end=%d pass=%d fail=%d\n", begin, end, pass, fail
		printf "info=%s\n", info
		if (fatal != "") printf "problem=VM setup failed: %s\n", fatal
		nr = split(roles, r, " ")
		for (i = 1; i <= nr; i++) {
			if (!(r[i] in ended)) printf "problem=role %s: results truncated (no end marker)\n", r[i]
			else if (plan[r[i]] < 0) printf "problem=role %s: no test plan\n", r[i]
			else if (plan[r[i]] != n[r[i]]) printf "problem=role %s: %d of %d results\n", r[i], n[r[i]], plan[r[i]]
		}
		if (begin && end && nr != want) printf "problem=expected %d roles, got %d\n", want, nr
		printf "%s", bad
	}')
pass=$(sed -n 's/^begin=.* pass=\([0-9]*\) .*/\1/p' <<<"$summary")
failn=$(sed -n 's/^begin=.* fail=\([0-9]*\)$/\1/p' <<<"$summary")
begin=$(sed -n 's/^begin=\([0-9]\).*/\1/p' <<<"$summary")
end=$(sed -n 's/^begin=[0-9] end=\([0-9]\).*/\1/p' <<<"$summary")
info=$(sed -n 's/^info=//p' <<<"$summary")
problems=$(sed -n 's/^problem=//p' <<<"$summary")

ok=1
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	fail "timeout: the VM did not finish within $timeout_s s"
	last=$(tr -d '\r' <"$work/results.log" | grep -E '^(not )?ok ' | tail -n 1)
	[ -z "$last" ] || echo "vm: last result before the timeout: $last"
	ok=0
elif [ "$begin" != 1 ]; then
	fail "boot failure: the VM sent no result (qemu exit status $qrc)"
	ok=0
elif [ "$end" != 1 ]; then
	fail "results truncated: no end marker (qemu exit status $qrc)"
	ok=0
elif [ "$qrc" != 0 ]; then
	fail "qemu exit status $qrc"
	ok=0
fi
if [ -n "$problems" ]; then
	while IFS= read -r p; do fail "$p"; done <<<"$problems"
	ok=0
fi
if [ "${failn:-0}" != 0 ]; then
	echo "vm: failed tests:"
	grep -E '^\[[a-z]+\] (not )?ok ' <<<"$summary" | sed 's/^/  /'
	ok=0
fi
if [ "$begin" != 1 ] || [ "$end" != 1 ]; then
	echo "vm: last lines of the console ($work/console.log):"
	tr -d '\r' <"$work/console.log" | tail -n 25 | sed 's/^/  | /'
	[ -s "$work/qemu.log" ] && sed 's/^/  qemu: /' "$work/qemu.log" | tail -n 5
fi
echo "vm: run took $elapsed s"
echo "vm: ${pass:-0} passed, ${failn:-0} failed"
[ $ok = 1 ]

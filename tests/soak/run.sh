#!/bin/bash
# `make soak`: the soak (tests/soak/soak.bash) in a VM, where cgroup v2
# gives every living sandbox its hard limits (the host has no cgroup v2
# controllers, and sbx-cgroup refuses there). Then tests/soak/report.py
# writes OUT/report.md (and OUT/latency.svg with --plot) and prints the
# one closing line:
#   soak: N calls, F faults, L lost, K leaked
#
#   tests/soak/run.sh [--plot]
#
# Environment: SOAK_SECONDS (default 600), SOAK_SANDBOXES (default 32),
# SOAK_SEED (default: a random one, printed; the same seed injects the same
# faults), SOAK_OUT (default build/soak), SBX_BIN, SBX_TESTBIN.
# Exit status: 0 when L and K are 0 and the VM ran to its end; 1 otherwise;
# 2 usage.
set -u
cd "$(dirname "$0")/../.." || exit 2
root=$PWD
die() { echo "soak: $*" >&2; exit 2; }
plot=
case ${1-} in '') ;; --plot) plot=--plot ;; *) die "usage: tests/soak/run.sh [--plot]" ;; esac
: "${SOAK_SECONDS:=600}" "${SOAK_SANDBOXES:=32}" "${SOAK_SEED:=$((($(od -An -N2 -tu2 /dev/urandom)) + 1))}"
out=${SOAK_OUT:-$root/build/soak}
case $SOAK_SECONDS in '' | *[!0-9]* | 0*) die "SOAK_SECONDS is a positive number of seconds, not '$SOAK_SECONDS'" ;; esac
[ "$SOAK_SECONDS" -ge 42 ] || die "SOAK_SECONDS is at least 42 (every fault kind once, 7 s apart), not $SOAK_SECONDS"
case $SOAK_SANDBOXES in '' | *[!0-9]* | 0*) die "SOAK_SANDBOXES is a number from 1 to 60, not '$SOAK_SANDBOXES'" ;; esac
[ "$SOAK_SANDBOXES" -le 60 ] || die "SOAK_SANDBOXES is a number from 1 to 60 (the broker takes 64 sandboxes), not $SOAK_SANDBOXES"
case $SOAK_SEED in '' | *[!0-9]* | 0*) die "SOAK_SEED is a positive number, not '$SOAK_SEED'" ;; esac
case $out in /*) ;; *) out=$root/$out ;; esac

# What a killed run left: its VM (QEMU holds the work dir's lock, taken by
# tests/vm/run.sh) and its files. Everything else it made was inside the VM.
mkdir -p "$out"
if [ -e "$out/pid" ]; then
	old=$(cat "$out/pid")
	if [ -d "/proc/$old" ] && grep -qsF tests/soak/run.sh "/proc/$old/cmdline"; then
		die "another run (pid $old) is using $out (set SOAK_OUT)"
	fi
	left=
	for p in /proc/[0-9]*; do
		for f in "$p"/fd/*; do
			[ "$(readlink "$f" 2>/dev/null)" = "$out/vm/lock" ] || continue
			left="$left ${p#/proc/}"
			break
		done
	done
	echo "soak: removing what a killed run (pid $old) left:${left:+ its VM (pid$left),} $out/vm, $out/extra"
	for p in $left; do kill -KILL "$p" 2>/dev/null; done
	for p in $left; do while [ -d "/proc/$p" ]; do sleep 0.1; done; done
fi
rm -rf "$out/vm" "$out/extra" "$out/report.md" "$out/latency.svg" "$out"/*.dat
echo $$ >"$out/pid"
trap 'rm -f "$out/pid"' EXIT

# The VM's files: the harness, its parameters, a test PKI for the TLS
# origin (tests/tlsorigin.bash), and a token no log or output may show.
x=$out/extra
mkdir -p "$x"
cp tests/soak/soak.bash "$x/"
. tests/tlsorigin.bash
tls_pki "$x/pki" tls.test || die "unable to make the test PKI in $x/pki"
chmod -R a+rX "$x"
token=sbxsoak$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
cat >"$x/params" <<EOF
SOAK_SECONDS=$SOAK_SECONDS
SOAK_SANDBOXES=$SOAK_SANDBOXES
SOAK_SEED=$SOAK_SEED
SOAK_TOKEN=$token
EOF
echo "soak: seed $SOAK_SEED, $SOAK_SECONDS s, $SOAK_SANDBOXES sandboxes; host load average $(cut -d' ' -f1-3 /proc/loadavg)"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
# git for the commits, iproute2's ip for the origins' namespace and veth,
# openssl for the TLS origin: busybox has none of them.
SBX_BIN=${SBX_BIN:-$root/bin} SBX_TESTBIN=${SBX_TESTBIN:-$root/build/obj-static/testbin} \
	SBX_VM_ROLES=root SBX_VM_MEMORY=2G SBX_VM_TEST_TIMEOUT=$((SOAK_SECONDS + 900)) \
	SBX_VM_TIMEOUT=$((SOAK_SECONDS + 1200)) SBX_VM_EXTRA=$x SBX_VM_WORK=$out/vm \
	SBX_VM_HOST_FILES="/usr/bin/git /usr/sbin/ip /usr/bin/openssl /usr/lib/ssl/openssl.cnf" \
	tests/vm/run.sh --suite tests/soak/soak.bats >"$out/vm.log" 2>&1 &
vm=$!
# A stopped soak stops its VM: tests/vm/run.sh ends QEMU on SIGTERM.
trap 'kill -TERM $vm 2>/dev/null; wait $vm; exit 143' TERM INT
wait $vm
vrc=$?
trap - TERM INT
load1=$(cut -d' ' -f1-3 /proc/loadavg)
grep -v '^\[root\] # SOAK ' "$out/vm.log" | grep -v '^\[root\] # .* Killed ' | tail -n 40
python3 tests/soak/report.py $plot --load "$load0" "$load1" "$out/vm/results.log" "$out"
rrc=$?
[ $vrc = 0 ] && [ $rrc = 0 ]

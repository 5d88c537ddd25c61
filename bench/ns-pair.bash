# Sourced by the benches that run in two network namespaces, after their
# checks (bench/net-setup.bash, bench/sbx-broker.sh,
# bench/sbx-broker-fair.sh, bench/sbx-broker-service.sh). $1: a short
# tag for the names; $2: the first three numbers of their /24 ("h" has .1,
# "o" .2). A scratch directory $W, the namespaces "h" ($NH) and "o" ($NO)
# joined by a veth pair (tests/netns.bash: no default route anywhere), and
# wait_for and net_wait_port (tests/wait.bash). Everything is removed at
# exit: the pids in the arrays pids and BG_PIDS (tests/tlsorigin.bash's
# name) are killed first, then whatever runs in the namespaces.
W=$(mktemp -d "/var/tmp/sbx-$1-bench.XXXXXX")
chmod 0755 "$W"
NH=sbx$1$$h NO=sbx$1$$o
pids=() BG_PIDS=()
cleanup() {
	exec 2>/dev/null # the shell's word on each process killed here
	for p in "${pids[@]}" "${BG_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || :; done
	wait 2>/dev/null || :
	for ns in "$NH" "$NO"; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || :; done
		ip netns del "$ns" 2>/dev/null || :
	done
	rm -rf "$W"
}
trap cleanup EXIT
trap "exit 143" TERM
trap "exit 130" INT
. "$(dirname "${BASH_SOURCE[0]}")/../tests/netns.bash"
. "$(dirname "${BASH_SOURCE[0]}")/../tests/wait.bash"
netns_pair "$NH" "$NO" "v$1$$h" "v$1$$o" "$2.1/24" "$2.2/24"

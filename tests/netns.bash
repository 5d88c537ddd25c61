# Sourced by the network suites and benches: netns_pair A B IFA IFB ADDRA ADDRB
# makes the network namespaces A and B joined by a veth pair (IFA in A with
# ADDRA, IFB in B with ADDRB, both CIDR), loopback up in both and no route
# beyond the pair's own subnet: nothing in them can reach another machine.
netns_pair() {
	local a=$1 b=$2 ifa=$3 ifb=$4 ns
	ip netns add "$a"
	ip netns add "$b"
	ip link add "$ifa" type veth peer name "$ifb"
	ip link set "$ifa" netns "$a"
	ip link set "$ifb" netns "$b"
	ip -n "$a" addr add "$5" dev "$ifa"
	ip -n "$b" addr add "$6" dev "$ifb"
	for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
	ip -n "$a" link set "$ifa" up
	ip -n "$b" link set "$ifb" up
}

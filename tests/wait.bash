# Waiting for events, never a fixed sleep: sourced by helpers.bash and by
# the benches that start the suites' servers (bench/sbx-broker-service.sh).

# Wait for an event the test cannot be told of directly: run the command (a
# string, evaluated, so that [ ], pipes and && work) every 20 ms until it
# succeeds, for at most 30 s, then fail naming it. Never a fixed sleep: a
# test waits for what it needs, and no longer.
wait_for() {
	local i
	for ((i = 0; i < 1500; i++)); do
		eval "$1" && return 0
		sleep 0.02
	done
	echo "wait_for: not true after 30 s: $1" >&2
	return 1
}

# net_wait_port NS ADDR PORT: until something in network namespace NS
# accepts a connection on ADDR:PORT ($PY, a python3), for at most 10 s.
net_wait_port() {
	local i
	for i in $(seq 1 200); do
		ip netns exec "$1" "$PY" -c 'import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 0.5).close()' \
			"$2" "$3" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "nothing listens on $2:$3 in $1" >&2
	return 1
}

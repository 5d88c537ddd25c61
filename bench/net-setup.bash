# Sourced by bench/sbx-ns-net.sh and bench/sbx-ns-transparent.sh after
# their checks: bench/ns-pair.bash's scratch directory $W and network
# namespaces "h" ($NH: sbx-ns, the broker with an /etc/hosts naming
# origin.test, the host-side clients) and "o" ($NO: the origin on
# 198.18.9.2, bench/net.c), removed at exit; sbx-broker on
# $W/broker.sock, ready; $W/ws a workspace for uid 65534; $W/net the
# client. $1: a short tag for the names.
. "$(dirname "${BASH_SOURCE[0]}")/ns-pair.bash" "$1" 198.18.9
echo "198.18.9.2 origin.test" > "$W/hosts"
mkdir "$W/ws"
chown 65534:65534 "$W/ws"

cc -O2 -pthread -o "$W/net" "$(dirname "$0")/net.c"
chmod 0755 "$W/net"
ip netns exec "$NO" "$W/net" origin 198.18.9.2 </dev/null >/dev/null 2>&1 &
pids+=($!)
mkfifo "$W/ready"
exec {rfd}<>"$W/ready"
ip netns exec "$NH" unshare -m --propagation private sh -c \
	'mount --bind "$0/hosts" /etc/hosts && exec "$@"' "$W" "$SBX_BIN/sbx-broker" --listen "$W/broker.sock" \
	--allow-host origin.test --allow-private-networks --max-response-bytes 1T --max-wall-time 3600 \
	--max-connections 20000 --ready-fd 3 3>"$W/ready" </dev/null >/dev/null 2>"$W/broker.err" &
pids+=($!)
read -r -t 10 -u "$rfd" _

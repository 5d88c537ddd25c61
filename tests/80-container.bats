#!/usr/bin/env bats
# sbx as a container entrypoint, for real: the image built from
# contrib/container/ with podman (no registry), sbx-ns as its entrypoint
# with the README's least-privilege flags, rootful and rootless, the escape
# catalog's core cases inside, the refusal of a default container, and the
# Kubernetes manifest of contrib/kubernetes/ run by `podman kube play`.
# Every name is unique to this run and removed at the end. If podman cannot
# run here, the suite fails with podman's reason: nothing is skipped.

load helpers

# podman with the settings this host needs (runc, explicit ulimits: the
# cgroups are hybrid; vfs storage), for root or for the test user.
ctr_conf() {
	cat >"$1" <<-'EOF'
	[containers]
	default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]
	[engine]
	runtime = "runc"
	EOF
}

pm() {
	CONTAINERS_CONF="$C_DIR/containers.conf" podman --storage-driver vfs --log-level error "$@"
}

pm_user() {
	setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" --init-groups --reset-env -- \
		env HOME="$C_HOME" XDG_RUNTIME_DIR="$C_XDG" PATH=/usr/bin:/bin \
		CONTAINERS_CONF="$C_DIR/containers.conf" podman --storage-driver vfs --log-level error "$@"
}

# The least privilege sbx-ns needs (README, "Containers and Kubernetes").
LP=(--network none --cap-drop=ALL --security-opt no-new-privileges
    --security-opt 'unmask=/proc/*' --read-only)

setup_file() {
	sbx_test_user
	command -v podman >/dev/null || { echo "podman is not installed (deps/packages.sh test)" >&2; return 1; }
	command -v runc >/dev/null || { echo "runc is not installed (deps/packages.sh test)" >&2; return 1; }
	# Rootless podman needs the test user's subordinate ids; hostUsers:
	# false (podman's userns=auto) takes them from the user "containers".
	grep -q "^$SBX_TEST_USER:" /etc/subuid && grep -q "^$SBX_TEST_USER:" /etc/subgid ||
		{ echo "$SBX_TEST_USER has no /etc/subuid and /etc/subgid entries (usermod --add-subuids)" >&2; return 1; }
	local f
	for f in /etc/subuid /etc/subgid; do
		grep -q '^containers:' "$f" || echo 'containers:2147483647:2147483648' >>"$f"
	done
	C_DIR=$(sbx_scratch)
	C_U="sbxc$$"
	C_IMG="localhost/sbx-$C_U:test"
	C_HOME=$(getent passwd "$SBX_TEST_USER" | cut -d: -f6)
	C_XDG="$C_DIR/xdg"
	mkdir -m 0700 "$C_XDG"
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$C_XDG"
	ctr_conf "$C_DIR/containers.conf"
	export C_DIR C_U C_IMG C_HOME C_XDG
	# The image exactly as contrib/ builds it, then a test layer on top: the
	# attempt program and a secret beside the workspace.
	"$SBX_ROOT/contrib/container/context.sh" "$C_DIR/ctx" "$SBX_BIN"
	pm build -q -f "$SBX_ROOT/contrib/container/Containerfile" -t "localhost/sbx-$C_U:base" "$C_DIR/ctx" >/dev/null
	mkdir -p "$C_DIR/test/srv/secret"
	cp "$SBX_TESTBIN/ns-attempt" "$C_DIR/test/ns-attempt"
	echo "sbx-container-secret" >"$C_DIR/test/srv/secret/key"
	# busybox's ip, as a minimal image would have it.
	mkdir -p "$C_DIR/test/bin"
	ln -s busybox "$C_DIR/test/bin/ip"
	chmod -R a+rX "$C_DIR"
	printf 'FROM localhost/sbx-%s:base\nCOPY ns-attempt /usr/local/bin/ns-attempt\nCOPY srv/ /srv/\nCOPY bin/ /bin/\n' "$C_U" >"$C_DIR/test/Containerfile"
	pm build -q -t "$C_IMG" "$C_DIR/test" >/dev/null
	# The same two images in the test user's own storage, for rootless runs.
	pm_user build -q -f "$SBX_ROOT/contrib/container/Containerfile" -t "localhost/sbx-$C_U:base" "$C_DIR/ctx" >/dev/null
	pm_user build -q -t "$C_IMG" "$C_DIR/test" >/dev/null
}

teardown_file() {
	local i
	[ -n "${C_DIR:-}" ] || return 0
	for i in 1 2 3; do
		pm pod rm -f -a --filter "name=$C_U" >/dev/null 2>&1 || true
		pm rm -f --filter "name=$C_U" >/dev/null 2>&1 || true
	done
	pm volume ls -q | grep -- "$C_U" | xargs -r podman --storage-driver vfs volume rm -f >/dev/null 2>&1 || true
	pm rmi -f "$C_IMG" "localhost/sbx-$C_U:base" >/dev/null 2>&1 || true
	pm_user rm -f --filter "name=$C_U" >/dev/null 2>&1 || true
	pm_user rmi -f "$C_IMG" "localhost/sbx-$C_U:base" >/dev/null 2>&1 || true
	kube_down
	kube_net_down
	[ -n "${C_DIR:-}" ] && rm -rf "$C_DIR"
}

# One container, sbx-ns as its entrypoint with the least privilege, as the
# image's user; the workspace a tmpfs owned by that user.
lp_run() {
	pm run --rm "${LP[@]}" --mount type=tmpfs,destination=/ws,U=true "$C_IMG" "$@"
}

lp_run_user() {
	pm_user run --rm "${LP[@]}" --mount type=tmpfs,destination=/ws,U=true "$C_IMG" "$@"
}

CATALOG='for a in "write /etc/x" "write /usr/local/bin/x" "write /x" "read /srv/secret/key" \
	"socket-inet" "unshare-user" "clone-newuser" "write /ws/ok"; do ns-attempt $a; done'
CATALOG_OUT='write: EROFS
write: EROFS
write: EROFS
read: ENOENT
socket-inet: EPERM
unshare-user: EPERM
clone-newuser: EPERM
write: ok'

@test "the image is built from contrib/ without a registry: one layer of static tools, sbx-ns its entrypoint" {
	run -0 pm image inspect --format '{{json .Config.Entrypoint}} {{.Config.User}} {{len .RootFS.Layers}}' "localhost/sbx-$C_U:base"
	assert_output '["/usr/local/bin/sbx-ns"] 1000:1000 1'
	run -0 pm run --rm "${LP[@]}" "localhost/sbx-$C_U:base"
	assert_line --index 0 --regexp '^usage: sbx-ns '
	# The secret is readable by the container's user outside the sandbox.
	run -0 pm run --rm "${LP[@]}" --entrypoint /bin/cat "$C_IMG" /srv/secret/key
	assert_output "sbx-container-secret"
}

@test "rootful podman, least privilege: the escape catalog's core cases hold inside" {
	run -0 --separate-stderr lp_run --workspace /ws -- /bin/sh -c "$CATALOG"
	assert_equal "$stderr" ""
	assert_output "$CATALOG_OUT"
	run -0 --separate-stderr lp_run --workspace /ws -- /bin/id
	assert_output "uid=1000(sbx) gid=1000(sbx) groups=1000(sbx)"
}

@test "rootless podman as an unprivileged user, least privilege: the same cases hold" {
	run -0 --separate-stderr lp_run_user --workspace /ws -- /bin/sh -c "$CATALOG"
	assert_equal "$stderr" ""
	assert_output "$CATALOG_OUT"
	# The same with another unprivileged user in the container.
	run -0 --separate-stderr pm_user run --rm "${LP[@]}" --user 65534:65534 \
		--mount type=tmpfs,destination=/ws,U=true "$C_IMG" --workspace /ws -- /bin/sh -c "$CATALOG"
	assert_output "$CATALOG_OUT"
}

PROC_FIX='in a container, unmask /proc: podman --security-opt unmask=/proc/*, docker --security-opt systempaths=unconfined, Kubernetes securityContext procMount: Unmasked (with hostUsers: false)'

@test "a default container: sbx-ns refuses with 106 and the container's fix, leaving nothing in the workspace" {
	pm volume create "dws-$C_U" >/dev/null
	run -106 --separate-stderr pm run --rm --network none -v "dws-$C_U:/ws:U" "$C_IMG" --workspace /ws -- /bin/true
	assert_equal "$stderr" "sbx-ns: fatal: unable to mount proc on /proc: Operation not permitted (podman: /run/.containerenv); $PROC_FIX"
	# Nothing half set up: the deny-write placeholders are gone again.
	run -0 pm run --rm --network none -v "dws-$C_U:/ws" --entrypoint /bin/ls "$C_IMG" -A /ws
	assert_output ""
	# unmask=/proc/sys alone is not enough: other masked paths remain. sbx-ns is the
	# container's pid 1 (exec), as is its sandbox's: the status has one exit line.
	run -106 --separate-stderr pm run --rm --network none --security-opt unmask=/proc/sys \
		--mount type=tmpfs,destination=/ws,U=true --entrypoint /bin/sh "$C_IMG" \
		-c 'exec sbx-ns --status-fd 3 --workspace /ws -- /bin/true 3>&1'
	assert_equal "$stderr" "sbx-ns: fatal: unable to mount proc on /proc: Operation not permitted (podman: /run/.containerenv); $PROC_FIX"
	assert_equal "$(printf '%s\n' "${lines[@]}" | grep -c '"event":"exit"')" 1
	assert_line --index -1 '{"tool":"sbx-ns","event":"exit","code":106,"stage":"setup"}'
	# Rootless, the same refusal.
	run -106 --separate-stderr pm_user run --rm --network none --mount type=tmpfs,destination=/ws,U=true \
		"$C_IMG" --workspace /ws -- /bin/true
	assert_equal "$stderr" "sbx-ns: fatal: unable to mount proc on /proc: Operation not permitted (podman: /run/.containerenv); $PROC_FIX"
}

# The Landlock tier in a container: a baseline saying "fallback":"landlock" (root's, mounted
# read-only) and a request giving deny-write up, on fd 4.
tier_conf() {
	mkdir -p -m 0755 "$C_DIR/tier"
	printf '{"sandbox":{"fallback":"landlock","denyWrite":[],"readableRoots":["/ws"],"writableRoots":["/ws"]}}\n' \
		>"$C_DIR/tier/base.json"
	printf '{"sandbox":{"denyWrite":[]}}\n' >"$C_DIR/tier/req.json"
	chmod 0644 "$C_DIR"/tier/*.json
	# Docker's and Kubernetes' RuntimeDefault profiles refuse CLONE_NEWUSER (without
	# CAP_SYS_ADMIN) and clone3; podman's default allows both.
	printf '%s\n' '{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["unshare","clone"],"action":"SCMP_ACT_ERRNO","errnoRet":1,"args":[{"index":0,"value":268435456,"valueTwo":268435456,"op":"SCMP_CMP_MASKED_EQ"}]},{"names":["clone3"],"action":"SCMP_ACT_ERRNO","errnoRet":38}]}' \
		>"$C_DIR/tier/nouserns.json"
}

tier_run() { # PODMAN-ARGS... -- COMMAND
	local args=()
	while [ "$1" != -- ]; do args+=("$1"); shift; done
	shift
	pm run --rm --network none "${args[@]}" --mount type=tmpfs,destination=/ws,U=true -v "$C_DIR/tier:/conf:ro" \
		--entrypoint /bin/sh "$C_IMG" -c 'exec sbx-ns --baseline /conf/base.json --policy-fd 4 --workspace /ws \
		--status-fd 3 -- /bin/sh -c "$0" 4</conf/req.json 3>"/ws/status"' "$1"
}

@test "the landlock tier in a container that refuses user namespaces: it runs, says so, and holds" {
	tier_conf
	run -0 --separate-stderr tier_run --security-opt "seccomp=$C_DIR/tier/nouserns.json" -- \
		'for a in "write /ws/ok" "write /etc/x" "write /tmp/x" "write /x" "read /srv/secret/key" socket-inet \
			socket-unix unshare-user clone-newuser mount-tmpfs; do ns-attempt $a; done; id; cat /ws/status >&2'
	assert_output "write: ok
write: EACCES
write: EACCES
write: EACCES
read: EACCES
socket-inet: EPERM
socket-unix: EPERM
unshare-user: EPERM
clone-newuser: EPERM
mount-tmpfs: EPERM
uid=1000(sbx) gid=1000(sbx) groups=1000(sbx)"
	lines=("${stderr_lines[@]}")
	assert_equal "${lines[0]}" "sbx-ns: WARNING: no user namespaces here (Operation not permitted): the command runs in the landlock tier: Landlock ABI 7 and seccomp, but no pid, mount or network namespace; other processes of the same user are visible; no fresh /proc"
	assert_equal "${lines[1]}" '{"tool":"sbx-ns","event":"policy"'"$SBX_VER"',"baseline":true,"clamped":[],"unsafe_fallback":false}'
	[[ "${lines[2]}" =~ ^\{\"tool\":\"sbx-ns\",\"event\":\"started\",\"isolation\":\"landlock\",\"reason\":\"Operation\ not\ permitted\",\"landlock\":7,.*\"net\":\"none\", ]]
}

@test "a default podman container masks /proc: under the baseline, the tier; without it, or with deny-write, 106" {
	tier_conf
	run -0 --separate-stderr tier_run -- \
		'for a in "write /ws/ok" "write /etc/x" "read /srv/secret/key" socket-inet unshare-user; do ns-attempt $a; done
		cat /ws/status >&2'
	assert_output "write: ok
write: EACCES
read: EACCES
socket-inet: EPERM
unshare-user: EPERM"
	lines=("${stderr_lines[@]}")
	assert_equal "${lines[0]}" "sbx-ns: WARNING: no fresh /proc here (Operation not permitted; podman: /run/.containerenv): the command runs in the landlock tier: Landlock ABI 7 and seccomp, but no pid, mount or network namespace; other processes of the same user are visible; no fresh /proc"
	[[ "${lines[3]}" =~ ^\{\"tool\":\"sbx-ns\",\"event\":\"started\",\"isolation\":\"landlock\",\"reason\":\"no\ fresh\ /proc:\ Operation\ not\ permitted\",\"landlock\":7, ]]
	# What the tier cannot keep is refused, with the container's fix.
	printf '{"sandbox":{"fallback":"landlock","readableRoots":["/ws"],"writableRoots":["/ws"]}}\n' >"$C_DIR/tier/base-deny.json"
	chmod 0644 "$C_DIR/tier/base-deny.json"
	run -106 --separate-stderr pm run --rm --network none --mount type=tmpfs,destination=/ws,U=true \
		-v "$C_DIR/tier:/conf:ro" "$C_IMG" --baseline /conf/base-deny.json --workspace /ws -- /bin/true
	assert_equal "$stderr" "sbx-ns: fatal: unable to mount proc on /proc: Operation not permitted (podman: /run/.containerenv); $PROC_FIX; and unable to use the landlock tier the baseline allows: the deny-write glob .env applies inside the writable workspace and Landlock cannot keep what it matches read-only (only an empty denyWrite in both the baseline and the request, or the baseline's \"tierDenyWrite\": \"unenforced\", gives deny-write up)"
	run -106 --separate-stderr pm run --rm --network none --entrypoint /usr/local/bin/sbx-check "$C_IMG" host
	assert_line "tiers              ok             landlock only (Landlock ABI 7, seccomp, no namespaces: the container masks /proc): sbx-ns runs commands only under a baseline saying \"fallback\": \"landlock\", with a WARNING each time tiers=landlock"
	run -106 --separate-stderr pm run --rm --network none --security-opt "seccomp=$C_DIR/tier/nouserns.json" \
		--entrypoint /usr/local/bin/sbx-check "$C_IMG" host
	assert_line --regexp '^tiers +ok +landlock only \(Landlock ABI 7, seccomp, no namespaces\)'
}

@test "sbx-check host in a default container names the container and its settings, never a boot parameter" {
	run -106 --separate-stderr pm run --rm --network none --entrypoint /usr/local/bin/sbx-check "$C_IMG" host
	assert_equal "$stderr" ""
	assert_line "container          ok             running in a container (podman: /run/.containerenv): the fixes below are its settings"
	assert_line --regexp '^userns +ok +user namespaces work for uid 1000'
	assert_line "proc               missing        mounting a fresh proc in the new pid namespace failed: Operation not permitted (podman: /run/.containerenv); to fix: $PROC_FIX"
	assert_line "pivot_root         missing        not tried: proc failed first"
	assert_line "quotactl_fd        missing        quotactl_fd failed; sbx-quota uses quotactl on the filesystem's block device: Function not implemented, from the seccomp filter this process runs under (podman: /run/.containerenv), not necessarily the kernel; to fix: the container's seccomp profile refuses it: podman or docker --security-opt seccomp=PROFILE allowing it, Kubernetes securityContext seccompProfile type: Localhost"
	assert_line "result: isolation unavailable (exit 106)"
	refute_output --partial "boot"
	refute_output --partial "sysctl"
	refute_output --partial "Linux 5.14 or newer"
}

@test "sbx-check host in the least-privilege container: every step sbx-ns takes works" {
	run --separate-stderr pm run --rm "${LP[@]}" --entrypoint /usr/local/bin/sbx-check "$C_IMG" host
	assert_equal "$stderr" ""
	for item in userns namespaces root-tmpfs proc pivot_root userns-limit seccomp landlock; do
		assert_line --regexp "^$item +ok "
	done
	refute_line --regexp '^(userns|namespaces|root-tmpfs|proc|pivot_root|userns-limit|seccomp) +(missing|unsupported|FAIL)'
}

# In a default container sbx-ns itself refuses (106, above: no fresh proc); the tier's proof
# runs there all the same, the namespaces taken away by the proof, and holds.
@test "sbx-check proof --tier landlock in a default container: the Landlock tier holds" {
	run -0 --separate-stderr pm run --rm --network none --entrypoint /usr/local/bin/sbx-check "$C_IMG" proof --tier landlock
	assert_equal "$stderr" ""
	assert_line --index 0 --regexp '^landlock-tier +ok +sbx-ns ran the command in the landlock tier and said so \(WARNING\), Landlock ABI [0-9]+ .*: the proof took them away from it with a seccomp filter, as a container.s profile does abi=[0-9]+$'
	for item in sibling-secret outside-write tmp-write offline signal-outside abstract-outside; do
		assert_line --regexp "^$item +ok +denied: "
	done
	assert_line "result: 9 proven, 2 not proven (env-write, git-hook-write) (exit 0)"
}

@test "sbx-check proof with busybox's ip reports that the veth pair needs iproute2" {
	run --separate-stderr pm run --rm --network none --security-opt 'unmask=/proc/*' --user 0:0 \
		--entrypoint /usr/local/bin/sbx-check "$C_IMG" proof --ns /usr/local/bin/sbx-ns
	assert_line "broker-allowed     unsupported    not proven: /bin/ip is not iproute2's ip (busybox's?): the veth pair needs iproute2, and the broker refuses loopback and the host's own addresses; to fix: run sbx-check proof as root with iproute2's ip(8) installed"
	assert_line --regexp '^broker-denied +ok +denied: http://denied.sbx-check.test/: HTTP 403'
	refute_output --partial "Usage: ip"
	refute_output --partial "BusyBox"
}

@test "killing the container mid-run leaves nothing on the host: no process, mount, netns or socket" {
	local name="kill-$C_U" cid before
	mkdir -m 0777 "$C_DIR/sig"
	mkfifo -m 0666 "$C_DIR/sig/ready"
	before=$(ip netns list)
	# The broker and the sandbox in one container, as in the Kubernetes
	# manifest; sbx-ns says ready through a fifo of the host's.
	pm run -d --name "$name" "${LP[@]}" --mount type=tmpfs,destination=/ws,U=true \
		--mount type=tmpfs,destination=/run/sbx,U=true -v "$C_DIR/sig:/sig" \
		--entrypoint /bin/sh "$C_IMG" -c 'mkfifo /run/sbx/ready
		sbx-broker --listen /run/sbx/broker.sock --allow-host x.test --ready-fd 3 3>/run/sbx/ready &
		read -r _ </run/sbx/ready
		exec sbx-ns --workspace /ws --net broker:/run/sbx/broker.sock --ready-fd 4 -- ns-attempt sleep '"36$$"' 4>/sig/ready' >/dev/null
	read -r _ <"$C_DIR/sig/ready"
	cid=$(pm inspect --format '{{.Id}}' "$name")
	run -0 pgrep -f "ns-attempt sleep 36$$"
	run -0 pm kill -s KILL "$name"
	run -0 pm wait "$name"
	assert_output 137
	run -0 pm rm "$name"
	run -1 pgrep -f "ns-attempt sleep 36$$"
	run -1 pgrep -f "sbx-broker --listen /run/sbx/broker.sock --allow-host x.test"
	run -1 grep -c "$cid" /proc/self/mountinfo
	assert_equal "$(ip netns list)" "$before"
	run -0 ls -A "$C_DIR/sig"
	assert_output "ready"
}

# --- Kubernetes: contrib/kubernetes/sbx-pod.yaml through podman kube play ----------------

# The test network: a podman network with no way out (internal: no default
# route, no NAT) whose bridge the test makes itself, and an origin in a
# network namespace of the test's own, on that bridge. Nothing leaves the
# machine.
kube_net() {
	local sub br
	kube_net_down
	C_NET="net-$C_U"
	sub="198.19.$(( $$ % 200 + 20 ))"
	# Pods take their addresses from the upper half, so the origin's .2 is
	# never also a pod's own address (which the broker rightly refuses).
	pm network create --internal --disable-dns --subnet "$sub.0/24" --ip-range "$sub.128/25" "$C_NET" >/dev/null
	br=$(pm network inspect --format '{{.NetworkInterface}}' "$C_NET")
	ip link add "$br" type bridge
	ip addr add "$sub.1/24" dev "$br"
	ip link set "$br" up
	ip netns add "o$C_U"
	ip link add "vb$C_U" type veth peer name "vo$C_U"
	ip link set "vo$C_U" netns "o$C_U"
	ip link set "vb$C_U" master "$br" up
	ip -n "o$C_U" addr add "$sub.2/24" dev "vo$C_U"
	ip -n "o$C_U" link set lo up
	ip -n "o$C_U" link set "vo$C_U" up
	C_ORIGIN="$sub.2"
	export C_NET C_ORIGIN
	cat >"$C_DIR/origin.py" <<-'PY'
	import http.server, sys
	class H(http.server.BaseHTTPRequestHandler):
	    def do_GET(self):
	        with open(sys.argv[3], "a") as f:
	            f.write(self.headers.get("Host", "") + self.path + "\n")
	        body = b"hello from the sbx test origin\n"
	        self.send_response(200)
	        self.send_header("Content-Length", str(len(body)))
	        self.end_headers()
	        self.wfile.write(body)
	    def log_message(self, *a):
	        pass
	s = http.server.HTTPServer((sys.argv[1], 80), H)
	with open(sys.argv[2], "w") as r:
	    r.write("ready\n")
	s.serve_forever()
	PY
	mkfifo "$C_DIR/origin.ready"
	: >"$C_DIR/origin.log"
	ip netns exec "o$C_U" python3 "$C_DIR/origin.py" "$C_ORIGIN" "$C_DIR/origin.ready" "$C_DIR/origin.log" 3>&- &
	echo $! >"$C_DIR/origin.pid"
	read -r _ <"$C_DIR/origin.ready"
}

kube_net_down() {
	local br
	br=$(pm network inspect --format '{{.NetworkInterface}}' "net-$C_U" 2>/dev/null) || br=
	[ -f "$C_DIR/origin.pid" ] && kill "$(cat "$C_DIR/origin.pid")" 2>/dev/null
	rm -f "$C_DIR/origin.pid" "$C_DIR/origin.ready"
	ip netns del "o$C_U" 2>/dev/null || true
	ip link del "vb$C_U" 2>/dev/null || true
	pm network rm -f "net-$C_U" >/dev/null 2>&1 || true
	[ -z "$br" ] || ! ip link show "$br" >/dev/null 2>&1 || ip link del "$br"
}

# The shipped manifest with this run's values: the ConfigMap's allowlist
# and command, unique names, and the origin's address for the two names
# (hostAliases). Everything else, the securityContext above all, as shipped.
kube_yaml() {
	sed -e "s|^  SBX_BROKER_ARGS: .*|  SBX_BROKER_ARGS: \"--allow-host allowed.sbx.test --allow-private-networks\"|" \
	    -e "s|^  SBX_COMMAND: .*|  SBX_COMMAND: \"wget -q -O- http://allowed.sbx.test/a; wget -q -O- http://denied.sbx.test/b; echo end\"|" \
	    -e "s/sbx-job/job-$C_U/" -e "s/name: run\$/name: run-$C_U/" -e "s/name: ws\$/name: ws-$C_U/" -e "s/name: tmp\$/name: tmp-$C_U/" \
	    -e "s|image: localhost/sbx:latest|image: localhost/sbx-$C_U:base|" \
	    -e "s|^  restartPolicy: Never|  hostAliases:\n    - ip: $C_ORIGIN\n      hostnames: [allowed.sbx.test, denied.sbx.test]\n  restartPolicy: Never|" \
	    "$SBX_ROOT/contrib/kubernetes/sbx-pod.yaml"
}

# podman 4.3 ignores securityContext.procMount (podman 4.7 and the
# Kubernetes runtimes apply it): this runc wrapper applies it the same way,
# clearing the /proc entries of maskedPaths and readonlyPaths, for a
# container whose annotation carries the manifest's procMount value.
kube_runtime() {
	cat >"$C_DIR/runc-procmount" <<-'EOF'
	#!/bin/sh
	bundle= prev=
	for a in "$@"; do
		if [ "$prev" = --bundle ] || [ "$prev" = -b ]; then bundle=$a; fi
		prev=$a
	done
	if [ -n "$bundle" ] && [ -f "$bundle/config.json" ]; then
		python3 - "$bundle/config.json" <<-'PY' || exit 1
		import json, sys
		c = json.load(open(sys.argv[1]))
		if c.get("annotations", {}).get("io.sbx.test.procMount") == "Unmasked":
		    l = c.setdefault("linux", {})
		    for k in ("maskedPaths", "readonlyPaths"):
		        l[k] = [x for x in l.get(k, []) if not x.startswith("/proc")]
		    json.dump(c, open(sys.argv[1], "w"))
		PY
	fi
	exec runc "$@"
	EOF
	chmod 0755 "$C_DIR/runc-procmount"
	printf '[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]\n[engine]\nruntime = "procmount"\n[engine.runtimes]\nprocmount = ["%s"]\n' \
		"$C_DIR/runc-procmount" >"$C_DIR/kube.conf"
}

pm_kube() {
	CONTAINERS_CONF="$C_DIR/kube.conf" podman --storage-driver vfs --log-level error "$@"
}

kube_down() {
	local i
	for i in 1 2 3; do
		pm_kube pod rm -f "job-$C_U" >/dev/null 2>&1 && break
	done
	for i in 1 2 3; do
		pm_kube pod rm -f "ses-$C_U" >/dev/null 2>&1 && break
	done
	pm_kube volume rm -f "run-$C_U" "ws-$C_U" "tmp-$C_U" "sd-$C_U" "st-$C_U" >/dev/null 2>&1 || true
}

@test "the manifest podman plays differs from the shipped one only in values, names and host aliases" {
	C_ORIGIN=198.19.0.2
	run -1 diff "$SBX_ROOT/contrib/kubernetes/sbx-pod.yaml" <(kube_yaml)
	run -0 grep -c '^[<>]' <<<"$output"
	assert_output 27
	run -1 diff "$SBX_ROOT/contrib/kubernetes/sbx-pod.yaml" <(kube_yaml)
	refute_output --regexp '^[<>].*(securityContext|procMount|hostUsers|seccompProfile|allowPrivilegeEscalation|capabilities|drop|readOnlyRootFilesystem|runAs|command|args|sbx-ns|sbx-broker)'
}

@test "podman kube play of the shipped manifest: the allowlisted fetch goes through the broker, the other gets 403" {
	local pm_value
	kube_net
	kube_runtime
	pm_value=$(sed -n 's/^ *procMount: *//p' "$SBX_ROOT/contrib/kubernetes/sbx-pod.yaml")
	assert_equal "$pm_value" "Unmasked"
	kube_yaml >"$C_DIR/pod.yaml"
	run pm_kube kube play --network "$C_NET" --annotation "io.sbx.test.procMount=$pm_value" "$C_DIR/pod.yaml"
	[ "$status" -eq 0 ] || fail "podman kube play failed ($status): $output"
	run -0 pm_kube wait "job-$C_U-sbx"
	assert_output 0 || { pm_kube logs "job-$C_U-sbx" >&2; false; }
	run -0 pm_kube logs "job-$C_U-sbx"
	assert_line "hello from the sbx test origin"
	assert_line "wget: server returned error: HTTP/1.1 403 Forbidden"
	assert_line "end"
	assert_line --partial '"host":"allowed.sbx.test","port":80,"address":"'"$C_ORIGIN"'","decision":"allowed","status":200'
	assert_line --partial '"host":"denied.sbx.test","port":80,"address":null,"decision":"refused","status":403,"reason":"host denied.sbx.test not on the allowlist (--allow-host)"'
	# The origin saw the allowed request and nothing else.
	run -0 cat "$C_DIR/origin.log"
	assert_output "allowed.sbx.test/a"
	kube_down
	kube_net_down
}

@test "podman kube play as podman 4.3 does it (procMount ignored): sbx-ns refuses with 106 and the field to set" {
	kube_net
	kube_runtime
	kube_yaml >"$C_DIR/pod.yaml"
	run pm_kube kube play --network "$C_NET" "$C_DIR/pod.yaml"
	[ "$status" -eq 0 ] || fail "podman kube play failed ($status): $output"
	run -0 pm_kube wait "job-$C_U-sbx"
	assert_output 106
	run -0 pm_kube logs "job-$C_U-sbx"
	assert_line "sbx-ns: fatal: unable to mount proc on /proc: Operation not permitted (podman: /run/.containerenv); $PROC_FIX"
	refute_line "hello from the sbx test origin"
	run -0 cat "$C_DIR/origin.log"
	assert_output ""
	kube_down
	kube_net_down
}

@test "a container seccomp profile refusing Landlock: the sandbox runs without it and sbx-check names the profile" {
	printf '{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["landlock_create_ruleset"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38}]}\n' \
		>"$C_DIR/no-landlock.json"
	# The sandbox runs and says so (--require-landlock would refuse).
	run -0 --separate-stderr pm run --rm "${LP[@]}" --security-opt "seccomp=$C_DIR/no-landlock.json" \
		--mount type=tmpfs,destination=/ws,U=true --entrypoint /bin/sh "$C_IMG" \
		-c 'sbx-ns --status-fd 3 --workspace /ws -- /bin/true 3>&1'
	assert_equal "$stderr" ""
	assert_line --partial '"event":"started"'
	assert_line --partial '"landlock":"none"'
	refute_line --partial '"landlock":"ABI'
	# sbx-check host names the profile, not the kernel (--read-only hides
	# podman's /run/.containerenv: its variable names it).
	run -101 --separate-stderr pm run --rm "${LP[@]}" --security-opt "seccomp=$C_DIR/no-landlock.json" \
		--entrypoint /usr/local/bin/sbx-check "$C_IMG" host
	assert_line "landlock           missing        creating or applying a Landlock ruleset failed: Function not implemented, from the seccomp filter this process runs under (container=podman), not necessarily the kernel; to fix: the container's seccomp profile refuses it: podman or docker --security-opt seccomp=PROFILE allowing it, Kubernetes securityContext seccompProfile type: Localhost"
}

# --- the session recipe as a pod: contrib/kubernetes/sbx-session-pod.yaml ---------------

# The test's ConfigMap (alpha and gamma each allowed one name of the origin
# and asking for the other's: alpha in its initializer, gamma in its
# command, a service, that its ready script waits for; beta with a mount
# that does not exist), then the shipped Pod with unique names and the
# origin's address for the names.
session_yaml() {
	cat <<-EOF
	apiVersion: v1
	kind: ConfigMap
	metadata:
	  name: ses-$C_U
	data:
	  SBX_SANDBOXES: "alpha beta gamma"
	  alpha_allow: "a.sbx.test"
	  alpha_broker_args: "--allow-private-networks"
	  alpha_init: "{ cat /shared/task /sandbox_scripts/task.sh; wget -q -O- http://a.sbx.test/a; wget -q -O- http://g.sbx.test/a; touch /bash_tools/x; } >/shared/alpha.out 2>&1; echo inited >/tmp/inited"
	  alpha_ready: "test -e /tmp/inited"
	  beta_allow: "a.sbx.test"
	  beta_mounts: "ro /nonexistent /x"
	  beta_command: "exec sleep 36$$"
	  gamma_allow: "g.sbx.test"
	  gamma_broker_args: "--allow-private-networks"
	  gamma_command: "{ sh /sandbox_scripts/task.sh; wget -q -O- http://g.sbx.test/g; wget -q -O- http://a.sbx.test/g; } >/shared/gamma.out 2>&1; mv /shared/gamma.out /shared/gamma.end; exec sleep 36$$"
	  gamma_ready: "test -e /shared/gamma.end"
	  SHARED_TASK: "the session's input"
	  SANDBOX_SCRIPT: "cat /shared/task"
	EOF
	echo ---
	awk '/^---$/ { n++; next } n == 1' "$SBX_ROOT/contrib/kubernetes/sbx-session-pod.yaml" |
		sed -e "s/name: sbx-session\$/name: ses-$C_U/" -e "s/name: session-dir\$/name: sd-$C_U/" \
		    -e "s/name: session-tmp\$/name: st-$C_U/" -e "s|image: localhost/sbx:latest|image: localhost/sbx-$C_U:base|" \
		    -e "s|^  restartPolicy: Never|  hostAliases:\n    - ip: $C_ORIGIN\n      hostnames: [a.sbx.test, g.sbx.test]\n  restartPolicy: Never|"
}

@test "podman kube play of the session manifest: three named living sandboxes, one broker each, a failing one alone, a tool call into each ready one; down leaves nothing" {
	local netns vol ids
	kube_net
	kube_runtime
	run -0 grep -c '^        procMount: Unmasked$' "$SBX_ROOT/contrib/kubernetes/sbx-session-pod.yaml"
	assert_output 1
	# The Pod played is the shipped one but for names, image and aliases.
	run -1 diff <(awk '/^---$/ { n++; next } n == 1' "$SBX_ROOT/contrib/kubernetes/sbx-session-pod.yaml") \
		<(session_yaml | awk '/^---$/ { n++; next } n == 1')
	run -0 grep -c '^[<>]' <<<"$output"
	assert_output 21
	run -1 diff <(awk '/^---$/ { n++; next } n == 1' "$SBX_ROOT/contrib/kubernetes/sbx-session-pod.yaml") \
		<(session_yaml | awk '/^---$/ { n++; next } n == 1')
	refute_output --regexp '^[<>].*(securityContext|procMount|hostUsers|seccompProfile|allowPrivilegeEscalation|capabilities|drop|readOnlyRootFilesystem|runAs|command|args|bin/sbx-session|SBX_|readinessProbe)'
	session_yaml >"$C_DIR/session.yaml"
	run pm_kube kube play --network "$C_NET" --annotation io.sbx.test.procMount=Unmasked "$C_DIR/session.yaml"
	[ "$status" -eq 0 ] || fail "podman kube play failed ($status): $output"
	# The readiness the manifest's probe reads: every sandbox has its
	# state, alpha's initializer and gamma's service have done their work.
	run -0 timeout 120 env CONTAINERS_CONF="$C_DIR/kube.conf" podman --storage-driver vfs --log-level error exec "ses-$C_U-session" /bin/sh -c \
		'until [ -e /session/run/session.ready ]; do sleep 0.1; done
		cat /session/run/alpha/state /session/run/beta/state /session/run/gamma/state /session/run/beta/err'
	assert_output "ready
failed: the sandbox ended before it was ready (see /session/run/beta/err)
ready
sbx-ns: usage: --ro-bind: invalid path '/nonexistent': does not exist"
	run -0 pm_kube exec "ses-$C_U-session" /bin/cat /session/shared/alpha.out /session/shared/gamma.end
	assert_output "the session's input
cat /shared/task
hello from the sbx test origin
wget: server returned error: HTTP/1.1 403 Forbidden
touch: /bash_tools/x: Read-only file system
the session's input
hello from the sbx test origin
wget: server returned error: HTTP/1.1 403 Forbidden"
	# A tool call into each ready sandbox by name, through its own broker;
	# the failed one refuses with 110.
	run -1 pm_kube exec "ses-$C_U-session" sbx-session status /session --json
	assert_output '{"name":"alpha","state":"ready","socket":"/session/run/alpha.sock"}
{"name":"beta","state":"failed","reason":"the sandbox ended before it was ready (see /session/run/beta/err)"}
{"name":"gamma","state":"ready","socket":"/session/run/gamma.sock"}'
	run -0 pm_kube exec "ses-$C_U-session" sbx-session exec /session alpha -- /bin/sh -c 'cat /tmp/inited; wget -q -O- http://a.sbx.test/exec-a'
	assert_output "inited
hello from the sbx test origin"
	run -0 pm_kube exec "ses-$C_U-session" sbx-session exec /session gamma -- wget -q -O- http://g.sbx.test/exec-g
	assert_output "hello from the sbx test origin"
	run -1 pm_kube exec "ses-$C_U-session" sbx-session exec /session gamma -- wget -q -O- http://a.sbx.test/exec-g
	assert_output "wget: server returned error: HTTP/1.1 403 Forbidden"
	run -110 pm_kube exec "ses-$C_U-session" sbx-session exec /session beta -- true
	assert_output "sbx-session: fatal: sandbox 'beta' is not ready: failed: the sandbox ended before it was ready (see /session/run/beta/err)"
	run -0 sort "$C_DIR/origin.log"
	assert_output "a.sbx.test/a
a.sbx.test/exec-a
g.sbx.test/exec-g
g.sbx.test/g"
	# Stopping the pod: sbx-session stops every sandbox and ends with 0.
	netns=$(pm_kube inspect --format '{{.NetworkSettings.SandboxKey}}' "$(pm_kube pod inspect --format '{{.InfraContainerID}}' "ses-$C_U")")
	assert [ -e "$netns" ]
	run -0 pm_kube pod stop "ses-$C_U"
	run -0 pm_kube wait "ses-$C_U-session"
	assert_output 0
	# What the recipe's stop removed, in the session's volume before down.
	vol=$(pm_kube volume inspect --format '{{.Mountpoint}}' "sd-$C_U")
	assert_file_exists "$vol/shared/alpha.out"
	assert_not_exist "$vol/run"
	run -0 pm_kube logs "ses-$C_U-session"
	assert_output "sbx-session: warning: SBX_SESSION_NO_CGROUP=1: the sandboxes run without cgroup limits (no memory, pids or cpu totals)
alpha ready
beta failed: the sandbox ended before it was ready (see /session/run/beta/err)
gamma ready
sbx-session: SIGTERM: stopping /session"
	# Each container's conmon runs podman's cleanup after it exits; kube
	# down racing that cleanup fails in podman 4.3 (busy cgroup or netns).
	ids=$(pm_kube pod inspect --format '{{range .Containers}}{{.Id}} {{end}}' "ses-$C_U")
	ids=${ids% }
	wait_for '! pgrep -f "conmon .*-c (${ids// /|})" >/dev/null'
	run pm_kube kube down "$C_DIR/session.yaml"
	[ "$status" -eq 0 ] || fail "podman kube down failed ($status): $output"
	# Nothing left on the host: no pod, container, volume, the pod's netns
	# or a process.
	run -1 pm_kube pod exists "ses-$C_U"
	run -0 pm_kube ps -a -q --filter "name=ses-$C_U"
	assert_output ""
	run -0 pm_kube volume ls -q
	refute_output --partial "sd-$C_U"
	refute_output --partial "st-$C_U"
	refute_output --partial "ses-$C_U"
	assert_not_exist "$netns"
	run -1 pgrep -f "sleep 36$$"
	run -1 pgrep -f "sbx-broker --listen /session/run"
	kube_net_down
}

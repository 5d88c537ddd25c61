#!/usr/bin/env bats
# sbx as a container entrypoint, for real: the image built from
# contrib/container/ with podman (no registry), sbx-ns as its entrypoint
# with the README's least-privilege flags, rootful and rootless, the escape
# catalog's core cases inside, the refusal of a default container, and the
# Kubernetes manifests of contrib/kubernetes/ played as shipped by
# `podman kube play` after contrib/kubernetes/setup-debian12.sh.
# Every name is unique to this run (the pods of the manifests in a store of
# the tests' own) and removed at the end. If podman cannot
# run here, the suite fails with podman's reason: nothing is skipped.

load helpers
load recipes

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

# The least privilege sbx-ns needs: the flags of the README's podman recipe
# (tests/recipes.bash extracts it), between `podman run --rm` and the
# image, but the workspace's mount, which each run gives itself.
lp_flags() {
	local -a w
	local i
	eval "w=($(awk '/^podman run / { take = 1 } take { s = $0; c = sub(/ *\\$/, "", s); printf "%s ", s; if (!c) exit }' \
		"$RECIPE_DIR/$(recipes_of "$RECIPE_DIR" env=podman).sh"))"
	[ "${w[0]} ${w[1]} ${w[2]}" = "podman run --rm" ] || return 1
	for ((i = 3; i < ${#w[@]}; i++)); do
		[ "${w[i]}" = sbx ] && return 0
		if [ "${w[i]}" = --mount ]; then
			i=$((i + 1))
			continue
		fi
		printf '%s\n' "${w[i]}"
	done
	return 1
}
[ -z "${LP_FLAGS:-}" ] || mapfile -t LP <<<"$LP_FLAGS"

setup_file() {
	sbx_test_user
	recipes_setup
	LP_FLAGS=$(lp_flags) || { echo "no podman run line in the README's podman recipe" >&2; return 1; }
	export LP_FLAGS
	command -v podman >/dev/null || { echo "podman is not installed (deps/packages.sh test)" >&2; return 1; }
	command -v runc >/dev/null || { echo "runc is not installed (deps/packages.sh test)" >&2; return 1; }
	# Rootless podman needs the test user's subordinate ids; hostUsers:
	# false (podman's userns=auto) takes them from the user "containers".
	grep -q "^$SBX_TEST_USER:" /etc/subuid && grep -q "^$SBX_TEST_USER:" /etc/subgid ||
		{ echo "$SBX_TEST_USER has no /etc/subuid and /etc/subgid entries (usermod --add-subuids)" >&2; return 1; }
	# What a fresh Debian 12 needs for podman kube play, verbatim: the
	# packages, the ids of "containers" (hostUsers: false), runc through
	# runc-procmount and the ulimits in a containers.conf drop-in.
	"$SBX_ROOT/contrib/kubernetes/setup-debian12.sh" >/dev/null
	C_DIR=$(sbx_scratch)
	C_U="sbxc$$"
	C_IMG="localhost/sbx-$C_U:test"
	# The test user's podman gets a home and runtime directory of this run:
	# its storage records the runtime directory it was first used with and
	# goes on using that one, so a home kept between runs would recreate a
	# directory of an earlier run in /var/tmp.
	C_HOME="$C_DIR/home"
	C_XDG="$C_DIR/xdg"
	mkdir -m 0700 "$C_HOME" "$C_XDG"
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$C_HOME" "$C_XDG"
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
	# The image the manifests name, as the README builds it, in the store
	# of the Kubernetes tests.
	pk build -q -f "$SBX_ROOT/contrib/container/Containerfile" -t localhost/sbx:latest "$C_DIR/ctx" >/dev/null
}

# Rootless podman leaves processes of the test user behind that write into
# $C_XDG: the pause process holding its user namespace, and conmon's exit
# command (podman container cleanup), which can run after the last pm_user
# returned. True once none is left; each call ends those it finds.
user_podman_gone() {
	local pid left=0
	for pid in $(pgrep -u "$SBX_TEST_UID" || true); do
		tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qxF "XDG_RUNTIME_DIR=$C_XDG" || continue
		kill -KILL "$pid" 2>/dev/null || true
		left=1
	done
	[ "$left" = 0 ]
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
	pk rmi -a -f >/dev/null 2>&1 || true
	wait_for user_podman_gone
	rm -rf "$C_DIR" "$RECIPE_DIR"
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

PROC_FIX='in a container, unmask /proc: podman --security-opt unmask=/proc/*, docker --security-opt systempaths=unconfined, Kubernetes securityContext procMount: Unmasked (with hostUsers: false; podman kube play before 4.7 ignores procMount: run it with contrib/kubernetes/runc-procmount, installed by contrib/kubernetes/setup-debian12.sh, or a newer podman)'

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

# --- Kubernetes: the manifests of contrib/kubernetes/ as shipped, through podman kube play --

# podman as contrib/kubernetes/setup-debian12.sh leaves it (its drop-in, no
# CONTAINERS_CONF), in a store of the test's own holding the image the
# manifests name, localhost/sbx:latest, built as the README says.
pk() {
	env -u CONTAINERS_CONF podman --root "$C_DIR/kroot" --runroot "$C_DIR/krunroot" --storage-driver vfs \
		--log-level error "$@"
}

# The same store with runc alone: podman 4.3 as Debian ships it.
pk_plain() {
	CONTAINERS_CONF="$C_DIR/containers.conf" podman --root "$C_DIR/kroot" --runroot "$C_DIR/krunroot" \
		--storage-driver vfs --log-level error "$@"
}

POD="$SBX_ROOT/contrib/kubernetes/sbx-pod.yaml"
SESSION_POD="$SBX_ROOT/contrib/kubernetes/sbx-session-pod.yaml"

# The test network: a podman network with no way out (internal: no default
# route, no NAT) whose bridge the test makes itself, and an HTTPS origin
# standing in for pypi.org and codeload.github.com (a certificate of its
# own: busybox's wget checks none) in a network namespace of the test's
# own, on that bridge. Nothing leaves the machine.
kube_net() {
	local sub br
	kube_net_down
	C_NET="net-$C_U"
	sub="198.19.$(( $$ % 200 + 20 ))"
	# Pods take their addresses from the upper half, so the origin's .2 is
	# never also a pod's own address (which the broker rightly refuses).
	pk network create --internal --disable-dns --subnet "$sub.0/24" --ip-range "$sub.128/25" "$C_NET" >/dev/null
	br=$(pk network inspect --format '{{.NetworkInterface}}' "$C_NET")
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
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=pypi.org \
		-addext "subjectAltName=DNS:pypi.org,DNS:codeload.github.com" \
		-keyout "$C_DIR/origin.key" -out "$C_DIR/origin.crt" 2>/dev/null
	cat >"$C_DIR/origin.py" <<-'PY'
	import http.server, ssl, sys
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
	s = http.server.ThreadingHTTPServer((sys.argv[1], 443), H)
	ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
	# busybox's own TLS offers what OpenSSL's default level refuses
	ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
	ctx.load_cert_chain(sys.argv[4], sys.argv[5])
	s.socket = ctx.wrap_socket(s.socket, server_side=True)
	with open(sys.argv[2], "w") as r:
	    r.write("ready\n")
	s.serve_forever()
	PY
	mkfifo "$C_DIR/origin.ready"
	: >"$C_DIR/origin.log"
	ip netns exec "o$C_U" python3 "$C_DIR/origin.py" "$C_ORIGIN" "$C_DIR/origin.ready" "$C_DIR/origin.log" \
		"$C_DIR/origin.crt" "$C_DIR/origin.key" 3>&- &
	echo $! >"$C_DIR/origin.pid"
	read -r _ <"$C_DIR/origin.ready"
}

# The origin gone: its address answers nothing.
origin_down() {
	local p
	[ -f "$C_DIR/origin.pid" ] || return 0
	p=$(cat "$C_DIR/origin.pid")
	kill "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
	rm -f "$C_DIR/origin.pid"
}

kube_net_down() {
	local br
	br=$(pk network inspect --format '{{.NetworkInterface}}' "net-$C_U" 2>/dev/null) || br=
	origin_down
	rm -f "$C_DIR/origin.ready"
	ip netns del "o$C_U" 2>/dev/null || true
	ip link del "vb$C_U" 2>/dev/null || true
	pk network rm -f "net-$C_U" >/dev/null 2>&1 || true
	[ -z "$br" ] || ! ip link show "$br" >/dev/null 2>&1 || ip link del "$br"
}

# The one thing the test adds to the shipped manifests: the site's
# ConfigMap sbx-site they read (optional; README, "Containers and
# Kubernetes"), mapping the names the examples fetch to the test origin and
# opening its address alone (198.18.0.0/15 is refused by default) at their
# brokers.
site_yaml() {
	cat <<-EOF
	apiVersion: v1
	kind: ConfigMap
	metadata:
	  name: sbx-site
	data:
	  SBX_BROKER_SITE_ARGS: "--resolve pypi.org=$C_ORIGIN --allow-address $C_ORIGIN/32"
	  alpha_site_broker_args: "--resolve pypi.org=$C_ORIGIN --allow-address $C_ORIGIN/32"
	  beta_site_broker_args: "--resolve codeload.github.com=$C_ORIGIN --allow-address $C_ORIGIN/32"
	EOF
}

# Wait until podman's cleanup of every container of pod $1 is over: conmon
# runs "podman container cleanup ID" after each exits, and kube down racing
# it fails in podman 4.3 (the container's shm still mounted).
kube_settled() {
	local ids
	ids=$(pk pod inspect --format '{{range .Containers}}{{.Id}} {{end}}' "$1")
	ids=${ids% }
	wait_for '! pgrep -f "(conmon .*-c |container cleanup )(${ids// /|})" >/dev/null'
}

# podman kube down FILE of pod POD, with the podman function PM: the pod
# stopped and podman's cleanup over first. A mount namespace made elsewhere
# on the machine in the meantime holds a copy of a container's shm mount
# until its process ends (kube down: "device or resource busy"): kube down
# again until the pod is gone, then nothing of it may be left. The claims'
# volumes go with a kube down that succeeds; after one that failed busy they
# are removed here.
kube_down_file() { # PM FILE POD
	local kpm=$1 kfile=$2 kpod=$3
	"$kpm" pod stop -t 5 "$kpod" >/dev/null || return
	kube_settled "$kpod" || return
	wait_for '"$kpm" kube down "$kfile" >/dev/null 2>&1 || kube_gone "$kpm" "$kpod"' || return
	wait_for '[ -z "$("$kpm" volume ls -q)" ] || { "$kpm" volume prune -f >/dev/null 2>&1; false; }' || return
	[ -z "$("$kpm" ps -a -q)" ] || { echo "containers left after kube down: $("$kpm" ps -a)" >&2; return 1; }
}

# Whether pod $2 and its containers are gone; if not, remove what a failed
# kube down left (the containers with their emptyDir volumes, the pod) and
# say no.
kube_gone() { # PM POD
	! "$1" pod exists "$2" && [ -z "$("$1" ps -a -q)" ] && return 0
	"$1" rm -f -a -v >/dev/null 2>&1
	"$1" pod rm -f "$2" >/dev/null 2>&1
	return 1
}

# Whatever a failed test left of the pods.
kube_down() {
	local p
	[ -d "${C_DIR:-}/kroot" ] || return 0
	for p in sbx-job sbx-session; do
		if pk pod exists "$p" 2>/dev/null; then
			pk pod stop -t 5 "$p" >/dev/null 2>&1 || true
			kube_settled "$p" || true
		fi
		wait_for "kube_gone pk $p" || true
	done
	pk volume prune -f >/dev/null 2>&1 || true
}

teardown() {
	kube_down
	kube_net_down
}

@test "contrib/kubernetes/setup-debian12.sh: a second run changes nothing, an admin's containers.conf stays as it was, another drop-in or an overlapping id range is refused" {
	local s=$SBX_ROOT/contrib/kubernetes/setup-debian12.sh conf=/etc/containers/containers.conf
	local drop=/etc/containers/containers.conf.d/sbx.conf w=/usr/local/libexec/sbx/runc-procmount before mine=
	# setup_file ran it once; an administrator's file of their own, whose
	# runtime the drop-in overrides.
	if [ ! -e "$conf" ]; then
		mine=1
		printf '# an administrator'"'"'s settings\n[engine]\nruntime = "crun"\n' >"$conf"
	fi
	before=$(sha256sum "$conf" /etc/subuid /etc/subgid "$drop" "$w"; stat -c '%n %Y %i' "$drop" "$w")
	run -0 "$s"
	assert_output 'setup-debian12.sh: ready: podman kube play contrib/kubernetes/sbx-pod.yaml (after building the image: README, "Containers and Kubernetes")'
	run -0 "$s"
	assert_equal "$(sha256sum "$conf" /etc/subuid /etc/subgid "$drop" "$w"; stat -c '%n %Y %i' "$drop" "$w")" "$before"
	run -0 grep -c '^containers:' /etc/subuid /etc/subgid
	assert_output "/etc/subuid:1
/etc/subgid:1"
	# What it wrote is what podman reads, over the administrator's file.
	run -0 pk info --format '{{.Host.OCIRuntime.Name}} {{.Host.OCIRuntime.Path}}'
	[ -z "$mine" ] || rm -f "$conf"
	assert_output "runc $w"
	run -0 cmp "$w" "$SBX_ROOT/contrib/kubernetes/runc-procmount"
	# A drop-in of someone else's at its path: refused, left alone.
	mv "$drop" "$C_DIR/sbx.conf.ours"
	echo '[engine]' >"$drop"
	run -1 "$s"
	mv "$C_DIR/sbx.conf.ours" "$drop"
	assert_output "setup-debian12.sh: fatal: $drop exists and is not this script's: move it aside, or merge runtime = \"runc\", runc = [\"$w\"] and default_ulimits into it by hand"
	# A range of someone else's where it would put the ids of "containers".
	cp -p /etc/subuid "$C_DIR/subuid.ours"
	{ grep -v '^containers:' "$C_DIR/subuid.ours"; echo 'someone:2147483000:1000'; } >/etc/subuid
	run -1 --separate-stderr "$s"
	cp -p "$C_DIR/subuid.ours" /etc/subuid
	assert_equal "$stderr" "setup-debian12.sh: fatal: /etc/subuid line $(($(grep -vc '^containers:' "$C_DIR/subuid.ours") + 1)) (someone:2147483000:1000) overlaps 2147483647-4294967294: give the user containers a free range by hand (usermod has no user to take it)"
	run -0 cmp /etc/subuid "$C_DIR/subuid.ours"
	run -100 "$s" --force
	assert_output "setup-debian12.sh: usage: setup-debian12.sh (no arguments; run as root)"
	run -100 setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" --clear-groups "$s"
	assert_output "setup-debian12.sh: fatal: run it as root: it installs packages and writes /etc"
}

@test "the manifests podman plays are the shipped files; the test adds only the ConfigMap sbx-site they read" {
	local f
	C_ORIGIN=198.19.0.2
	# The files played are contrib/'s own (the tests name them there); the
	# ConfigMap sbx-site holds only the documented keys.
	for f in "$POD" "$SESSION_POD"; do
		run -0 grep -c '^            name: sbx-site$' "$f"
		assert_output 1
		run -0 grep -c '^            optional: true$' "$f"
		assert_output 1
	done
	run -0 grep -o '^  [A-Za-z_]*:' <(site_yaml | sed -n '/^data:/,$p')
	assert_output "  SBX_BROKER_SITE_ARGS:
  alpha_site_broker_args:
  beta_site_broker_args:"
	grep -q 'SBX_BROKER_SITE_ARGS' "$POD"
	grep -q '_site_broker_args' "$SESSION_POD"
	# The annotation runc-procmount reads says what every procMount says.
	for f in "$POD" "$SESSION_POD"; do
		run -0 sed -n 's/^ *procMount: *//p; s/^    io\.sbx\.procMount: *//p' "$f"
		refute_output --regexp '^[^U]|^U[^n]'
		run -0 grep -c '^    io.sbx.procMount: Unmasked$' "$f"
		assert_output 1
	done
}

@test "podman kube play of the shipped sbx-pod.yaml: busybox's wget reaches pypi.org over its own TLS through the transparent broker" {
	kube_net
	site_yaml >"$C_DIR/site.yaml"
	run pk kube play --network "$C_NET" --configmap "$C_DIR/site.yaml" "$POD"
	[ "$status" -eq 0 ] || fail "podman kube play failed ($status): $output"
	# The container runs the manifest's command, not another.
	run -0 pk inspect --format '{{json .Config.Cmd}}' sbx-job-sbx
	assert_output --partial 'exec sbx-ns --workspace /ws --net broker:/run/sbx/broker.sock,transparent -- /bin/sh -c \"$SBX_COMMAND\"'
	run -0 pk wait sbx-job-sbx
	assert_output 0 || { pk logs sbx-job-sbx >&2; false; }
	run -0 pk logs sbx-job-sbx
	assert_line "reached pypi.org"
	assert_line "wget: note: TLS certificate validation not implemented"
	assert_line --regexp '"method":"DNS","host":"pypi.org","port":53,"address":"240\.0\.0\.1","decision":"allowed"'
	assert_line --regexp '"method":"TLS","host":"pypi.org","port":443,"address":"'"$C_ORIGIN"'","decision":"allowed"'
	run -0 cat "$C_DIR/origin.log"
	assert_output "pypi.org/simple/"
	kube_down_file pk "$POD" sbx-job
	kube_net_down
}

@test "the shipped sbx-pod.yaml whose fetch fails: the pod fails with wget's exit code" {
	kube_net
	origin_down
	site_yaml >"$C_DIR/site.yaml"
	run pk kube play --network "$C_NET" --configmap "$C_DIR/site.yaml" "$POD"
	[ "$status" -eq 0 ] || fail "podman kube play failed ($status): $output"
	run -0 pk wait sbx-job-sbx
	assert_output 1
	run -0 pk inspect --format '{{.State.ExitCode}}' sbx-job-sbx
	assert_output 1
	run -0 pk logs sbx-job-sbx
	refute_line "reached pypi.org"
	assert_line --partial '"method":"TLS","host":"pypi.org","port":443,"address":"'"$C_ORIGIN"'","decision":"allowed","status":null,"reason":"unable to connect to '"$C_ORIGIN"': Connection refused"'
	kube_down_file pk "$POD" sbx-job
	# Without sbx-site the names resolve nowhere here: it fails the same way.
	run pk kube play --network "$C_NET" "$POD"
	[ "$status" -eq 0 ] || fail "podman kube play failed ($status): $output"
	run -0 pk wait sbx-job-sbx
	assert_output 1
	kube_down_file pk "$POD" sbx-job
	kube_net_down
}

@test "the shipped sbx-pod.yaml played by podman 4.3 with runc alone (procMount ignored): sbx-ns refuses with 106 naming runc-procmount" {
	kube_net
	site_yaml >"$C_DIR/site.yaml"
	run pk_plain kube play --network "$C_NET" --configmap "$C_DIR/site.yaml" "$POD"
	[ "$status" -eq 0 ] || fail "podman kube play failed ($status): $output"
	run -0 pk_plain wait sbx-job-sbx
	assert_output 106
	run -0 pk_plain logs sbx-job-sbx
	assert_line "sbx-ns: fatal: unable to mount proc on /proc: Operation not permitted (podman: /run/.containerenv); $PROC_FIX"
	refute_line "reached pypi.org"
	run -0 cat "$C_DIR/origin.log"
	assert_output ""
	kube_down_file pk_plain "$POD" sbx-job
	kube_net_down
}

@test "runc-procmount refuses a bad annotation and Unmasked without a user namespace, and passes everything else to runc" {
	local w=/usr/local/libexec/sbx/runc-procmount b="$C_DIR/bundle"
	mkdir -p "$b"
	run -0 cmp "$w" "$SBX_ROOT/contrib/kubernetes/runc-procmount"
	run -0 "$w" --version
	assert_line --index 0 --regexp '^runc version '
	printf '{"annotations":{"io.sbx.procMount":"unmasked"},"linux":{"namespaces":[{"type":"user"}]}}\n' >"$b/config.json"
	run -1 "$w" create --bundle "$b" x
	assert_output "runc-procmount: fatal: the annotation io.sbx.procMount is 'unmasked': Default or Unmasked"
	printf '{"annotations":{"io.sbx.procMount":"Unmasked"},"linux":{"namespaces":[{"type":"pid"}],"maskedPaths":["/proc/kcore"]}}\n' >"$b/config.json"
	run -1 "$w" create --bundle "$b" x
	assert_output "runc-procmount: fatal: io.sbx.procMount: Unmasked needs a user namespace: set hostUsers: false"
	run -0 grep -c kcore "$b/config.json"
	run -1 "$w" create --bundle "$C_DIR/nonexistent" x
	assert_output "runc-procmount: fatal: unable to read $C_DIR/nonexistent/config.json: no such file"
}

@test "podman kube play of the shipped sbx-session-pod.yaml: alpha and beta fetch through their transparent brokers, the pod is ready, tool calls by name; down leaves nothing" {
	local netns vol probe
	kube_net
	site_yaml >"$C_DIR/site.yaml"
	run pk kube play --network "$C_NET" --configmap "$C_DIR/site.yaml" "$SESSION_POD"
	[ "$status" -eq 0 ] || fail "podman kube play failed ($status): $output"
	# Every sandbox has its state: sbx-session run says so in its log.
	wait_for 'pk logs sbx-session-session 2>&1 | grep -q "^gamma "'
	run -0 pk logs sbx-session-session
	assert_output "sbx-session: warning: SBX_SESSION_NO_CGROUP=1: the sandboxes run without cgroup limits (no memory, pids or cpu totals)
alpha ready
beta ready
gamma ready"
	# The manifest's readiness probe, run as the manifest says (podman 4.3
	# does not run readiness probes itself): ready.
	probe=$(sed -n '/readinessProbe:/,/periodSeconds/s/^ *command: \[\(.*\)\]$/\1/p' "$SESSION_POD" | tr -d '",')
	assert_equal "$probe" "/usr/local/bin/sbx-session status /session"
	run -0 pk exec sbx-session-session $probe
	assert_output "alpha ready
beta ready
gamma ready"
	run -0 pk exec sbx-session-session /bin/cat /session/shared/alpha.simple /session/shared/beta.tar.gz /session/shared/gamma.out
	assert_output "hello from the sbx test origin
hello from the sbx test origin
the session's input"
	run -0 --separate-stderr pk exec sbx-session-session sbx-session exec /session alpha -- wget -Y off -q -O- https://pypi.org/exec-a
	assert_output "hello from the sbx test origin"
	# Each broker holds its own allowlist; gamma has no network at all.
	run -1 --separate-stderr pk exec sbx-session-session sbx-session exec /session alpha -- wget -Y off -q -O- https://codeload.github.com/exec-a
	assert_equal "$stderr" "wget: bad address 'codeload.github.com'"
	run -1 --separate-stderr pk exec sbx-session-session sbx-session exec /session gamma -- wget -Y off -q -O- https://pypi.org/exec-g
	assert_equal "$stderr" "wget: bad address 'pypi.org'"
	run -0 sort "$C_DIR/origin.log"
	assert_output "codeload.github.com/busybox/busybox/tar.gz/master
pypi.org/exec-a
pypi.org/simple/"
	# Stopping the pod: sbx-session stops every sandbox and ends with 0.
	netns=$(pk inspect --format '{{.NetworkSettings.SandboxKey}}' "$(pk pod inspect --format '{{.InfraContainerID}}' sbx-session)")
	assert [ -e "$netns" ]
	run -0 pk pod stop sbx-session
	run -0 pk wait sbx-session-session
	assert_output 0
	vol=$(pk volume inspect --format '{{.Mountpoint}}' session-dir)
	assert_file_exists "$vol/shared/alpha.simple"
	assert_not_exist "$vol/run"
	run -0 pk logs sbx-session-session
	assert_line --index -1 "sbx-session: SIGTERM: stopping /session"
	kube_down_file pk "$SESSION_POD" sbx-session
	# Nothing left on the host: no pod, container, volume, the pod's netns
	# or a process.
	run -1 pk pod exists sbx-session
	run -0 pk ps -a -q
	assert_output ""
	run -0 pk volume ls -q
	assert_output ""
	assert_not_exist "$netns"
	run -1 pgrep -f "sbx-broker --listen /session/run"
	kube_net_down
}

@test "the shipped sbx-session-pod.yaml whose fetches fail: alpha and beta fail, the pod is not ready" {
	local probe
	kube_net
	origin_down
	site_yaml >"$C_DIR/site.yaml"
	run pk kube play --network "$C_NET" --configmap "$C_DIR/site.yaml" "$SESSION_POD"
	[ "$status" -eq 0 ] || fail "podman kube play failed ($status): $output"
	wait_for 'pk logs sbx-session-session 2>&1 | grep -q "^gamma "'
	run -0 pk logs sbx-session-session
	assert_output "sbx-session: warning: SBX_SESSION_NO_CGROUP=1: the sandboxes run without cgroup limits (no memory, pids or cpu totals)
alpha failed: its initializer exited 1 (see /session/run/alpha/err)
beta failed: its initializer exited 1 (see /session/run/beta/err)
gamma ready"
	probe=$(sed -n '/readinessProbe:/,/periodSeconds/s/^ *command: \[\(.*\)\]$/\1/p' "$SESSION_POD" | tr -d '",')
	run -1 pk exec sbx-session-session $probe
	assert_output "alpha failed: its initializer exited 1 (see /session/run/alpha/err)
beta failed: its initializer exited 1 (see /session/run/beta/err)
gamma ready"
	# Each initializer's wget met the broker's end of the tunnel it could
	# not dial: the end of the stream where the server's hello should be,
	# in busybox's TLS child. (Its parent then says "error getting response:
	# Connection reset by peer", or dies of SIGPIPE first, writing the
	# request to the child that is gone: either, as the scheduler decides.)
	local n
	for n in alpha beta; do
		run -0 pk exec sbx-session-session /bin/cat /session/run/$n/err
		[ "$(grep -c '^wget: got bad TLS record (len:0) while expecting handshake record$' <<<"$output")" = 1 ] ||
			fail "$n's initializer error is not the fetch the broker ended: $output"
	done
	run -0 pk pod stop sbx-session
	run -0 pk wait sbx-session-session
	assert_output 0
	kube_down_file pk "$SESSION_POD" sbx-session
	kube_net_down
}

# --- The README's recipes, as written (tests/recipes.bash) --------------------

# podman as root in a recipe's namespaces reads /etc/containers (the
# recipe's own /etc): a store of this run's, vfs, and runc with the ulimits
# this host needs, as ctr_conf gives the suite's own podman.
recipe_podman_conf() {
	mkdir -p /etc/containers &&
		printf '[storage]\ndriver = "vfs"\ngraphroot = "%s/podman"\nrunroot = "/run/containers/storage"\n' \
			"$RECIPE_DIR" >/etc/containers/storage.conf &&
		ctr_conf /etc/containers/containers.conf
}

@test "the README's podman recipe as written: the image from contrib/, a command in the container's sandbox" {
	recipes_setup
	recipe_prepare() { recipe_podman_conf; }
	export -f ctr_conf recipe_podman_conf
	recipes_run_kind env=podman || { rm -rf "$RECIPE_DIR"; false; }
	rm -rf "$RECIPE_DIR"
}

# The pod recipe: its default network a podman network with no way out, its
# bridge made here as kube_net makes it, holding the site's mirror address
# the recipe names (198.18.9.2), where an HTTPS origin of the recipe's
# namespaces answers (busybox's wget checks no certificate). The network is
# made with a run root in the recipe's own /run: podman refuses one longer
# than 50 characters, which a clone's build/ directory may well be.
recipe_kube_net() {
	local br
	recipe_podman_conf &&
		podman --root "$RECIPE_DIR/prep" --runroot /run/sbx-recipes-prep --storage-driver vfs --log-level error network create --internal --disable-dns \
			--subnet 198.18.9.0/24 --ip-range 198.18.9.128/25 sbx-recipes >/dev/null &&
		br=$(podman --root "$RECIPE_DIR/prep" --runroot /run/sbx-recipes-prep --storage-driver vfs --log-level error network inspect --format '{{.NetworkInterface}}' sbx-recipes) &&
		printf '[network]\ndefault_network = "sbx-recipes"\n' >>/etc/containers/containers.conf &&
		ip link add "$br" type bridge && ip addr add 198.18.9.1/24 dev "$br" &&
		ip addr add 198.18.9.2/24 dev "$br" && ip link set "$br" up &&
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=pypi.org \
			-keyout "$RECIPE_DIR/mirror.key" -out "$RECIPE_DIR/mirror.crt" 2>/dev/null || return 1
	openssl s_server -quiet -www -cipher DEFAULT:@SECLEVEL=0 -accept 198.18.9.2:443 \
		-cert "$RECIPE_DIR/mirror.crt" -key "$RECIPE_DIR/mirror.key" </dev/null >/dev/null 2>&1 &
	wait_for "ss -Hltn 'sport = :443' | grep -q 198.18.9.2"
}

@test "the README's pod recipe as written: setup, the image, a site's ConfigMap, kube play, the command's output and exit code" {
	recipes_setup
	recipe_prepare() { recipe_kube_net; }
	export -f ctr_conf recipe_podman_conf recipe_kube_net wait_for
	recipes_run_kind env=kube || { rm -rf "$RECIPE_DIR"; false; }
	rm -rf "$RECIPE_DIR"
}

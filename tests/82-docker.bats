#!/usr/bin/env bats
# sbx as a docker container's entrypoint, for real: Debian's docker.io
# (deps/packages.sh test), rootful, its dockerd started here with roots,
# socket and cgroup parent of its own (no systemd, no network of its own).
# The README's docker recipe runs as written; its docker lines, read from
# it, build the image and give the flags the other tests vary: docker's
# default profile, each flag missing, a profile of the calls
# docs/containers.md names, root as the container's user, the container and dockerd killed
# mid-run. If dockerd cannot run here, the
# suite fails with its log: nothing is skipped.

load helpers
load recipes

# Debian's client and daemon by path: another docker earlier on PATH (one
# without a daemon) must not be the one tested.
DOCKER=/usr/bin/docker
DOCKERD=/usr/sbin/dockerd

# The client, on this suite's daemon only.
docker() {
	DOCKER_CONFIG="$D_DIR/client" "$DOCKER" -H "unix://$D_DIR/docker.sock" "$@"
}

# Whether a pid is a living process (a zombie is not: dockerd's orphans
# wait for their reaper after they end).
alive() {
	local s
	s=$(sed -n 's/^State:\t\(.\).*/\1/p' "/proc/$1/status" 2>/dev/null)
	[ -n "$s" ] && [ "$s" != Z ]
}

# dockerd with state of its own: no bridge, no iptables, no forwarding, the
# storage driver decided once in setup_file, its containers' cgroups under a
# parent of this run's own. dockerd's trust key goes to its data root (it
# would write /etc/docker/key.json), only through the configuration file.
d_start() {
	printf '{"deprecated-key-path": "%s/key.json"}\n' "$D_DIR" >"$D_DIR/daemon.json"
	"$DOCKERD" --data-root "$D_DIR/data" --exec-root "$D_DIR/exec" --pidfile "$D_DIR/dockerd.pid" \
		-H "unix://$D_DIR/docker.sock" --config-file "$D_DIR/daemon.json" \
		--storage-driver "$D_DRIVER" --bridge=none --iptables=false --ip6tables=false \
		--ip-masq=false --ip-forward=false --cgroup-parent "/$D_CG" \
		</dev/null >>"$D_DIR/dockerd.log" 2>&1 3>&- &
	D_PID=$!
	# Not a job of the shell that started it: its end is d_stop's to tell,
	# not the shell's ("Killed").
	disown "$D_PID"
}

# dockerd says nothing when its API is up: ask it, at most 600 times 0.1 s
# apart, and fail at once with its log if it ended.
d_wait() {
	local i
	for ((i = 0; i < 600; i++)); do
		docker version >/dev/null 2>&1 && return 0
		if ! alive "$D_PID"; then
			tail -n 20 "$D_DIR/dockerd.log" >&2
			echo "dockerd exited before its API answered (log above: $D_DIR/dockerd.log)" >&2
			return 1
		fi
		sleep 0.1
	done
	tail -n 20 "$D_DIR/dockerd.log" >&2
	echo "dockerd's API did not answer on $D_DIR/docker.sock after 60 s" >&2
	return 1
}

# The daemon in the pidfile stopped (TERM, then KILL), and its child
# containerd with it.
d_stop() {
	local pid i
	pid=$(cat "$D_DIR/dockerd.pid" 2>/dev/null) || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 300; i++)); do
		alive "$pid" || break
		sleep 0.1
	done
	alive "$pid" && kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null || true
}

# The `docker build` or `docker run` line of the README's docker recipe
# (tests/recipes.bash extracts it), continuation lines joined; it must be
# there exactly once.
readme_docker() {
	awk -v w="$1" '
		/^docker / && $2 == w { take = 1; n++; out = "" }
		take {
			s = $0
			sub(/^ +/, "", s)
			c = sub(/ *\\$/, "", s)
			out = out (out == "" ? "" : " ") s
			if (!c) { take = 0; print out }
		}
		END { exit n == 1 ? 0 : 1 }' "$RECIPE_DIR/$(recipes_of "$RECIPE_DIR" env=docker)".sh
}

setup_file() {
	local p
	[ -x "$DOCKERD" ] && [ -x "$DOCKER" ] ||
		{ echo "$DOCKERD or $DOCKER is missing: install docker.io (deps/packages.sh test)" >&2; return 1; }
	D_DIR=$(sbx_scratch)
	D_CG="sbx-docker-$$"
	# overlay2 where the kernel has overlayfs, vfs (a full copy per layer)
	# where it has not: decided here once; the first test checks dockerd
	# took it.
	if grep -qw overlay /proc/filesystems; then D_DRIVER=overlay2; else D_DRIVER=vfs; fi
	export D_DIR D_CG D_DRIVER
	# What dockerd and containerd make outside their roots whatever their
	# flags (the plugins' directory, the shims' sockets): removed at the
	# end when this suite made them.
	for p in /run/docker /run/containerd; do
		[ -e "$p" ] || echo "$p"
	done >"$D_DIR/made"
	# A uid-1000 deny-write record of the host's before any of this runs.
	[ -e /tmp/sbx-ns-1000 ] && touch "$D_DIR/had-tmp-1000"
	mkdir -m 0700 "$D_DIR/client"
	d_start
	d_wait
	# The image by the README's lines; the context where the README says
	# /tmp/sbx-image is this run's own.
	"$SBX_ROOT/contrib/container/context.sh" "$D_DIR/ctx" "$SBX_BIN"
	recipes_setup
	D_BUILD=$(readme_docker build)
	D_RUN=$(readme_docker run)
	# The same without its two security options: docker's defaults.
	DEFAULT_RUN=${D_RUN/ --security-opt systempaths=unconfined --security-opt seccomp=unconfined / }
	export D_BUILD D_RUN DEFAULT_RUN
	(cd "$SBX_ROOT" && eval "${D_BUILD//\/tmp\/sbx-image/$D_DIR/ctx}") >"$D_DIR/build.log" 2>&1 ||
		{ cat "$D_DIR/build.log" >&2; return 1; }
}

teardown_file() {
	local pid m c p i
	[ -n "${D_DIR:-}" ] || return 0
	docker ps -a -q | xargs -r "$DOCKER" -H "unix://$D_DIR/docker.sock" rm -f >/dev/null 2>&1 || true
	d_stop
	# Shims outlive a killed dockerd: this daemon's are those with its
	# containerd's socket in their command line.
	for pid in $(pgrep -f -- "-address $D_DIR/exec/containerd/containerd.sock"); do
		kill -KILL "$pid" 2>/dev/null || true
	done
	# What a killed shim left running in this daemon's containers.
	for ((i = 0; i < 100; i++)); do
		pid=$(cat /sys/fs/cgroup/pids/"$D_CG"/*/cgroup.procs 2>/dev/null)
		[ -n "$pid" ] || break
		kill -KILL $pid 2>/dev/null || true
		sleep 0.1
	done
	# dockerd binds its data root on itself; the containers' mounts go with
	# their shims.
	findmnt -rn -o TARGET | grep -F "$D_DIR" | sort -r | while read -r m; do
		umount "$m" || umount -l "$m"
	done
	for c in /sys/fs/cgroup/*/"$D_CG"; do
		[ -d "$c" ] || continue
		find "$c" -depth -type d -exec rmdir {} + 2>/dev/null || true
	done
	while read -r p; do
		rm -rf "$p"
	done <"$D_DIR/made"
	rm -rf "$D_DIR"
	[ -z "${RECIPE_DIR:-}" ] || rm -rf "$RECIPE_DIR"
}

# The README's run line as written (the image is this daemon's "sbx").
readme_run() {
	eval "$D_RUN"
}

# The README's flags as words, between `docker run` and the image (of
# another run line if given).
readme_flags() {
	local -a w
	local i
	eval "w=(${1:-$D_RUN})"
	[ "${w[0]} ${w[1]}" = "docker run" ] || return 1
	for ((i = 2; i < ${#w[@]}; i++)); do
		[ "${w[i]}" = sbx ] && break
		printf '%s\n' "${w[i]}"
	done
}

# The same without the workspace's tmpfs, for a workspace of the host's.
flags_host_ws() { # RUNLINE
	local -a f g
	local i
	mapfile -t f < <(readme_flags "$1")
	for ((i = 0; i < ${#f[@]}; i++)); do
		if [ "${f[i]} ${f[i + 1]:-}" = "--mount type=tmpfs,destination=/ws" ]; then
			i=$((i + 1))
			continue
		fi
		g+=("${f[i]}")
	done
	[ "${#g[@]}" -eq $((${#f[@]} - 2)) ] || return 1
	printf '%s\n' "${g[@]}"
}

PROC_FIX='in a container, unmask /proc: podman --security-opt unmask=/proc/*, docker --security-opt systempaths=unconfined, Kubernetes securityContext procMount: Unmasked (with hostUsers: false; podman kube play before 4.7 ignores procMount: run it with contrib/kubernetes/runc-procmount, installed by contrib/kubernetes/setup-debian12.sh, or a newer podman)'
USERNS_FIX='in a container, allow new user namespaces: podman allows them by default; docker --security-opt seccomp=unconfined (its default profile refuses clone with namespace flags, unshare and the mount calls without CAP_SYS_ADMIN); Kubernetes securityContext seccompProfile type: Unconfined or a Localhost profile allowing clone with namespace flags, unshare and the mount calls'

@test "dockerd runs here with roots of its own, the storage driver decided once, no bridge" {
	run -0 docker version --format '{{.Server.Version}} {{.Client.Version}}'
	assert_output --regexp '^20\.10\.[0-9]+\+dfsg[0-9]+ 20\.10\.[0-9]+\+dfsg[0-9]+$'
	run -0 docker info --format '{{.Driver}} {{.DockerRootDir}}'
	assert_output "$D_DRIVER $D_DIR/data"
	run -0 docker network ls --format '{{.Name}}'
	refute_line bridge
	# Nothing of it in the system's places.
	assert_not_exist /etc/docker/key.json
	assert_not_exist /var/lib/docker
	assert_not_exist /var/run/docker.sock
}

@test "the README's docker build: the image from contrib/ without a registry, sbx-ns its entrypoint" {
	assert_equal "$D_BUILD" "docker build -q -f contrib/container/Containerfile -t sbx /tmp/sbx-image >/dev/null"
	run -0 docker image inspect --format '{{json .Config.Entrypoint}} {{.Config.User}} {{len .RootFS.Layers}}' sbx
	assert_output '["/usr/local/bin/sbx-ns"] 1000:1000 1'
	run -0 docker image ls --format '{{.Repository}}:{{.Tag}}'
	assert_output "sbx:latest"
}

@test "the README's docker recipe as written: the image from contrib/, the sandboxed command's output" {
	recipe_prepare() {
		touch "$RECIPE_DIR/docker.sock" && mount --bind "$D_DIR/docker.sock" "$RECIPE_DIR/docker.sock"
	}
	RECIPE_VARS=("DOCKER_HOST=unix://$RECIPE_DIR/docker.sock")
	recipes_run_kind env=docker
}

@test "the README's docker run line: the sandboxed command's output, exit 0" {
	run -0 --separate-stderr readme_run
	assert_equal "$stderr" ""
	assert_output "hello"
	# The flags the README gives are the ones sbx-ns's refusals name.
	[[ "$D_RUN" == *" --security-opt systempaths=unconfined "* ]]
	[[ "$D_RUN" == *" --security-opt seccomp=unconfined "* ]]
	[[ "$PROC_FIX" == *"docker --security-opt systempaths=unconfined"* ]]
	[[ "$USERNS_FIX" == *"docker --security-opt seccomp=unconfined"* ]]
}

@test "the README's flags: the command's exit code and identity come through, writes stay in the workspace" {
	local -a f
	mapfile -t f < <(readme_flags)
	run -7 --separate-stderr docker run "${f[@]}" sbx --workspace /ws -- /bin/sh -c 'exit 7'
	assert_equal "$stderr" ""
	run -0 --separate-stderr docker run "${f[@]}" sbx --workspace /ws -- /bin/sh -c \
		'id; touch /ws/ok && echo ws ok; touch /usr/local/bin/x || echo refused'
	assert_equal "$stderr" "touch: /usr/local/bin/x: Read-only file system"
	assert_output "uid=1000(sbx) gid=1000(sbx) groups=1000(sbx)
ws ok
refused"
}

@test "docker's default profile (neither flag): 106, naming both flags at once" {
	[ "$DEFAULT_RUN" != "$D_RUN" ]
	run -106 --separate-stderr eval "$DEFAULT_RUN"
	assert_output ""
	assert_equal "$stderr" "sbx-ns: fatal: unable to create namespaces: Operation not permitted (docker: /.dockerenv); $USERNS_FIX; and, /proc/bus being masked, $PROC_FIX"
	# The same on a workspace of the host's: nothing half set up is left
	# in it (the deny-write placeholders are gone again).
	local -a g
	mapfile -t g < <(flags_host_ws "$DEFAULT_RUN")
	mkdir -p "$D_DIR/ws"
	chown 1000:1000 "$D_DIR/ws"
	run -106 --separate-stderr docker run "${g[@]}" -v "$D_DIR/ws:/ws" sbx --workspace /ws -- /bin/true
	assert_equal "$stderr" "sbx-ns: fatal: unable to create namespaces: Operation not permitted (docker: /.dockerenv); $USERNS_FIX; and, /proc/bus being masked, $PROC_FIX"
	run -0 ls -A "$D_DIR/ws"
	assert_output ""
	# With the README's security options the same workspace works.
	mapfile -t g < <(flags_host_ws "$D_RUN")
	run -0 --separate-stderr docker run "${g[@]}" -v "$D_DIR/ws:/ws" sbx --workspace /ws -- /bin/sh -c 'echo hello >greeting'
	run -0 ls -A "$D_DIR/ws"
	assert_output "greeting"
}

@test "sbx-check host in docker's default container names both flags; with the README's flags every step works" {
	local -a f
	mapfile -t f < <(readme_flags "$DEFAULT_RUN")
	run -106 --separate-stderr docker run "${f[@]}" --entrypoint /usr/local/bin/sbx-check sbx host
	assert_equal "$stderr" ""
	assert_line "container          ok             running in a container (docker: /.dockerenv): the fixes below are its settings"
	assert_line "userns             missing        unshare(CLONE_NEWUSER) or its uid/gid maps failed: Operation not permitted (for uid 1000, $(sed -n 's/^/user.max_user_namespaces=/p' /proc/sys/user/max_user_namespaces); docker: /.dockerenv); to fix: $USERNS_FIX"
	assert_line "proc               missing        not tried: userns failed first; it would fail too: /proc/bus is masked; to fix: $PROC_FIX"
	mapfile -t f < <(readme_flags)
	# 0, or 101 where hard limits are the runtime's (a cgroup v1 host).
	run --separate-stderr docker run "${f[@]}" --entrypoint /usr/local/bin/sbx-check sbx host
	assert_equal "$stderr" ""
	[ "$status" -eq 0 ] || { [ "$status" -eq 101 ] && assert_line "result: hard limits unavailable (exit 101)"; }
	for item in userns namespaces root-tmpfs proc pivot_root userns-limit seccomp landlock; do
		assert_line --regexp "^$item +ok "
	done
}

@test "without the seccomp option: 106 naming docker's seccomp flag; without systempaths: 106 naming that flag" {
	local run=${D_RUN/ --security-opt seccomp=unconfined / }
	[ "$run" != "$D_RUN" ]
	run -106 --separate-stderr eval "$run"
	assert_equal "$stderr" "sbx-ns: fatal: unable to create namespaces: Operation not permitted (docker: /.dockerenv); $USERNS_FIX"
	run=${D_RUN/ --security-opt systempaths=unconfined / }
	[ "$run" != "$D_RUN" ]
	run -106 --separate-stderr eval "$run"
	assert_equal "$stderr" "sbx-ns: fatal: unable to mount proc on /proc: Operation not permitted (docker: /.dockerenv); $PROC_FIX"
}

# The calls docs/containers.md's docker paragraph says a profile must allow.
readme_profile_calls() {
	awk '/^- \*\*docker\*\*/ { d = 1; next } d && /^- \*\*/ { d = 0 } d' "$SBX_ROOT/docs/containers.md" |
		tr '\n' ' ' | tr -s ' ' | grep -o 'a profile that allows [^)]*)' | head -n 1 | grep -o '`[a-z0-9_]*`' | tr -d '`'
}

# docker's own default profile, as this dockerd gives it to a container (its
# OCI spec), with CALLS allowed whatever their arguments, into OUT; the
# default itself into OUT.default.
profile_from_default() { # OUT CALLS...
	local out=$1 cid
	shift
	cid=$(docker run -d -i --network none --entrypoint /bin/cat sbx)
	python3 - "$D_DIR/exec/containerd/daemon/io.containerd.runtime.v2.task/moby/$cid/config.json" "$out" "$@" <<-'PY'
	import json, sys
	spec, out, calls = sys.argv[1], sys.argv[2], sys.argv[3:]
	prof = json.load(open(spec))["linux"]["seccomp"]
	json.dump(prof, open(out + ".default", "w"))
	rules = []
	for r in prof["syscalls"]:
	    if r.get("args"):
	        r["names"] = [n for n in r["names"] if n not in calls]
	    if r["names"]:
	        rules.append(r)
	rules.append({"names": calls, "action": "SCMP_ACT_ALLOW"})
	prof["syscalls"] = rules
	json.dump(prof, open(out, "w"))
	PY
	docker rm -f "$cid" >/dev/null
}

@test "a seccomp profile: docker's own default with the calls the README names works; without clone, 106" {
	local -a calls
	local run
	mapfile -t calls < <(readme_profile_calls)
	assert_equal "${calls[*]}" "clone unshare mount umount2 pivot_root open_tree move_mount mount_setattr"
	profile_from_default "$D_DIR/profile.json" "${calls[@]}"
	# The default it came from allows clone only without namespace flags
	# (CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET).
	run -0 python3 -c 'import json, sys; print([(r["action"], r["args"]) for r in json.load(open(sys.argv[1]))["syscalls"] if "clone" in r["names"]])' \
		"$D_DIR/profile.json.default"
	assert_output "[('SCMP_ACT_ALLOW', [{'index': 0, 'value': $((0x7e020000)), 'op': 'SCMP_CMP_MASKED_EQ'}])]"
	run=${D_RUN/ seccomp=unconfined / seccomp=$D_DIR/profile.json }
	[ "$run" != "$D_RUN" ]
	run -0 --separate-stderr eval "$run"
	assert_equal "$stderr" ""
	assert_output "hello"
	profile_from_default "$D_DIR/profile-noclone.json" "${calls[@]:1}"
	run=${D_RUN/ seccomp=unconfined / seccomp=$D_DIR/profile-noclone.json }
	run -106 --separate-stderr eval "$run"
	assert_equal "$stderr" "sbx-ns: fatal: unable to create namespaces: Operation not permitted (docker: /.dockerenv); $USERNS_FIX"
}

@test "the container's user: root is refused (usage, then the user to run as); other unprivileged users work" {
	local -a f
	mapfile -t f < <(readme_flags)
	run -100 --separate-stderr docker run "${f[@]}" --user 0:0 sbx --workspace /ws -- /bin/true
	assert_equal "$stderr" "sbx-ns: usage: running as root needs --uid and --gid (the command never runs as root)"
	# Root with --uid under --cap-drop=ALL cannot map another id: not a
	# user namespace problem, and the message says so.
	run -106 --separate-stderr docker run "${f[@]}" --user 0:0 sbx --uid 1000 --gid 1000 --workspace /ws -- /bin/true
	[[ "$stderr" =~ ^(sbx-ns: fatal: unable to write /proc/)[0-9]+(/uid_map: .*)$ ]]
	assert_equal "${BASH_REMATCH[1]}PID${BASH_REMATCH[2]}" "sbx-ns: fatal: unable to write /proc/PID/uid_map: Operation not permitted (root without CAP_SETUID and CAP_SETGID maps only its own id; docker: /.dockerenv); run sbx-ns as an unprivileged user (in a container: the image's USER, or --user with a uid other than 0), or as root with CAP_SETUID and CAP_SETGID"
	run -0 --separate-stderr docker run "${f[@]}" --user 65534:65534 sbx --workspace /ws -- /bin/sh -c 'echo hi >f && cat f; id'
	assert_output "hi
uid=65534(nobody) gid=65534(nogroup) groups=65534(nogroup)"
	run -0 --separate-stderr docker run "${f[@]}" --user 4321:4321 sbx --workspace /ws -- /bin/id
	assert_output "uid=4321 gid=4321 groups=4321"
}

# A container with the README's flags (but --rm: the test removes it)
# running a sandbox that says ready through a fifo of the host's.
kill_start() { # NAME
	local -a f
	mapfile -t f < <(readme_flags | grep -vx -- --rm)
	rm -rf "$D_DIR/sig"
	mkdir -m 0777 "$D_DIR/sig"
	mkfifo -m 0666 "$D_DIR/sig/ready"
	docker run -d --name "$1" "${f[@]}" -v "$D_DIR/sig:/sig" --entrypoint /bin/sh sbx -c \
		'exec sbx-ns --workspace /ws --ready-fd 4 -- /bin/sleep '"36$$"' 4>/sig/ready' >/dev/null
	read -r _ <"$D_DIR/sig/ready"
}

# What of a container shows on the host: its root (overlay2's merged
# directory, mounted in the host's mount namespace) and its network
# namespace's bind mount.
ctr_host_mounts() { # NAME
	docker inspect --format '{{if .GraphDriver.Data.MergedDir}}{{.GraphDriver.Data.MergedDir}} {{end}}{{.NetworkSettings.SandboxKey}}' "$1"
}

# Nothing of the container or of sbx left on the host: no process, shim,
# mount, cgroup, deny-write record of the container's user (uid 1000).
assert_nothing_left() { # CID MOUNTS...
	local cid=$1 m
	shift
	wait_for "! pgrep -f 'sleep 36$$' >/dev/null"
	wait_for "! pgrep -f -- '-id $cid ' >/dev/null"
	for m in "$@"; do
		run -1 grep -F " $m " /proc/self/mountinfo
	done
	run -0 find /sys/fs/cgroup -maxdepth 3 -name "$cid"
	assert_output ""
	run -0 find /run/sbx-ns -maxdepth 1 -user 1000
	assert_output ""
	[ -e "$D_DIR/had-tmp-1000" ] || assert_not_exist /tmp/sbx-ns-1000
	run -0 ls -A "$D_DIR/sig"
	assert_output "ready"
}

@test "docker kill mid-run: 137, and nothing of the container or of sbx is left on the host" {
	local cid m
	kill_start "kill-$$"
	cid=$(docker inspect --format '{{.Id}}' "kill-$$")
	read -r -a mounts < <(ctr_host_mounts "kill-$$")
	[ "${#mounts[@]}" -eq $([ "$D_DRIVER" = overlay2 ] && echo 2 || echo 1) ]
	for m in "${mounts[@]}"; do
		run -0 grep -F " $m " /proc/self/mountinfo
	done
	run -0 find /sys/fs/cgroup/pids -maxdepth 2 -name "$cid"
	assert_output "/sys/fs/cgroup/pids/$D_CG/$cid"
	run -0 pgrep -f "sleep 36$$"
	run -0 docker kill -s KILL "kill-$$"
	run -0 docker wait "kill-$$"
	assert_output 137
	run -0 docker rm "kill-$$"
	assert_nothing_left "$cid" "${mounts[@]}"
}

@test "dockerd killed mid-run: the sandbox runs on under its shim, the next dockerd ends it, nothing is left" {
	local cid pid cpid
	kill_start "dkill-$$"
	cid=$(docker inspect --format '{{.Id}}' "dkill-$$")
	read -r -a mounts < <(ctr_host_mounts "dkill-$$")
	pid=$(cat "$D_DIR/dockerd.pid")
	cpid=$(cat "$D_DIR/exec/containerd/containerd.pid")
	kill -KILL "$pid"
	# containerd goes with it (its parent-death signal).
	wait_for "! alive $pid && ! alive $cpid"
	run -1 docker ps
	# The container's processes do not depend on dockerd.
	run -0 pgrep -f "sleep 36$$"
	run -0 pgrep -f -- "-id $cid "
	# Both leave their pidfiles, and each trusts a pid that still exists:
	# dead ones are zombies until init reaps them (late on some hosts).
	# Gone, as an administrator would remove them after the crash.
	rm "$D_DIR/dockerd.pid" "$D_DIR/exec/containerd/containerd.pid"
	d_start
	d_wait
	run -0 docker wait "dkill-$$"
	assert_output 143
	run -0 docker rm "dkill-$$"
	assert_nothing_left "$cid" "${mounts[@]}"
}

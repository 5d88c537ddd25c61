#!/usr/bin/env bats
# sbx-check's messages: a user namespace count limit is named as one
# (user.max_user_namespaces, with its value), no sysctl this kernel lacks is
# suggested, and a passing proof counts what it did not prove. The limit is
# lowered only inside a user namespace the test makes, where it is that
# namespace's own (max_user_namespaces is per user namespace): the host's
# sysctls are never changed.

bats_require_minimum_version 1.5.0
load helpers

setup() {
	scratch=$(sbx_scratch)
}

teardown() {
	rm -rf "$scratch"
}

# In a container the fix names the container's namespace, elsewhere the sysctl.
ctr() {
	if [ -e /run/.containerenv ]; then
		echo "podman: /run/.containerenv"
	elif [ -e /.dockerenv ]; then
		echo "docker: /.dockerenv"
	fi
}

count_limit_line() {
	local max=$1 where fix
	where=$(ctr)
	if [ -n "$where" ]; then
		fix="raise the user namespace count limit user.max_user_namespaces ($max now): in the container's user namespace (Kubernetes hostUsers: false gives it one of its own) or on the host"
		where="; $where"
	else
		fix="raise the user namespace count limit: sysctl -w user.max_user_namespaces=15000 ($max now)"
	fi
	echo "userns             missing        unshare(CLONE_NEWUSER) or its uid/gid maps failed: No space left on device, a user namespace count limit (user.max_user_namespaces) is reached (for uid 0, user.max_user_namespaces=$max$(clone_value)$where); to fix: $fix"
}

# The sysctl of Debian's older kernels, shown only where this kernel has it.
clone_value() {
	[ -e /proc/sys/kernel/unprivileged_userns_clone ] &&
		echo ", kernel.unprivileged_userns_clone=$(cat /proc/sys/kernel/unprivileged_userns_clone)"
	return 0
}

@test "in a chroot: sbx-check and sbx-ns name the chroot as what refuses the user namespace, not a sysctl or a container" {
	local fix="this process is chrooted, and the kernel refuses a chrooted process a new user namespace: run it outside chroot(2) (a container's root, made with pivot_root, is not refused)"
	# A root of the static tools, a proc and a workspace, no more.
	mkdir -p "$scratch/r/bin" "$scratch/r/proc" "$scratch/r/tmp" "$scratch/r/ws"
	cp "$SBX_BIN/sbx-check" "$SBX_BIN/sbx-ns" "$scratch/r/bin/"
	# A dynamic build's libraries and loader too (the static tools need none).
	local lib t
	for lib in $(for t in sbx-check sbx-ns; do ldd "$SBX_BIN/$t" 2>/dev/null || :; done | grep -o '/[^ ]*' | sort -u); do
		mkdir -p "$scratch/r${lib%/*}"
		cp -L "$lib" "$scratch/r$lib"
	done
	chown 1:1 "$scratch/r/ws"
	run -106 --separate-stderr unshare -m sh -c 'mount -t proc proc "$0/proc" && exec chroot "$0" /bin/sbx-check host' \
		"$scratch/r"
	assert_line --regexp "^userns +missing +unshare\(CLONE_NEWUSER\) or its uid/gid maps failed: Operation not permitted \(.*\); to fix: $(sed 's/[][().*^$]/\\&/g' <<<"$fix")\$"
	run -106 --separate-stderr unshare -m sh -c 'mount -t proc proc "$0/proc" && exec chroot "$0" /bin/sbx-ns --uid 1 --gid 1 --no-host-ca --workspace /ws -- /bin/sbx-ns --version' \
		"$scratch/r"
	assert_output ""
	assert_equal "$stderr" "sbx-ns: fatal: unable to create namespaces: Operation not permitted; $fix"
}

@test "host: ENOSPC from a user namespace limit of 0 is named as the count limit, with its value" {
	run -106 --separate-stderr unshare -Ur sh -c 'echo 0 >/proc/sys/user/max_user_namespaces && exec "$@"' sh sbx-check host
	assert_equal "$stderr" ""
	assert_line "$(count_limit_line 0)"
	assert_line "namespaces         missing        not tried: userns failed first"
	assert_line "result: isolation unavailable (exit 106)"
	if [ ! -e /proc/sys/kernel/unprivileged_userns_clone ]; then
		refute_output --partial unprivileged_userns_clone
	fi
	# The host's own limit is untouched.
	run -0 cat /proc/sys/user/max_user_namespaces
	refute_output 0
}

@test "host: ENOSPC with the limit reached by a namespace held open is the count limit too" {
	mkfifo "$scratch/hold" "$scratch/up"
	run -106 --separate-stderr unshare -Ur bash -c '
		echo 1 >/proc/sys/user/max_user_namespaces || exit 1
		# The holder says "up" from inside its namespace and waits for
		# fd 5 to close; if it cannot make one, the line is "failed".
		exec 5<>"$1/hold"
		{ unshare -U sh -c "echo up; read x" <"$1/hold" || echo failed; } 5>&- >"$1/up" &
		holder=$!
		read -r up <"$1/up"
		[ "$up" = up ] || exit 1
		sbx-check host
		rc=$?
		exec 5>&-
		wait "$holder"
		exit "$rc"' bash "$scratch"
	assert_equal "$stderr" ""
	assert_line "$(count_limit_line 1)"
	assert_line "result: isolation unavailable (exit 106)"
}

@test "host: ENOSPC from the other namespaces is named as their count limit, the one at 0" {
	local k where fix
	for k in mnt pid net; do
		run -106 --separate-stderr unshare -Ur sh -c "echo 0 >/proc/sys/user/max_${k}_namespaces && exec sbx-check host"
		assert_equal "$stderr" ""
		assert_line --regexp '^userns +ok +user namespaces work for uid 0, '
		where=$(ctr)
		if [ -n "$where" ]; then
			fix="raise the namespace count limit user.max_${k}_namespaces: in the container's user namespace (Kubernetes hostUsers: false gives it one of its own) or on the host"
			where="; $where"
		else
			fix="raise the namespace count limit: sysctl -w user.max_${k}_namespaces=15000"
		fi
		assert_line "namespaces         missing        unshare of the mount, pid, ipc, uts, network and cgroup namespaces failed: No space left on device, a namespace count limit is reached (user.max_${k}_namespaces=0$where); to fix: $fix"
		assert_line "result: isolation unavailable (exit 106)"
	done
}

@test "proof: a passing proof counts what it proved and names what it did not" {
	run -0 --separate-stderr sbx-check proof
	assert_equal "$stderr" ""
	assert_line "result: 11 proven, 3 not proven (pids-limit, memory-limit, quota-limit) (exit 0)"
	refute_line --partial "all checks passed"
	run -0 --separate-stderr sbx-check proof --json
	run -0 python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["result"], d["code"])' <<<"$output"
	assert_output "11 proven, 3 not proven (pids-limit, memory-limit, quota-limit) 0"
}

@test "proof --tier landlock: the lines it cannot keep in the tier are counted as not proven" {
	run -0 --separate-stderr sbx-check proof --tier landlock
	assert_equal "$stderr" ""
	assert_line --regexp '^env-write +unsupported +not kept in the landlock tier'
	assert_line "result: 9 proven, 2 not proven (env-write, git-hook-write) (exit 0)"
}

@test "proof: a failed proof keeps its verdict and exit code (107)" {
	printf '#!/bin/sh\nwhile [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done\nshift\nexec "$@"\n' >"$scratch/open-ns"
	chmod 0755 "$scratch/open-ns"
	run -107 --separate-stderr sbx-check proof --ns "$scratch/open-ns"
	assert_equal "$stderr" ""
	assert_line "result: a proof failed (exit 107)"
}

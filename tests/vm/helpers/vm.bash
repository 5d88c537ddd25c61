# Loaded by every VM test: `load helpers/vm`. Runs inside the VM only.
# ,"version":"X.Y.Z": the field after "event" in a run's first status line
# (as tests/helpers.bash).
read -r _ SBX_VER _ < <("$SBX_BIN/sbx-ns" --version)
SBX_VER=',"version":"'"$SBX_VER"'"'
bats_require_minimum_version 1.5.0
# bats-support, bats-assert and bats-file, sourced file by file as
# tests/helpers.bash does, without a dirname process per file (under TCG the
# difference is lost in the noise of a test; on the host it is measurable).
for _lib in bats-support bats-assert bats-file; do
	for _f in "$BATS_LIB_PATH/$_lib"/src/*.bash; do
		. "$_f"
	done
done
unset _lib _f

# vm_cgroup NAME: create a child of the role's subtree; prints its path.
vm_cgroup() {
	local cg=$SBX_VM_CGROUP/$1
	mkdir "$cg" && echo "$cg"
}

# vm_in_cgroup CG CMD...: run CMD as the only process of cgroup CG.
vm_in_cgroup() {
	local cg=$1
	shift
	bash -c 'echo 0 >"$1/cgroup.procs" && shift && exec "$@"' vm_in_cgroup "$cg" "$@"
}

# vm_cgroup_remove CG: kill whatever is left in CG and remove it (teardown).
vm_cgroup_remove() {
	[ -d "$1" ] || return 0
	if [ -e "$1/cgroup.kill" ]; then
		echo 1 2>/dev/null >"$1/cgroup.kill"
	else
		# Before 5.14 (no cgroup.kill): freeze, kill each process, thaw.
		echo 1 2>/dev/null >"$1/cgroup.freeze"
		local p
		for p in $(cat "$1/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
		echo 0 2>/dev/null >"$1/cgroup.freeze"
	fi
	local i
	for i in $(seq 600); do rmdir "$1" 2>/dev/null && return 0; sleep 0.1; done
	rmdir "$1"
}

# vm_quota_dir FS: an empty directory on /mnt/FS (xfs or ext4) under a project quota of
# 8 MiB (8388608 bytes) and 16 inodes, the directory itself counting as one of each.
# The root run makes a fresh one with quota-set; the user run gets the one init prepared
# (an unprivileged user cannot set project ids or limits) and must empty it afterwards.
vm_quota_dir() {
	local fs=$1
	if [ "$SBX_VM_ROLE" = root ]; then
		local d=/mnt/$fs/root-quota-$BATS_TEST_NUMBER
		mkdir "$d" && quota-set "$d" $((3000 + BATS_TEST_NUMBER)) 8388608 16 && echo "$d"
	else
		echo "/mnt/$fs/sbxuser-quota"
	fi
}

# vm_quota_dir_remove DIR: undo vm_quota_dir (teardown).
vm_quota_dir_remove() {
	[ -n "$1" ] && [ -d "$1" ] || return 0
	if [ "$SBX_VM_ROLE" = root ]; then
		rm -rf "$1"
	else
		find "$1" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
	fi
}

# vm_memory_peak: true when this kernel has memory.peak (5.19+); sbx-cgroup reports
# "memory_peak":null without it.
vm_memory_peak() {
	[ -e "$SBX_VM_CGROUP/runner/memory.peak" ]
}

# The result line a passing sbx-check proof must end with, from its item
# lines: the ok ones counted, the others counted and named in order.
proof_verdict() {
	local l ok=0 n=0 names=
	for l in "${lines[@]}"; do
		[[ $l == result:* ]] && continue
		if [[ $l =~ ^[^\ ]+\ +ok\  ]]; then
			ok=$((ok + 1))
		else
			n=$((n + 1))
			names+="${names:+, }${l%% *}"
		fi
	done
	if [ "$n" = 0 ]; then
		echo "result: all $ok proven (exit 0)"
	else
		echo "result: $ok proven, $n not proven ($names) (exit 0)"
	fi
}

# Every item line of the last run is ok, but the exact lines given after the verdict $1,
# and its last line is that verdict; prints every other line that is not ok.
every_line_ok() {
	local l bad=() verdict=$1
	shift
	for l in "${lines[@]:0:${#lines[@]}-1}"; do
		[[ $l =~ ^[a-z0-9_-]+\ +ok\ + ]] && continue
		printf '%s\n' "$@" | grep -qxF -- "$l" || bad+=("$l")
	done
	if [ ${#bad[@]} -gt 0 ]; then
		printf 'not ok: %s\n' "${bad[@]}"
		return 1
	fi
	assert_equal "${lines[-1]}" "$verdict"
	for l in "$@"; do assert_line "$l"; done
}

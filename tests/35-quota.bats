#!/usr/bin/env bats
# sbx-quota on the host: its grammar, and refusal where the kernel cannot enforce a project
# quota (this host's XFS is built without quota support and its ext4 has none). The tree
# check itself runs here through quota-walk, on a loop-mounted XFS image: the host kernel
# stores project ids and PROJINHERIT even though it does not enforce them. Real quotas are
# tested in tests/vm/35-sbx-quota.bats.

bats_require_minimum_version 1.5.0
load helpers
load xfs-loop

Q=sbx-quota

setup_file() {
	xfs_loop_up quota-host
}

teardown_file() {
	xfs_loop_down
}

setup() {
	base=$(cat "$BATS_FILE_TMPDIR/dir")
	xfs=$base/mnt
	ws=$xfs/ws$BATS_TEST_NUMBER
	mkdir "$ws"
	qa "$ws" 42 inherit
}

teardown() {
	local m
	for m in "${mounts[@]}"; do umount "$m"; done
	rm -rf "$ws" "${extra[@]}"
}
mounts=()
extra=()

# --- grammar ------------------------------------------------------------------------------

@test "sbx-quota without a subcommand is a usage error" {
	run -100 --separate-stderr $Q
	assert_equal "$stderr" "sbx-quota: usage: missing subcommand (verify, prepare or report)"
	run -100 --separate-stderr $Q frob
	assert_equal "$stderr" "sbx-quota: usage: unknown subcommand 'frob' (verify, prepare or report)"
	run -100 --separate-stderr $Q --no-such-option verify
	assert_equal "$stderr" "sbx-quota: usage: unknown option --no-such-option"
}

@test "--help prints the three usage lines and the options on stdout, before or after the subcommand" {
	run -0 --separate-stderr $Q --help
	assert_equal "${lines[0]}" "usage: sbx-quota verify --workspace DIR [OPTION]... [--] [PROG [ARG]...]"
	assert_equal "${lines[1]}" "       sbx-quota prepare --workspace DIR --project ID --disk SIZE [OPTION]..."
	assert_equal "${lines[2]}" "       sbx-quota report --workspace DIR [--json]"
	assert_line "  --disk SIZE            the most the quota may allow; K, M, G or T"
	assert_line "  --version              print the version and exit (as the only option)"
	assert_equal "$stderr" ""
	local all=$output
	run -0 $Q report --help
	assert_equal "$output" "$all"
	run -0 $Q verify --help
	assert_equal "$output" "$all"
}

@test "verify needs --workspace and --disk" {
	run -100 --separate-stderr $Q verify --disk 8M
	assert_equal "$stderr" "sbx-quota: usage: missing --workspace"
	run -100 --separate-stderr $Q verify --workspace /var/tmp
	assert_equal "$stderr" "sbx-quota: usage: missing --disk"
}

@test "--workspace refuses an empty, relative, symlinked or non-directory path and a repeat" {
	run -100 --separate-stderr $Q verify --workspace "" --disk 8M
	assert_equal "$stderr" "sbx-quota: usage: --workspace: invalid path '': empty"
	run -100 --separate-stderr $Q verify --workspace ws --disk 8M
	assert_equal "$stderr" "sbx-quota: usage: --workspace: invalid path 'ws': not absolute"
	ln -s "$ws" "$xfs/link$BATS_TEST_NUMBER"
	extra+=("$xfs/link$BATS_TEST_NUMBER")
	run -100 --separate-stderr $Q verify --workspace "$xfs/link$BATS_TEST_NUMBER" --disk 8M
	assert_equal "$stderr" "sbx-quota: usage: --workspace: invalid path '$xfs/link$BATS_TEST_NUMBER': a symbolic link"
	run -100 --separate-stderr $Q verify --workspace /etc/passwd --disk 8M
	assert_equal "$stderr" "sbx-quota: usage: --workspace: invalid path '/etc/passwd': not a directory"
	run -100 --separate-stderr $Q verify --workspace /var/tmp --workspace /var/tmp --disk 8M
	assert_equal "$stderr" "sbx-quota: usage: --workspace given twice"
	run -111 --separate-stderr $Q verify --workspace /nonexistent-sbx --disk 8M
	assert_equal "$stderr" "sbx-quota: fatal: unable to open workspace /nonexistent-sbx: No such file or directory"
}

@test "--disk refuses empty, zero, negative, infinite, overflowing, garbage, tiny and repeated values" {
	local v why
	while IFS='|' read -r v why; do
		run -100 --separate-stderr $Q verify --workspace /var/tmp --disk "$v"
		assert_equal "$stderr" "sbx-quota: usage: --disk: invalid size '$v': $why"
	done <<-'EOF'
		|empty
		0|zero not allowed
		-1|negative
		inf|not a number
		99999999999999999999999|overflow
		8Mx|trailing garbage
		4095|below 4096 bytes
	EOF
	run -100 --separate-stderr $Q verify --workspace /var/tmp --disk 8M --disk 8M
	assert_equal "$stderr" "sbx-quota: usage: --disk given twice"
}

@test "--inodes and --max-file refuse bad numbers" {
	local v why
	while IFS='|' read -r v why; do
		run -100 --separate-stderr $Q verify --workspace /var/tmp --disk 8M --inodes "$v"
		assert_equal "$stderr" "sbx-quota: usage: --inodes: invalid number '$v': $why"
	done <<-'EOF'
		|empty
		0|zero not allowed
		-5|negative
		1x|trailing garbage
		99999999999999999999|overflow
	EOF
	run -100 --separate-stderr $Q verify --workspace /var/tmp --disk 8M --max-file 0
	assert_equal "$stderr" "sbx-quota: usage: --max-file: invalid size '0': zero not allowed"
	run -100 --separate-stderr $Q verify --workspace /var/tmp --disk 8M --max-file 1Q
	assert_equal "$stderr" "sbx-quota: usage: --max-file: invalid size '1Q': trailing garbage"
}

@test "--pass-fd refuses stdio, garbage and an fd that is already open; --status-fd must be open" {
	local v why
	while IFS='|' read -r v why; do
		run -100 --separate-stderr $Q verify --workspace /var/tmp --disk 8M --pass-fd "$v"
		assert_equal "$stderr" "sbx-quota: usage: --pass-fd: invalid fd '$v': $why"
	done <<-'EOF'
		|empty
		0|0, 1 and 2 are stdio
		2|0, 1 and 2 are stdio
		-1|negative
		x|not a number
		1048577|too large
	EOF
	run -100 --separate-stderr $Q verify --workspace /var/tmp --disk 8M --status-fd 9 --pass-fd 9 9>/dev/null
	assert_equal "$stderr" "sbx-quota: usage: --pass-fd: invalid fd '9': already open"
	run -100 --separate-stderr $Q verify --workspace /var/tmp --disk 8M --status-fd 77
	assert_equal "$stderr" "sbx-quota: usage: --status-fd: invalid fd '77': not open; open it for the tool (in the shell: 77<FILE or 77>FILE, or a previous tool's --pass-fd 77)"
	run -100 --separate-stderr $Q verify --workspace /var/tmp --disk 8M --status-fd 1
	assert_equal "$stderr" "sbx-quota: usage: --status-fd: invalid fd '1': 0, 1 and 2 are stdio"
}

@test "prepare needs a project id in range and no more inodes than --disk / 4096" {
	run -100 --separate-stderr $Q prepare --workspace /var/tmp --disk 8M
	assert_equal "$stderr" "sbx-quota: usage: missing --project"
	run -100 --separate-stderr $Q prepare --workspace /var/tmp --disk 8M --project 0
	assert_equal "$stderr" "sbx-quota: usage: --project: invalid number '0': zero not allowed"
	run -100 --separate-stderr $Q prepare --workspace /var/tmp --disk 8M --project 4294967295
	assert_equal "$stderr" "sbx-quota: usage: --project: invalid number '4294967295': too large"
	run -100 --separate-stderr $Q prepare --workspace /var/tmp --disk 8M --project 1 --inodes 2049
	assert_equal "$stderr" "sbx-quota: usage: --inodes: 2049 is more than --disk / 4096 = 2048"
	run -100 --separate-stderr $Q prepare --workspace /var/tmp --disk 8M --project 1 extra
	assert_equal "$stderr" "sbx-quota: usage: unexpected argument 'extra'"
	run -100 --separate-stderr $Q prepare --workspace /var/tmp --disk 8M --project 1 --status-fd 5
	assert_equal "$stderr" "sbx-quota: usage: unknown option --status-fd"
}

@test "report takes --workspace and --json once and no operand" {
	run -100 --separate-stderr $Q report
	assert_equal "$stderr" "sbx-quota: usage: missing --workspace"
	run -100 --separate-stderr $Q report --workspace /var/tmp --json --json
	assert_equal "$stderr" "sbx-quota: usage: --json given twice"
	run -100 --separate-stderr $Q report --workspace /var/tmp --json=1
	assert_equal "$stderr" "sbx-quota: usage: --json takes no value"
	run -100 --separate-stderr $Q report --workspace /var/tmp x
	assert_equal "$stderr" "sbx-quota: usage: unexpected argument 'x'"
}

# --- refusal where the kernel cannot enforce ------------------------------------------------

@test "verify refuses a tmpfs workspace as unsupported and does not run the program" {
	local d
	d=$(mktemp -d /dev/shm/sbx-quota.XXXXXX)
	extra+=("$d")
	run -101 --separate-stderr $Q verify --workspace "$d" --disk 8M -- touch "$d/ran"
	assert_equal "$stderr" "sbx-quota: fatal: hard limits unsupported: $d is on tmpfs, not XFS or ext4"
	assert_file_not_exist "$d/ran"
}

@test "verify refuses the host's ext4, which has no quota support, as root and as a user" {
	local d
	d=$(sbx_scratch)
	extra+=("$d")
	run -101 --separate-stderr $Q verify --workspace "$d" --disk 8M -- touch "$d/ran"
	assert_equal "$stderr" "sbx-quota: fatal: hard limits unsupported: $d (ext4): the kernel offers no quota control for it: Function not implemented"
	assert_file_not_exist "$d/ran"
	sbx_test_user
	run -101 --separate-stderr as_user sbx-quota verify --workspace "$d" --disk 8M
	assert_equal "$stderr" "sbx-quota: fatal: hard limits unsupported: $d (ext4): the kernel offers no quota control for it: Function not implemented"
}

@test "verify and prepare refuse the host's XFS, built without quota support" {
	run -101 --separate-stderr $Q verify --workspace "$ws" --disk 8M
	assert_equal "$stderr" "sbx-quota: fatal: hard limits unsupported: $ws (xfs): the kernel offers no quota control for it: Function not implemented"
	run -101 --separate-stderr $Q prepare --workspace "$ws" --project 42 --disk 8M
	assert_equal "$stderr" "sbx-quota: fatal: hard limits unsupported: $ws (xfs): the kernel offers no quota control for it: Function not implemented"
}

@test "without quotactl_fd, verify asks the block device from mountinfo and still refuses" {
	run -101 --separate-stderr "$SBX_TESTBIN/quota-nofd" sbx-quota verify --workspace "$ws" --disk 8M
	assert_equal "$stderr" "sbx-quota: fatal: hard limits unsupported: $ws (xfs): the kernel offers no quota control for it: Function not implemented"
}

@test "a refusal is written to --status-fd as the exit line" {
	run -101 --separate-stderr bash -c 'exec 5>&1; exec sbx-quota verify --workspace "$1" --disk 8M --status-fd 5' sh "$ws"
	assert_output "{\"tool\":\"sbx-quota\",\"event\":\"exit\"$SBX_VER,\"code\":101,\"stage\":\"setup\",\"error\":\"hard limits unsupported: $ws (xfs): the kernel offers no quota control for it: Function not implemented\"}"
}

@test "report on the host's XFS shows the project id and that quota control is unavailable" {
	run -0 --separate-stderr $Q report --workspace "$ws"
	assert_line "filesystem: xfs"
	assert_line "quota control: unavailable"
	assert_line "accounting: off"
	assert_line "enforcement: off"
	assert_line "project id: 42"
	assert_line "projinherit: on"
	refute_line --partial "limit"
	run -0 --separate-stderr $Q report --workspace "$ws" --json
	assert_output --regexp "^\\{\"tool\":\"sbx-quota\",\"event\":\"report\",\"workspace\":\"$ws\",\"fs\":\"xfs\",\"dev\":\"7:[0-9]+\",\"fsid\":\"[0-9a-f]{16}\",\"mount_id\":[0-9]+,\"project\":42,\"projinherit\":true,\"quota_control\":\"unavailable\",\"accounting\":false,\"enforcing\":false\\}$"
	run -101 --separate-stderr $Q report --workspace /dev/shm
	assert_equal "$stderr" "sbx-quota: fatal: hard limits unsupported: /dev/shm is on tmpfs, not XFS or ext4"
	# A workspace named with terminal escapes is written escaped (its name
	# is quoted once, when it is opened).
	mkdir "$ws/t"$'\e]0;x\a\e[2J\xc2\x9b'
	run -0 --separate-stderr $Q report --workspace "$ws/t"$'\e]0;x\a\e[2J\xc2\x9b'
	assert_line --index 0 "workspace: $ws/t\\x1b]0;x\\x07\\x1b[2J\\xc2\\x9b"
}

# --- the tree check (quota-walk runs verify's walk alone) ----------------------------------

@test "the tree check accepts a tree whose inodes all carry the project and counts them" {
	mkdir -p "$ws/a/b/c" "$ws/d"
	echo x >"$ws/a/b/c/f"
	: >"$ws/d/g"
	: >"$ws/h"
	run -0 walk "$ws"
	assert_output "8 entries"
}

@test "the tree check refuses a symbolic link, even a dangling one" {
	mkdir -p "$ws/a/b"
	ln -s /nonexistent "$ws/a/b/l"
	run -102 --separate-stderr walk "$ws"
	assert_equal "$stderr" "quota-walk: fatal: refusing workspace: 'a/b/l' is a symbolic link"
}

@test "the tree check refuses a file with a second hard link" {
	mkdir "$ws/a"
	: >"$ws/a/f"
	ln "$ws/a/f" "$xfs/outside$BATS_TEST_NUMBER"
	extra+=("$xfs/outside$BATS_TEST_NUMBER")
	run -102 --separate-stderr walk "$ws"
	assert_equal "$stderr" "quota-walk: fatal: refusing workspace: 'a/f' has 2 hard links"
}

@test "the tree check refuses a bind mount and another filesystem mounted inside" {
	mkdir "$ws/m" "$xfs/other$BATS_TEST_NUMBER"
	extra+=("$xfs/other$BATS_TEST_NUMBER")
	mount --bind "$xfs/other$BATS_TEST_NUMBER" "$ws/m"
	mounts=("$ws/m")
	run -102 --separate-stderr walk "$ws"
	assert_equal "$stderr" "quota-walk: fatal: refusing workspace: 'm' is another mount (a mount point or bind mount)"
	umount "$ws/m"
	mount -t tmpfs tmpfs "$ws/m"
	run -102 --separate-stderr walk "$ws"
	assert_equal "$stderr" "quota-walk: fatal: refusing workspace: 'm' is on another filesystem"
	umount "$ws/m"
	mounts=()
	: >"$ws/file"
	: >"$xfs/target$BATS_TEST_NUMBER"
	extra+=("$xfs/target$BATS_TEST_NUMBER")
	mount --bind "$xfs/target$BATS_TEST_NUMBER" "$ws/file"
	mounts=("$ws/file")
	run -102 --separate-stderr walk "$ws"
	assert_equal "$stderr" "quota-walk: fatal: refusing workspace: 'file' is another mount (a mount point or bind mount)"
}

@test "the tree check refuses fifos, sockets and devices without opening them" {
	mkfifo "$ws/p"
	run -102 --separate-stderr walk "$ws"
	assert_equal "$stderr" "quota-walk: fatal: refusing workspace: 'p' is a fifo"
	rm "$ws/p"
	mknod "$ws/null" c 1 3
	run -102 --separate-stderr walk "$ws"
	assert_equal "$stderr" "quota-walk: fatal: refusing workspace: 'null' is a character device"
	rm "$ws/null"
	python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$ws/s"
	run -102 --separate-stderr walk "$ws"
	assert_equal "$stderr" "quota-walk: fatal: refusing workspace: 's' is a socket"
}

@test "the tree check refuses a deep file of another project and a deep directory without PROJINHERIT" {
	mkdir -p "$ws/a/b/c/d"
	: >"$ws/a/b/c/f"
	qa "$ws/a/b/c/f" 7
	run -102 --separate-stderr walk "$ws"
	assert_equal "$stderr" "quota-walk: fatal: refusing workspace: 'a/b/c/f' has project id 7, not 42"
	qa "$ws/a/b/c/f" 42
	qa "$ws/a/b/c" 42 noinherit
	run -102 --separate-stderr walk "$ws"
	assert_equal "$stderr" "quota-walk: fatal: refusing workspace: directory 'a/b/c' lacks PROJINHERIT"
}

@test "the tree check names an entry with control bytes and quotes escaped" {
	mkdir "$ws/dir"
	: >"$ws/dir/a"$'\n'"b'c\\"
	qa "$ws/dir/a"$'\n'"b'c\\" 9
	run -102 --separate-stderr walk "$ws"
	assert_equal "$stderr" "quota-walk: fatal: refusing workspace: 'dir/a\\x0ab\\x27c\\x5c' has project id 9, not 42"
	# Terminal escapes, 7- and 8-bit, in a symlink's name: escaped, never raw.
	rm "$ws/dir/a"$'\n'"b'c\\"
	ln -s /nonexistent "$ws/dir/t"$'\e]0;x\a\e[2J\xc2\x9b2J\x9b'
	run -102 --separate-stderr walk "$ws"
	assert_equal "$stderr" "quota-walk: fatal: refusing workspace: 'dir/t\\x1b]0;x\\x07\\x1b[2J\\xc2\\x9b2J\\x9b' is a symbolic link"
}

@test "the tree check refuses a tree deeper than 512 directories" {
	local p=$ws i
	for i in $(seq 520); do p=$p/d; done
	mkdir -p "$p"
	run -102 --separate-stderr walk "$ws"
	assert_regex "$stderr" "^quota-walk: fatal: refusing workspace: 'd(/d)+/?\\.\\.\\.' is nested deeper than 512 directories$"
}

@test "the tree check fails with the step and the path when a directory cannot be read" {
	sbx_test_user
	mkdir -p "$ws/a/locked"
	chmod 0 "$ws/a/locked"
	run -111 --separate-stderr as_user "$SBX_TESTBIN/quota-walk" "$ws"
	assert_equal "$stderr" "quota-walk: fatal: unable to open 'a/locked' in the workspace: Permission denied"
}

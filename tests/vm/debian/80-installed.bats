#!/usr/bin/env bats
# sbx where it is installed: a Debian 12 or 13 root booted on its release's kernel (tests/vm/debian.sh),
# the tools in /usr/bin, their manifest in /usr/share/sbx. sbx-check host, tools and proof
# must say ok on every line, given the role's cgroup subtree (delegated to the user in the
# user run) and a directory under an XFS project quota; a line that is not ok is printed.

load helpers/vm

teardown() {
	[ -z "${qdir:-}" ] || vm_quota_dir_remove "$qdir"
}

# The release debian.sh made the root of, on that release's kernel: any other fails here
# with the versions named.
@test "the tools are the installed ones, in the Debian root and on the kernel of the release under test" {
	local rel kernel
	rel=$(cat /sbx/debian-release)
	case $rel in
	12) kernel='^6\.1\.[0-9]+-[0-9]+-amd64$' ;;
	13) kernel='^6\.12\.[0-9]+\+deb13-amd64$' ;;
	*) fail "/sbx/debian-release says '$rel', not 12 or 13" ;;
	esac
	run -0 cat /etc/debian_version
	assert_output --regexp "^$rel\.[0-9]+\$"
	run -0 uname -r
	assert_output --regexp "$kernel"
	run -0 command -v sbx-check sbx-ns sbx-cgroup sbx-quota sbx-broker
	assert_output "$(printf '/usr/bin/%s\n' sbx-check sbx-ns sbx-cgroup sbx-quota sbx-broker)"
	assert_equal "$SBX_BIN" /usr/bin
}

# Installed by dpkg -i at boot (tests/vm/debian.sh): every file as the package lists it.
@test "the package is installed and intact" {
	run -0 dpkg-query -W -f '${Status} ${Version}' sbx
	assert_output --regexp '^install ok installed [0-9]'
	run -0 dpkg --verify sbx
	assert_output ""
	assert_file_exists /usr/share/sbx/manifest
}

@test "sbx-check host: every line ok with the cgroup subtree, an XFS project quota and a baseline" {
	qdir=$(vm_quota_dir xfs)
	run -0 --separate-stderr sbx-check host --cgroup-root "$SBX_VM_CGROUP" --quota-workspace "$qdir" \
		--baseline /etc/sbx/baseline.json
	every_line_ok "result: all checks passed (exit 0)"
	assert_equal "$stderr" ""
	assert_line "cgroup-delegation  ok             uid $(id -u) may manage $SBX_VM_CGROUP"
	assert_line --regexp "^quota +ok +$qdir \\(xfs\\) project [0-9]+, "
}

@test "sbx-check tools: every installed tool ok and pinned by the manifest" {
	run -0 --separate-stderr sbx-check tools
	every_line_ok "result: all checks passed (exit 0)"
	assert_equal "$stderr" ""
	assert_line --regexp '^manifest +ok +'
	assert_line --regexp '^sbx-ns +ok +path=/usr/bin/sbx-ns .* linkage=static links=1 owner=0 mode=0755 manifest=intact$'
}

# As root every line is ok, broker-allowed too: the test origin sits outside the broker's
# namespace across a veth pair built with iproute2's ip(8), which the root holds. The
# user cannot build a veth pair: for it that one line is the exact refusal.
@test "sbx-check proof: every line ok with the cgroup subtree and an XFS project quota" {
	local allowed=()
	[ "$SBX_VM_ROLE" = root ] ||
		allowed=("broker-allowed     unsupported    not proven: a test origin outside the broker's namespace needs a veth pair, which only root can build, and the broker refuses loopback and the host's own addresses; to fix: run sbx-check proof as root with iproute2's ip(8) installed")
	qdir=$(vm_quota_dir xfs)
	run --separate-stderr sbx-check proof --cgroup-root "$SBX_VM_CGROUP" --quota-workspace "$qdir"
	every_line_ok "$(proof_verdict)" "${allowed[@]}"
	assert_line --regexp '^pids-limit +ok +'
	assert_line --regexp '^memory-limit +ok +'
	assert_line --regexp '^quota-limit +ok +denied: wrote [0-9]+ bytes: No space left on device$'
	assert_line --regexp '^broker-denied +ok +'
	if [ "$SBX_VM_ROLE" = root ]; then
		assert_equal "${lines[-1]}" "result: all $((${#lines[@]} - 1)) proven (exit 0)"
		assert_line --regexp '^broker-allowed +ok +'
	fi
	assert_equal "$status" 0
	assert_equal "$stderr" ""
}

#!/usr/bin/env bats
# sbx-check: bad input first, then the host report on this machine (which has
# isolation but no hard limits), tool identity against a manifest, and the
# proof: failing against an unconfined stand-in, passing with the real chain.

bats_require_minimum_version 1.5.0
load helpers

# A stand-in for sbx-ns that runs the command unconfined: the proof must fail.
standin() {
	cat >"$1" <<'EOF'
#!/bin/sh
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift
exec "$@"
EOF
	chmod 0755 "$1"
}

# A private bin dir with copies of the given tools (and a manifest when asked).
copy_tools() {
	local t
	mkdir -p "$scratch/bin"
	for t in "$@"; do
		[ -e "$SBX_BIN/$t" ] || continue
		cp "$SBX_BIN/$t" "$scratch/bin/$t"
		chmod 0755 "$scratch/bin/$t"
	done
}

write_manifest() {
	mkdir -p "$scratch/share/sbx"
	(cd "$scratch/bin" && sha256sum -- *) >"$scratch/share/sbx/manifest"
	chmod 0644 "$scratch/share/sbx/manifest"
}

# Another tool than sbx-check that the build produced.
other_tool() {
	local t
	for t in sbx-cgroup sbx-quota sbx-ns sbx-broker sbx-seatbelt; do
		[ -e "$SBX_BIN/$t" ] && { echo "$t"; return 0; }
	done
	return 1
}

leftovers() { find /var/tmp -maxdepth 1 -name 'sbx-check.*' | wc -l; }
# The broker proof's network namespaces still present.
testnets() { ip netns list | grep '^sbx-check-' || :; }

json_get() {
	python3 -c 'import json, sys
d = json.load(sys.stdin)
print(eval(sys.argv[1], {"d": d}))' "$1"
}

setup() {
	scratch=$(sbx_scratch)
	cg=
}

teardown() {
	rm -rf "$scratch"
	[ -z "$cg" ] || rmdir "$cg"
}

# --- bad input ------------------------------------------------------------------------

@test "sbx-check --help prints the five usage lines and the options, and exits 0" {
	run -0 --separate-stderr sbx-check --help
	assert_equal "$(head -5 <<<"$output")" "usage: sbx-check host [OPTION]...
       sbx-check tools [OPTION]... [PATH]...
       sbx-check proof [OPTION]...
       sbx-check grant --key FILE (--plan FILE | --plan-fd FD) [OPTION]...
       sbx-check grant --key FILE --kind argv [OPTION]... [--] PROG [ARG]..."
	assert_line "  --tier TIER            proof: full (the default) or landlock"
	assert_equal "$stderr" ""
}

@test "sbx-check without a mode is a usage error" {
	run -100 --separate-stderr sbx-check
	assert_equal "$stderr" "sbx-check: usage: missing mode (host, tools, proof, grant or policy)"
	assert_output ""
	run -100 --separate-stderr sbx-check -- host
	assert_equal "$stderr" "sbx-check: usage: missing mode (host, tools, proof, grant or policy)"
}

@test "sbx-check refuses an unknown mode and an empty one" {
	run -100 --separate-stderr sbx-check status
	assert_equal "$stderr" "sbx-check: usage: unknown mode 'status' (host, tools, proof, grant or policy)"
	run -100 --separate-stderr sbx-check ""
	assert_equal "$stderr" "sbx-check: usage: unknown mode '' (host, tools, proof, grant or policy)"
}

@test "sbx-check refuses options of one mode in another and unknown options" {
	run -100 --separate-stderr sbx-check tools --cgroup-root /sys/fs/cgroup
	assert_equal "$stderr" "sbx-check: usage: unknown option --cgroup-root"
	run -100 --separate-stderr sbx-check host --ns /bin/true
	assert_equal "$stderr" "sbx-check: usage: unknown option --ns"
	run -100 --separate-stderr sbx-check host --manifest /etc/hostname
	assert_equal "$stderr" "sbx-check: usage: unknown option --manifest"
	run -100 --separate-stderr sbx-check host -j
	assert_equal "$stderr" "sbx-check: usage: unknown option -j (options are long: --name)"
}

@test "sbx-check refuses bad directory options: empty, relative, missing, symlink, file, repeated" {
	local opt mode
	ln -s /var/tmp "$scratch/link"
	touch "$scratch/file"
	for mode in host proof; do
		for opt in cgroup-root quota-workspace; do
			run -100 --separate-stderr sbx-check $mode --$opt ""
			assert_equal "$stderr" "sbx-check: usage: --$opt: invalid path '': empty"
			run -100 --separate-stderr sbx-check $mode --$opt var/tmp
			assert_equal "$stderr" "sbx-check: usage: --$opt: invalid path 'var/tmp': not absolute"
			run -100 --separate-stderr sbx-check $mode --$opt "$scratch/none"
			assert_equal "$stderr" "sbx-check: usage: --$opt: unable to find '$scratch/none': No such file or directory"
			run -100 --separate-stderr sbx-check $mode --$opt "$scratch/link"
			assert_equal "$stderr" "sbx-check: usage: --$opt: '$scratch/link' is a symlink"
			run -100 --separate-stderr sbx-check $mode --$opt "$scratch/file"
			assert_equal "$stderr" "sbx-check: usage: --$opt: '$scratch/file' is not a directory"
			run -100 --separate-stderr sbx-check $mode --$opt "$scratch" --$opt "$scratch"
			assert_equal "$stderr" "sbx-check: usage: --$opt given twice"
			run -100 --separate-stderr sbx-check $mode --$opt
			assert_equal "$stderr" "sbx-check: usage: --$opt needs a value"
		done
	done
}

@test "sbx-check refuses a bad --ns and a bad --manifest" {
	touch "$scratch/plain"
	chmod 0644 "$scratch/plain"
	run -100 --separate-stderr sbx-check proof --ns "$scratch/plain"
	assert_equal "$stderr" "sbx-check: usage: --ns: '$scratch/plain' is not executable"
	run -100 --separate-stderr sbx-check proof --ns "$scratch"
	assert_equal "$stderr" "sbx-check: usage: --ns: '$scratch' is not a regular file"
	run -100 --separate-stderr sbx-check proof --ns sbx-ns
	assert_equal "$stderr" "sbx-check: usage: --ns: invalid path 'sbx-ns': not absolute"
	run -100 --separate-stderr sbx-check tools --manifest ""
	assert_equal "$stderr" "sbx-check: usage: --manifest: invalid path '': empty"
	run -100 --separate-stderr sbx-check tools --manifest "$scratch"
	assert_equal "$stderr" "sbx-check: usage: --manifest: '$scratch' is not a regular file"
}

@test "sbx-check refuses operands where none belong, relative tool paths and --json with a value" {
	run -100 --separate-stderr sbx-check host extra
	assert_equal "$stderr" "sbx-check: usage: host takes no operands: 'extra'"
	run -100 --separate-stderr sbx-check proof -- /bin/true
	assert_equal "$stderr" "sbx-check: usage: proof takes no operands: '/bin/true'"
	run -100 --separate-stderr sbx-check tools bin/sbx-ns
	assert_equal "$stderr" "sbx-check: usage: tools: invalid path 'bin/sbx-ns': not absolute"
	run -100 --separate-stderr sbx-check tools ""
	assert_equal "$stderr" "sbx-check: usage: tools: invalid path '': empty"
	run -100 --separate-stderr sbx-check host --json=yes
	assert_equal "$stderr" "sbx-check: usage: --json takes no value"
	run -100 --separate-stderr sbx-check host --json --json
	assert_equal "$stderr" "sbx-check: usage: --json given twice"
}

@test "the probe mode refuses what it does not know" {
	run -2 --separate-stderr sbx-check --probe escape
	assert_output "unknown probe 'escape'"
	run -2 --separate-stderr sbx-check --probe read
	assert_output "unknown probe 'read'"
	run -2 --separate-stderr sbx-check --probe connect 65536
	assert_output "bad port '65536'"
	run -2 --separate-stderr sbx-check --probe forkbomb 0
	assert_output "bad count '0'"
	run -2 --separate-stderr sbx-check --probe memhog -1
	assert_output "bad size '-1'"
	run -2 --separate-stderr sbx-check --probe fetch ""
	assert_output "bad host ''"
	run -2 --separate-stderr sbx-check --probe fetch a.test/x
	assert_output "bad host 'a.test/x'"
}

@test "the fetch probe dials only a proxy on 127.0.0.1 and says what answered" {
	run -1 --separate-stderr env -u HTTP_PROXY sbx-check --probe fetch a.test
	assert_output "HTTP_PROXY is not set: no broker to ask for http://a.test/"
	run -1 --separate-stderr env HTTP_PROXY=http://198.18.0.1:3128 sbx-check --probe fetch a.test
	assert_output "HTTP_PROXY is http://198.18.0.1:3128, not a proxy on 127.0.0.1"
	run -1 --separate-stderr env HTTP_PROXY=http://127.0.0.1:99999 sbx-check --probe fetch a.test
	assert_output "HTTP_PROXY is http://127.0.0.1:99999: bad port"
}

# --- host -----------------------------------------------------------------------------

# These machines may themselves be containers: there the fix is the
# container's setting, elsewhere the host's boot parameter.
cgroup_fix() {
	if [ -e /.dockerenv ] || [ -e /run/.containerenv ]; then
		echo "in a container, let the runtime hold the limits (podman or docker --memory, --pids-limit, --cpus; Kubernetes resources.limits), or give sbx-cgroup a delegated cgroup v2 subtree (a cgroup v2 host, podman --cgroupns=private)"
	else
		echo "boot with cgroup_no_v1=all (or systemd.unified_cgroup_hierarchy=1) so cpu, memory and pids move to cgroup v2"
	fi
}

@test "host: isolation is ready on this machine, hard limits are not, exit 101" {
	run -101 --separate-stderr sbx-check host
	assert_equal "$stderr" ""
	assert_line --regexp '^kernel +ok +Linux [0-9]+\.[0-9]+[^ ]*$'
	assert_line --regexp '^userns +ok +user namespaces work for uid 0, user\.max_user_namespaces=[0-9]+$'
	assert_line "namespaces         ok             new mount, pid, ipc, uts, network and cgroup namespaces"
	assert_line "root-tmpfs         ok             a tmpfs mounts on /tmp as the new root"
	assert_line "proc               ok             a fresh proc mounts in the new pid namespace (hidepid)"
	assert_line "pivot_root         ok             pivot_root onto the new root works"
	assert_line "userns-limit       ok             the sandbox's user namespace limit is spent: a second nested user namespace is refused"
	assert_line --regexp '^seccomp +ok +a seccomp filter loads$'
	# The development machines' kernels are past ABI 6.
	assert_line --regexp '^landlock +ok +ABI [6-9]: file access rules, TCP bind and connect rules \(ABI 4\), signals and abstract Unix sockets scoped to the sandbox \(ABI 6\)$'
	assert_line --regexp '^clone3-cgroup +ok +clone3 knows CLONE_INTO_CGROUP$'
	assert_line --regexp '^quotactl_fd +ok +quotactl_fd exists$'
	assert_line --regexp '^cgroup2 +ok +mounted at /sys/fs/cgroup/unified \(hybrid: cgroup v1 hierarchies mounted too\)$'
	assert_line "cgroup-controllers unsupported    /sys/fs/cgroup/unified offers only 'hugetlb', not cpu memory pids; the cgroup v1 hierarchies hold cpu memory pids: no hard limits on this host; to fix: $(cgroup_fix)"
	assert_line "cgroup-root        not-configured delegation and swap control not checked; to fix: pass --cgroup-root DIR (the cgroup v2 directory sbx-cgroup will use)"
	assert_line "quota              not-configured project quota on a workspace filesystem not checked; to fix: pass --quota-workspace DIR (a directory under a project quota)"
	assert_line "result: hard limits unavailable (exit 101)"
}

@test "host: an unprivileged user is told the same, for its own uid" {
	sbx_test_user
	run -101 --separate-stderr as_user sbx-check host
	assert_equal "$stderr" ""
	assert_line --regexp "^userns +ok +user namespaces work for uid $SBX_TEST_UID, "
	assert_line "result: hard limits unavailable (exit 101)"
}

@test "host: a scratch cgroup of the unified tree lacks the controllers and enables none" {
	cg=/sys/fs/cgroup/unified/sbx-check-test-$$
	mkdir "$cg"
	run -101 --separate-stderr sbx-check host --cgroup-root "$cg"
	assert_equal "$stderr" ""
	assert_line "cgroup-controllers unsupported    $cg offers only '(none)', not cpu memory pids; the cgroup v1 hierarchies hold cpu memory pids: no hard limits on this host; to fix: $(cgroup_fix)"
	assert_line "cgroup-subtree     missing        $cg enables '(none)' for children, not cpu memory pids; to fix: echo '+cpu +memory +pids' > $cg/cgroup.subtree_control"
	assert_line "cgroup-delegation  ok             uid 0 may manage $cg"
	assert_line "result: hard limits unavailable (exit 101)"
}

@test "host: a cgroup root that is not on cgroup2 is named as such" {
	run -101 --separate-stderr sbx-check host --cgroup-root "$scratch"
	assert_line "cgroup-controllers missing        cannot read $scratch/cgroup.controllers: No such file or directory; to fix: give --cgroup-root a directory of the cgroup2 filesystem"
	assert_line "cgroup-root        missing        $scratch is not on cgroup2; to fix: give a directory of the cgroup2 mount /sys/fs/cgroup/unified"
}

@test "host: a workspace on this kernel's ext4 has no project quota" {
	run -101 --separate-stderr sbx-check host --quota-workspace "$scratch"
	assert_equal "$stderr" ""
	assert_line "quota              unsupported    project quota state of $scratch (ext4): Function not implemented; to fix: a kernel with project quota support (CONFIG_XFS_QUOTA / CONFIG_QUOTA)"
}

@test "host: a malformed baseline is a usage error (100) before any check, an unsafe one is reported" {
	printf '{"nope": 1' >"$scratch/bad.json"
	run -100 --separate-stderr sbx-check host --baseline "$scratch/bad.json"
	assert_equal "$stderr" "sbx-check: usage: --baseline: \$.nope: invalid JSON at line 1, column 10: '}' expected near end of file"
	assert_equal "$output" ""
	printf '{}' >"$scratch/open.json"
	chmod 0666 "$scratch/open.json"
	run -108 --separate-stderr sbx-check host --baseline "$scratch/open.json"
	assert_line "baseline           unsafe         --baseline: refused: writable by group or others (mode 0666); to fix: a regular file owned by root, not writable by group or others, on a path only root can change, holding a valid policy"
}

@test "host: ENOSYS from a seccomp filter is named as the filter's, not as an old kernel" {
	# A filter answering quotactl_fd (443) with ENOSYS, as podman's default profile does.
	python3 -c 'import struct, sys
ins = [(0x20, 0, 0, 0), (0x15, 0, 1, 443), (0x06, 0, 0, 0x00050000 | 38), (0x06, 0, 0, 0x7fff0000)]
sys.stdout.buffer.write(b"".join(struct.pack("HBBI", *i) for i in ins))' >"$scratch/filter.bpf"
	run --separate-stderr bwrap --bind / / --dev /dev --seccomp 3 -- sbx-check host 3<"$scratch/filter.bpf"
	if [ -e /.dockerenv ] || [ -e /run/.containerenv ]; then
		where=" ($(if [ -e /run/.containerenv ]; then echo "podman: /run/.containerenv"; else echo "docker: /.dockerenv"; fi))"
		fix="the container's seccomp profile refuses it: podman or docker --security-opt seccomp=PROFILE allowing it, Kubernetes securityContext seccompProfile type: Localhost"
	else
		where=
		fix="run sbx outside the seccomp filter that refuses it (systemd SystemCallFilter=, a container runtime's profile)"
	fi
	assert_line "quotactl_fd        missing        quotactl_fd failed; sbx-quota uses quotactl on the filesystem's block device: Function not implemented, from the seccomp filter this process runs under$where, not necessarily the kernel; to fix: $fix"
	refute_output --partial "Linux 5.14 or newer"
	# Without the filter the same call is the kernel's and exists.
	run -101 sbx-check host
	assert_line "quotactl_fd        ok             quotactl_fd exists"
}

@test "host --json is one valid JSON document with the same verdict" {
	run -101 --separate-stderr sbx-check host --json
	assert_equal "$stderr" ""
	run -0 json_get 'd["tool"], d["event"], d["code"], d["result"]' <<<"$output"
	assert_output "('sbx-check', 'host', 101, 'hard limits unavailable')"
	run -101 sbx-check host --json
	run -0 json_get '[(c["name"], c["class"], c["status"]) for c in d["checks"] if c["name"] in ("userns", "cgroup-controllers", "quota")]' <<<"$output"
	assert_output "[('userns', 'isolation', 'ok'), ('cgroup-controllers', 'limits', 'unsupported'), ('quota', 'limits', 'not-configured')]"
}

# --- tools ----------------------------------------------------------------------------

@test "tools: every installed copy matching its manifest is ok and pinned" {
	copy_tools sbx-cgroup sbx-quota sbx-ns sbx-broker sbx-seatbelt sbx-check
	write_manifest
	local n
	n=$(wc -l <"$scratch/share/sbx/manifest")
	run -0 --separate-stderr "$scratch/bin/sbx-check" tools
	assert_equal "$stderr" ""
	assert_line "manifest           ok             $scratch/bin/../share/sbx/manifest lists $n tools"
	local sum ino size link=dynamic
	[ "${SBX_STATIC:-1}" = 0 ] || link=static
	sum=$(sha256sum <"$scratch/bin/sbx-check" | cut -d' ' -f1)
	ino=$(stat -c %i "$scratch/bin/sbx-check")
	size=$(stat -c %s "$scratch/bin/sbx-check")
	assert_line --regexp "^sbx-check +ok +path=$scratch/bin/sbx-check dev=[0-9]+:[0-9]+ ino=$ino size=$size sha256=$sum linkage=$link links=1 owner=0 mode=0755 manifest=intact\$"
	assert_line "result: all checks passed (exit 0)"
}

@test "tools: a modified copy is corrupt and exits 108" {
	local t
	t=$(other_tool)
	copy_tools "$t" sbx-check
	write_manifest
	local want
	want=$(grep " $t\$" "$scratch/share/sbx/manifest" | cut -d' ' -f1)
	printf 'x' >>"$scratch/bin/$t"
	run -108 --separate-stderr "$scratch/bin/sbx-check" tools
	assert_equal "$stderr" ""
	assert_line --regexp "^$t +corrupt +SHA-256 differs from the manifest \\($want\\) path=$scratch/bin/$t .* manifest=mismatch\$"
	assert_line --regexp "^sbx-check +ok "
	assert_line "result: an sbx tool is corrupt or unsafe (exit 108)"
}

@test "tools: a tool the manifest lists but that is gone is corrupt" {
	local t
	t=$(other_tool)
	copy_tools "$t" sbx-check
	write_manifest
	rm "$scratch/bin/$t"
	run -108 --separate-stderr "$scratch/bin/sbx-check" tools
	assert_line "$t $(printf '%*s' $((18 - ${#t})) '')corrupt        $scratch/bin/$t: No such file or directory (the manifest lists it)"
}

@test "tools: a copy missing from the manifest is corrupt" {
	local t
	t=$(other_tool)
	copy_tools sbx-check
	write_manifest
	copy_tools "$t"
	run -108 --separate-stderr "$scratch/bin/sbx-check" tools
	assert_line --regexp "^$t +corrupt +not listed in the manifest path=.* manifest=unlisted\$"
}

@test "tools: without a manifest, absent tools are absent and present ones unpinned" {
	copy_tools sbx-check
	run -0 --separate-stderr "$scratch/bin/sbx-check" tools
	assert_line "manifest           not-configured no manifest at $scratch/bin/../share/sbx/manifest: tools are checked but not pinned; to fix: install with \`make install\`, which records one"
	assert_line "sbx-ns             absent         not installed at $scratch/bin/sbx-ns"
	assert_line --regexp "^sbx-check +ok +path=.* manifest=none\$"
	assert_line "result: all checks passed (exit 0)"
}

@test "tools: a second hard link, group-writable mode or setuid bit makes a tool unsafe" {
	local t
	t=$(other_tool)
	copy_tools "$t" sbx-check
	ln "$scratch/bin/$t" "$scratch/alias"
	run -108 --separate-stderr "$scratch/bin/sbx-check" tools
	assert_line --regexp "^$t +unsafe +2 hard links path="
	rm "$scratch/alias"
	chmod 0775 "$scratch/bin/$t"
	run -108 --separate-stderr "$scratch/bin/sbx-check" tools
	assert_line --regexp "^$t +unsafe +file is group/world-writable \\(mode 0775\\) path="
	chmod 4755 "$scratch/bin/$t"
	run -108 --separate-stderr "$scratch/bin/sbx-check" tools
	assert_line --regexp "^$t +unsafe +setuid/setgid bit set path="
}

@test "tools: a tool owned by another user or in a world-writable directory is unsafe" {
	sbx_test_user
	local t
	t=$(other_tool)
	copy_tools "$t" sbx-check
	chown "$SBX_TEST_UID" "$scratch/bin/$t"
	run -108 --separate-stderr "$scratch/bin/sbx-check" tools
	assert_line --regexp "^$t +unsafe +file owned by uid $SBX_TEST_UID path="
	chown 0 "$scratch/bin/$t"
	chmod 0777 "$scratch/bin"
	run -108 --separate-stderr "$scratch/bin/sbx-check" tools
	assert_line --regexp "^$t +unsafe +directory $scratch/bin is group/world-writable path="
}

@test "tools: a symlink, a non-ELF file and a given path are judged" {
	copy_tools sbx-check
	ln -s "$scratch/bin/sbx-check" "$scratch/sbx-ns"
	printf '#!/bin/sh\n' >"$scratch/script"
	chmod 0755 "$scratch/script"
	run -108 --separate-stderr sbx-check tools "$scratch/sbx-ns" "$scratch/script" "$scratch/bin/sbx-check"
	assert_line "sbx-ns             unsafe         $scratch/sbx-ns is a symlink"
	assert_line --regexp "^script +unsafe +not an ELF executable path=$scratch/script .* linkage=not ELF .*manifest=none\$"
	assert_line --regexp "^sbx-check +ok +path=$scratch/bin/sbx-check "
}

@test "tools: an unsafe or malformed manifest is refused" {
	copy_tools sbx-check
	write_manifest
	chmod 0666 "$scratch/share/sbx/manifest"
	run -108 --separate-stderr "$scratch/bin/sbx-check" tools
	assert_line "manifest           unsafe         $scratch/bin/../share/sbx/manifest is group/world-writable (mode 0666)"
	chmod 0644 "$scratch/share/sbx/manifest"
	echo "not a hash  sbx-ns" >>"$scratch/share/sbx/manifest"
	run -108 --separate-stderr "$scratch/bin/sbx-check" tools
	assert_line "manifest           corrupt        $scratch/bin/../share/sbx/manifest line 2 is not 'SHA256  NAME'"
	printf '%064d  ../sbx-ns\n' 0 >"$scratch/m"
	run -108 --separate-stderr sbx-check tools --manifest "$scratch/m" "$scratch/bin/sbx-check"
	assert_line "manifest           corrupt        $scratch/m line 1 is not 'SHA256  NAME'"
}

@test "tools --json is valid JSON carrying identity fields" {
	copy_tools sbx-check
	write_manifest
	run -0 --separate-stderr "$scratch/bin/sbx-check" tools --json
	assert_equal "$stderr" ""
	run -0 json_get '[(c["name"], c["status"], c.get("manifest"), c.get("links")) for c in d["checks"] if c["status"] != "absent"]' <<<"$output"
	assert_output "[('manifest', 'ok', None, None), ('sbx-check', 'ok', 'intact', 1)]"
}

# --- proof ----------------------------------------------------------------------------

@test "proof: without sbx-ns beside sbx-check, isolation is unsupported and exits 106" {
	copy_tools sbx-check
	run -106 --separate-stderr "$scratch/bin/sbx-check" proof
	assert_equal "$stderr" ""
	assert_line "workspace-read     unsupported    sbx-ns is not installed at $scratch/bin/sbx-ns; to fix: install sbx-ns beside sbx-check"
	assert_line "offline            unsupported    sbx-ns is not installed at $scratch/bin/sbx-ns; to fix: install sbx-ns beside sbx-check"
	assert_line "pids-limit         not-configured not proven; to fix: pass --cgroup-root DIR"
	assert_line "quota-limit        not-configured not proven; to fix: pass --quota-workspace DIR"
	assert_line "result: isolation unavailable (exit 106)"
}

@test "proof: a stand-in sbx-ns that runs the command unconfined fails the isolation proofs, exit 107" {
	standin "$scratch/fake-ns"
	local before
	before=$(leftovers)
	# A proxy of the caller's is never handed to the chain.
	run -107 --separate-stderr env HTTP_PROXY=http://127.0.0.1:9 sbx-check proof --ns "$scratch/fake-ns"
	assert_equal "$stderr" ""
	local ws='/var/tmp/sbx-check\.[A-Za-z0-9]{6}'
	assert_line --regexp "^workspace-read +ok +read 38 bytes from $ws/ws/readme\$"
	assert_line --regexp "^workspace-write +ok +wrote $ws/ws/created\$"
	assert_line --regexp "^sibling-secret +FAIL +allowed: read 43 bytes from $ws/secret\$"
	assert_line --regexp "^env-write +FAIL +allowed: wrote $ws/ws/\\.env\$"
	assert_line --regexp "^git-hook-write +FAIL +allowed: wrote $ws/ws/\\.git/hooks/pre-commit\$"
	assert_line --regexp "^outside-write +FAIL +allowed: wrote $ws/outside/escaped\$"
	assert_line --regexp "^offline +FAIL +allowed: connected to 127\\.0\\.0\\.1:[0-9]+\$"
	assert_line --regexp "^loopback +ok +server and client talked on 127\\.0\\.0\\.1:[0-9]+\$"
	assert_line --regexp "^loopback-host +FAIL +allowed: connected to 127\\.0\\.0\\.1:[0-9]+\$"
	assert_line "broker-allowed     FAIL           refused: HTTP_PROXY is not set: no broker to ask for http://allowed.sbx-check.test/"
	assert_line "broker-denied      FAIL           not refused by the broker: HTTP_PROXY is not set: no broker to ask for http://denied.sbx-check.test/"
	assert_line "result: a proof failed (exit 107)"
	assert_equal "$(leftovers)" "$before"
	run -0 testnets
	assert_output ""
}

@test "proof: a failed proof outranks unavailable hard limits, and the refusal is shown" {
	standin "$scratch/fake-ns"
	cg=/sys/fs/cgroup/unified/sbx-check-test-$$
	mkdir "$cg"
	run -107 --separate-stderr sbx-check proof --ns "$scratch/fake-ns" --cgroup-root "$cg" --quota-workspace "$scratch"
	assert_equal "$stderr" ""
	if [ -x "$SBX_BIN/sbx-cgroup" ]; then
		assert_line --regexp "^pids-limit +unsupported +sbx-cgroup refused, fail-closed \\(exit 101\\): sbx-cgroup: fatal: .*; to fix: see \`sbx-check host --cgroup-root $cg\`\$"
		assert_line --regexp "^memory-limit +unsupported +sbx-cgroup refused, fail-closed \\(exit 101\\): "
	else
		assert_line "pids-limit         unsupported    sbx-cgroup is not installed beside sbx-check"
	fi
	if [ -x "$SBX_BIN/sbx-quota" ]; then
		assert_line --regexp "^quota-limit +unsupported +sbx-quota refused, fail-closed \\(exit 101\\): sbx-quota: fatal: .*; to fix: see \`sbx-check host --quota-workspace $scratch\`\$"
	else
		assert_line "quota-limit        unsupported    sbx-quota is not installed beside sbx-check"
	fi
	assert_line "result: a proof failed (exit 107)"
	run -0 find "$scratch" -name '.sbx-check-*'
	assert_output ""
}

@test "proof --json from the stand-in is valid JSON with FAIL on the isolation lines" {
	standin "$scratch/fake-ns"
	run -107 --separate-stderr sbx-check proof --ns "$scratch/fake-ns" --json
	assert_equal "$stderr" ""
	run -0 json_get '[(c["name"], c["status"]) for c in d["checks"] if c["class"] == "isolation"], d["code"]' <<<"$output"
	assert_output "([('workspace-read', 'ok'), ('workspace-write', 'ok'), ('sibling-secret', 'FAIL'), ('env-write', 'FAIL'), ('git-hook-write', 'FAIL'), ('outside-write', 'FAIL'), ('offline', 'FAIL')], 107)"
}

@test "proof: an unprivileged user runs the proof the same way and leaves nothing behind" {
	sbx_test_user
	standin "$scratch/fake-ns"
	local before
	before=$(leftovers)
	run -107 --separate-stderr as_user sbx-check proof --ns "$scratch/fake-ns"
	assert_equal "$stderr" ""
	assert_line --regexp "^sibling-secret +FAIL +allowed: read 43 bytes from "
	assert_line --regexp "^broker-allowed +unsupported +not proven: "
	assert_line "broker-denied      FAIL           not refused by the broker: HTTP_PROXY is not set: no broker to ask for http://denied.sbx-check.test/"
	assert_line "result: a proof failed (exit 107)"
	assert_equal "$(leftovers)" "$before"
}

@test "proof: the real sbx-ns holds every isolation line (exit 0), or is reported absent (106)" {
	run -0 --separate-stderr sbx-check proof
	assert_equal "$stderr" ""
	local n
	for n in workspace-read workspace-write sibling-secret env-write git-hook-write outside-write offline; do
		assert_line --regexp "^$n +ok +"
	done
	assert_line "broker-allowed     ok             http://allowed.sbx-check.test/: HTTP 200: hello from the sbx-check origin"
	assert_line "broker-denied      ok             denied: http://denied.sbx-check.test/: HTTP 403: sbx-broker: host denied.sbx-check.test not on the allowlist (--allow-host) sbx-ns: note: the broker refused 1 connection: denied.sbx-check.test:80: host denied.sbx-check.test not on the allowlist (--allow-host) (1)"
	assert_line "result: 11 proven, 3 not proven (pids-limit, memory-limit, quota-limit) (exit 0)"
	run -0 testnets
	assert_output ""
}

@test "proof: the real sbx-ns with its broker mode dropped fails the broker lines, exit 107" {
	# Every --net broker:PATH is removed: the command runs offline.
	printf '#!/bin/sh\nfor a; do shift; case $a in broker:*) set -- "$@" none ;; *) set -- "$@" "$a" ;; esac; done\nexec "%s/sbx-ns" "$@"\n' \
		"$SBX_BIN" >"$scratch/offline-ns"
	chmod 0755 "$scratch/offline-ns"
	run -107 --separate-stderr sbx-check proof --ns "$scratch/offline-ns"
	assert_equal "$stderr" ""
	assert_line --regexp "^offline +ok +denied: "
	assert_line --regexp "^loopback +ok +server and client talked on 127\\.0\\.0\\.1:[0-9]+\$"
	assert_line "broker-allowed     FAIL           refused: HTTP_PROXY is not set: no broker to ask for http://allowed.sbx-check.test/"
	assert_line "broker-denied      FAIL           not refused by the broker: HTTP_PROXY is not set: no broker to ask for http://denied.sbx-check.test/"
	assert_line "result: a proof failed (exit 107)"
	run -0 testnets
	assert_output ""
}

@test "proof --json carries the broker lines" {
	run -0 --separate-stderr sbx-check proof --json
	assert_equal "$stderr" ""
	run -0 json_get '[(c["name"], c["status"]) for c in d["checks"] if c["name"].startswith("broker")]' <<<"$output"
	assert_output "[('broker-allowed', 'ok'), ('broker-denied', 'ok')]"
}

@test "proof: with the real chain and a cgroup root on this host, limits are refused fail-closed (exit 101)" {
	cg=/sys/fs/cgroup/unified/sbx-check-test-$$
	mkdir "$cg"
	run -101 --separate-stderr sbx-check proof --cgroup-root "$cg"
	assert_equal "$stderr" ""
	assert_line --regexp "^sibling-secret +ok +denied: open /var/tmp/sbx-check\\.[A-Za-z0-9]{6}/secret: No such file or directory\$"
	assert_line --regexp "^pids-limit +unsupported +sbx-cgroup refused, fail-closed \\(exit 101\\): "
	assert_line "result: hard limits unavailable (exit 101)"
}

@test "proof: an unprivileged user proves the real sbx-ns too" {
	sbx_test_user
	run -0 --separate-stderr as_user sbx-check proof
	assert_equal "$stderr" ""
	assert_line --regexp "^env-write +ok +denied: open /var/tmp/sbx-check\\.[A-Za-z0-9]{6}/ws/\\.env for writing: Read-only file system\$"
	assert_line --regexp "^offline +ok +denied: "
	assert_line "broker-allowed     unsupported    not proven: a test origin outside the broker's namespace needs a veth pair, which only root can build, and the broker refuses loopback and the host's own addresses; to fix: run sbx-check proof as root with iproute2's ip(8) installed"
	assert_line "broker-denied      ok             denied: http://denied.sbx-check.test/: HTTP 403: sbx-broker: host denied.sbx-check.test not on the allowlist (--allow-host) sbx-ns: note: the broker refused 1 connection: denied.sbx-check.test:80: host denied.sbx-check.test not on the allowlist (--allow-host) (1)"
	assert_line "result: 10 proven, 4 not proven (broker-allowed, pids-limit, memory-limit, quota-limit) (exit 0)"
}

@test "the demo runs on this host: limits refused fail-closed, every attempt blocked, nothing escapes" {
	run -0 --separate-stderr "$SBX_ROOT/demo/run.sh"
	# The one line on stderr is sbx-ns telling its caller what the broker refused.
	assert_equal "$stderr" "sbx-ns: note: the broker refused 1 connection: forbidden.test:80: host forbidden.test not on the allowlist (--allow-host) (1)"
	assert_line "   cgroup limits: UNAVAILABLE here; sbx-cgroup refuses, fail-closed (exit 101):"
	assert_line --regexp '^  write a file in the workspace +ALLOWED +wrote /var/tmp/sbx-demo\.[A-Za-z0-9]{6}/home/project/result\.txt$'
	assert_line --regexp '^  read ~/\.ssh/id_ed25519 +blocked +cat: /var/tmp/sbx-demo\.[A-Za-z0-9]{6}/home/\.ssh/id_ed25519: No such file or directory$'
	assert_line --regexp '^  write outside the workspace +blocked +'
	assert_line --regexp '^  write \.git/hooks/pre-commit +blocked +.*: Read-only file system$'
	assert_line --regexp '^  overwrite \.env +blocked +.*: Read-only file system$'
	assert_line --regexp '^  open a raw socket +blocked +socket\(AF_INET, SOCK_RAW\): Operation not permitted$'
	assert_line "  fetch allowlisted http://allowed.test/   ALLOWED  hello from the demo's test origin"
	assert_line "  fetch forbidden http://forbidden.test/   blocked  curl: (22) The requested URL returned error: 403"
	assert_line "  fork bomb                                not attempted: no pids limit on this host would stop it"
	assert_line "   nothing outside the workspace changed; .env and .git/hooks are intact"
	refute_line --regexp 'ALLOWED +(cat|opened|connected)'
	run -0 find /sys/fs/cgroup/unified -maxdepth 1 -name 'sbx-demo-*'
	assert_output ""
	run -0 bash -c "ip netns list | grep '^sbx-demo-' || :"
	assert_output ""
}

@test "tools: a file name with a newline cannot forge a report line, and a FIFO does not hang the check" {
	copy_tools sbx-check
	local evil="$scratch/x"$'\n'"sbx-ns ok"
	cp "$scratch/bin/sbx-check" "$evil"
	mkfifo "$scratch/fifo"
	run -108 --separate-stderr sbx-check tools "$evil" "$scratch/fifo"
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 3
	assert_line --regexp "^x\\\\x0asbx-ns ok +ok +path=$scratch/x\\\\x0asbx-ns ok dev="
	assert_line "fifo               unsafe         $scratch/fifo is not a regular file"
	run -0 sbx-check tools --json "$evil"
	run -0 json_get 'd["checks"][0]["path"]' <<<"$output"
	assert_output "$evil"
	# Terminal escapes, 7- and 8-bit (an OSC title, a clear screen, a C1
	# CSI and a byte that is not UTF-8) are written escaped, never raw.
	evil="$scratch/"$'t\e]0;x\a\e[2J\xc2\x9b2J\x9b'
	cp "$scratch/bin/sbx-check" "$evil"
	run -0 --separate-stderr sbx-check tools "$evil"
	assert_line --index 0 --regexp "^t\\\\x1b\]0;x\\\\x07\\\\x1b\[2J\\\\xc2\\\\x9b2J\\\\x9b +ok +path=$scratch/t\\\\x1b"
	run -1 grep -c $'[\x01-\x09\x0b-\x1f\x7f]' <<<"$output"
}

@test "proof: SIGTERM during the broker proof removes its namespaces and the scratch workspace" {
	# The real sbx-ns, except that a broker-mode run signals it started and waits.
	printf '#!/bin/sh\ncase "$*" in *broker:*) echo $$ >"%s/pid.tmp" && mv "%s/pid.tmp" "%s/started"; exec sleep 60 ;; esac\nexec "%s/sbx-ns" "$@"\n' \
		"$scratch" "$scratch" "$scratch" "$SBX_BIN" >"$scratch/slow-ns"
	chmod 0755 "$scratch/slow-ns"
	local before pid
	before=$(leftovers)
	sbx-check proof --ns "$scratch/slow-ns" >"$scratch/out" 2>&1 &
	pid=$!
	wait_for '[ -e "$scratch/started" ]'
	run -0 testnets
	assert_line --regexp '^sbx-check-[0-9]+-h'
	kill -TERM "$pid"
	local rc=0
	wait "$pid" || rc=$?
	assert_equal "$rc" 143
	run -0 cat "$scratch/out"
	assert_output ""
	assert_equal "$(leftovers)" "$before"
	run -0 testnets
	assert_output ""
	run -1 pgrep -f "sbx-broker --listen /var/tmp/sbx-check\\."
	assert_output ""
}

@test "proof: SIGTERM halfway kills the chain, removes the scratch workspace and dies of the signal" {
	printf '#!/bin/sh\necho $$ >"%s/pid.tmp" && mv "%s/pid.tmp" "%s/started"\nexec sleep 60\n' \
		"$scratch" "$scratch" "$scratch" >"$scratch/slow-ns"
	chmod 0755 "$scratch/slow-ns"
	local before pid
	before=$(leftovers)
	sbx-check proof --ns "$scratch/slow-ns" >"$scratch/out" 2>&1 &
	pid=$!
	wait_for '[ -e "$scratch/started" ]'
	kill -TERM "$pid"
	local rc=0
	wait "$pid" || rc=$?
	assert_equal "$rc" 143
	run -0 cat "$scratch/out"
	assert_output ""
	assert_equal "$(leftovers)" "$before"
	run -1 kill -0 "$(cat "$scratch/started")"
}

#!/usr/bin/env bats
# sbx-check host names the isolation tiers sbx-ns can give this caller here: the full
# sandbox, the Landlock tier (only under a baseline saying "fallback": "landlock"), or
# none. ns-nouserns takes user namespaces away as a container's seccomp profile does;
# ns-nolandlock takes Landlock away.

load helpers

setup_file() {
	sbx_test_user
}

@test "host: both tiers here, as root and unprivileged" {
	local who
	for who in root user; do
		if [ "$who" = root ]; then
			run -101 --separate-stderr sbx-check host
		else
			run -101 --separate-stderr as_user sbx-check host
		fi
		assert_equal "$stderr" ""
		assert_line --regexp '^tiers +ok +full \(namespaces, a fresh root, Landlock ABI [1-9][0-9]*, seccomp\); the landlock tier would be used only where namespaces fail tiers=full,landlock$'
	done
}

@test "host: without user namespaces only the landlock tier is left; without Landlock too, none" {
	run -106 --separate-stderr as_user "$SBX_TESTBIN/ns-nouserns" "$SBX_BIN/sbx-check" host
	assert_equal "$stderr" ""
	assert_line --regexp '^tiers +ok +landlock only \(Landlock ABI [1-9][0-9]*, seccomp, no namespaces\): sbx-ns runs commands only under a baseline saying "fallback": "landlock", with a WARNING each time tiers=landlock$'
	run -106 --separate-stderr "$SBX_TESTBIN/ns-nolandlock" "$SBX_TESTBIN/ns-nouserns" "$SBX_BIN/sbx-check" host --json
	assert_output --partial '{"name":"tiers","class":"extra","status":"missing","detail":"none: no namespaces and no Landlock","fix":"see userns and landlock","tiers":"none"}'
}

@test "host --baseline: a baseline offering the landlock tier says so" {
	local scratch
	scratch=$(sbx_scratch)
	printf '{"sandbox":{"fallback":"landlock"}}\n' >"$scratch/tier.json"
	chmod 0644 "$scratch/tier.json"
	run -101 --separate-stderr sbx-check host --baseline "$scratch/tier.json"
	assert_equal "$stderr" ""
	assert_line "baseline           ok             $scratch/tier.json: the landlock tier: where user namespaces are unavailable, commands run without namespaces under Landlock and seccomp, with a WARNING (see tiers; prove it with \`sbx-check proof --tier landlock\`) unsafe_fallback=false fallback=landlock"
	rm -rf "$scratch"
}

# --- proof --tier landlock --------------------------------------------------------------

ws='/var/tmp/sbx-check\.[A-Za-z0-9]{6}'
# Scratch directories and /tmp targets a proof left behind.
leftovers() { find /var/tmp /tmp -maxdepth 1 -name 'sbx-check.*' | wc -l; }

# The lines every passing tier proof prints after its first, here (Landlock ABI 6+).
assert_tier_holds() {
	assert_line --regexp "^workspace-read +ok +read 38 bytes from $ws/ws/readme\$"
	assert_line --regexp "^workspace-write +ok +wrote $ws/ws/created\$"
	assert_line --regexp "^sibling-secret +ok +denied: open $ws/secret: Permission denied\$"
	assert_line 'env-write          unsupported    not kept in the landlock tier: sbx-ns runs it only with deny-write given up ("denyWrite": [] in the baseline and the request), as this proof does; to fix: the full sandbox keeps it'
	assert_line 'git-hook-write     unsupported    not kept in the landlock tier: sbx-ns runs it only with deny-write given up ("denyWrite": [] in the baseline and the request), as this proof does; to fix: the full sandbox keeps it'
	assert_line --regexp "^outside-write +ok +denied: open $ws/outside/escaped for writing: Permission denied\$"
	assert_line --regexp "^tmp-write +ok +denied: open /tmp/sbx-check\\.[A-Za-z0-9]{6}-escaped for writing: Permission denied\$"
	assert_line --regexp '^offline +ok +denied: socket\(AF_INET\): Operation not permitted$'
	assert_line --regexp '^signal-outside +ok +denied: kill [0-9]+ SIGUSR1: Operation not permitted$'
	assert_line --regexp '^abstract-outside +ok +denied: socket\(AF_UNIX\): Operation not permitted$'
	assert_line "result: 9 proven, 2 not proven (env-write, git-hook-write) (exit 0)"
	assert_equal "${#lines[@]}" 12
}

tier_ok='^landlock-tier +ok +sbx-ns ran the command in the landlock tier and said so \(WARNING\), Landlock ABI ([6-9]|[1-9][0-9]) \(TCP rules, signals and abstract sockets scoped\), seccomp, no namespaces; '

@test "proof --tier landlock: the tier holds, as root and unprivileged, the namespaces taken away by the proof" {
	local who before
	before=$(leftovers)
	for who in root user; do
		if [ "$who" = root ]; then
			run -0 --separate-stderr sbx-check proof --tier landlock
		else
			run -0 --separate-stderr as_user sbx-check proof --tier landlock
		fi
		assert_equal "$stderr" ""
		assert_line --index 0 --regexp "${tier_ok}user namespaces can be created here, so sbx-ns would not choose this tier by itself: the proof took them away from it with a seccomp filter, as a container's profile does abi=[0-9]+\$"
		assert_tier_holds
	done
	assert_equal "$(leftovers)" "$before"
}

@test "proof --tier landlock on a host that refuses user namespaces itself, unprivileged, and --json" {
	run -0 --separate-stderr as_user "$SBX_TESTBIN/ns-nouserns" "$SBX_BIN/sbx-check" proof --tier landlock
	assert_equal "$stderr" ""
	assert_line --index 0 --regexp "${tier_ok}this host refuses user namespaces \\(Operation not permitted\\) abi=[0-9]+\$"
	assert_tier_holds
	run -0 --separate-stderr sbx-check proof --tier landlock --json
	run -0 python3 -c 'import json, sys
d = json.load(sys.stdin)
print(d["code"], [(c["name"], c["class"], c["status"]) for c in d["checks"]])' <<<"$output"
	assert_output "0 [('landlock-tier', 'isolation', 'ok'), ('workspace-read', 'isolation', 'ok'), ('workspace-write', 'isolation', 'ok'), ('sibling-secret', 'isolation', 'ok'), ('env-write', 'extra', 'unsupported'), ('git-hook-write', 'extra', 'unsupported'), ('outside-write', 'isolation', 'ok'), ('tmp-write', 'isolation', 'ok'), ('offline', 'isolation', 'ok'), ('signal-outside', 'isolation', 'ok'), ('abstract-outside', 'isolation', 'ok')]"
}

@test "proof --tier landlock where a user namespace can be created but not used: said, and proven all the same" {
	run -0 --separate-stderr as_user "$SBX_TESTBIN/ns-nomountns" "$SBX_BIN/sbx-check" proof --tier landlock
	assert_equal "$stderr" ""
	assert_line --index 0 --regexp "${tier_ok}user namespaces can be created here \\(but a mount namespace inside fails: Operation not permitted\\), so sbx-ns would not choose this tier by itself: the proof took them away from it with a seccomp filter, as a container's profile does abi=[0-9]+\$"
	assert_tier_holds
}

@test "proof --tier landlock fails (107) against an unconfined stand-in, and against one that only claims the tier" {
	local before scratch
	scratch=$(sbx_scratch)
	before=$(leftovers)
	printf '#!/bin/sh\nwhile [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done\nshift\nexec "$@"\n' >"$scratch/fake-ns"
	# A liar: the tier's status line (an ABI below this kernel's, below 6) and WARNING, then
	# the command unconfined.
	printf '#!/bin/sh\necho "sbx-ns: WARNING: no user namespaces here" >&2\necho %s >&3\nwhile [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done\nshift\nexec "$@"\n' \
		"'{\"tool\":\"sbx-ns\",\"event\":\"started\",\"isolation\":\"landlock\",\"reason\":\"x\",\"landlock\":5}'" >"$scratch/liar-ns"
	chmod 0755 "$scratch/fake-ns" "$scratch/liar-ns"
	run -107 --separate-stderr as_user sbx-check proof --tier landlock --ns "$scratch/fake-ns"
	assert_equal "$stderr" ""
	assert_line --regexp "^landlock-tier +FAIL +sbx-ns did not say it ran the command in the landlock tier \\(no \"isolation\":\"landlock\" on its status fd; exit 0\\): read 38 bytes from $ws/ws/readme\$"
	assert_line --regexp "^workspace-read +FAIL +not in the landlock tier \\(no \"isolation\":\"landlock\" on sbx-ns's status fd\\): read 38 bytes from $ws/ws/readme\$"
	assert_line --regexp "^env-write +FAIL +allowed: wrote $ws/ws/\\.env\$"
	assert_line "result: a proof failed (exit 107)"
	run -107 --separate-stderr as_user sbx-check proof --tier landlock --ns "$scratch/liar-ns"
	assert_equal "$stderr" ""
	assert_line --regexp "^landlock-tier +FAIL +sbx-ns says it used Landlock ABI 5, but this kernel offers ABI [6-9]: read 38 bytes from $ws/ws/readme\$"
	assert_line --regexp "^workspace-read +ok +read 38 bytes from $ws/ws/readme\$"
	assert_line --regexp "^sibling-secret +FAIL +allowed: read 43 bytes from $ws/secret\$"
	assert_line --regexp "^env-write +FAIL +allowed: wrote $ws/ws/\\.env\$"
	assert_line --regexp "^git-hook-write +FAIL +allowed: wrote $ws/ws/\\.git/hooks/pre-commit\$"
	assert_line --regexp "^outside-write +FAIL +allowed: wrote $ws/outside/escaped\$"
	assert_line --regexp '^tmp-write +FAIL +allowed: wrote /tmp/sbx-check\.[A-Za-z0-9]{6}-escaped$'
	assert_line --regexp '^offline +FAIL +allowed: connected to 127\.0\.0\.1:[0-9]+$'
	assert_line --regexp '^signal-outside +FAIL +allowed: sent SIGUSR1 to [0-9]+$'
	assert_line --regexp '^abstract-outside +FAIL +allowed: connected to @sbx-check-[0-9]+-[A-Za-z0-9]{6}$'
	assert_line "result: a proof failed (exit 107)"
	assert_equal "$(leftovers)" "$before"
	rm -rf "$scratch"
}

@test "proof --tier without sbx-ns beside sbx-check: each tier's lines are unsupported (106)" {
	local scratch
	scratch=$(sbx_scratch)
	mkdir "$scratch/bin"
	cp "$SBX_BIN/sbx-check" "$scratch/bin/"
	run -106 --separate-stderr "$scratch/bin/sbx-check" proof --tier full
	assert_line "outside-write      unsupported    sbx-ns is not installed at $scratch/bin/sbx-ns; to fix: install sbx-ns beside sbx-check"
	refute_line --partial signal-outside
	assert_line --partial pids-limit
	run -106 --separate-stderr "$scratch/bin/sbx-check" proof --tier landlock
	assert_equal "$stderr" ""
	assert_line "signal-outside     unsupported    sbx-ns is not installed at $scratch/bin/sbx-ns; to fix: install sbx-ns beside sbx-check"
	refute_line --partial pids-limit
	assert_equal "${#lines[@]}" 11
	rm -rf "$scratch"
}

@test "proof --tier landlock without Landlock: the tier is unavailable (106)" {
	run -106 --separate-stderr "$SBX_TESTBIN/ns-nolandlock" "$SBX_TESTBIN/ns-nouserns" "$SBX_BIN/sbx-check" proof --tier landlock
	assert_equal "$stderr" ""
	assert_line --index 0 "landlock-tier      unsupported    sbx-ns refused the tier (exit 106): sbx-ns: fatal: unable to create namespaces (Operation not permitted) and unable to use the landlock tier the baseline allows: this kernel has no Landlock; to fix: see \`sbx-check host\` (tiers)"
	assert_line "result: isolation unavailable (exit 106)"
}

@test "proof --tier: empty, unknown, repeated, with limits or in another mode is a usage error" {
	run -100 --separate-stderr sbx-check proof --tier ""
	assert_equal "$stderr" "sbx-check: usage: --tier: unknown tier '' (full or landlock)"
	run -100 --separate-stderr sbx-check proof --tier Landlock
	assert_equal "$stderr" "sbx-check: usage: --tier: unknown tier 'Landlock' (full or landlock)"
	run -100 --separate-stderr sbx-check proof --tier
	assert_equal "$stderr" "sbx-check: usage: --tier needs a value"
	run -100 --separate-stderr sbx-check proof --tier landlock --tier landlock
	assert_equal "$stderr" "sbx-check: usage: --tier given twice"
	run -100 --separate-stderr sbx-check proof --tier full --tier=landlock
	assert_equal "$stderr" "sbx-check: usage: --tier given twice"
	run -100 --separate-stderr sbx-check proof --tier landlock --cgroup-root /sys/fs/cgroup
	assert_equal "$stderr" "sbx-check: usage: --tier landlock proves isolation only: prove --cgroup-root with the full proof"
	run -100 --separate-stderr sbx-check proof --quota-workspace /var/tmp --tier landlock
	assert_equal "$stderr" "sbx-check: usage: --tier landlock proves isolation only: prove --quota-workspace with the full proof"
	run -100 --separate-stderr sbx-check host --tier landlock
	assert_equal "$stderr" "sbx-check: usage: unknown option --tier"
	assert_output ""
}

@test "proof --tier landlock: SIGTERM while an attempt runs kills the process outside and removes the scratch workspace" {
	local scratch before pid outside rc=0
	scratch=$(sbx_scratch)
	before=$(leftovers)
	# Runs the command unconfined, but blocks at the signal attempt, recording its argv.
	printf '#!/bin/sh\ncase " $* " in *" signal "*) echo "$@" >"%s/args.tmp"; mv "%s/args.tmp" "%s/started"; exec sleep 60 ;; esac\nwhile [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done\nshift\nexec "$@"\n' \
		"$scratch" "$scratch" "$scratch" >"$scratch/slow-ns"
	chmod 0755 "$scratch/slow-ns"
	sbx-check proof --tier landlock --ns "$scratch/slow-ns" >"$scratch/out" 2>&1 &
	pid=$!
	wait_for '[ -e "$scratch/started" ]'
	outside=$(awk '{ print $NF }' "$scratch/started")
	run -0 ps -o user= -p "$outside"
	assert_output nobody
	kill -TERM "$pid"
	wait "$pid" || rc=$?
	assert_equal "$rc" 143
	run -0 cat "$scratch/out"
	assert_output ""
	run -1 kill -0 "$outside"
	assert_equal "$(leftovers)" "$before"
	rm -rf "$scratch"
}

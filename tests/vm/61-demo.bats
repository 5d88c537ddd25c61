#!/usr/bin/env bats
# The README's demo on a kernel that enforces everything: the same script
# that the development host can only partly confine, here with cgroup
# limits, so its fork bomb and memory hog are stopped by them.

load helpers/vm

@test "the demo runs its untrusted script with cgroup limits enforced, and nothing escapes" {
	run -0 --separate-stderr env SBX_BIN="$SBX_BIN" SBX_DEMO_CGROUP_ROOT="$SBX_VM_CGROUP" bash /sbx/demo/run.sh
	assert_line "   cgroup limits: enforced (--pids 64 --memory 128M, swap 0)"
	assert_line --regexp '^  write a file in the workspace +ALLOWED '
	assert_line --regexp '^  read ~/\.ssh/id_ed25519 +blocked '
	assert_line --regexp '^  write outside the workspace +blocked '
	assert_line --regexp '^  write \.git/hooks/pre-commit +blocked '
	assert_line --regexp '^  open a raw socket +blocked '
	assert_line --regexp '^  fork bomb \(up to 1000 processes\) +blocked '
	assert_line --regexp '^  eat 512 MiB of memory +blocked '
	assert_line "   nothing outside the workspace changed; .env and .git/hooks are intact"
}

#!/usr/bin/env bats
# The soak inside the VM (tests/soak/run.sh boots it with this one test):
# tests/soak/soak.bash writes its figures to the TAP stream as "# SOAK"
# lines and fails when a call was lost or an object leaked.

@test "soak: every call has its outcome, nothing is left behind" {
	bash /sbx/extra/soak.bash
}

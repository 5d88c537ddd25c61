#!/usr/bin/env bats
# The broker's units as the package installs them, checked by Debian 13's systemd 257:
# systemd-analyze verify accepts them and the service's exposure stays at most 2.0, as
# tests/85-systemd-units.bats shows with Debian 12's 252 on the host. The man pages the
# units' Documentation= names are checked there; this root has no man(1).

load helpers/vm

UNITS=/lib/systemd/system

@test "systemd 257's systemd-analyze verify accepts the installed units" {
	run -0 systemd-analyze --version
	assert_line --index 0 --regexp '^systemd 257 \(257\.[0-9]+-'
	run -0 systemd-analyze verify --man=no "$UNITS/sbx-broker@.service" "$UNITS/sbx-broker@.socket"
	assert_output ""
}

@test "systemd 257's systemd-analyze security --offline=true rates the service at most 2.0 (OK)" {
	local fig
	run -0 systemd-analyze security --offline=true --no-pager "$UNITS/sbx-broker@.service"
	fig=$(sed -n 's/^→ Overall exposure level for sbx-broker@[a-z_]*\.service: \([0-9]*\.[0-9]\) .*/\1/p' <<<"$output")
	[ -n "$fig" ] || fail "no exposure figure in: $output"
	echo "# systemd 257: sbx-broker@.service exposure $fig" >&3
	[ "${fig/./}" -le 20 ] || fail "exposure $fig is above 2.0: $output"
	assert_output --partial "$fig OK"
}

#!/usr/bin/env bats
# contrib/apparmor/sbx-ns: the profile that lets the installed sbx-ns create user
# namespaces where AppArmor restricts them (Ubuntu 23.10+), in the style of Ubuntu's
# profile for bwrap: `userns,` and unconfined otherwise. Debian 12's kernel has no such
# restriction and its apparmor_parser (3.0.8) predates the `userns` rule and abi/4.0
# (AppArmor 4.0): the parser checks everything else in the file, and the two 4.0 lines
# are pinned by their exact text.

load helpers

profile=$SBX_ROOT/contrib/apparmor/sbx-ns

# The profile without its two AppArmor 4.0 lines, for Debian's parser.
without_40() {
	sed -e '/^abi <abi\/4\.0>,$/d' -e '/^  userns,$/d' "$1"
}

@test "the profile grants userns to /usr/local/bin/sbx-ns, unconfined, and nothing else" {
	run -0 grep -Ev '^[[:space:]]*(#|$)' "$profile"
	assert_output 'abi <abi/4.0>,
include <tunables/global>
profile sbx-ns /usr/local/bin/sbx-ns flags=(unconfined) {
  userns,
  include if exists <local/sbx-ns>
}'
}

@test "Debian's apparmor_parser accepts the profile apart from its AppArmor 4.0 lines" {
	without_40 "$profile" >"$BATS_TEST_TMPDIR/p"
	run -0 --separate-stderr apparmor_parser -Q -K "$BATS_TEST_TMPDIR/p"
	refute_regex "$stderr" '[Ee]rror'
	# The same check fails on a broken profile: it can fail.
	sed 's/^}$//' "$BATS_TEST_TMPDIR/p" >"$BATS_TEST_TMPDIR/broken"
	run -1 --separate-stderr apparmor_parser -Q -K "$BATS_TEST_TMPDIR/broken"
	assert_regex "$stderr" "AppArmor parser error for $BATS_TEST_TMPDIR/broken"
}

@test "make install puts the profile with the installed path where AppArmor is, and only there" {
	local dest=$BATS_TEST_TMPDIR/dest
	mkdir -p "$BATS_TEST_TMPDIR/aa.d"
	run -0 make -C "$SBX_ROOT" --no-print-directory -s install DESTDIR="$dest" PREFIX=/opt/sbx \
		APPARMOR_D="$BATS_TEST_TMPDIR/aa.d"
	assert_line "installed $dest$BATS_TEST_TMPDIR/aa.d/sbx-ns; load it with: apparmor_parser -r $BATS_TEST_TMPDIR/aa.d/sbx-ns"
	run -0 grep '^profile' "$dest$BATS_TEST_TMPDIR/aa.d/sbx-ns"
	assert_output "profile sbx-ns /opt/sbx/bin/sbx-ns flags=(unconfined) {"
	without_40 "$dest$BATS_TEST_TMPDIR/aa.d/sbx-ns" >"$BATS_TEST_TMPDIR/p"
	run -0 apparmor_parser -Q -K "$BATS_TEST_TMPDIR/p"
	run -0 make -C "$SBX_ROOT" --no-print-directory -s install DESTDIR="$dest.2" PREFIX=/opt/sbx \
		APPARMOR_D="$BATS_TEST_TMPDIR/no-apparmor"
	assert_line "$BATS_TEST_TMPDIR/no-apparmor does not exist (no AppArmor): its sbx-ns profile is not installed"
	assert_not_exist "$dest.2$BATS_TEST_TMPDIR/no-apparmor"
}

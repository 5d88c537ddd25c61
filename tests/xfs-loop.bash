# A loop-mounted XFS image for the host suites that need project ids
# (tests/35-quota.bats, tests/46-quota-changes.bats): this host's kernel
# stores project ids and PROJINHERIT on it even though it does not enforce
# them. Loaded after helpers.

walk() { "$SBX_TESTBIN/quota-walk" "$@"; }
qa() { "$SBX_TESTBIN/quota-attr" "$@"; }

# xfs_loop_up NAME (from setup_file): a 320 MiB XFS image in a new
# directory /var/tmp/sbx-NAME.XXXXXX, mounted on its mnt/ (mode 0755); the
# directory's path is kept in $BATS_FILE_TMPDIR/dir. mkfs.xfs comes with
# the VM suite's packages: it is installed when only the host suite ran.
xfs_loop_up() {
	local d
	command -v mkfs.xfs >/dev/null || SBX_PACKAGES_EXTRA=xfsprogs "$SBX_ROOT/deps/packages.sh" test >&2
	d=$(mktemp -d "/var/tmp/sbx-$1.XXXXXX")
	chmod 0755 "$d"
	truncate -s 320M "$d/xfs.img"
	mkfs.xfs -q "$d/xfs.img"
	mkdir "$d/mnt"
	mount -o loop "$d/xfs.img" "$d/mnt"
	chmod 0755 "$d/mnt"
	echo "$d" >"$BATS_FILE_TMPDIR/dir"
}

# xfs_loop_down (from teardown_file): unmounts and removes what
# xfs_loop_up made.
xfs_loop_down() {
	local d
	d=$(cat "$BATS_FILE_TMPDIR/dir")
	umount -R "$d/mnt"
	rm -rf "$d"
}

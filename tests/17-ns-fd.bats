#!/usr/bin/env bats
# sbx-ns: binds by fd (the caller opened the object; the path it resolves to
# must still name it) and the launcher's integrity checks.

bats_require_minimum_version 1.5.0
load helpers
load ns


@test "--workspace-fd binds the directory the fd was opened on, at its path" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr ns_root --workspace-fd 3 --ro "$NS_DIR/bin" -- "$NS_ATT" cwd 3<"$ws"
	assert_output "cwd: $ws"
	run -0 --separate-stderr ns_user --workspace-fd 3 --ro "$NS_DIR/bin" -- "$NS_ATT" write "$ws/x" 3<"$ws"
	assert_output "write: ok"
	assert_file_exist "$ws/x"
}

@test "--ro-fd and --rw-fd bind a directory and a file the caller opened" {
	local ws ro rw
	ws=$(ns_ws)
	ro=$(ns_ws)
	rw=$(ns_ws)
	echo r > "$ro/f"
	touch "$rw/f"
	chown "$SBX_TEST_UID" "$rw/f"
	run -0 --separate-stderr ns_user --workspace "$ws" --ro "$NS_DIR/bin" --ro-fd 3 --rw-fd 4 -- \
		sh -c "cat $ro/f; $NS_ATT write $ro/g; $NS_ATT append $rw/f; ls $rw" 3<"$ro" 4<"$rw/f"
	assert_output "r
write: EROFS
append: ok
f"
}

@test "an fd whose path now names another object is refused as a race" {
	local ws d
	ws=$(ns_ws)
	d=$(ns_ws)
	exec 5<"$d"
	rmdir "$d"
	mkdir "$d"
	run -102 --separate-stderr ns_root --workspace "$ws" --ro-fd 5 -- true
	exec 5<&-
	assert_equal "$stderr" "sbx-ns: fatal: unable to bind fd 5: $d (deleted) no longer names the object the fd was opened on (race)"
}

@test "an fd whose path was covered by a mount is refused as a race" {
	local ws d other
	ws=$(ns_ws)
	d=$(ns_ws)
	other=$(ns_ws)
	run -102 --separate-stderr unshare -m sh -c \
		"exec 5<$d; mount --bind $other $d; exec sbx-ns --uid $SBX_TEST_UID --gid $SBX_TEST_GID --workspace $ws --rw-fd 5 -- true"
	assert_equal "$stderr" "sbx-ns: fatal: unable to bind fd 5: $d no longer names the object the fd was opened on (race)"
}

@test "a launcher copy inside the workspace refuses to run" {
	local ws
	ws=$(ns_ws)
	cp "$SBX_BIN/sbx-ns" "$ws/sbx-ns"
	chown "$SBX_TEST_UID" "$ws/sbx-ns"
	run -102 --separate-stderr as_user "$ws/sbx-ns" --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run: the executable $ws/sbx-ns lies inside the writable root $ws"
}

@test "a launcher inside a writable root reached through another mount is refused by identity" {
	local ws other
	ws=$(ns_ws)
	other=$(ns_ws)
	cp "$SBX_BIN/sbx-ns" "$ws/sbx-ns"
	run -102 --separate-stderr unshare -m sh -c \
		"mount --bind $ws $other && exec $other/sbx-ns --uid $SBX_TEST_UID --gid $SBX_TEST_GID --workspace $ws -- true"
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run: the executable $other/sbx-ns lies inside the writable root $ws"
}

@test "a launcher with two hard links, writable by group, or owned by someone else refuses to run" {
	local d
	d=$(ns_ws)
	chown 0:0 "$d"
	cp "$SBX_BIN/sbx-ns" "$d/sbx-ns"
	ln "$d/sbx-ns" "$d/alias"
	run -102 --separate-stderr "$d/sbx-ns" --uid 1 --gid 1 --workspace "$NS_WS" -- true
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run: the executable $d/sbx-ns has 2 hard links"
	rm "$d/alias"
	chmod 0775 "$d/sbx-ns"
	run -102 --separate-stderr "$d/sbx-ns" --uid 1 --gid 1 --workspace "$NS_WS" -- true
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run: the executable $d/sbx-ns is writable by group or others"
	chmod 0755 "$d/sbx-ns"
	chown 4242 "$d/sbx-ns"
	run -102 --separate-stderr as_user "$d/sbx-ns" --workspace "$NS_WS" -- true
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run: the executable $d/sbx-ns is owned by uid 4242, neither root nor the caller"
}

@test "a launcher owned by the caller outside every writable root runs" {
	local d
	d=$(ns_ws)
	cp "$SBX_BIN/sbx-ns" "$d/sbx-ns"
	chown "$SBX_TEST_UID" "$d/sbx-ns"
	run -0 --separate-stderr as_user "$d/sbx-ns" --workspace "$NS_WS" -- true
	assert_equal "$stderr" ""
}

#!/usr/bin/env bats
# sbx-ns's binds keep every flag the source mount carries and add
# read-only, nosuid and nodev to the whole tree, submounts included, by
# whichever mount interface this kernel offers. tests/check.sh runs this
# file (and every sbx-ns suite) a second time under ns-nomountapi, which
# hides the new mount API as on Linux < 5.12, so both paths are proven here;
# tests/vm/20-sbx-ns.bats proves the classic one on a real 5.10 kernel.

load helpers
load ns

setup_file() {
	ns_setup_file
}

teardown_file() {
	ns_teardown_file
}

# A tree with submounts of every flavour, in a private mount namespace:
# sub (tmpfs, noexec, noatime), rosub (tmpfs, read-only, strictatime), each
# holding a file and an executable. Then sbx-ns binds the tree with
# OPTION (as root or as the test user) and runs the attempt program on it.
in_tree() {
	local d=$1 who=$2 opt=$3
	shift 3
	local run=(sbx-ns --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID")
	[ "$who" = user ] && run=(setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" --init-groups
		--reset-env -- env PATH="$SBX_BIN:/usr/bin:/bin" sbx-ns)
	unshare -m --propagation private sh -c '
		d=$1; shift
		mount -t tmpfs -o noexec,noatime,mode=0777 sub "$d/sub" &&
		mount -t tmpfs -o strictatime,mode=0777 rosub "$d/rosub" &&
		for m in sub rosub; do echo data >"$d/$m/f" && cp /bin/true "$d/$m/true" && chmod 0777 "$d/$m/f"; done &&
		mount -o remount,ro "$d/rosub" && exec "$@"' sh "$d" "${run[@]}" --workspace "$NS_WS" \
		--ro "$NS_DIR/bin" "$opt" "$d" -- "$@"
}

tree() {
	local d
	d=$(ns_ws)
	mkdir "$d/sub" "$d/rosub"
	chmod 0777 "$d"
	echo "$d"
}

@test "a --ro tree: every submount read-only, nosuid and nodev, noexec and the atime mode kept" {
	local d who
	d=$(tree)
	for who in root user; do
		run -0 --separate-stderr in_tree "$d" "$who" --ro sh -c '
			for m in sub rosub; do echo x 2>/dev/null >"$1/$m/f" && echo "$m written"; done
			echo x 2>/dev/null >"$1/new" && echo "top written"
			"$1/sub/true" 2>/dev/null && echo "noexec lost"
			"$1/rosub/true" && echo "rosub runs"
			awk -v d="$1" '"'"'$5 == d || index($5, d "/") == 1 { print $5, $6 }'"'"' /proc/self/mountinfo' sh "$d"
		assert_equal "$stderr" ""
		assert_output "rosub runs
$d ro,nosuid,nodev,relatime
$d/sub ro,nosuid,nodev,noexec,noatime
$d/rosub ro,nosuid,nodev"
	done
}

@test "a --rw tree stays writable where the source is, and a read-only submount stays read-only" {
	local d who
	d=$(tree)
	for who in root user; do
		run -0 --separate-stderr in_tree "$d" "$who" --rw sh -c '
			echo "$0" >"$1/sub/f" && cat "$1/sub/f"
			echo x 2>/dev/null >"$1/rosub/f" || echo "rosub read-only"
			awk -v d="$1" '"'"'$5 == d || index($5, d "/") == 1 { print $5, $6 }'"'"' /proc/self/mountinfo' "$who" "$d"
		assert_equal "$stderr" ""
		assert_output "$who
rosub read-only
$d rw,nosuid,nodev,relatime
$d/sub rw,nosuid,nodev,noexec,noatime
$d/rosub ro,nosuid,nodev"
	done
}

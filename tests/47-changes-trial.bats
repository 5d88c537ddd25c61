#!/usr/bin/env bats
# A change set from real work, end to end: a git checkout holding GNU hello
# (Debian's source package, tests/work/manifest, cached under
# build/work-src) is built, edited and trimmed through sbx-ns --changes, a
# pre-commit hook planted on the way; sbx-changes lists and diffs it,
# refuses the hook and applies the rest; the workspace then holds exactly
# the kernel's merge of the change set without the hook. A second run's
# change set is discarded and the workspace is byte for byte as before.
# Once with sbx-ns as root dropping to the test user (root reviews and
# applies), once all as the test user.

bats_require_minimum_version 1.5.0
load helpers
load ns

setup_file() {
	ns_setup_file
	ns_work_src
}

# The command: a build, an edit, a deleted file and directory, and a hook
# planted in the checkout's .git (which has no hooks directory: sbx-ns
# protects what exists, the hook reaches the change set).
agent='cd hello-2.10 && ./configure >/dev/null && make >/dev/null 2>&1 && ./hello &&
	sed -i "s/Hello, world!/Hello, sbx!/" src/hello.c && rm -r contrib && rm README-dev &&
	mkdir ../.git/hooks && printf "#!/bin/sh\necho pwned\n" >../.git/hooks/pre-commit &&
	chmod 0755 ../.git/hooks/pre-commit'

# Everything the host sees of a tree: names, types, modes, owners, sizes,
# link targets and contents; .git/hooks left out.
tree() {
	(cd "$1" && find . -path ./.git/hooks -prune -o -printf '%p %y %m %u %s %l\n' | LC_ALL=C sort &&
		find . -path ./.git/hooks -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum)
}

# tree, plus times and inodes: byte for byte and object for object.
snap() {
	(cd "$1" && find . -printf '%p %y %m %u %s %T@ %C@ %i\n' | LC_ALL=C sort &&
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum)
}

# The kernel's merge of change set $2 over workspace $1 (what sbx-ns showed
# the command), read-only.
merged() {
	local mnt
	mnt=$(mktemp -d "$NS_DIR/mnt.XXXXXX")
	unshare -m sh -c 'mount -t overlay overlay -o "ro,lowerdir=$1/upper:$2,userxattr" "$3" &&
		'"$(declare -f tree)"'; tree "$3"' sh "$2" "$1" "$mnt"
	rmdir "$mnt"
}

# trial SANDBOX REVIEWER: sbx-ns run by SANDBOX (ns_root, ns_user),
# sbx-changes by REVIEWER ("" root, as_user the test user).
trial() {
	local mode=$1 by=$2 ws own chg chg2 want before n
	ws=$(ns_ws)
	ns_hello "$ws"
	# change sets in a directory of the test user's, who discards them
	own=$(ns_ws)
	chg=$(mktemp -d "$own/chg.XXXXXX")
	chmod 0700 "$chg"
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$ws" "$chg"
	as_user git -C "$ws" init -q --template=
	as_user git -C "$ws" add -A
	as_user git -C "$ws" -c user.name=sbx -c user.email=sbx@example.org commit -qm hello
	before=$(snap "$ws")

	run -0 --separate-stderr $mode --workspace "$ws" --changes "$chg" -- sh -c "$agent"
	assert_output "Hello, world!"
	assert_equal "$stderr" ""
	assert_equal "$(snap "$ws")" "$before"
	want=$(merged "$ws" "$chg")
	assert_equal "$(grep -c ' ./hello-2.10/hello$' <<<"$want")" 1

	run -0 --separate-stderr $by sbx-changes list --workspace "$ws" "$chg"
	assert_equal "$stderr" ""
	n=${#lines[@]}
	assert_line --index 0 --regexp '^\{"path":".git/hooks","change":"added","type":"dir",.*"base":\{"type":"none"\},"refused":"deny-write","protected":".git/hooks","after_apply":true\}$'
	assert_line --index 1 --regexp '^\{"path":".git/hooks/pre-commit","change":"added","type":"file","mode":"0755","size":21,.*"refused":"inside a refused directory"\}$'
	assert_line --regexp '^\{"path":"hello-2.10/README-dev","change":"deleted","base":\{"type":"file",'
	assert_line --regexp '^\{"path":"hello-2.10/contrib","change":"deleted","base":\{"type":"dir",'
	assert_line --regexp '^\{"path":"hello-2.10/src/hello.c","change":"modified","type":"file","mode":"0644","size":5325,"sha256":"'"$(sed 's/Hello, world!/Hello, sbx!/' "$ws/hello-2.10/src/hello.c" | sha256sum | cut -c1-64)"'",'
	assert_line --regexp '^\{"path":"hello-2.10/hello","change":"added","type":"file","mode":"0755",'
	assert_equal "$(grep -c '"refused"' <<<"$output")" 2

	run -0 --separate-stderr $by sbx-changes diff --workspace "$ws" "$chg"
	assert_equal "$stderr" ""
	assert_output --partial 'diff --git a/hello-2.10/src/hello.c b/hello-2.10/src/hello.c
--- a/hello-2.10/src/hello.c
+++ b/hello-2.10/src/hello.c
@@ -57,7 +57,7 @@
 #endif
 
   /* Having initialized gettext, get the default message. */
-  greeting_msg = _("Hello, world!");
+  greeting_msg = _("Hello, sbx!");
 '
	assert_output --partial 'diff --git a/.git/hooks/pre-commit b/.git/hooks/pre-commit
new file mode 100755
--- /dev/null
+++ b/.git/hooks/pre-commit
@@ -0,0 +1,2 @@
+#!/bin/sh
+echo pwned'

	# the hook refuses everything
	run -102 --separate-stderr $by sbx-changes apply --workspace "$ws" "$chg"
	assert_output ""
	assert_equal "$stderr" "sbx-changes: warning: refused '.git/hooks': deny-write: '.git/hooks' would be protected after apply
sbx-changes: warning: refused '.git/hooks/pre-commit': inside a refused directory
sbx-changes: fatal: nothing applied from '$chg': 2 paths refused; to fix: review them (sbx-changes list), discard the change set, or apply the rest with --skip-refused"
	assert_equal "$(snap "$ws")" "$before"

	# the rest lands, the hook stays out
	run -102 --separate-stderr $by sbx-changes apply --skip-refused --workspace "$ws" "$chg"
	assert_output '{"applied":"'"$chg"'","workspace":"'"$ws"'","written":'"$((n - 2))"',"already":0,"skipped":2,"kept":true}'
	assert_equal "$stderr" "sbx-changes: warning: skipped '.git/hooks': deny-write: '.git/hooks' would be protected after apply
sbx-changes: warning: skipped '.git/hooks/pre-commit': inside a refused directory
sbx-changes: fatal: applied '$chg' except 2 refused paths, kept in it; to fix: review them, then discard the change set"
	assert_equal "$(tree "$ws")" "$want"
	assert_file_not_exist "$ws/.git/hooks"
	run -0 "$ws/hello-2.10/hello"
	assert_output "Hello, world!"
	run -0 --separate-stderr $by sbx-changes discard "$chg"
	assert_output ""
	assert_equal "$stderr" ""
	assert_file_not_exist "$chg"

	# a second run's change set, discarded: the workspace as it was
	chg2=$(mktemp -d "$own/chg.XXXXXX")
	chmod 0700 "$chg2"
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$chg2"
	before=$(snap "$ws")
	run -0 $mode --workspace "$ws" --changes "$chg2" -- sh -c \
		'rm -r hello-2.10/src && echo x >>hello-2.10/NEWS && chmod 0600 hello-2.10/hello && echo n >new &&
		mkdir -p ro/in && echo f >ro/in/f && chmod 0555 ro ro/in'
	assert [ -c "$chg2/upper/hello-2.10/src" ]
	run -0 --separate-stderr $by sbx-changes discard "$chg2"
	assert_output ""
	assert_equal "$stderr" ""
	assert_file_not_exist "$chg2"
	assert_equal "$(snap "$ws")" "$before"
}

@test "trial: a git checkout of GNU hello built, edited and trimmed, a hook planted, through sbx-ns as root and sbx-changes" {
	trial ns_root ""
}

@test "trial: the same as the test user, sbx-ns and sbx-changes" {
	trial ns_user as_user
}

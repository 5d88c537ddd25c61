# Copies of the tree under test as git checkouts, for the suites that build
# or package it (08-version, 09-reproducible): `tree_clone DIR` clones
# $SBX_ROOT into DIR and, when the working tree differs from its HEAD,
# commits what the working tree holds (what .gitignore does not cover) on
# top, so that the copy is clean and holds exactly the files under test.

# git on the tree under test, whoever owns it (the Makefile does the same).
sgit() { git -c safe.directory="$SBX_ROOT" -c safe.directory="$SBX_ROOT/.git" -C "$SBX_ROOT" "$@"; }

tree_clone() {
	local dir=$1
	sgit clone -q --no-hardlinks "$SBX_ROOT" "$dir"
	git --git-dir="$dir/.git" --work-tree="$SBX_ROOT" add -A
	if ! git -C "$dir" diff --cached --quiet; then
		# Dated as HEAD: two copies of one working tree get one commit.
		GIT_AUTHOR_DATE=$(git -C "$dir" log -1 --format=%cI) \
			GIT_COMMITTER_DATE=$(git -C "$dir" log -1 --format=%cI) \
			git -C "$dir" -c user.name=sbx -c user.email=sbx@localhost \
			commit -q -m "the working tree under test"
	fi
	git -C "$dir" reset -q --hard
}

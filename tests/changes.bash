# Change sets for the tests, as sbx-ns --changes lays them out (the layout:
# man sbx-changes): a real overlay in a user namespace over the workspace,
# the changeset identity line, and a base line per path of upper/.

# mkcs WS DIR SCRIPT: run SCRIPT (sh) in the overlay's merged view of WS,
# with its writes in DIR/upper.
mkcs() {
	local ws=$1 dir=$2 script=$3 mnt p t
	mnt=$(mktemp -d "$BATS_TEST_TMPDIR/mnt.XXXXXX")
	mkdir -p "$dir/upper" "$dir/work"
	chmod 0700 "$dir"
	if [ ! -e "$dir/changeset" ]; then
		printf '{"version":1,"workspace":"%s","dev":%s,"ino":%s}\n' "$ws" \
			"$(stat -c %d "$ws")" "$(stat -c %i "$ws")" >"$dir/changeset"
		: >"$dir/base.jsonl"
		: >"$dir/lock"
	fi
	unshare -rm sh -c 'mount -t overlay overlay -o "lowerdir=$1,upperdir=$2/upper,workdir=$2/work,userxattr" "$3" && cd "$3" && eval "$4"' \
		sh "$ws" "$dir" "$mnt" "$script" || return 1
	cs_base "$ws" "$dir"
}

# One base line per path of DIR/upper that has none yet: the workspace's state.
cs_base() {
	local ws=$1 dir=$2 p t
	(cd "$dir/upper" && find . -mindepth 1 -printf '%P\n') | while IFS= read -r p; do
		grep -qF "\"path\":\"$p\"," "$dir/base.jsonl" && continue
		if [ -L "$ws/$p" ]; then t=symlink
		elif [ -f "$ws/$p" ]; then t=file
		elif [ -d "$ws/$p" ]; then t=dir
		elif [ -e "$ws/$p" ]; then t=other
		else printf '{"path":"%s","type":"none"}\n' "$p" >>"$dir/base.jsonl"; continue
		fi
		stat -c "{\"path\":\"$p\",\"type\":\"$t\",\"dev\":%d,\"ino\":%i,\"size\":%s,\"mtime_ns\":%.9Y,\"ctime_ns\":%.9Z}" \
			"$ws/$p" | sed 's/\([0-9]\)\.\([0-9]\{9\}\)/\1\2/g' >>"$dir/base.jsonl"
	done
}

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

# One base line per path of DIR/upper that has none yet: the workspace's
# state (lstat), JSON-escaped.
cs_base() {
	python3 - "$1" "$2" <<'PY'
import json, os, stat, sys
ws, d = sys.argv[1], sys.argv[2]
have = set()
with open(d + "/base.jsonl") as f:
    for l in f:
        have.add(json.loads(l)["path"])
out = open(d + "/base.jsonl", "a")
up = d + "/upper"
for root, dirs, files, _ in os.fwalk(up):
    for n in sorted(dirs + files):
        p = os.path.relpath(os.path.join(root, n), up)
        if p in have:
            continue
        try:
            st = os.lstat(os.path.join(ws, p))
        except OSError:
            out.write(json.dumps({"path": p, "type": "none"}, separators=(",", ":")) + "\n")
            continue
        t = ("file" if stat.S_ISREG(st.st_mode) else "dir" if stat.S_ISDIR(st.st_mode)
             else "symlink" if stat.S_ISLNK(st.st_mode) else "other")
        out.write(json.dumps({"path": p, "type": t, "dev": st.st_dev, "ino": st.st_ino, "size": st.st_size,
                              "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns}, separators=(",", ":")) + "\n")
PY
}

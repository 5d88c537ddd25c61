#!/usr/bin/env bats
# sbx-ns --dry-run: the plan as one JSON document, every refusal of a real
# run, and nothing created, recorded or run.

bats_require_minimum_version 1.5.0
load helpers
load ns


setup() {
	ws=$(ns_ws)
	mkdir -p "$ws/.git/hooks"
	echo "KEY=1" >"$ws/.env"
}

# The tree of the workspace, with identities and times: what a dry run
# must leave as it was.
tree_of() {
	find "$1" -printf '%p %i %y %m %U %T@\n' | sort
}

@test "the plan of a small run is exactly this document" {
	local ll
	run -0 --separate-stderr ns_root --workspace "$ws" --runtime none --ro "$NS_DIR/bin" \
		--setenv A=1 --timeout 7 --net loopback --dry-run -- "$NS_ATT" x
	assert_equal "$stderr" ""
	# The one value that depends on the kernel: the Landlock ABI, as
	# sbx-check host reports it.
	ll=$(printf '%s' "$output" | python3 -c 'import json,sys; print(json.load(sys.stdin)["landlock"]["abi"])')
	python3 - "$output" "$ws" "$NS_DIR/bin" "$NS_ATT" "$SBX_TEST_UID" "$SBX_TEST_GID" "$ll" <<'EOF'
import json, os, sys
out, ws, bindir, att, uid, gid, ll = sys.argv[1:]
assert "\n" not in out, "one line"
doc = json.loads(out)
def ident(p):
    st = os.lstat(p)
    return {"dev": st.st_dev, "ino": st.st_ino}
def fixed(kind, dest, flags):
    return {"kind": kind, "destination": dest, "flags": flags}
def mkdir(dest, mode):
    return {"kind": "dir", "destination": dest, "mode": mode}
want = {
    "tool": "sbx-ns", "event": "plan",
    "argv": [att, "x"], "cwd": ws,
    "env": ["PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp/home", "TMPDIR=/tmp",
            "XDG_CACHE_HOME=/tmp/home/.cache", "XDG_CONFIG_HOME=/tmp/home/.config", "A=1"],
    "uid": int(uid), "gid": int(gid),
    "mounts": [
        fixed("tmpfs", "/", "nosuid,nodev,mode=0755"),
        mkdir("/proc", "0555"), mkdir("/dev", "0755"), mkdir("/tmp", "1777"),
        dict(fixed("proc", "/proc", "nosuid,nodev,noexec"), data=["hidepid=invisible", "hidepid=2", ""]),
        fixed("tmpfs", "/dev", "nosuid,noexec,mode=0755"),
    ] + [{"kind": "device", "source": "/dev/" + n, "destination": "/dev/" + n, "flags": "bind"}
         for n in ("null", "zero", "full", "random", "urandom", "tty")] + [
        mkdir("/dev/pts", "0755"), mkdir("/dev/shm", "1777"),
        fixed("devpts", "/dev/pts", "nosuid,noexec,newinstance,ptmxmode=0666,mode=620"),
    ] + [{"kind": "symlink", "source": t, "destination": "/dev/" + n}
         for t, n in (("pts/ptmx", "ptmx"), ("/proc/self/fd", "fd"), ("/proc/self/fd/0", "stdin"),
                      ("/proc/self/fd/1", "stdout"), ("/proc/self/fd/2", "stderr"))] + [
        fixed("tmpfs", "/dev/shm", "nosuid,nodev,mode=1777"),
        fixed("tmpfs", "/tmp", "nosuid,nodev,mode=1777"),
        dict({"kind": "workspace", "option": "--workspace", "source": ws, "destination": ws,
              "flags": "rw,nosuid,nodev"}, **ident(ws)),
        dict({"kind": "ro", "option": "--ro", "source": bindir, "destination": bindir,
              "flags": "ro,nosuid,nodev"}, **ident(bindir)),
        dict({"kind": "deny-write", "destination": ws + "/.env", "op": "read-only",
              "flags": "bind,ro,nosuid,nodev"}, **ident(ws + "/.env")),
        dict({"kind": "deny-write", "destination": ws + "/.git", "op": "pin", "flags": "bind"},
             **ident(ws + "/.git")),
        dict({"kind": "deny-write", "destination": ws + "/.git/hooks", "op": "read-only",
              "flags": "bind,ro,nosuid,nodev"}, **ident(ws + "/.git/hooks")),
        {"kind": "home", "destination": "/tmp/home", "mode": "0700", "uid": int(uid), "gid": int(gid)},
        {"kind": "remount", "destination": "/dev", "flags": "ro"},
        {"kind": "remount", "destination": "/", "flags": "ro"},
    ],
    "deny_write": {
        "globs": [".env", ".env.*", ".git/config", ".git/config.worktree", ".git/hooks/**",
                  ".git/worktrees/*/config.worktree", ".git/modules/**/config",
                  ".git/modules/**/hooks/**"],
        "operations": [
            dict({"op": "read-only", "path": ws + "/.env"}, **ident(ws + "/.env")),
            dict({"op": "pin", "path": ws + "/.git"}, **ident(ws + "/.git")),
            dict({"op": "read-only", "path": ws + "/.git/hooks"}, **ident(ws + "/.git/hooks")),
        ],
    },
    "net": {"mode": "loopback"},
    "seccomp": {"filter": "open", "denials": "notify"},
    "landlock": {"abi": int(ll), "required": False},
    "mount_api": doc["mount_api"],
    "timeout_ms": 7000, "grant_checked": False, "policy": False,
    # the file argv[0] resolves to, hashed: a plan grant binds it
    "program": dict({"path": att, "size": os.stat(att).st_size,
                     "sha256": __import__("hashlib").sha256(open(att, "rb").read()).hexdigest()},
                    **ident(att)),
}
assert doc["mount_api"] in ("new", "classic"), doc["mount_api"]
assert doc == want, json.dumps(doc, indent=1) + "\n!=\n" + json.dumps(want, indent=1)
assert list(doc) == list(want), list(doc)
EOF
	# The same run as the test user plans the same command.
	run -0 --separate-stderr ns_user --workspace "$ws" --runtime none --ro "$NS_DIR/bin" \
		--setenv A=1 --timeout 7 --net loopback --dry-run -- "$NS_ATT" x
	printf '%s' "$output" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["uid"] == '"$SBX_TEST_UID"' and d["cwd"] == "'"$ws"'", d'
}

@test "a real run makes the plan's mounts and no other, in the plan's order, with the plan's flags" {
	run -0 --separate-stderr ns_root --workspace "$ws" --ro "$NS_DIR/bin" --dry-run -- cat /proc/self/mountinfo
	printf '%s' "$output" >"$ws.plan"
	run -0 --separate-stderr ns_root --workspace "$ws" --ro "$NS_DIR/bin" -- cat /proc/self/mountinfo
	assert_equal "$stderr" ""
	printf '%s\n' "$output" >"$ws.mountinfo"
	python3 - "$ws.plan" "$ws.mountinfo" <<'EOF'
import json, sys
plan = json.load(open(sys.argv[1]))["mounts"]
got = []
for line in open(sys.argv[2]):
    f = line.split()
    got.append((f[4].encode().decode("unicode_escape"), set(f[5].split(","))))
makes = {"tmpfs", "proc", "devpts", "device", "runtime", "ro", "rw", "workspace", "bind", "scratch",
         "resolv.conf", "deny-write"}
want, binds = [], []
for m in plan:
    flags = set(m.get("flags", "").split(",")) & {"ro", "nosuid", "nodev", "noexec"}
    if m["kind"] == "remount":
        [w for w in want if w[0] == m["destination"]][-1][1].add("ro")
    elif m["kind"] in makes:
        want.append((m["destination"], flags))
        if m["kind"] in ("runtime", "ro", "rw", "workspace", "bind", "scratch"):
            binds.append(m["destination"])
planned = {w[0] for w in want}
def under_bind(p):
    return any(p.startswith(b.rstrip("/") + "/") for b in binds)
# A recursive bind brings the host's submounts below it (the runtime's /etc).
seen = [g for g in got if g[0] in planned or not under_bind(g[0])]
assert [g[0] for g in seen] == [w[0] for w in want], ([g[0] for g in seen], [w[0] for w in want])
for (path, opts), (_, flags) in zip(seen, want):
    assert flags <= opts, (path, flags, opts)
kinds = {m["kind"] for m in plan}
assert {"device", "deny-write", "remount"} <= kinds, kinds
EOF
}

@test "a dry run creates nothing: no scratch directories, no deny-write record, workspace unchanged" {
	local rt="$NS_DIR/rt.$BATS_TEST_NUMBER" before
	mkdir -m 0700 "$rt"
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$rt"
	before=$(tree_of "$ws")
	run -0 --separate-stderr as_user env XDG_RUNTIME_DIR="$rt" sbx-ns --workspace "$ws" \
		--tmp-in-workspace --dry-run -- true
	assert_equal "$stderr" ""
	assert_equal "$(tree_of "$ws")" "$before"
	assert_equal "$(ls -A "$rt")" ""
	printf '%s' "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
m = [x for x in d["mounts"] if x["kind"] == "scratch"]
assert [(x["destination"], x.get("create")) for x in m] == [("/tmp", True), ("/dev/shm", True)], m
# after /dev is made, before the other roots; no tmpfs of its own
assert d["mounts"][19]["destination"] == "/dev/stderr" and d["mounts"][20:22] == m, d["mounts"]
assert not any(x["destination"] in ("/tmp", "/dev/shm") and x["kind"] == "tmpfs" for x in d["mounts"])'
	# A real run makes both; the next plan shows them with their identity.
	run -0 --separate-stderr as_user env XDG_RUNTIME_DIR="$rt" sbx-ns --workspace "$ws" \
		--tmp-in-workspace -- true
	before=$(tree_of "$ws")
	run -0 --separate-stderr as_user env XDG_RUNTIME_DIR="$rt" sbx-ns --workspace "$ws" \
		--tmp-in-workspace --dry-run -- true
	assert_equal "$(tree_of "$ws")" "$before"
	printf '%s' "$output" | python3 -c '
import json, os, sys
d = json.load(sys.stdin)
st = os.lstat(sys.argv[1] + "/.sbx-tmp/tmp")
assert d["mounts"][20]["ino"] == st.st_ino and "create" not in d["mounts"][20], d["mounts"][20]' "$ws"
}

@test "a dry run refuses as a real run: the --rw alias of the workspace, protected paths, a tampered grant, a linked .sbx-tmp" {
	local a="$NS_DIR/alias.$BATS_TEST_NUMBER" key="$NS_DIR/key.$BATS_TEST_NUMBER" dry
	mkdir -p "$a" "$ws/keys"
	head -c 32 /dev/urandom >"$key"
	chmod 0600 "$key"
	for dry in "" --dry-run; do
		run -100 --separate-stderr unshare -m sh -c "mount --bind $ws $a && exec sbx-ns --uid $SBX_TEST_UID --gid $SBX_TEST_GID --workspace $ws --rw $a $dry -- true"
		assert_output ""
		assert_equal "$stderr" "sbx-ns: usage: --rw: invalid path '$a': overlaps the workspace $ws (a writable second view of it; use --ro)"
		run -102 --separate-stderr ns_root --workspace "$ws" --protect "$ws/keys" $dry -- true
		assert_output ""
		assert_equal "$stderr" "sbx-ns: fatal: refusing to start: protected path $ws/keys is writable through --workspace $ws"
		sbx-check grant --kind argv --key "$key" --cwd "$ws" --env A=1 -- true >"$ws.grant"
		run -102 --separate-stderr ns_root --workspace "$ws" --grant-fd 3 --grant-key "$key" $dry -- true 3<"$ws.grant" </dev/null
		assert_output ""
		assert_equal "$stderr" "sbx-ns: fatal: grant refused: env differs from the grant"
		ln -s "$NS_DIR" "$ws/.sbx-tmp"
		run -102 --separate-stderr ns_root --workspace "$ws" --tmp-in-workspace $dry -- true
		assert_equal "$stderr" "sbx-ns: fatal: unable to use $ws/.sbx-tmp for /tmp: not a directory"
		rm "$ws/.sbx-tmp"
	done
	assert_equal "$(cat "$ws/.env")" "KEY=1"
}

@test "--dry-run: bad input is refused as usage, a status fd gets the exit line" {
	run -100 --separate-stderr ns_root --workspace "$ws" --dry-run --dry-run -- true
	assert_output ""
	assert_equal "$stderr" "sbx-ns: usage: --dry-run given twice"
	run -100 --separate-stderr ns_root --workspace "$ws" --dry-run --print-policy -- true
	assert_equal "$stderr" "sbx-ns: usage: --print-policy and --dry-run are exclusive"
	run -100 --separate-stderr ns_root --workspace "$ws" --dry-run
	assert_equal "$stderr" "sbx-ns: usage: missing program"
	run -100 --separate-stderr ns_root --workspace "$ws" --dry-run=1 -- true
	assert_equal "$stderr" "sbx-ns: usage: --dry-run takes no value"
	run -0 --separate-stderr ns_fd5 ns_root --workspace "$ws" --status-fd 5 --dry-run -- true
	assert_equal "${lines[1]}" '{"tool":"sbx-ns","event":"exit"'"$SBX_VER"',"code":0,"dry_run":true}'
	assert_equal "${#lines[@]}" 2
}

@test "sbx-check grant --plan: a grant for a plan runs that plan; a tampered plan's grant is refused" {
	local key="$NS_DIR/key.$BATS_TEST_NUMBER" run_=(--workspace "$ws" --setenv A=1 --timeout 9)
	head -c 32 /dev/urandom >"$key"
	chmod 0600 "$key"
	ns_root "${run_[@]}" --dry-run -- sh -c 'echo "$A"' >"$ws.plan"
	run -0 --separate-stderr sbx-check grant --key "$key" --plan "$ws.plan"
	printf '%s\n' "$output" >"$ws.grant"
	run -0 --separate-stderr ns_root "${run_[@]}" --grant-fd 3 --grant-key "$key" -- sh -c 'echo "$A"' 3<"$ws.grant" </dev/null
	assert_output "1"
	assert_equal "$stderr" ""
	# The same grant from the plan on an fd.
	run -0 --separate-stderr sbx-check grant --key "$key" --plan-fd 3 3<"$ws.plan"
	assert_equal "$output" "$(cat "$ws.grant")"
	# The plan's environment changed by one byte: the real run refuses.
	sed 's/"A=1"/"A=2"/' "$ws.plan" >"$ws.tampered"
	sbx-check grant --key "$key" --plan "$ws.tampered" >"$ws.grant2"
	run -102 --separate-stderr ns_root "${run_[@]}" --grant-fd 3 --grant-key "$key" -- sh -c 'echo "$A"' 3<"$ws.grant2" </dev/null
	assert_output ""
	assert_equal "$stderr" "sbx-ns: fatal: grant refused: env differs from the grant"
	# The plan of an unprivileged caller, granted and run by that caller.
	as_user sbx-ns "${run_[@]}" --dry-run -- sh -c 'echo "$A"' >"$ws.uplan"
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$key"
	as_user sbx-check grant --key "$key" --plan "$ws.uplan" >"$ws.ugrant"
	run -0 --separate-stderr as_user sbx-ns "${run_[@]}" --grant-fd 3 --grant-key "$key" -- sh -c 'echo "$A"' 3<"$ws.ugrant" </dev/null
	assert_output "1"
}

@test "sbx-check grant --plan refuses malformed, incomplete, huge and repeated plans" {
	local key="$NS_DIR/key.$BATS_TEST_NUMBER" d="$NS_DIR/plans.$BATS_TEST_NUMBER" G
	head -c 32 /dev/urandom >"$key"
	chmod 0600 "$key"
	mkdir -p "$d"
	ns_root --workspace "$ws" --dry-run -- true >"$d/ok"
	echo '{"tool":' >"$d/cut"
	echo '{"tool":"sbx-ns","event":"plan","argv":["true"],"cwd":"/w","timeout_ms":0}' >"$d/noenv"
	echo '{"tool":"sbx-ns","event":"plan","tool":"x"}' >"$d/dupkey"
	echo '{"tool":"sbx-ns","event":"exit","code":0}' >"$d/other"
	echo '{"tool":"sbx-ns","event":"plan","argv":["true"],"cwd":"/w","env":["A=1","A=2"],"timeout_ms":0}' >"$d/dupenv"
	echo '{"tool":"sbx-ns","event":"plan","argv":["true"],"cwd":"w","env":[],"timeout_ms":0}' >"$d/relcwd"
	echo '{"tool":"sbx-ns","event":"plan","argv":[],"cwd":"/w","env":[],"timeout_ms":0}' >"$d/noargv"
	echo '{"tool":"sbx-ns","event":"plan","argv":["true"],"cwd":"/w","env":["1A=x"],"timeout_ms":0}' >"$d/badname"
	echo '{"tool":"sbx-ns","event":"plan","argv":["true"],"cwd":"/w","env":[],"timeout_ms":-1}' >"$d/negtime"
	python3 -c 'print("{\"a\":\"" + "x" * (1 << 20) + "\"}")' >"$d/huge"
	ln -s "$d/ok" "$d/link"
	G=(sbx-check grant --key "$key")
	bad() {
		local want=$1
		shift
		run -100 --separate-stderr "${G[@]}" "$@"
		assert_output ""
		assert_equal "$stderr" "sbx-check: usage: $want"
	}
	bad "--plan: $d/cut: not JSON: unexpected token near end of file (line 2)" --plan "$d/cut"
	bad "--plan: $d/noenv: no \"env\" list" --plan "$d/noenv"
	bad "--plan: $d/dupkey: not JSON: duplicate object key near '\"tool\"' (line 1)" --plan "$d/dupkey"
	bad "--plan: $d/other: not a plan of sbx-ns --dry-run" --plan "$d/other"
	bad "--plan: variable A given twice" --plan "$d/dupenv"
	bad "--plan: invalid directory 'w': not absolute" --plan "$d/relcwd"
	bad "--plan: $d/noargv: empty \"argv\" list" --plan "$d/noargv"
	bad "--plan: invalid variable '1A=x': bad name" --plan "$d/badname"
	bad "--plan: $d/negtime: \"timeout_ms\" is not a timeout" --plan "$d/negtime"
	bad "--plan: $d/huge: larger than 1048576 bytes" --plan "$d/huge"
	# A writer that never stops: the read is bounded, not endless.
	bad "--plan-fd: fd 3: larger than 1048576 bytes" --plan-fd 3 3< <(yes)
	bad "--plan given twice" --plan "$d/ok" --plan "$d/ok"
	bad "--plan and --plan-fd are exclusive" --plan "$d/ok" --plan-fd 3 3<"$d/ok"
	bad "--plan and --env are exclusive (the plan gives argv, cwd, env and timeout)" --plan "$d/ok" --env A=1
	bad "--plan and --cwd are exclusive (the plan gives argv, cwd, env and timeout)" --cwd / --plan "$d/ok"
	bad "--plan: the program comes from the plan" --plan "$d/ok" -- true
	bad "--plan: invalid path 'ok': not absolute" --plan ok
	bad "--plan: invalid path '': empty" --plan ""
	bad "--plan: '$d/link' is a symlink" --plan "$d/link"
	bad "--plan: '$d' is not a regular file" --plan "$d"
	bad "--plan-fd: invalid fd '0': 0, 1 and 2 are stdio" --plan-fd 0
}

@test "the plan of a broker run: port, proxy URL, the broker filter and the proxy variables; its grant runs it" {
	local sock="$NS_DIR/b.$BATS_TEST_NUMBER.sock" rdy="$NS_DIR/b.$BATS_TEST_NUMBER.ready" fd pid
	local key="$NS_DIR/key.$BATS_TEST_NUMBER"
	head -c 32 /dev/urandom >"$key"
	chmod 0600 "$key"
	mkfifo "$rdy"
	exec {fd}<>"$rdy"
	sbx-broker --listen "$sock" --ready-fd 3 --allow-host origin.test 3>"$rdy" </dev/null >/dev/null 2>&1 &
	pid=$!
	read -r -t 10 -u "$fd" _
	exec {fd}<&-
	run -0 --separate-stderr ns_root --workspace "$ws" --net "broker:$sock,port=3130" --dry-run -- true
	printf '%s' "$output" >"$ws.plan"
	python3 - "$ws.plan" "$sock" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["net"] == {"mode": "broker", "port": 3130, "proxy": "http://127.0.0.1:3130", "broker": sys.argv[2]}, d["net"]
assert d["seccomp"] == {"filter": "broker", "denials": "notify"}, d["seccomp"]
proxy = [e for e in d["env"] if "PROXY" in e.upper()]
assert proxy == ["HTTP_PROXY=http://127.0.0.1:3130", "HTTPS_PROXY=http://127.0.0.1:3130",
                 "http_proxy=http://127.0.0.1:3130", "https_proxy=http://127.0.0.1:3130",
                 "ALL_PROXY=http://127.0.0.1:3130"], proxy
PY
	sbx-check grant --key "$key" --plan "$ws.plan" >"$ws.grant"
	run -0 --separate-stderr ns_root --workspace "$ws" --net "broker:$sock,port=3130" \
		--grant-fd 3 --grant-key "$key" -- true 3<"$ws.grant" </dev/null
	assert_equal "$stderr" ""
	kill "$pid"
	wait "$pid" || true
}

#!/usr/bin/env bats
# sbx-changes: the review, the apply and the discard of a change set, each
# made by a real overlay over a workspace (tests/changes.bash), and the
# attacks on them: names, links, sizes, kills, a full disk, edits on the host.

bats_require_minimum_version 1.5.0
load helpers
load changes

C=sbx-changes

setup() {
	ws=$BATS_TEST_TMPDIR/ws
	cs=$BATS_TEST_TMPDIR/cs
	mkdir -p "$ws/src" "$ws/.git/hooks"
	printf 'one\ntwo\nthree\n' >"$ws/src/a.c"
	echo keep >"$ws/keep"
	echo old >"$ws/gone"
	echo git >"$ws/.git/HEAD"
}

teardown() {
	local m
	for m in "$BATS_TEST_TMPDIR/small" "$BATS_TEST_TMPDIR/p/cs" "$BATS_TEST_TMPDIR/p" "$cs"; do
		mountpoint -q "$m" && umount "$m"
	done
	return 0
}

agent='printf "one\nTWO\nthree\n" >src/a.c; rm gone; echo new >src/b.c
	echo "#!/bin/sh" >.git/hooks/pre-commit; echo SECRET=1 >.env'

@test "usage: subcommands, DIR and options are checked before anything is read" {
	run -100 --separate-stderr $C
	assert_equal "$stderr" "$C: usage: missing subcommand (list, diff, apply or discard)"
	run -100 --separate-stderr $C show /x
	assert_equal "$stderr" "$C: usage: unknown subcommand 'show' (list, diff, apply or discard)"
	run -100 --separate-stderr $C list --workspace /w
	assert_equal "$stderr" "$C: usage: list: missing the change set DIR"
	run -100 --separate-stderr $C list /d
	assert_equal "$stderr" "$C: usage: list: missing --workspace WS"
	run -100 --separate-stderr $C list --workspace /w rel
	assert_equal "$stderr" "$C: usage: DIR: invalid path 'rel': not absolute"
	run -100 --separate-stderr $C list --workspace /w ''
	assert_equal "$stderr" "$C: usage: DIR: invalid path '': empty"
	run -100 --separate-stderr $C apply --workspace /w/../etc /d
	assert_equal "$stderr" "$C: usage: --workspace: invalid path '/w/../etc': '.' or '..' component"
	run -100 --separate-stderr $C list --workspace /w --workspace /v /d
	assert_equal "$stderr" "$C: usage: --workspace given twice"
	run -100 --separate-stderr $C diff --skip-refused --workspace /w /d
	assert_equal "$stderr" "$C: usage: diff: --skip-refused is an option of apply only"
	run -100 --separate-stderr $C discard --workspace /w /d
	assert_equal "$stderr" "$C: usage: discard: --workspace is not an option of discard"
	run -100 --separate-stderr $C discard /d /e
	assert_equal "$stderr" "$C: usage: discard: one change set DIR only, not also '/e'"
	run -100 --separate-stderr $C list --workspace /w --deny-write '' /d
	assert_equal "$stderr" "$C: usage: --deny-write: invalid glob '': empty"
	run -100 --separate-stderr $C list --workspace /w --deny-write /etc/x /d
	assert_equal "$stderr" "$C: usage: --deny-write: invalid glob '/etc/x': absolute (globs are relative to the workspace)"
	run -100 --separate-stderr $C apply --workspace /w --deny-write a//../b/ /d
	assert_equal "$stderr" "$C: usage: --deny-write: invalid glob 'a/../b': '.' and '..' are not allowed"
	run -100 --separate-stderr $C diff --workspace /w --deny-write 'a/b**' /d
	assert_equal "$stderr" "$C: usage: --deny-write: invalid glob 'a/b**': '**' must be a whole component"
	run -100 --separate-stderr $C list --workspace /w --deny-write "$(printf 'a\033b')" /d
	assert_equal "$stderr" "$C: usage: --deny-write: invalid glob 'a\x1bb': control character"
	run -100 --separate-stderr $C discard --deny-write x /d
	assert_equal "$stderr" "$C: usage: discard: --deny-write is not an option of discard"
}

@test "list: one JSON line per path, kinds, sha256, base identity and what apply refuses" {
	mkcs "$ws" "$cs" "$agent"
	run -0 --separate-stderr $C list --workspace "$ws" "$cs"
	assert_equal "${#lines[@]}" 5
	assert_line --index 0 --regexp '^\{"path":".env","change":"added","type":"file","mode":"0644","size":9,"sha256":"[0-9a-f]{64}","base":\{"type":"none"\},"refused":"deny-write","protected":".env","after_apply":true\}$'
	assert_line --index 1 --regexp '^\{"path":".git/hooks/pre-commit","change":"added",.*"refused":"deny-write","protected":".git/hooks"\}$'
	assert_line --index 2 --regexp '^\{"path":"gone","change":"deleted","base":\{"type":"file","dev":[0-9]+,"ino":[0-9]+,"size":4,"mtime_ns":[0-9]+,"ctime_ns":[0-9]+\}\}$'
	assert_line --index 3 --regexp '^\{"path":"src/a.c","change":"modified","type":"file","mode":"0644","size":14,"sha256":"'"$(printf 'one\nTWO\nthree\n' | sha256sum | cut -c1-64)"'","base":\{"type":"file",'
	assert_line --index 4 --regexp '^\{"path":"src/b.c","change":"added",'
	# overlay's internals never show
	refute_output --partial overlay
}

@test "diff: unified like git diff --no-index, a binary file named, not dumped" {
	mkcs "$ws" "$cs" 'printf "one\nTWO\nthree\n" >src/a.c; rm gone; printf "\000\001" >bin'
	run -0 --separate-stderr $C diff --workspace "$ws" "$cs"
	assert_output "diff --git a/bin b/bin
new file mode 100644
Binary files /dev/null and b/bin differ
diff --git a/gone b/gone
deleted file mode 100644
--- a/gone
+++ /dev/null
@@ -1 +0,0 @@
-old
diff --git a/src/a.c b/src/a.c
--- a/src/a.c
+++ b/src/a.c
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three"
}

@test "apply: a planted hook or .env refuses the whole change set (102), nothing applied" {
	mkcs "$ws" "$cs" "$agent"
	run -102 --separate-stderr $C apply --workspace "$ws" "$cs"
	assert_output ""
	assert_equal "$stderr" "$C: warning: refused '.env': deny-write: '.env' would be protected after apply
$C: warning: refused '.git/hooks/pre-commit': deny-write: '.git/hooks' is protected
$C: fatal: nothing applied from '$cs': 2 paths refused; to fix: review them (sbx-changes list), discard the change set, or apply the rest with --skip-refused"
	assert_equal "$(cat "$ws/src/a.c")" "$(printf 'one\ntwo\nthree')"
	assert_file_exist "$ws/gone"
	assert_file_not_exist "$ws/src/b.c"
	assert_file_not_exist "$ws/.env"
}

@test "apply --skip-refused: the legitimate edits land, the hook is reported and kept out (102)" {
	mkcs "$ws" "$cs" "$agent"
	run -102 --separate-stderr $C apply --skip-refused --workspace "$ws" "$cs"
	assert_output '{"applied":"'"$cs"'","workspace":"'"$ws"'","written":3,"already":0,"skipped":2,"kept":true}'
	assert_equal "$stderr" "$C: warning: skipped '.env': deny-write: '.env' would be protected after apply
$C: warning: skipped '.git/hooks/pre-commit': deny-write: '.git/hooks' is protected
$C: fatal: applied '$cs' except 2 refused paths, kept in it; to fix: review them, then discard the change set"
	assert_equal "$(cat "$ws/src/a.c")" "$(printf 'one\nTWO\nthree')"
	assert_equal "$(cat "$ws/src/b.c")" new
	assert_file_not_exist "$ws/gone"
	assert_file_not_exist "$ws/.git/hooks/pre-commit"
	assert_file_not_exist "$ws/.env"
	run -1 grep -r sbx-changes <(ls -AR "$ws")
	run -0 $C discard "$cs"
	assert_file_not_exist "$cs"
}

# A bare repository planted by its shape in a subdirectory, its config
# including a file planted beside it: git would read both.
bare='mkdir -p vendor/x/objects vendor/x/refs; echo "ref: refs/heads/main" >vendor/x/HEAD
	printf "[include]\n\tpath = ../../evil.cfg\n" >vendor/x/config
	printf "[core]\n\tfsmonitor = touch pwned\n" >evil.cfg; echo b >src/b.c'

@test "deny-write after apply: a bare repository planted by its shape, and the file its config includes" {
	mkcs "$ws" "$cs" "$bare"
	run -0 --separate-stderr $C list --workspace "$ws" "$cs"
	assert_equal "${#lines[@]}" 8
	assert_line --index 0 --regexp '^\{"path":"evil.cfg","change":"added",.*"refused":"deny-write","protected":"evil.cfg","after_apply":true\}$'
	assert_line --index 1 --regexp '^\{"path":"src/b.c","change":"added",.*"base":\{"type":"none"\}\}$'
	assert_line --index 2 --regexp '^\{"path":"vendor","change":"added",.*"refused":"deny-write","protected":"vendor/x/config","after_apply":true\}$'
	assert_line --index 3 --regexp '^\{"path":"vendor/x","change":"added",.*"refused":"inside a refused directory"\}$'
	run -102 --separate-stderr $C apply --workspace "$ws" "$cs"
	assert_output ""
	assert_equal "$stderr" "$C: warning: refused 'evil.cfg': deny-write: 'evil.cfg' would be protected after apply
$C: warning: refused 'vendor': deny-write: 'vendor/x/config' would be protected after apply
$C: warning: refused 'vendor/x': inside a refused directory
$C: warning: refused 'vendor/x/HEAD': inside a refused directory
$C: warning: refused 'vendor/x/config': inside a refused directory
$C: warning: refused 'vendor/x/objects': inside a refused directory
$C: warning: refused 'vendor/x/refs': inside a refused directory
$C: fatal: nothing applied from '$cs': 7 paths refused; to fix: review them (sbx-changes list), discard the change set, or apply the rest with --skip-refused"
	# nothing at all, the legitimate file neither
	assert_file_not_exist "$ws/src/b.c"
	assert_file_not_exist "$ws/vendor"
	assert_file_not_exist "$ws/evil.cfg"
	run -102 --separate-stderr $C apply --skip-refused --workspace "$ws" "$cs"
	assert_output '{"applied":"'"$cs"'","workspace":"'"$ws"'","written":1,"already":0,"skipped":7,"kept":true}'
	assert_equal "${stderr%%$'\n'*}" "$C: warning: skipped 'evil.cfg': deny-write: 'evil.cfg' would be protected after apply"
	assert_equal "$(cat "$ws/src/b.c")" b
	assert_file_not_exist "$ws/vendor"
	assert_file_not_exist "$ws/evil.cfg"
}

@test "deny-write after apply: what the workspace's git config includes or names as hooksPath, planted" {
	rm -r "$ws/.git"
	git -C "$ws" init -q
	git -C "$ws" config include.path ../shared.gitconfig
	git -C "$ws" config core.hooksPath tools/hooks
	mkcs "$ws" "$cs" 'echo "[user]" >shared.gitconfig; mkdir -p tools/hooks; echo "#!/bin/sh" >tools/hooks/pre-commit
		echo b >src/b.c'
	run -102 --separate-stderr $C apply --skip-refused --workspace "$ws" "$cs"
	assert_output '{"applied":"'"$cs"'","workspace":"'"$ws"'","written":1,"already":0,"skipped":4,"kept":true}'
	assert_equal "$stderr" "$C: warning: skipped 'shared.gitconfig': deny-write: 'shared.gitconfig' would be protected after apply
$C: warning: skipped 'tools': deny-write: 'tools/hooks' would be protected after apply
$C: warning: skipped 'tools/hooks': inside a refused directory
$C: warning: skipped 'tools/hooks/pre-commit': inside a refused directory
$C: fatal: applied '$cs' except 4 refused paths, kept in it; to fix: review them, then discard the change set"
	assert_equal "$(cat "$ws/src/b.c")" b
	assert_file_not_exist "$ws/shared.gitconfig"
	assert_file_not_exist "$ws/tools"
}

@test "deny-write now: deleting or replacing a protected path, or a directory that holds one, is refused" {
	mkdir -p "$ws/sub/.git" "$ws/lib/.git"
	echo c >"$ws/sub/.git/config"
	echo c >"$ws/lib/.git/config"
	echo n >"$ws/notes"
	mkcs "$ws" "$cs" 'echo b >src/b.c'
	# what a change set could hold that sbx-ns never lets a command write
	mkdir "$cs/upper/.git" "$cs/upper/lib"
	mknod "$cs/upper/.git/hooks" c 0 0
	mknod "$cs/upper/sub" c 0 0
	echo file >"$cs/upper/lib/.git"
	mknod "$cs/upper/notes" c 0 0
	cs_base "$ws" "$cs"
	run -102 --separate-stderr $C apply --workspace "$ws" "$cs"
	assert_equal "$stderr" "$C: warning: refused '.git/hooks': deny-write: '.git/hooks' is protected
$C: warning: refused 'lib/.git': deny-write: 'lib/.git' would be protected after apply
$C: warning: refused 'sub': deny-write: 'sub/.git/config' is protected
$C: fatal: nothing applied from '$cs': 3 paths refused; to fix: review them (sbx-changes list), discard the change set, or apply the rest with --skip-refused"
	assert_file_exist "$ws/notes"
	assert_file_not_exist "$ws/src/b.c"
	run -102 $C apply --skip-refused --workspace "$ws" "$cs"
	assert_file_not_exist "$ws/notes"
	assert_equal "$(cat "$ws/src/b.c")" b
	assert_equal "$(cat "$ws/sub/.git/config")$(cat "$ws/lib/.git/config")" cc
	assert_dir_exist "$ws/.git/hooks"
}

@test "--deny-write: the globs the sandbox ran with, replacing the defaults as sbx-ns's do" {
	mkcs "$ws" "$cs" 'mkdir secrets && echo k >secrets/key; echo S=1 >.env; echo b >src/b.c'
	run -102 --separate-stderr $C apply --skip-refused --deny-write 'secrets/**' --deny-write '*.pem' --workspace "$ws" "$cs"
	assert_output '{"applied":"'"$cs"'","workspace":"'"$ws"'","written":2,"already":0,"skipped":2,"kept":true}'
	assert_equal "$stderr" "$C: warning: skipped 'secrets': deny-write: 'secrets' would be protected after apply
$C: warning: skipped 'secrets/key': inside a refused directory
$C: fatal: applied '$cs' except 2 refused paths, kept in it; to fix: review them, then discard the change set"
	assert_equal "$(cat "$ws/.env")$(cat "$ws/src/b.c")" S=1b
	assert_file_not_exist "$ws/secrets"
}

@test "apply: a whole apply consumes the change set; a second run's discard leaves the workspace untouched" {
	mkcs "$ws" "$cs" 'echo x >>keep; mkdir -p new/deep; echo d >new/deep/f; chmod 0755 keep'
	run -0 --separate-stderr $C apply --workspace "$ws" "$cs"
	assert_output '{"applied":"'"$cs"'","workspace":"'"$ws"'","written":4,"already":0,"skipped":0,"kept":false}'
	assert_equal "$stderr" ""
	assert_file_not_exist "$cs"
	assert_equal "$(cat "$ws/keep")" "$(printf 'keep\nx')"
	assert_equal "$(stat -c %a "$ws/keep")" 755
	assert_equal "$(cat "$ws/new/deep/f")" d
	before=$(cd "$ws" && find . -printf '%p %s %y %m\n' | sort | sha256sum)
	mkcs "$ws" "$cs" 'rm -rf src; echo y >keep'
	run -0 $C discard "$cs"
	assert_file_not_exist "$cs"
	assert_equal "$(cd "$ws" && find . -printf '%p %s %y %m\n' | sort | sha256sum)" "$before"
}

@test "a change set of another workspace, or one in use, is refused (102)" {
	mkcs "$ws" "$cs" 'echo x >keep'
	mkdir "$BATS_TEST_TMPDIR/other"
	run -102 --separate-stderr $C apply --workspace "$BATS_TEST_TMPDIR/other" "$cs"
	assert_equal "$stderr" "$C: fatal: '$cs' is a change set of workspace '$ws', not of '$BATS_TEST_TMPDIR/other'; to fix: name its own workspace"
	# the same path, another directory: the identity differs
	mv "$ws" "$ws.old" && mkdir "$ws"
	run -102 --separate-stderr $C list --workspace "$ws" "$cs"
	assert_equal "$stderr" "$C: fatal: '$cs' is a change set of workspace '$ws', not of '$ws'; to fix: name its own workspace"
	rmdir "$ws" && mv "$ws.old" "$ws"
	exec {lk}<"$cs/lock"
	flock -s "$lk"
	run -102 --separate-stderr $C apply --workspace "$ws" "$cs"
	assert_equal "$stderr" "$C: fatal: '$cs' is in use by a running sandbox; to fix: wait for it to end"
	run -102 --separate-stderr $C discard "$cs"
	assert_equal "$stderr" "$C: fatal: '$cs' is in use by a running sandbox; to fix: wait for it to end"
	run -0 $C list --workspace "$ws" "$cs"
	flock -u "$lk"
	flock -x "$lk"
	run -102 --separate-stderr $C list --workspace "$ws" "$cs"
	assert_equal "$stderr" "$C: fatal: '$cs' is in use by a running sandbox; to fix: wait for it to end"
	exec {lk}<&-
	assert_equal "$(cat "$ws/keep")" keep
	run -0 $C apply --workspace "$ws" "$cs"
	assert_equal "$(cat "$ws/keep")" x
}

@test "a change set writable by others is refused (102)" {
	mkcs "$ws" "$cs" 'echo x >keep'
	chmod 0777 "$cs"
	run -102 --separate-stderr $C list --workspace "$ws" "$cs"
	assert_equal "$stderr" "$C: fatal: change set '$cs' is writable by others; to fix: use a change set of your own, mode 0700"
	chmod 0700 "$cs"
	run -0 $C list --workspace "$ws" "$cs"
}

@test "discard refuses what is not a change set, and a symlink on its path" {
	mkdir "$BATS_TEST_TMPDIR/plain"
	echo precious >"$BATS_TEST_TMPDIR/plain/f"
	run -102 --separate-stderr $C discard "$BATS_TEST_TMPDIR/plain"
	assert_equal "$stderr" "$C: fatal: '$BATS_TEST_TMPDIR/plain' is not a change set (no changeset file); nothing removed; to fix: name a directory sbx-ns --changes wrote"
	assert_file_exist "$BATS_TEST_TMPDIR/plain/f"
	mkcs "$ws" "$cs" 'echo x >keep'
	ln -s "$cs" "$BATS_TEST_TMPDIR/link"
	run -102 --separate-stderr $C discard "$BATS_TEST_TMPDIR/link"
	assert_equal "$stderr" "$C: fatal: unable to open change set '$BATS_TEST_TMPDIR/link': a symlink on its path (name the real directory)"
	run -102 --separate-stderr $C list --workspace "$ws" "$BATS_TEST_TMPDIR/link"
	assert_equal "$stderr" "$C: fatal: unable to open change set '$BATS_TEST_TMPDIR/link': a symlink on its path (name the real directory)"
	assert_file_exist "$cs/changeset"
}

@test "names: control bytes, quotes and '..' stay names, escaped by the one rule in list and diff" {
	mkcs "$ws" "$cs" 'printf x >"$(printf "e\033[31mvil")"; echo y >"..a"; echo z >"it'"'"'s b"'
	run -0 --separate-stderr $C list --workspace "$ws" "$cs"
	assert_line --index 0 --regexp '^\{"path":"..a","change":"added",'
	assert_line --index 1 --regexp '^\{"path":"e\\u001b\[31mvil","change":"added",'
	assert_line --index 2 --regexp "^\{\"path\":\"it's b\",\"change\":\"added\","
	run -0 --separate-stderr $C diff --workspace "$ws" "$cs"
	assert_line "diff --git a/..a b/..a"
	assert_line "diff --git 'a/e\\x1b[31mvil' 'b/e\\x1b[31mvil'"
	assert_line "diff --git 'a/it\\x27s b' 'b/it\\x27s b'"
	# a base line naming a path outside the workspace is no base line
	echo '{"path":"../x","type":"none"}' >>"$cs/base.jsonl"
	run -102 --separate-stderr $C list --workspace "$ws" "$cs"
	assert_equal "$stderr" "$C: fatal: unable to read '$cs/base.jsonl': line 4 is not a base line; to fix: discard the change set, it was not written by sbx-ns"
}

# term_safe: stdin is valid UTF-8 with no control character but tab and
# newline (C0, DEL, C1): what a terminal shows and never acts on.
term_safe() {
	python3 -c 'import sys
t = sys.stdin.buffer.read().decode("utf-8")
bad = [hex(ord(c)) for c in t if c not in "\t\n\f" and (ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f)]
sys.exit("control characters: %s" % " ".join(bad[:8]) if bad else 0)'
}

escaped='escaped text: controls, invalid UTF-8 and backslashes as \xNN'

@test "diff: controls in content and symlink targets shown as \\xNN by the one rule, the file marked; clean text raw" {
	local new=$BATS_TEST_TMPDIR/new
	printf 'a\\b\n' >"$ws/m"
	ln -s "$(printf 'old\033[0m')" "$ws/ol"
	mkdir "$new"
	printf 'title\033]0;pwned\007\nred\033[31m\ncr\rhidden\nbs\bX\nc1 \302\233 raw \233\200 bidi \342\200\256\ntab\tstays \\ it'\''s\n' >"$new/ctl"
	ln -s "$(printf 'x\033]0;t\007\302\233\233')" "$new/lnk"
	printf 'a\\b\n\033[2J\n' >"$new/m"
	printf 'plain \\x1b it'\''s\n' >"$new/clean"
	mkcs "$ws" "$cs" "cp -a '$new'/. . && ln -sfn new ol"
	run -0 --separate-stderr $C diff --workspace "$ws" "$cs"
	assert_equal "$stderr" ""
	assert_output "diff --git a/clean b/clean
new file mode 100644
--- /dev/null
+++ b/clean
@@ -0,0 +1 @@
+plain \\x1b it's
diff --git a/ctl b/ctl
new file mode 100644
$escaped
--- /dev/null
+++ b/ctl
@@ -0,0 +1,6 @@
+title\\x1b]0;pwned\\x07
+red\\x1b[31m
+cr\\x0dhidden
+bs\\x08X
+c1 \\xc2\\x9b raw \\x9b\\x80 bidi \\xe2\\x80\\xae
+tab	stays \\x5c it's
diff --git a/lnk b/lnk
new file mode 120000
$escaped
--- /dev/null
+++ b/lnk
@@ -0,0 +1 @@
+x\\x1b]0;t\\x07\\xc2\\x9b\\x9b
\\ No newline at end of file
diff --git a/m b/m
$escaped
--- a/m
+++ b/m
@@ -1 +1,2 @@
 a\\x5cb
+\\x1b[2J
diff --git a/ol b/ol
$escaped
--- a/ol
+++ b/ol
@@ -1 +1 @@
-old\\x1b[0m
\\ No newline at end of file
+new
\\ No newline at end of file"
	run -0 term_safe <<<"$output"
	# list: the JSON rule, the same classes escaped
	run -0 --separate-stderr $C list --workspace "$ws" "$cs"
	assert_line --index 2 --regexp '^\{"path":"lnk","change":"symlink","type":"symlink","mode":"0777","size":10,"sha256":"[0-9a-f]{64}","target":"x\\u001b\]0;t\\u0007\\u009b\\ufffd","base":\{"type":"none"\}\}$'
	assert_line --index 4 --regexp '^\{"path":"ol","change":"symlink",.*"target":"new",'
	run -0 term_safe <<<"$output"
}

@test "diff: every byte value past git's first 8000 bytes, invalid UTF-8 and a 4 MiB line of controls: escaped, exact" {
	python3 - "$BATS_TEST_TMPDIR" <<'PY'
import sys
d = sys.argv[1]
body = (b"a" * 8000 + b"\n" + bytes(range(256)) + b"\n" +
        b"overlong \xc0\xaf surrogate \xed\xa0\x80 too big \xf4\x90\x80\x80 cut \xe2\x82\n" +
        b"\x1b[31m\xc2\x9b\x9b" * ((4 << 20) // 9) + b"\n" +
        "kept \u00e9 \u20ac \U0001f600, escaped \u2028 \u202e \ufeff \u0085".encode() + b"\n")
open(d + "/bytes", "wb").write(body)

def printable(cp):
    return not (cp < 0x20 or 0x7f <= cp <= 0x9f or cp in (0x2028, 0x2029, 0x061c, 0x200e, 0x200f, 0xfeff) or
                0x202a <= cp <= 0x202e or 0x2066 <= cp <= 0x2069 or 0xfff9 <= cp <= 0xfffb)

def esc(b):
    out, i = bytearray(), 0
    while i < len(b):
        c = b[i]
        if c < 0x80:
            if c in (9, 12) or (0x20 <= c < 0x7f and c != 0x5c):
                out.append(c)
            else:
                out += b"\\x%02x" % c
            i += 1
            continue
        n = 2 if 0xc2 <= c < 0xe0 else 3 if 0xe0 <= c < 0xf0 else 4 if 0xf0 <= c < 0xf5 else 0
        try:
            ch = b[i:i + n].decode("utf-8") if n else ""
        except UnicodeDecodeError:
            ch = ""
        if len(ch) == 1 and printable(ord(ch)):
            out += b[i:i + n]
            i += n
        else:
            out += b"\\x%02x" % c
            i += 1
    return bytes(out)

lines = body.split(b"\n")[:-1]
exp = (b"diff --git a/bytes b/bytes\nnew file mode 100644\n"
       b"escaped text: controls, invalid UTF-8 and backslashes as \\xNN\n"
       b"--- /dev/null\n+++ b/bytes\n@@ -0,0 +1,%d @@\n" % len(lines) +
       b"".join(b"+" + esc(l) + b"\n" for l in lines))
open(d + "/expected", "wb").write(exp)
PY
	mkcs "$ws" "$cs" "cp '$BATS_TEST_TMPDIR/bytes' ."
	$C diff --workspace "$ws" "$cs" >"$BATS_TEST_TMPDIR/got" 2>"$BATS_TEST_TMPDIR/err"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/err")" ""
	run -0 cmp "$BATS_TEST_TMPDIR/expected" "$BATS_TEST_TMPDIR/got"
	run -0 term_safe <"$BATS_TEST_TMPDIR/got"
	# the same bytes in the first 8000: git's rule, a binary file
	mkcs "$ws" "$cs" "printf '\033]0;x\007\000' >bin"
	run -0 --separate-stderr $C diff --workspace "$ws" "$cs"
	assert_line --index 2 "Binary files /dev/null and b/bin differ"
}

@test "diff: a 100,000-line new file and a rewritten 20,000-line one in 512 MiB of address space, a diff git applies" {
	python3 - "$ws" "$BATS_TEST_TMPDIR" <<'PY2'
import random, sys
ws, d = sys.argv[1], sys.argv[2]
random.seed(46)
lines = lambda n: "".join(random.choice("abc") + "\n" for _ in range(n))
open(ws + "/re", "w").write(lines(20000))
open(d + "/re", "w").write(lines(20000))
open(d + "/big", "w").write(lines(100000))
PY2
	mkcs "$ws" "$cs" "cp '$BATS_TEST_TMPDIR/re' '$BATS_TEST_TMPDIR/big' ."
	(ulimit -v 524288 && exec $C diff --workspace "$ws" "$cs") >"$BATS_TEST_TMPDIR/d.patch"
	run -0 sed -n '/^diff --git a\/big /,/^diff --git a\/re /p' "$BATS_TEST_TMPDIR/d.patch"
	assert_equal "$(grep -c '^+[abc]$' <<<"$output")" 100000
	assert_line --index 4 "@@ -0,0 +1,100000 @@"
	cp -r "$ws" "$BATS_TEST_TMPDIR/applied"
	run -0 git -C "$BATS_TEST_TMPDIR/applied" apply "$BATS_TEST_TMPDIR/d.patch"
	run -0 cmp "$BATS_TEST_TMPDIR/applied/re" "$BATS_TEST_TMPDIR/re"
	run -0 cmp "$BATS_TEST_TMPDIR/applied/big" "$BATS_TEST_TMPDIR/big"
}

# deep DEPTH: DEPTH directories of 255-byte names, a file "deep" in the last
deep() {
	python3 -c 'import os, sys
n = "n" * 255
for i in range(int(sys.argv[1])): os.mkdir(n); os.chdir(n)
open(n, "w").write("deep\n")' "$1"
}

@test "a path of 3,583 bytes is listed and applied; a longer one than the deny-write walk reads refuses the change set" {
	local n=$(printf 'n%.0s' {1..255}) p="" msg
	mkcs "$ws" "$cs" "$(declare -f deep); deep 13"
	for i in $(seq 13); do p=$p$n/; done
	run -0 --separate-stderr $C list --workspace "$ws" "$cs"
	assert_equal "${#lines[@]}" 14
	assert_line --index 13 --partial "\"path\":\"$p$n\",\"change\":\"added\""
	run -0 $C apply --workspace "$ws" "$cs"
	run -0 cat "$ws/$p$n"
	assert_output deep
	# 16 directories: a path of 4,351 bytes, more than the one rule reads;
	# sbx-ns refuses such a workspace, apply refuses to make one
	rm -rf "$ws/$n"
	mkcs "$ws" "$cs" "$(declare -f deep); deep 16"
	# (a message is cut at 2,047 bytes)
	msg="unable to check below $p$n in the workspace: its path is too long"
	run -102 --separate-stderr $C list --workspace "$ws" "$cs"
	assert_equal "$stderr" "$C: fatal: ${msg:0:2047}"
	run -102 --separate-stderr $C apply --skip-refused --workspace "$ws" "$cs"
	assert_equal "$stderr" "$C: fatal: ${msg:0:2047}"
	assert_file_not_exist "$ws/$n"
}

@test "10,000 files: a renamed directory is a deletion and an addition, applied whole" {
	mkdir "$ws/big"
	(cd "$ws/big" && seq 10000 | xargs touch && echo one >1)
	mkcs "$ws" "$cs" 'mv big moved && echo two >moved/2'
	run -0 --separate-stderr $C list --workspace "$ws" "$cs"
	assert_equal "${#lines[@]}" 10002
	assert_line --index 0 '{"path":"big","change":"deleted","base":{"type":"dir","dev":'"$(stat -c %d "$ws/big")"',"ino":'"$(stat -c %i "$ws/big")"',"size":'"$(stat -c %s "$ws/big")"',"mtime_ns":'"$(stat -c %.9Y "$ws/big" | tr -d .)"',"ctime_ns":'"$(stat -c %.9Z "$ws/big" | tr -d .)"'}}'
	run -0 --separate-stderr $C apply --workspace "$ws" "$cs"
	assert_output '{"applied":"'"$cs"'","workspace":"'"$ws"'","written":10002,"already":0,"skipped":0,"kept":false}'
	assert_file_not_exist "$ws/big"
	assert_equal "$(ls "$ws/moved" | wc -l)" 10000
	assert_equal "$(cat "$ws/moved/1")$(cat "$ws/moved/2")" onetwo
}

@test "a directory replaced by a file, and a file by a directory" {
	mkdir -p "$ws/d/sub" && echo x >"$ws/d/sub/x"
	mkcs "$ws" "$cs" 'rm -rf d && echo file >d; rm keep && mkdir keep && echo in >keep/f'
	run -0 --separate-stderr $C list --workspace "$ws" "$cs"
	assert_line --index 0 --regexp '^\{"path":"d","change":"type-changed","type":"file",'
	assert_line --index 1 --regexp '^\{"path":"keep","change":"type-changed","type":"dir",'
	assert_line --index 2 --regexp '^\{"path":"keep/f","change":"added",'
	assert_equal "${#lines[@]}" 3
	run -0 $C apply --workspace "$ws" "$cs"
	assert_equal "$(cat "$ws/d")" file
	assert_equal "$(cat "$ws/keep/f")" in
}

@test "SIGKILL during apply: each file old or new, a rerun finishes the job" {
	local i
	mkdir "$ws/many"
	for i in $(seq 2000); do echo old >"$ws/many/$i"; done
	mkcs "$ws" "$cs" 'for f in many/*; do echo new >$f; done; rm gone'
	# the 1000th rename into place is where the kill lands: 1000 temporary names are left
	# (all 2000 were written and synced before the first rename)
	run -137 strace -f -o /dev/null -e trace=rename,renameat,renameat2 -e inject=rename,renameat,renameat2:signal=KILL:when=1000 \
		$C apply --workspace "$ws" "$cs"
	assert_equal "$(cat "$ws"/many/* | sort | uniq -c | tr -s ' ')" " 999 new
 1001 old"
	assert_file_exist "$ws/gone"
	assert_equal "$(ls -A "$ws/many" | grep -c '^\.sbx-changes\.')" 1001
	run -0 --separate-stderr $C apply --workspace "$ws" "$cs"
	assert_output '{"applied":"'"$cs"'","workspace":"'"$ws"'","written":1002,"already":0,"skipped":0,"kept":false}'
	assert_equal "$(cat "$ws"/many/* | sort | uniq -c | tr -s ' ')" " 2000 new"
	assert_file_not_exist "$ws/gone"
	run -1 grep -r sbx-changes <(ls -AR "$ws")
}

@test "edited on the host between runs: conflicts, a planted symlink never followed" {
	mkdir "$BATS_TEST_TMPDIR/outside"
	echo secret >"$BATS_TEST_TMPDIR/outside/s"
	mkcs "$ws" "$cs" 'echo x >keep; echo y >src/a.c; mkdir sub && echo in >sub/f'
	# the workspace's file changed since the change set was based on it
	echo host >>"$ws/keep"
	run -102 --separate-stderr $C apply --workspace "$ws" "$cs"
	assert_equal "$stderr" "$C: warning: refused 'keep': conflict: the workspace changed it since the change set was based on it
$C: fatal: nothing applied from '$cs': 1 path refused; to fix: review them (sbx-changes list), discard the change set, or apply the rest with --skip-refused"
	# a later run of the same change set: the path it had none of is now there
	echo late >"$ws/sub"
	# sbx-ns marks a path the workspace changed while the run had it
	sed -i 's/{"path":"src\/a.c",.*/{"path":"src\/a.c","type":"changed"}/' "$cs/base.jsonl"
	run -0 --separate-stderr $C list --workspace "$ws" "$cs"
	assert_line --index 0 --regexp '^\{"path":"keep",.*"refused":"conflict: the workspace changed it since the change set was based on it"\}$'
	assert_line --index 1 --regexp '^\{"path":"src/a.c",.*"base":\{"type":"changed"\},"refused":"conflict: the workspace changed it while the sandbox ran"\}$'
	assert_line --index 2 --regexp '^\{"path":"sub","change":"type-changed",.*"refused":"conflict: the workspace has it now, it had none"\}$'
	assert_line --index 3 --regexp '^\{"path":"sub/f",.*"refused":"inside a refused directory"\}$'
	rm "$ws/sub"
	# the change set's upper gets a link to outside, a directory swapped for one
	rm -r "$cs/upper/sub"
	ln -s "$BATS_TEST_TMPDIR/outside" "$cs/upper/sub"
	ln -s /etc/shadow "$cs/upper/shadow"
	run -0 --separate-stderr $C list --workspace "$ws" "$cs"
	assert_line --regexp '^\{"path":"shadow","change":"symlink","type":"symlink","mode":"0777","size":11,"sha256":"[0-9a-f]{64}","target":"/etc/shadow","base":null,"refused":"conflict: no base line for it in base.jsonl"\}$'
	assert_line --regexp '^\{"path":"sub","change":"symlink",.*"target":"'"$BATS_TEST_TMPDIR/outside"'",'
	refute_output --partial '"path":"sub/'
	run -102 $C apply --skip-refused --workspace "$ws" "$cs"
	assert_equal "$(readlink "$ws/sub")" "$BATS_TEST_TMPDIR/outside"
	assert_file_not_exist "$ws/shadow"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/outside/s")" secret
	assert_equal "$(ls "$BATS_TEST_TMPDIR/outside")" s
}

@test "a symlink in the workspace on a path is never followed by apply" {
	mkdir "$BATS_TEST_TMPDIR/outside"
	mkcs "$ws" "$cs" 'echo y >src/new.c'
	mv "$ws/src" "$ws/src.real"
	ln -s "$BATS_TEST_TMPDIR/outside" "$ws/src"
	run -102 --separate-stderr $C apply --skip-refused --workspace "$ws" "$cs"
	assert_equal "$stderr" "$C: warning: skipped 'src': conflict: the workspace changed it since the change set was based on it
$C: warning: skipped 'src/new.c': inside a refused directory
$C: fatal: applied '$cs' except 2 refused paths, kept in it; to fix: review them, then discard the change set"
	assert_equal "$(ls -A "$BATS_TEST_TMPDIR/outside")" ""
}

@test "device nodes, fifos, sockets, setuid bits and hard links are refused, named" {
	mkcs "$ws" "$cs" 'echo x >suid; echo h >h1'
	mknod "$cs/upper/dev" c 1 3
	mkfifo "$cs/upper/fifo"
	python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$cs/upper/sock"
	chmod 4755 "$cs/upper/suid"
	ln "$cs/upper/h1" "$cs/upper/h2"
	cs_base "$ws" "$cs"
	run -102 --separate-stderr $C apply --workspace "$ws" "$cs"
	assert_equal "$stderr" "$C: warning: refused 'dev': a device node
$C: warning: refused 'fifo': a fifo
$C: warning: refused 'h1': a hard link
$C: warning: refused 'h2': a hard link
$C: warning: refused 'sock': a socket
$C: warning: refused 'suid': a setuid, setgid or sticky bit
$C: fatal: nothing applied from '$cs': 6 paths refused; to fix: review them (sbx-changes list), discard the change set, or apply the rest with --skip-refused"
	run -0 $C discard "$cs"
	assert_file_not_exist "$cs"
}

@test "overlay's xattr forms: a whiteout file and an opaque directory are deletions" {
	mkdir -p "$ws/op/old" && echo o >"$ws/op/old/f" && echo k >"$ws/op/k"
	mkcs "$ws" "$cs" 'true'
	: >"$cs/upper/gone"
	mkdir "$cs/upper/op" && echo n >"$cs/upper/op/new"
	python3 -c 'import os, sys
os.setxattr(sys.argv[1] + "/gone", "user.overlay.whiteout", b"")
os.setxattr(sys.argv[1] + "/op", "user.overlay.opaque", b"y")' "$cs/upper"
	cs_base "$ws" "$cs"
	run -0 --separate-stderr $C list --workspace "$ws" "$cs"
	assert_equal "${#lines[@]}" 4
	assert_line --index 0 --regexp '^\{"path":"gone","change":"deleted","base":\{"type":"file",'
	assert_line --index 1 --regexp '^\{"path":"op/k","change":"deleted"\}$'
	assert_line --index 2 --regexp '^\{"path":"op/new","change":"added",'
	assert_line --index 3 --regexp '^\{"path":"op/old","change":"deleted"\}$'
	run -0 $C apply --workspace "$ws" "$cs"
	assert_equal "$(ls -A "$ws/op")" new
	assert_file_not_exist "$ws/gone"
}

@test "a full disk during apply: no file replaced, no temporary file left, 111" {
	local small=$BATS_TEST_TMPDIR/small
	mkdir "$small"
	mount -t tmpfs -o size=1m tmpfs "$small"
	ws=$small/ws cs=$small/cs
	mkdir "$ws" "$cs"
	echo little >"$ws/a"
	echo old >"$ws/z"
	mkdir -p "$cs/upper" "$cs/work"
	printf '{"version":1,"workspace":"%s","dev":%s,"ino":%s}\n' "$ws" "$(stat -c %d "$ws")" "$(stat -c %i "$ws")" >"$cs/changeset"
	: >"$cs/base.jsonl"
	echo new >"$cs/upper/a"
	head -c 600k /dev/zero | tr '\0' x >"$cs/upper/z"
	cs_base "$ws" "$cs"
	run -111 --separate-stderr $C apply --workspace "$ws" "$cs"
	assert_equal "$stderr" "$C: fatal: unable to write 'z' in '$ws'; no file was replaced; to fix: clear the cause and run apply again: No space left on device"
	assert_equal "$(cat "$ws/a")" little
	assert_equal "$(cat "$ws/z")" old
	assert_equal "$(ls -A "$ws")" "$(printf 'a\nz')"
}

@test "diff: a deleted directory shows each file it held, deleted" {
	mkdir -p "$ws/lib/sub" && echo a >"$ws/lib/a" && echo b >"$ws/lib/sub/b"
	mkcs "$ws" "$cs" 'rm -rf lib'
	run -0 --separate-stderr $C diff --workspace "$ws" "$cs"
	assert_output "diff --git a/lib/a b/lib/a
deleted file mode 100644
--- a/lib/a
+++ /dev/null
@@ -1 +0,0 @@
-a
diff --git a/lib/sub/b b/lib/sub/b
deleted file mode 100644
--- a/lib/sub/b
+++ /dev/null
@@ -1 +0,0 @@
-b"
}

@test "discard by a user who cannot remove the change set's directory: nothing removed (102)" {
	local d
	sbx_test_user
	d=$(sbx_scratch)
	mkdir "$d/ws"
	mkcs "$d/ws" "$d/cs" 'echo x >keep'
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$d/ws" "$d/cs"
	run -102 --separate-stderr as_user $C discard "$d/cs"
	assert_equal "$stderr" "$C: fatal: unable to remove change set '$d/cs': '$d' is not writable; nothing removed; to fix: discard it as a user who may write '$d': Permission denied"
	assert_file_exist "$d/cs/changeset"
	assert_file_exist "$d/cs/upper/keep"
	# in a sticky directory, another user's change set
	chmod 1777 "$d"
	chown 0:0 "$d/cs"
	chmod 0755 "$d/cs"
	run -102 --separate-stderr as_user $C discard "$d/cs"
	assert_equal "$stderr" "$C: fatal: unable to remove change set '$d/cs': '$d' is sticky and the change set another user's; nothing removed; to fix: discard it as its owner"
	assert_file_exist "$d/cs/upper/keep"
	run -0 $C discard "$d/cs"
	rm -rf "$d"
}

@test "apply by a user who could not remove the change set afterwards: refused before anything is written (102)" {
	local d
	sbx_test_user
	d=$(sbx_scratch)
	mkdir "$d/ws"
	echo keep >"$d/ws/keep"
	mkcs "$d/ws" "$d/cs" 'echo x >keep; echo n >new'
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$d/ws" "$d/cs"
	# the base lines of the workspace as the user's (chown changed its ctimes)
	: >"$d/cs/base.jsonl"
	cs_base "$d/ws" "$d/cs"
	run -102 --separate-stderr as_user $C apply --workspace "$d/ws" "$d/cs"
	assert_output ""
	assert_equal "$stderr" "$C: fatal: unable to remove change set '$d/cs' once applied: '$d' is not writable; nothing applied; to fix: apply it as a user who may write '$d': Permission denied"
	assert_equal "$(cat "$d/ws/keep")" keep
	assert_file_not_exist "$d/ws/new"
	# the parent writable now; a directory in the set is root's, with a file
	chown "$SBX_TEST_UID" "$d"
	mkdir -p "$d/cs/work/root/sub"
	echo r >"$d/cs/work/root/sub/f"
	chmod 0777 "$d/cs/work/root"
	run -102 --separate-stderr as_user $C apply --workspace "$d/ws" "$d/cs"
	assert_output ""
	assert_equal "$stderr" "$C: fatal: unable to remove change set '$d/cs' once applied: '$d/cs/work/root/sub' is not writable; nothing applied; to fix: apply it as a user who may write '$d/cs/work/root/sub': Permission denied"
	assert_equal "$(cat "$d/ws/keep")" keep
	assert_file_not_exist "$d/ws/new"
	# the user's own directories are its to remove, one it cannot read or write too
	rm -r "$d/cs/work/root"
	mkdir -p "$d/cs/work/mine/deep" "$d/cs/work/ro"
	echo m >"$d/cs/work/mine/deep/f"
	echo m >"$d/cs/work/ro/f"
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$d/cs/work"
	chmod 0 "$d/cs/work/mine"
	chmod 0555 "$d/cs/work/ro"
	run -0 --separate-stderr as_user $C apply --workspace "$d/ws" "$d/cs"
	assert_output '{"applied":"'"$d/cs"'","workspace":"'"$d/ws"'","written":2,"already":0,"skipped":0,"kept":false}'
	assert_equal "$stderr" ""
	assert_equal "$(cat "$d/ws/keep")$(cat "$d/ws/new")" xn
	assert_file_not_exist "$d/cs"
	# another user's change set is not this user's to apply
	mkcs "$d/ws" "$d/cs" 'echo y >other'
	chmod 0755 "$d/cs"
	run -102 --separate-stderr as_user $C apply --workspace "$d/ws" "$d/cs"
	assert_equal "$stderr" "$C: fatal: change set '$d/cs' is owned by another user; to fix: use a change set of your own, mode 0700"
	rm -rf "$d"
}

@test "apply as root: a read-only parent, or a change set that is a mount point, is refused before anything is written (102)" {
	local p=$BATS_TEST_TMPDIR/p
	mkcs "$ws" "$cs" 'echo x >keep'
	mkdir -p "$p/cs"
	mount --bind "$p" "$p"
	mount -o remount,bind,ro "$p"
	mount --bind "$cs" "$p/cs"
	run -102 --separate-stderr $C apply --workspace "$ws" "$p/cs"
	assert_output ""
	assert_equal "$stderr" "$C: fatal: unable to remove change set '$p/cs' once applied: '$p' is not writable; nothing applied; to fix: remount '$p' read-write: Read-only file system"
	umount "$p/cs" "$p"
	mount --bind "$cs" "$cs"
	run -102 --separate-stderr $C apply --workspace "$ws" "$cs"
	assert_equal "$stderr" "$C: fatal: unable to remove change set '$cs' once applied: '$cs' is a mount point; nothing applied; to fix: unmount '$cs'"
	run -102 --separate-stderr $C discard "$cs"
	assert_equal "$stderr" "$C: fatal: unable to remove change set '$cs': '$cs' is a mount point; nothing removed; to fix: unmount '$cs'"
	umount "$cs"
	mkdir "$cs/work/m"
	mount -t tmpfs tmpfs "$cs/work/m"
	run -102 --separate-stderr $C apply --workspace "$ws" "$cs"
	assert_equal "$stderr" "$C: fatal: unable to remove change set '$cs' once applied: '$cs/work/m' is a mount point; nothing applied; to fix: unmount '$cs/work/m'"
	umount "$cs/work/m"
	assert_equal "$(cat "$ws/keep")" keep
	run -0 $C apply --workspace "$ws" "$cs"
	assert_equal "$(cat "$ws/keep")" x
	assert_file_not_exist "$cs"
}

@test "apply that wrote every change but could not remove the change set (112), or was killed there: a rerun consumes it" {
	local how
	for how in error=EACCES:when=1 signal=KILL:when=3; do
		mkcs "$ws" "$cs" 'echo x >keep; echo n >src/new'
		# the removal's first unlink fails, as when the parent turns read-only
		# after the check; or the third, a kill half-way through the removal
		run --separate-stderr strace -f -o /dev/null -e trace=unlinkat -e inject=unlinkat:$how \
			$C apply --workspace "$ws" "$cs"
		if [ "$how" = error=EACCES:when=1 ]; then
			assert_equal "$status" 112
			assert_output '{"applied":"'"$cs"'","workspace":"'"$ws"'","written":2,"already":0,"skipped":0,"kept":true}'
			assert_equal "$stderr" "$C: fatal: applied '$cs' whole to '$ws', but unable to remove the change set; to fix: clear the cause and run sbx-changes discard '$cs': Permission denied"
		else
			assert_equal "$status" 137
		fi
		assert_equal "$(cat "$ws/keep")$(cat "$ws/src/new")" xn
		assert_file_exist "$cs/changeset"
		# the workspace holds every change: none is left to write
		run -0 --separate-stderr $C apply --workspace "$ws" "$cs"
		assert_output '{"applied":"'"$cs"'","workspace":"'"$ws"'","written":0,"already":0,"skipped":0,"kept":false}'
		assert_file_not_exist "$cs"
		echo keep >"$ws/keep"
		rm "$ws/src/new"
	done
}

@test "100,000 new files in one change set: listed, applied, none missed" {
	mkcs "$ws" "$cs" 'mkdir -p gen && cd gen && seq 100000 | xargs touch && echo last >100000'
	run -0 --separate-stderr $C list --workspace "$ws" "$cs"
	assert_equal "${#lines[@]}" 100001
	assert_equal "$stderr" ""
	run -0 --separate-stderr $C apply --workspace "$ws" "$cs"
	assert_output '{"applied":"'"$cs"'","workspace":"'"$ws"'","written":100001,"already":0,"skipped":0,"kept":false}'
	assert_equal "$(ls "$ws/gen" | wc -l)" 100000
	assert_equal "$(cat "$ws/gen/100000")" last
	run -1 grep -r sbx-changes <(ls -A "$ws/gen")
}

@test "the change set on another filesystem than the workspace: copied, not linked, and judged the same" {
	local small=$BATS_TEST_TMPDIR/small
	mkdir "$small"
	mount -t tmpfs -o size=8m tmpfs "$small"
	mv "$ws" "$small/ws"
	ws=$small/ws
	mkcs "$ws" "$cs" 'echo TWO >src/a.c; echo new >src/b.c; echo S=1 >.env'
	assert_not_equal "$(stat -c %d "$ws")" "$(stat -c %d "$cs/upper")"
	run -102 --separate-stderr $C apply --skip-refused --workspace "$ws" "$cs"
	assert_output '{"applied":"'"$cs"'","workspace":"'"$ws"'","written":2,"already":0,"skipped":1,"kept":true}'
	assert_equal "$stderr" "$C: warning: skipped '.env': deny-write: '.env' would be protected after apply
$C: fatal: applied '$cs' except 1 refused path, kept in it; to fix: review them, then discard the change set"
	assert_equal "$(cat "$ws/src/a.c")$(cat "$ws/src/b.c")" TWOnew
	assert_equal "$(stat -c %h "$ws/src/a.c") $(stat -c %h "$cs/upper/src/a.c")" "1 1"
	assert_file_not_exist "$ws/.env"
}

#!/usr/bin/env bats
# --help of every tool: usage lines, then one line per option, kept equal to
# the man page's OPTIONS (and to the option tables the parsers use), within
# 80 columns, on stdout, and an error when stdout does not take it.

load helpers

TOOLS="sbx-ns sbx-broker sbx-cgroup sbx-quota sbx-check sbx-seatbelt sbx-changes"

# The options a --help lists: the first word of each line that starts
# with two spaces and --.
help_opts() {
	"$SBX_BIN/$1" "${@:2}" --help | sed -n 's/^  --\([a-z0-9-]*\).*/\1/p' | sort -u
}

# The options a man page section documents: every --name in the tag line of
# each .TP entry (".BI \-\-ro " PATH" "\fR, \fP" \-\-rw " PATH"" names two)
# from the heading matching $2 to the next heading of its level or above.
man_opts() {
	awk -v want="$2" '
		/^\.S[HS] / { if (on && ($1 == ".SH" || lvl == ".SS")) on = 0 }
		$0 ~ want { on = 1; lvl = $1; next }
		on && tag { print }
		{ tag = ($0 == ".TP") }
	' "$SBX_ROOT/man/$1.1" | sed 's/\\-/-/g' | grep -o -- '--[a-z0-9-]*' | sed 's/^--//' | sort -u
}

# The options the parsers take: the names of the option tables in the
# tool's sources, and --version (taken before any table).
src_opts() {
	{ sed -n 's/^[[:space:]]*{ *"\([a-z0-9-]*\)", *SBX_.*/\1/p' "$SBX_ROOT"/cmd/"$1"/*.c; echo version; } | sort -u
}

man_all() {
	if [ "$1" = sbx-ns ]; then
		{ man_opts sbx-ns '^\.SH OPTIONS$'; man_opts sbx-ns '^\.SS Client options$'; } | sort -u
	else
		man_opts "$1" '^\.SH OPTIONS$'
	fi
}

@test "each tool's --help lists exactly the options of its man page's OPTIONS" {
	local t n
	for t in $TOOLS; do
		n=$(man_all "$t" | wc -l)
		# sbx-changes, the smallest, has five: --workspace, --deny-write, --skip-refused, --help, --version
		[ "$n" -ge 5 ] || fail "$t: only $n options found in man/$t.1"
		run diff -u --label "man/$t.1 OPTIONS" --label "$t --help" <(man_all "$t") <(help_opts "$t")
		assert_success
	done
}

@test "sbx-ns --join PATH --help lists exactly the man page's Client options" {
	run diff -u --label "man/sbx-ns.1 Client options" --label "sbx-ns --join PATH --help" \
		<(man_opts sbx-ns '^\.SS Client options$') \
		<(help_opts sbx-ns --join /nonexistent/ctl | grep -vx 'help\|version')
	assert_success
	run -0 --separate-stderr sbx-ns --join /nonexistent/ctl --help
	assert_line --index 0 "usage: sbx-ns --join PATH [OPTION]... [--] PROG [ARG]..."
	assert_line "Full reference: man sbx-ns"
}

@test "every option a parser takes is in --help, and every option --help lists is taken" {
	local t
	for t in $TOOLS; do
		# sbx-check --probe is the proof's own entry point inside the
		# sandbox, no option for a user.
		run diff -u --label "cmd/$t option tables" --label "$t --help" \
			<(src_opts "$t" | grep -vx probe) <(help_opts "$t")
		assert_success
	done
}

@test "--help: usage lines, one option a line, at most 80 columns, the man page last; on stdout, exit 0" {
	local t line seen all
	for t in $TOOLS; do
		run -0 --separate-stderr "$SBX_BIN/$t" --help
		assert_equal "$stderr" ""
		assert_line --index 0 --regexp "^usage: $t "
		assert_equal "${lines[-1]}" "Full reference: man $t"
		mapfile -t all <<<"$output" # with the blank lines between groups
		seen=" "
		for line in "${all[@]}"; do
			[ "${#line}" -le 80 ] || fail "$t: ${#line} columns: $line"
			case $line in
			"")
				seen=" " ;; # a new group: its options may repeat an earlier group's
			"  -"*)
				# The option, at most two arguments, two spaces, the description.
				[[ $line =~ ^\ \ --([a-z0-9-]+)(\ [^\ ]+){0,2}\ \ +[^\ ] ]] ||
					fail "$t: not one option and its description: $line"
				[[ $seen != *" ${BASH_REMATCH[1]} "* ]] || fail "$t: --${BASH_REMATCH[1]} twice"
				seen+="${BASH_REMATCH[1]} " ;;
			"   "*)
				[[ $line == "       $t "* ]] || fail "$t: a description on a line of its own: $line" ;;
			esac
		done
	done
}

@test "the man page's SYNOPSIS is the usage lines of --help" {
	local t help syn
	for t in $TOOLS; do
		help=$("$SBX_BIN/$t" --help | sed -n "1s/^usage: //p; 2,/^[^ ]/s/^       \($t .*\)/\1/p")
		syn=$(sed -n '/^\.SH SYNOPSIS/,/^\.fi/p' "$SBX_ROOT/man/$t.1" | grep -v '^\.' | sed 's/\\-/-/g')
		assert_equal "$help" "$syn"
	done
}

@test "--help with other options: first one wins, as the parser reads them" {
	local t
	for t in $TOOLS; do
		run -0 --separate-stderr "$SBX_BIN/$t" --help --bogus
		assert_line --index 0 --regexp "^usage: $t "
		assert_equal "$stderr" ""
		run -100 --separate-stderr "$SBX_BIN/$t" --bogus --help
		assert_equal "$stderr" "$t: usage: unknown option --bogus"
		assert_output ""
		run -100 --separate-stderr "$SBX_BIN/$t" -h
		assert_equal "$stderr" "$t: usage: unknown option -h (options are long: --name)"
		run -100 --separate-stderr "$SBX_BIN/$t" --help=x
		assert_equal "$stderr" "$t: usage: --help takes no value"
		assert_output ""
	done
	run -0 sbx-quota report --help
	assert_line --index 0 --regexp "^usage: sbx-quota "
	run -0 sbx-check proof --help
	assert_line --index 0 --regexp "^usage: sbx-check "
	run -0 sbx-check grant --help
	assert_line --index 0 --regexp "^usage: sbx-check "
}

@test "--help to a stdout that does not take it: closed, full, a reader gone; exit 111 and the reason" {
	local t
	for t in $TOOLS; do
		run -111 --separate-stderr sh -c '"$1" --help >&-' sh "$SBX_BIN/$t"
		assert_equal "$stderr" "$t: fatal: unable to write the help to stdout: Bad file descriptor"
		run -111 --separate-stderr sh -c '"$1" --help >/dev/full' sh "$SBX_BIN/$t"
		assert_equal "$stderr" "$t: fatal: unable to write the help to stdout: No space left on device"
		# A pipe whose reader is gone, SIGPIPE ignored as a supervisor may leave it.
		run -0 python3 -c '
import os, signal, subprocess, sys
r, w = os.pipe()
os.close(r)
signal.signal(signal.SIGPIPE, signal.SIG_IGN)
p = subprocess.run([sys.argv[1], "--help"], stdout=w, stderr=subprocess.PIPE, restore_signals=False)
print(p.returncode, p.stderr.decode().strip())
' "$SBX_BIN/$t"
		assert_output "111 $t: fatal: unable to write the help to stdout: Broken pipe"
	done
}

@test "--help to a full non-blocking pipe waits until it is read, and all of it arrives" {
	local t
	for t in $TOOLS; do
		run -0 python3 -c '
import fcntl, os, subprocess, sys
r, w = os.pipe()
fl = fcntl.fcntl(w, fcntl.F_GETFL)
fcntl.fcntl(w, fcntl.F_SETFL, fl | os.O_NONBLOCK)
filled = 0
while True:
    try:
        filled += os.write(w, b"x" * 4096)
    except BlockingIOError:
        break
p = subprocess.Popen([sys.argv[1], "--help"], stdout=w)
os.close(w)
got = b""
while True:
    b = os.read(r, 65536)
    if not b:
        break
    got += b
want = subprocess.run([sys.argv[1], "--help"], stdout=subprocess.PIPE).stdout
print(p.wait(), got[filled:] == want, filled > 0)
' "$SBX_BIN/$t"
		assert_output "0 True True"
	done
}

# The sections of a page, in order: the ones every page has, and between
# OPTIONS and EXIT STATUS the page's own topics (sbx-ns: DENY-WRITE,
# GRANTS, CHANGE SETS, LIVING SANDBOXES among them).
@test "each man page has its sections in the one order, renders without a warning, and has 3 to 5 examples" {
	local t secs want n
	want="NAME SYNOPSIS DESCRIPTION OPTIONS @ EXIT_STATUS ENVIRONMENT FILES EXAMPLES SECURITY SEE_ALSO"
	for t in $TOOLS; do
		secs=$(sed -n 's/^\.SH //p' "$SBX_ROOT/man/$t.1" | tr -d '"' | sed 's/\\-/-/g; s/ /_/g' |
			awk -v want="$want" 'BEGIN { n = split(want, w, " ") }
				{ s[++m] = $0 }
				END {
					# The page with its topics, between OPTIONS and EXIT STATUS, as one "@".
					out = ""
					for (i = 1; i <= m; i++) {
						out = out (out == "" ? "" : " ") s[i]
						if (s[i] == "OPTIONS") { out = out " @"; while (i < m && s[i + 1] != "EXIT_STATUS") i++ }
					}
					print out
				}')
		assert_equal "$t: $secs" "$t: $want"
		run -0 groff -man -ww -z "$SBX_ROOT/man/$t.1"
		assert_output ""
		n=$(sed -n '/^\.SH EXAMPLES/,/^\.SH /p' "$SBX_ROOT/man/$t.1" | grep -c '^\.nf$')
		[ "$n" -ge 3 ] && [ "$n" -le 5 ] || fail "$t: $n examples, not 3 to 5"
	done
	# The topics sbx-ns keeps as sections of their own.
	for n in 'DENY\\-WRITE' GRANTS 'CHANGE SETS' 'LIVING SANDBOXES'; do
		grep -qx ".SH $n" "$SBX_ROOT/man/sbx-ns.1" || fail "sbx-ns.1 has no section $n"
	done
}

@test "each option is documented once in its page's OPTIONS: one entry, found by its name" {
	local t dup
	for t in $TOOLS; do
		dup=$(awk '/^\.SH / { on = ($0 == ".SH OPTIONS") } on && tag { print } { tag = ($0 == ".TP") }' \
			"$SBX_ROOT/man/$t.1" | sed 's/\\-/-/g' | grep -o -- '--[a-z0-9-]*' | sort | uniq -d)
		assert_equal "$t: ${dup//$'\n'/ }" "$t: "
	done
}

#!/usr/bin/env bats
# Every recipe of README.md and docs/*.md, run as written and compared with
# what the page says it prints (tests/recipes.bash has the rules; the
# grammar is in docs/testing.md). This suite checks the marks and runs the
# recipes of the host itself: unprivileged and as root. A recipe that needs
# more (a TLS origin, podman, docker, a Debian root, the VM) names its
# environment, and the suite that owns it runs it (RECIPE_ENVS). And the
# README's shape: at most 600 lines, no paragraph longer than 8.

load helpers
load recipes

setup_file() {
	sbx_test_user
	recipes_setup
}

teardown_file() {
	[ -z "${RECIPE_DIR:-}" ] || rm -rf "$RECIPE_DIR"
}

@test "every recipe is marked in a way the suites know, and each that runs says what it prints" {
	local n kind mark where e owners=" " bad=0 run=0 skipped=0
	[ "$RECIPE_COUNT" -ge 10 ] || fail "only $RECIPE_COUNT recipes found"
	for e in $RECIPE_ENVS; do owners+="${e%%:*} "; done
	for ((n = 1; n <= RECIPE_COUNT; n++)); do
		kind=$(recipe_kind "$RECIPE_DIR" "$n")
		mark=$(recipe_mark "$RECIPE_DIR" "$n")
		where=$(recipe_where "$RECIPE_DIR" "$n")
		case $kind in
		not-run)
			[[ $mark =~ ^not\ run:\ [^\ ] ]] || { echo "$where: a recipe not run must say why"; bad=1; }
			echo "# not run: $where: ${mark#not run: }" >&3
			skipped=$((skipped + 1))
			continue ;;
		env=*)
			[[ $owners == *" ${kind#env=} "* ]] || { echo "$where: no suite owns environment ${kind#env=}"; bad=1; } ;;
		esac
		# The marker's words: root, vm, env=NAME, each once.
		for e in $mark; do
			case $e in root | vm | env=*) ;; *) echo "$where: unknown word '$e' in its mark"; bad=1 ;; esac
		done
		[ -f "$RECIPE_DIR/$n.out" ] || { echo "$where: no \`\`\`text block after it says what it prints"; bad=1; }
		run=$((run + 1))
	done
	echo "# $RECIPE_COUNT recipes: $run run, $skipped not run" >&3
	for kind in user root vm $(for e in $RECIPE_ENVS; do echo "env=${e%%:*}"; done); do
		echo "# $kind: $(recipes_of "$RECIPE_DIR" "$kind" | wc -l)" >&3
	done
	[ "$bad" = 0 ]
}

@test "each environment's suite runs its recipes" {
	local e f
	for e in $RECIPE_ENVS; do
		f=${e#*:}
		grep -q "recipes_run_kind env=${e%%:*}\( \|\$\)" "$SBX_ROOT/$f" ||
			fail "$f does not run the recipes of environment ${e%%:*}"
	done
	grep -q 'recipes_run_kind vm$' "$SBX_ROOT/tests/vm/62-recipes.bats" || fail "tests/vm/62-recipes.bats does not run the vm recipes"
}

@test "the recipes run as an unprivileged user print what they say" {
	recipes_run_kind user
}

@test "the recipes run as root print what they say" {
	recipes_run_kind root
}

# The runner itself, on a page of its own: a recipe that prints something
# else, one more or one less line, exits non-zero or says nothing of what it
# prints fails; "…" matches within a line, and a line of it any lines.
@test "the runner fails a recipe whose output or exit differs, and matches … as the grammar says" {
	local d n
	d=$(mktemp -d "$SBX_ROOT/build/recipes-self.XXXXXX")
	cat >"$d/page.md" <<-'MD'
	<!-- recipe: root -->
	```sh
	printf 'a 1 b\nx\ny\nz\n'
	```

	```text
	a … b
	…
	z
	```

	<!-- recipe: root -->
	```sh
	echo one; echo two
	```
	```text
	one
	```

	<!-- recipe: root -->
	```sh
	echo one
	```
	```text
	one
	two
	```

	<!-- recipe: root -->
	```sh
	echo one; false
	```
	```text
	one
	```

	<!-- recipe: root -->
	```sh
	echo silent
	```

	<!-- recipe: root -->
	```sh
	echo 'a1b'
	```
	```text
	a…c
	```
	MD
	n=$(recipes_extract "$d/x" "$d/page.md")
	assert_equal "$n" 6
	run -0 recipe_run "$d/x" 1
	run -1 recipe_run "$d/x" 2
	assert_line "output line 2 not expected: two"
	run -1 recipe_run "$d/x" 3
	assert_line "output line 2 missing; expected: two"
	run -1 recipe_run "$d/x" 4
	assert_line "$d/page.md:30: exit 1, not 0; its output:"
	run -1 recipe_run "$d/x" 5
	assert_output "$d/page.md:38: no \`\`\`text block says what it prints"
	run -1 recipe_run "$d/x" 6
	assert_line "  expected: a…c"
	rm -rf "$d"
}

@test "README.md: at most 600 lines, no paragraph longer than 8 lines" {
	local n
	n=$(wc -l <"$SBX_ROOT/README.md")
	[ "$n" -le 600 ] || fail "README.md has $n lines"
	# A paragraph: lines that are not blank, outside fenced blocks, indented
	# blocks and tables; a list item starts one of its own.
	run -0 awk '
		/^```/ { fence = !fence; len = 0; next }
		fence || /^    / || /^\|/ || /^<!--/ { len = 0; next }
		/^[[:space:]]*$/ { len = 0; next }
		/^(- |[0-9]+\. |#)/ { len = 0 }
		{ if (++len > 8) { print FILENAME ":" FNR ": a paragraph longer than 8 lines"; bad = 1 } }
		END { exit bad }' "$SBX_ROOT/README.md"
	assert_output ""
}

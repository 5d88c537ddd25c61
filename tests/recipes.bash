# The recipes of README.md and docs/*.md, run as written: `load recipes`
# (after helpers) on the host, `. /sbx/tests/helpers/recipes.bash` in the
# VM. docs/testing.md ("Recipes") is the grammar this reads:
#
# - A recipe is a fenced block opened by a line "```sh" and closed by "```".
# - The nearest non-blank line above it may mark it:
#     <!-- recipe: WORD... -->        WORD: root, vm, env=NAME
#     <!-- recipe: not run: REASON -->
#   Unmarked, it runs as the unprivileged test user; root runs it as root;
#   vm runs it as root in the VM suite (tests/vm/62-recipes.bats); env=NAME
#   runs it as root in the suite that owns environment NAME (RECIPE_ENVS).
# - What it prints is the next fenced block, opened by "```text", with only
#   blank lines between. Every recipe that runs has one.
# - The block's stdout and stderr together must equal the text block line by
#   line. "…" in a line matches any characters of that line (none too); a
#   line holding only "…" matches any lines (none too) up to the first one
#   that matches the text block's next line, or all the rest when it is the
#   last. The block's exit status must be 0.
#
# Each recipe runs in a new bash (no profile, no rc file), from the
# repository's top directory, with stdin from /dev/null, PATH=$SBX_BIN
# first and LANG=C.UTF-8, and a HOME of its own. As the user: HOME is a new
# directory of the user's under $RECIPE_DIR. As root (root, env=NAME): in a
# mount, pid and network namespace of its own (lo up, no other interface
# unless the suite's RECIPE_NETNS names a network namespace to run in), /etc
# an overlay whose writes are kept apart, and /tmp, /var/tmp and /run new
# tmpfs mounts; so nothing a recipe makes (a user, a file in /etc, a
# process) outlives it on the host. A suite's recipe_prepare function, when
# it has one, runs in that namespace as root once /etc is the overlay and
# before the new tmpfs mounts hide the host's /tmp, /var/tmp and /run;
# RECIPE_VARS (NAME=VALUE words) are added to the block's environment.
# With RECIPE_CHROOT, a root of the suite's, the recipe runs in that root
# instead, from RECIPE_CWD there.

# Environment names and the suites that run their recipes.
RECIPE_ENVS="egress:tests/44-broker-address.bats service:tests/84-service-clients.bats
podman:tests/80-container.bats kube:tests/80-container.bats docker:tests/82-docker.bats
deb:tests/90-deb.bats"

# recipes_extract DIR FILE...: each recipe into DIR as N.sh, what it prints
# as N.out, and N.tag: "FILE LINE MARK" (MARK: what the marker says, or
# nothing). Prints the number of recipes.
recipes_extract() {
	local dir=$1
	shift
	mkdir -p "$dir"
	awk -v dir="$dir" '
		FNR == 1 { prev = ""; pending = 0 }
		inb {
			if ($0 == "```") { inb = 0; close(cur); if (kind == "sh") pending = n; prev = "```"; next }
			print > cur
			next
		}
		$0 == "```sh" {
			n++
			cur = dir "/" n ".sh"
			printf "" > cur
			mark = ""
			if (prev ~ /^<!-- recipe: .* -->$/) mark = substr(prev, 14, length(prev) - 17)
			print FILENAME, FNR, mark > (dir "/" n ".tag")
			close(dir "/" n ".tag")
			inb = 1; kind = "sh"; pending = 0
			next
		}
		$0 == "```text" && pending {
			cur = dir "/" pending ".out"
			printf "" > cur
			inb = 1; kind = "text"; pending = 0
			next
		}
		/^```/ { inb = 1; kind = "other"; cur = "/dev/null"; pending = 0; next }
		/[^[:space:]]/ { prev = $0; pending = 0 }
		END { print n + 0 }
	' "$@"
}

# recipe_where DIR N: "FILE:LINE" of recipe N.
recipe_where() {
	local f l
	read -r f l _ <"$1/$2.tag"
	echo "$f:$l"
}

# recipe_mark DIR N: its marker's words.
recipe_mark() {
	local f l m
	read -r f l m <"$1/$2.tag"
	echo "$m"
}

# recipe_kind DIR N: user, root, vm, env=NAME, or not-run.
recipe_kind() {
	local m
	m=$(recipe_mark "$1" "$2")
	case " $m " in
	" not run:"*) echo not-run ;;
	*" vm "*) echo vm ;;
	*" env="*) m=${m#*env=}; echo "env=${m%% *}" ;;
	*" root "*) echo root ;;
	*) echo user ;;
	esac
}

# recipes_of DIR KIND: the numbers of the recipes of that kind.
recipes_of() {
	local n
	for n in $(cd "$1" && ls -- *.tag 2>/dev/null | sed 's/\.tag$//' | sort -n); do
		[ "$(recipe_kind "$1" "$n")" = "$2" ] && echo "$n"
	done
}

# recipe_line_match PATTERN LINE: "…" in PATTERN matches any characters.
recipe_line_match() {
	local pat=$1 s=$2 part
	[[ $pat == *…* ]] || { [ "$pat" = "$s" ]; return; }
	part=${pat%%…*}
	[[ $s == "$part"* ]] || return 1
	s=${s#"$part"}
	pat=${pat#*…}
	while [[ $pat == *…* ]]; do
		part=${pat%%…*}
		pat=${pat#*…}
		[[ $s == *"$part"* ]] || return 1
		s=${s#*"$part"}
	done
	[[ $s == *"$pat" ]]
}

# recipe_match WANT GOT: the output GOT against the text block WANT; the
# first difference on stdout, and 1, when they differ.
recipe_match() {
	local -a want got
	local i=0 j=0
	mapfile -t want <"$1"
	mapfile -t got <"$2"
	while [ "$i" -lt "${#want[@]}" ]; do
		if [ "${want[i]}" = "…" ]; then
			i=$((i + 1))
			[ "$i" -lt "${#want[@]}" ] || return 0
			while [ "$j" -lt "${#got[@]}" ] && ! recipe_line_match "${want[i]}" "${got[j]}"; do
				j=$((j + 1))
			done
			continue
		fi
		if [ "$j" -ge "${#got[@]}" ]; then
			echo "output line $((j + 1)) missing; expected: ${want[i]}"
			return 1
		fi
		if ! recipe_line_match "${want[i]}" "${got[j]}"; then
			printf 'output line %d differs\n  expected: %s\n  got:      %s\n' $((j + 1)) "${want[i]}" "${got[j]}"
			return 1
		fi
		i=$((i + 1))
		j=$((j + 1))
	done
	if [ "$j" -lt "${#got[@]}" ]; then
		echo "output line $((j + 1)) not expected: ${got[j]}"
		return 1
	fi
}

# What every recipe's shell gets, beside HOME.
RECIPE_PATH="$SBX_BIN:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# recipe_run DIR N: runs recipe N as its marker says and compares what it
# printed; on a difference, the recipe's place, the difference and its whole
# output on stdout, and 1.
recipe_run() {
	local d=$1 n=$2 kind out rc home where
	kind=$(recipe_kind "$d" "$n")
	where=$(recipe_where "$d" "$n")
	out=$d/$n.got
	[ -f "$d/$n.out" ] || { echo "$where: no \`\`\`text block says what it prints"; return 1; }
	case $kind in
	user)
		home=$(mktemp -d "$d/home.XXXXXX")
		chown "$SBX_TEST_UID:$SBX_TEST_GID" "$home"
		chmod 0700 "$home"
		chmod a+r "$d/$n.sh"
		(cd "$SBX_ROOT" && setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" --init-groups --reset-env -- \
			env HOME="$home" USER="$SBX_TEST_USER" LOGNAME="$SBX_TEST_USER" PATH="$RECIPE_PATH" LANG=C.UTF-8 \
			timeout -k 10 900 bash --noprofile --norc "$d/$n.sh") </dev/null >"$out" 2>&1
		rc=$?
		rm -rf "$home"
		;;
	root | env=* | vm)
		recipe_run_root "$d" "$n" >"$out" 2>&1
		rc=$?
		;;
	*)
		echo "$where: $kind: not a recipe to run"
		return 1
		;;
	esac
	if [ "$rc" -ne 0 ]; then
		echo "$where: exit $rc, not 0; its output:"
		cat "$out"
		return 1
	fi
	recipe_match "$d/$n.out" "$out" >"$d/$n.diff" && return 0
	echo "$where: does not print what it says:"
	cat "$d/$n.diff"
	echo "its output:"
	cat "$out"
	return 1
}

# The namespaces a root recipe runs in (see the top of this file). In the
# VM (RECIPE_ISOLATE=0) it runs as it is: the VM is the fresh machine.
recipe_run_root() {
	local d=$1 n=$2 s pre=()
	s=$(mktemp -d "$d/root.XXXXXX")
	mkdir "$s/etc-u" "$s/etc-w" "$s/home"
	chmod 0700 "$s/home"
	if [ "${RECIPE_ISOLATE:-1}" = 0 ]; then
		(cd "$SBX_ROOT" && env -i HOME="$s/home" USER=root LOGNAME=root PATH="$RECIPE_PATH" LANG=C.UTF-8 \
			${RECIPE_VARS[@]+"${RECIPE_VARS[@]}"} timeout -k 10 900 bash --noprofile --norc "$d/$n.sh") </dev/null
		return
	fi
	if [ -n "${RECIPE_CHROOT:-}" ]; then
		# A root of the suite's (tests/90-deb: a Debian 12 root with the
		# package beside RECIPE_CWD): the recipe runs there, with its own
		# mount, pid and network namespaces and the root's own PATH.
		cp "$d/$n.sh" "$RECIPE_CHROOT/tmp/recipe.sh"
		unshare -mpfn --mount-proc="$RECIPE_CHROOT/proc" chroot "$RECIPE_CHROOT" bash -c '
			cd "$1" && exec env -i HOME=/root USER=root LOGNAME=root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
				bash --noprofile --norc /tmp/recipe.sh' bash "${RECIPE_CWD:-/root}" </dev/null
		return
	fi
	case $SBX_ROOT/ in
	/tmp/* | /var/tmp/* | /run/*)
		echo "recipes: $SBX_ROOT lies under /tmp, /var/tmp or /run, which a root recipe gets anew: clone it elsewhere"
		return 1 ;;
	esac
	local ns=(-n)
	[ -z "${RECIPE_NETNS:-}" ] || { pre=(ip netns exec "$RECIPE_NETNS"); ns=(); }
	[ "$(type -t recipe_prepare)" = function ] || recipe_prepare() { :; }
	export -f recipe_prepare
	"${pre[@]}" unshare -m -p -f --mount-proc --propagation private "${ns[@]}" bash -c '
		s=$1 block=$2 root=$3 path=$4
		shift 4
		ip link set lo up &&
			mount -t overlay overlay -o "lowerdir=/etc,upperdir=$s/etc-u,workdir=$s/etc-w" /etc &&
			recipe_prepare &&
			mount -t tmpfs -o mode=1777 tmpfs /tmp &&
			mount -t tmpfs -o mode=1777 tmpfs /var/tmp &&
			mount -t tmpfs -o mode=0755 tmpfs /run || { echo "recipes: unable to prepare the namespaces of $block" >&2; exit 111; }
		cd "$root" && exec env -i HOME="$s/home" USER=root LOGNAME=root PATH="$path" LANG=C.UTF-8 "$@" \
			timeout -k 10 900 bash --noprofile --norc "$block"' bash "$s" "$d/$n.sh" "$SBX_ROOT" "$RECIPE_PATH" \
		${RECIPE_VARS[@]+"${RECIPE_VARS[@]}"} </dev/null
}

# recipes_setup: RECIPE_DIR, a new directory (outside /tmp, /var/tmp and
# /run, which root recipes get anew) holding every recipe of README.md and
# docs/*.md; RECIPE_COUNT their number.
recipes_setup() {
	mkdir -p "$SBX_ROOT/build"
	RECIPE_DIR=$(mktemp -d "$SBX_ROOT/build/recipes.XXXXXX")
	chmod 0755 "$RECIPE_DIR"
	RECIPE_COUNT=$(cd "$SBX_ROOT" && recipes_extract "$RECIPE_DIR" README.md docs/*.md)
	export RECIPE_DIR RECIPE_COUNT
}

# recipes_run_kind KIND: every recipe of that kind, each run even when an
# earlier one failed; 1 if any failed (each failure said on stdout). A kind
# that has no recipe fails too: its suite would test nothing.
recipes_run_kind() {
	local n failed=0 ran=0
	for n in $(recipes_of "$RECIPE_DIR" "$1"); do
		ran=$((ran + 1))
		recipe_run "$RECIPE_DIR" "$n" || failed=1
	done
	[ "$ran" -gt 0 ] || { echo "no recipe of kind $1 in README.md or docs/*.md"; return 1; }
	return "$failed"
}

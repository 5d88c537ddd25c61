#!/usr/bin/env bats
# The broker's systemd units, as shipped in contrib/systemd/: systemd's own
# checker accepts them, systemd's own rating of the service's confinement is
# at most 2.0 ("OK"), and the service's exact command line serves a real
# sandbox through systemd-socket-activate (this machine does not boot
# systemd), as an unprivileged user with no capabilities, on a socket with
# the socket unit's owner, group and mode.
#
# Not testable without a booted systemd: that systemd applies the service's
# sandboxing (DynamicUser=, the mount namespace, the seccomp filter,
# RestrictAddressFamilies=), LoadCredential=, and that it creates the socket
# with SocketUser=/SocketGroup=/SocketMode= and DirectoryMode=. The tests
# below make the socket as those lines say and run the broker as the
# service's kind of user; systemd-analyze checks every directive's syntax.

load helpers
load ns-net
bats_require_minimum_version 1.5.0

UNITS="$SBX_ROOT/contrib/systemd"
SERVICE="$UNITS/sbx-broker@.service"
SOCKET="$UNITS/sbx-broker@.socket"

setup_file() {
	net_setup_file
	# The installed path the units name (make install's PREFIX, rewritten
	# to /usr by the Debian package), in a private mount namespace only.
	mkdir -p "$NET_DIR/usrbin"
	cp "$SBX_BIN/sbx-broker" "$NET_DIR/usrbin/"
	# systemd-analyze verify runs man(1) on Documentation=: the pages of
	# the tree under test.
	mkdir -p "$NET_DIR/man"
	ln -s "$SBX_ROOT/man" "$NET_DIR/man/man1"
}

teardown_file() {
	net_teardown_file
}

teardown() {
	bg_end
}

# unit_value FILE KEY: the one KEY= line of FILE, its value.
unit_value() {
	local n
	n=$(grep -c "^$2=" "$1") || :
	[ "$n" = 1 ] || { echo "$1: $n lines $2=, the test reads exactly one" >&2; return 1; }
	sed -n "s/^$2=//p" "$1"
}

@test "systemd-analyze verify accepts both units as shipped, the binary at the path they name" {
	local exe
	exe=$(unit_value "$SERVICE" ExecStart | cut -d' ' -f1)
	assert_equal "$exe" /usr/local/bin/sbx-broker
	run -0 env MANPATH="$NET_DIR/man" unshare -m --propagation private sh -c \
		'mount --bind "$0" /usr/local/bin && exec systemd-analyze verify "$@"' \
		"$NET_DIR/usrbin" "$SERVICE" "$SOCKET"
	assert_output ""
}

@test "systemd-analyze security --offline=true rates the service at most 2.0 (OK)" {
	local fig
	run -0 systemd-analyze security --offline=true --no-pager "$SERVICE"
	fig=$(sed -n 's/^→ Overall exposure level for sbx-broker@i\.service: \([0-9]*\.[0-9]\) .*/\1/p' <<<"$output")
	[ -n "$fig" ] || { echo "no exposure figure in: $output" >&2; return 1; }
	echo "# systemd-analyze security: sbx-broker@.service exposure $fig" >&3
	# Tenths, as integers: 2.0 is 20.
	[ "${fig/./}" -le 20 ] || { echo "exposure $fig is above 2.0: $output" >&2; return 1; }
	assert_output --partial "$fig OK"
}

@test "the service's directives: a dynamic user, no capabilities, the filters the broker's calls fit in" {
	local k
	for k in DynamicUser=yes NoNewPrivileges=yes CapabilityBoundingSet= AmbientCapabilities= ProtectSystem=strict \
		ProtectHome=yes PrivateTmp=yes PrivateDevices=yes PrivateIPC=yes ProtectProc=invisible ProcSubset=pid \
		"RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK" RestrictNamespaces=yes \
		MemoryDenyWriteExecute=yes SystemCallArchitectures=native "SystemCallFilter=@system-service" \
		"SystemCallFilter=~@privileged @resources" UMask=0077; do
		run -0 grep -cxF "$k" "$SERVICE"
		assert_output 1
	done
	# No address list: the broker's own rule decides what it dials.
	run -1 grep -E '^IPAddress(Allow|Deny)=' "$SERVICE"
}

# sa_start INSTANCE CONF: the service's ExecStart for INSTANCE, its
# $SBX_BROKER_ARGS from CONF (the EnvironmentFile's lines), under
# systemd-socket-activate on $NET_DIR/INSTANCE/broker.sock, in "h" with its
# /etc/hosts. The socket is made by root with the socket unit's group (the
# kernel gives a socket its creator's egid) and given the unit's mode
# before any client connects (systemd-socket-activate has no option for
# it); then the broker drops to a uid of systemd's dynamic range, that
# group only, no capability, no_new_privs, as DynamicUser= and the empty
# CapabilityBoundingSet= would.
sa_start() {
	local inst=$1 conf=$2 line mode group gid sock w
	local -a cmd=() words=() args=()
	line=$(unit_value "$SERVICE" ExecStart)
	# The parser below takes words, %i and $VAR; anything else is refused.
	case $line in
	*[\"\'\\\;]* | [-@:+!]*) echo "ExecStart has quoting or a prefix the test does not parse: $line" >&2; return 1 ;;
	esac
	line=${line//%i/$inst}
	line=${line//%I/$inst}
	case $line in *%*) echo "ExecStart has a specifier the test does not parse: $line" >&2; return 1 ;; esac
	read -ra words <<<"$line"
	for w in "${words[@]}"; do
		if [ "$w" = '$SBX_BROKER_ARGS' ]; then
			# Unbraced $VAR: split on white space, as systemd does.
			read -ra args < <(sed -n 's/^SBX_BROKER_ARGS=//p' "$conf")
			cmd+=("${args[@]}")
		else
			case $w in *'$'*) echo "ExecStart names a variable the test does not know: $w" >&2; return 1 ;; esac
			cmd+=("$w")
		fi
	done
	mode=$(unit_value "$SOCKET" SocketMode)
	group=$(unit_value "$SOCKET" SocketGroup)
	assert_equal "$(unit_value "$SOCKET" SocketUser)" root
	assert_equal "$(unit_value "$SOCKET" ListenStream)" '/run/sbx/%i/broker.sock'
	gid=$(getent group "$group" | cut -d: -f3)
	sock="$NET_DIR/$inst/broker.sock"
	mkdir -p "$NET_DIR/$inst"
	chmod "$(unit_value "$SOCKET" DirectoryMode)" "$NET_DIR/$inst"
	ip netns exec "$NH" unshare -m --propagation private sh -c \
		'mount --bind "$0/hosts" /etc/hosts && mount --bind "$0/resolv.conf" /etc/resolv.conf &&
		 mount --bind "$0/usrbin" /usr/local/bin && exec "$@"' \
		"$NET_DIR" setpriv --regid="$gid" --clear-groups -- \
		systemd-socket-activate -l "$sock" \
		setpriv --reuid=61999 --regid="$gid" --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- \
		"${cmd[@]}" </dev/null >/dev/null 2>>"$NET_DIR/$inst.err" 3>&- &
	BG_PIDS+=("$!")
	wait_for "[ -S '$sock' ] || ! kill -0 $!"
	[ -S "$sock" ] || { cat "$NET_DIR/$inst.err" >&2; return 1; }
	chmod "$mode" "$sock"
}

@test "socket activation: the unit's command line serves a sandbox of a member of the socket's group, and no one else" {
	local ws sock group gid
	group=$(unit_value "$SOCKET" SocketGroup)
	getent group "$group" >/dev/null || groupadd --system "$group"
	gid=$(getent group "$group" | cut -d: -f3)
	printf '# sandbox job1\nSBX_BROKER_ARGS=--allow-host origin.test  --allow-private-networks\n' >"$NET_DIR/job1.conf"
	sa_start job1 "$NET_DIR/job1.conf"
	sock="$NET_DIR/job1/broker.sock"
	run -0 stat -c '%a %U %G' "$sock"
	assert_output "660 root $group"
	run -0 stat -c '%a' "$NET_DIR/job1"
	assert_output 711
	ws=$(ns_ws)
	# A member of the group: through the broker to the origin.
	run -0 --separate-stderr ip netns exec "$NH" setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" \
		--groups="$gid" --reset-env -- env PATH="$SBX_BIN:/usr/local/bin:/usr/bin:/bin" \
		"$SBX_BIN/sbx-ns" --workspace "$ws" --net "broker:$sock" -- curl -sS http://origin.test/
	assert_output "hello"
	assert_equal "$stderr" ""
	# Only the listed name: the policy came from the EnvironmentFile.
	run -22 --separate-stderr ip netns exec "$NH" setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" \
		--groups="$gid" --reset-env -- env PATH="$SBX_BIN:/usr/local/bin:/usr/bin:/bin" \
		"$SBX_BIN/sbx-ns" --workspace "$ws" --net "broker:$sock" -- curl -sSf http://other.test/
	assert_equal "$stderr" "curl: (22) The requested URL returned error: 403
sbx-ns: note: the broker refused 1 connection: other.test:80: host other.test not on the allowlist (--allow-host) (1)"
	# Not a member: refused before the sandbox starts.
	run -102 --separate-stderr nsh_user --workspace "$ws" --net "broker:$sock" -- touch "$ws/ran"
	assert_equal "$stderr" "sbx-ns: fatal: refusing to run: permission denied on the broker socket $sock (sbx-broker --socket-mode and --socket-group open it to other users)"
	assert_file_not_exists "$ws/ran"
	# The broker is the unprivileged user, with no capability at all.
	# Every step from `ip netns exec` to the broker execs in place: one pid.
	local pid=${BG_PIDS[0]}
	run -0 cat "/proc/$pid/cmdline"
	assert_output "$(printf '%s\0' /usr/local/bin/sbx-broker --allow-host origin.test --allow-private-networks)"
	run -0 awk '/^(Uid|Gid|Groups|CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs):/ { $1 = $1; print }' "/proc/$pid/status"
	assert_output "Uid: 61999 61999 61999 61999
Gid: $gid $gid $gid $gid
Groups:
CapPrm: 0000000000000000
CapEff: 0000000000000000
CapBnd: 0000000000000000
CapAmb: 0000000000000000
NoNewPrivs: 1"
}

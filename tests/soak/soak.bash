#!/bin/bash
# The soak, inside the VM (tests/soak/run.sh boots it, tests/soak/soak.bats
# runs this): SOAK_SANDBOXES living sandboxes, each under its own
# sbx-cgroup (memory and pids totals, per-command cgroups) with a workspace
# of its own under an XFS project quota (the odd ones with --changes), all
# behind one sbx-broker started the socket unit's way; 16 workers run tool
# calls into random sandboxes while faults from a seeded schedule hit them;
# the invariants are checked after every fault and at the end.
#
# What the host reads goes to fd 3 as "# SOAK WORD ..." lines
# (tests/soak/report.py); the last line is
#   soak: N calls, F faults, L lost, K leaked
# and the exit status is 0 only when L and K are 0.
set -u
. /sbx/extra/params # SOAK_SECONDS SOAK_SANDBOXES SOAK_SEED SOAK_TOKEN
X=/sbx/extra
R=$SBX_VM_CGROUP
S=/run/soak
W=/mnt/xfs/soak
BSOCK=$S/broker.sock
# The broker's socket is held for the harness's life on fd 9, as a socket
# unit holds it: every broker started here gets it.
if [ -z "${SOAK_HELD:-}" ]; then
	rm -rf $S $W
	mkdir -p $S
	SOAK_HELD=1 exec listen-unix $BSOCK 9 bash "$0"
fi
N=$SOAK_SANDBOXES
WORKERS=16
GRACE=30          # a call may end this many seconds after its own limit
CALL_LIMIT=60     # the limit of a call that sets none
FAULT_EVERY=15    # seconds between two faults (fewer in a short run)
RSS_SLACK_KB=4096 # at the end: RSS within start + 25% + this
FD_SLACK=4        # at the end, no call running: fds within start + this
say() { echo "# SOAK $*" >&3; }
now() { echo "${EPOCHREALTIME/./}"; } # microseconds
T0=$(now)
rel() { echo $((($(now) - T0) / 1000)); } # ms since the start
leak() { echo "$*" >>$S/leaks; say "leak $(rel) $*"; }
lost() { echo "$*" >>$S/lost; say "lost $(rel) $*"; }

# --- set-up ---------------------------------------------------------------
mkdir -p $S/sb $S/w $W
: >$S/leaks
: >$S/lost
echo 0 >$S/pressures
# The origins, in a network namespace of their own behind a veth pair: an
# allowlisted HTTP origin (busybox httpd, port 80) and a TLS origin
# (openssl s_server, 443) behind the service route "tls".
ip netns add soak-origin
ip link add soak0 type veth peer name soak1
ip link set soak1 netns soak-origin
ip addr add 198.18.0.1/30 dev soak0 && ip link set soak0 up
ip netns exec soak-origin sh -c 'ip addr add 198.18.0.2/30 dev soak1 && ip link set soak1 up && ip link set lo up'
mkdir -p $S/www && echo "soak origin" >$S/www/hello.txt
ip netns exec soak-origin busybox httpd -f -p 198.18.0.2:80 -h $S/www 9<&- &
ORIGINS=$!
ip netns exec soak-origin openssl s_server -quiet -accept 198.18.0.2:443 -naccept 1000000000 \
	-cert $X/pki/good.pem -key $X/pki/good.key -www 9<&- </dev/null >$S/tls.log 2>&1 &
ORIGINS="$ORIGINS $!"
echo "198.18.0.2 origin.test tls.test" >>/etc/hosts
(umask 077 && echo "Authorization: Bearer $SOAK_TOKEN" >$S/token.hdr)
BROKER_ARGS=(--allow-host origin.test --allow-port 80 --allow-address 198.18.0.2/32
	--service tls=https://tls.test --service-ca tls=$X/pki/ca.pem --service-header tls=$S/token.hdr
	--log-fd 4)
BGEN=0
broker_start() {
	BGEN=$((BGEN + 1))
	mkfifo $S/broker.ready
	bash -c 'export LISTEN_PID=$$ LISTEN_FDS=1; exec sbx-broker "$@" --ready-fd 5' \
		broker "${BROKER_ARGS[@]}" 3<&9 4>>$S/broker.log 5>$S/broker.ready 9<&- </dev/null 2>>$S/broker.err &
	BPID=$!
	echo $BPID >$S/broker.pid
	read -r _ <$S/broker.ready
	rm -f $S/broker.ready
	if [ ! -e /proc/$BPID ]; then
		lost "the broker did not start: $(tail -n 2 $S/broker.err | tr '\n' ' ')"
		exit 1
	fi
	echo "$BGEN" >$S/broker.gen
}

# Sandbox n, generation g: workspace $W/wsn, change set $W/chn (odd n),
# socket $S/sb/n.sock, cgroup $R/soak-n-g.
sb_prepare() {
	local n=$1 w=$W/ws$1 ch=() id=(-c user.name=soak -c user.email=soak@soak.test)
	mkdir -p $w
	git -C $w init -q --template= && echo "soak $n" >$w/README && git -C $w "${id[@]}" add README &&
		git -C $w "${id[@]}" commit -q -m init || return 1
	chown -R 1000:1000 $w
	if [ $((n % 2)) = 1 ]; then
		mkdir -m 0700 $W/ch$n && chown 1000:1000 $W/ch$n
		ch=(--changes $W/ch$n)
	fi
	sbx-quota prepare --workspace $w --project $((5000 + n)) --disk 48M --inodes 8000 "${ch[@]}" >/dev/null ||
		return 1
	cp $w/.git/config $S/sb/$n.config
}
sb_start() {
	local n=$1 g ch=()
	g=$(($(cat $S/sb/$n.gen 2>/dev/null || echo 0) + 1))
	[ $((n % 2)) = 0 ] || ch=(--changes $W/ch$n)
	mkfifo $S/sb/$n.ready
	sbx-cgroup --root $R --name soak-$n-$g --memory 160M --pids 400 --cgroup-fd 8 --pass-fd 3 -- \
		sbx-ns --uid 1000 --gid 1000 --workspace $W/ws$n "${ch[@]}" --ro /sbx --net broker:$BSOCK \
		--serve $S/sb/$n.sock --cgroup-fd 8 --ready-fd 3 \
		3>$S/sb/$n.ready 9<&- </dev/null >>$S/sb/$n.out 2>>$S/sb/$n.err &
	echo $! >$S/sb/$n.chain
	read -r _ <$S/sb/$n.ready
	rm -f $S/sb/$n.ready
	if [ ! -S $S/sb/$n.sock ]; then
		lost "sandbox $n did not start: $(tail -n 1 $S/sb/$n.err)"
		return 1
	fi
	echo $g >$S/sb/$n.gen
	sb_pids $n
	sample $n >$S/sb/$n.start
	rm -f $S/sb/$n.down
}
# The server and pid 1 of sandbox n, the two processes of its leaf (pid 1
# is 1 in a pid namespace of its own), and that namespace.
sb_pids() {
	local n=$1 g p s1= p1= f
	g=$(cat $S/sb/$n.gen)
	for p in $(cat $R/soak-$n-$g/sandbox/cgroup.procs); do
		f=$(grep '^NSpid:' /proc/$p/status) || continue
		set -- $f
		if [ $# = 3 ] && [ "$3" = 1 ]; then p1=$p; else s1=$p; fi
	done
	echo "$s1 $p1 $(readlink /proc/$p1/ns/pid)" >$S/sb/$n.pids
}
# "RSS_KB FDS" of a pid
usage() {
	local rss=0 k v fds
	while read -r k v _; do [ "$k" = VmRSS: ] && rss=$v; done </proc/$1/status 2>/dev/null
	fds=(/proc/$1/fd/*)
	echo "$rss ${#fds[@]}"
}
# "SERVER_RSS SERVER_FDS PID1_RSS PID1_FDS" of sandbox n
sample() {
	local s p
	read -r s p _ <$S/sb/$1.pids
	echo "$(usage $s) $(usage $p)"
}
join() { sbx-ns --join $S/sb/$1.sock "${@:2}"; }

# --- the invariants -------------------------------------------------------
# What a stopped sandbox n of generation g may not leave: a process of its
# pid namespace, its cgroup, its socket, a deny-write record of its server.
check_gone() {
	local n=$1 g=$2 pidns=$3 server=$4 p
	[ -d $R/soak-$n-$g ] && leak "sandbox $n.$g: cgroup $R/soak-$n-$g left"
	[ -e $S/sb/$n.sock ] && leak "sandbox $n.$g: socket $S/sb/$n.sock left"
	# One ls for every process (a readlink each is minutes under TCG).
	for p in $(ls -l /proc/[0-9]*/ns/pid 2>/dev/null | grep -F " -> $pidns" | cut -d/ -f3); do
		leak "sandbox $n.$g: process $p of its pid namespace left"
	done
	grep -lsw "$server" /run/sbx-ns/* >/dev/null && leak "sandbox $n.$g: a record of server $server left in /run/sbx-ns"
}
# No protected path live in a workspace: hooks other than the moved-aside
# *.sbx-denied, a changed .git/config, a .env. (A change set may hold one:
# the workspace never sees it, sbx-changes apply refuses it.)
check_protected() {
	local n=$1 f
	for f in $W/ws$n/.git/hooks/* $W/ws$n/.env; do
		[ -e "$f" ] || continue
		case $f in *.sbx-denied*) [ -x "$f" ] && leak "sandbox $n: $f executable" ;; *) leak "sandbox $n: protected path $f live" ;; esac
	done
	cmp -s $W/ws$n/.git/config $S/sb/$n.config || leak "sandbox $n: .git/config changed"
}
check_all_protected() {
	local n
	for n in $(seq 0 $((N - 1))); do check_protected $n; done
}

# --- the calls ------------------------------------------------------------
# call_run LIMIT CMD...: run one client, killed at LIMIT + GRACE; rc, us.
# Its pid is in the worker's pid file while it runs (the injector's kill).
call_run() {
	local lim=$1 t
	shift
	t=$(now)
	timeout -s KILL $((${lim%.*} + GRACE)) "$@" </dev/null >$wd/o 2>$wd/e &
	# A git commit killed mid-way leaves git's index.lock, by git's design:
	# the injector kills the other kinds.
	[ "$kind" = git ] || echo $! >$wd/pid
	wait $!
	rc=$?
	rm -f $wd/pid
	us=$(($(now) - t))
	[ $us -lt $(((${lim%.*} + GRACE) * 1000000)) ] || hang=1
	killed=
	[ -e $S/killed.$! ] && killed=1 && rm -f $S/killed.$!
}
is_out() { [ "$(cat $wd/o)" = "$1" ]; }
is_err() { [ "$(cat $wd/e)" = "$1" ]; }
has_out() { grep -qF -- "$1" $wd/o; }
ENV_GIT=(--setenv GIT_AUTHOR_NAME=soak --setenv GIT_AUTHOR_EMAIL=soak@soak.test
	--setenv GIT_COMMITTER_NAME=soak --setenv GIT_COMMITTER_EMAIL=soak@soak.test)
KINDS=(short short short short short edit edit edit git git fetch fetch fetch service service detach memory timeout pids hook)
# one_call KIND n: one tool call; its verdict is ok, or why not.
one_call() {
	local kind=$1 n=$2 tag=$RANDOM ok=
	hang=
	case $kind in
	short) call_run $CALL_LIMIT sbx-ns --join $S/sb/$n.sock -- echo soak-$tag; [ $rc = 0 ] && is_out soak-$tag && ok=1 ;;
	edit) call_run $CALL_LIMIT sbx-ns --join $S/sb/$n.sock -- sh -c "echo $tag >>notes-$k.txt"; [ $rc = 0 ] && ok=1 ;;
	git)
		# One commit at a time in a workspace (git's own index.lock). A git
		# that a fault killed (its client, its server, its sandbox) leaves
		# index.lock behind, as git does whenever it is killed: the commit
		# after a failed one first removes it, as an agent would (the failed
		# one is judged on its own).
		local unlock=
		until mkdir $S/sb/$n.gitlock 2>/dev/null; do sleep 0.05; done
		[ -e $S/sb/$n.gitfailed ] && unlock="rm -f .git/index.lock && "
		call_run $CALL_LIMIT sbx-ns --join $S/sb/$n.sock "${ENV_GIT[@]}" -- \
			sh -c "${unlock}echo $tag >>log.txt && git add log.txt && git commit -q -m soak-$tag"
		if [ $rc = 0 ]; then rm -f $S/sb/$n.gitfailed; else : >$S/sb/$n.gitfailed; fi
		rmdir $S/sb/$n.gitlock
		[ $rc = 0 ] && ok=1 ;;
	fetch) call_run $CALL_LIMIT sbx-ns --join $S/sb/$n.sock -- wget -q -O - http://origin.test/hello.txt; [ $rc = 0 ] && is_out "soak origin" && ok=1 ;;
	service) call_run $CALL_LIMIT sbx-ns --join $S/sb/$n.sock -- wget -q -O - http://tls/x; [ $rc = 0 ] && has_out "Ciphers supported in s_server binary" && ok=1 ;;
	detach)
		call_run $CALL_LIMIT sbx-ns --join $S/sb/$n.sock --detach --stdout /tmp/j$k --stderr /tmp/j$k -- sh -c "echo job-$tag"
		if [ $rc = 0 ] && [[ $(cat $wd/o) =~ ^[0-9]+$ ]]; then
			local id
			id=$(cat $wd/o)
			call_run $CALL_LIMIT sbx-ns --join $S/sb/$n.sock --wait-job $id
			[ $rc = 0 ] && ok=1
		fi ;;
	memory)
		call_run $CALL_LIMIT sbx-ns --join $S/sb/$n.sock --memory 16M -- /sbx/helpers/memhog 64
		[ $rc = 105 ] && is_err "sbx-ns: killed: its cgroup ran out of memory (--memory): the OOM killer ended it" && ok=1 ;;
	timeout)
		call_run 1 sbx-ns --join $S/sb/$n.sock --timeout 0.5 -- sleep 10
		[ $rc = 104 ] && is_err "sbx-ns: killed: its --timeout expired: killed with its process group" && ok=1 ;;
	pids)
		call_run $CALL_LIMIT sbx-ns --join $S/sb/$n.sock --pids 8 -- /sbx/helpers/forkbomb 50
		[ $rc = 103 ] && is_err "sbx-ns: killed: it reached its cgroup's process limit (--pids): killed with what it started" && ok=1 ;;
	hook)
		# Refused (a read-only .git/hooks, 2) or created and moved aside at
		# the command's end (0): never live afterwards.
		call_run $CALL_LIMIT sbx-ns --join $S/sb/$n.sock -- sh -c 'mkdir -p .git/hooks && printf "#!/bin/sh\nexit 0\n" >.git/hooks/pre-commit && chmod +x .git/hooks/pre-commit'
		case $rc in 0 | 1 | 2) ok=1 ;; esac
		[ -x $W/ws$n/.git/hooks/pre-commit ] && ok= ;;
	esac
	cat $wd/o $wd/e >>$wd/outputs
	[ -n "$ok" ] && return 0
	[ -n "$hang" ] && { verdict="hang: $kind in sandbox $n ran $((us / 1000)) ms"; return 1; }
	# What a fault explains, in the sbx codes or the tool's own documented
	# failure: the client killed (137), the sandbox lost or stopped under the
	# call (103), the broker restarted under a fetch, the workspace full.
	[ -n "$killed" ] && [ $rc = 137 ] && { verdict=killed; return 0; }
	if [ "$(cat $S/sb/$n.gen 2>/dev/null)" != "$g0" ] || [ -e $S/sb/$n.down ]; then
		[ $rc = 103 ] && { verdict=sandbox-lost; return 0; }
	fi
	if [ "$(cat $S/broker.gen)" != "$b0" ] || [ -e $S/broker.down ]; then
		case $kind in fetch | service) [ $rc = 1 ] && { verdict=broker-restart; return 0; } ;; esac
	fi
	if [ -e $S/pressure ] || [ "$(cat $S/pressures)" != "$p0" ]; then
		case $kind in fetch | service) [ $rc = 1 ] && grep -qx 'wget: server returned error: HTTP/1.1 504 Gateway Timeout' $wd/e &&
			{ verdict=pressure-504; return 0; } ;; esac
	fi
	if [ -e $S/sb/$n.full ] || [ "$(cat $S/sb/$n.fills 2>/dev/null)" != "$f0" ]; then
		case $kind in edit | git | hook) [ $rc != 0 ] && { verdict=disk-full; return 0; } ;; esac
	fi
	verdict="$kind in sandbox $n: exit $rc: $(head -c 300 $wd/e | tr '\n' ' ')"
	return 1
}
worker() {
	k=$1
	wd=$S/w/$k
	mkdir -p $wd
	RANDOM=$((SOAK_SEED + k))
	local n kind t
	while [ ! -e $S/stop ]; do
		n=$((RANDOM % N))
		kind=${KINDS[RANDOM % ${#KINDS[@]}]}
		g0=$(cat $S/sb/$n.gen) b0=$(cat $S/broker.gen) f0=$(cat $S/sb/$n.fills 2>/dev/null) p0=$(cat $S/pressures)
		t=$(rel)
		if one_call $kind $n; then
			echo "$t $((us / 1000)) $kind ${verdict:-ok}" >>$wd/calls
		else
			echo "$t $((us / 1000)) $kind lost" >>$wd/calls
			lost "$verdict"
		fi
		say "call $(tail -n 1 $wd/calls)" 
		verdict=
	done
}
# The prober: the latency of a joined `true`, once a second.
probe() {
	local n i=0 t
	wd=$S/w/probe
	mkdir -p $wd
	while [ ! -e $S/stop ]; do
		n=$((i % N)) i=$((i + 1))
		t=$(now)
		join $n -- true </dev/null >/dev/null 2>&1 && say "probe $(rel) $((($(now) - t) / 1000))"
		sleep 1
	done
}
# Resources every 10 s: the broker's and the servers' and pid 1s' totals.
sampler() {
	local n a b c d s1 s2 p1 p2
	while [ ! -e $S/stop ]; do
		s1=0 s2=0 p1=0 p2=0
		for n in $(seq 0 $((N - 1))); do
			[ -e $S/sb/$n.down ] && continue
			read -r a b c d <<<"$(sample $n)"
			s1=$((s1 + a)) s2=$((s2 + b)) p1=$((p1 + c)) p2=$((p2 + d))
		done
		say "sample $(rel) broker $(usage "$(cat $S/broker.pid)") servers $s1 $s2 pid1s $p1 $p2"
		sleep 10
	done
}

# --- the faults -----------------------------------------------------------
fault_begin() { FT=$(now); FKIND=$1; }
fault_end() {
	say "fault $(rel) $FKIND $((($(now) - FT) / 1000)) $*"
	echo $FKIND >>$S/faults
	check_all_protected
}
# A client killed mid-command: a victim of the injector's own (a long
# command, seen running) and, when one runs, a random worker's client.
f_client() {
	local n=$1 t k p
	fault_begin client-kill
	sbx-ns --join $S/sb/$n.sock -- sh -c 'echo started; exec sleep 300' </dev/null >$S/victim.out 2>&1 &
	p=$!
	for t in $(seq 300); do grep -q started $S/victim.out && break; sleep 0.1; done
	kill -KILL $p
	wait $p
	k=$((RANDOM % WORKERS))
	if p=$(cat $S/w/$k/pid 2>/dev/null) && grep -qs -- --join /proc/$p/cmdline; then
		: >$S/killed.$p
		kill -KILL $p 2>/dev/null
	fi
	# The victim's command ends with its client: no sleep 300 left in n.
	for t in $(seq 300); do
		pgrep_sb $n "sleep300" || break
		sleep 0.1
	done
	pgrep_sb $n "sleep300" && leak "sandbox $n: the killed client's command still runs"
	fault_end "sandbox $n"
}
# pgrep_sb n ARGV: a process of sandbox n's leaf with that argv (no spaces)
pgrep_sb() {
	local p g
	g=$(cat $S/sb/$1.gen)
	for p in $(cat $R/soak-$1-$g/sandbox/cgroup.procs 2>/dev/null); do
		[ "$(tr -d '\0' </proc/$p/cmdline 2>/dev/null)" = "$2" ] && return 0
	done
	return 1
}
# A sandbox's pid 1, or its server, killed; the documented recovery; a new
# sandbox on the workspace.
f_sandbox() {
	local n=$1 what=$2 g s p pidns chain rc want
	fault_begin $what
	g=$(cat $S/sb/$n.gen)
	read -r s p pidns <$S/sb/$n.pids
	chain=$(cat $S/sb/$n.chain)
	: >$S/sb/$n.down
	if [ $what = pid1-kill ]; then kill -KILL $p; else kill -KILL $s; fi
	wait $chain
	rc=$?
	say "step $(rel) $what sandbox $n: its chain exited $rc after $((($(now) - FT) / 1000)) ms"
	if [ $what = pid1-kill ]; then
		# The server cleans up as at a stop and exits 103.
		want="sbx-ns: fatal: the sandbox was lost: its pid 1 ended (Killed)"
		if ! grep -qxF "$want" $S/sb/$n.err; then
			lost "pid1-kill of sandbox $n: no '$want': $(tail -n 2 $S/sb/$n.err | tr '\n' ' ')"
		elif [ $rc != 103 ]; then
			# 105 too: a command's OOM kill in its own --memory cgroup
			# before is not the sandbox's total reached.
			lost "pid1-kill of sandbox $n: chain exit $rc, not 103"
		fi
	else
		# A killed server cleans nothing up: its socket stays, to be removed,
		# and its deny-write record is taken over by --recover.
		[ -S $S/sb/$n.sock ] || lost "server-kill of sandbox $n: no socket left behind, as documented"
		# sbx-cgroup passes its child's SIGKILL on as 137, also after a
		# command's OOM kill in its own --memory cgroup (not the total).
		[ $rc = 137 ] || lost "server-kill of sandbox $n: chain exit $rc, not 137: $(grep -v '^sbx-ns: warning' $S/sb/$n.err | tail -n 1)"
		rm -f $S/sb/$n.sock
		sbx-ns --recover --workspace $W/ws$n >/dev/null 2>>$S/sb/$n.err ||
			lost "server-kill of sandbox $n: sbx-ns --recover failed: $(tail -n 1 $S/sb/$n.err)"
	fi
	check_gone $n $g "$pidns" $s
	say "step $(rel) $what sandbox $n: recovered after $((($(now) - FT) / 1000)) ms"
	sb_start $n
	fault_end "sandbox $n"
}
# The broker restarted under traffic, the socket unit's way: SIGTERM, and
# SIGKILL when it has not gone in 3 s (every other restart it is stopped
# first, as a hung broker would be, so that the SIGKILL path runs too).
# A sandbox handed to the old broker has no way out any more (its
# listeners went with the broker, sbx-ns(1) --net broker): the recovery is
# a new sandbox on each workspace, stopped and started one by one.
f_broker() {
	local t how=term
	fault_begin broker-restart
	: >$S/broker.down
	if [ $((BGEN % 2)) = 0 ]; then kill -STOP $BPID; how=term+kill; fi
	kill -TERM $BPID
	for t in $(seq 30); do [ -e /proc/$BPID ] || break; sleep 0.1; done
	[ -e /proc/$BPID ] && kill -KILL $BPID
	wait $BPID
	broker_start
	say "step $(rel) broker-restart: a new broker after $((($(now) - FT) / 1000)) ms"
	local n g s p pidns
	for n in $(seq 0 $((N - 1))); do
		g=$(cat $S/sb/$n.gen)
		read -r s p pidns <$S/sb/$n.pids
		: >$S/sb/$n.down
		sbx-ns --join $S/sb/$n.sock --stop </dev/null >/dev/null 2>>$S/sb/$n.err ||
			lost "broker-restart: sandbox $n: --stop exited $?: $(tail -n 1 $S/sb/$n.err)"
		wait "$(cat $S/sb/$n.chain)"
		check_gone $n $g "$pidns" $s
		sb_start $n
	done
	usage $BPID >$S/broker.start # with every sandbox handed over
	rm -f $S/broker.down
	fault_end "$how"
}
# A workspace fills up: a command writes until the project quota stops it
# (XFS says ENOSPC); removing the file frees it, and the sandbox serves on.
f_disk() {
	local n=$1 fills rc
	fault_begin disk-fill
	: >$S/sb/$n.full
	fills=$(($(cat $S/sb/$n.fills 2>/dev/null || echo 0) + 1))
	echo $fills >$S/sb/$n.fills
	join $n -- /sbx/helpers/fill bytes fill.bin 200000000 </dev/null >$S/fill.out 2>&1
	rc=$?
	[ $rc = 1 ] && grep -qE '^wrote [0-9]+ bytes: ENOSPC$' $S/fill.out ||
		[ $rc = 103 ] || lost "disk-fill of sandbox $n: exit $rc: $(cat $S/fill.out)"
	join $n -- rm -f fill.bin </dev/null >/dev/null 2>&1
	rm -f $S/sb/$n.full
	join $n -- sh -c 'echo after >after-fill.txt' </dev/null >$S/fill.out 2>&1 ||
		[ -e $S/sb/$n.down ] || lost "disk-fill of sandbox $n: a write after the fill failed: $(cat $S/fill.out)"
	fault_end "sandbox $n"
}
# Memory pressure from outside the sandboxes: a cgroup of its own touches
# a quarter of what the VM has available, pushing the kernel's reclaim. An origin
# slowed past the broker's --max-wall-time meanwhile is its 504.
f_memory() {
	local cg=$R/soak-pressure mib
	fault_begin memory-pressure
	mib=$(($(awk '/MemAvailable/{print $2}' /proc/meminfo) / 4 / 1024))
	: >$S/pressure
	echo $(($(cat $S/pressures) + 1)) >$S/pressures
	mkdir $cg && echo $(((mib + 64) * 1048576)) >$cg/memory.max
	bash -c 'echo 0 >"$1/cgroup.procs" && exec memhog "$2"' p $cg $mib >/dev/null 2>&1 9<&- &
	wait $!
	rm -f $S/pressure
	for _ in $(seq 50); do rmdir $cg 2>/dev/null && break; sleep 0.1; done
	[ -d $cg ] && leak "memory pressure: $cg left"
	fault_end "$mib MiB"
}
FAULTS=(client-kill pid1-kill server-kill broker-restart disk-fill memory-pressure)
inject() {
	local kind=$1 n=$2
	case $kind in
	client-kill) f_client $n ;;
	pid1-kill | server-kill) f_sandbox $n $kind ;;
	broker-restart) f_broker ;;
	disk-fill) f_disk $n ;;
	memory-pressure) f_memory ;;
	esac
}

# --- the run --------------------------------------------------------------
cleanup() {
	: >$S/stop
	local n p
	for n in $(seq 0 $((N - 1))); do
		[ -S $S/sb/$n.sock ] && join $n --stop </dev/null >/dev/null 2>&1
	done
	for p in $(jobs -p); do kill -KILL $p 2>/dev/null; done
	wait
	for p in $R/soak-*; do
		[ -d $p ] || continue
		echo 1 >$p/cgroup.kill
		for _ in $(seq 50); do rmdir $p/* $p 2>/dev/null && break; sleep 0.1; done
	done
	ip netns del soak-origin 2>/dev/null
	ip link del soak0 2>/dev/null
}
trap cleanup EXIT

say "start seed=$SOAK_SEED seconds=$SOAK_SECONDS sandboxes=$N workers=$WORKERS kernel=$(uname -r) cpus=$(nproc) mem_kb=$(awk '/MemTotal/{print $2}' /proc/meminfo)"
mounts0=$(wc -l </proc/self/mountinfo)
broker_start
# The workspaces, eight at a time (git and sbx-quota are slow under TCG).
pp=()
for n in $(seq 0 $((N - 1))); do
	sb_prepare $n 9<&- &
	pp+=($!)
	[ ${#pp[@]} = 8 ] && { wait "${pp[@]}"; pp=(); }
done
[ ${#pp[@]} = 0 ] || wait "${pp[@]}"
for n in $(seq 0 $((N - 1))); do [ -e $S/sb/$n.config ] || { lost "sandbox $n: workspace not prepared"; exit 1; }; done
t=$(now)
for n in $(seq 0 $((N - 1))); do sb_start $n || exit 1; done
usage $BPID >$S/broker.start
say "started $(rel) $N sandboxes in $((($(now) - t) / 1000)) ms"
# Join latency with no load: 3 rounds over every sandbox.
for i in 1 2 3; do
	for n in $(seq 0 $((N - 1))); do
		t=$(now)
		join $n -- true </dev/null >/dev/null 2>&1 && say "idle $((($(now) - t) / 1000))"
	done
done
T0=$(now)
say "load $(rel)"
WPIDS=()
for k in $(seq 0 $((WORKERS - 1))); do worker $k 9<&- & WPIDS+=($!); done
probe 9<&- & WPIDS+=($!)
sampler 9<&- & WPIDS+=($!)
# The schedule, from the seed alone: every kind once in a seeded order,
# then seeded kinds; each with a seeded sandbox.
RANDOM=$SOAK_SEED
[ $((SOAK_SECONDS / 7)) -lt $FAULT_EVERY ] && FAULT_EVERY=$((SOAK_SECONDS / 7))
order=$(for f in "${FAULTS[@]}"; do echo "$RANDOM $f"; done | sort -n | cut -d' ' -f2)
i=0
# Every kind runs at least once, even when faults ran late.
while [ $i -lt ${#FAULTS[@]} ] || [ $((($(now) - T0) / 1000000 + FAULT_EVERY)) -lt $SOAK_SECONDS ]; do
	if [ $i -lt ${#FAULTS[@]} ]; then kind=$(sed -n "$((i + 1))p" <<<"$order"); else kind=${FAULTS[RANDOM % ${#FAULTS[@]}]}; fi
	n=$((RANDOM % N))
	i=$((i + 1))
	# The fault's time in the schedule; a fault running late starts at once.
	while [ $((($(now) - T0) / 1000000)) -lt $((i * FAULT_EVERY)) ]; do sleep 0.2; done
	inject $kind $n
done
while [ $((($(now) - T0) / 1000000)) -lt $SOAK_SECONDS ]; do sleep 0.5; done
: >$S/stop
say "stopping $(rel)"
for f in "${FAULTS[@]}"; do grep -qx $f $S/faults || lost "fault $f was never injected"; done
wait "${WPIDS[@]}"

# --- the end: quiescent figures, then every sandbox stopped ---------------
for n in $(seq 0 $((N - 1))); do
	read -r a b c d <$S/sb/$n.start
	read -r e f g h <<<"$(sample $n)"
	say "end-sb $n $a $b $c $d $e $f $g $h"
	[ $f -le $((b + FD_SLACK)) ] || leak "sandbox $n: server fds $b at its start, $f at the end"
	[ $h -le $((d + FD_SLACK)) ] || leak "sandbox $n: pid 1 fds $d at its start, $h at the end"
	[ $e -le $((a + a / 4 + RSS_SLACK_KB)) ] || leak "sandbox $n: server RSS $a KiB at its start, $e KiB at the end"
	[ $g -le $((c + c / 4 + RSS_SLACK_KB)) ] || leak "sandbox $n: pid 1 RSS $c KiB at its start, $g KiB at the end"
done
read -r a b <$S/broker.start
read -r e f <<<"$(usage $BPID)"
say "end-broker $a $b $e $f"
[ $f -le $((b + FD_SLACK)) ] || leak "broker: fds $b at its start, $f at the end"
[ $e -le $((a + a / 4 + RSS_SLACK_KB)) ] || leak "broker: RSS $a KiB at its start, $e KiB at the end"
for n in $(seq 0 $((N - 1))); do
	read -r s p pidns <$S/sb/$n.pids
	g=$(cat $S/sb/$n.gen)
	join $n --stop </dev/null >/dev/null 2>>$S/sb/$n.err || lost "sandbox $n: --stop failed: $(tail -n 1 $S/sb/$n.err)"
	wait "$(cat $S/sb/$n.chain)" || lost "sandbox $n: its chain exited $?"
	check_gone $n $g "$pidns" $s
	check_protected $n
	# A change set applies cleanly or is refused with a reason.
	if [ $((n % 2)) = 1 ]; then
		sbx-changes apply --workspace $W/ws$n $W/ch$n >$S/sb/$n.apply 2>&1
		rc=$?
		case $rc in
		0) say "changes $n applied" ;;
		102) grep -q '^sbx-changes: ' $S/sb/$n.apply && say "changes $n refused" || lost "sandbox $n: change set refused without a reason" ;;
		*) lost "sandbox $n: sbx-changes apply exited $rc: $(tail -n 1 $S/sb/$n.apply)" ;;
		esac
		check_protected $n
	fi
done
kill -TERM $BPID && wait $BPID
kill $ORIGINS 2>/dev/null
[ "$(wc -l </proc/self/mountinfo)" = "$mounts0" ] || leak "mounts: $mounts0 at the start, $(wc -l </proc/self/mountinfo) at the end"
# /run/sbx-ns keeps one thing past a run: a workspace's tree-DEV-INO, the
# directories its last end walk read (sbx-ns(1)); one per workspace here.
trees=$(for n in $(seq 0 $((N - 1))); do printf 'tree-%s-%x\n' $(stat -c '%D %i' $W/ws$n); done)
for p in /run/sbx-ns/* /tmp/sbx-* /var/tmp/sbx-*; do
	[ -e "$p" ] || continue
	case $p in /run/sbx-ns/tree-*) grep -qxF "${p##*/}" <<<"$trees" && continue ;; esac
	leak "left: $p"
done
for p in $R/soak-*; do [ -d "$p" ] && leak "cgroup left: $p"; done
# The broker's log within its budget: no line of 4 KiB, at most 1001 lines
# in one second; and the token in no log and no output.
awk 'length($0) >= 4096 { print "broker log line " NR " has " length($0) " bytes" }' $S/broker.log | while read -r l; do leak "$l"; done
over=$(grep -o '"time":"[^"]*' $S/broker.log | cut -c9-27 | uniq -c | awk '$1 > 1001' | wc -l)
[ "$over" = 0 ] || leak "broker log: $over seconds with more than 1001 lines"
say "broker-log $(wc -c <$S/broker.log) bytes $(wc -l <$S/broker.log) lines $(grep -c '"event":"dropped"' $S/broker.log) dropped"
grep -lF "$SOAK_TOKEN" $S/broker.log $S/broker.err $S/sb/*.err $S/sb/*.out $S/w/*/outputs $S/tls.log 2>/dev/null |
	while read -r f; do leak "the token is in $f"; done

calls=$(cat $S/w/*/calls | wc -l)
faults=$(wc -l <$S/faults 2>/dev/null || echo 0)
L=$(wc -l <$S/lost)
K=$(wc -l <$S/leaks)
trap - EXIT
cleanup
echo "soak: $calls calls, $faults faults, $L lost, $K leaked" | tee /dev/fd/3
[ "$L" = 0 ] && [ "$K" = 0 ]

#!/usr/bin/env bats
# Real clients inside sbx-ns through a service route of sbx-broker: route
# "svc" is https://svc.test (the nginx origin of tests/tlsorigin.bash on
# 198.18.7.4 in namespace "o", private CA), and the broker adds
# "Authorization: Bearer TOKEN" from a file only root reads. curl and git
# (clone and push) ask for http://svc/... through the proxy port and, in
# transparent mode, with pip (a venv made inside) and node's fetch(), on
# the captured port 80 too; the README's recipe, run as written, takes pip
# through the proxy port. None of them is given anything secret. Then the token
# is looked for everywhere the sandbox can look: its environment, every
# /proc/PID/environ and cmdline, each file it can read that was written
# since the token was made, and the broker's answers. Only /echo, which
# answers the request's headers, shows it (said in the README).

load helpers
load ns-net
load tlsorigin
bats_require_minimum_version 1.5.0

setup_file() {
	local t
	net_setup_file
	ip -n "$NO" addr add 198.18.7.4/24 dev "vo$$"
	printf '198.18.7.4 svc.test\n' >>"$NET_DIR/hosts"
	# Files written from here on are the ones the search inside reads.
	TLS_SINCE=$(date +%s)
	TLS_DIR="$NS_DIR/tls"
	tls_pki "$TLS_DIR" svc.test
	t=sbxtok-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
	printf '%s\n' "$t" >"$TLS_DIR/token"
	printf 'Authorization: Bearer %s\r\n' "$t" >"$TLS_DIR/svc.hdr"
	chmod 0600 "$TLS_DIR/token" "$TLS_DIR/svc.hdr"
	tls_origin "$NO" 198.18.7.4 svc.test "$TLS_DIR" "$t" sbxuser:sbxpass
	TLS_FILE_PIDS=("${BG_PIDS[@]}")
	BG_PIDS=()
	# Route "expired": the same header to the port whose certificate has
	# expired, so that a refusal is among the answers searched.
	net_broker svc --allow-private-networks --service svc=https://svc.test \
		--service-header "svc=$TLS_DIR/svc.hdr" --service-ca "svc=$TLS_DIR/ca.pem" \
		--service "expired=https://svc.test:$TLS_PORT_EXPIRED" --service-header "expired=$TLS_DIR/svc.hdr" \
		--service-ca "expired=$TLS_DIR/ca.pem"
	export TLS_DIR TLS_SINCE SOCK="$NET_DIR/svc.sock"
}

teardown_file() {
	BG_PIDS=("${TLS_FILE_PIDS[@]}")
	bg_end
	net_teardown_file
}

teardown() { bg_end; }

# The token, and a grep pattern that matches it without holding it: each
# character in brackets ([s][b][x]...), so that the search's own command
# line and environment are not a find.
token() { cat "$TLS_DIR/token"; }
pattern() { token | sed 's/./[&]/g'; }

# What every sandbox runs: the clients, then the search. $1 is the pattern,
# $2 the time the token was made, $3 the mode ("proxy", or "transparent":
# pip, node's fetch() and curl on the captured port too), which names the
# commit.
CLIENTS='set -e
p=$1
curl -sS http://svc/file.txt
curl -sSi http://svc/nothing | tr -d "\r"
curl -sSi http://expired/file.txt | tr -d "\r"
git clone -q http://svc/repo.git clone
cd clone
echo "$3" >"pushed-$3"
git add .
git -c user.name=sbx -c user.email=sbx@test commit -q -m "from uid $(id -u), $3"
git push -q origin main
cd ..
if [ "$3" = transparent ]; then
	python3 -m venv venv
	venv/bin/pip install -q --no-cache-dir --disable-pip-version-check --trusted-host svc \
		--index-url http://svc/simple/ sbxdemo
	venv/bin/python -c "import sbxdemo; print(sbxdemo.hello())"
	curl -sS --noproxy "*" http://svc/file.txt
	node -e "fetch(\"http://svc/file.txt\").then(r => r.text()).then(t => process.stdout.write(\"fetch \" + t))"
fi
echo "environment: $(env | grep -c -e "$p" || :)"
echo "proc: $(cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr "\0" "\n" | grep -c -e "$p" || :)"
find / \( -path /proc -o -path /sys -o -path /dev \) -prune -o -type f -readable -newermt "@$2" \
	-size -16384k -print0 2>/dev/null >"$HOME/files" || :
echo "files: $(xargs -0 grep -l -e "$p" <"$HOME/files" 2>/dev/null | wc -l)"
tr "\0" "\n" <"$HOME/files" | grep -c "/site-packages/sbxdemo/__init__.py$" >/dev/null && echo "searched: the wheel"
tr "\0" "\n" <"$HOME/files" | grep -c "/clone/pushed-" >/dev/null && echo "searched: the clone"
:'

# ANSWER: what the broker relays for a path the origin does not have, and
# its own refusal on route "expired".
ANSWER="HTTP/1.1 404 Not Found
Server: nginx/1.22.1
HTTP/1.1 502 Bad Gateway
Sbx-Broker-Reason: service expired: TLS with 198.18.7.4: certificate verify failed: certificate has expired
sbx-broker: service expired: TLS with 198.18.7.4: certificate verify failed: certificate has expired"

# clients WHO MODE: the clients and the search in a fresh workspace.
clients() {
	local net="broker:$SOCK"
	[ "$2" = proxy ] || net="$net,transparent"
	"$1" --workspace "$(ns_ws)" --net "$net" -- sh -c "$CLIENTS" sh "$(pattern)" "$TLS_SINCE" "$2"
}

# The output of clients, the 404's date and length taken out.
want_clients() {
	printf '%s\n' "sbx service file" "$ANSWER"
	[ "$1" != transparent ] || printf '%s\n' "sbxdemo 1.0" "sbx service file" "fetch sbx service file"
	printf '%s\n' "environment: 0" "proc: 0" "files: 0"
	[ "$1" != transparent ] || printf '%s\n' "searched: the wheel"
	printf '%s\n' "searched: the clone"
}

# Strip the headers of the 404 that change from run to run.
answers() {
	grep -v -E '^(Date|Content-Type|Content-Length|Connection): |^$|^<' <<<"$output"
}

@test "the pattern matches the token and is not it" {
	run -0 grep -c -e "$(pattern)" "$TLS_DIR/token"
	assert_output 1
	run -1 grep -c -F "$(token)" <<<"$(pattern)"
}

@test "through the proxy port, as the test user: curl, git clone and push to the service behind the token; the token is nowhere inside" {
	run -0 --separate-stderr clients nsh_user proxy
	refute_output --partial "$(token)"
	assert_equal "$stderr" ""
	run -0 answers
	assert_output "$(want_clients proxy)"
	run -0 git -C "$TLS_DIR/o/git/repo.git" log -1 --format=%s main
	assert_output "from uid $SBX_TEST_UID, proxy"
	run -1 grep -c -F "$(token)" "$NET_DIR/svc.err"
}

@test "transparent, as root dropping to the test user: the same clients, pip from the index behind the token, node's fetch() and curl on the captured port 80 too; the token is nowhere inside" {
	run -0 --separate-stderr clients nsh_root transparent
	refute_output --partial "$(token)"
	assert_equal "$stderr" ""
	run -0 answers
	assert_output "$(want_clients transparent)"
	run -0 git -C "$TLS_DIR/o/git/repo.git" log -1 --format=%s main
	assert_output "from uid $SBX_TEST_UID, transparent"
	run -1 grep -c -F "$(token)" "$NET_DIR/svc.err"
}

@test "/echo shows the token (the documented exception): the broker's header replaces the sandbox's own, and the searches find it once it is there" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr nsh_user --workspace "$ws" --net "broker:$SOCK" -- sh -c '
		curl -sS -H "Authorization: Bearer mine" -H "X-Sbx: one" -A sbx-test http://svc/echo | tee echo.txt
		echo "files: $(grep -l -r -e "$1" . | wc -l)"
		T=$(sed -n "s/^HTTP_AUTHORIZATION=//p" echo.txt) sh -c '"'"'cat /proc/[0-9]*/environ |
			tr "\0" "\n" | grep -q -e "$1" && echo "proc: found"'"'"' sh "$1"' sh "$(pattern)"
	assert_output "HTTP_ACCEPT=*/*
HTTP_AUTHORIZATION=Bearer $(token)
HTTP_CONNECTION=close
HTTP_HOST=svc.test
HTTP_USER_AGENT=sbx-test
HTTP_X_SBX=one
files: 1
proc: found"
	assert_equal "$stderr" ""
}

# The README's service-route recipe (its block from "# root; the service's
# token"), each line as written but the site's values: the service's name
# (the one its certificate holds), the workspace, the user and its group,
# the package its index holds. Run as root in "h", /etc under an overlay
# (the recipe's /etc/sbx lands in the test's directory, where the CA is
# put) and a tmpfs on /run; the token in an unexported shell variable.
readme_recipe() {
	awk '/^      # root; the service.s token in \$TOKEN/ { r = 1 } r && /^$/ { exit } r { print substr($0, 7) }' \
		"$SBX_ROOT/README.md"
}

@test "the README's recipe as written: curl, git clone and pip in a venv through the route, as root for the test user" {
	local r e=$TLS_DIR/etc ws
	r=$(readme_recipe)
	ws=$(ns_ws)
	r=${r//gitlab.example/svc.test}
	r=${r//\/srv\/ws\/job1/$ws}
	r=${r//--uid 1001 --gid 1001/--uid $SBX_TEST_UID --gid $SBX_TEST_GID}
	r=${r//--socket-group ci/--socket-group $(id -gn "$SBX_TEST_USER")}
	r=${r//mypkg/sbxdemo}
	mkdir -p "$e/u/sbx" "$e/w"
	cp "$TLS_DIR/ca.pem" "$e/u/sbx/gitlab-ca.pem"
	cat /etc/hosts "$NET_DIR/hosts" >"$e/u/hosts"
	run -0 --separate-stderr ip netns exec "$NH" unshare -m --propagation private bash -c '
		mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1/u,workdir=$1/w" /etc && mount -t tmpfs tmpfs /run || exit
		TOKEN=$(cat "$2")
		eval "$3"
		s=$?
		kill $! && wait
		exit $s' bash "$e" "$TLS_DIR/token" "$r"
	# 404, not 401: the origin took the token, and has no /api/v4.
	assert_output --partial "<title>404 Not Found</title>"
	refute_output --partial "$(token)"
	refute_output --partial "401"
	run -0 cat "$ws/repo/README"
	assert_output "seeded"
	run -0 "$ws"/venv/bin/python3 -c "import sbxdemo; print(sbxdemo.hello())"
	assert_output "sbxdemo 1.0"
	run -1 grep -r -l -F "$(token)" "$ws"
	run -0 stat -c '%a %U' "$e/u/sbx/gitlab.hdr"
	assert_output "600 root"
}

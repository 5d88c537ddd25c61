#!/usr/bin/env bats
# Real clients inside sbx-ns through a service route of sbx-broker: route
# "svc" is https://svc.test (the nginx origin of tests/tlsorigin.bash on
# 198.18.7.4 in namespace "o", private CA), and the broker adds
# "Authorization: Bearer TOKEN" from a file only root reads. curl and git
# (clone and push) ask for http://svc/... through the proxy port and, in
# transparent mode, with pip (a venv made inside) and node's fetch(), on
# the captured port 80 too. None of them is given anything secret. Then the token
# is looked for everywhere the sandbox can look: its environment, every
# /proc/PID/environ and cmdline, each file it can read that was written
# since the token was made, and the broker's answers. Only /echo, which
# answers the request's headers, shows it (said in sbx-broker(1)).

load helpers
load ns-net
load tlsorigin
load recipes
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

# The README's service-route recipe, as written, run in "h" (recipes.bash):
# its service is https://gitlab.example, a second origin of
# tests/tlsorigin.bash on 198.18.7.5 with a CA of its own, put where the
# recipe says (/etc/sbx/gitlab-ca.pem, in the recipe's own /etc), and
# demanding this suite's token, which the recipe reads from $TOKEN.
@test "the README's service-route recipe as written: curl and git clone through the route, as root for a user it makes" {
	local d=$TLS_DIR/gitlab
	ip -n "$NO" addr add 198.18.7.5/24 dev "$(ip -n "$NO" -o link show type veth | awk -F'[ :@]+' '{ print $2 }')"
	tls_pki "$d" gitlab.example
	tls_origin "$NO" 198.18.7.5 gitlab.example "$d" "$(token)" sbxuser:sbxpass
	recipe_prepare() {
		mkdir -p /etc/sbx && cp "$TLS_DIR/gitlab/ca.pem" /etc/sbx/gitlab-ca.pem &&
			echo "198.18.7.5 gitlab.example" >>/etc/hosts
	}
	RECIPE_NETNS=$NH
	RECIPE_VARS=("TOKEN=$(token)")
	recipes_setup
	recipes_run_kind env=service || { rm -rf "$RECIPE_DIR"; false; }
	# Nothing of the recipe's stayed: its /etc/sbx was its own.
	assert_not_exist /etc/sbx/gitlab.hdr
	rm -rf "$RECIPE_DIR"
}

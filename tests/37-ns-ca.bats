#!/usr/bin/env bats
# sbx-ns and the host's CA settings: SSL_CERT_FILE, SSL_CERT_DIR,
# NODE_EXTRA_CA_CERTS, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, GIT_SSL_CAINFO and
# PIP_CERT are kept when the caller set them, and what they name is bound
# read-only at the same path (the canonical one, symlinks resolved once);
# --no-host-ca or the policy's "hostCA": false turns that off. A private CA
# (made here) signs the certificate of a TLS origin on 198.18.7.3 (ca.test)
# in namespace "o", which sends its chain with the CA in it (the shape of a
# corporate proxy's); curl, node's fetch() and python reach it through
# transparent mode and through the proxy port of broker "ca".

load helpers
load ns-net
bats_require_minimum_version 1.5.0

setup_file() {
	local p
	net_setup_file
	ip -n "$NO" addr add 198.18.7.3/24 dev "vo$$"
	printf '198.18.7.3 ca.test\n' >>"$NET_DIR/hosts"
	p="$NS_DIR/pki"
	mkdir -m 0755 "$p"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-subj "/CN=sbx test CA" -addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign -keyout "$p/ca.key" -out "$p/ca.pem" 2>/dev/null
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=ca.test \
		-keyout "$p/srv.key" -out "$p/srv.csr" 2>/dev/null
	printf 'subjectAltName=DNS:ca.test\nbasicConstraints=CA:FALSE\n' >"$p/srv.ext"
	openssl x509 -req -in "$p/srv.csr" -CA "$p/ca.pem" -CAkey "$p/ca.key" -CAcreateserial \
		-days 2 -extfile "$p/srv.ext" -out "$p/srv.pem" 2>/dev/null
	# The test user's own file, writable on the host: inside, the bind is
	# read-only whoever owns it.
	chown "$SBX_TEST_UID:$SBX_TEST_GID" "$p/ca.pem"
	chmod 0644 "$p/ca.pem"
	chmod 0600 "$p/ca.key" "$p/srv.key"
	# A directory of CA certificates as OpenSSL reads SSL_CERT_DIR (hash
	# links), with a symlink loop in it.
	mkdir -m 0755 "$p/dir"
	cp "$p/ca.pem" "$p/dir/corp.pem"
	openssl rehash "$p/dir"
	ln -s loop "$p/dir/loop"
	ip netns exec "$NO" openssl s_server -quiet -www -accept 198.18.7.3:443 -cert "$p/srv.pem" \
		-key "$p/srv.key" -cert_chain "$p/ca.pem" </dev/null >/dev/null 2>&1 3>&- &
	echo $! >>"$NET_DIR/pids"
	net_wait_port "$NO" 198.18.7.3 443
	net_broker ca --allow-host ca.test --allow-private-networks
	cp "$SBX_TESTBIN/ns-nouserns" "$NS_DIR/bin/"
	chmod 0755 "$NS_DIR/bin/ns-nouserns"
	export PKI=$p CA=$p/ca.pem
}

teardown_file() {
	net_teardown_file
}

# What a test started in the background (a server, a swapper) and has not
# ended itself goes in BG_PIDS.
teardown() { bg_end; }

# ca_user NAME=VALUE... -- ARGS...: sbx-ns in "h" as the test user, with
# exactly the variables given and PATH in its environment.
ca_user() {
	local vars=()
	while [ "$1" != -- ]; do
		vars+=("$1")
		shift
	done
	shift
	ip netns exec "$NH" setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" --init-groups \
		--reset-env -- env PATH="$SBX_BIN:/usr/local/bin:/usr/bin:/bin" "${vars[@]}" "$SBX_BIN/sbx-ns" "$@"
}

# ca_root NAME=VALUE... -- ARGS...: the same as root, the command as the test user.
ca_root() {
	local vars=()
	while [ "$1" != -- ]; do
		vars+=("$1")
		shift
	done
	shift
	ip netns exec "$NH" env -i PATH="$SBX_BIN:/usr/local/bin:/usr/bin:/bin" "${vars[@]}" \
		"$SBX_BIN/sbx-ns" --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" "$@"
}

# What the command runs in both network modes: curl past the proxy
# (transparent only) and through it, node's fetch() (transparent only),
# node through the proxy port (CONNECT, then TLS with the default CA set).
FETCH='fetch("https://ca.test/").then(r => console.log("fetch " + r.status),
	e => console.log("fetch " + (e.cause && e.cause.code)))'
CONNECT='const u = new URL(process.env.HTTPS_PROXY);
require("http").request({ host: u.hostname, port: u.port, method: "CONNECT", path: "ca.test:443",
	headers: { Host: "ca.test:443" } })
.on("connect", (res, sock) => {
	const t = require("tls").connect({ socket: sock, servername: "ca.test" },
		() => t.write("GET / HTTP/1.0\r\n\r\n"));
	let d = "";
	t.on("data", c => d += c).on("end", () => console.log("proxy " + d.split("\r\n")[0]))
	 .on("error", e => console.log("proxy " + e.code));
}).end()'
TRANSPARENT='curl -sS --noproxy "*" https://ca.test/ 2>&1 | sed -n 1p
curl -sS https://ca.test/ 2>&1 | sed -n 1p
node -e "$FETCH"
node -e "$CONNECT"'
PROXY='curl -sS https://ca.test/ 2>&1 | sed -n 1p
node -e "$CONNECT"'

OK_T='<HTML><BODY BGCOLOR="#ffffff">
<HTML><BODY BGCOLOR="#ffffff">
fetch 200
proxy HTTP/1.0 200 ok'
OK_P='<HTML><BODY BGCOLOR="#ffffff">
proxy HTTP/1.0 200 ok'
CURL_BAD='curl: (60) SSL certificate problem: self-signed certificate in certificate chain'
BAD_T="$CURL_BAD
$CURL_BAD
fetch SELF_SIGNED_CERT_IN_CHAIN
proxy SELF_SIGNED_CERT_IN_CHAIN"
BAD_P="$CURL_BAD
proxy SELF_SIGNED_CERT_IN_CHAIN"

@test "CURL_CA_BUNDLE and NODE_EXTRA_CA_CERTS are kept and their file bound: curl and node reach a private-CA origin, transparent and through the proxy port" {
	local who ws
	for who in ca_user ca_root; do
		ws=$(ns_ws)
		run -0 --separate-stderr $who CURL_CA_BUNDLE="$CA" NODE_EXTRA_CA_CERTS="$CA" -- --workspace "$ws" \
			--net "broker:$NET_DIR/ca.sock,transparent" --setenv FETCH="$FETCH" --setenv CONNECT="$CONNECT" \
			-- sh -c "$TRANSPARENT"
		assert_output "$OK_T"
		assert_equal "$stderr" ""
		run -0 --separate-stderr $who CURL_CA_BUNDLE="$CA" NODE_EXTRA_CA_CERTS="$CA" -- --workspace "$ws" \
			--net "broker:$NET_DIR/ca.sock" --setenv CONNECT="$CONNECT" -- sh -c "$PROXY"
		assert_output "$OK_P"
		assert_equal "$stderr" ""
	done
}

@test "--no-host-ca, and a baseline's \"hostCA\": false, drop them: the same clients fail on the certificate" {
	local ws base
	ws=$(ns_ws)
	run -0 --separate-stderr ca_user CURL_CA_BUNDLE="$CA" NODE_EXTRA_CA_CERTS="$CA" -- --workspace "$ws" --no-host-ca \
		--net "broker:$NET_DIR/ca.sock,transparent" --setenv FETCH="$FETCH" --setenv CONNECT="$CONNECT" \
		-- sh -c "$TRANSPARENT"
	assert_output "$BAD_T"
	run -0 --separate-stderr ca_user CURL_CA_BUNDLE="$CA" NODE_EXTRA_CA_CERTS="$CA" -- --workspace "$ws" --no-host-ca \
		--net "broker:$NET_DIR/ca.sock" --setenv CONNECT="$CONNECT" -- sh -c "$PROXY; env | grep -c CA_ || :"
	assert_output "$BAD_P
0"
	base="$NS_DIR/hostca-off.json"
	printf '{"sandbox":{"hostCA":false,"network":{"mode":"allowlist","allowlist":["ca.test"]},"readableRoots":["/"],"writableRoots":["%s"]}}\n' "$NS_DIR" >"$base"
	chmod 0644 "$base"
	run -0 --separate-stderr ca_user CURL_CA_BUNDLE="$CA" NODE_EXTRA_CA_CERTS="$CA" -- --workspace "$ws" --baseline "$base" \
		--net "broker:$NET_DIR/ca.sock" --setenv CONNECT="$CONNECT" -- sh -c "$PROXY"
	assert_output "$BAD_P"
	assert_equal "$stderr" ""
	# A request may not ask for what the baseline turned off.
	run -102 --separate-stderr ca_user NODE_EXTRA_CA_CERTS="$CA" -- --workspace "$ws" --baseline "$base" \
		--policy-fd 3 -- true 3< <(echo '{"sandbox":{"hostCA":true}}')
	assert_output ""
	assert_equal "$stderr" "sbx-ns: fatal: policy refused: --policy-fd 3: \$.sandbox.hostCA: true is wider than the baseline's false (--baseline $base: \$.sandbox.hostCA)"
	# --no-host-ca is the request's hostCA: one source per request.
	run -100 --separate-stderr ca_user -- --workspace "$ws" --no-host-ca --policy-fd 3 -- true 3< <(echo '{}')
	assert_equal "$stderr" "sbx-ns: usage: --policy-fd and --no-host-ca are exclusive (one source per request)"
	run -100 --separate-stderr ca_user -- --workspace "$ws" --no-host-ca --no-host-ca -- true
	assert_equal "$stderr" "sbx-ns: usage: --no-host-ca given twice"
	run -0 --separate-stderr ca_user -- --workspace "$ws" --no-host-ca --print-policy
	run -0 python3 -c 'import json, sys; print(json.loads(sys.argv[1])["sandbox"]["hostCA"])' "$output"
	assert_output False
	run -0 --separate-stderr sbx-ns --help
	assert_line "  --no-host-ca           do not keep the host's CA variables and their files"
}

@test "SSL_CERT_DIR and SSL_CERT_FILE reach python through OpenSSL's default paths; a symlink loop in the directory stays a loop" {
	local ws
	ws=$(ns_ws)
	run -0 --separate-stderr ca_user SSL_CERT_DIR="$PKI/dir" -- --workspace "$ws" --net "broker:$NET_DIR/ca.sock" \
		-- sh -c 'python3 -c "import urllib.request; print(urllib.request.urlopen(\"https://ca.test/\").status)"
			cat "$SSL_CERT_DIR/loop" 2>&1; ls "$SSL_CERT_DIR" | wc -l'
	assert_output "200
cat: $PKI/dir/loop: Too many levels of symbolic links
3"
	assert_equal "$stderr" ""
	run -0 --separate-stderr ca_user SSL_CERT_FILE="$CA" -- --workspace "$ws" --net "broker:$NET_DIR/ca.sock" \
		-- python3 -c 'import urllib.request; print(urllib.request.urlopen("https://ca.test/").status)'
	assert_output "200"
	run -0 --separate-stderr ca_user SSL_CERT_FILE="$CA" -- --workspace "$ws" --no-host-ca --net "broker:$NET_DIR/ca.sock" \
		-- python3 -c 'import urllib.request
try: urllib.request.urlopen("https://ca.test/")
except Exception as e: print(e.reason.verify_message)'
	assert_output "self-signed certificate in certificate chain"
}

@test "only what the variables name comes in, read-only, at its canonical path; the plan shows each bind" {
	local ws st dst
	ws=$(ns_ws)
	ln -sfn ca.pem "$PKI/link.pem"
	# The key beside the CA stays out; the bind is read-only.
	run -0 --separate-stderr ca_user NODE_EXTRA_CA_CERTS="$PKI/link.pem" GIT_SSL_CAINFO="$CA" \
		PIP_CERT="$PKI/dir/corp.pem" SSL_CERT_DIR="$PKI/dir" REQUESTS_CA_BUNDLE="$PKI/dir" -- \
		--workspace "$ws" -- sh -c 'env | grep -E "^(NODE|GIT|PIP|SSL|REQ)" | sort
			cat "'"$PKI"'/ca.key" 2>&1; { echo x >>"$GIT_SSL_CAINFO"; } 2>&1 || echo "append refused"
			grep -c . /proc/self/mountinfo >/dev/null; grep -c " '"$PKI"'" /proc/self/mountinfo'
	assert_output "GIT_SSL_CAINFO=$CA
NODE_EXTRA_CA_CERTS=$CA
PIP_CERT=$PKI/dir/corp.pem
REQUESTS_CA_BUNDLE=$PKI/dir
SSL_CERT_DIR=$PKI/dir
cat: $PKI/ca.key: No such file or directory
sh: 2: cannot create $CA: Read-only file system
append refused
2"
	assert_equal "$stderr" ""
	# --dry-run: the two binds (the directory, then the file; the
	# directory's file and the link's target need none), after the
	# workspace, each with the identity it was checked to have.
	run -0 --separate-stderr ca_root NODE_EXTRA_CA_CERTS="$PKI/link.pem" PIP_CERT="$PKI/dir/corp.pem" \
		SSL_CERT_DIR="$PKI/dir" -- --workspace "$ws" --dry-run -- true
	st=$(stat -c '"dev":%d,"ino":%i' "$PKI/dir")
	dst=$(stat -c '"dev":%d,"ino":%i' "$CA")
	run -0 python3 -c 'import json, sys
d = json.loads(sys.argv[1])
print("\n".join(json.dumps(m, separators=(",", ":")) for m in d["mounts"] if m["kind"] in ("workspace", "ca")))
print(" ".join(e for e in d["env"] if "CERT" in e))' "$output"
	assert_output "{\"kind\":\"workspace\",\"option\":\"--workspace\",\"source\":\"$ws\",\"destination\":\"$ws\",\"flags\":\"rw,nosuid,nodev\",$(stat -c '"dev":%d,"ino":%i' "$ws")}
{\"kind\":\"ca\",\"option\":\"SSL_CERT_DIR\",\"source\":\"$PKI/dir\",\"destination\":\"$PKI/dir\",\"flags\":\"ro,nosuid,nodev\",$st}
{\"kind\":\"ca\",\"option\":\"NODE_EXTRA_CA_CERTS\",\"source\":\"$CA\",\"destination\":\"$CA\",\"flags\":\"ro,nosuid,nodev\",$dst}
SSL_CERT_DIR=$PKI/dir NODE_EXTRA_CA_CERTS=$CA PIP_CERT=$PKI/dir/corp.pem"
}

@test "what the sandbox shows already is not bound again: the runtime set, the workspace, a --ro root" {
	local ws
	ws=$(ns_ws)
	cp "$CA" "$ws/ca.pem"
	run -0 --separate-stderr ca_root SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt SSL_CERT_DIR="$ws" \
		NODE_EXTRA_CA_CERTS="$ws/ca.pem" CURL_CA_BUNDLE="$CA" -- --workspace "$ws" --ro "$PKI" --dry-run -- true
	run -0 python3 -c 'import json, sys
d = json.loads(sys.argv[1])
print(len([m for m in d["mounts"] if m["kind"] == "ca"]))
print(" ".join(e for e in d["env"] if "CERT" in e or "CA_" in e))' "$output"
	assert_output "0
SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt SSL_CERT_DIR=$ws NODE_EXTRA_CA_CERTS=$ws/ca.pem CURL_CA_BUNDLE=$CA"
}

@test "--keep-env, --setenv and empty values: one rule each" {
	local ws
	ws=$(ns_ws)
	# --keep-env of a CA variable is what the default does; with
	# --no-host-ca it only passes the value (nothing bound: node warns).
	run -0 --separate-stderr ca_user NODE_EXTRA_CA_CERTS="$CA" -- --workspace "$ws" --keep-env NODE_EXTRA_CA_CERTS \
		-- sh -c 'echo "$NODE_EXTRA_CA_CERTS"; head -c 27 "$NODE_EXTRA_CA_CERTS"; echo'
	assert_output "$CA
-----BEGIN CERTIFICATE-----"
	run -0 --separate-stderr ca_user NODE_EXTRA_CA_CERTS="$CA" -- --workspace "$ws" --keep-env NODE_EXTRA_CA_CERTS \
		--no-host-ca -- node -e 'console.log(process.env.NODE_EXTRA_CA_CERTS)'
	assert_output "$CA"
	assert_equal "$stderr" "Warning: Ignoring extra certs from \`$CA\`, load failed: error:80000002:system library::No such file or directory"
	# --setenv replaces the caller's value, which is then never looked at.
	run -0 --separate-stderr ca_user NODE_EXTRA_CA_CERTS=relative.pem -- --workspace "$ws" \
		--setenv NODE_EXTRA_CA_CERTS=/tmp/mine.pem -- sh -c 'echo "$NODE_EXTRA_CA_CERTS"'
	assert_output "/tmp/mine.pem"
	assert_equal "$stderr" ""
	# Empty is unset; kept as empty only when --keep-env names it.
	run -0 --separate-stderr ca_user SSL_CERT_FILE= SSL_CERT_DIR= -- --workspace "$ws" --keep-env SSL_CERT_DIR \
		-- sh -c 'env | grep ^SSL_ || :'
	assert_output "SSL_CERT_DIR="
	assert_equal "$stderr" ""
}

# refused CODE "MESSAGE" NAME=VALUE... [-- ARGS...]: sbx-ns as the test user
# with those variables, refused before anything exists.
refused() {
	local code=$1 want=$2 ws
	shift 2
	ws=$(ns_ws)
	local vars=() extra=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		vars+=("$1")
		shift
	done
	[ $# -eq 0 ] || { shift; extra=("$@"); }
	run "-$code" --separate-stderr ca_user "${vars[@]}" -- --workspace "$ws" "${extra[@]}" -- true
	assert_output ""
	assert_equal "$stderr" "$want"
}

@test "a variable whose path cannot come in is refused, naming the variable, the path and the fix" {
	local fix='(correct or unset SSL_CERT_FILE, or give --no-host-ca)' long
	mkfifo -m 0644 "$NS_DIR/fifo"
	ln -sfn loop "$NS_DIR/loop"
	ln -sfn /proc/sys/kernel/hostname "$NS_DIR/proclink"
	refused 100 "sbx-ns: usage: host CA variable SSL_CERT_FILE: invalid path 'ca.pem': not absolute $fix" SSL_CERT_FILE=ca.pem
	refused 100 "sbx-ns: usage: host CA variable SSL_CERT_FILE: invalid path '$NS_DIR/none.pem': does not exist $fix" \
		SSL_CERT_FILE="$NS_DIR/none.pem"
	refused 100 "sbx-ns: usage: host CA variable SSL_CERT_FILE: invalid path '/a\\x0ab': contains a control character $fix" \
		SSL_CERT_FILE=$'/a\nb'
	long=/$(printf 'a%.0s' $(seq 5000))
	refused 100 "sbx-ns: usage: host CA variable SSL_CERT_FILE: invalid path '${long:0:256}...': too long $fix" \
		SSL_CERT_FILE="$long"
	refused 100 "sbx-ns: usage: host CA variable SSL_CERT_FILE: invalid path '/proc/self/environ': under /proc $fix" \
		SSL_CERT_FILE=/proc/self/environ
	refused 100 "sbx-ns: usage: host CA variable SSL_CERT_FILE: invalid path '/dev/stdin': under /dev $fix" \
		SSL_CERT_FILE=/dev/stdin
	refused 100 "sbx-ns: usage: host CA variable SSL_CERT_FILE: invalid path '$NS_DIR/proclink': resolves to '/proc/sys/kernel/hostname', under /proc $fix" \
		SSL_CERT_FILE="$NS_DIR/proclink"
	refused 100 "sbx-ns: usage: host CA variable SSL_CERT_FILE: invalid path '$NS_DIR/loop': a symlink loop $fix" \
		SSL_CERT_FILE="$NS_DIR/loop"
	refused 100 "sbx-ns: usage: host CA variable SSL_CERT_FILE: invalid path '$NS_DIR/fifo': not a regular file $fix" \
		SSL_CERT_FILE="$NS_DIR/fifo"
	refused 100 "sbx-ns: usage: host CA variable SSL_CERT_FILE: invalid path '$PKI/dir': not a regular file $fix" \
		SSL_CERT_FILE="$PKI/dir"
	refused 100 "sbx-ns: usage: host CA variable SSL_CERT_FILE: invalid path '/': the root $fix" SSL_CERT_FILE=/
	refused 100 "sbx-ns: usage: host CA variable SSL_CERT_DIR: invalid path '$CA': not a directory (correct or unset SSL_CERT_DIR, or give --no-host-ca)" \
		SSL_CERT_DIR="$CA"
	refused 100 "sbx-ns: usage: host CA variable SSL_CERT_DIR: invalid list '$PKI/dir::/etc': empty entry (correct or unset SSL_CERT_DIR, or give --no-host-ca)" \
		SSL_CERT_DIR="$PKI/dir::/etc"
}

@test "a path the sandbox cannot show at its own place is refused: around the workspace, inside a --ro-bind, under /tmp with --tmp-in-workspace" {
	local ws t
	ws=$(ns_ws)
	run -100 --separate-stderr ca_user SSL_CERT_DIR="$NS_DIR" -- --workspace "$ws" -- true
	assert_equal "$stderr" "sbx-ns: usage: host CA variable SSL_CERT_DIR: invalid path '$NS_DIR': holds $ws (the workspace), which a read-only bind of it would hide (correct or unset SSL_CERT_DIR, or give --no-host-ca)"
	run -100 --separate-stderr ca_user SSL_CERT_FILE="$CA" -- --workspace "$ws" --ro-bind "$NS_DIR/bin" "$PKI" -- true
	assert_equal "$stderr" "sbx-ns: usage: host CA variable SSL_CERT_FILE: invalid path '$CA': lies inside $PKI, where --ro-bind shows another path (correct or unset SSL_CERT_FILE, or give --no-host-ca)"
	run -100 --separate-stderr ca_user SSL_CERT_DIR="$PKI" -- --workspace "$ws" --ro "$PKI/dir" -- true
	assert_equal "$stderr" "sbx-ns: usage: host CA variable SSL_CERT_DIR: invalid path '$PKI': holds $PKI/dir (bound by --ro), which a read-only bind of it would hide (correct or unset SSL_CERT_DIR, or give --no-host-ca)"
	cp "$CA" "$BATS_TEST_TMPDIR/ca.pem"
	run -100 --separate-stderr ca_root SSL_CERT_FILE="$BATS_TEST_TMPDIR/ca.pem" -- --workspace "$ws" --tmp-in-workspace -- true
	assert_equal "$stderr" "sbx-ns: usage: host CA variable SSL_CERT_FILE: invalid path '$BATS_TEST_TMPDIR/ca.pem': under /tmp, which is the workspace's with --tmp-in-workspace (correct or unset SSL_CERT_FILE, or give --no-host-ca)"
	# Without it the sandbox's own /tmp takes the bind like any other.
	chmod -R a+rX "$BATS_TEST_TMPDIR"
	t=${BATS_TEST_TMPDIR#/tmp/}
	run -0 --separate-stderr ca_root SSL_CERT_FILE="$BATS_TEST_TMPDIR/ca.pem" -- --workspace "$ws" \
		-- sh -c 'head -c 27 "$SSL_CERT_FILE"; echo; ls /tmp'
	assert_output "-----BEGIN CERTIFICATE-----
${t%%/*}
home"
}

@test "under a baseline what the variables name must lie within its readable roots" {
	local ws base
	ws=$(ns_ws)
	base="$NS_DIR/narrow.json"
	printf '{"sandbox":{"readableRoots":[".","%s"],"writableRoots":["."]}}\n' "$NS_DIR/bin" >"$base"
	chmod 0644 "$base"
	run -102 --separate-stderr ca_user NODE_EXTRA_CA_CERTS="$CA" -- --workspace "$ws" --baseline "$base" -- true
	assert_output ""
	assert_equal "$stderr" "sbx-ns: fatal: policy refused: host CA variable NODE_EXTRA_CA_CERTS: '$CA' is not within the baseline's readable roots (unset NODE_EXTRA_CA_CERTS, give --no-host-ca, or add it to the baseline's readableRoots)"
	# The runtime set is outside the policy, as always; --no-host-ca needs nothing.
	run -0 --separate-stderr ca_user SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt -- --workspace "$ws" --baseline "$base" \
		-- sh -c 'echo "$SSL_CERT_FILE"'
	assert_output /etc/ssl/certs/ca-certificates.crt
	run -0 --separate-stderr ca_user NODE_EXTRA_CA_CERTS="$CA" -- --workspace "$ws" --baseline "$base" --no-host-ca \
		-- sh -c 'echo "${NODE_EXTRA_CA_CERTS:-unset}"'
	assert_output unset
}

@test "the Landlock tier grants reading what the variables name, and nothing beside it" {
	local ws base who
	base="$NS_DIR/tier.json"
	printf '{"sandbox":{"fallback":"landlock","denyWrite":[],"readableRoots":["%s"],"writableRoots":["%s"]}}\n' \
		"$NS_DIR" "$NS_DIR" >"$base"
	chmod 0644 "$base"
	# srv.ext is readable by anyone on the host: only Landlock keeps it out.
	for who in root user; do
		ws=$(ns_ws)
		exec 4< <(echo '{"sandbox":{"denyWrite":[]}}')
		if [ "$who" = root ]; then
			run -0 --separate-stderr env -i PATH=/usr/bin:/bin NODE_EXTRA_CA_CERTS="$CA" SSL_CERT_DIR="$PKI/dir" \
				"$NS_DIR/bin/ns-nouserns" "$SBX_BIN/sbx-ns" --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" \
				--baseline "$base" --policy-fd 4 --workspace "$ws" -- sh -c 'head -c 27 "$NODE_EXTRA_CA_CERTS"; echo
					ls "$SSL_CERT_DIR" | wc -l; cat "'"$PKI"'/srv.ext" 2>&1; ls "'"$PKI"'" 2>&1 || :'
		else
			run -0 --separate-stderr setpriv --reuid="$SBX_TEST_UID" --regid="$SBX_TEST_GID" --init-groups --reset-env -- \
				env PATH=/usr/bin:/bin NODE_EXTRA_CA_CERTS="$CA" SSL_CERT_DIR="$PKI/dir" \
				"$NS_DIR/bin/ns-nouserns" "$SBX_BIN/sbx-ns" \
				--baseline "$base" --policy-fd 4 --workspace "$ws" -- sh -c 'head -c 27 "$NODE_EXTRA_CA_CERTS"; echo
					ls "$SSL_CERT_DIR" | wc -l; cat "'"$PKI"'/srv.ext" 2>&1; ls "'"$PKI"'" 2>&1 || :'
		fi
		exec 4<&-
		assert_output "-----BEGIN CERTIFICATE-----
3
cat: $PKI/srv.ext: Permission denied
ls: cannot open directory '$PKI': Permission denied"
		assert_regex "$stderr" '^sbx-ns: WARNING: no user namespaces here \(Operation not permitted\): the command runs in the landlock tier'
	done
}

@test "a living sandbox keeps the variables and binds of its start; a --join client's own are never read" {
	local d ws line
	d=$(mktemp -d "$NS_DIR/run.XXXXXX")
	chmod 0700 "$d"
	ws=$(ns_ws)
	mkfifo "$d/ready"
	env -i PATH=/usr/bin:/bin NODE_EXTRA_CA_CERTS="$CA" "$SBX_BIN/sbx-ns" --uid "$SBX_TEST_UID" --gid "$SBX_TEST_GID" \
		--workspace "$ws" --serve "$d/s" --ready-fd 6 6>"$d/ready" </dev/null >"$d/out" 2>"$d/err" 3>&- &
	BG_PIDS+=($!)
	read -r line <"$d/ready"
	run -0 --separate-stderr env -i PATH=/usr/bin:/bin NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
		SSL_CERT_FILE=relative.pem "$SBX_BIN/sbx-ns" --join "$d/s" \
		-- sh -c 'env | grep CERT; head -c 27 "$NODE_EXTRA_CA_CERTS"; echo'
	assert_output "NODE_EXTRA_CA_CERTS=$CA
-----BEGIN CERTIFICATE-----"
	assert_equal "$stderr" ""
	# A command may name another file, inside, for itself.
	run -0 --separate-stderr "$SBX_BIN/sbx-ns" --join "$d/s" --setenv NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
		-- sh -c 'echo "$NODE_EXTRA_CA_CERTS"'
	assert_output /etc/ssl/certs/ca-certificates.crt
	run -0 "$SBX_BIN/sbx-ns" --join "$d/s" --stop
	wait "${BG_PIDS[0]}"
	BG_PIDS=()
}

@test "attack: the checked file replaced and the symlink swapped while runs start: each run binds what it checked, or refuses the race" {
	local d i ok=0 race=0 line
	d="$NS_DIR/swap"
	mkdir -m 0755 "$d"
	echo one >"$d/one"
	echo two >"$d/two"
	cp "$d/one" "$d/ca.pem"
	ln -s one "$d/link"
	chmod 0644 "$d/one" "$d/two" "$d/ca.pem"
	(
		while :; do
			cp -p "$d/two" "$d/n" && mv -T "$d/n" "$d/ca.pem"
			ln -s two "$d/l" && mv -T "$d/l" "$d/link"
			cp -p "$d/one" "$d/n" && mv -T "$d/n" "$d/ca.pem"
			ln -s one "$d/l" && mv -T "$d/l" "$d/link"
		done
	) 3>&- &
	BG_PIDS+=($!)
	for i in $(seq 1 30); do
		run --separate-stderr ca_root NODE_EXTRA_CA_CERTS="$d/link" SSL_CERT_FILE="$d/ca.pem" -- --workspace "$NS_WS" \
			-- sh -c 'echo "$NODE_EXTRA_CA_CERTS $(cat "$NODE_EXTRA_CA_CERTS") $SSL_CERT_FILE $(cat "$SSL_CERT_FILE")"'
		if [ "$status" -eq 0 ]; then
			assert_regex "$output" "^$d/(one one|two two) $d/ca.pem (one|two)\$"
			assert_equal "$stderr" ""
			ok=$((ok + 1))
		else
			assert_equal "$status" 102
			assert_equal "$output" ""
			assert_regex "$stderr" "^sbx-ns: fatal: unable to bind $d/ca.pem: (it was replaced|the mounted object is not the one checked) \\(race\\)\$"
			race=$((race + 1))
		fi
	done
	kill "${BG_PIDS[0]}"
	wait "${BG_PIDS[0]}" || :
	BG_PIDS=()
	echo "# $ok bound, $race races refused" >&3
	assert_equal $((ok + race)) 30
}

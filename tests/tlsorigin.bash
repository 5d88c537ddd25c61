# TLS origins for sbx-broker's service routes (tests/83-tlsorigin.bats,
# tests/84-service-clients.bats, bench/sbx-broker-service.sh): `load
# tlsorigin` after ns-net (its namespaces "h" and "o", NET_DIR, PY,
# net_wait_port). Everything is made here from nothing: a private CA and
# certificates by the openssl CLI, nginx as the origin, a wheel built in
# Python, a bare git repository. Nothing is fetched.
#
# The origin (tls_origin) answers on ADDR:443 with TLS 1.2 and 1.3 only and
# demands "Authorization: Bearer TOKEN" except under /basic/, which demands
# HTTP basic authentication and shows the same tree. It serves
#   /file.txt             a static file ("sbx service file")
#   /repo.git/...         git smart HTTP (git-http-backend under fcgiwrap):
#                         clone and push
#   /simple/...           a PEP 503 index holding the wheel sbxdemo 1.0
#   /echo                 the request's headers, one "HTTP_NAME=value" a
#                         line (a CGI script): the one answer that shows
#                         what a route added
#   /reflect              what services reflect of ordinary fields: a 302
#                         to https://X-Forwarded-Host/next with
#                         Access-Control-Allow-Origin: Origin, each request
#                         logged with both in DIR/o/reflect.log
# and presents bad certificates on ports of its own, each of them serving
# "bad\n" to a client that does not check:
#   4431 expired, 4432 self-signed, 4433 another name (wrong.test),
#   4434 signed by another CA.
# tls_bad adds servers that fail before any HTTP:
#   4440 TLS 1.0 only (openssl s_server -tls1; Debian's OpenSSL refuses
#        every signature algorithm of TLS 1.0 at its default security level
#        2, the server then sends an internal_error alert to any client:
#        -cipher DEFAULT:@SECLEVEL=0 lets it finish a TLS 1.0 handshake),
#   4441 accepts TCP and never says anything (a stalled handshake),
#   4442 closes each connection right after accepting it (once it read
#        the client's first flight, so the close is an end of stream:
#        a line each in DIR/close.log).
#
# Every process started here is in BG_PIDS (bg_end ends it) and runs in
# the foreground of its own pid: nginx with master_process off, fcgiwrap
# with one process, so a KILL ends the whole server.

TLS_PORT_EXPIRED=4431
TLS_PORT_SELF=4432
TLS_PORT_WRONG=4433
TLS_PORT_OTHERCA=4434
TLS_PORT_TLS1=4440
TLS_PORT_STALL=4441
TLS_PORT_CLOSE=4442

# tls_pki DIR NAME: a CA and the certificates of NAME in DIR (made 0700):
#   ca.pem ca.key        the test CA
#   other-ca.pem         another CA, which signs nothing the origin trusts
#   good.pem good.key    NAME, signed by ca, valid 2 days
#   expired.pem          NAME, signed by ca, valid on 1 and 2 January 2020
#   self.pem             NAME, self-signed
#   wrong.pem            wrong.test, signed by ca
#   otherca.pem          NAME, signed by other-ca
# (every leaf uses good.key; each CA and leaf also as *.key).
tls_pki() {
	local d=$1 name=$2 c
	mkdir -p -m 0700 "$d"
	tls_mkca "$d/ca" "sbx test CA"
	tls_mkca "$d/other-ca" "sbx other CA"
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$name" \
		-keyout "$d/good.key" -out "$d/good.csr" 2>/dev/null
	openssl req -new -key "$d/good.key" -subj /CN=wrong.test -out "$d/wrong.csr" 2>/dev/null
	tls_sign "$d" ca good "$name" "" ""
	tls_sign "$d" ca expired "$name" 20200101000000Z 20200102000000Z
	tls_sign "$d" ca wrong wrong.test "" ""
	tls_sign "$d" other-ca otherca "$name" "" ""
	openssl req -x509 -key "$d/good.key" -days 2 -subj "/CN=$name" -addext "subjectAltName=DNS:$name" \
		-out "$d/self.pem" 2>/dev/null
	for c in expired wrong otherca self; do cp "$d/good.key" "$d/$c.key"; done
	chmod 0644 "$d/ca.pem" "$d/other-ca.pem"
}

# tls_mkca BASE CN: BASE.pem and BASE.key, a CA for 2 days.
tls_mkca() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=$2" \
		-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
		-keyout "$1.key" -out "$1.pem" 2>/dev/null
}

# tls_sign DIR CA OUT SAN START END: DIR/OUT.pem for DNS:SAN, or for the
# address ADDR when SAN is IP:ADDR (the key of good.csr, or of wrong.csr
# for wrong.test) signed by DIR/CA, valid from
# START to END (openssl's YYYYMMDDHHMMSSZ) or for 2 days from now when they
# are empty. `openssl ca`, as only it sets dates in the past.
tls_sign() {
	local d=$1 ca=$2 out=$3 san=$4 csr=good dates=(-days 2)
	[ "$san" = wrong.test ] && csr=wrong
	[ "${san#IP:}" != "$san" ] || san=DNS:$san
	[ -z "$5" ] || dates=(-startdate "$5" -enddate "$6")
	rm -rf "$d/ca.db"
	mkdir -m 0700 "$d/ca.db"
	: >"$d/ca.db/index"
	printf '%s\n' "$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')" >"$d/ca.db/serial"
	cat >"$d/ca.db/cnf" <<-EOF
	[ca]
	default_ca = d
	[d]
	database = $d/ca.db/index
	new_certs_dir = $d/ca.db
	serial = $d/ca.db/serial
	default_md = sha256
	policy = p
	[p]
	commonName = supplied
	[leaf]
	subjectAltName = $san
	basicConstraints = critical,CA:FALSE
	extendedKeyUsage = serverAuth
	EOF
	openssl ca -batch -notext -config "$d/ca.db/cnf" -cert "$d/$ca.pem" -keyfile "$d/$ca.key" \
		-extensions leaf "${dates[@]}" -in "$d/$csr.csr" -out "$d/$out.pem" 2>"$d/ca.db/err" || {
		cat "$d/ca.db/err" >&2
		return 1
	}
	rm -rf "$d/ca.db"
}

# tls_content DIR: the origin's tree, DIR/www (file.txt, simple/ with the
# wheel), DIR/git/repo.git (bare, one commit on main, pushes allowed),
# DIR/cgi/echo.
tls_content() {
	local d=$1 w
	mkdir -p "$d/www/simple/sbxdemo" "$d/git" "$d/cgi"
	echo "sbx service file" >"$d/www/file.txt"
	printf '<!DOCTYPE html>\n<html><body><a href="sbxdemo/">sbxdemo</a></body></html>\n' >"$d/www/simple/index.html"
	w=$("$PY" - "$d/www/simple/sbxdemo" <<-'PY'
	# A wheel by hand (PEP 427): the module, METADATA, WHEEL and a RECORD
	# with the files' digests; pip installs it like any other.
	import base64, hashlib, sys, zipfile
	name, ver = "sbxdemo", "1.0"
	info = "%s-%s.dist-info" % (name, ver)
	files = {
	    name + "/__init__.py": 'def hello():\n    return "sbxdemo 1.0"\n',
	    info + "/METADATA": "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, ver),
	    info + "/WHEEL": "Wheel-Version: 1.0\nGenerator: sbx-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
	}
	record = ""
	for path, text in files.items():
	    digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
	    record += "%s,sha256=%s,%d\n" % (path, digest, len(text.encode()))
	files[info + "/RECORD"] = record + info + "/RECORD,,\n"
	whl = "%s-%s-py3-none-any.whl" % (name, ver)
	with zipfile.ZipFile(sys.argv[1] + "/" + whl, "w") as z:
	    for path, text in files.items():
	        z.writestr(path, text)
	print(whl)
	PY
	) || return 1
	printf '<!DOCTYPE html>\n<html><body><a href="%s#sha256=%s">%s</a></body></html>\n' \
		"$w" "$(sha256sum "$d/www/simple/sbxdemo/$w" | cut -d' ' -f1)" "$w" >"$d/www/simple/sbxdemo/index.html"
	git init -q --bare -b main "$d/git/repo.git"
	git -C "$d/git/repo.git" config http.receivepack true
	git -C "$d/git/repo.git" config receive.denyCurrentBranch ignore
	(
		w=$(mktemp -d "$d/seed.XXXXXX")
		cd "$w" && git init -q -b main && echo "seeded" >README &&
			git add README && git -c user.name=sbx -c user.email=sbx@test commit -q -m seed &&
			git push -q "$d/git/repo.git" main
	) || return 1
	rm -rf "$d"/seed.*
	cat >"$d/cgi/echo" <<-'SH'
	#!/bin/sh
	printf 'Content-Type: text/plain\r\n\r\n'
	env | grep '^HTTP_' | LC_ALL=C sort
	SH
	chmod 0755 "$d/cgi/echo"
}

# tls_origin NS ADDR NAME DIR TOKEN USER:PASS: the origin in namespace NS
# on ADDR, certificates from tls_pki DIR NAME, its tree and configuration
# in DIR/o. Returns once it listens.
tls_origin() {
	local ns=$1 addr=$2 name=$3 d=$4 token=$5 up=$6 o=$4/o p
	mkdir -p -m 0700 "$o"
	tls_content "$o" || return 1
	printf '%s:%s\n' "${up%%:*}" "$(openssl passwd -apr1 "${up#*:}")" >"$o/htpasswd"
	tls_nginx_head "$o" 1024 >"$o/nginx.conf"
	cat >>"$o/nginx.conf" <<-EOF
		access_log $o/access.log;
		include /etc/nginx/mime.types;
		default_type application/octet-stream;
		ssl_protocols TLSv1.2 TLSv1.3;
		log_format reflect '\$uri origin=\$http_origin xfh=\$http_x_forwarded_host';
		server {
			listen $addr:443 ssl;
			server_name $name;
			ssl_certificate $d/good.pem;
			ssl_certificate_key $d/good.key;
			root $o/www;
			location / {
				if (\$http_authorization != "Bearer $token") { return 401; }
			}
			location /basic/ {
				auth_basic "sbx";
				auth_basic_user_file $o/htpasswd;
				alias $o/www/;
			}
			location = /reflect {
				access_log $o/reflect.log reflect;
				if (\$http_authorization != "Bearer $token") { return 401; }
				add_header Access-Control-Allow-Origin \$http_origin always;
				return 302 https://\$http_x_forwarded_host/next;
			}
			location = /echo {
				if (\$http_authorization != "Bearer $token") { return 401; }
				fastcgi_pass unix:$o/fcgi.sock;
				include /etc/nginx/fastcgi_params;
				fastcgi_param SCRIPT_FILENAME $o/cgi/echo;
			}
			location ~ ^/repo\\.git(/.*)?\$ {
				if (\$http_authorization != "Bearer $token") { return 401; }
				client_max_body_size 0;
				fastcgi_pass unix:$o/fcgi.sock;
				include /etc/nginx/fastcgi_params;
				fastcgi_param SCRIPT_FILENAME /usr/lib/git-core/git-http-backend;
				fastcgi_param GIT_PROJECT_ROOT $o/git;
				fastcgi_param GIT_HTTP_EXPORT_ALL "";
				fastcgi_param PATH_INFO \$uri;
			}
		}
	EOF
	for p in expired:$TLS_PORT_EXPIRED self:$TLS_PORT_SELF wrong:$TLS_PORT_WRONG otherca:$TLS_PORT_OTHERCA; do
		printf '\tserver { listen %s:%s ssl; ssl_certificate %s; ssl_certificate_key %s; location / { return 200 "bad\\n"; } }\n' \
			"$addr" "${p#*:}" "$d/${p%%:*}.pem" "$d/${p%%:*}.key" >>"$o/nginx.conf"
	done
	echo "}" >>"$o/nginx.conf"
	ip netns exec "$ns" fcgiwrap -c 1 -s "unix:$o/fcgi.sock" </dev/null >/dev/null 2>>"$o/fcgi.err" 3>&- &
	BG_PIDS+=($!)
	tls_nginx "$ns" "$o"
	for p in 443 $TLS_PORT_EXPIRED $TLS_PORT_SELF $TLS_PORT_WRONG $TLS_PORT_OTHERCA; do
		net_wait_port "$ns" "$addr" "$p" || { cat "$o/nginx.err" "$o/error.log" >&2; return 1; }
	done
	wait_for "[ -S '$o/fcgi.sock' ]"
}

# tls_bad NS ADDR DIR: the servers that fail before HTTP (ports above),
# certificate of tls_pki DIR. Returns once each one listens: openssl says
# ACCEPT on a pipe read here, the Python servers as tls_listen says.
tls_bad() {
	local ns=$1 addr=$2 d=$3 fd line
	mkfifo "$d/bad.ready"
	exec {fd}<>"$d/bad.ready"
	ip netns exec "$ns" openssl s_server -tls1 -cipher DEFAULT:@SECLEVEL=0 -www -accept "$addr:$TLS_PORT_TLS1" \
		-cert "$d/good.pem" -key "$d/good.key" </dev/null >"$d/bad.ready" 2>/dev/null 3>&- &
	BG_PIDS+=($!)
	for _ in 1 2; do
		# "Using default temp DH parameters", then "ACCEPT".
		read -r -t 10 -u "$fd" line || return 1
		[ "$line" = ACCEPT ] && break
	done
	[ "$line" = ACCEPT ] || return 1
	exec {fd}<&-
	rm -f "$d/bad.ready"
	tls_listen "$ns" "$addr" "$TLS_PORT_STALL" "$d/stall.ready" '
held = []
while True:
    held.append(s.accept()[0])
' || return 1
	tls_listen "$ns" "$addr" "$TLS_PORT_CLOSE" "$d/close.ready" '
while True:
    c = s.accept()[0]
    # The first flight of the client read, so that the close is an end of
    # stream and never a reset for unread bytes.
    n = len(c.recv(65536))
    c.close()
    with open(sys.argv[3], "a") as f:
        f.write("closed after %d bytes\n" % n)
' "$d/close.log"
}

# tls_in NS HOSTS CMD...: CMD in namespace NS with HOSTS as its /etc/hosts
# (a mount namespace of its own), as root.
tls_in() {
	local ns=$1 hosts=$2
	shift 2
	ip netns exec "$ns" unshare -m --propagation private sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$hosts" "$@"
}

# tls_listen NS ADDR PORT READY BODY [ARG...]: a Python server in namespace
# NS: s, a socket listening on ADDR:PORT, then BODY (Python; sys.argv[1]
# is ADDR, [2] PORT, [3]... the ARGs; socket, ssl, struct and sys
# imported). Returns once it listens: it says so on READY, a pipe made
# here and removed.
tls_listen() {
	local ns=$1 addr=$2 port=$3 ready=$4 body=$5 fd line=
	shift 5
	mkfifo "$ready"
	exec {fd}<>"$ready"
	ip netns exec "$ns" "$PY" -c '
import socket, ssl, struct, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(64)
print("listening", flush=True)
'"$body" "$addr" "$port" "$@" </dev/null >"$ready" 2>/dev/null 3>&- &
	BG_PIDS+=($!)
	read -r -t 10 -u "$fd" line || :
	exec {fd}<&-
	rm -f "$ready"
	[ "$line" = listening ]
}

# tls_nginx_head DIR CONNECTIONS: the start of an nginx.conf
# for nginx in the foreground of one process, its files in DIR, up to the
# inside of its open http block.
tls_nginx_head() {
	cat <<-EOF
	daemon off;
	master_process off;
	pid $1/nginx.pid;
	error_log $1/error.log;
	events { worker_connections $2; }
	http {
		client_body_temp_path $1/body;
		proxy_temp_path $1/proxy;
		fastcgi_temp_path $1/fastcgi;
		uwsgi_temp_path $1/uwsgi;
		scgi_temp_path $1/scgi;
	EOF
}

# tls_nginx NS DIR: nginx in namespace NS with DIR/nginx.conf, its pid in
# BG_PIDS.
tls_nginx() {
	ip netns exec "$1" nginx -e "$2/error.log" -p "$2" -c "$2/nginx.conf" </dev/null >/dev/null 2>>"$2/nginx.err" 3>&- &
	BG_PIDS+=($!)
}

# tls_setup_file ADDR: a suite's setup_file starts here: net_setup_file,
# ADDR added to "o", TLS_DIR ($NS_DIR/tls) made by tls_pki for svc.test,
# and a token in TLS_DIR/token. The token never appears on a command line:
# it lives in a file only root reads, as the broker's header file does.
tls_setup_file() {
	net_setup_file
	ip -n "$NO" addr add "$1/24" dev "vo$$"
	TLS_DIR="$NS_DIR/tls"
	tls_pki "$TLS_DIR" svc.test
	od -An -N16 -tx1 /dev/urandom | tr -d ' \n' | sed 's/^/sbxtok-/' >"$TLS_DIR/token"
	chmod 0600 "$TLS_DIR/token"
}

# tls_keep: the servers started so far live as long as the file: out of
# the tests' BG_PIDS, into TLS_FILE_PIDS, which tls_teardown_file ends.
tls_keep() {
	TLS_FILE_PIDS+=("${BG_PIDS[@]}")
	BG_PIDS=()
}
tls_teardown_file() {
	BG_PIDS=("${TLS_FILE_PIDS[@]}")
	bg_end
	net_teardown_file
}

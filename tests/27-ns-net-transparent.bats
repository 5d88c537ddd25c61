#!/usr/bin/env bats
# sbx-ns --net broker:PATH,transparent: programs that ignore the proxy
# variables reach allowlisted names through sbx-broker, and nothing else
# gets out. The broker answers the sandbox's DNS with synthetic addresses
# (240.0.0.0/4) and takes the connections to them from listeners made
# inside the sandbox. Origins on 198.18.7.2 in namespace "o" (HTTP, TLS,
# and an OpenSSH server with a git repository); sbx-ns and the brokers in
# "h", which has no default route. Broker "tp" allows origin.test (80,
# 443); broker "tcp" also passes origin.test:22 as an opaque stream.

load helpers
load 29-ns-helpers
load 28-ns-net-helpers
bats_require_minimum_version 1.5.0

setup_file() {
	local s
	net_setup_file
	net_broker tp --allow-host origin.test --allow-private-networks
	net_broker tcp --allow-host origin.test --allow-tcp origin.test:22 --allow-private-networks
	# The OpenSSH origin: throwaway keys, the test user's key authorized,
	# a bare repository with one commit; /run/sshd on a private tmpfs.
	s="$NET_DIR/ssh"
	mkdir -p "$s"
	ssh-keygen -q -t ed25519 -N '' -f "$s/host" </dev/null
	ssh-keygen -q -t ed25519 -N '' -f "$s/id" </dev/null
	cp "$s/id.pub" "$s/authorized_keys"
	printf 'origin.test %s\n' "$(cut -d' ' -f1,2 "$s/host.pub")" > "$s/known_hosts"
	cat > "$s/sshd_config" <<-EOF
	ListenAddress 198.18.7.2:22
	HostKey $s/host
	AuthorizedKeysFile $s/authorized_keys
	PasswordAuthentication no
	KbdInteractiveAuthentication no
	UsePAM yes
	StrictModes no
	PidFile none
	AllowUsers $SBX_TEST_USER
	EOF
	git init -q --bare "$s/repo.git"
	git -C "$NET_DIR" -c init.defaultBranch=main init -q src
	echo transparent > "$NET_DIR/src/README"
	git -C "$NET_DIR/src" add README
	git -C "$NET_DIR/src" -c user.name=t -c user.email=t@t commit -q -m one
	git -C "$NET_DIR/src" push -q "$s/repo.git" HEAD:main
	git -C "$s/repo.git" symbolic-ref HEAD refs/heads/main
	chmod -R a+rX "$s"
	chmod 0600 "$s/host" "$s/id"
	chown -R "$SBX_TEST_UID:$SBX_TEST_GID" "$s/repo.git"
	ip netns exec "$NO" unshare -m --propagation private sh -c \
		'mount -t tmpfs tmpfs /run && mkdir -m 0755 /run/sshd && exec /usr/sbin/sshd -D -e -f "$0"' \
		"$s/sshd_config" </dev/null >/dev/null 2>>"$NET_DIR/sshd.err" 3>&- &
	echo $! >> "$NET_DIR/pids"
	net_wait_port "$NO" 198.18.7.2 22
}

teardown_file() {
	net_teardown_file
}

requests() { cat "$NET_DIR/origin.log" 2>/dev/null | wc -l; }

# tp BROKER ARGS...: a transparent sandbox of broker BROKER, as the test
# user, with the certificate and the ssh keys readable, in a fresh
# workspace (its own copy of the client key, which ssh wants private).
tp() {
	local b=$1 ws
	shift
	ws=$(ns_ws)
	install -o "$SBX_TEST_UID" -g "$SBX_TEST_GID" -m 0600 "$NET_DIR/ssh/id" "$ws/id"
	nsh_user --workspace "$ws" --ro "$NET_DIR" --setenv CERT="$NET_DIR/cert.pem" \
		--setenv SSHDIR="$NET_DIR/ssh" --net "broker:$NET_DIR/$b.sock,transparent" "$@"
}

@test "DNS: an allowed name gets a synthetic address, another name none; the refusal is a net decision line" {
	run -0 --separate-stderr tp tp --status-fd 5 -- sh -c 'getent hosts origin.test; getent hosts other.test; echo "rc=$?"' 5>"$NET_DIR/status.1"
	assert_output --regexp '^240\.0\.0\.[0-9]+ +origin\.test
rc=2$'
	assert_equal "$stderr" "sbx-ns: note: the broker refused 2 connections: other.test:53: host other.test not on the allowlist (--allow-host) (2)"
	run -0 grep -c '"event":"net","host":"other.test","port":53,"decision":"refused","reason":"host other.test not on the allowlist (--allow-host)","count":1' "$NET_DIR/status.1"
	run -0 grep -c '"net":"broker, transparent"' "$NET_DIR/status.1"
}

@test "programs that ignore the proxy variables reach the allowed name: curl --noproxy, python socket and ssl, plain HTTP" {
	run -0 --separate-stderr tp tp -- sh -c '
		curl -sS --noproxy "*" --cacert "$CERT" https://origin.test/ | sed -n 1p
		curl -sS --noproxy "*" http://origin.test/
		python3 -c "
import os, socket, ssl
s = socket.create_connection((\"origin.test\", 443), 10)
c = ssl.create_default_context(cafile=os.environ[\"CERT\"]).wrap_socket(s, server_hostname=\"origin.test\")
c.sendall(b\"GET / HTTP/1.0\\r\\n\\r\\n\")
print(c.recv(100).split(b\"\\r\\n\")[0].decode())
"
		curl -sS --cacert "$CERT" https://origin.test/ | sed -n 1p'
	assert_output '<HTML><BODY BGCOLOR="#ffffff">
hello
HTTP/1.0 200 ok
<HTML><BODY BGCOLOR="#ffffff">'
	assert_equal "$stderr" ""
}

@test "a server name or a Host other than the name connected to is refused; the origin receives nothing" {
	local before
	before=$(requests)
	run -0 --separate-stderr tp tp -- sh -c '
		echo | openssl s_client -connect origin.test:443 -servername other.test -CAfile "$CERT" >/dev/null 2>&1; echo "tls rc=$?"
		curl -sS --noproxy "*" -H "Host: other.test" -o /dev/null -w "%{http_code}\n" http://origin.test/'
	assert_output "tls rc=1
400"
	assert_equal "$stderr" "sbx-ns: note: the broker refused 2 connections: origin.test:443: server name other.test does not match the name connected to, origin.test (1); origin.test:80: Host does not match the name connected to (1)"
	assert_equal "$(requests)" "$before"
	run -0 grep -c '"method":"TLS","host":"origin.test","port":443,"address":"198.18.7.2","decision":"refused","status":null,"reason":"server name other.test does not match the name connected to, origin.test","bytes_up":0' "$NET_DIR/tp.err"
}

@test "git clone over SSH: an opaque stream with --allow-tcp origin.test:22, refused without it" {
	local ssh='ssh -i $PWD/id -o UserKnownHostsFile=$SSHDIR/known_hosts -o StrictHostKeyChecking=yes -o BatchMode=yes'
	run -0 --separate-stderr tp tcp -- sh -c "GIT_SSH_COMMAND='$ssh' git clone -q ssh://$SBX_TEST_USER@origin.test\$SSHDIR/repo.git r && cat r/README"
	assert_output "transparent"
	assert_equal "$stderr" ""
	run -0 grep -c '"method":"OPAQUE","host":"origin.test","port":22,"address":"198.18.7.2","decision":"allowed"' "$NET_DIR/tcp.err"
	run -0 --separate-stderr tp tp -- sh -c "GIT_SSH_COMMAND='$ssh' git clone -q ssh://$SBX_TEST_USER@origin.test\$SSHDIR/repo.git r; echo rc=\$?"
	assert_output "rc=128"
	# (ssh ends its lines with CR LF)
	assert_equal "${stderr//$'\r'/}" "ssh: connect to host origin.test port 22: Permission denied
fatal: Could not read from remote repository.

Please make sure you have the correct access rights
and the repository exists."
}

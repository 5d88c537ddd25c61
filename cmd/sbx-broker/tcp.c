/* --listen-tcp ADDR:PORT: the broker also (or only) listens on a loopback
 * TCP port, for sandboxes without a network namespace of their own (sbx-ns's
 * Landlock tier), whose commands may connect to that port alone. Only a
 * loopback address: a port on any other would be open to other machines.
 * Every local process can reach it, as it can any loopback port: the
 * allowlist, not the port, is what keeps traffic in check. */
#include "broker.h"
#include "die.h"
#include "exitcodes.h"
#include "parse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TCP_FORM "127.0.0.1:PORT or [::1]:PORT"

void broker_parse_tcp(struct broker_tcp *t, const char *arg)
{
	char host[64];
	const char *colon;
	size_t hl;
	unsigned port;

	memset(t, 0, sizeof *t);
	if (!*arg)
		sbx_die_usage("--listen-tcp: invalid address '': empty (" TCP_FORM ")");
	if (arg[0] == '[') {
		const char *end = strchr(arg, ']');
		if (!end || end[1] != ':')
			sbx_die_usage("--listen-tcp: invalid address '%s': port missing (" TCP_FORM ")", arg);
		hl = (size_t)(end - arg - 1);
		memcpy(host, arg + 1, hl < sizeof host ? hl : 0);
		colon = end + 1;
	} else {
		colon = strrchr(arg, ':');
		if (!colon)
			sbx_die_usage("--listen-tcp: invalid address '%s': port missing (" TCP_FORM ")", arg);
		hl = (size_t)(colon - arg);
		memcpy(host, arg, hl < sizeof host ? hl : 0);
	}
	if (hl == 0 || hl >= sizeof host)
		sbx_die_usage("--listen-tcp: invalid address '%s': address missing (" TCP_FORM ")", arg);
	host[hl] = '\0';
	port = (unsigned)sbx_opt_u64("--listen-tcp: port", colon + 1, 1, 65535);
	if (arg[0] != '[' && inet_pton(AF_INET, host, &t->a4.sin_addr) == 1) {
		t->a4.sin_family = AF_INET;
		t->a4.sin_port = htons((uint16_t)port);
		t->len = sizeof t->a4;
		if ((ntohl(t->a4.sin_addr.s_addr) >> 24) == 127)
			return;
	} else if (arg[0] == '[' && inet_pton(AF_INET6, host, &t->a6.sin6_addr) == 1) {
		t->a6.sin6_family = AF_INET6;
		t->a6.sin6_port = htons((uint16_t)port);
		t->len = sizeof t->a6;
		if (IN6_IS_ADDR_LOOPBACK(&t->a6.sin6_addr))
			return;
	} else {
		sbx_die_usage("--listen-tcp: invalid address '%s': not an IP address (" TCP_FORM ")", arg);
	}
	sbx_die_usage("--listen-tcp: invalid address '%s': not a loopback address (a port there would "
		      "be open to other machines)", arg);
}

int broker_listen_tcp(const struct broker_tcp *t, const char *arg)
{
	int one = 1, fd = socket(t->len == sizeof t->a4 ? AF_INET : AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create a socket for %s", arg);
	if (t->len == sizeof t->a6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to set IPV6_V6ONLY on %s", arg);
	/* SO_REUSEADDR lets a restarted broker bind past its old connections
	 * in TIME_WAIT; another listener on the port still makes bind fail
	 * (that would be SO_REUSEPORT). */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to set SO_REUSEADDR on %s", arg);
	if (bind(fd, &t->sa, t->len) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to listen on %s (--listen-tcp)", arg);
	if (listen(fd, 1024) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to listen on %s (--listen-tcp)", arg);
	return fd;
}

/* The uid that owns the other end of fd, a connection accepted on
 * --listen-tcp: on loopback the peer's socket is in this host's socket
 * table, and NETLINK_SOCK_DIAG finds it by its four-tuple (the peer's
 * source is our peer address, its destination our local address). The uid
 * is the socket's owner (its creator), which the peer cannot choose.
 * 0 with *uid, or -1: not found (the peer is gone or closed already, or
 * not local), and the connection is refused. */
int broker_tcp_peer_uid(int diag, int fd, uid_t *uid)
{
	struct sockaddr_storage me, peer;
	socklen_t ml = sizeof me, pl = sizeof peer;
	struct {
		struct nlmsghdr h;
		struct inet_diag_req_v2 r;
	} req = {
		.h = { .nlmsg_len = sizeof req, .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST },
		.r = { .sdiag_protocol = IPPROTO_TCP, .idiag_states = ~0U },
	};
	union {
		struct nlmsghdr h;
		char b[1024];
	} ans;
	ssize_t n;

	if (diag < 0 || getsockname(fd, (struct sockaddr *)&me, &ml) < 0 ||
	    getpeername(fd, (struct sockaddr *)&peer, &pl) < 0 || me.ss_family != peer.ss_family)
		return -1;
	req.r.sdiag_family = (uint8_t)peer.ss_family;
	req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	if (peer.ss_family == AF_INET) {
		const struct sockaddr_in *p = (const void *)&peer, *m = (const void *)&me;
		req.r.id.idiag_sport = p->sin_port;
		req.r.id.idiag_dport = m->sin_port;
		memcpy(req.r.id.idiag_src, &p->sin_addr, 4);
		memcpy(req.r.id.idiag_dst, &m->sin_addr, 4);
	} else if (peer.ss_family == AF_INET6) {
		const struct sockaddr_in6 *p = (const void *)&peer, *m = (const void *)&me;
		req.r.id.idiag_sport = p->sin6_port;
		req.r.id.idiag_dport = m->sin6_port;
		memcpy(req.r.id.idiag_src, &p->sin6_addr, 16);
		memcpy(req.r.id.idiag_dst, &m->sin6_addr, 16);
	} else {
		return -1;
	}
	if (send(diag, &req, sizeof req, 0) != (ssize_t)sizeof req)
		return -1;
	do
		n = recv(diag, &ans, sizeof ans, 0);
	while (n < 0 && errno == EINTR);
	if (n < (ssize_t)NLMSG_LENGTH(sizeof(struct inet_diag_msg)) || ans.h.nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    ans.h.nlmsg_len > (size_t)n)
		return -1;
	{
		const struct inet_diag_msg *m = NLMSG_DATA(&ans.h);
		/* The socket found must be the peer's: its own port is the
		 * peer's, its destination ours. */
		if (m->id.idiag_sport != req.r.id.idiag_sport || m->id.idiag_dport != req.r.id.idiag_dport)
			return -1;
		/* A peer that closed already is a socket without an owner
		 * (TIME_WAIT, or orphaned: the kernel says uid 0 for it): not
		 * taken for root's. */
		if (!m->idiag_inode)
			return -1;
		*uid = (uid_t)m->idiag_uid;
	}
	return 0;
}

int broker_diag_open(void)
{
	return socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
}

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

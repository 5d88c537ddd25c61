/* --net broker in the Landlock tier. Without a network namespace there is
 * no private loopback to hand to the broker: the command reaches the broker
 * on the host's 127.0.0.1:N (N the port of --net broker:PATH,port=N, 3128 by
 * default), where the same broker listens with --listen-tcp 127.0.0.1:N
 * beside its Unix socket PATH, and Landlock's TCP rules (ABI 4+) let the
 * command connect to port N and nothing else, bind nothing. The proxy
 * variables are the same as in the full sandbox.
 *
 * Landlock's rules name a port, not an address, so before the command runs
 * every TCP listener on port N that this host's network shows (IPv4 and
 * IPv6, any address, in /proc/net/tcp and tcp6) must be one of the broker's
 * own --listen-tcp sockets, by inode as the broker names them when asked
 * on its Unix socket (SBX_PROBE_TCP) and by its uid (SO_PEERCRED), and one
 * of them must be 127.0.0.1:N.
 * The question goes to the Unix socket, whose connections have the
 * broker's reserve, so a command holding its uid's --listen-tcp cap
 * (--max-peer-connections) cannot keep the next tier run from starting.
 * Port N on other machines is reachable too: that is the tier's known
 * weakness, said in the README. */
#include "ns.h"

#include "die.h"
#include "exitcodes.h"
#include "handoff.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TIER_TCP_MAX 8   /* inodes the broker may name */

/* A listener on the broker's port that is not the broker's. */
struct stranger {
	int found, loopback;  /* loopback: the broker's own is on 127.0.0.1 */
	uid_t uid;
	char addr[INET6_ADDRSTRLEN];
};

static int named(const unsigned long long *ino, size_t n, unsigned long long i)
{
	for (size_t k = 0; k < n; k++)
		if (ino[k] == i)
			return 1;
	return 0;
}

/* Every listener on port in /proc/net/FILE: each must have an inode of
 * ino[n] and belong to uid (socket inodes are a 32-bit count that wraps:
 * the uid keeps another user's socket from ever passing for the broker's);
 * the first that does not is told in *x. 0, or -1 when the file cannot be
 * read. */
static int listeners_of(const char *file, unsigned port, const unsigned long long *ino, size_t n,
			uid_t uid, struct stranger *x)
{
	char path[32], line[512], local[64];
	int v6 = !strcmp(file, "tcp6");
	unsigned st, lport;
	unsigned long u;
	unsigned long long i;
	FILE *f;

	snprintf(path, sizeof path, "/proc/net/%s", file);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? 0 : -1;   /* no IPv6 here */
	if (!fgets(line, sizeof line, f)) {
		fclose(f);
		return -1;
	}
	while (fgets(line, sizeof line, f)) {
		uint32_t w[4] = { 0 };
		char *colon;
		if (sscanf(line, " %*u: %63s %*s %x %*s %*s %*s %lu %*s %llu", local, &st, &u, &i) != 4)
			continue;
		colon = strrchr(local, ':');
		if (st != 0x0A || !colon || sscanf(colon + 1, "%x", &lport) != 1 || lport != port)
			continue;
		if (v6 ? sscanf(local, "%8x%8x%8x%8x", &w[0], &w[1], &w[2], &w[3]) != 4
		       : sscanf(local, "%8x", &w[0]) != 1)
			continue;
		if (!named(ino, n, i) || (uid_t)u != uid) {
			if (!x->found) {
				x->found = 1;
				x->uid = (uid_t)u;
				inet_ntop(v6 ? AF_INET6 : AF_INET, w, x->addr, sizeof x->addr);
			}
		} else if (!v6 && w[0] == htonl(INADDR_LOOPBACK)) {
			x->loopback = 1;
		}
	}
	fclose(f);
	return 0;
}

/* The broker's answer: SBX_TCP, " INODE" for each --listen-tcp socket,
 * "\n". The number of inodes, or -1 when it is not that. */
static int tcp_inodes(const char *ans, size_t len, unsigned long long *ino)
{
	const size_t pl = sizeof SBX_TCP - 1;
	const char *c = ans + pl;
	int n = 0;

	if (len < pl + 1 || memcmp(ans, SBX_TCP, pl) || ans[len - 1] != '\n' || strlen(ans) != len)
		return -1;
	while (*c == ' ') {
		char *e;
		if (n == TIER_TCP_MAX || c[1] < '0' || c[1] > '9')  /* strtoull skips blanks, takes signs */
			return -1;
		errno = 0;
		ino[n] = strtoull(c + 1, &e, 10);
		if (e == c + 1 || errno || !ino[n] || (*e != ' ' && *e != '\n'))
			return -1;
		n++;
		c = e;
	}
	return *c == '\n' && c == ans + len - 1 ? n : -1;
}

/* 0 when the tier can serve the network asked for, else the exit code and
 * why: 106 for what the tier cannot do, 102 for a port that is not the
 * broker's. */
int ns_tier_net(const struct ns_plan *p, char *why, size_t sz)
{
	unsigned long long ino[TIER_TCP_MAX];
	struct stranger x = { 0 };
	char ans[256];
	ssize_t got;
	int n;

	if (p->net == NET_NONE)
		return 0;
	if (p->net != NET_BROKER) {
		snprintf(why, sz, "--net %s needs a network namespace (only none and broker are kept "
			 "without one)", p->net == NET_LOOPBACK ? "loopback" : "host");
		return SBX_EXIT_NOISOLATION;
	}
	if (p->transparent) {
		snprintf(why, sz, "--net broker:PATH,transparent needs a network namespace (its DNS and "
			 "captured ports live in the sandbox's own)");
		return SBX_EXIT_NOISOLATION;
	}
	if (p->landlock_abi < 4) {
		snprintf(why, sz, "--net broker needs Landlock ABI 4 (TCP rules) to allow the broker's port "
			 "alone, and this kernel has ABI %d", p->landlock_abi);
		return SBX_EXIT_NOISOLATION;
	}
	got = ns_broker_ask_tcp(p, ans, sizeof ans);
	if (got < 0) {
		snprintf(why, sz, "refusing to run: the broker at %s does not answer: %s", p->broker_real,
			 strerror(errno));
		return SBX_EXIT_POLICY;
	}
	n = tcp_inodes(ans, (size_t)got, ino);
	if (n < 0) {
		snprintf(why, sz, "refusing to run: the sbx-broker at %s does not name its --listen-tcp "
			 "sockets, and the landlock tier must know that port %u is the broker's own "
			 "(upgrade sbx-broker)", p->broker_real, p->port);
		return SBX_EXIT_POLICY;
	}
	if (listeners_of("tcp", p->port, ino, (size_t)n, p->broker_uid, &x) < 0 ||
	    listeners_of("tcp6", p->port, ino, (size_t)n, p->broker_uid, &x) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read the TCP listeners in /proc/net");
	if (x.found) {
		snprintf(why, sz, "refusing to run: uid %u listens on %s port %u with a socket that is not "
			 "the broker's --listen-tcp (the broker at %s), and the landlock tier lets the command "
			 "connect to any listener on the broker's port (stop it, or give the broker a port of "
			 "its own with ,port=N)", (unsigned)x.uid, x.addr, p->port, p->broker_real);
		return SBX_EXIT_POLICY;
	}
	if (!x.loopback) {
		snprintf(why, sz, "refusing to run: the landlock tier reaches the broker on 127.0.0.1:%u and "
			 "the broker does not listen there (sbx-broker --listen %s --listen-tcp 127.0.0.1:%u)",
			 p->port, p->broker_real, p->port);
		return SBX_EXIT_POLICY;
	}
	return 0;
}

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
 * IPv6, any address) must belong to the broker's user (from SO_PEERCRED on
 * its Unix socket), and 127.0.0.1:N must answer as sbx-broker does to a
 * probe (it closes without a word). Port N on other machines is reachable
 * too: that is the tier's known weakness, said in the README. */
#include "ns.h"

#include "die.h"
#include "exitcodes.h"
#include "handoff.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PROBE_WAIT_MS 10000

/* Every listener on port in /proc/net/FILE: 1 when all belong to uid,
 * else 0 with the first stranger's uid in *who; *seen counts them. */
static int listeners_of(const char *file, unsigned port, uid_t uid, uid_t *who, int *seen)
{
	char path[32], line[512], local[64];
	unsigned st, lport;
	unsigned long u;
	FILE *f;

	snprintf(path, sizeof path, "/proc/net/%s", file);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? 1 : -1;   /* no IPv6 here */
	if (!fgets(line, sizeof line, f)) {
		fclose(f);
		return -1;
	}
	while (fgets(line, sizeof line, f)) {
		char *colon;
		if (sscanf(line, " %*u: %63s %*s %x %*s %*s %*s %lu", local, &st, &u) != 3)
			continue;
		colon = strrchr(local, ':');
		if (st != 0x0A || !colon || sscanf(colon + 1, "%x", &lport) != 1 || lport != port)
			continue;
		(*seen)++;
		if ((uid_t)u != uid) {
			*who = (uid_t)u;
			fclose(f);
			return 0;
		}
	}
	fclose(f);
	return 1;
}

/* sbx-broker closes a probe without answering; anything else that
 * answers (another proxy, any server) is not the broker. */
static const char *probe(unsigned port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct pollfd p;
	char c;
	ssize_t n;
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) < 0) {
		if (s >= 0)
			close(s);
		return "nothing listens there";
	}
	(void)!send(s, SBX_PROBE, sizeof SBX_PROBE - 1, MSG_NOSIGNAL);
	p = (struct pollfd){ .fd = s, .events = POLLIN };
	n = poll(&p, 1, PROBE_WAIT_MS) == 1 ? read(s, &c, 1) : -2;
	close(s);
	if (n == 0 || (n < 0 && errno == ECONNRESET))
		return NULL;
	return n == -2 ? "no answer to the probe" : "it answered a probe as sbx-broker does not";
}

/* 0 when the tier can serve the network asked for, else the exit code and
 * why: 106 for what the tier cannot do, 102 for a port that is not the
 * broker's. */
int ns_tier_net(const struct ns_plan *p, char *why, size_t sz)
{
	uid_t who = 0;
	int seen = 0, ok4, ok6;
	const char *bad;

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
	ok4 = listeners_of("tcp", p->port, p->broker_uid, &who, &seen);
	ok6 = ok4 == 1 ? listeners_of("tcp6", p->port, p->broker_uid, &who, &seen) : ok4;
	if (ok4 < 0 || ok6 < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read the TCP listeners in /proc/net");
	if (!ok6) {
		snprintf(why, sz, "refusing to run: uid %u listens on port %u, and the landlock tier lets the "
			 "command connect to any listener on the broker's port (the broker at %s runs as "
			 "uid %u)", (unsigned)who, p->port, p->broker_real, (unsigned)p->broker_uid);
		return SBX_EXIT_POLICY;
	}
	bad = seen ? probe(p->port) : "nothing listens there";
	if (bad) {
		snprintf(why, sz, "refusing to run: the landlock tier reaches the broker on 127.0.0.1:%u and "
			 "%s (sbx-broker --listen %s --listen-tcp 127.0.0.1:%u)", p->port, bad,
			 p->broker_real, p->port);
		return SBX_EXIT_POLICY;
	}
	return 0;
}

/* --net: which network the command gets.
 *
 *   none      a network namespace with nothing up; socket() denied.
 *   loopback  a network namespace with lo up: 127.0.0.1 and ::1, private.
 *   broker    lo up, and the broker's service on 127.0.0.1:N and [::1]:N:
 *             listening sockets of the sandbox's namespace that the broker
 *             accepts on itself; the command may create TCP sockets only
 *             and never listen.
 *   host      the host's network, unrestricted; listen() denied.
 *
 * The bridge is a handoff: the sandbox's pid 1 creates the two listening
 * sockets inside the namespace (lo up needs its capabilities there) and
 * hands them to the outer process over a socketpair; the outer sends them
 * to the broker and keeps the connection they went over for as long as it
 * lives. No process copies bytes between the sandbox and the broker, the
 * command has nothing to signal or trace (neither sbx-ns nor the broker is
 * in its pid namespace), and the broker's socket never appears inside the
 * sandbox at all. */
#include "ns.h"

#include "clock.h"
#include "die.h"
#include "exitcodes.h"
#include "fd.h"
#include "fdpass.h"
#include "handoff.h"
#include "json.h"
#include "parse.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <poll.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define HANDOFF_WAIT_MS 10000

static const char modes[] = "none, loopback, broker:PATH[,transparent][,port=N], host";

void ns_parse_net(struct ns_plan *p, const char *s)
{
	const char *rest, *end;
	int have_port = 0;

	p->port = NS_BROKER_PORT;
	if (!*s)
		sbx_die_usage("--net: invalid mode '': empty");
	if (!strcmp(s, "none")) {
		p->net = NET_NONE;
		return;
	}
	if (!strcmp(s, "loopback")) {
		p->net = NET_LOOPBACK;
		return;
	}
	if (!strcmp(s, "host")) {
		p->net = NET_HOST;
		return;
	}
	if (strncmp(s, "broker", 6) || (s[6] != ':' && s[6] != ',' && s[6] != '\0'))
		sbx_die_usage("--net: invalid mode '%s' (%s)", s, modes);
	p->net = NET_BROKER;
	rest = s + 6;
	/* The options are last (",port=N", ",transparent", each once); a
	 * path may hold commas itself. */
	end = rest + strlen(rest);
	for (;;) {
		const char *comma = memrchr(rest, ',', (size_t)(end - rest));
		if (!comma)
			break;
		if (end - comma == 12 && !strncmp(comma, ",transparent", 12)) {
			if (p->transparent)
				sbx_die_usage("--net: transparent repeated in '%s'", s);
			p->transparent = 1;
		} else if (!strncmp(comma, ",port=", 6)) {
			char *v = sbx_need(strndup(comma + 6, (size_t)(end - comma - 6)));
			if (have_port)
				sbx_die_usage("--net: port repeated in '%s'", s);
			p->port = (unsigned)sbx_opt_u64("--net: port", v, 1, 65535);
			have_port = 1;
			free(v);
		} else {
			break;
		}
		end = comma;
	}
	if (*rest == ':') {
		char *bp = sbx_need(strndup(rest + 1, (size_t)(end - rest - 1)));
		if (!*bp)
			sbx_die_usage("--net: invalid broker path '': empty");
		if (*bp != '/')
			sbx_die_usage("--net: invalid broker path '%s': not absolute", bp);
		p->broker_path = sbx_path_squash(bp);
		free(bp);
	} else if (rest != end) {
		sbx_die_usage("--net: invalid mode '%s' (%s)", s, modes);
	}
}

/* --broker-fd FD: an O_PATH (or any) fd opened on the broker's socket
 * file, consumed. A socket fd itself is refused: it names no path to
 * connect to again. */
void ns_opt_broker_fd(struct ns_plan *p, const char *arg)
{
	struct stat st;
	char link[64], path[PATH_MAX];
	ssize_t n;

	p->broker_fd = sbx_opt_fd("--broker-fd", arg);
	p->have_broker_fd = 1;
	if (fstat(p->broker_fd, &st) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to stat fd %d", p->broker_fd);
	snprintf(link, sizeof link, "/proc/self/fd/%d", p->broker_fd);
	n = readlink(link, path, sizeof path - 1);
	if (!S_ISSOCK(st.st_mode) || n <= 0 || path[0] != '/')
		sbx_die_usage("--broker-fd: invalid fd '%s': not opened on a socket file", arg);
	if (sbx_fd_cloexec(p->broker_fd, 1) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to set close-on-exec on fd %d", p->broker_fd);
}

static const char *const proxy_vars[] = {
	"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "NO_PROXY", "no_proxy",
};

int ns_net_reserved_env(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof proxy_vars / sizeof proxy_vars[0]; i++)
		if (strlen(proxy_vars[i]) == len && !strncmp(proxy_vars[i], name, len))
			return 1;
	return 0;
}

/* Connect to the broker through the fd (never by name again). */
static int broker_connect(int bfd, int flags)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);

	if (s < 0)
		return -1;
	snprintf(sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d", bfd);
	if (connect(s, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int e = errno;
		close(s);
		errno = e;
		return -1;
	}
	return s;
}

/* Write line on s, a new connection to the broker, and read its answer
 * to the close (the rest of a long one drained); s is closed. The answer
 * is a string of the returned length. */
size_t ns_broker_answer(int s, const char *line, char *ans, size_t sz)
{
	size_t got = 0;

	(void)!send(s, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT);
	/* The broker closes at once; whatever else is there is let finish
	 * its answer rather than have it written to a closed socket. */
	shutdown(s, SHUT_WR);
	for (;;) {
		struct pollfd pf = { .fd = s, .events = POLLIN };
		char junk[512];
		int full = got == sz - 1;
		ssize_t k;
		if (poll(&pf, 1, HANDOFF_WAIT_MS) <= 0)
			break;
		k = read(s, full ? junk : ans + got, full ? sizeof junk : sz - 1 - got);
		if (k <= 0)
			break;
		if (!full)
			got += (size_t)k;
	}
	ans[got] = '\0';
	close(s);
	return got;
}

/* The landlock tier's question to the broker (SBX_PROBE_TCP), on its Unix
 * socket: the answer, or -1 when the socket does not answer. */
ssize_t ns_broker_ask_tcp(const struct ns_plan *p, char *ans, size_t sz)
{
	int s = broker_connect(p->broker_fd, 0);

	if (s < 0)
		return -1;
	return (ssize_t)ns_broker_answer(s, SBX_PROBE_TCP, ans, sz);
}

/* The broker's socket cannot be connected to: say what would fix it. */
static void broker_unreachable(const char *path)
{
	if (errno == EACCES)
		sbx_die(SBX_EXIT_POLICY, "refusing to run: permission denied on the broker socket %s "
			"(sbx-broker --socket-mode and --socket-group open it to other users)", path);
	if (errno == ECONNREFUSED)
		sbx_die(SBX_EXIT_POLICY, "refusing to run: the broker at %s does not answer: %s (a socket "
			"nobody listens on: start the broker with sbx-broker --listen %s)", path,
			strerror(errno), path);
	sbx_die_errno(SBX_EXIT_POLICY, "refusing to run: the broker at %s does not answer", path);
}

/* The broker's answer to SBX_PROBE_PORTS: "SBX-PORTS N...\n", each port
 * once, at most SBX_CAPTURE_MAX, none of them 53 (the sandbox's DNS) or
 * the proxy port (their listeners would collide). */
static void capture_ports(struct ns_plan *p, const char *path, const char *ans, size_t n)
{
	const size_t pl = sizeof SBX_PORTS - 1;
	const char *c = ans + pl;

	if (n < pl + 1 || memcmp(ans, SBX_PORTS, pl) || ans[n - 1] != '\n' || strlen(ans) != n)
		sbx_die(SBX_EXIT_POLICY, "refusing to run: the broker at %s did not say which ports to capture "
			"(--net broker:PATH,transparent needs an sbx-broker that has transparent mode)", path);
	p->ncap = 0;
	while (*c == ' ') {
		char *e;
		unsigned long v = strtoul(c + 1, &e, 10);
		if (e == c + 1 || v < 1 || v > 65535 || p->ncap == SBX_CAPTURE_MAX || (*e != ' ' && *e != '\n'))
			break;
		for (size_t i = 0; i < p->ncap; i++)
			if (p->cap_ports[i] == v)
				v = 0;
		if (!v)
			break;
		if (v == SBX_DNS_PORT || v == p->port)
			sbx_die_usage("--net: port %lu is captured for the broker and is also the sandbox's %s "
				      "port%s", v, v == p->port ? "proxy" : "DNS",
				      v == p->port ? "; move the proxy with ,port=N" : "");
		p->cap_ports[p->ncap++] = (unsigned)v;
		c = e;
	}
	if (*c != '\n' || !p->ncap)
		sbx_die(SBX_EXIT_POLICY, "refusing to run: the broker at %s gave an invalid list of ports "
			"to capture", path);
}

/* The outer, after the mounts are planned: the broker's socket exists, is
 * a socket, lies outside every writable root (by name and by the identity
 * of each directory above it) and answers. */
void ns_check_net(const struct ns_args *a, struct ns_plan *p)
{
	char link[64], path[PATH_MAX];
	struct stat st;
	const struct mount_op *op;
	ssize_t n;
	int s;

	for (size_t i = 0; i < a->nsetenv + a->nkeepenv; i++) {
		const char *v = i < a->nsetenv ? a->setenv[i] : a->keepenv[i - a->nsetenv];
		const char *eq = strchr(v, '=');
		size_t len = eq ? (size_t)(eq - v) : strlen(v);
		if (p->net == NET_BROKER && ns_net_reserved_env(v, len))
			sbx_die_usage("%s: variable %.*s is set by --net broker",
				      i < a->nsetenv ? "--setenv" : "--keep-env", (int)len, v);
	}
	if (p->have_broker_fd && p->net != NET_BROKER)
		sbx_die_usage("--broker-fd needs --net broker");
	if (p->net != NET_BROKER)
		return;
	if (p->have_broker_fd && p->broker_path)
		sbx_die_usage("--broker-fd and --net broker:PATH are exclusive");
	if (!p->have_broker_fd && !p->broker_path)
		sbx_die_usage("--net broker needs a PATH or --broker-fd");
	if (!p->have_broker_fd) {
		char canon[PATH_MAX];
		p->broker_fd = open(p->broker_path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		/* Nothing there, or not a socket: no broker serves PATH yet. */
		if (p->broker_fd < 0 && errno == ENOENT)
			sbx_die(SBX_EXIT_POLICY, "refusing to run: no broker socket at %s (start the broker "
				"first: sbx-broker --listen %s)", p->broker_path, p->broker_path);
		if (p->broker_fd < 0)
			sbx_die_usage("--net: invalid broker path '%s': %s", p->broker_path, strerror(errno));
		if (fstat(p->broker_fd, &st) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to stat %s", p->broker_path);
		if (!S_ISSOCK(st.st_mode))
			sbx_die(SBX_EXIT_POLICY, "refusing to run: the broker path %s is not a socket (give the "
				"PATH of an sbx-broker --listen PATH)", p->broker_path);
		if (!realpath(p->broker_path, canon) || strcmp(canon, p->broker_path))
			sbx_die_usage("--net: invalid broker path '%s': not canonical (a symlink, . or ..)",
				      p->broker_path);
	}
	snprintf(link, sizeof link, "/proc/self/fd/%d", p->broker_fd);
	n = readlink(link, path, sizeof path - 1);
	if (n < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read %s", link);
	path[n] = '\0';
	/* Inside a writable root the command could put its own socket there
	 * for the next run, or bind a second root over it. */
	if ((op = ns_root_holding(p, path, 1)))
		sbx_die(SBX_EXIT_POLICY, "refusing to run: the broker socket %s lies "
			"inside the writable root %s", path, op->src);
	/* The probe line tells the broker this is a check, not a request
	 * to log as refused; in transparent mode it asks for the ports to
	 * capture. */
	s = broker_connect(p->broker_fd, 0);
	if (s < 0)
		broker_unreachable(path);
	{
		struct ucred cr;
		socklen_t crlen = sizeof cr;
		if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to learn who serves %s", path);
		p->broker_uid = cr.uid;
	}
	{
		char ans[1024];
		size_t got = ns_broker_answer(s, p->transparent ? SBX_PROBE_PORTS : SBX_PROBE, ans, sizeof ans);
		if (p->transparent)
			capture_ports(p, path, ans, got);
	}
	p->broker_real = sbx_need(strdup(path));
}

/* The outer, just before the clone. */
void ns_net_prepare(struct ns_run *r)
{
	r->x.net_chan[0] = r->x.net_chan[1] = -1;
	r->x.broker_chan = -1;
	r->x.net_nkeep = 0;
	r->x.net_lost_ms = 0;
	r->x.net_ending = 0;
	r->x.net_pending = -1;
	if (r->p->net != NET_BROKER)
		return;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, r->x.net_chan) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create the channel for the listening sockets");
}

static void lo_up(void)
{
	struct ifreq ifr;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	memset(&ifr, 0, sizeof ifr);
	strcpy(ifr.ifr_name, "lo");
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read the flags of lo");
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to bring lo up");
	close(s);
}

/* A socket of the sandbox's namespace for the broker: TCP listening (or
 * UDP, bound) on addr:port. */
static int sandbox_socket(int family, int type, uint32_t addr4, unsigned port)
{
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(addr4) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	char name[32];
	int one = 1, s = socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (family == AF_INET6)
		snprintf(name, sizeof name, "[::1]");
	else
		snprintf(name, sizeof name, "%u.%u.%u.%u", addr4 >> 24, addr4 >> 16 & 255, addr4 >> 8 & 255,
			 addr4 & 255);
	if (s < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create the broker's socket on %s:%u", name, port);
	if (family == AF_INET6 && setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to set IPV6_V6ONLY on [::1]:%u", port);
	if (family == AF_INET ? bind(s, (struct sockaddr *)&a4, sizeof a4)
			      : bind(s, (struct sockaddr *)&a6, sizeof a6))
		sbx_die_errno(SBX_EXIT_SYS, "unable to bind the broker's socket to %s:%u", name, port);
	if (type == SOCK_STREAM && listen(s, 128) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to listen on %s:%u", name, port);
	return s;
}

/* The synthetic range is local in the sandbox's namespace: a connection
 * to any of its addresses lands on lo, where the captured ports' wildcard
 * listeners take it (rtnetlink, as "ip route add local 240.0.0.0/4 dev
 * lo" would). */
static void synth_route(void)
{
	struct {
		struct nlmsghdr n;
		struct rtmsg rt;
		char attrs[64];
	} req;
	struct {
		struct nlmsghdr n;
		struct nlmsgerr e;
	} ack;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	struct rtattr *a;
	uint32_t dst = htonl(SBX_SYNTH_NET);
	int oif = (int)if_nametoindex("lo");
	int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);

	memset(&req, 0, sizeof req);
	req.n.nlmsg_len = NLMSG_LENGTH(sizeof req.rt);
	req.n.nlmsg_type = RTM_NEWROUTE;
	req.n.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
	req.n.nlmsg_seq = 1;
	req.rt.rtm_family = AF_INET;
	req.rt.rtm_dst_len = SBX_SYNTH_PREFIX;
	req.rt.rtm_table = RT_TABLE_LOCAL;
	req.rt.rtm_protocol = RTPROT_STATIC;
	req.rt.rtm_scope = RT_SCOPE_HOST;
	req.rt.rtm_type = RTN_LOCAL;
	a = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.n.nlmsg_len));
	a->rta_type = RTA_DST;
	a->rta_len = RTA_LENGTH(sizeof dst);
	memcpy(RTA_DATA(a), &dst, sizeof dst);
	req.n.nlmsg_len = NLMSG_ALIGN(req.n.nlmsg_len) + RTA_ALIGN(a->rta_len);
	a = (struct rtattr *)((char *)&req + req.n.nlmsg_len);
	a->rta_type = RTA_OIF;
	a->rta_len = RTA_LENGTH(sizeof oif);
	memcpy(RTA_DATA(a), &oif, sizeof oif);
	req.n.nlmsg_len += RTA_ALIGN(a->rta_len);
	if (s < 0 || !oif || sendto(s, &req, req.n.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0 ||
	    recv(s, &ack, sizeof ack, 0) < (ssize_t)sizeof ack)
		sbx_die_errno(SBX_EXIT_SYS, "unable to route 240.0.0.0/4 to lo");
	if (ack.n.nlmsg_type != NLMSG_ERROR || ack.e.error) {
		errno = ack.n.nlmsg_type == NLMSG_ERROR ? -ack.e.error : EPROTO;
		sbx_die_errno(SBX_EXIT_SYS, "unable to route 240.0.0.0/4 to lo");
	}
	close(s);
}

/* pid 1, with its capabilities in the sandbox's namespaces: lo up, and in
 * broker mode the listening sockets, handed out (in transparent mode also
 * the route of the synthetic range, the DNS sockets and a listener per
 * captured port); the command is not forked before the outer says the
 * broker took them. */
void ns_net_inside(struct ns_run *r)
{
	char c;
	int fds[SBX_HANDOFF_FDS];
	size_t n = 0;

	if (r->p->net == NET_NONE || r->p->net == NET_HOST)
		return;
	lo_up();
	if (r->p->net != NET_BROKER)
		return;
	close(r->x.net_chan[0]);
	if (r->p->broker_fd >= 0)
		close(r->p->broker_fd);
	fds[n++] = sandbox_socket(AF_INET, SOCK_STREAM, INADDR_LOOPBACK, r->p->port);
	fds[n++] = sandbox_socket(AF_INET6, SOCK_STREAM, 0, r->p->port);
	if (r->p->transparent) {
		synth_route();
		fds[n++] = sandbox_socket(AF_INET, SOCK_DGRAM, INADDR_LOOPBACK, SBX_DNS_PORT);
		fds[n++] = sandbox_socket(AF_INET, SOCK_STREAM, INADDR_LOOPBACK, SBX_DNS_PORT);
		for (size_t i = 0; i < r->p->ncap; i++)
			fds[n++] = sandbox_socket(AF_INET, SOCK_STREAM, INADDR_ANY, r->p->cap_ports[i]);
	}
	if (sbx_send_fds(r->x.net_chan[1], "L", 1, fds, n) != 1)
		_exit(SBX_EXIT_LOST);
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	if (read(r->x.net_chan[1], &c, 1) != 1 || c != 'g')
		_exit(SBX_EXIT_LOST);
	close(r->x.net_chan[1]);
}

/* Why the broker would not take the listeners: its answer's one line,
 * printable characters only (it goes into our own message). */
static const char *handoff_answer(int s, char *buf, size_t sz)
{
	struct pollfd p = { .fd = s, .events = POLLIN };
	size_t n = 0;

	while (n < sz - 1 && !memchr(buf, '\n', n)) {
		ssize_t r;
		int k = poll(&p, 1, HANDOFF_WAIT_MS);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return "no answer";
		r = read(s, buf + n, sz - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r ? strerror(errno) : "it closed the connection";
		n += (size_t)r;
	}
	buf[n] = '\0';
	if (!strcmp(buf, SBX_HANDOFF_OK))
		return NULL;
	buf[strcspn(buf, "\n")] = '\0';
	for (char *q = buf; *q; q++)
		if (*q < 0x20 || *q > 0x7e)
			*q = '?';
	if (!strncmp(buf, SBX_HANDOFF_REFUSED, sizeof SBX_HANDOFF_REFUSED - 1))
		return buf + sizeof SBX_HANDOFF_REFUSED - 1;
	return "not an sbx-broker answer";
}

/* Hand the listeners to the broker on s: NULL, or why it would not take them. */
static const char *handoff(const struct ns_run *r, int s, const int *fds, size_t n, char *answer, size_t sz)
{
	const char *hello = r->p->transparent ? SBX_HANDOFF_TRANSPARENT : SBX_HANDOFF_HELLO;

	if (sbx_send_fds(s, hello, strlen(hello), fds, n) != (ssize_t)strlen(hello))
		return strerror(errno);
	return handoff_answer(s, answer, sz);
}

/* The outer: take the sockets from pid 1 and hand them to the broker,
 * which from then on accepts the sandbox's connections itself (no process
 * of ours copies a byte); then let pid 1 go on. The connection they went
 * over stays open for as long as this process lives: its end tells the
 * broker to close them, with every connection it accepted on them. They
 * are set to reset on close, so the broker's death resets every open
 * connection. The outer keeps its own copies: while no broker holds them
 * the kernel queues the sandbox's new connections, and a broker that comes
 * back on the same socket gets them again (ns_net_lost). When any of this
 * fails the command never runs. */
void ns_net_outer(struct ns_run *r, pid_t pid)
{
	static const struct linger abortive = { .l_onoff = 1, .l_linger = 0 };
	char c, answer[256];
	struct ucred cr;
	socklen_t crlen = sizeof cr;
	const char *why;
	int fds[SBX_HANDOFF_FDS + 1], s, cut;
	size_t n = r->p->transparent ? 4 + r->p->ncap : 2, got;

	if (r->p->net != NET_BROKER)
		return;
	close(r->x.net_chan[1]);
	if (sbx_recv_fds(r->x.net_chan[0], &c, 1, 0, fds, n + 1, &got, &cut) != 1 || c != 'L' ||
	    got != n || cut) {
		for (size_t i = 0; i < got; i++)
			close(fds[i]);
		close(r->x.net_chan[0]);
		return; /* pid 1 died and said why */
	}
	for (size_t i = 0; i < n; i++) {
		if (r->p->transparent && i == 2)
			continue; /* the DNS socket is UDP: nothing to reset */
		if (setsockopt(fds[i], SOL_SOCKET, SO_LINGER, &abortive, sizeof abortive) < 0) {
			kill(pid, SIGKILL);
			sbx_die_errno(SBX_EXIT_SYS, "unable to set SO_LINGER on the sandbox's listeners");
		}
	}
	s = broker_connect(r->p->broker_fd, 0);
	if (s < 0) {
		int e = errno;
		kill(pid, SIGKILL);
		errno = e;
		broker_unreachable(r->p->broker_real);
	}
	why = handoff(r, s, fds, n, answer, sizeof answer);
	if (why) {
		kill(pid, SIGKILL);
		sbx_die(SBX_EXIT_POLICY, "refusing to run: the broker at %s did not take the sandbox's listeners: %s",
			r->p->broker_real, why);
	}
	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) == 0)
		r->x.broker_pid = cr.pid;
	r->x.broker_chan = s;
	memcpy(r->x.net_keep, fds, n * sizeof *fds);
	r->x.net_nkeep = n;
	c = 'g';
	if (write(r->x.net_chan[0], &c, 1) != 1) {
		/* pid 1 is gone: wait_sandbox reports it */
	}
	close(r->x.net_chan[0]);
}

/* How long a sandbox waits for its broker to come back, and to answer. */
#define REHAND_MS 30000
#define REHAND_RETRY_MS 200

static void broker_event(const struct ns_run *r, const char *state)
{
	struct sbx_json j;

	if (r->a->status_fd < 0)
		return;
	sbx_json_begin(&j, NS_PROG, "broker");
	sbx_json_str(&j, "state", state);
	sbx_json_str(&j, "socket", r->p->broker_real);
	sbx_json_write(&j, r->a->status_fd);
}

/* The sandbox stops waiting for a broker: its copies of the listeners
 * close (what waited in their queues is reset), and its new connections
 * are refused from then on. */
static void give_up(struct ns_run *r, const char *why)
{
	for (size_t i = 0; i < r->x.net_nkeep; i++)
		close(r->x.net_keep[i]);
	r->x.net_nkeep = 0;
	r->x.net_lost_ms = 0;
	if (r->x.net_pending >= 0)
		close(r->x.net_pending);
	r->x.net_pending = -1;
	sbx_warn("the broker at %s ended, and %s: the sandbox's new connections are refused from now on",
		 r->p->broker_real, why);
	broker_event(r, "gone");
}

/* The broker's connection ended while the sandbox lives. Where its socket
 * outlives it (a socket unit's: the socket stays, and the next connection
 * starts a new broker), the listeners go to the next broker on the same
 * socket; connections open at that moment were reset, new ones wait in
 * the listeners' queues meanwhile. */
void ns_net_lost(struct ns_run *r)
{
	if (r->x.broker_chan >= 0)
		close(r->x.broker_chan);
	r->x.broker_chan = -1;
	if (r->x.net_ending || !r->x.net_nkeep || r->x.net_lost_ms)
		return;
	r->x.net_lost_ms = sbx_now_ms();
	r->x.net_next_ms = 0;
	r->x.net_said = 0;
	broker_event(r, "lost");
	(void)ns_net_tick(r, 0);
}

/* A new connection to the broker's socket, through the fd (never by name
 * again: the same socket the sandbox was checked against, whose listening
 * end, and so its owner, is the one it had), the listeners sent on it;
 * its answer comes to ns_net_handle. 0, or -1 with errno. */
static int rehand_start(struct ns_run *r)
{
	const char *hello = r->p->transparent ? SBX_HANDOFF_TRANSPARENT : SBX_HANDOFF_HELLO;
	struct ucred cr;
	socklen_t crlen = sizeof cr;
	int s = broker_connect(r->p->broker_fd, SOCK_NONBLOCK);

	if (s < 0)
		return -1;
	if (sbx_send_fds(s, hello, strlen(hello), r->x.net_keep, r->x.net_nkeep) != (ssize_t)strlen(hello)) {
		int e = errno;
		close(s);
		errno = e;
		return -1;
	}
	r->x.net_pending = s;
	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) == 0)
		r->x.broker_pid = cr.pid;
	return 0;
}

/* The pending connection is readable: the broker's answer. */
static void rehand_answer(struct ns_run *r)
{
	char answer[256];
	const char *why = handoff_answer(r->x.net_pending, answer, sizeof answer);

	if (why) {
		/* A broker still ending closes without an answer: tried again,
		 * quietly. A refusal is said, once. */
		int refused = why == answer + sizeof SBX_HANDOFF_REFUSED - 1;
		close(r->x.net_pending);
		r->x.net_pending = -1;
		r->x.net_next_ms = sbx_now_ms() + REHAND_RETRY_MS;
		if (refused && !r->x.net_said)
			sbx_warn("the broker at %s did not take the sandbox's listeners again: %s", r->p->broker_real,
				 why);
		r->x.net_said |= refused;
		return;
	}
	r->x.broker_chan = r->x.net_pending;
	r->x.net_pending = -1;
	r->x.net_lost_ms = 0;
	ns_net_reset_lines();
	broker_event(r, "back");
}

int ns_net_pending(struct ns_run *r)
{
	if (r->x.broker_chan >= 0 || r->x.net_pending < 0)
		return 0;
	rehand_answer(r);
	return 1;
}

/* Each turn of the outer's loop while the broker is lost: try its socket
 * again every REHAND_RETRY_MS, for REHAND_MS; a socket nobody listens on
 * any more (it ended with its broker) ends the wait at once. Returns the
 * loop's wait, shortened for the next try. */
int ns_net_tick(struct ns_run *r, int wait_ms)
{
	uint64_t now = sbx_now_ms();

	if (!r->x.net_lost_ms)
		return wait_ms;
	if (now - r->x.net_lost_ms >= REHAND_MS) {
		give_up(r, "did not come back within 30 s");
		return wait_ms;
	}
	if (r->x.net_pending >= 0)
		return wait_ms; /* its answer, or the end of the wait above */
	if (now >= r->x.net_next_ms && rehand_start(r) < 0) {
		if (errno == ECONNREFUSED || errno == ENOENT) {
			give_up(r, "nothing listens on its socket any more");
			return wait_ms;
		}
		r->x.net_next_ms = now + REHAND_RETRY_MS;
	}
	if (r->x.net_pending >= 0 || r->x.net_next_ms <= now)
		return wait_ms > REHAND_RETRY_MS ? REHAND_RETRY_MS : wait_ms;
	return r->x.net_next_ms - now < (uint64_t)wait_ms ? (int)(r->x.net_next_ms - now) : wait_ms;
}

/* The sandbox is over: the broker closes its listeners and connections. */
void ns_net_end(struct ns_run *r)
{
	r->x.net_ending = 1;
	for (size_t i = 0; i < r->x.net_nkeep; i++)
		close(r->x.net_keep[i]);
	r->x.net_nkeep = 0;
	if (r->x.net_pending >= 0)
		close(r->x.net_pending);
	r->x.net_pending = -1;
	if (r->x.broker_chan < 0)
		return;
	close(r->x.broker_chan);
	r->x.broker_chan = -1;
}

const char *ns_net_name(const struct ns_plan *p)
{
	switch (p->net) {
	case NET_LOOPBACK: return "loopback";
	case NET_BROKER: return p->transparent ? "broker, transparent" : "broker";
	case NET_HOST: return "host (unrestricted)";
	default: return "none";
	}
}

/* The network fields of a "started" status line, the same for both
 * tiers; bridge says how the broker is reached. */
void ns_net_status(struct sbx_json *j, const struct ns_plan *p, const char *bridge)
{
	char proxy[40];

	sbx_json_str(j, "net", ns_net_name(p));
	if (p->net != NET_BROKER)
		return;
	snprintf(proxy, sizeof proxy, "http://127.0.0.1:%u", p->port);
	sbx_json_str(j, "proxy", proxy);
	sbx_json_str(j, "bridge", bridge);
}

/* The proxy variables: a convenience for clients, not the boundary. */
char **ns_net_env(const struct ns_plan *p, char **env, size_t *k)
{
	if (p->net != NET_BROKER)
		return env;
	for (size_t i = 0; i < 5; i++)
		env[(*k)++] = sbx_needf("%s=http://127.0.0.1:%u", proxy_vars[i], p->port);
	env[*k] = NULL;
	return env;
}

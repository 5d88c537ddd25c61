/* sbx-broker: the host-side egress broker of one sandbox. It listens on a
 * Unix stream socket (the sandbox's only way out), and for each connection
 * takes one CONNECT or one plain HTTP request, checks the name against the
 * allowlist, the port, and every address the name resolves to, then dials
 * the checked address itself (or asks the configured upstream proxy to).
 * Nothing is ever connected directly on a failure: there is no fallback. */
#include "broker.h"
#include "die.h"
#include "exitcodes.h"
#include "fd.h"
#include "opts.h"
#include "parse.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static const char usage[] =
	"usage: sbx-broker --listen PATH [OPTION]...\n"
	"       sbx-broker --listen-fd FD [OPTION]...\n"
	"       sbx-broker --listen-tcp ADDR:PORT [OPTION]...\n"
	"Check each connection of a sandbox against the allowed names, ports and\n"
	"addresses, and make the allowed ones itself.\n"
	"\n"
	"Where sandboxes connect:\n"
	"  --listen PATH                the Unix socket to create and listen on\n"
	"  --socket-mode MODE           its permission bits, octal; default: umask's\n"
	"  --socket-group GROUP         its group, a name or a number\n"
	"  --listen-fd FD               a listening Unix socket to take over\n"
	"  --listen-tcp ADDR:PORT       also listen on this loopback TCP port\n"
	"\n"
	"What is allowed:\n"
	"  --mode allowlist|proxy       direct, or through --upstream; default: allowlist\n"
	"  --allow-host NAME            an allowed name or *.domain (repeatable)\n"
	"  --allow-policy FILE          the allowed names of a policy's allowlist\n"
	"  --allow-port N               an allowed port (repeatable); default: 80, 443\n"
	"  --allow-tcp NAME:PORT        an opaque TCP stream for transparent sandboxes\n"
	"  --upstream http://HOST:PORT  the upstream proxy of --mode proxy\n"
	"  --allow-private-networks     also allow the private address ranges\n"
	"  --allow-address CIDR         open refused addresses in CIDR (repeatable)\n"
	"  --deny-address CIDR          also refuse every address in CIDR (repeatable)\n"
	"  --resolve NAME=ADDR          answer NAME with ADDR (repeatable)\n"
	"  --resolve-file FILE          the same from a hosts(5) file\n"
	"\n"
	"Service routes (plain HTTP from the sandbox, TLS from the broker):\n"
	"  --service NAME=https://HOST[:PORT][/PREFIX]  a route: http://NAME/ goes there\n"
	"  --service-header NAME=FILE   header lines the broker adds on route NAME\n"
	"  --service-ca NAME=FILE       the CA bundle that verifies route NAME\n"
	"  --service-method NAME=M,...  the only methods on route NAME\n"
	"  --service-path NAME=/PREFIX/  a path prefix route NAME allows (repeatable)\n"
	"  --service-placeholder NAME=VALUE  VALUE stands for route NAME's header value\n"
	"\n"
	"Limits:\n"
	"  --max-wall-time SEC          each connection's life; default: 30\n"
	"  --max-request-bytes SIZE     bytes from the client; default: 1M\n"
	"  --max-response-bytes SIZE    bytes to the client; default: 10M\n"
	"  --max-connections N          connections at once; default: from the fd limit\n"
	"  --max-sandbox-connections N  of them one sandbox's; default: a quarter\n"
	"  --max-sandbox-lookups N      names one sandbox resolves at once; default: 256\n"
	"  --max-peer-connections N     one uid's on --listen-tcp; default: a quarter\n"
	"  --reserved-connections N     kept for the Unix socket; default: a sixteenth\n"
	"\n"
	"Output:\n"
	"  --log-fd FD                  where the log goes; default: stderr\n"
	"  --ready-fd FD                write a newline to FD once listening\n"
	"\n"
	"Refused (HTTPS is tunnelled, so the broker could not enforce them):\n"
	"  --allow-method METHOD        refused: restrict names and ports instead\n"
	"  --allow-request-header NAME  refused: restrict names and ports instead\n"
	"  --max-redirects N            refused: restrict names and ports instead\n";

enum {
	O_LISTEN = 1, O_LISTEN_FD, O_MODE, O_HOST, O_PORT, O_UPSTREAM, O_PRIVATE,
	O_WALL, O_REQ, O_RESP, O_CONNS, O_LOG, O_READY, O_HELP,
	O_METHOD, O_HEADER, O_REDIRECTS, O_DENY, O_SMODE, O_SGROUP, O_RESOLVE, O_RESOLVE_FILE, O_SBCONNS,
	O_TCP, O_ALLOW_TCP, O_SBLOOKUPS, O_PEERCONNS, O_RESERVED, O_ALLOW_ADDR,
	O_SERVICE, O_SERVICE_HEADER, O_SERVICE_CA, O_SERVICE_METHOD, O_SERVICE_PATH, O_SERVICE_PH,
	O_ALLOW_POLICY,
};

static const struct sbx_opt options[] = {
	{ "listen", SBX_ARG, SBX_ONCE, O_LISTEN },
	{ "listen-fd", SBX_ARG, SBX_ONCE, O_LISTEN_FD },
	{ "listen-tcp", SBX_ARG, SBX_ONCE, O_TCP },
	{ "socket-mode", SBX_ARG, SBX_ONCE, O_SMODE },
	{ "socket-group", SBX_ARG, SBX_ONCE, O_SGROUP },
	{ "mode", SBX_ARG, SBX_ONCE, O_MODE },
	{ "allow-host", SBX_ARG, SBX_MANY, O_HOST },
	{ "allow-policy", SBX_ARG, SBX_ONCE, O_ALLOW_POLICY },
	{ "allow-port", SBX_ARG, SBX_MANY, O_PORT },
	{ "allow-tcp", SBX_ARG, SBX_MANY, O_ALLOW_TCP },
	{ "upstream", SBX_ARG, SBX_ONCE, O_UPSTREAM },
	{ "allow-private-networks", SBX_NOARG, SBX_ONCE, O_PRIVATE },
	{ "allow-address", SBX_ARG, SBX_MANY, O_ALLOW_ADDR },
	{ "deny-address", SBX_ARG, SBX_MANY, O_DENY },
	{ "resolve", SBX_ARG, SBX_MANY, O_RESOLVE },
	{ "resolve-file", SBX_ARG, SBX_MANY, O_RESOLVE_FILE },
	{ "service", SBX_ARG, SBX_MANY, O_SERVICE },
	{ "service-header", SBX_ARG, SBX_MANY, O_SERVICE_HEADER },
	{ "service-ca", SBX_ARG, SBX_MANY, O_SERVICE_CA },
	{ "service-method", SBX_ARG, SBX_MANY, O_SERVICE_METHOD },
	{ "service-path", SBX_ARG, SBX_MANY, O_SERVICE_PATH },
	{ "service-placeholder", SBX_ARG, SBX_MANY, O_SERVICE_PH },
	{ "max-wall-time", SBX_ARG, SBX_ONCE, O_WALL },
	{ "max-request-bytes", SBX_ARG, SBX_ONCE, O_REQ },
	{ "max-response-bytes", SBX_ARG, SBX_ONCE, O_RESP },
	{ "max-connections", SBX_ARG, SBX_ONCE, O_CONNS },
	{ "max-sandbox-connections", SBX_ARG, SBX_ONCE, O_SBCONNS },
	{ "max-sandbox-lookups", SBX_ARG, SBX_ONCE, O_SBLOOKUPS },
	{ "max-peer-connections", SBX_ARG, SBX_ONCE, O_PEERCONNS },
	{ "reserved-connections", SBX_ARG, SBX_ONCE, O_RESERVED },
	{ "log-fd", SBX_ARG, SBX_ONCE, O_LOG },
	{ "ready-fd", SBX_ARG, SBX_ONCE, O_READY },
	{ "help", SBX_NOARG, SBX_ONCE, O_HELP },
	/* Offered elsewhere, refused here: see refuse_unenforceable(). */
	{ "allow-method", SBX_ARG, SBX_MANY, O_METHOD },
	{ "allow-request-header", SBX_ARG, SBX_MANY, O_HEADER },
	{ "max-redirects", SBX_ARG, SBX_ONCE, O_REDIRECTS },
	{ 0 },
};

/* The broker sees inside plain HTTP but not inside HTTPS tunnels, where
 * methods, headers and redirects travel encrypted. A rule it can apply to
 * only some of the traffic would look like protection and not be one. */
static noreturn void refuse_unenforceable(const char *opt)
{
	sbx_die_usage("%s: refused: HTTPS is tunnelled without being decrypted, so the broker "
		      "cannot enforce this; restrict hosts and ports instead", opt);
}

static void add_host(struct broker_cfg *cfg, const char *s)
{
	struct sbx_hostpat p;
	const char *why = sbx_hostpat_parse(s, &p);

	if (why)
		sbx_die_usage("--allow-host: invalid host '%s': %s", s, why);
	for (size_t i = 0; i < cfg->nhosts; i++)
		if (cfg->hosts[i].wildcard == p.wildcard && !strcmp(cfg->hosts[i].name, p.name))
			sbx_die_usage("--allow-host: '%s' given twice", s);
	cfg->hosts = sbx_need(realloc(cfg->hosts, (cfg->nhosts + 1) * sizeof *cfg->hosts));
	cfg->hosts[cfg->nhosts++] = p;
}

/* An allowed name, or a route's service (a pin is used for either). */
static int host_listed(const struct broker_cfg *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->nhosts; i++)
		if (sbx_hostpat_match(&cfg->hosts[i], name))
			return 1;
	for (size_t i = 0; i < cfg->nsvc; i++)
		if (!strcmp(cfg->svc[i].host, name))
			return 1;
	return 0;
}

static void add_port(struct broker_cfg *cfg, const char *s)
{
	unsigned port = (unsigned)sbx_opt_u64("--allow-port", s, 1, 65535);

	for (size_t i = 0; i < cfg->nports; i++)
		if (cfg->ports[i] == port)
			sbx_die_usage("--allow-port: %u given twice", port);
	if (cfg->nports == BROKER_MAX_PORTS)
		sbx_die_usage("--allow-port: more than %d ports", BROKER_MAX_PORTS);
	cfg->ports[cfg->nports++] = port;
}

/* One CIDR of --allow-address or --deny-address (opt), new to list. */
static void parse_range(const char *opt, const char *s, const struct sbx_cidr *list, size_t n, struct sbx_cidr *c)
{
	const char *why = sbx_cidr_parse(s, c);

	if (why && !strcmp(why, "control character"))
		sbx_die_usage("%s: invalid range: control character", opt);
	if (why)
		sbx_die_usage("%s: invalid range '%s': %s", opt, s, why);
	for (size_t i = 0; i < n; i++)
		if (sbx_cidr_same(&list[i], c))
			sbx_die_usage("%s: %s given twice", opt, c->text);
}

static void add_deny(struct broker_cfg *cfg, const char *s)
{
	struct sbx_cidr c;

	parse_range("--deny-address", s, cfg->deny, cfg->ndeny, &c);
	snprintf(c.why, sizeof c.why, "denied by --deny-address %s", c.text);
	cfg->deny = sbx_need(realloc(cfg->deny, (cfg->ndeny + 1) * sizeof *cfg->deny));
	cfg->deny[cfg->ndeny++] = c;
}

/* A range the administrator opens: it must open something (a range of
 * global addresses only, or of addresses nothing opens, is a mistake
 * worth saying), and not be denied too. */
static void add_allow(struct broker_cfg *cfg, const char *s)
{
	struct sbx_cidr c;
	char why[160];

	parse_range("--allow-address", s, cfg->allow, cfg->nallow, &c);
	if (sbx_cidr_opens(&c, why, sizeof why) < 0)
		sbx_die_usage("--allow-address: %s opens nothing: %s", c.text, why);
	cfg->allow = sbx_need(realloc(cfg->allow, (cfg->nallow + 1) * sizeof *cfg->allow));
	cfg->allow[cfg->nallow++] = c;
}

/* http://HOST:PORT and nothing else: no credentials (they would end up in
 * argv and logs), no SOCKS, no path. The upstream is trusted by the one
 * who configures it, so it may be a private or loopback address; the
 * addresses it is asked to CONNECT to pass the address rule like any. */
static void parse_upstream(struct broker_cfg *cfg, const char *url)
{
	const char *hp, *colon;
	char host[256], port[8];
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	size_t hl;
	int e;

	if (!*url)
		sbx_die_usage("--upstream: empty URL");
	if (!strncasecmp(url, "socks", 5))
		sbx_die_usage("--upstream: invalid URL '%s': SOCKS proxies are not supported", url);
	if (strncmp(url, "http://", 7))
		sbx_die_usage("--upstream: invalid URL '%s': only http://HOST:PORT is supported", url);
	hp = url + 7;
	if (strchr(hp, '@'))
		sbx_die_usage("--upstream: invalid URL '%s': credentials are not supported", url);
	if (strchr(hp, '/') || strchr(hp, '?') || strchr(hp, '#'))
		sbx_die_usage("--upstream: invalid URL '%s': a path is not allowed", url);
	if (hp[0] == '[') {
		const char *end = strchr(hp, ']');
		if (!end || end[1] != ':')
			sbx_die_usage("--upstream: invalid URL '%s': port missing", url);
		hl = (size_t)(end - hp - 1);
		hp++;
		colon = end + 1;
	} else {
		colon = strrchr(hp, ':');
		if (!colon)
			sbx_die_usage("--upstream: invalid URL '%s': port missing", url);
		hl = (size_t)(colon - hp);
	}
	if (hl == 0 || hl >= sizeof host)
		sbx_die_usage("--upstream: invalid URL '%s': host missing", url);
	memcpy(host, hp, hl);
	host[hl] = '\0';
	for (size_t i = 0; i < hl; i++)
		if ((unsigned char)host[i] <= ' ' || (unsigned char)host[i] >= 0x7f)
			sbx_die_usage("--upstream: invalid URL '%s': invalid host", url);
	snprintf(port, sizeof port, "%u", (unsigned)sbx_opt_u64("--upstream", colon + 1, 1, 65535));
	e = getaddrinfo(host, port, &hints, &res);
	if (e)
		sbx_die(SBX_EXIT_SYS, "unable to resolve upstream %s: %s", host, gai_strerror(e));
	memcpy(&cfg->upstream, res->ai_addr, res->ai_addrlen);
	cfg->upstream_len = res->ai_addrlen;
	freeaddrinfo(res);
}

/* The default cap keeps a whole tunnel's fds (two sockets, two pipes)
 * within the fd limit, raised to its hard maximum first. */
static size_t default_max_conns(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1000;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 6 * 1000000)
		return 1000000;
	return rl.rlim_cur > 64 + 6 ? (size_t)((rl.rlim_cur - 64) / 6) : 1;
}

int main(int argc, char **argv)
{
	struct broker_cfg cfg = {
		.listen_fd = -1, .tcp_fd = -1, .log_fd = 2, .ready_fd = -1,
		.wall_ms = 30000, .max_req = 1 << 20, .max_resp = 10 << 20, .max_sb_lookups = 256,
	};
	struct sbx_optstate st;
	const char *arg, *listen = NULL, *mode = NULL, *upstream = NULL, *tcp_arg = NULL;
	struct broker_tcp tcp;
	int id, listen_fd = -1, log_fd = -1, smode = -1;
	gid_t sgroup = (gid_t)-1;
	const char *sgroup_arg = NULL, *allow_policy = NULL;
	size_t max_conns = 0, max_sb_conns = 0, max_peer_conns = 0, reserved = 0;

	sbx_setprog("sbx-broker");
	/* No core dump and no ptrace by the broker's own user: the broker
	 * holds the routes' header values, and the TLS keys of its
	 * connections. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to make the broker non-dumpable");
	sbx_opt_version(argc, argv);
	sbx_opt_init(&st, 1);
	while ((id = sbx_opt_next(&st, options, argc, argv, &arg))) {
		switch (id) {
		case O_LISTEN:
			sbx_opt_abspath("--listen", arg);
			if (strlen(arg) >= sizeof(((struct sockaddr_un *)0)->sun_path))
				sbx_die_usage("--listen: '%s' is too long for a socket path", arg);
			listen = arg;
			break;
		case O_LISTEN_FD:
			listen_fd = sbx_opt_fd("--listen-fd", arg);
			if (!broker_listening_unix_stream(listen_fd))
				sbx_die_usage("--listen-fd: fd %d is not a listening Unix stream socket", listen_fd);
			break;
		case O_TCP: broker_parse_tcp(&tcp, arg); tcp_arg = arg; break;
		case O_SMODE: smode = broker_parse_mode(arg); break;
		case O_SGROUP: sgroup = broker_parse_group(arg); sgroup_arg = arg; break;
		case O_MODE:
			if (strcmp(arg, "allowlist") && strcmp(arg, "proxy"))
				sbx_die_usage("--mode: '%s' is not allowlist or proxy", arg);
			mode = arg;
			break;
		case O_HOST: add_host(&cfg, arg); break;
		case O_ALLOW_POLICY: allow_policy = sbx_opt_abspath("--allow-policy", arg); break;
		case O_PORT: add_port(&cfg, arg); break;
		case O_ALLOW_TCP: broker_add_allow_tcp(&cfg, arg); break;
		case O_UPSTREAM: upstream = arg; break;
		case O_PRIVATE: cfg.allow_private = 1; break;
		case O_DENY: add_deny(&cfg, arg); break;
		case O_ALLOW_ADDR: add_allow(&cfg, arg); break;
		case O_RESOLVE: broker_add_resolve(&cfg, arg); break;
		case O_RESOLVE_FILE: broker_add_resolve_file(&cfg, arg); break;
		case O_SERVICE: broker_add_service(&cfg, arg); break;
		case O_SERVICE_HEADER: broker_add_service_file(&cfg, 0, arg); break;
		case O_SERVICE_CA: broker_add_service_file(&cfg, 1, arg); break;
		case O_SERVICE_METHOD: broker_add_service_rule(&cfg, 0, arg); break;
		case O_SERVICE_PATH: broker_add_service_rule(&cfg, 1, arg); break;
		case O_SERVICE_PH: broker_add_service_rule(&cfg, 2, arg); break;
		case O_WALL: cfg.wall_ms = sbx_opt_seconds("--max-wall-time", arg, 7 * 86400 * 1000ULL); break;
		case O_REQ: cfg.max_req = sbx_opt_size("--max-request-bytes", arg, 1ULL << 40); break;
		case O_RESP: cfg.max_resp = sbx_opt_size("--max-response-bytes", arg, 1ULL << 40); break;
		case O_CONNS: max_conns = (size_t)sbx_opt_u64("--max-connections", arg, 1, 1000000); break;
		case O_SBCONNS:
			max_sb_conns = (size_t)sbx_opt_u64("--max-sandbox-connections", arg, 1, 1000000);
			break;
		case O_SBLOOKUPS:
			cfg.max_sb_lookups = (size_t)sbx_opt_u64("--max-sandbox-lookups", arg, 1, 100000);
			break;
		case O_PEERCONNS:
			max_peer_conns = (size_t)sbx_opt_u64("--max-peer-connections", arg, 1, 1000000);
			break;
		case O_RESERVED: reserved = (size_t)sbx_opt_u64("--reserved-connections", arg, 1, 1000000); break;
		case O_LOG: log_fd = sbx_opt_fd("--log-fd", arg); break;
		case O_READY: cfg.ready_fd = sbx_opt_fd("--ready-fd", arg); break;
		case O_HELP: sbx_opt_help(usage);
		case O_METHOD: refuse_unenforceable("--allow-method");
		case O_HEADER: refuse_unenforceable("--allow-request-header");
		case O_REDIRECTS: refuse_unenforceable("--max-redirects");
		}
	}
	if (st.ind < argc)
		sbx_die_usage("unexpected operand '%s' (sbx-broker runs no program)", argv[st.ind]);
	if (log_fd >= 0)
		cfg.log_fd = log_fd;
	cfg.proxy = mode && !strcmp(mode, "proxy");
	if (cfg.proxy && !upstream)
		sbx_die_usage("--mode proxy needs --upstream");
	if (!cfg.proxy && upstream)
		sbx_die_usage("--upstream needs --mode proxy");
	/* One list of names, whichever option gave it. */
	if (allow_policy && cfg.nhosts)
		sbx_die_usage("--allow-policy and --allow-host are exclusive (one list of allowed names)");
	cfg.hosts_from = "--allow-host";
	if (allow_policy)
		broker_allow_policy(&cfg, allow_policy);
	if (!cfg.proxy && !cfg.nhosts && !cfg.ntcp && !cfg.nsvc)
		sbx_die_usage(allow_policy ? "%s: its network.allowlist is empty: it allows no host"
				: "--mode allowlist needs at least one %s", cfg.hosts_from);
	for (size_t i = 0; i < cfg.npins && cfg.nhosts; i++)
		if (!host_listed(&cfg, cfg.pins[i].name))
			sbx_die_usage("--resolve: %s is not on the allowlist (--allow-host): its pin would never "
				      "be used", cfg.pins[i].name);
	if (!cfg.nports) {
		cfg.ports[cfg.nports++] = 80;
		cfg.ports[cfg.nports++] = 443;
	}
	if (listen && listen_fd >= 0)
		sbx_die_usage("--listen and --listen-fd are exclusive");
	if (!listen && (smode >= 0 || sgroup_arg))
		sbx_die_usage("%s needs --listen PATH (a socket passed in belongs to whoever made it)",
			      smode >= 0 ? "--socket-mode" : "--socket-group");
	if (getenv("LISTEN_FDS") && (listen || listen_fd >= 0)) {
		const char *pid = getenv("LISTEN_PID");
		uint64_t p;
		if (pid && !sbx_parse_u64(pid, 1, UINT32_MAX, &p) && p == (uint64_t)getpid())
			sbx_die_usage("socket activation (LISTEN_FDS) and --listen/--listen-fd are exclusive");
	}
	for (size_t i = 0; i < cfg.nallow; i++)
		for (size_t j = 0; j < cfg.ndeny; j++)
			if (sbx_cidr_same(&cfg.allow[i], &cfg.deny[j]))
				sbx_die_usage("--allow-address %s is also given to --deny-address, which wins: give it "
					      "to one", cfg.allow[i].text);
	if (upstream)
		parse_upstream(&cfg, upstream);
	broker_services_finish(&cfg);
	if (!listen && listen_fd < 0) {
		listen_fd = broker_activation_fd();
		if (listen_fd < 0 && !tcp_arg)
			sbx_die_usage("missing --listen, --listen-fd or --listen-tcp (or socket activation)");
	}
	cfg.max_conns = default_max_conns();
	if (max_conns)
		cfg.max_conns = max_conns;
	/* A quarter each by default: no sandbox can take every slot of a
	 * broker shared by several. */
	cfg.max_sb_conns = cfg.max_conns / 4 ? cfg.max_conns / 4 : 1;
	if (max_sb_conns > cfg.max_conns)
		sbx_die_usage("--max-sandbox-connections %zu is more than --max-connections (%zu)", max_sb_conns,
			      cfg.max_conns);
	if (max_sb_conns)
		cfg.max_sb_conns = max_sb_conns;
	/* The last slots are the broker's own socket's (handoffs, probes):
	 * a sixteenth by default, at least one when there are two. */
	cfg.reserved_conns = cfg.max_conns / 16 ? cfg.max_conns / 16 : cfg.max_conns > 1;
	if (reserved && reserved >= cfg.max_conns)
		sbx_die_usage("--reserved-connections %zu leaves nothing of --max-connections (%zu) for anything "
			      "else", reserved, cfg.max_conns);
	if (reserved)
		cfg.reserved_conns = reserved;
	cfg.max_peer_conns = cfg.max_conns / 4 ? cfg.max_conns / 4 : 1;
	if (max_peer_conns > cfg.max_conns - cfg.reserved_conns)
		sbx_die_usage("--max-peer-connections %zu is more than --max-connections less the reserved "
			      "ones (%zu)", max_peer_conns, cfg.max_conns - cfg.reserved_conns);
	if (max_peer_conns)
		cfg.max_peer_conns = max_peer_conns;
	if (listen) {
		listen_fd = broker_listen_path(listen, smode, sgroup, &cfg.listen_made);
		cfg.listen_path = listen;
	}
	/* The TCP port alone is the broker's socket; beside a Unix socket it is
	 * a second one. */
	if (tcp_arg && listen_fd < 0) {
		listen_fd = broker_listen_tcp(&tcp, tcp_arg);
		cfg.listen_is_tcp = 1;
	} else if (tcp_arg)
		cfg.tcp_fd = broker_listen_tcp(&tcp, tcp_arg);
	cfg.listen_fd = listen_fd;
	/* Nothing else of the caller's is inherited by the broker's
	 * connections; the fds we keep are marked close-on-exec anyway. */
	{
		int keep[4] = { listen_fd, cfg.tcp_fd, cfg.log_fd, cfg.ready_fd };
		if (sbx_close_fds_except(keep, 4) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to close inherited fds");
	}
	return broker_loop(&cfg);
}

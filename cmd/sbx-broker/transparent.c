/* Transparent mode's policy and DNS (the event loop does the I/O):
 *
 * - The ports a transparent sandbox captures: every --allow-port (80 and
 *   443 by default) and every --allow-tcp port, told to sbx-ns in answer
 *   to its probe (SBX_PROBE_PORTS).
 * - --allow-tcp NAME:PORT: an exact name (never a wildcard) and a port
 *   other than 80 and 443 (which keep their protocol checks) whose
 *   captured connections pass as an opaque byte stream once the name's
 *   addresses are checked like any other.
 * - DNS: a query for a name the broker would connect to (--allow-host, or
 *   an --allow-tcp name) is answered, for A, with the name's synthetic
 *   address in this sandbox; AAAA and any other type get NOERROR with no
 *   record (the name exists; IPv4 is how it is reached); any other name is
 *   NXDOMAIN, a malformed one FORMERR, REFUSED or nothing (lib/net/dns.c).
 *   Nothing is ever forwarded and no real address is ever returned.
 * - Synthetic addresses: one per name per sandbox, kept for the sandbox's
 *   life, handed out from the sandbox's own counter (240.0.0.1 first, in
 *   the order of its queries); a sandbox maps at most SYNTH_MAX names.
 *   Nothing of one sandbox's allocation shows in another's: a counter
 *   shared by the broker would tell each sandbox how many names the
 *   others resolved. Two sandboxes may hold the same address for
 *   different names: an address means a name only in the sandbox's own
 *   table (each sandbox has its own network namespace, and a captured
 *   connection is looked up in its sandbox's table alone). The broker
 *   never dials them: a captured connection's destination only names the
 *   name. */
#include "broker.h"
#include "die.h"
#include "dns.h"
#include "handoff.h"
#include "parse.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SYNTH_MAX 256
#define DNS_TTL 300

struct broker_synth {
	size_t n;                  /* names mapped; the next address is n + 1 */
	struct {
		char name[SBX_HOST_MAX + 1];
		uint32_t addr; /* host order */
	} e[SYNTH_MAX];
};

void broker_add_allow_tcp(struct broker_cfg *cfg, const char *s)
{
	const char *colon = strrchr(s, ':');
	char name[SBX_HOST_MAX + 1];
	const char *why;
	uint64_t port;

	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			sbx_die_usage("--allow-tcp: invalid NAME:PORT: control character");
	if (!*s)
		sbx_die_usage("--allow-tcp: invalid NAME:PORT '': empty");
	if (!colon)
		sbx_die_usage("--allow-tcp: invalid NAME:PORT '%s': no port", s);
	if (s[0] == '*')
		sbx_die_usage("--allow-tcp: invalid NAME:PORT '%s': a wildcard (opaque streams go to "
			      "one exact name)", s);
	why = sbx_host_normalize(s, (size_t)(colon - s), name);
	if (why)
		sbx_die_usage("--allow-tcp: invalid name in '%s': %s", s, why);
	port = sbx_opt_u64("--allow-tcp: port", colon + 1, 1, 65535);
	if (port == 80 || port == 443)
		sbx_die_usage("--allow-tcp: port %u refused in '%s': 80 and 443 keep their HTTP and TLS checks",
			      (unsigned)port, s);
	for (size_t i = 0; i < cfg->ntcp; i++)
		if (cfg->tcp[i].port == port && !strcmp(cfg->tcp[i].name, name))
			sbx_die_usage("--allow-tcp: '%s' given twice", s);
	if (cfg->ntcp == BROKER_MAX_TCP)
		sbx_die_usage("--allow-tcp: more than %d", BROKER_MAX_TCP);
	snprintf(cfg->tcp[cfg->ntcp].name, sizeof cfg->tcp[cfg->ntcp].name, "%s", name);
	cfg->tcp[cfg->ntcp++].port = (unsigned)port;
}

int broker_opaque(const struct broker_cfg *cfg, const char *host, unsigned port)
{
	for (size_t i = 0; i < cfg->ntcp; i++)
		if (cfg->tcp[i].port == port && !strcmp(cfg->tcp[i].name, host))
			return 1;
	return 0;
}

static int tcp_name(const struct broker_cfg *cfg, const char *host)
{
	for (size_t i = 0; i < cfg->ntcp; i++)
		if (!strcmp(cfg->tcp[i].name, host))
			return 1;
	return 0;
}

size_t broker_capture_ports(const struct broker_cfg *cfg, unsigned *out)
{
	size_t n = 0;

	for (size_t i = 0; i < cfg->nports + cfg->ntcp; i++) {
		unsigned p = i < cfg->nports ? cfg->ports[i] : cfg->tcp[i - cfg->nports].port;
		size_t j;
		for (j = 0; j < n && out[j] != p; j++)
			;
		if (j == n)
			out[n++] = p;
	}
	return n;
}

size_t broker_ports_line(const struct broker_cfg *cfg, char *buf, size_t sz)
{
	unsigned ports[SBX_CAPTURE_MAX];
	size_t n = broker_capture_ports(cfg, ports), len;

	len = (size_t)snprintf(buf, sz, "%s", SBX_PORTS);
	for (size_t i = 0; i < n && len < sz; i++)
		len += (size_t)snprintf(buf + len, sz - len, " %u", ports[i]);
	if (len < sz)
		len += (size_t)snprintf(buf + len, sz - len, "\n");
	return len < sz ? len : 0;
}

void broker_synth_free(struct broker_synth *t)
{
	free(t);
}

const char *broker_synth_name(const struct broker_synth *t, uint32_t addr)
{
	for (size_t i = 0; t && i < t->n; i++)
		if (t->e[i].addr == addr)
			return t->e[i].name;
	return NULL;
}

/* The name's address in this sandbox, made at its first query. 1: new,
 * 0: known, -1: none left (why says so). */
static int synth_map(struct broker_synth **tp, const char *name, uint32_t *addr, const char **why)
{
	struct broker_synth *t = *tp;

	for (size_t i = 0; t && i < t->n; i++)
		if (!strcmp(t->e[i].name, name)) {
			*addr = t->e[i].addr;
			return 0;
		}
	if (!t && !(t = *tp = calloc(1, sizeof *t))) {
		*why = "out of memory";
		return -1;
	}
	if (t->n == SYNTH_MAX) {
		*why = "this sandbox has used all its synthetic addresses (256 names)";
		return -1;
	}
	/* SYNTH_MAX is far below the 2^28 - 2 addresses of 240.0.0.0/4. */
	*addr = SBX_SYNTH_NET | (uint32_t)(t->n + 1);
	snprintf(t->e[t->n].name, sizeof t->e[t->n].name, "%s", name);
	t->e[t->n++].addr = *addr;
	return 1;
}

size_t broker_dns(const struct broker_cfg *cfg, struct broker_synth **t, const unsigned char *msg,
		  size_t len, unsigned char *out, struct broker_dns_result *res)
{
	struct sbx_dns_query q;
	int r = sbx_dns_parse(msg, len, &q);
	unsigned char a4[4];
	const char *why;
	uint32_t addr;

	memset(res, 0, sizeof *res);
	res->decision = "refused";
	res->log = 1;
	if (r == SBX_DNS_DROP) {
		snprintf(res->reason, sizeof res->reason, "DNS: not a query (dropped)");
		return 0;
	}
	snprintf(res->name, sizeof res->name, "%s", q.name);
	if (r != SBX_DNS_OK) {
		snprintf(res->reason, sizeof res->reason, "DNS: %s", q.why);
		return sbx_dns_answer(&q, r, NULL, 0, out);
	}
	if (sbx_host_normalize(q.name, strlen(q.name), res->name) ||
	    (!broker_host_allowed(cfg, res->name) && !tcp_name(cfg, res->name) &&
	     !broker_service_find(cfg, res->name))) {
		snprintf(res->name, sizeof res->name, "%s", q.name);
		snprintf(res->reason, sizeof res->reason, "host %s not on the allowlist (%s)", q.name, cfg->hosts_from);
		return sbx_dns_answer(&q, SBX_DNS_NXDOMAIN, NULL, 0, out);
	}
	res->log = 0;
	if (q.qtype != SBX_DNS_TYPE_A) {
		res->decision = "allowed";
		return sbx_dns_answer(&q, SBX_DNS_NOERROR, NULL, DNS_TTL, out);
	}
	switch (synth_map(t, res->name, &addr, &why)) {
	case -1:
		res->log = 1;
		snprintf(res->reason, sizeof res->reason, "DNS: %s", why);
		return sbx_dns_answer(&q, SBX_DNS_REFUSED, NULL, 0, out);
	case 1:
		res->log = 1; /* a new name: said once */
		break;
	}
	res->decision = "allowed";
	a4[0] = (unsigned char)(addr >> 24);
	a4[1] = (unsigned char)(addr >> 16);
	a4[2] = (unsigned char)(addr >> 8);
	a4[3] = (unsigned char)addr;
	inet_ntop(AF_INET, a4, res->addr, sizeof res->addr);
	return sbx_dns_answer(&q, SBX_DNS_NOERROR, a4, DNS_TTL, out);
}

/* Names the administrator answers: --resolve NAME=ADDR and --resolve-file
 * FILE (hosts format: "ADDR NAME..." per line, # comments). A pinned name
 * is never looked up; its addresses are the answer, and they go through
 * exactly the checks a looked-up answer does (resolve.c), so a pin opens
 * no address the address rule refuses (lib/net/netaddr.h): a private one
 * still needs --allow-private-networks or --allow-address, a documentation
 * one --allow-address, and loopback never passes. This is how a private
 * mirror is reached by name without a private /etc/hosts for the broker. */
#include "broker.h"
#include "die.h"
#include "exitcodes.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NULL, or why ADDR is not an address. */
static const char *parse_addr(const char *s, struct sockaddr_storage *ss)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof *ss);
	if (!*s)
		return "empty address";
	if (inet_pton(AF_INET, s, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		return NULL;
	}
	if (inet_pton(AF_INET6, s, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		return NULL;
	}
	return "not an IPv4 or IPv6 address";
}

static int same_ip(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return 0;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
}

/* One NAME with one ADDR; where says which option or file line, for
 * messages. */
static void add_pin(struct broker_cfg *cfg, const char *where, const char *name, const char *addr)
{
	struct broker_pin p;
	struct sbx_hostpat hp;
	const char *why;
	size_t n = 0;

	why = sbx_hostpat_parse(name, &hp);
	if (!why && hp.wildcard)
		why = "a wildcard cannot be pinned";
	if (why)
		sbx_die_usage("%s: invalid name '%s': %s", where, name, why);
	why = parse_addr(addr, &p.addr);
	if (why)
		sbx_die_usage("%s: invalid address '%s' for %s: %s", where, addr, name, why);
	memcpy(p.name, hp.name, sizeof p.name);
	for (size_t i = 0; i < cfg->npins; i++) {
		if (strcmp(cfg->pins[i].name, p.name))
			continue;
		if (same_ip(&cfg->pins[i].addr, &p.addr))
			sbx_die_usage("%s: %s=%s given twice", where, p.name, addr);
		n++;
	}
	if (n == BROKER_MAX_ADDRS)
		sbx_die_usage("%s: more than %d addresses for %s", where, BROKER_MAX_ADDRS, p.name);
	cfg->pins = sbx_need(realloc(cfg->pins, (cfg->npins + 1) * sizeof *cfg->pins));
	cfg->pins[cfg->npins++] = p;
}

void broker_add_resolve(struct broker_cfg *cfg, const char *arg)
{
	const char *eq = strchr(arg, '=');
	char name[SBX_HOST_MAX + 2];

	if (!*arg)
		sbx_die_usage("--resolve: empty (NAME=ADDR)");
	if (!eq)
		sbx_die_usage("--resolve: '%s' is not NAME=ADDR", arg);
	if ((size_t)(eq - arg) >= sizeof name)
		sbx_die_usage("--resolve: invalid name in '%s': name longer than 253 bytes", arg);
	memcpy(name, arg, (size_t)(eq - arg));
	name[eq - arg] = '\0';
	add_pin(cfg, "--resolve", name, eq + 1);
}

void broker_add_resolve_file(struct broker_cfg *cfg, const char *path)
{
	char line[1024], where[PATH_MAX + 64];
	FILE *f;
	unsigned ln = 0;

	if (!*path)
		sbx_die_usage("--resolve-file: invalid path '': empty");
	f = fopen(path, "re");
	if (!f)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read %s (--resolve-file)", path);
	while (fgets(line, sizeof line, f)) {
		char *p = line, *addr, *name, *save = NULL;
		size_t len = strlen(line);
		ln++;
		snprintf(where, sizeof where, "--resolve-file: %s line %u", path, ln);
		if (len == sizeof line - 1 && line[len - 1] != '\n')
			sbx_die_usage("%s: longer than %zu bytes", where, sizeof line - 2);
		for (char *q = line; *q; q++)
			if ((unsigned char)*q < 0x20 && *q != '\t' && *q != '\n')
				sbx_die_usage("%s: control character", where);
		p[strcspn(p, "#\n")] = '\0';
		addr = strtok_r(p, " \t", &save);
		if (!addr)
			continue;
		name = strtok_r(NULL, " \t", &save);
		if (!name)
			sbx_die_usage("%s: an address without a name", where);
		for (; name; name = strtok_r(NULL, " \t", &save))
			add_pin(cfg, where, name, addr);
	}
	if (ferror(f))
		sbx_die_errno(SBX_EXIT_SYS, "unable to read %s (--resolve-file)", path);
	fclose(f);
}

size_t broker_pinned(const struct broker_cfg *cfg, const char *host, struct sockaddr_storage *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < cfg->npins && n < max; i++)
		if (!strcmp(cfg->pins[i].name, host))
			out[n++] = cfg->pins[i].addr;
	return n;
}

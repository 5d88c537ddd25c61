/* Loading the seccomp filter: the BPF program compiled from gen/rules.c at
 * build time (see gen/rules.c for what it denies and why), installed with
 * one system call, last before exec. no_new_privs is already set. */
#include "ns.h"

#include "die.h"
#include "exitcodes.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "filter_bpf.h"

#define PROG(f) (struct sock_fprog){ .len = (unsigned short)(sizeof f / sizeof f[0]), \
				  .filter = (struct sock_filter *)f }

/* The filter of r's network mode, and its name (for --dry-run's plan). */
static const char *choose(const struct ns_plan *p, const struct ns_exec *x, struct sock_fprog *prog)
{
	/* The Landlock tier runs only --net none or broker (tier.c refuses
	 * the others), with SysV IPC and message queues denied too. */
	if (x->tier_tmp) {
		if (p->net == NET_BROKER) {
			*prog = PROG(ns_filter_tier_broker);
			return "tier-broker";
		}
		*prog = PROG(ns_filter_tier_offline);
		return "tier-offline";
	}
	switch (p->net) {
	case NET_LOOPBACK: *prog = PROG(ns_filter_open); return "open";
	case NET_BROKER:
		if (p->transparent) {
			*prog = PROG(ns_filter_transparent);
			return "transparent";
		}
		*prog = PROG(ns_filter_broker);
		return "broker";
	case NET_HOST: *prog = PROG(ns_filter_host); return "host";
	default: *prog = PROG(ns_filter_offline); return "offline";
	}
}

const char *ns_filter_name(const struct ns_plan *p, const struct ns_exec *x)
{
	struct sock_fprog prog;

	return choose(p, x, &prog);
}

void ns_load_filter(const struct ns_run *r)
{
	struct sock_fprog prog;

	choose(r->p, &r->x, &prog);
	ns_install_filter(r, &prog); /* notify.c: with the denial supervisor or without */
}

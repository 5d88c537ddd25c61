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

void ns_load_filter(const struct ns_run *r)
{
	struct sock_fprog prog;

	/* The Landlock tier runs only --net none or broker (tier.c refuses
	 * the others); anything else would get the offline filter. */
	if (r->tier_tmp) {
		prog = r->net == NET_BROKER ? PROG(ns_filter_tier_broker) : PROG(ns_filter_tier_offline);
		ns_install_filter(r, &prog);
		return;
	}
	switch (r->net) {
	case NET_LOOPBACK: prog = PROG(ns_filter_open); break;
	case NET_BROKER:
		prog = r->transparent ? PROG(ns_filter_transparent) : PROG(ns_filter_broker);
		break;
	case NET_HOST: prog = PROG(ns_filter_host); break;
	default: prog = PROG(ns_filter_offline); break;
	}
	ns_install_filter(r, &prog); /* notify.c: with the denial supervisor or without */
}

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

void ns_load_filter(const struct ns_run *r)
{
	struct sock_fprog prog = {
		.len = (unsigned short)(sizeof ns_filter_offline / sizeof ns_filter_offline[0]),
		.filter = (struct sock_filter *)ns_filter_offline,
	};

	(void)r; /* one mode (none) in this version */
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to load the seccomp filter");
}

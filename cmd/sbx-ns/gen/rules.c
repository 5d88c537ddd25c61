/* The rules of the seccomp filter, written with libseccomp and compiled to
 * BPF at build time (gen/filtergen.c): compiling them at every start costs
 * more than half a millisecond, a tenth of the whole startup. x86_64 only.
 *
 * Default: allow. Denied with EPERM (a failing call the command can handle):
 * the mount family, cross-process access (ptrace, process_vm_*, kcmp), the
 * keyrings, bpf, perf_event_open, userfaultfd, io_uring, open_by_handle_at,
 * kexec, modules, swap, reboot, setns, quotactl, unshare and clone with a
 * namespace flag, the ioctls TIOCSTI, TIOCLINUX, FS_IOC_FSSETXATTR and
 * FS_IOC_SETFLAGS (command compared on the low 32 bits, as the kernel reads
 * it, so the high-bit aliases are denied too), personality other than
 * PER_LINUX (the query included), and per network mode (rules.h): in
 * offline mode socket() of every family; in broker mode every socket() but
 * a TCP one over IPv4 or IPv6, listen(), and sends with MSG_FASTOPEN (a
 * connect that Landlock's connect rule does not see) (transparent broker
 * mode: UDP sockets too, for the sandbox's DNS); in host mode listen().
 * socketpair() stays allowed in broker mode: its sockets reach nothing.
 * The Landlock tier's filters (tier set) also deny SysV IPC (msg*, shm*,
 * sem*) and POSIX message queues (mq_*): without an IPC namespace they are
 * the host's, where a queue made inside would outlive the run and one of
 * the same user outside could be read or removed. There is no ipc()
 * multiplexer to deny: it exists only on 32-bit ABIs, which are killed.
 * rename, renameat and renameat2 are not denied: they return a marker that
 * the command's process turns into a notification to the supervisor, which
 * reports a rename deny-write refuses (notifyren.c), or into allow.
 * clone3 fails with ENOSYS so that libc falls back to clone, whose flags
 * the filter can read. Any other architecture (int 0x80, x32 numbers) kills
 * the process: its numbers mean different calls, so no return is safe. */
#include "rules.h"

#include "die.h"
#include "exitcodes.h"

#include <errno.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdint.h>

#define NS_FLAGS_CLONE 0x7e020000ULL /* NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET */
#define NS_FLAG_NEWTIME 0x80ULL      /* unshare only: in clone it is part of the exit signal */
/* Newer than the libseccomp we build with: by number (x86_64). */
#define NR_OPEN_TREE_ATTR 467
#define NR_FILE_SETATTR   469

static void rule(scmp_filter_ctx ctx, uint32_t action, int nr, const char *name,
		 unsigned n, const struct scmp_arg_cmp *args)
{
	int rc = seccomp_rule_add_exact_array(ctx, action, nr, n, args);

	if (rc < 0) {
		errno = -rc;
		sbx_die_errno(SBX_EXIT_SYS, "unable to add the seccomp rule for %s", name);
	}
}

#define DENY(sys) rule(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(sys), #sys, 0, NULL)

static void deny_flags(scmp_filter_ctx ctx, int nr, const char *name, uint64_t flags)
{
	for (int bit = 0; bit < 64; bit++) {
		uint64_t f = 1ULL << bit;
		struct scmp_arg_cmp a = { .arg = 0, .op = SCMP_CMP_MASKED_EQ, .datum_a = f, .datum_b = f };
		if (flags & f)
			rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, name, 1, &a);
	}
}

static void deny_ioctl(scmp_filter_ctx ctx, uint64_t cmd)
{
	struct scmp_arg_cmp a = { .arg = 1, .op = SCMP_CMP_MASKED_EQ, .datum_a = 0xffffffffULL, .datum_b = cmd };
	rule(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), "ioctl", 1, &a);
}

/* Broker mode: deny socket() unless family is AF_INET or AF_INET6, type
 * without SOCK_NONBLOCK|SOCK_CLOEXEC is SOCK_STREAM, and protocol is 0 or
 * IPPROTO_TCP (not SCTP or MPTCP, which are stream sockets too); with
 * udp (transparent mode, for the sandbox's DNS) also SOCK_DGRAM with 0 or
 * IPPROTO_UDP (not ICMP or UDP-Lite). Written as denials because the
 * default action is allow; every comparison is on all 64 bits, so a value
 * the kernel would truncate to an allowed one is refused, never the
 * reverse. */
static void tcp_only(scmp_filter_ctx ctx, int udp)
{
	int nr = SCMP_SYS(socket);
	struct scmp_arg_cmp a;

	a = (struct scmp_arg_cmp){ .arg = 0, .op = SCMP_CMP_LT, .datum_a = 2 };
	rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, "socket", 1, &a);
	for (uint64_t f = 3; f < 10; f++) {
		a = (struct scmp_arg_cmp){ .arg = 0, .op = SCMP_CMP_EQ, .datum_a = f };
		rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, "socket", 1, &a);
	}
	a = (struct scmp_arg_cmp){ .arg = 0, .op = SCMP_CMP_GE, .datum_a = 11 };
	rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, "socket", 1, &a);
	/* type: SOCK_STREAM (1), or with udp SOCK_DGRAM (2): bits 0 and 1
	 * not both set nor both clear; no other bit but the two flags */
	if (udp) {
		a = (struct scmp_arg_cmp){ .arg = 1, .op = SCMP_CMP_MASKED_EQ, .datum_a = 3, .datum_b = 0 };
		rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, "socket", 1, &a);
		a = (struct scmp_arg_cmp){ .arg = 1, .op = SCMP_CMP_MASKED_EQ, .datum_a = 3, .datum_b = 3 };
		rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, "socket", 1, &a);
	} else {
		a = (struct scmp_arg_cmp){ .arg = 1, .op = SCMP_CMP_MASKED_EQ, .datum_a = 1, .datum_b = 0 };
		rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, "socket", 1, &a);
	}
	for (int bit = udp ? 2 : 1; bit < 64; bit++) {
		uint64_t m = 1ULL << bit;
		if (m == 0x800 || m == 0x80000) /* SOCK_NONBLOCK, SOCK_CLOEXEC */
			continue;
		a = (struct scmp_arg_cmp){ .arg = 1, .op = SCMP_CMP_MASKED_EQ, .datum_a = m, .datum_b = m };
		rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, "socket", 1, &a);
	}
	/* protocol: 0, 6 (TCP), with udp 17 (UDP) */
	for (uint64_t p = 1; p < (udp ? 18 : 7); p++) {
		if (p == 6 || p == 17)
			continue;
		a = (struct scmp_arg_cmp){ .arg = 2, .op = SCMP_CMP_EQ, .datum_a = p };
		rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, "socket", 1, &a);
	}
	a = (struct scmp_arg_cmp){ .arg = 2, .op = SCMP_CMP_GE, .datum_a = udp ? 18 : 7 };
	rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, "socket", 1, &a);
	/* TCP Fast Open: sendto/sendmsg/sendmmsg with MSG_FASTOPEN connect an
	 * unconnected socket without connect(2), past Landlock's connect rule
	 * (measured on 6.18: the Landlock tier reached a port it denies). */
	a = (struct scmp_arg_cmp){ .arg = 3, .op = SCMP_CMP_MASKED_EQ, .datum_a = 0x20000000, .datum_b = 0x20000000 };
	rule(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(sendto), "sendto", 1, &a);
	rule(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(sendmmsg), "sendmmsg", 1, &a);
	a.arg = 2;
	rule(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(sendmsg), "sendmsg", 1, &a);
}

/* SysV IPC and POSIX message queues live in the IPC namespace: in the
 * Landlock tier that is the host's. */
static void deny_host_ipc(scmp_filter_ctx ctx)
{
	DENY(msgget); DENY(msgsnd); DENY(msgrcv); DENY(msgctl);
	DENY(shmget); DENY(shmat); DENY(shmdt); DENY(shmctl);
	DENY(semget); DENY(semop); DENY(semtimedop); DENY(semctl);
	DENY(mq_open); DENY(mq_unlink); DENY(mq_timedsend); DENY(mq_timedreceive);
	DENY(mq_notify); DENY(mq_getsetattr);
}

scmp_filter_ctx ns_filter_rules(enum ns_filter mode, int tier)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	/* Any value but PER_LINUX, compared on all 64 bits: what the kernel
	 * truncates to 0 may be refused, never the reverse. libseccomp takes
	 * one comparison per argument, so the query (0xffffffff) is refused
	 * too. */
	struct scmp_arg_cmp pers = { .arg = 0, .op = SCMP_CMP_NE, .datum_a = 0, .datum_b = 0 };
	int rc;

	if (!ctx)
		sbx_die(SBX_EXIT_SYS, "unable to create the seccomp filter");
	if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS)) < 0 ||
	    (rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2)) < 0) {
		errno = -rc;
		sbx_die_errno(SBX_EXIT_SYS, "unable to configure the seccomp filter");
	}
	DENY(mount); DENY(umount2); DENY(pivot_root); DENY(move_mount); DENY(open_tree);
	DENY(fsopen); DENY(fsconfig); DENY(fsmount); DENY(fspick); DENY(mount_setattr);
	rule(ctx, SCMP_ACT_ERRNO(EPERM), NR_OPEN_TREE_ATTR, "open_tree_attr", 0, NULL);
	DENY(ptrace); DENY(process_vm_readv); DENY(process_vm_writev); DENY(kcmp);
	DENY(keyctl); DENY(add_key); DENY(request_key);
	DENY(bpf); DENY(perf_event_open); DENY(userfaultfd);
	DENY(io_uring_setup); DENY(io_uring_enter); DENY(io_uring_register);
	DENY(open_by_handle_at);
	DENY(kexec_load); DENY(kexec_file_load);
	DENY(init_module); DENY(finit_module); DENY(delete_module);
	DENY(swapon); DENY(swapoff); DENY(reboot);
	DENY(setns); DENY(quotactl); DENY(quotactl_fd);
	rule(ctx, SCMP_ACT_ERRNO(EPERM), NR_FILE_SETATTR, "file_setattr", 0, NULL);
	deny_flags(ctx, SCMP_SYS(clone), "clone", NS_FLAGS_CLONE);
	deny_flags(ctx, SCMP_SYS(unshare), "unshare", NS_FLAGS_CLONE | NS_FLAG_NEWTIME);
	rule(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), "clone3", 0, NULL);
	deny_ioctl(ctx, 0x5412);      /* TIOCSTI */
	deny_ioctl(ctx, 0x541c);      /* TIOCLINUX */
	deny_ioctl(ctx, 0x401c5820);  /* FS_IOC_FSSETXATTR (project id, PROJINHERIT) */
	deny_ioctl(ctx, 0x40086602);  /* FS_IOC_SETFLAGS (immutable, append-only) */
	deny_ioctl(ctx, 0x40046602);  /* FS_IOC32_SETFLAGS */
	rule(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), "personality", 1, &pers);
	rule(ctx, SCMP_ACT_TRACE(NS_WATCH_DATA), SCMP_SYS(rename), "rename", 0, NULL);
	rule(ctx, SCMP_ACT_TRACE(NS_WATCH_DATA), SCMP_SYS(renameat), "renameat", 0, NULL);
	rule(ctx, SCMP_ACT_TRACE(NS_WATCH_DATA), SCMP_SYS(renameat2), "renameat2", 0, NULL);
	if (mode == NS_FILTER_OFFLINE)
		DENY(socket);
	if (mode == NS_FILTER_BROKER || mode == NS_FILTER_TRANSPARENT)
		tcp_only(ctx, mode == NS_FILTER_TRANSPARENT);
	if (mode == NS_FILTER_BROKER || mode == NS_FILTER_TRANSPARENT || mode == NS_FILTER_HOST)
		DENY(listen);
	if (tier)
		deny_host_ipc(ctx);
	return ctx;
}

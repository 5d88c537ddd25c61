/* Denial reports. The command's filter is the one compiled at build time
 * with every EPERM return turned into SECCOMP_RET_USER_NOTIF, loaded with
 * SECCOMP_FILTER_FLAG_NEW_LISTENER; the command's process hands the
 * listener to the outer sbx-ns over a socketpair (SCM_RIGHTS) and closes
 * its own copy before exec, so nothing inside the sandbox holds it. The
 * outer process, the supervisor, lives outside the sandbox's user, pid and
 * mount namespaces: the command can neither signal, trace nor name it.
 *
 * The supervisor answers every notification with EPERM, exactly what the
 * plain filter returns, and reports on the status fd, bounded: the first
 * denial of a syscall at once (count 1), then at most one line per syscall
 * per second while more arrive, and the totals not yet reported at the
 * end, before the exit line; the count is always the running total. The
 * filter decides what is denied (a fixed set of under 64 syscalls), and
 * past 64 distinct numbers the rest share one line, "other": the number
 * of lines is bounded by the run's length, never by the calls made. A
 * denied socket() or socketpair() is told apart by its address family
 * ("family":"AF_UNIX": id and getent asking the name service daemon;
 * "AF_NETLINK", "AF_INET6"...), each family its own line, within the 64.
 *
 * If the supervisor is gone (killed), the kernel fails every notifying
 * call with ENOSYS: a denied call never succeeds. (The sandbox dies with
 * the outer process anyway, by its parent-death signal.) clone3's ENOSYS
 * is a redirect to clone, not a denial, and is not reported. */
#include "ns.h"
#include "clock.h"
#include "gen/rules.h"

#include "die.h"
#include "exitcodes.h"
#include "fdpass.h"
#include "json.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NOTIFY_DISTINCT 64
#define NOTIFY_EVERY_MS 1000

struct ns_notify_ent {
	int nr;             /* -1: "other" */
	int family;         /* socket() and socketpair(): the first argument; else -1 */
	uint64_t count, reported, last_ms;
};

/* The address families by name, as <sys/socket.h> numbers them. */
static const char *const family_names[] = {
	[AF_UNSPEC] = "AF_UNSPEC", [AF_UNIX] = "AF_UNIX", [AF_INET] = "AF_INET", [AF_AX25] = "AF_AX25",
	[AF_IPX] = "AF_IPX", [AF_APPLETALK] = "AF_APPLETALK", [AF_NETROM] = "AF_NETROM",
	[AF_BRIDGE] = "AF_BRIDGE", [AF_ATMPVC] = "AF_ATMPVC", [AF_X25] = "AF_X25",
	[AF_INET6] = "AF_INET6", [AF_ROSE] = "AF_ROSE", [AF_DECnet] = "AF_DECnet",
	[AF_NETBEUI] = "AF_NETBEUI", [AF_SECURITY] = "AF_SECURITY", [AF_KEY] = "AF_KEY",
	[AF_NETLINK] = "AF_NETLINK", [AF_PACKET] = "AF_PACKET", [AF_ASH] = "AF_ASH",
	[AF_ECONET] = "AF_ECONET", [AF_ATMSVC] = "AF_ATMSVC", [AF_RDS] = "AF_RDS", [AF_SNA] = "AF_SNA",
	[AF_IRDA] = "AF_IRDA", [AF_PPPOX] = "AF_PPPOX", [AF_WANPIPE] = "AF_WANPIPE", [AF_LLC] = "AF_LLC",
	[AF_IB] = "AF_IB", [AF_MPLS] = "AF_MPLS", [AF_CAN] = "AF_CAN", [AF_TIPC] = "AF_TIPC",
	[AF_BLUETOOTH] = "AF_BLUETOOTH", [AF_IUCV] = "AF_IUCV", [AF_RXRPC] = "AF_RXRPC",
	[AF_ISDN] = "AF_ISDN", [AF_PHONET] = "AF_PHONET", [AF_IEEE802154] = "AF_IEEE802154",
	[AF_CAIF] = "AF_CAIF", [AF_ALG] = "AF_ALG", [AF_NFC] = "AF_NFC", [AF_VSOCK] = "AF_VSOCK",
	[AF_KCM] = "AF_KCM", [AF_QIPCRTR] = "AF_QIPCRTR", [AF_SMC] = "AF_SMC", [AF_XDP] = "AF_XDP",
#ifdef AF_MCTP
	[AF_MCTP] = "AF_MCTP",
#endif
};

/* A one-shot run has one listener; a living sandbox one per command
 * running (each command's filter is its own), and keeps the socket. */
#define NOTIFY_LISTENERS (NS_SERVE_LIVE + 1)

struct ns_notify {
	int sock;           /* the outer's end: one-shot, until the listener arrives, then -1 */
	int listener[NOTIFY_LISTENERS];
	size_t nl;
	size_t n;
	struct ns_notify_ent ent[NOTIFY_DISTINCT + 1];
	struct ns_rename_log *ren; /* deny-write's refused renames (notifyren.c) */
};

/* While the command runs, a status reader that stops reading must not
 * block the outer process (it forwards signals and enforces --timeout):
 * a bounded report line that would block waits, counted, for the next
 * one or the end (final, blocking like the exit line). 1: write it now
 * (it counts as reported); 0: it waits, or there is no status fd. */
int ns_status_due(const struct ns_run *r, int final, uint64_t count, uint64_t *reported, uint64_t *last_ms,
		  uint64_t now)
{
	struct pollfd pf = { .fd = r->a->status_fd, .events = POLLOUT };

	if (!final && r->a->status_fd >= 0 && (poll(&pf, 1, 0) != 1 || !(pf.revents & POLLOUT)))
		return 0;
	*reported = count;
	*last_ms = now;
	return r->a->status_fd >= 0;
}

void ns_notify_prepare(struct ns_run *r)
{
	r->x.notify_sock[0] = r->x.notify_sock[1] = -1;
	if (r->a->quiet_denials)
		return;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, r->x.notify_sock) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create the supervisor's socket pair");
}

/* In the outer process after the clone: keep its own end only. */
void ns_notify_outer(struct ns_run *r)
{
	if (r->x.notify_sock[0] < 0)
		return;
	close(r->x.notify_sock[1]);
	r->x.notify_sock[1] = -1;
	r->x.notify = sbx_need(calloc(1, sizeof *r->x.notify));
	r->x.notify->sock = r->x.notify_sock[0];
}

/* In the sandbox after the clone: keep the sending end only. */
void ns_notify_inside(struct ns_run *r)
{
	if (r->x.notify_sock[0] < 0)
		return;
	close(r->x.notify_sock[0]);
	r->x.notify_sock[0] = -1;
}

/* The command's process: install the filter (prog is the build-time
 * program) and, unless --quiet-denials, hand the listener to the outer.
 * The watched calls' marker becomes a notification when there is a
 * listener and the run protects something (a sandbox with deny-write
 * binds, not the Landlock tier, which has none), else allow. */
void ns_install_filter(const struct ns_run *r, const struct sock_fprog *prog)
{
	struct sock_filter *ins;
	struct sock_fprog p = *prog;
	int listen = r->x.notify_sock[1] >= 0, lfd;
	uint32_t watch = listen && r->p->ndops && !r->x.tier_tmp ? SECCOMP_RET_USER_NOTIF : SECCOMP_RET_ALLOW;

	/* --observe: execve and execveat come to the supervisor first
	 * (obsexec.c); without it the program is the build's, unchanged. */
	struct sock_filter pre[8];
	size_t npre = listen ? ns_exec_filter(r->a, pre, 8) : 0;

	ins = sbx_need(malloc((npre + p.len) * sizeof *ins));
	memcpy(ins, pre, npre * sizeof *ins);
	memcpy(ins + npre, prog->filter, p.len * sizeof *ins);
	p.len = (unsigned short)(p.len + npre);
	for (unsigned i = (unsigned)npre; i < p.len; i++) {
		if (ins[i].code != (BPF_RET | BPF_K))
			continue;
		if (ins[i].k == (SECCOMP_RET_TRACE | NS_WATCH_DATA))
			ins[i].k = watch;
		else if (listen && ins[i].k == (SECCOMP_RET_ERRNO | EPERM))
			ins[i].k = SECCOMP_RET_USER_NOTIF;
	}
	p.filter = ins;
	if (!listen) {
		if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to load the seccomp filter");
		free(ins);
		return;
	}
	lfd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &p);
	if (lfd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to load the seccomp filter with a listener "
			      "(--quiet-denials loads it without)");
	free(ins);
	/* A denied call made before the outer took the listener waits for
	 * it; if the outer is gone the call fails (ENOSYS) and we stop. */
	if (sbx_send_fds(r->x.notify_sock[1], "L", 1, &lfd, 1) != 1)
		_exit(SBX_EXIT_LOST);
	close(lfd);
	close(r->x.notify_sock[1]);
}

/* A denial's call and family as the status line names them. */
static void names(const struct ns_notify_ent *e, char *sys, size_t ssz, char *fam, size_t fsz)
{
	char *name = e->nr >= 0 ? seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, e->nr) : NULL;

	if (name)
		snprintf(sys, ssz, "%s", name);
	else if (e->nr >= 0)
		snprintf(sys, ssz, "%d", e->nr);
	else
		snprintf(sys, ssz, "other");
	free(name);
	if (e->family >= 0 && (size_t)e->family < sizeof family_names / sizeof *family_names &&
	    family_names[e->family])
		snprintf(fam, fsz, "%s", family_names[e->family]);
	else if (e->family >= 0)
		snprintf(fam, fsz, "%d", e->family);
	else
		fam[0] = '\0';
}

static void report(const struct ns_run *r, struct ns_notify_ent *e, uint64_t now, int final)
{
	struct sbx_json j;
	char sys[40], fam[24];

	if (!ns_status_due(r, final, e->count, &e->reported, &e->last_ms, now))
		return;
	names(e, sys, sizeof sys, fam, sizeof fam);
	sbx_json_begin(&j, NS_PROG, "denied");
	if (e->nr >= 0 && sys[0] >= '0' && sys[0] <= '9')
		sbx_json_int(&j, "syscall", e->nr);
	else
		sbx_json_str(&j, "syscall", sys);
	if (e->family >= 0 && fam[0] >= '0' && fam[0] <= '9')
		sbx_json_int(&j, "family", e->family);
	else if (fam[0])
		sbx_json_str(&j, "family", fam);
	sbx_json_uint(&j, "count", e->count);
	sbx_json_write(&j, r->a->status_fd);
}

static void denied(const struct ns_run *r, struct ns_notify *n, int nr, int family)
{
	struct ns_notify_ent *e = NULL;
	uint64_t now = sbx_now_ms();

	for (size_t i = 0; i < n->n; i++)
		if ((n->ent[i].nr == nr && n->ent[i].family == family) ||
		    (n->ent[i].nr == -1 && i == NOTIFY_DISTINCT)) {
			e = &n->ent[i];
			break;
		}
	if (!e) {
		e = &n->ent[n->n];
		e->nr = n->n == NOTIFY_DISTINCT ? -1 : nr;
		e->family = n->n == NOTIFY_DISTINCT ? -1 : family;
		n->n++;
	}
	e->count++;
	if (!e->reported || now - e->last_ms >= NOTIFY_EVERY_MS)
		report(r, e, now, 0);
}

/* The fds the outer polls for the supervisor: the socket while a
 * listener may still arrive, and every listener; at most max. */
size_t ns_notify_fds(const struct ns_run *r, struct pollfd *pf, size_t max)
{
	const struct ns_notify *n = r->x.notify;
	size_t k = 0;

	if (!n)
		return 0;
	if (n->sock >= 0 && k < max)
		pf[k++] = (struct pollfd){ .fd = n->sock, .events = POLLIN };
	for (size_t i = 0; i < n->nl && k < max; i++)
		pf[k++] = (struct pollfd){ .fd = n->listener[i], .events = POLLIN };
	return k;
}

static void take_listener(struct ns_run *r)
{
	struct ns_notify *n = r->x.notify;
	int fds[2], cut;
	char b;
	size_t nfds;
	ssize_t got = sbx_recv_fds(n->sock, &b, 1, MSG_DONTWAIT, fds, 2, &nfds, &cut);

	if (got < 0 && errno == EAGAIN)
		return;
	if (got == 1 && nfds == 1 && !cut && n->nl < NOTIFY_LISTENERS) {
		n->listener[n->nl++] = fds[0];
		/* A living sandbox's next command sends its own. */
		if (r->a->serve)
			return;
	} else {
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		if (r->a->serve && got > 0)
			return;
	}
	/* Whatever came (the listener, EOF, garbage), the socket is done. */
	close(n->sock);
	n->sock = -1;
}

/* Called when fd (one of ns_notify_fds) is readable or hung up. */
void ns_notify_handle(struct ns_run *r, int fd, short revents)
{
	struct ns_notify *n = r->x.notify;
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	size_t i;

	if (!n)
		return;
	if (fd == n->sock) {
		take_listener(r);
		return;
	}
	for (i = 0; i < n->nl && n->listener[i] != fd; i++)
		;
	if (i == n->nl)
		return;
	if (!(revents & POLLIN)) {
		/* Every user of this filter is gone; the totals go out at the end. */
		close(fd);
		n->listener[i] = n->listener[--n->nl];
		return;
	}
	memset(&req, 0, sizeof req);
	if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
		return; /* ENOENT: the caller was killed meanwhile */
	if (ns_exec_watched(r, req.data.nr)) {
		ns_exec_seen(r, fd, &req);
		return;
	}
	if (ns_rename_watched(req.data.nr)) {
		ns_rename_seen(r, &n->ren, fd, &req);
		return;
	}
	memset(&resp, 0, sizeof resp);
	resp.id = req.id;
	resp.error = -EPERM;
	/* ENOENT here too when the caller is gone: nothing to answer. */
	ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	/* The family is a plain number (no pointer the command could change
	 * under us); any value is only named, never trusted. */
	denied(r, n, req.data.nr, req.data.nr == SYS_socket || req.data.nr == SYS_socketpair
		   ? (int)(req.data.args[0] & 0x7fffffff) : -1);
}

/* At the end, before the exit line: the totals not yet reported. */
void ns_notify_end(struct ns_run *r)
{
	struct ns_notify *n = r->x.notify;

	if (!n)
		return;
	for (size_t i = 0; i < n->n; i++) {
		char sys[40], fam[24];
		if (n->ent[i].count > n->ent[i].reported)
			report(r, &n->ent[i], sbx_now_ms(), 1);
		names(&n->ent[i], sys, sizeof sys, fam, sizeof fam);
		ns_observe_denied(r, sys, fam[0] ? fam : NULL, n->ent[i].count);
	}
	ns_rename_end(r, n->ren);
	for (size_t i = 0; i < n->nl; i++)
		close(n->listener[i]);
	if (n->sock >= 0)
		close(n->sock);
	free(n);
	r->x.notify = NULL;
}

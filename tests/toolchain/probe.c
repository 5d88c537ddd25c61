/*
 * probe: proves the static musl toolchain end to end. It is a test program,
 * not a tool: linked statically against the prefix that deps/build.sh makes,
 * it uses each piece the tools rely on and checks that the kernel saw it.
 *
 *   1. rtnetlink: an RTM_GETLINK dump, printing every interface name (the
 *      socket comes first: step 3 forbids new sockets)
 *   2. libcap: CAP_NET_RAW leaves the bounding, effective and permitted sets,
 *      after which a raw socket is refused
 *   3. libseccomp: a filter that fails socket() with EPERM, after which
 *      socket() is refused
 *
 * Run it as root (or in a user namespace) and in a fresh network namespace
 * for a predictable interface list: `unshare -n probe` prints "lo" only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>

#include <seccomp.h>
#include <sys/capability.h>

static void fatal(const char *step, int err)
{
	fprintf(stderr, "probe: fatal: unable to %s: %s\n", step, strerror(err));
	exit(111);
}

static void failed(const char *what)
{
	fprintf(stderr, "probe: fatal: %s\n", what);
	exit(111);
}

/* Appends " NAME" for each link in one batch of a dump; returns 1 at the
 * end of the dump. */
static int links_batch(const char *buf, size_t len, char *names, size_t size)
{
	const struct nlmsghdr *nh;

	for (nh = (const struct nlmsghdr *)buf; NLMSG_OK(nh, len); nh = NLMSG_NEXT(nh, len)) {
		if (nh->nlmsg_type == NLMSG_DONE)
			return 1;
		if (nh->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(nh);
			fatal("dump links over rtnetlink", -e->error);
		}
		if (nh->nlmsg_type != RTM_NEWLINK)
			continue;
		const struct ifinfomsg *ifi = NLMSG_DATA(nh);
		int alen = (int)IFLA_PAYLOAD(nh);
		for (const struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
			if (a->rta_type != IFLA_IFNAME)
				continue;
			size_t used = strlen(names);
			snprintf(names + used, size - used, " %.*s",
				 (int)RTA_PAYLOAD(a), (const char *)RTA_DATA(a));
		}
	}
	return 0;
}

static void probe_rtnetlink(void)
{
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifi;
	} req = {
		.nh = {
			.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg)),
			.nlmsg_type = RTM_GETLINK,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
			.nlmsg_seq = 1,
		},
		.ifi = { .ifi_family = AF_UNSPEC },
	};
	char buf[32768] __attribute__((aligned(NLMSG_ALIGNTO)));
	char names[4096] = "";
	int fd;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		fatal("open an rtnetlink socket", errno);
	if (send(fd, &req, req.nh.nlmsg_len, 0) < 0)
		fatal("send RTM_GETLINK", errno);
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof buf, 0);
		if (n < 0)
			fatal("receive the link dump", errno);
		if (n == 0)
			failed("rtnetlink closed before the end of the dump");
		if (links_batch(buf, (size_t)n, names, sizeof names))
			break;
	}
	close(fd);
	if (!strstr(names, " lo"))
		failed("rtnetlink listed no lo");
	printf("probe: rtnetlink ok:%s\n", names);
}

static void probe_libcap(void)
{
	cap_value_t raw[] = { CAP_NET_RAW };
	cap_flag_value_t eff = CAP_SET, perm = CAP_SET;
	cap_t caps;
	char *name;
	int fd;

	if (cap_drop_bound(CAP_NET_RAW) < 0)
		fatal("drop cap_net_raw from the bounding set", errno);
	caps = cap_get_proc();
	if (!caps)
		fatal("read the process capabilities", errno);
	if (cap_set_flag(caps, CAP_EFFECTIVE, 1, raw, CAP_CLEAR) < 0 ||
	    cap_set_flag(caps, CAP_PERMITTED, 1, raw, CAP_CLEAR) < 0)
		fatal("clear cap_net_raw", errno);
	if (cap_set_proc(caps) < 0)
		fatal("set the process capabilities", errno);
	cap_free(caps);

	/* Read back what the kernel now holds, not what we asked for. */
	if (prctl(PR_CAPBSET_READ, CAP_NET_RAW, 0, 0, 0) != 0)
		failed("cap_net_raw is still in the bounding set");
	caps = cap_get_proc();
	if (!caps)
		fatal("read the process capabilities", errno);
	if (cap_get_flag(caps, CAP_NET_RAW, CAP_EFFECTIVE, &eff) < 0 ||
	    cap_get_flag(caps, CAP_NET_RAW, CAP_PERMITTED, &perm) < 0)
		fatal("read cap_net_raw", errno);
	cap_free(caps);
	if (eff != CAP_CLEAR || perm != CAP_CLEAR)
		failed("cap_net_raw is still effective or permitted");

	fd = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
	if (fd >= 0)
		failed("a raw socket opened without cap_net_raw");
	if (errno != EPERM)
		fatal("see a raw socket refused with EPERM", errno);

	name = cap_to_name(CAP_NET_RAW);
	if (!name)
		fatal("name cap_net_raw", errno);
	printf("probe: libcap ok: dropped %s, raw socket refused\n", name);
	cap_free(name);
}

static void probe_seccomp(void)
{
	scmp_filter_ctx ctx;
	int rc, fd;

	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		failed("seccomp_init returned no filter");
	rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 0);
	if (rc < 0)
		fatal("add the socket rule", -rc);
	rc = seccomp_load(ctx);
	if (rc < 0)
		fatal("load the seccomp filter", -rc);
	seccomp_release(ctx);

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0)
		failed("socket() succeeded under the filter");
	if (errno != EPERM)
		fatal("see socket() refused with EPERM", errno);
	printf("probe: seccomp ok: socket() refused with EPERM\n");
}

int main(void)
{
	/* One line per step, in order, even when stdout is a pipe. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	probe_rtnetlink();
	probe_libcap();
	probe_seccomp();
	return 0;
}

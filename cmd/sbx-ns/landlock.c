/* Landlock, the second layer under the mount namespace: writes only below
 * the writable roots, reads only below the readable ones, /proc and /dev;
 * with newer ABIs also no TCP bind/connect, no abstract Unix sockets and no
 * signals outside the sandbox. The ABI was probed by the outer process;
 * each right is asked for only when the running kernel knows it. */
#include "ns.h"

#include "die.h"
#include "exitcodes.h"

#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LL_EXECUTE    (1ULL << 0)
#define LL_WRITE_FILE (1ULL << 1)
#define LL_READ_FILE  (1ULL << 2)
#define LL_READ_DIR   (1ULL << 3)
#define LL_REFER      (1ULL << 13)
#define LL_TRUNCATE   (1ULL << 14)
#define LL_IOCTL_DEV  (1ULL << 15)
#define LL_FILE_ONLY  (LL_EXECUTE | LL_WRITE_FILE | LL_READ_FILE | LL_TRUNCATE | LL_IOCTL_DEV)
#define LL_NET_BIND_TCP    (1ULL << 0)
#define LL_NET_CONNECT_TCP (1ULL << 1)
#define LL_SCOPE_ABSTRACT_UNIX (1ULL << 0)
#define LL_SCOPE_SIGNAL        (1ULL << 1)
#define LL_RULE_PATH_BENEATH 1
#define LL_RULE_NET_PORT 2

struct ll_port {
	uint64_t allowed, port;
};

struct ll_attr {
	uint64_t fs, net, scoped;
};

struct ll_path {
	uint64_t allowed;
	int32_t parent_fd;
} __attribute__((packed));

static void allow(int rfd, uint64_t handled, const char *path, uint64_t access)
{
	struct ll_path rule;
	struct stat st;
	int fd = open(path, O_PATH | O_CLOEXEC);

	if (fd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open %s for Landlock", path);
	if (fstat(fd, &st) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to stat %s for Landlock", path);
	if (!S_ISDIR(st.st_mode))
		access &= LL_FILE_ONLY;
	rule.allowed = access & handled;
	rule.parent_fd = fd;
	if (rule.allowed && syscall(SYS_landlock_add_rule, rfd, LL_RULE_PATH_BENEATH, &rule, 0) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to add the Landlock rule for %s", path);
	close(fd);
}

int ns_landlock(const struct ns_plan *p, const struct ns_exec *x)
{
	int abi = p->landlock_abi, rfd;
	struct ll_attr a;
	size_t size;
	uint64_t all, read;

	if (abi <= 0)
		return 0;
	memset(&a, 0, sizeof a);
	all = (1ULL << 13) - 1;
	if (abi >= 2)
		all |= LL_REFER;
	if (abi >= 3)
		all |= LL_TRUNCATE;
	if (abi >= 5)
		all |= LL_IOCTL_DEV;
	a.fs = all;
	size = sizeof a.fs;
	/* TCP, by mode: none and broker handle bind and connect (broker then
	 * allows connect to the bridge's port alone: a second wall behind the
	 * namespace); host handles bind; loopback nothing (its namespace is
	 * its own). */
	if (abi >= 4) {
		a.net = p->net == NET_LOOPBACK ? 0 :
			p->net == NET_HOST ? LL_NET_BIND_TCP : LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
		size = 2 * sizeof(uint64_t);
	}
	if (abi >= 6) {
		a.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
		size = sizeof a;
	}
	rfd = (int)syscall(SYS_landlock_create_ruleset, &a, size, 0);
	if (rfd < 0)
		sbx_die_errno(SBX_EXIT_NOISOLATION, "unable to create a Landlock ruleset (ABI %d)", abi);
	read = LL_EXECUTE | LL_READ_FILE | LL_READ_DIR;
	/* Listing any directory: in the full sandbox its root holds only
	 * what it was given. The host's root in the tier holds everything,
	 * so there listing stays below the roots (a path walk needs no
	 * Landlock right). */
	if (!x->tier_tmp)
		allow(rfd, all, "/", LL_READ_DIR);
	if (x->tier_tmp) {
		/* The host's own /proc, /dev and /tmp (the Landlock tier): /proc
		 * read-only, the harmless devices, a private TMPDIR. */
		static const char *const dev[] = { "/dev/null", "/dev/zero", "/dev/full", "/dev/random",
						   "/dev/urandom", NULL };
		allow(rfd, all, "/proc", LL_READ_FILE | LL_READ_DIR);
		for (const char *const *d = dev; *d; d++)
			allow(rfd, all, *d, LL_READ_FILE | LL_WRITE_FILE | LL_TRUNCATE);
		allow(rfd, all, x->tier_tmp, all);
	} else {
		allow(rfd, all, "/proc", LL_READ_FILE | LL_READ_DIR | LL_WRITE_FILE);
		allow(rfd, all, "/dev", LL_READ_FILE | LL_READ_DIR | LL_WRITE_FILE | LL_TRUNCATE | LL_IOCTL_DEV);
		allow(rfd, all, "/dev/shm", all);
		allow(rfd, all, "/tmp", all);
	}
	for (size_t i = 0; i < p->nops; i++) {
		const struct mount_op *op = &p->ops[i];
		if (op->kind == MNT_SYMLINK || op->kind == MNT_SCRATCH)
			continue;
		allow(rfd, all, op->dest, op->ro ? read : all);
	}
	if (x->resolv)
		allow(rfd, all, x->resolv, LL_READ_FILE);
	/* Broker mode: the proxy port; transparent mode also DNS over TCP
	 * and the captured ports (their listeners are the broker's). */
	for (size_t i = 0; abi >= 4 && p->net == NET_BROKER &&
	     i < 1 + (p->transparent ? 1 + p->ncap : 0); i++) {
		unsigned port = i == 0 ? p->port : i == 1 ? SBX_DNS_PORT : p->cap_ports[i - 2];
		struct ll_port pr = { .allowed = LL_NET_CONNECT_TCP, .port = port };
		if (syscall(SYS_landlock_add_rule, rfd, LL_RULE_NET_PORT, &pr, 0) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to add the Landlock rule for port %u", port);
	}
	/* Transparent mode: an ephemeral port may be bound before a connect
	 * (dig and other resolvers do); listen() stays denied by seccomp. */
	if (abi >= 4 && p->net == NET_BROKER && p->transparent) {
		struct ll_port pr = { .allowed = LL_NET_BIND_TCP, .port = 0 };
		if (syscall(SYS_landlock_add_rule, rfd, LL_RULE_NET_PORT, &pr, 0) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to add the Landlock rule for ephemeral ports");
	}
	if (syscall(SYS_landlock_restrict_self, rfd, 0) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to apply the Landlock ruleset");
	close(rfd);
	return abi;
}

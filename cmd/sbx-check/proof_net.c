/* `sbx-check proof`, the broker proof's test network: two network
 * namespaces of its own, with no default route, joined by a veth pair. "h"
 * holds sbx-broker (with its own /etc/hosts in a mount namespace of its
 * own), "o" the test origin on 198.18.99.2:80. sbx-ns runs on the host; the
 * sandbox reaches only the broker's Unix socket. No packet can leave these
 * two namespaces. Unprivileged, one user namespace of the caller's own
 * holds the origin and the broker instead (userns_main). */
#include "proof.h"
#include "die.h"
#include "exitcodes.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

const char *pr_find_ip(void)
{
	static const char *const dirs[] = { "/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip" };

	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
		if (pr_tool_exists(dirs[i]))
			return dirs[i];
	return NULL;
}

/* busybox's ip lacks the netns and veth commands the test network needs,
 * and answers them with its usage text: ask `ip -V` who it is. */
int pr_is_iproute2(struct chain *c, const char *ip)
{
	char *argv[] = { (char *)ip, (char *)"-V", NULL };
	struct run res;

	pr_run(c, argv, &res);
	return res.code == 0 && strstr(res.out, "iproute2") != NULL;
}

/* Runs `ip ARGS...`; 0 when it worked, otherwise its output in why. */
static int ipcmd(struct chain *c, const struct testnet *t, char *why, size_t n, ...)
{
	struct argv_b a = { .n = 0 };
	struct run res;
	va_list ap;
	const char *arg;

	pr_add(&a, t->ip);
	va_start(ap, n);
	while ((arg = va_arg(ap, const char *)))
		pr_add(&a, arg);
	va_end(ap);
	pr_run(c, a.v, &res);
	if (res.code == 0)
		return 0;
	snprintf(why, n, "ip %s %s %s (exit %d): %s", a.v[1], a.v[2], a.v[3] ? a.v[3] : "",
		 res.code, res.out);
	return -1;
}

static int join_netns(const char *name)
{
	char p[64];
	int fd, rc;

	snprintf(p, sizeof p, "/run/netns/%s", name);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	rc = setns(fd, CLONE_NEWNET);
	close(fd);
	return rc;
}

/* The origin: answers every request with one line and reports each request
 * as one byte on count (so the proof can tell whether a denied request
 * reached it). */
static void origin_main(const char *ns, const char *addr, int ready, int count)
{
	struct sockaddr_in a;
	static const char body[] = "hello from the sbx-check origin\n";
	char resp[256], buf[2048];
	int l, one = 1;

	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons(80);
	inet_pton(AF_INET, addr, &a.sin_addr);
	if ((ns && join_netns(ns) < 0) || (l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 16) < 0) {
		dprintf(ready, "unable to listen on %s:80: %s\n", addr, strerror(errno));
		_exit(1);
	}
	if (write(ready, "ok\n", 3) != 3)
		_exit(1);
	close(ready);
	snprintf(resp, sizeof resp,
		 "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
		 sizeof body - 1, body);
	for (;;) {
		size_t n = 0;
		int t = accept4(l, NULL, NULL, SOCK_CLOEXEC);

		if (t < 0)
			continue;
		while (n < sizeof buf - 1) {
			ssize_t k = read(t, buf + n, sizeof buf - 1 - n);
			if (k <= 0)
				break;
			n += (size_t)k;
			buf[n] = '\0';
			if (strstr(buf, "\r\n\r\n"))
				break;
		}
		if (write(count, "r", 1) != 1 || write(t, resp, strlen(resp)) < 0) {
			/* The proof sees the missing byte or the missing answer. */
		}
		close(t);
	}
}

/* The broker, in "h" with the test names in its own /etc/hosts. */
static void broker_main(const struct testnet *t, const char *broker, int ready)
{
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (join_netns(t->nh) < 0 || unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount(t->hosts, "/etc/hosts", NULL, MS_BIND, NULL) < 0) {
		dprintf(ready, "unable to set up the broker's namespaces: %s\n", strerror(errno));
		_exit(1);
	}
	if (nul < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(nul, 2) < 0 ||
	    dup2(ready, 3) < 0)
		_exit(1);
	execl(broker, broker, "--listen", t->sock, "--allow-host", ALLOWED_NAME,
	      "--allow-private-networks", "--ready-fd", "3", (char *)NULL);
	dprintf(3, "unable to exec %s: %s\n", broker, strerror(errno));
	_exit(1);
}

static int write_proc(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);

	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

/* The unprivileged denial proof's world: one process makes a user, network
 * and mount namespace of its own (lo up, nothing else, so nothing can leave
 * it), the test names mapped to 127.0.0.1 in its own /etc/hosts, starts the
 * origin on 127.0.0.1:80 there and becomes sbx-broker. The broker refuses
 * loopback for any name, so only the denial of a name not on the list can be
 * shown here, and that refusal comes before any name is resolved. */
static void userns_main(const struct testnet *t, const char *broker, int ready, int count)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();
	struct ifreq ifr;
	int p[2], s, nul;
	char buf[256];
	ssize_t k;
	pid_t parent = getpid(), pid;

	if (unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS) < 0) {
		dprintf(ready, "unable to create user, network and mount namespaces: %s\n",
			strerror(errno));
		_exit(1);
	}
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if (write_proc("/proc/self/setgroups", "deny") < 0 || write_proc("/proc/self/uid_map", map) < 0) {
		dprintf(ready, "unable to write the uid map: %s\n", strerror(errno));
		_exit(1);
	}
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	if (write_proc("/proc/self/gid_map", map) < 0) {
		dprintf(ready, "unable to write the gid map: %s\n", strerror(errno));
		_exit(1);
	}
	memset(&ifr, 0, sizeof ifr);
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0 ||
	    (ifr.ifr_flags |= IFF_UP, ioctl(s, SIOCSIFFLAGS, &ifr) < 0)) {
		dprintf(ready, "unable to bring lo up: %s\n", strerror(errno));
		_exit(1);
	}
	close(s);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount(t->hosts, "/etc/hosts", NULL, MS_BIND, NULL) < 0) {
		dprintf(ready, "unable to bind the test names over /etc/hosts: %s\n", strerror(errno));
		_exit(1);
	}
	if (pipe2(p, O_CLOEXEC) < 0 || (pid = fork()) < 0) {
		dprintf(ready, "unable to start the origin: %s\n", strerror(errno));
		_exit(1);
	}
	if (pid == 0) {
		/* The origin dies with the broker. */
		close(p[0]);
		close(ready);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(1);
		origin_main(NULL, "127.0.0.1", p[1], count);
	}
	close(p[1]);
	close(count);
	k = read(p[0], buf, sizeof buf - 1);
	close(p[0]);
	if (k != 3 || memcmp(buf, "ok\n", 3)) {
		dprintf(ready, "%.*s\n", k > 0 ? (int)strcspn(buf, "\n") : 0, k > 0 ? buf : "");
		_exit(1);
	}
	nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nul < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(nul, 2) < 0 ||
	    dup2(ready, 3) < 0)
		_exit(1);
	execl(broker, broker, "--listen", t->sock, "--allow-host", ALLOWED_NAME, "--ready-fd", "3",
	      (char *)NULL);
	dprintf(3, "unable to exec %s: %s\n", broker, strerror(errno));
	_exit(1);
}

/* Forks fn's process; waits up to 10 s for its first line on a pipe: "ok"
 * or why not (in why). */
pid_t pr_start_helper(struct chain *c, struct testnet *t, const char *broker, int userns,
		      char *why, size_t n)
{
	int p[2], cnt[2] = { -1, -1 };
	char buf[256];
	ssize_t k;
	pid_t pid;
	struct pollfd pf;

	if (pipe2(p, O_CLOEXEC) < 0 ||
	    ((!broker || userns) && pipe2(cnt, O_CLOEXEC | O_NONBLOCK) < 0))
		sbx_die_errno(SBX_EXIT_SYS, "unable to create a pipe");
	pid = pr_fork();
	if (pid == 0) {
		close(p[0]);
		close(c->sigfd);
		if (userns) {
			close(cnt[0]);
			userns_main(t, broker, p[1], cnt[1]);
		}
		if (broker)
			broker_main(t, broker, p[1]);
		close(cnt[0]);
		origin_main(t->no, ORIGIN_ADDR, p[1], cnt[1]);
	}
	close(p[1]);
	if (!broker || userns) {
		close(cnt[1]);
		t->count_fd = cnt[0];
	}
	pf.fd = p[0];
	pf.events = POLLIN;
	k = poll(&pf, 1, 10000) == 1 ? read(p[0], buf, sizeof buf - 1) : -1;
	close(p[0]);
	if (k <= 0) {
		snprintf(why, n, "no sign of readiness within 10 s");
	} else {
		buf[k] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		/* sbx-broker's ready line is its own; the origin says "ok". */
		if (broker ? strncmp(buf, "unable", 6) != 0 : !strcmp(buf, "ok"))
			return pid;
		snprintf(why, n, "%s", buf);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

int pr_origin_requests(struct testnet *t)
{
	char buf[64];
	ssize_t k;

	while ((k = read(t->count_fd, buf, sizeof buf)) > 0)
		t->requests += (int)k;
	return t->requests;
}

/* `ip netns add NAME`. A failed one can leave its mount point behind (ip makes
 * the file first; an LSM that refuses the namespace after that leaves it): the
 * file is removed again, with ip's own `netns del`. */
static int netns_add(struct chain *c, struct testnet *t, const char *name, char *why, size_t n)
{
	char p[PATH_MAX], ignored[64];

	if (!ipcmd(c, t, why, n, "netns", "add", name, NULL))
		return 0;
	snprintf(p, sizeof p, "/run/netns/%s", name);
	if (access(p, F_OK) == 0 && ipcmd(c, t, ignored, sizeof ignored, "netns", "del", name, NULL))
		sbx_warn("unable to remove %s, left by a failed ip netns add", p);
	return -1;
}

int pr_testnet_up(struct chain *c, struct testnet *t, const struct scratch *s,
		  const char *broker, char *why, size_t n)
{
	long pid = (long)getpid();

	snprintf(t->nh, sizeof t->nh, "sbx-check-%ld-h", pid);
	snprintf(t->no, sizeof t->no, "sbx-check-%ld-o", pid);
	snprintf(t->vh, sizeof t->vh, "sbxck%ldh", pid % 10000000);
	snprintf(t->vo, sizeof t->vo, "sbxck%ldo", pid % 10000000);
	pr_join(t->sock, sizeof t->sock, s->base, "broker.sock");
	pr_join(t->hosts, sizeof t->hosts, s->base, "hosts");
	pr_put_file(t->hosts, ORIGIN_ADDR " " ALLOWED_NAME "\n" ORIGIN_ADDR " " DENIED_NAME "\n", 0644);
	if (netns_add(c, t, t->nh, why, n))
		return -1;
	t->made = 1;
	if (netns_add(c, t, t->no, why, n))
		return -1;
	t->made = 2;
	if (ipcmd(c, t, why, n, "link", "add", t->vh, "netns", t->nh, "type", "veth", "peer",
		  "name", t->vo, "netns", t->no, NULL) ||
	    ipcmd(c, t, why, n, "-n", t->nh, "addr", "add", "198.18.99.1/24", "dev", t->vh, NULL) ||
	    ipcmd(c, t, why, n, "-n", t->no, "addr", "add", ORIGIN_ADDR "/24", "dev", t->vo, NULL) ||
	    ipcmd(c, t, why, n, "-n", t->nh, "link", "set", t->vh, "up", NULL) ||
	    ipcmd(c, t, why, n, "-n", t->no, "link", "set", t->vo, "up", NULL) ||
	    ipcmd(c, t, why, n, "-n", t->nh, "link", "set", "lo", "up", NULL) ||
	    ipcmd(c, t, why, n, "-n", t->no, "link", "set", "lo", "up", NULL))
		return -1;
	if ((t->origin = pr_start_helper(c, t, NULL, 0, why, n)) < 0)
		return -1;
	if ((t->broker = pr_start_helper(c, t, broker, 0, why, n)) < 0)
		return -1;
	/* sbx-ns hands the sandbox's listeners over as the caller. */
	if (chmod(t->sock, 0666) < 0) {
		snprintf(why, n, "unable to chmod the broker's socket: %s", strerror(errno));
		return -1;
	}
	return 0;
}

void pr_testnet_down(struct chain *c, struct testnet *t)
{
	char why[64];
	int stop = c->stop;

	if (t->broker > 0) {
		kill(t->broker, SIGKILL);
		waitpid(t->broker, NULL, 0);
	}
	if (t->origin > 0) {
		kill(t->origin, SIGKILL);
		waitpid(t->origin, NULL, 0);
	}
	if (t->count_fd >= 0)
		close(t->count_fd);
	/* Cleanup runs even after an interruption. */
	c->stop = 0;
	if (t->made >= 2 && ipcmd(c, t, why, sizeof why, "netns", "del", t->no, NULL))
		sbx_warn("unable to remove network namespace %s", t->no);
	if (t->made >= 1 && ipcmd(c, t, why, sizeof why, "netns", "del", t->nh, NULL))
		sbx_warn("unable to remove network namespace %s", t->nh);
	c->stop = stop;
}

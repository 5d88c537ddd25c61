/* `sbx-check proof`: run the real chain on a scratch workspace and show,
 * attempt by attempt, that the sandbox holds. The commands inside are this
 * binary in its probe mode (copied into the workspace), so the proof needs
 * no shell in the sandbox. Each attempt is judged on two things: what the
 * probe says happened inside, and what the host sees afterwards. */
#include "check.h"
#include "die.h"
#include "exitcodes.h"
#include "fd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <stdarg.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUN_TIMEOUT_MS 60000
/* sbx-ns never runs a command as root: a root caller's proof runs as
 * nobody, and the workspace belongs to nobody so that its writes can work. */
#define PROOF_UID "65534"
#define PROOF_ID 65534
#define MAXARGS 32

struct run {
	int code;          /* exit code, 128+N for a signal, -1 timed out */
	char out[1024];    /* stdout and stderr, newlines folded */
};

struct scratch {
	char base[64];     /* /var/tmp/sbx-check.XXXXXX */
	char ws[PATH_MAX];
	char probe[PATH_MAX];
	char secret[PATH_MAX];
	char outside[PATH_MAX];
};

struct chain {
	int sigfd;         /* SIGINT, SIGTERM, SIGHUP: stop, clean up, then die of it */
	int stop;          /* the signal received, 0 while running */
	sigset_t oldmask;
	char ns[PATH_MAX];
	char cgroup[PATH_MAX];
	char quota[PATH_MAX];
	int have_ns, have_cgroup, have_quota, have_broker;
};

/* Runs argv with stdin /dev/null and stdout+stderr captured, in its own
 * process group so a timeout or an interruption can kill whatever it left
 * behind; with status, that file (created anew) is its fd 3. After an
 * interruption nothing more is run. */
static void run_st(struct chain *c, char *const argv[], const char *status, struct run *res)
{
	int p[2], st, n = 0;
	pid_t pid;
	struct timespec t0, t;

	memset(res, 0, sizeof *res);
	if (c->stop) {
		res->code = -1;
		return;
	}
	if (pipe2(p, O_CLOEXEC) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create a pipe");
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to fork");
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);
		static const char *const proxies[] = { "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
			"http_proxy", "https_proxy", "all_proxy" };
		sigprocmask(SIG_SETMASK, &c->oldmask, NULL);
		setpgid(0, 0);
		/* The fetch probe follows HTTP_PROXY: under a chain that does not
		 * set it (an unconfined stand-in) it must find none, not a proxy of
		 * the caller's that could reach the internet. */
		for (size_t i = 0; i < sizeof proxies / sizeof proxies[0]; i++)
			unsetenv(proxies[i]);
		if (nul < 0 || dup2(nul, 0) < 0 || dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0)
			_exit(SBX_EXIT_SYS);
		if (status) {
			int fd = open(status, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
			if (fd < 0 || (fd != 3 && (dup2(fd, 3) < 0 || close(fd) < 0)))
				_exit(SBX_EXIT_SYS);
		}
		execv(argv[0], argv);
		dprintf(2, "unable to exec %s: %s", argv[0], strerror(errno));
		_exit(errno == ENOENT ? SBX_EXIT_NOTFOUND : SBX_EXIT_EXEC);
	}
	close(p[1]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pf[2] = { { .fd = p[0], .events = POLLIN },
					{ .fd = c->sigfd, .events = POLLIN } };
		struct signalfd_siginfo si;
		char buf[512];
		long left;
		ssize_t k;

		clock_gettime(CLOCK_MONOTONIC, &t);
		left = RUN_TIMEOUT_MS - ((t.tv_sec - t0.tv_sec) * 1000 +
					 (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			res->code = -1;
			break;
		}
		if (poll(pf, 2, (int)left) <= 0)
			continue;
		if ((pf[1].revents & POLLIN) && read(c->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
			c->stop = (int)si.ssi_signo;
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			res->code = -1;
			break;
		}
		if (!(pf[0].revents & (POLLIN | POLLHUP)))
			continue;
		k = read(p[0], buf, sizeof buf);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		for (ssize_t i = 0; i < k && n + 4 < (int)sizeof res->out; i++)
			res->out[n++] = buf[i] == '\n' ? ' ' : buf[i];
	}
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	while (n && res->out[n - 1] == ' ')
		n--;
	res->out[n] = '\0';
	if (res->code != -1)
		res->code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void run(struct chain *c, char *const argv[], struct run *res)
{
	run_st(c, argv, NULL, res);
}

/* dir/name, or die: a path that does not fit is never silently cut. */
static void join(char *out, size_t n, const char *dir, const char *name)
{
	if (strlen(dir) + 1 + strlen(name) + 1 > n)
		sbx_die(SBX_EXIT_SYS, "unable to build a path under %s: too long", dir);
	out[0] = '\0';
	chk_appendf(out, n, "%s/%s", dir, name);
}

static void put_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		sbx_die_errno(SBX_EXIT_SYS, "unable to create %s", path);
	close(fd);
}

static void put_dir(const char *path)
{
	if (mkdir(path, 0755) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create %s", path);
}

/* A copy of this very binary, read through /proc/self/exe. */
static void copy_self(const char *dst)
{
	int in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), out;
	struct stat st;
	off_t off = 0;

	if (in < 0 || fstat(in, &st) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open /proc/self/exe");
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	if (out < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create %s", dst);
	while (off < st.st_size)
		if (sendfile(out, in, &off, (size_t)(st.st_size - off)) <= 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to copy sbx-check to %s", dst);
	close(in);
	close(out);
}

/* Only the sandbox may stand between the command and the files it must not
 * touch: the secret is world-readable, the outside directory world-writable
 * and .env and the hooks writable by the command's uid. A denial then proves
 * the sandbox, not file permissions. */
static void make_scratch(struct scratch *s)
{
	static const char *const owned[] = { "", "/readme", "/.env", "/.git", "/.git/hooks",
					     "/.git/config", "/sbx-probe" };
	char p[PATH_MAX];

	snprintf(s->base, sizeof s->base, "/var/tmp/sbx-check.XXXXXX");
	if (!mkdtemp(s->base))
		sbx_die_errno(SBX_EXIT_SYS, "unable to create a scratch directory in /var/tmp");
	if (chmod(s->base, 0755) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to chmod %s", s->base);
	join(s->ws, sizeof s->ws, s->base, "ws");
	join(s->secret, sizeof s->secret, s->base, "secret");
	join(s->outside, sizeof s->outside, s->base, "outside");
	join(s->probe, sizeof s->probe, s->base, "ws/sbx-probe");
	put_dir(s->ws);
	put_dir(s->outside);
	if (chmod(s->outside, 0777) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to chmod %s", s->outside);
	put_file(s->secret, "a sibling secret the sandbox must not read\n", 0644);
	join(p, sizeof p, s->ws, "readme");
	put_file(p, "a workspace file the sandbox may read\n", 0644);
	join(p, sizeof p, s->ws, ".env");
	put_file(p, "TOKEN=must-stay-unchanged\n", 0644);
	join(p, sizeof p, s->ws, ".git");
	put_dir(p);
	join(p, sizeof p, s->ws, ".git/hooks");
	put_dir(p);
	join(p, sizeof p, s->ws, ".git/config");
	put_file(p, "[core]\n", 0644);
	copy_self(s->probe);
	for (size_t i = 0; getuid() == 0 && i < sizeof owned / sizeof owned[0]; i++) {
		join(p, sizeof p, s->ws, owned[i][0] ? owned[i] + 1 : ".");
		if (lchown(p, PROOF_ID, PROOF_ID) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to chown %s", p);
	}
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if ((flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT)
		sbx_warn_errno("unable to remove %s", path);
	return 0;
}

static void remove_tree(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int tool_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* argv for: [prefix...] NS [nsopts...] --workspace WS -- PROBE --probe ACTION ARGS */
struct argv_b {
	char *v[MAXARGS];
	int n;
};

static void add(struct argv_b *a, const char *s)
{
	if (a->n + 1 >= MAXARGS)
		sbx_die(SBX_EXIT_SYS, "unable to build a command line: too many arguments");
	a->v[a->n++] = (char *)s;
	a->v[a->n] = NULL;
}

static void add_ns(struct argv_b *a, const struct chain *c, const char *net, const char *ws,
		   const char *probe)
{
	add(a, c->ns);
	if (getuid() == 0) {
		add(a, "--uid");
		add(a, PROOF_UID);
		add(a, "--gid");
		add(a, PROOF_UID);
	}
	if (net) {
		add(a, "--net");
		add(a, net);
	}
	add(a, "--workspace");
	add(a, ws);
	add(a, "--");
	add(a, probe);
	add(a, "--probe");
}

static int file_has(const char *path, const char *text)
{
	char buf[256];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < 0)
		return 0;
	buf[n] = '\0';
	return strcmp(buf, text) == 0;
}

static int exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* Judges one attempt. want_ok: the action should succeed. host_ok: what the
 * host sees afterwards agrees with the expectation. */
static void judge(struct chk_report *r, enum chk_class cls, const char *name, int want_ok,
		  const struct run *res, int host_ok, const char *host_says)
{
	struct chk_item *it;

	if (res->code == SBX_EXIT_NOISOLATION) {
		it = chk_add(r, CLS_ISOLATION, name, CHK_UNSUPPORTED,
			     "the chain refused: isolation unavailable (exit 106): %s", res->out);
		chk_fix(it, "see `sbx-check host`");
		return;
	}
	if (res->code == -1) {
		chk_add(r, cls, name, CHK_FAIL, "no answer within %d s: %s", RUN_TIMEOUT_MS / 1000,
			res->out);
		return;
	}
	if (res->code != 0 && res->code != 1) {
		chk_add(r, cls, name, CHK_FAIL, "the chain exited %d instead of running the probe: %s",
			res->code, res->out);
		return;
	}
	if ((res->code == 0) != want_ok) {
		chk_add(r, cls, name, CHK_FAIL, "%s: %s", want_ok ? "refused" : "allowed", res->out);
		return;
	}
	if (!host_ok) {
		chk_add(r, cls, name, CHK_FAIL, "%s; but on the host: %s", res->out, host_says);
		return;
	}
	chk_add(r, cls, name, CHK_OK, "%s%s", want_ok ? "" : "denied: ", res->out);
}

static void isolation(struct chk_report *r, struct chain *c, const struct scratch *s)
{
	char target[PATH_MAX], envp[PATH_MAX];
	struct argv_b a;
	struct run res;

	join(target, sizeof target, s->ws, "readme");
	a.n = 0;
	add_ns(&a, c, NULL, s->ws, s->probe);
	add(&a, "read");
	add(&a, target);
	run(c, a.v, &res);
	judge(r, CLS_ISOLATION, "workspace-read", 1, &res, 1, "");

	join(target, sizeof target, s->ws, "created");
	a.n = 0;
	add_ns(&a, c, NULL, s->ws, s->probe);
	add(&a, "write");
	add(&a, target);
	run(c, a.v, &res);
	judge(r, CLS_ISOLATION, "workspace-write", 1, &res,
	      file_has(target, "written by sbx-check --probe\n"),
	      exists(target) ? "the file has other content" : "the file is not there");

	a.n = 0;
	add_ns(&a, c, NULL, s->ws, s->probe);
	add(&a, "read");
	add(&a, s->secret);
	run(c, a.v, &res);
	judge(r, CLS_ISOLATION, "sibling-secret", 0, &res, 1, "");

	join(envp, sizeof envp, s->ws, ".env");
	a.n = 0;
	add_ns(&a, c, NULL, s->ws, s->probe);
	add(&a, "write");
	add(&a, envp);
	run(c, a.v, &res);
	judge(r, CLS_ISOLATION, "env-write", 0, &res,
	      file_has(envp, "TOKEN=must-stay-unchanged\n"), ".env was modified");

	join(target, sizeof target, s->ws, ".git/hooks/pre-commit");
	a.n = 0;
	add_ns(&a, c, NULL, s->ws, s->probe);
	add(&a, "write");
	add(&a, target);
	run(c, a.v, &res);
	judge(r, CLS_ISOLATION, "git-hook-write", 0, &res, !exists(target),
	      ".git/hooks/pre-commit exists");

	join(target, sizeof target, s->outside, "escaped");
	a.n = 0;
	add_ns(&a, c, NULL, s->ws, s->probe);
	add(&a, "write");
	add(&a, target);
	run(c, a.v, &res);
	judge(r, CLS_ISOLATION, "outside-write", 0, &res, !exists(target),
	      "a file appeared outside the workspace");
}

/* A listener on the host's own 127.0.0.1: reaching it from inside would
 * prove the sandbox shares the host's network. Nothing ever leaves the
 * machine: the only address used is loopback. */
static int host_listener(unsigned *port)
{
	struct sockaddr_in a;
	socklen_t al = sizeof a;
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 16) < 0 ||
	    getsockname(s, (struct sockaddr *)&a, &al) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to listen on 127.0.0.1");
	*port = ntohs(a.sin_port);
	return s;
}

/* The broker proof's test network: two network namespaces of its own, with
 * no default route, joined by a veth pair. "h" holds sbx-broker (with its
 * own /etc/hosts in a mount namespace of its own), "o" the test origin on
 * 198.18.99.2:80. sbx-ns runs on the host; the sandbox reaches only the
 * broker's Unix socket. No packet can leave these two namespaces. */
#define ORIGIN_ADDR "198.18.99.2"
#define ALLOWED_NAME "allowed.sbx-check.test"
#define DENIED_NAME "denied.sbx-check.test"

struct testnet {
	char ip[32];
	char nh[32], no[32], vh[16], vo[16];
	char sock[PATH_MAX], hosts[PATH_MAX];
	int made, count_fd, requests;
	pid_t origin, broker;
};

static const char *find_ip(void)
{
	static const char *const dirs[] = { "/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip" };

	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
		if (tool_exists(dirs[i]))
			return dirs[i];
	return NULL;
}

/* busybox's ip lacks the netns and veth commands the test network needs,
 * and answers them with its usage text: ask `ip -V` who it is. */
static int is_iproute2(struct chain *c, const char *ip)
{
	char *argv[] = { (char *)ip, (char *)"-V", NULL };
	struct run res;

	run(c, argv, &res);
	return res.code == 0 && strstr(res.out, "iproute2") != NULL;
}

/* Runs `ip ARGS...`; 0 when it worked, otherwise its output in why. */
static int ipcmd(struct chain *c, const struct testnet *t, char *why, size_t n, ...)
{
	struct argv_b a = { .n = 0 };
	struct run res;
	va_list ap;
	const char *arg;

	add(&a, t->ip);
	va_start(ap, n);
	while ((arg = va_arg(ap, const char *)))
		add(&a, arg);
	va_end(ap);
	run(c, a.v, &res);
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
static pid_t start_helper(struct chain *c, struct testnet *t, const char *broker, int userns,
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
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to fork");
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

static int origin_requests(struct testnet *t)
{
	char buf[64];
	ssize_t k;

	while ((k = read(t->count_fd, buf, sizeof buf)) > 0)
		t->requests += (int)k;
	return t->requests;
}

static int testnet_up(struct chain *c, struct testnet *t, const struct scratch *s,
		      const char *broker, char *why, size_t n)
{
	long pid = (long)getpid();

	snprintf(t->nh, sizeof t->nh, "sbx-check-%ld-h", pid);
	snprintf(t->no, sizeof t->no, "sbx-check-%ld-o", pid);
	snprintf(t->vh, sizeof t->vh, "sbxck%ldh", pid % 10000000);
	snprintf(t->vo, sizeof t->vo, "sbxck%ldo", pid % 10000000);
	join(t->sock, sizeof t->sock, s->base, "broker.sock");
	join(t->hosts, sizeof t->hosts, s->base, "hosts");
	put_file(t->hosts, ORIGIN_ADDR " " ALLOWED_NAME "\n" ORIGIN_ADDR " " DENIED_NAME "\n", 0644);
	if (ipcmd(c, t, why, n, "netns", "add", t->nh, NULL))
		return -1;
	t->made = 1;
	if (ipcmd(c, t, why, n, "netns", "add", t->no, NULL))
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
	if ((t->origin = start_helper(c, t, NULL, 0, why, n)) < 0)
		return -1;
	if ((t->broker = start_helper(c, t, broker, 0, why, n)) < 0)
		return -1;
	/* sbx-ns hands the sandbox's listeners over as the caller. */
	if (chmod(t->sock, 0666) < 0) {
		snprintf(why, n, "unable to chmod the broker's socket: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static void testnet_down(struct chain *c, struct testnet *t)
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

static void broker_unsupported(struct chk_report *r, const char *fix, const char *why)
{
	static const char *const names[] = { "broker-allowed", "broker-denied" };

	for (size_t i = 0; i < 2; i++) {
		struct chk_item *it = chk_add(r, CLS_EXTRA, names[i], CHK_UNSUPPORTED, "%s", why);
		chk_fix(it, "%s", fix);
	}
}

/* An allowlisted name reaches the test origin through sbx-ns --net broker
 * and sbx-broker; a name not on the list, mapped to the same origin, is
 * refused by the broker (403) and the origin sees no request. */
static void fetch(struct chk_report *r, struct chain *c, const struct scratch *s,
		  struct testnet *t, const char *net, int allowed)
{
	const char *line = allowed ? "broker-allowed" : "broker-denied";
	struct argv_b a = { .n = 0 };
	struct run res;
	int before = origin_requests(t);

	add_ns(&a, c, net, s->ws, s->probe);
	add(&a, "fetch");
	add(&a, allowed ? ALLOWED_NAME : DENIED_NAME);
	run(c, a.v, &res);
	if (res.code == SBX_EXIT_USAGE) {
		struct chk_item *it = chk_add(r, CLS_EXTRA, line, CHK_UNSUPPORTED,
					      "this sbx-ns refuses --net broker: %s", res.out);
		chk_fix(it, "an sbx-ns with network modes");
	} else if (!allowed && res.code == 1 && !strstr(res.out, ": HTTP 403")) {
		/* Only the broker's refusal counts: a missing proxy proves nothing. */
		chk_add(r, CLS_EXTRA, line, CHK_FAIL, "not refused by the broker: %s", res.out);
	} else {
		judge(r, CLS_EXTRA, line, allowed, &res, origin_requests(t) == before + allowed,
		      allowed ? "the origin did not see exactly one request" : "the origin saw the request");
	}
}

/* Without root or ip(8): the denial alone, in namespaces of the caller's
 * own (see userns_main). */
static void broker_denial_only(struct chk_report *r, struct chain *c, const struct scratch *s,
			       const char *broker, const char *whynot)
{
	char net[PATH_MAX + 16], why[1200];
	struct chk_item *it;
	struct testnet t;

	memset(&t, 0, sizeof t);
	t.count_fd = -1;
	join(t.sock, sizeof t.sock, s->base, "broker.sock");
	join(t.hosts, sizeof t.hosts, s->base, "hosts");
	put_file(t.hosts, "127.0.0.1 " ALLOWED_NAME "\n127.0.0.1 " DENIED_NAME "\n", 0644);
	it = chk_add(r, CLS_EXTRA, "broker-allowed", CHK_UNSUPPORTED,
		     "not proven: %s, and the broker refuses loopback and the host's own addresses",
		     whynot);
	chk_fix(it, "run sbx-check proof as root with iproute2's ip(8) installed");
	if ((t.broker = start_helper(c, &t, broker, 1, why, sizeof why)) < 0) {
		it = chk_add(r, CLS_EXTRA, "broker-denied", CHK_UNSUPPORTED,
			     "the test origin and broker could not be started: %s", why);
		chk_fix(it, "see `sbx-check host` (user namespaces)");
	} else if (chmod(t.sock, 0666) < 0) {
		sbx_die_errno(SBX_EXIT_SYS, "unable to chmod %s", t.sock);
	} else {
		snprintf(net, sizeof net, "broker:%s", t.sock);
		fetch(r, c, s, &t, net, 0);
	}
	testnet_down(c, &t);
}

static void broker_proof(struct chk_report *r, struct chain *c, const struct scratch *s)
{
	char broker[PATH_MAX + 16], bdir[PATH_MAX], net[PATH_MAX + 16], why[1200];
	const char *ip = find_ip();
	struct testnet t;

	if (c->stop)
		return;
	chk_bindir(bdir, sizeof bdir);
	join(broker, sizeof broker, bdir, "sbx-broker");
	if (!c->have_broker) {
		broker_unsupported(r, "install sbx-broker",
				   "sbx-broker is not installed beside sbx-check: the sandbox is offline only");
		return;
	}
	if (getuid() != 0) {
		broker_denial_only(r, c, s, broker,
				   "a test origin outside the broker's namespace needs a veth pair, "
				   "which only root can build");
		return;
	}
	if (!ip) {
		broker_denial_only(r, c, s, broker, "ip(8) is not installed to build a veth pair");
		return;
	}
	if (!is_iproute2(c, ip)) {
		char msg[PATH_MAX + 96];
		snprintf(msg, sizeof msg, "%s is not iproute2's ip (busybox's?): the veth pair "
			 "needs iproute2", ip);
		broker_denial_only(r, c, s, broker, msg);
		return;
	}
	memset(&t, 0, sizeof t);
	t.count_fd = -1;
	snprintf(t.ip, sizeof t.ip, "%s", ip);
	if (testnet_up(c, &t, s, broker, why, sizeof why) < 0) {
		char msg[1300];
		testnet_down(c, &t);
		snprintf(msg, sizeof msg, "the test network could not be built: %s", why);
		broker_unsupported(r, "see the reason", msg);
		return;
	}
	snprintf(net, sizeof net, "broker:%s", t.sock);
	fetch(r, c, s, &t, net, 1);
	fetch(r, c, s, &t, net, 0);
	testnet_down(c, &t);
}

static void network(struct chk_report *r, struct chain *c, const struct scratch *s)
{
	char portbuf[16];
	struct argv_b a;
	struct run res;
	struct chk_item *it;
	unsigned port;
	int l = host_listener(&port);

	snprintf(portbuf, sizeof portbuf, "%u", port);
	a.n = 0;
	add_ns(&a, c, NULL, s->ws, s->probe);
	add(&a, "connect");
	add(&a, portbuf);
	run(c, a.v, &res);
	judge(r, CLS_ISOLATION, "offline", 0, &res, 1, "");

	a.n = 0;
	add_ns(&a, c, "loopback", s->ws, s->probe);
	add(&a, "loopback");
	run(c, a.v, &res);
	if (res.code == SBX_EXIT_USAGE) {
		it = chk_add(r, CLS_EXTRA, "loopback", CHK_UNSUPPORTED,
			     "this sbx-ns refuses --net loopback: %s", res.out);
		chk_fix(it, "an sbx-ns with network modes");
	} else {
		judge(r, CLS_EXTRA, "loopback", 1, &res, 1, "");
		a.n = 0;
		add_ns(&a, c, "loopback", s->ws, s->probe);
		add(&a, "connect");
		add(&a, portbuf);
		run(c, a.v, &res);
		judge(r, CLS_EXTRA, "loopback-host", 0, &res, 1, "");
	}
	close(l);

	broker_proof(r, c, s);
}

/* The kernel's own account of a run, as sbx-cgroup read it from the
 * cgroup (pids.events, memory.events, memory.peak) just before removing
 * it: its "exit" status line. 0 when a key is missing or null. */
static int evidence(const char *status, const char *key, unsigned long long *v)
{
	char buf[4096], pat[64];
	const char *line, *at;

	if (sbx_read_small(status, O_NOFOLLOW, buf, sizeof buf) <= 0)
		return 0;
	line = strstr(buf, "{\"tool\":\"sbx-cgroup\",\"event\":\"exit\",");
	snprintf(pat, sizeof pat, "\"%s\":", key);
	if (!line || !(at = strstr(line, pat)) || strchr(line, '\n') < at)
		return 0;
	at += strlen(pat);
	if (*at < '0' || *at > '9')
		return 0;
	*v = strtoull(at, NULL, 10);
	return 1;
}

/* A fork bomb is stopped by pids.max only if the kernel counted the
 * refusals in pids.events and the bomb stayed below the limit. */
static void judge_pids(struct chk_report *r, const struct run *res, const char *status)
{
	unsigned long long hits = 0;
	const char *f = strstr(res->out, "forked ");
	unsigned long forked = f ? strtoul(f + 7, NULL, 10) : 0;

	if (res->code != 1 || !f) {
		judge(r, CLS_LIMITS, "pids-limit", 0, res, 1, "");
		return;
	}
	if (!evidence(status, "pids_max_hits", &hits) || !hits) {
		chk_add(r, CLS_LIMITS, "pids-limit", CHK_FAIL,
			"fork failed, but pids.events counts no refusal at pids.max (%s): %s",
			hits ? "" : "max 0 or no exit line from sbx-cgroup", res->out);
		return;
	}
	if (forked + 1 > 16) {
		chk_add(r, CLS_LIMITS, "pids-limit", CHK_FAIL,
			"%lu processes ran under --pids 16: %s", forked + 1, res->out);
		return;
	}
	chk_add(r, CLS_LIMITS, "pids-limit", CHK_OK, "denied: %s (pids.events max %llu)", res->out,
		hits);
}

/* A memory hog is stopped by memory.max only if the cgroup's OOM killer
 * killed it (memory.events oom_kill) and the cgroup never held more than
 * the limit (memory.peak). */
static void judge_memory(struct chk_report *r, const struct run *res, const char *status)
{
	unsigned long long oom = 0, peak = 0;
	int have_oom = evidence(status, "oom_kill", &oom), have_peak = evidence(status, "memory_peak", &peak);

	if (res->code != SBX_EXIT_OOM && res->code != 128 + SIGKILL && res->code != 1) {
		judge(r, CLS_LIMITS, "memory-limit", 0, res, 1, "");
		return;
	}
	if (!have_oom || !oom) {
		chk_add(r, CLS_LIMITS, "memory-limit", CHK_FAIL,
			"the hog was stopped (exit %d), but memory.events counts no OOM kill: %s",
			res->code, res->out[0] ? res->out : "no output");
		return;
	}
	if (have_peak && peak > 32ULL << 20) {
		chk_add(r, CLS_LIMITS, "memory-limit", CHK_FAIL,
			"OOM-killed, but memory.peak above 32 MiB is not within --memory 32M: %s",
			res->out);
		return;
	}
	/* Before Linux 5.19 there is no memory.peak (sbx-cgroup reports null):
	 * the OOM kill counted in the cgroup's own memory.events is the proof. */
	if (!have_peak) {
		chk_add(r, CLS_LIMITS, "memory-limit", CHK_OK,
			"a 256 MiB hog under --memory 32M was OOM-killed (exit %d, oom_kill %llu; no "
			"memory.peak on this kernel, it came in Linux 5.19)%s%s",
			res->code, oom, res->out[0] ? ": " : "", res->out);
		return;
	}
	chk_add(r, CLS_LIMITS, "memory-limit", CHK_OK,
		"a 256 MiB hog under --memory 32M was OOM-killed (exit %d, oom_kill %llu, peak %llu bytes)%s%s",
		res->code, oom, peak, res->out[0] ? ": " : "", res->out);
}

static void cgroup_proof(struct chk_report *r, struct chain *c, const struct scratch *s,
			 const char *root)
{
	static const struct { const char *name, *opt, *val, *probe, *arg; } t[] = {
		{ "pids-limit", "--pids", "16", "forkbomb", "256" },
		{ "memory-limit", "--memory", "32M", "memhog", "256" },
	};
	struct chk_item *it;
	char cgname[64], status[PATH_MAX];

	join(status, sizeof status, s->base, "cgroup-status");
	for (size_t i = 0; i < 2; i++) {
		struct argv_b a = { .n = 0 };
		struct run res;

		if (!root) {
			it = chk_add(r, CLS_LIMITS, t[i].name, CHK_NOTCONF, "not proven");
			chk_fix(it, "pass --cgroup-root DIR");
			continue;
		}
		if (!c->have_cgroup) {
			chk_add(r, CLS_LIMITS, t[i].name, CHK_UNSUPPORTED,
				"sbx-cgroup is not installed beside sbx-check");
			continue;
		}
		snprintf(cgname, sizeof cgname, "sbx-check-%ld-%zu", (long)getpid(), i);
		add(&a, c->cgroup);
		add(&a, "--root");
		add(&a, root);
		add(&a, "--name");
		add(&a, cgname);
		add(&a, t[i].opt);
		add(&a, t[i].val);
		add(&a, "--status-fd");
		add(&a, "3");
		add(&a, "--");
		add_ns(&a, c, NULL, s->ws, s->probe);
		add(&a, t[i].probe);
		add(&a, t[i].arg);
		unlink(status);
		run_st(c, a.v, status, &res);
		if (res.code == SBX_EXIT_UNSUPPORTED) {
			it = chk_add(r, CLS_LIMITS, t[i].name, CHK_UNSUPPORTED,
				     "sbx-cgroup refused, fail-closed (exit 101): %s", res.out);
			chk_fix(it, "see `sbx-check host --cgroup-root %s`", root);
		} else if (i == 0) {
			judge_pids(r, &res, status);
		} else {
			judge_memory(r, &res, status);
		}
	}
	unlink(status);
}

static void quota_proof(struct chk_report *r, struct chain *c, const char *qws)
{
	char dir[PATH_MAX], probe[PATH_MAX + 8], fill[PATH_MAX + 8];
	struct argv_b a = { .n = 0 };
	struct chk_item *it;
	struct run res;

	if (!qws) {
		it = chk_add(r, CLS_LIMITS, "quota-limit", CHK_NOTCONF, "not proven");
		chk_fix(it, "pass --quota-workspace DIR");
		return;
	}
	if (!c->have_quota) {
		chk_add(r, CLS_LIMITS, "quota-limit", CHK_UNSUPPORTED,
			"sbx-quota is not installed beside sbx-check");
		return;
	}
	/* The command runs in a directory of the quota workspace that it owns
	 * (nobody when the caller is root): the project's quota covers it, and
	 * the command's uid can write its workspace. */
	snprintf(dir, sizeof dir, "%s/.sbx-check-ws.%ld", qws, (long)getpid());
	snprintf(probe, sizeof probe, "%s/probe", dir);
	snprintf(fill, sizeof fill, "%s/fill", dir);
	if (mkdir(dir, 0755) < 0 || (getuid() == 0 && chown(dir, PROOF_ID, PROOF_ID) < 0))
		sbx_die_errno(SBX_EXIT_SYS, "unable to create %s", dir);
	copy_self(probe);
	add(&a, c->quota);
	add(&a, "verify");
	add(&a, "--workspace");
	add(&a, qws);
	/* The limit must be at most 1 GiB, so that writing 1040 MiB meets it. */
	add(&a, "--disk");
	add(&a, "1G");
	add(&a, "--");
	add_ns(&a, c, NULL, dir, probe);
	add(&a, "fill");
	add(&a, fill);
	add(&a, "1040");
	run(c, a.v, &res);
	unlink(probe);
	unlink(fill);
	rmdir(dir);
	if (res.code == SBX_EXIT_UNSUPPORTED || res.code == SBX_EXIT_POLICY) {
		it = chk_add(r, CLS_LIMITS, "quota-limit", CHK_UNSUPPORTED,
			     "sbx-quota refused, fail-closed (exit %d): %s", res.code, res.out);
		chk_fix(it, "see `sbx-check host --quota-workspace %s`", qws);
	} else if (res.code == 1 && !strstr(res.out, strerror(EDQUOT)) &&
		   !strstr(res.out, strerror(ENOSPC))) {
		/* XFS answers an exhausted project quota with ENOSPC, ext4 with EDQUOT. */
		chk_add(r, CLS_LIMITS, "quota-limit", CHK_FAIL, "stopped, but not by the quota: %s",
			res.out);
	} else {
		judge(r, CLS_LIMITS, "quota-limit", 0, &res, 1, "");
	}
}

/* Without sbx-ns no limit can be shown on a sandboxed command. */
static void limits_without_ns(struct chk_report *r, const struct chk_opts *o)
{
	static const char *const names[] = { "pids-limit", "memory-limit", "quota-limit" };
	struct chk_item *it;

	for (size_t i = 0; i < 3; i++) {
		const char *conf = i < 2 ? o->cgroup_root : o->quota_ws;
		if (conf) {
			chk_add(r, CLS_LIMITS, names[i], CHK_UNSUPPORTED,
				"not proven: sbx-ns is not installed");
		} else {
			it = chk_add(r, CLS_LIMITS, names[i], CHK_NOTCONF, "not proven");
			chk_fix(it, "pass %s DIR", i < 2 ? "--cgroup-root" : "--quota-workspace");
		}
	}
}

void chk_proof(struct chk_report *r, const struct chk_opts *o)
{
	char bindir[PATH_MAX], p[PATH_MAX + 32];
	struct chain c;
	struct scratch s;
	struct chk_item *it;

	memset(&c, 0, sizeof c);
	chk_bindir(bindir, sizeof bindir);
	if (o->ns)
		snprintf(c.ns, sizeof c.ns, "%s", o->ns);
	else
		join(c.ns, sizeof c.ns, bindir, "sbx-ns");
	c.have_ns = tool_exists(c.ns);
	join(c.cgroup, sizeof c.cgroup, bindir, "sbx-cgroup");
	c.have_cgroup = tool_exists(c.cgroup);
	join(c.quota, sizeof c.quota, bindir, "sbx-quota");
	c.have_quota = tool_exists(c.quota);
	join(p, sizeof p, bindir, "sbx-broker");
	c.have_broker = tool_exists(p);

	if (!c.have_ns) {
		static const char *const names[] = { "workspace-read", "workspace-write",
			"sibling-secret", "env-write", "git-hook-write", "outside-write", "offline" };
		for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
			it = chk_add(r, CLS_ISOLATION, names[i], CHK_UNSUPPORTED,
				     "sbx-ns is not installed at %s", c.ns);
			chk_fix(it, "install sbx-ns beside sbx-check");
		}
		limits_without_ns(r, o);
		return;
	}
	/* From here on a signal must not leave the scratch directory behind. */
	{
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGINT);
		sigaddset(&set, SIGTERM);
		sigaddset(&set, SIGHUP);
		if (sigprocmask(SIG_BLOCK, &set, &c.oldmask) < 0 ||
		    (c.sigfd = signalfd(-1, &set, SFD_CLOEXEC)) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to set up signal handling");
	}
	make_scratch(&s);
	isolation(r, &c, &s);
	network(r, &c, &s);
	cgroup_proof(r, &c, &s, o->cgroup_root);
	quota_proof(r, &c, o->quota_ws);
	remove_tree(s.base);
	if (c.stop) {
		/* Interrupted: the scratch directory is gone; die of the signal. */
		signal(c.stop, SIG_DFL);
		sigprocmask(SIG_SETMASK, &c.oldmask, NULL);
		raise(c.stop);
		_exit(SBX_EXIT_SIGNAL_BASE + c.stop);
	}
	sigprocmask(SIG_SETMASK, &c.oldmask, NULL);
	close(c.sigfd);
}

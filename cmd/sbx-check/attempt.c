/* The hidden probe mode, `sbx-check --probe ACTION ARGS`: the attempts the
 * proof runs inside the sandbox, so that no shell or other tool is needed in
 * there. Each action prints one line saying what happened and exits 0 when
 * the action succeeded, 1 when it was refused (with the errno text), 2 on
 * bad input. Every network action targets 127.0.0.1 only: if the sandbox
 * does not hold, the traffic still never leaves the machine. Fork and memory
 * probes stop at a caller-given bound, so an unconfined run stays harmless. */
#include "check.h"
#include "parse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static int said(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int said(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	return code;
}

static int do_read(const char *path)
{
	char buf[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return said(1, "open %s: %s", path, strerror(errno));
	n = read(fd, buf, sizeof buf);
	close(fd);
	if (n < 0)
		return said(1, "read %s: %s", path, strerror(errno));
	return said(0, "read %zd bytes from %s", n, path);
}

static int do_write(const char *path)
{
	static const char line[] = CHK_PROBE_WRITTEN;
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	if (fd < 0)
		return said(1, "open %s for writing: %s", path, strerror(errno));
	if (write(fd, line, sizeof line - 1) != (ssize_t)sizeof line - 1) {
		int e = errno;
		close(fd);
		return said(1, "write %s: %s", path, strerror(e));
	}
	close(fd);
	return said(0, "wrote %s", path);
}

static struct sockaddr_in lo(unsigned port)
{
	struct sockaddr_in a;

	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* A TCP connection to 127.0.0.1:port: the socket, or -1 with errno and
 * *failed naming the call that failed. */
static int dial_lo(unsigned port, const char **failed)
{
	struct sockaddr_in a = lo(port);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), e;

	*failed = "socket(AF_INET)";
	if (s < 0)
		return -1;
	*failed = "connect";
	if (connect(s, (struct sockaddr *)&a, sizeof a) < 0) {
		e = errno;
		close(s);
		errno = e;
		return -1;
	}
	return s;
}

static int do_connect(const char *portarg)
{
	const char *failed;
	uint64_t port;
	int s;

	if (sbx_parse_u64(portarg, 1, 65535, &port))
		return said(2, "bad port '%s'", portarg);
	s = dial_lo((unsigned)port, &failed);
	if (s < 0 && !strcmp(failed, "connect"))
		return said(1, "connect 127.0.0.1:%u: %s", (unsigned)port, strerror(errno));
	if (s < 0)
		return said(1, "%s: %s", failed, strerror(errno));
	close(s);
	return said(0, "connected to 127.0.0.1:%u", (unsigned)port);
}

/* A plain-HTTP GET of http://HOST/ through the proxy sbx-ns's broker mode
 * names in HTTP_PROXY. Only a proxy on 127.0.0.1 is ever dialled: without
 * the broker mode (an unconfined stand-in) there is nothing to ask, and
 * nothing leaves the machine either way. */
static int do_fetch(const char *host)
{
	static const char pre[] = "http://127.0.0.1:";
	const char *proxy = getenv("HTTP_PROXY"), *failed;
	char req[512], resp[2048], portbuf[8], *body;
	uint64_t port;
	size_t n = 0, plen;
	int s, status;

	if (!host[0] || strpbrk(host, "/ \r\n") || strlen(host) > 200)
		return said(2, "bad host '%s'", host);
	if (!proxy)
		return said(1, "HTTP_PROXY is not set: no broker to ask for http://%s/", host);
	if (strncmp(proxy, pre, sizeof pre - 1))
		return said(1, "HTTP_PROXY is %s, not a proxy on 127.0.0.1", proxy);
	plen = strcspn(proxy + sizeof pre - 1, "/");
	if (plen == 0 || plen >= sizeof portbuf)
		return said(1, "HTTP_PROXY is %s: bad port", proxy);
	memcpy(portbuf, proxy + sizeof pre - 1, plen);
	portbuf[plen] = '\0';
	if (sbx_parse_u64(portbuf, 1, 65535, &port))
		return said(1, "HTTP_PROXY is %s: bad port", proxy);
	s = dial_lo((unsigned)port, &failed);
	if (s < 0 && !strcmp(failed, "connect"))
		return said(1, "connect %s: %s", proxy, strerror(errno));
	if (s < 0)
		return said(1, "%s: %s", failed, strerror(errno));
	snprintf(req, sizeof req, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
		 host, host);
	if (write(s, req, strlen(req)) != (ssize_t)strlen(req)) {
		int e = errno;
		close(s);
		return said(1, "send to %s: %s", proxy, strerror(e));
	}
	for (;;) {
		ssize_t k = read(s, resp + n, sizeof resp - 1 - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		n += (size_t)k;
		if (n == sizeof resp - 1)
			break;
	}
	close(s);
	resp[n] = '\0';
	if (sscanf(resp, "HTTP/1.%*1[01] %3d", &status) != 1)
		return said(1, "no HTTP answer from %s for http://%s/", proxy, host);
	body = strstr(resp, "\r\n\r\n");
	body = body ? body + 4 : resp + n;
	body[strcspn(body, "\r\n")] = '\0';
	return said(status == 200 ? 0 : 1, "http://%s/: HTTP %d%s%s", host, status,
		    body[0] ? ": " : "", body);
}

/* A server and a client inside the sandbox: loopback mode's promise. */
static int do_loopback(void)
{
	struct sockaddr_in a = lo(0);
	socklen_t al = sizeof a;
	char c = 0;
	int l, s, t;

	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0)
		return said(1, "socket(AF_INET): %s", strerror(errno));
	if (bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &al) < 0)
		return said(1, "listen on 127.0.0.1: %s", strerror(errno));
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) < 0)
		return said(1, "connect 127.0.0.1:%u: %s", ntohs(a.sin_port), strerror(errno));
	t = accept(l, NULL, NULL);
	if (t < 0 || write(s, "x", 1) != 1 || read(t, &c, 1) != 1 || c != 'x')
		return said(1, "exchange on 127.0.0.1:%u: %s", ntohs(a.sin_port), strerror(errno));
	return said(0, "server and client talked on 127.0.0.1:%u", ntohs(a.sin_port));
}

/* A raw socket could forge packets; nothing is ever sent on it. */
static int do_raw(void)
{
	int s = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);

	if (s < 0)
		return said(1, "socket(AF_INET, SOCK_RAW): %s", strerror(errno));
	close(s);
	return said(0, "opened a raw socket");
}

static int do_forkbomb(const char *maxarg)
{
	uint64_t max, n;
	pid_t *kids;
	int e = 0;

	if (sbx_parse_u64(maxarg, 1, 4096, &max))
		return said(2, "bad count '%s'", maxarg);
	kids = calloc(max, sizeof *kids);
	if (!kids)
		return said(1, "calloc: %s", strerror(errno));
	for (n = 0; n < max; n++) {
		pid_t p = fork();
		if (p == 0) {
			pause();
			_exit(0);
		}
		if (p < 0) {
			e = errno;
			break;
		}
		kids[n] = p;
	}
	for (uint64_t i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	for (uint64_t i = 0; i < n; i++)
		waitpid(kids[i], NULL, 0);
	free(kids);
	if (e)
		return said(1, "forked %llu children, then fork failed: %s",
			    (unsigned long long)n, strerror(e));
	return said(0, "forked all %llu children unhindered", (unsigned long long)n);
}

static int do_memhog(const char *mibarg)
{
	uint64_t mib, i;

	if (sbx_parse_u64(mibarg, 1, 65536, &mib))
		return said(2, "bad size '%s'", mibarg);
	for (i = 0; i < mib; i++) {
		char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return said(1, "allocated %llu MiB, then mmap failed: %s",
				    (unsigned long long)i, strerror(errno));
		memset(p, 0x5a, 1 << 20);
	}
	return said(0, "allocated and touched %llu MiB unhindered", (unsigned long long)mib);
}

static int do_fill(const char *path, const char *mibarg)
{
	static char buf[1 << 16];
	uint64_t mib, total = 0;
	int fd;

	if (sbx_parse_u64(mibarg, 1, 1 << 20, &mib))
		return said(2, "bad size '%s'", mibarg);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return said(1, "open %s: %s", path, strerror(errno));
	memset(buf, 0x5a, sizeof buf);
	while (total < mib << 20) {
		ssize_t w = write(fd, buf, sizeof buf);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			int e = errno;
			close(fd);
			return said(1, "wrote %llu bytes: %s", (unsigned long long)total, strerror(e));
		}
		total += (uint64_t)w;
	}
	if (fsync(fd) < 0) {
		int e = errno;
		close(fd);
		return said(1, "wrote %llu bytes, fsync: %s", (unsigned long long)total, strerror(e));
	}
	close(fd);
	return said(0, "wrote %llu bytes unhindered", (unsigned long long)total);
}

/* SIGUSR1 to a process outside the sandbox that sbx-check started (and
 * that keeps it blocked and pending, so the proof sees it arrive). */
static int do_signal(const char *pidarg)
{
	uint64_t pid;

	if (sbx_parse_u64(pidarg, 2, 4194304, &pid))
		return said(2, "bad pid '%s'", pidarg);
	if (kill((pid_t)pid, SIGUSR1) < 0)
		return said(1, "kill %llu SIGUSR1: %s", (unsigned long long)pid, strerror(errno));
	return said(0, "sent SIGUSR1 to %llu", (unsigned long long)pid);
}

/* A connection to an abstract Unix socket sbx-check listens on outside. */
static int do_abstract(const char *name)
{
	struct sockaddr_un a;
	size_t n = strlen(name);
	int s;

	if (!n || n >= sizeof a.sun_path - 1 || strpbrk(name, "/ \r\n"))
		return said(2, "bad name '%s'", name);
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	memcpy(a.sun_path + 1, name, n);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return said(1, "socket(AF_UNIX): %s", strerror(errno));
	if (connect(s, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) < 0) {
		int e = errno;
		close(s);
		return said(1, "connect @%s: %s", name, strerror(e));
	}
	close(s);
	return said(0, "connected to @%s", name);
}

int chk_probe(int argc, char **argv)
{
	const char *a = argc > 0 ? argv[0] : "";

	/* A sandbox that does not hold must not let a probe run forever. */
	alarm(30);
	if (!strcmp(a, "read") && argc == 2)
		return do_read(argv[1]);
	if (!strcmp(a, "write") && argc == 2)
		return do_write(argv[1]);
	if (!strcmp(a, "connect") && argc == 2)
		return do_connect(argv[1]);
	if (!strcmp(a, "loopback") && argc == 1)
		return do_loopback();
	if (!strcmp(a, "fetch") && argc == 2)
		return do_fetch(argv[1]);
	if (!strcmp(a, "raw-socket") && argc == 1)
		return do_raw();
	if (!strcmp(a, "forkbomb") && argc == 2)
		return do_forkbomb(argv[1]);
	if (!strcmp(a, "memhog") && argc == 2)
		return do_memhog(argv[1]);
	if (!strcmp(a, "fill") && argc == 3)
		return do_fill(argv[1], argv[2]);
	if (!strcmp(a, "signal") && argc == 2)
		return do_signal(argv[1]);
	if (!strcmp(a, "abstract") && argc == 2)
		return do_abstract(argv[1]);
	return said(2, "unknown probe '%s'", a);
}

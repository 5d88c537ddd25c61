/* What a command inside `sbx-ns --net MODE` can do with the network, one
 * attempt per run, one line of output: "ok ..." or the step and the errno
 * name.
 *
 *   socket FAMILY TYPE      unix|inet|inet6|netlink|packet  stream|dgram|raw|seqpacket
 *   connect ADDR PORT       TCP connect (IPv4 or IPv6 literal)
 *   udp ADDR PORT           one datagram
 *   listen ADDR PORT        bind and listen (ADDR "-": listen without bind,
 *                           the kernel picks the port)
 *   talk PORT               a server and a client on 127.0.0.1:PORT in this sandbox
 *   ifaces                  the interfaces and whether they are up
 *   kill PID | ptrace PID   signal 0 / attach to a process by pid
 *   killall [PROG ARGS...]  kill(-1, SIGKILL): everything this process may
 *                           signal; then exec PROG (to show what survived) */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* errno by name: the same line from a glibc and a musl build */
static int fail(const char *step)
{
	static const struct { int e; const char *n; } names[] = {
		{ EPERM, "EPERM" }, { EACCES, "EACCES" }, { ECONNREFUSED, "ECONNREFUSED" },
		{ ENETUNREACH, "ENETUNREACH" }, { ESRCH, "ESRCH" }, { EAFNOSUPPORT, "EAFNOSUPPORT" },
		{ EPROTONOSUPPORT, "EPROTONOSUPPORT" }, { ECONNRESET, "ECONNRESET" }, { ENOENT, "ENOENT" },
	};
	int e = errno;

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (names[i].e == e) {
			printf("%s: %s\n", step, names[i].n);
			return 1;
		}
	printf("%s: errno %d\n", step, e);
	return 1;
}

static int addr(const char *a, const char *p, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof *ss);
	if (inet_pton(AF_INET, a, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((unsigned short)atoi(p));
		*len = sizeof *s4;
		return AF_INET;
	}
	if (inet_pton(AF_INET6, a, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((unsigned short)atoi(p));
		*len = sizeof *s6;
		return AF_INET6;
	}
	fprintf(stderr, "bad address %s\n", a);
	exit(2);
}

static int pick(const char *s, const char *const *names, const int *vals)
{
	for (int i = 0; names[i]; i++)
		if (!strcmp(s, names[i]))
			return vals[i];
	fprintf(stderr, "unknown %s\n", s);
	exit(2);
}

static int talk(const char *port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char buf[16] = "";
	int l, c, fam = addr("127.0.0.1", port, &ss, &len), one = 1;
	pid_t pid;

	l = socket(fam, SOCK_STREAM, 0);
	if (l < 0)
		return fail("socket");
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(l, (struct sockaddr *)&ss, len) < 0)
		return fail("bind");
	if (listen(l, 1) < 0)
		return fail("listen");
	pid = fork();
	if (pid == 0) {
		int a = accept(l, NULL, NULL);
		ssize_t n = a < 0 ? -1 : read(a, buf, sizeof buf - 1);
		if (n > 0 && write(a, "pong", 4) != 4)
			_exit(1);
		_exit(n > 0 ? 0 : 1);
	}
	c = socket(fam, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&ss, len) < 0)
		return fail("connect");
	if (write(c, "ping", 4) != 4 || read(c, buf, sizeof buf - 1) <= 0)
		return fail("read");
	waitpid(pid, NULL, 0);
	printf("ok %s\n", buf);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const fams[] = { "unix", "inet", "inet6", "netlink", "packet", NULL };
	static const int famv[] = { AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET };
	static const char *const types[] = { "stream", "dgram", "raw", "seqpacket", NULL };
	static const int typev[] = { SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_SEQPACKET };
	struct sockaddr_storage ss;
	socklen_t len;
	int s, fam;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "socket") && argc == 4) {
		s = socket(pick(argv[2], fams, famv), pick(argv[3], types, typev), 0);
		if (s < 0)
			return fail("socket");
		printf("ok socket\n");
		return 0;
	}
	if ((!strcmp(argv[1], "connect") || !strcmp(argv[1], "udp") || !strcmp(argv[1], "listen")) && argc == 4) {
		int udp = !strcmp(argv[1], "udp");
		if (!strcmp(argv[2], "-")) {
			s = socket(AF_INET, SOCK_STREAM, 0);
			if (s < 0)
				return fail("socket");
			if (listen(s, 1) < 0)
				return fail("listen");
			printf("ok listening\n");
			return 0;
		}
		fam = addr(argv[2], argv[3], &ss, &len);
		s = socket(fam, udp ? SOCK_DGRAM : SOCK_STREAM, 0);
		if (s < 0)
			return fail("socket");
		if (udp) {
			if (sendto(s, "q", 1, 0, (struct sockaddr *)&ss, len) < 0)
				return fail("sendto");
			printf("ok sent\n");
			return 0;
		}
		if (!strcmp(argv[1], "listen")) {
			if (bind(s, (struct sockaddr *)&ss, len) < 0)
				return fail("bind");
			if (listen(s, 1) < 0)
				return fail("listen");
			printf("ok listening\n");
			return 0;
		}
		if (connect(s, (struct sockaddr *)&ss, len) < 0)
			return fail("connect");
		printf("ok connected\n");
		return 0;
	}
	if (!strcmp(argv[1], "talk") && argc == 3)
		return talk(argv[2]);
	if (!strcmp(argv[1], "ifaces")) {
		/* /proc/net, not a socket: readable even where socket() is denied. */
		char buf[256], names[1024] = "";
		int n6 = 0, lineno = 0;
		FILE *f = fopen("/proc/net/dev", "r");
		if (!f)
			return fail("open /proc/net/dev");
		while (fgets(buf, sizeof buf, f))
			if (++lineno > 2) {
				char *c = strchr(buf, ':'), *b = buf;
				size_t k = strlen(names);
				if (!c)
					continue;
				*c = '\0';
				while (*b == ' ')
					b++;
				snprintf(names + k, sizeof names - k, "%s%s", k ? " " : "", b);
			}
		fclose(f);
		f = fopen("/proc/net/if_inet6", "r");
		while (f && fgets(buf, sizeof buf, f))
			n6++;
		if (f)
			fclose(f);
		printf("interfaces: %s; ipv6 addresses: %d\n", names, n6);
		return 0;
	}
	if (!strcmp(argv[1], "kill") && argc == 3) {
		if (kill((pid_t)atoi(argv[2]), 0) < 0)
			return fail("kill");
		printf("ok kill\n");
		return 0;
	}
	if (!strcmp(argv[1], "ptrace") && argc == 3) {
		if (ptrace(PTRACE_ATTACH, (pid_t)atoi(argv[2]), 0, 0) < 0)
			return fail("ptrace");
		printf("ok ptrace\n");
		return 0;
	}
	if (!strcmp(argv[1], "killall")) {
		/* ESRCH: nothing this process may signal at all */
		if (kill(-1, SIGKILL) < 0)
			fail("killall");
		else
			printf("ok killall\n");
		if (argc > 2) {
			execvp(argv[2], argv + 2);
			return fail("exec");
		}
		return 0;
	}
	fprintf(stderr, "usage: ns-net-attempt socket|connect|udp|listen|talk|ifaces|kill|ptrace|killall ...\n");
	return 2;
}

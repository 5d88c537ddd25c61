/* The origin and the clients of bench/sbx-ns-net.sh and
 * bench/sbx-ns-transparent.sh: one small C program, since a Python
 * client's own costs (and its threads' scheduling) would blur the hop
 * being measured. Built by the benches with the host's cc.
 *
 * net origin ADDR         one request per connection, served in turn:
 *                         GET /big/N: N bytes; anything else: "hello\n"
 * net WHERE bulk BYTES    one GET of BYTES; prints MB/s
 * net WHERE rate CONNS    CONNS GETs of 6 bytes, 8 threads, one connection
 *                         each; prints conn/s
 *     WHERE: unix:PATH or tcp:IP:PORT, a proxy (absolute-form GET), or
 *     cap:NAME, NAME:80 resolved once (origin-form GET)
 * net dns NAME QUERIES    A queries to 127.0.0.1:53, 64 in flight; prints
 *                         answers/s */
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static const char *where;
static struct sockaddr_in cap;
static long left;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int dial(void)
{
	int fd;
	if (!strncmp(where, "unix:", 5)) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		strncpy(a.sun_path, where + 5, sizeof a.sun_path - 1);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (connect(fd, (void *)&a, sizeof a) == 0)
			return fd;
	} else if (!strncmp(where, "cap:", 4)) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(fd, (void *)&cap, sizeof cap) == 0)
			return fd;
	} else {
		struct sockaddr_in a = { .sin_family = AF_INET };
		char ip[32];
		snprintf(ip, sizeof ip, "%.*s", (int)strcspn(where + 4, ":"), where + 4);
		inet_pton(AF_INET, ip, &a.sin_addr);
		a.sin_port = htons(atoi(strrchr(where, ':') + 1));
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(fd, (void *)&a, sizeof a) == 0)
			return fd;
	}
	perror("connect");
	exit(1);
}

static long long get(const char *path)
{
	static __thread char buf[1 << 20];
	char req[160];
	long long got = 0;
	ssize_t r;
	int fd = dial(), n = snprintf(req, sizeof req, "GET %s%s HTTP/1.1\r\nHost: origin.test\r\n\r\n",
				      strncmp(where, "cap:", 4) ? "http://origin.test" : "", path);
	if (write(fd, req, n) != n) { perror("write"); exit(1); }
	while ((r = read(fd, buf, sizeof buf)) > 0)
		got += r;
	close(fd);
	return got;
}

static void *worker(void *arg)
{
	for (;;) {
		pthread_mutex_lock(&mu);
		if (left == 0) { pthread_mutex_unlock(&mu); return arg; }
		left--;
		pthread_mutex_unlock(&mu);
		if (get("/") < 6) { fprintf(stderr, "short answer\n"); exit(1); }
	}
}

static void origin(const char *addr)
{
	static char buf[1 << 20];
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(80) };
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);
	inet_pton(AF_INET, addr, &a.sin_addr);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(l, (void *)&a, sizeof a) || listen(l, 1024)) { perror("origin"); exit(1); }
	memset(buf, 'x', sizeof buf);
	for (;;) {
		char head[4096], out[128];
		size_t n = 0;
		long long size = 6;
		int c = accept(l, NULL, NULL);
		if (c < 0)
			continue;
		while (n < sizeof head - 1) {
			ssize_t r = read(c, head + n, sizeof head - 1 - n);
			if (r <= 0) break;
			n += r;
			head[n] = 0;
			if (strstr(head, "\r\n\r\n")) break;
		}
		head[n] = 0;
		if (strstr(head, " /big/"))
			size = atoll(strstr(head, " /big/") + 6);
		n = snprintf(out, sizeof out, "HTTP/1.1 200 OK\r\nContent-Length: %lld\r\nConnection: close\r\n\r\n%s",
			     size, size == 6 ? "hello\n" : "");
		if (write(c, out, n) < 0) { close(c); continue; }
		for (long long k = size == 6 ? 0 : size; k > 0;) {
			ssize_t w = write(c, buf, k < (long long)sizeof buf ? k : (long long)sizeof buf);
			if (w <= 0) break;
			k -= w;
		}
		close(c);
	}
}

/* Resolved once, through the sandbox's resolver: the broker's DNS. */
static void resolve_cap(void)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	if (strncmp(where, "cap:", 4))
		return;
	if (getaddrinfo(where + 4, "80", &hints, &ai)) { fprintf(stderr, "net: %s does not resolve\n", where + 4); exit(1); }
	memcpy(&cap, ai->ai_addr, sizeof cap);
	freeaddrinfo(ai);
}

static void dns(const char *name, long n)
{
	unsigned char q[300], a[600];
	struct sockaddr_in ns = { .sin_family = AF_INET, .sin_port = htons(53), .sin_addr.s_addr = htonl(0x7f000001) };
	size_t ql = 12;
	long sent = 0, got = 0;
	double t;
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	memset(q, 0, 12);
	q[2] = 1; q[5] = 1;
	for (const char *p = name; *p;) {
		size_t l = strcspn(p, ".");
		q[ql++] = (unsigned char)l;
		memcpy(q + ql, p, l);
		ql += l;
		p += l + (p[l] == '.');
	}
	q[ql++] = 0; q[ql++] = 0; q[ql++] = 1; q[ql++] = 0; q[ql++] = 1;
	connect(s, (void *)&ns, sizeof ns);
	t = now();
	while (got < n) {
		struct pollfd p = { .fd = s, .events = POLLIN };
		while (sent < n && sent - got < 64) {
			q[0] = (unsigned char)(sent >> 8); q[1] = (unsigned char)sent;
			if (send(s, q, ql, 0) != (ssize_t)ql) { perror("send"); exit(1); }
			sent++;
		}
		if (poll(&p, 1, 1000) <= 0) { sent = got; continue; } /* lost: send again */
		while (recv(s, a, sizeof a, MSG_DONTWAIT) > 0) {
			if ((a[3] & 15) != 0 || a[7] != 1) { fprintf(stderr, "net: bad answer\n"); exit(1); }
			got++;
		}
	}
	printf("%.0f\n", n / (now() - t));
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "dns")) {
		dns(argv[2], atol(argv[3]));
	} else if (argc == 3 && !strcmp(argv[1], "origin")) {
		origin(argv[2]);
	} else if (argc == 4 && !strcmp(argv[2], "bulk")) {
		char path[64];
		long long want = atoll(argv[3]);
		double t;
		where = argv[1];
		resolve_cap();
		snprintf(path, sizeof path, "/big/%lld", want);
		t = now();
		if (get(path) < want) { fprintf(stderr, "short answer\n"); return 1; }
		printf("%.1f\n", want / (now() - t) / 1e6);
	} else if (argc == 4 && !strcmp(argv[2], "rate")) {
		pthread_t th[8];
		double t;
		where = argv[1];
		resolve_cap();
		left = atol(argv[3]);
		t = now();
		for (int i = 0; i < 8; i++) pthread_create(&th[i], NULL, worker, NULL);
		for (int i = 0; i < 8; i++) pthread_join(th[i], NULL);
		printf("%.0f\n", atol(argv[3]) / (now() - t));
	} else {
		fprintf(stderr, "net: usage: see the source\n");
		return 100;
	}
	return 0;
}

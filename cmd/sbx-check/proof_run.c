/* `sbx-check proof`, the runner: each attempt is a command line (the chain
 * under test, then this binary in its probe mode) run with a bounded time,
 * its output captured, and stopped with all it started on a signal. */
#include "proof.h"
#include "clock.h"
#include "die.h"
#include "exitcodes.h"
#include "fd.h"
#include "nouserns.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

pid_t pr_fork(void)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to fork");
	return pid;
}

/* The Landlock tier says so on stderr at every run: that line is noted in
 * res->warned and left out; the rest of stderr goes before the output. */
static void tier_errors(const struct chain *c, struct run *res)
{
	static const char warning[] = "sbx-ns: WARNING: ";
	char err[2048], out[sizeof res->out];
	size_t n = 0;

	if (sbx_read_small(c->errors, O_NOFOLLOW, err, sizeof err) < 0)
		err[0] = '\0';
	for (char *line = err, *end; *line; line = end) {
		size_t len = strcspn(line, "\n");
		end = line + len + (line[len] == '\n');
		if (!strncmp(line, warning, sizeof warning - 1)) {
			res->warned = 1;
			continue;
		}
		n += (size_t)snprintf(out + n, sizeof out - n, "%.*s ", (int)len, line);
		if (n >= sizeof out)
			n = sizeof out - 1;
	}
	snprintf(out + n, sizeof out - n, "%s", res->out);
	snprintf(res->out, sizeof res->out, "%s", out);
	n = strlen(res->out);
	while (n && res->out[n - 1] == ' ')
		res->out[--n] = '\0';
}

/* Runs argv with stdin /dev/null and stdout+stderr captured, in its own
 * process group so a timeout or an interruption can kill whatever it left
 * behind; with status, that file (created anew) is its fd 3 (in the
 * Landlock tier: always, its request on fd 4 and stderr to a file). After
 * an interruption nothing more is run. */
void pr_run_st(struct chain *c, char *const argv[], const char *status, struct run *res)
{
	int p[2], st, n = 0;
	pid_t pid;
	uint64_t t0;

	memset(res, 0, sizeof *res);
	if (c->stop) {
		res->code = -1;
		return;
	}
	if (pipe2(p, O_CLOEXEC) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create a pipe");
	pid = pr_fork();
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
		if (c->tier) {
			int fd = open(c->errors, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
			if (fd < 0 || dup2(fd, 2) < 0)
				_exit(SBX_EXIT_SYS);
		}
		if (!status && c->tier)
			status = c->status;
		if (status) {
			int fd = open(status, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
			if (fd < 0 || (fd != 3 && (dup2(fd, 3) < 0 || close(fd) < 0)))
				_exit(SBX_EXIT_SYS);
		}
		/* The Landlock tier: the request that gives deny-write up on fd
		 * 4, and no user namespaces where the host would give them. */
		if (c->tier && c->give_up_deny) {
			int fd = open(c->request, O_RDONLY | O_NOFOLLOW);
			if (fd < 0 || (fd != 4 && (dup2(fd, 4) < 0 || close(fd) < 0)))
				_exit(SBX_EXIT_SYS);
		}
		if (c->tier && c->refuse_userns && sbx_refuse_userns() < 0) {
			dprintf(2, "unable to refuse user namespaces to the chain: %s", strerror(errno));
			_exit(SBX_EXIT_SYS);
		}
		execv(argv[0], argv);
		dprintf(2, "unable to exec %s: %s", argv[0], strerror(errno));
		_exit(errno == ENOENT ? SBX_EXIT_NOTFOUND : SBX_EXIT_EXEC);
	}
	close(p[1]);
	t0 = sbx_now_ms();
	for (;;) {
		struct pollfd pf[2] = { { .fd = p[0], .events = POLLIN },
					{ .fd = c->sigfd, .events = POLLIN } };
		struct signalfd_siginfo si;
		char buf[512];
		long left;
		ssize_t k;

		left = RUN_TIMEOUT_MS - (long)(sbx_now_ms() - t0);
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
	if (c->tier)
		tier_errors(c, res);
	if (res->code != -1)
		res->code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void pr_run(struct chain *c, char *const argv[], struct run *res)
{
	pr_run_st(c, argv, NULL, res);
}

int pr_tool_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

void pr_add(struct argv_b *a, const char *s)
{
	if (a->n + 1 >= MAXARGS)
		sbx_die(SBX_EXIT_SYS, "unable to build a command line: too many arguments");
	a->v[a->n++] = (char *)s;
	a->v[a->n] = NULL;
}

void pr_add_ns(struct argv_b *a, const struct chain *c, const char *net, const char *ws,
	       const char *probe)
{
	pr_add(a, c->ns);
	if (getuid() == 0) {
		pr_add(a, "--uid");
		pr_add(a, PROOF_UID);
		pr_add(a, "--gid");
		pr_add(a, PROOF_UID);
	}
	if (net) {
		pr_add(a, "--net");
		pr_add(a, net);
	}
	if (c->tier) {
		pr_add(a, "--baseline");
		pr_add(a, c->baseline);
		pr_add(a, "--status-fd");
		pr_add(a, "3");
		if (c->give_up_deny) {
			pr_add(a, "--policy-fd");
			pr_add(a, "4");
		}
	}
	pr_add(a, "--workspace");
	pr_add(a, ws);
	pr_add(a, "--");
	pr_add(a, probe);
	pr_add(a, "--probe");
}

/* The living sandbox's outer process (--serve PATH): the sandbox is made
 * as for a one-shot run, then it waits for commands instead of running
 * one. Clients (sbx-ns --join PATH, join.c) connect to a Unix socket at
 * PATH on the host side, outside every root the sandbox sees; only the
 * caller's uid and root may connect (SO_PEERCRED, per connection).
 *
 * The outer checks each request (bounds, the environment's names by
 * --setenv's rules, no terminal fd), numbers it as a job and hands it to
 * pid 1 (serve1.c) over their private channel; pid 1 forks the command
 * confined as a one-shot command is. The outer keeps what a one-shot run
 * keeps: the denial supervisor, the broker's decisions, the deny-write
 * record; the deny-write check runs after every command and at the stop.
 *
 * Grants (--grant-key FILE [--grant-nonce-dir DIR], no --grant-fd and no
 * first program): every command must come with one, checked per request
 * as a one-shot run's grant is (grant.c, ns_grant_request): against the
 * plan of this command in this sandbox (the sandbox's plan with the
 * request's argv, environment, directory, timeout and program) and the
 * digest of its stdin, which the client sends as a sealed file in memory
 * and the outer copies whole; a refusal is the one-shot's message and
 * code. A plan grant's program goes to pid 1 with the run (NS_RUN_PROG):
 * the command's process executes that file or nothing.
 *
 * Client protocol (SOCK_SEQPACKET, one request a message): NUL-terminated
 * words, the verb first (run, plan, jobs, wait, kill, connect, stop), then
 * KEY=VALUE words (grant=TEXT among them), then for run and plan "--" and
 * argv. The answers are one line a message: "started ID", "job ID", "exit
 * CODE SIGNAL", "error CODE TEXT", "jobs" and a line a job, "conn" (with
 * the socket), "plan" (with the plan document in a file in memory: plan
 * is --join --dry-run), "warning TEXT" (before another answer),
 * "stopped CODE".
 * While a command runs, its client may send "signal N"; a client that
 * goes away takes its command with it (SIGKILL to its process group). */
#include "ns.h"
#include "clock.h"

#include "die.h"
#include "exec.h"
#include "exitcodes.h"
#include "fd.h"
#include "fdpass.h"
#include "json.h"
#include "parse.h"
#include "quote.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef F_GET_SEALS
#define F_GET_SEALS 1034
#endif
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif

#define READY_RETRY_MS 20
#define NS_CONN_ID 0x80000000u    /* a dial's slot, never a job id */
#define JOB_SHOW 120             /* bytes of a job's argv in the list */

enum job_state { J_FREE = 0, J_STARTING, J_RUNNING, J_ENDED };

struct job {
	enum job_state state;
	uint32_t id;
	pid_t pid;               /* in the sandbox's pid namespace */
	int status;              /* wait status once ended */
	int code;                /* sbx's outcome once ended */
	int client;              /* index of the attached client, or -1 */
	int detached;
	int timed_out;
	int cg;                  /* it has a cgroup of its own (servecg.c) */
	uint64_t deadline;       /* 0: none */
	char show[JOB_SHOW];     /* argv, escaped, for the list */
	int grant;               /* the kind of grant it runs under (SBX_GRANT_KIND_*), 0 none */
};

struct client {
	int fd;                  /* -1: free */
	uid_t uid;
	uint32_t job;            /* the job it runs or waits for, 0 none */
	int stop;                /* it asked for the stop */
	int refused;             /* another uid: its first message gets the refusal */
};

struct ns_serve {
	int lfd;                 /* the listening socket, -1 before ready */
	int dirfd;               /* its directory */
	char *path, *name;
	int ready;
	int stopping, stop_code;
	int init_id;             /* the first program's job, 0 none */
	uint64_t ready_deadline, ready_retry;
	int ready_asked;
	struct job jobs[NS_SERVE_JOBS];
	struct client cl[NS_SERVE_CLIENTS];
	uint32_t next_id;        /* jobs: 1, 2, ... */
	uint32_t next_conn;      /* --connect's dials, numbered apart (NS_CONN_ID) */
	int chan;                /* the outer's end of the channel to pid 1 */
	int pid1_gone;
	int up;                  /* pid 1 said the sandbox is set up */
};

static int say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int say(int fd, const char *fmt, ...)
{
	char buf[SBX_GRANT_WHY_MAX + 64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	if ((size_t)n >= sizeof buf)
		n = sizeof buf - 1;
	return send(fd, buf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) == n ? 0 : -1;
}

/* --serve PATH, before anything is created: a new name in a directory of
 * the caller's that no one else can write, reached through no symlink,
 * short enough for a socket's address, and outside every root the
 * sandbox sees (a command could connect to a socket it can see, and
 * would pass SO_PEERCRED as the caller's uid). */
void ns_serve_check(const struct ns_args *a, const struct ns_plan *p)
{
	char dir[PATH_MAX], real[PATH_MAX], *slash;
	const char *path = a->serve;
	const struct mount_op *op;
	struct sockaddr_un sa;
	struct stat st;

	if (!path)
		return;
	if (strlen(path) >= sizeof sa.sun_path)
		sbx_die_usage("--serve: invalid path '%s': too long for a socket (at most %zu bytes)", path,
			      sizeof sa.sun_path - 1);
	if (strlen(path) >= sizeof dir)
		sbx_die_usage("--serve: invalid path '%s': too long", path);
	strcpy(dir, path);
	slash = strrchr(dir, '/');
	if (!slash[1] || !strcmp(slash + 1, ".") || !strcmp(slash + 1, ".."))
		sbx_die_usage("--serve: invalid path '%s': names no file", path);
	*(slash == dir ? slash + 1 : slash) = '\0';
	if (!realpath(dir, real))
		sbx_die_usage("--serve: invalid path '%s': %s: %s", path, dir, strerror(errno));
	if (strcmp(real, dir))
		sbx_die_usage("--serve: invalid path '%s': its directory is not canonical (a symlink, . or ..)", path);
	if (lstat(dir, &st) < 0)
		sbx_die_usage("--serve: invalid path '%s': %s: %s", path, dir, strerror(errno));
	if (st.st_uid != p->caller_uid)
		sbx_die_usage("--serve: invalid path '%s': the directory %s is not the caller's (uid %u); "
			      "use a directory of your own such as $XDG_RUNTIME_DIR", path, dir, (unsigned)p->caller_uid);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		sbx_die_usage("--serve: invalid path '%s': others may write the directory %s (chmod go-w %s)",
			      path, dir, dir);
	if (lstat(path, &st) == 0 || errno != ENOENT) {
		if (S_ISSOCK(st.st_mode)) {
			int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
			memset(&sa, 0, sizeof sa);
			sa.sun_family = AF_UNIX;
			strcpy(sa.sun_path, path);
			if (s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof sa) == 0)
				sbx_die_usage("--serve: invalid path '%s': a sandbox is serving there "
					      "(sbx-ns --join %s --stop stops it)", path, path);
			sbx_die_usage("--serve: invalid path '%s': exists, a socket nothing serves "
				      "(left by a killed sandbox: remove it)", path);
		}
		sbx_die_usage("--serve: invalid path '%s': exists", path);
	}
	if ((op = ns_root_holding(p, path, 0)))
		sbx_die_usage("--serve: invalid path '%s': inside %s %s, which the sandbox sees "
			      "(the command could connect to it)", path, op->opt, op->src);
	for (int fd = 0; fd < 3 && a->cmd && a->cmd[0]; fd++)
		if (isatty(fd))
			sbx_die_usage("--serve: the first program's %s is a terminal, which never enters the sandbox: "
				      "redirect it (for example >init.log 2>&1 </dev/null), or run the program with "
				      "sbx-ns --join --pty once the sandbox is ready",
				      fd == 0 ? "stdin" : fd == 1 ? "stdout" : "stderr");
	if (a->ready_port && p->net != NET_LOOPBACK && p->net != NET_BROKER)
		sbx_die_usage("--ready-port needs the sandbox's own loopback: --net loopback or --net broker");
}

/* Just before the clone: the channel to pid 1 and the socket, bound now
 * (mode 0600) and listened on once the sandbox is ready. */
void ns_serve_prepare(struct ns_run *r)
{
	struct ns_serve *s;
	int sp[2];
	mode_t old;
	char *slash, via[64];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	r->x.ctl_fd = r->x.ctl_out = -1;
	if (!r->a->serve)
		return;
	s = r->x.serve = sbx_need(calloc(1, sizeof *s));
	s->lfd = -1;
	s->next_id = 1;
	for (size_t i = 0; i < NS_SERVE_CLIENTS; i++)
		s->cl[i].fd = -1;
	s->path = sbx_need(strdup(r->a->serve));
	slash = strrchr(s->path, '/');
	s->name = slash + 1;
	*slash = '\0';
	s->dirfd = open(slash == s->path ? "/" : s->path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	*slash = '/';
	if (s->dirfd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open the directory of %s", s->path);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create the channel to the sandbox");
	r->x.ctl_fd = sp[1];
	r->x.ctl_out = s->chan = sp[0];
	s->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->lfd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create the control socket");
	/* Through the directory checked above, never its name again. */
	snprintf(via, sizeof via, "/proc/self/fd/%d/", s->dirfd);
	if (strlen(via) + strlen(s->name) >= sizeof sa.sun_path)
		sbx_die_usage("--serve: invalid path '%s': too long for a socket", s->path);
	memcpy(sa.sun_path, via, strlen(via));
	memcpy(sa.sun_path + strlen(via), s->name, strlen(s->name) + 1);
	old = umask(0177);
	if (bind(s->lfd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int e = errno;
		umask(old);
		errno = e;
		sbx_die_errno(e == EADDRINUSE ? SBX_EXIT_USAGE : SBX_EXIT_SYS, "unable to bind the control socket %s",
			      s->path);
	}
	umask(old);
	if (listen(s->lfd, 64) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to listen on %s", s->path);
}

/* Everything sbx made on the host for serving: the socket's name. */
void ns_serve_cleanup(struct ns_run *r)
{
	struct ns_serve *s = r->x.serve;

	if (!s)
		return;
	if (s->name)
		unlinkat(s->dirfd, s->name, 0);
	s->name = NULL;
}

static void status_line(const struct ns_run *r, const char *event, const struct job *j, int code)
{
	struct sbx_json js;

	if (r->a->status_fd < 0)
		return;
	sbx_json_begin(&js, NS_PROG, event);
	if (j) {
		sbx_json_uint(&js, "id", j->id);
		sbx_json_int(&js, "pid", j->pid);
	}
	if (code >= 0)
		sbx_json_int(&js, "code", code);
	if (j && !strcmp(event, "command"))
		sbx_json_str(&js, "argv", j->show);
	if (j && !strcmp(event, "command") && j->grant)
		sbx_json_str(&js, "grant", j->grant == SBX_GRANT_KIND_PLAN ? "plan" : "argv-only");
	sbx_json_write(&js, r->a->status_fd);
}

static struct job *find_job(struct ns_serve *s, uint32_t id)
{
	for (size_t i = 0; i < NS_SERVE_JOBS; i++)
		if (s->jobs[i].state != J_FREE && s->jobs[i].id == id)
			return &s->jobs[i];
	return NULL;
}

/* A slot for a new job: a free one, else the oldest ended one nobody waits for. */
static struct job *new_job(struct ns_serve *s)
{
	struct job *old = NULL;
	size_t live = 0;

	for (size_t i = 0; i < NS_SERVE_JOBS; i++)
		if (s->jobs[i].state == J_STARTING || s->jobs[i].state == J_RUNNING)
			live++;
	if (live >= NS_SERVE_LIVE)
		return NULL;
	for (size_t i = 0; i < NS_SERVE_JOBS; i++) {
		struct job *j = &s->jobs[i];
		if (j->state == J_FREE)
			return j;
		if (j->state == J_ENDED && j->client < 0 && (!old || j->id < old->id))
			old = j;
	}
	return old;
}

static void drop_client(struct ns_serve *s, int ci)
{
	struct client *c = &s->cl[ci];

	if (c->fd < 0)
		return;
	close(c->fd);
	c->fd = -1;
	for (size_t i = 0; i < NS_SERVE_JOBS; i++)
		if (s->jobs[i].state != J_FREE && s->jobs[i].client == ci)
			s->jobs[i].client = -1;
	c->job = 0;
	c->stop = 0;
	c->refused = 0;
}

static void to_pid1(struct ns_run *r, const struct ns_wire *w, const char *strs, size_t len, const int *fds,
		    size_t nfds)
{
	struct iovec iov[2] = { { (void *)w, sizeof *w }, { (void *)strs, len } };
	union { struct cmsghdr h; char b[CMSG_SPACE(sizeof(int) * 4)]; } u;
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };

	if (nfds) {
		memset(&u, 0, sizeof u);
		m.msg_control = u.b;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *h = CMSG_FIRSTHDR(&m);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(h), fds, sizeof(int) * nfds);
	}
	/* pid 1 reads its channel without waiting on anything: a full buffer
	 * means it is gone or stuck, and the sandbox with it. */
	if (sendmsg(r->x.serve->chan, &m, MSG_NOSIGNAL) < 0 && errno != EINTR) {
		sbx_warn_errno("unable to reach the sandbox's pid 1");
		r->x.serve->pid1_gone = 1;
	}
}

/* One value after KEY= of a request word, or NULL. */
static const char *key(const char *word, const char *k)
{
	size_t n = strlen(k);

	return !strncmp(word, k, n) && word[n] == '=' ? word + n + 1 : NULL;
}

static void refuse(struct ns_serve *s, int ci, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void refuse(struct ns_serve *s, int ci, int code, const char *fmt, ...)
{
	char buf[SBX_GRANT_WHY_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	say(s->cl[ci].fd, "error %d %s", code, buf);
	drop_client(s, ci);
}

/* The escaped argv for the job list and the status line. */
static void show_argv(char *out, size_t sz, char **argv, size_t n)
{
	size_t k = 0;

	out[0] = '\0';
	for (size_t i = 0; i < n && k + 4 < sz; i++) {
		char esc[JOB_SHOW];
		sbx_quote(esc, sizeof esc, argv[i], strlen(argv[i]), 64, SBX_QUOTE_TEXT);
		k += (size_t)snprintf(out + k, sz - k, "%s%s", i ? " " : "", esc);
	}
}

/* A granted command's stdin: the client's sealed copy (join.c), a file
 * in memory, which the outer copies whole (never waiting on a writer) into
 * a sealed file of its own, so the bytes hashed are the bytes the command
 * reads. The copy, or -1 with the exit code and message. */
static int grant_stdin(int fd, unsigned char sha[SBX_SHA256_LEN], int *code, char *why, size_t n)
{
	struct stat st;
	int m;

	*code = SBX_EXIT_USAGE;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || fcntl(fd, F_GET_SEALS) < 0)
		return snprintf(why, n, "invalid request: a granted command's stdin is a file in memory "
				"(sbx-ns --join --grant-fd sends a sealed copy of its own)"), -1;
	if ((uint64_t)st.st_size > NS_GRANT_STDIN_MAX || (m = sbx_grant_stdin(fd, NS_GRANT_STDIN_MAX, sha)) < 0) {
		if ((uint64_t)st.st_size > NS_GRANT_STDIN_MAX || errno == EFBIG)
			return snprintf(why, n, "--grant-fd: stdin is larger than %llu MiB, the most a granted "
					"command of a living sandbox reads", NS_GRANT_STDIN_MAX >> 20), -1;
		*code = SBX_EXIT_SYS;
		return snprintf(why, n, "unable to copy the command's stdin: %s", strerror(errno)), -1;
	}
	return m;
}

/* --join --dry-run: the plan of this command in this sandbox, the document
 * a grant for it is made from (sbx-check grant --plan), in a file in
 * memory; its grant, if one came, checked and not used. */
static void send_plan(struct ns_serve *s, int ci, const struct ns_grant_req *q)
{
	int m = memfd_create("sbx-plan", MFD_CLOEXEC);

	if (m < 0 || sbx_write_all(m, q->doc, q->doclen) < 0 || sbx_write_all(m, "\n", 1) < 0 ||
	    lseek(m, 0, SEEK_SET) != 0) {
		refuse(s, ci, SBX_EXIT_SYS, "unable to write the plan: %s", strerror(errno));
	} else {
		sbx_send_fds(s->cl[ci].fd, "plan", 4, &m, 1);
		drop_client(s, ci);
	}
	if (m >= 0)
		close(m);
}

/* Start a command: from a client (ci >= 0) or the first program (ci < 0,
 * the outer's own stdio); or, plan, only show its plan (--join --dry-run). */
static void start(struct ns_run *r, int ci, char **words, size_t nw, const int *fds, size_t nfds, int plan)
{
	struct ns_serve *s = r->x.serve;
	const struct ns_args *a = r->a;
	struct ns_wire w = { .kind = 'R' };
	const char *cwd = "", *out = NULL, *err = NULL, *v, *grant = NULL;
	char **env = NULL, **argv = NULL;
	size_t nenv = 0, nbase, nargv = 0, i, len = 0;
	uint64_t timeout = 0, memory = 0, pids = 0, cpu = 0;
	int detach = 0, all[4], gfd = -1, code;
	struct ns_grant_req q;
	static char gwhy[SBX_GRANT_WHY_MAX];
	struct job *j = NULL;
	char *buf;

	memset(&q, 0, sizeof q);
#define BAD(...) do { if (ci >= 0) refuse(s, ci, SBX_EXIT_USAGE, __VA_ARGS__); free(env); return; } while (0)
	for (char **e = r->p->env; *e; e++)
		nenv++;
	nbase = nenv;
	env = sbx_need(calloc(nenv + NS_WIRE_ARGS + 1, sizeof *env));
	memcpy(env, r->p->env, nenv * sizeof *env);
	for (i = 0; i < nw && strcmp(words[i], "--"); i++) {
		if ((v = key(words[i], "cwd"))) {
			if (*v != '/')
				BAD("--cwd: invalid path '%s': not absolute", v);
			cwd = v;
		} else if ((v = key(words[i], "env"))) {
			const char *why = ns_env_refused(a, r->p, v), *eq = strchr(v, '=');
			size_t k;
			if (why)
				BAD("--setenv: invalid variable '%s': %s", v, why);
			for (k = 0; k < nenv; k++)
				if (!strncmp(env[k], v, (size_t)(eq - v) + 1))
					break;
			if (k < nenv && k >= nbase)
				BAD("--setenv: variable %.*s given twice", (int)(eq - v), v);
			if (k == nenv) {
				if (nenv >= NS_WIRE_ARGS)
					BAD("--setenv: more than %d variables", NS_WIRE_ARGS);
				nenv++;
			}
			env[k] = (char *)v;
		} else if ((v = key(words[i], "timeout"))) {
			const char *why = sbx_parse_u64(v, 1, 7ULL * 24 * 3600 * 1000, &timeout);
			if (why)
				BAD("--timeout: invalid value '%s': %s", v, why);
		} else if ((v = key(words[i], "pty"))) {
			unsigned rows = 0, cols = 0;
			if (sscanf(v, "%5ux%5u", &rows, &cols) != 2 || rows > 9999 || cols > 9999)
				BAD("--pty: invalid window '%s'", v);
			w.flags |= NS_RUN_PTY;
			w.rows = (uint16_t)rows;
			w.cols = (uint16_t)cols;
		} else if ((v = key(words[i], "memory"))) {
			const char *why = sbx_parse_size(v, 1ULL << 50, &memory);
			if (why)
				BAD("--memory: invalid size '%s': %s", v, why);
		} else if ((v = key(words[i], "pids"))) {
			const char *why = sbx_parse_u64(v, 1, 4194304, &pids);
			if (why)
				BAD("--pids: invalid value '%s': %s", v, why);
		} else if ((v = key(words[i], "cpu"))) {
			const char *why = sbx_parse_percent(v, 102400, &cpu);
			if (why)
				BAD("--cpu: invalid value '%s': %s", v, why);
		} else if ((v = key(words[i], "detach"))) {
			detach = 1;
		} else if ((v = key(words[i], "out"))) {
			out = v;
		} else if ((v = key(words[i], "err"))) {
			err = v;
		} else if ((v = key(words[i], "grant"))) {
			/* the text of a grant (sbx_grant_parse takes it apart) */
			if (grant)
				BAD("invalid request: two grants");
			grant = v;
		} else {
			BAD("invalid request: unknown field '%.40s'", words[i]);
		}
	}
	if (i >= nw || i + 1 >= nw)
		BAD("missing program");
	argv = words + i + 1;
	nargv = nw - i - 1;
	if (nargv > NS_WIRE_ARGS)
		BAD("too many arguments (at most %d)", NS_WIRE_ARGS);
	if (!*argv[0])
		BAD("empty program name");
	if (!out != !err)
		BAD("--stdout and --stderr go together");
	if (out && (*out != '/' || *err != '/'))
		BAD("--stdout/--stderr: invalid path: not absolute");
	if (out && !detach)
		BAD("--stdout and --stderr are for --detach");
	if (detach && (w.flags & NS_RUN_PTY))
		BAD("--detach and --pty are exclusive");
	if (out)
		w.flags |= NS_RUN_FILES;
	if ((memory || pids || cpu) && a->cgroup_fd < 0)
		BAD("--memory, --pids and --cpu need a sandbox with cgroups of its own "
		    "(sbx-cgroup --cgroup-fd N ... sbx-ns --serve PATH --cgroup-fd N)");
	if (plan && (w.flags || detach || memory || pids || cpu))
		BAD("--dry-run shows a command's plan: no --pty, --detach, --stdout, --stderr, --memory, --pids or --cpu");
	if (plan ? nfds > 1 : nfds != (w.flags & (NS_RUN_PTY | NS_RUN_FILES) ? 0u : 3u))
		BAD("invalid request: %zu fds with it", nfds);
	for (i = 0; i < nfds; i++)
		if (isatty(fds[i]))
			BAD("fd %zu is a terminal: a terminal never enters the sandbox (--pty gives the command one of its own)", i);
	if (grant && r->p->grant_key && (w.flags & NS_RUN_PTY))
		BAD("--pty: a granted command gets no terminal, since its grant binds its stdin: redirect its "
		    "stdin, stdout and stderr");
	if (!plan && !(j = new_job(s))) {
		if (ci >= 0)
			refuse(s, ci, SBX_EXIT_SYS, "the sandbox runs %d commands already: wait for one to end",
			       NS_SERVE_LIVE);
		free(env);
		return;
	}
#undef BAD
#define NO(code_, ...) do { \
		if (ci >= 0) \
			refuse(s, ci, (code_), __VA_ARGS__); \
		if (gfd >= 0) \
			close(gfd); \
		ns_grant_request_end(&q); \
		free(env); \
		return; \
	} while (0)
	/* cwd, argv, "", env, "", [out, err], [the granted program] */
	len = strlen(cwd) + 1 + 1 + 1;
	for (i = 0; i < nargv; i++)
		len += strlen(argv[i]) + 1;
	for (i = 0; i < nenv; i++)
		len += strlen(env[i]) + 1;
	if (out)
		len += strlen(out) + strlen(err) + 2;
	if (len > NS_WIRE_MAX)
		NO(SBX_EXIT_USAGE, "request too large (at most %d bytes)", NS_WIRE_MAX);
	/* The grant, last: a single-use one is used only by a command that
	 * starts (or by nothing: a dry run). */
	q.argv = argv;
	q.env = env;
	q.search = ns_env_search(env);
	q.cwd = *cwd ? cwd : NULL;
	q.timeout_ms = timeout;
	q.text = grant;
	q.len = grant ? strlen(grant) : 0;
	q.dry_run = plan;
	if (grant && r->p->grant_key) {
		if (nfds) {
			gfd = grant_stdin(fds[0], q.stdin_sha, &code, gwhy, sizeof gwhy);
			if (gfd < 0)
				NO(code, "%s", gwhy);
		} else {
			/* a job's stdin is /dev/null (--stdout/--stderr), a dry run's nothing */
			struct sbx_sha256 c;
			sbx_sha256_init(&c);
			sbx_sha256_final(&c, q.stdin_sha);
		}
	}
	if ((code = ns_grant_request(r, &q, gwhy, sizeof gwhy)))
		NO(code, "%s", gwhy);
	if (q.kind == SBX_GRANT_KIND_ARGV && ci >= 0)
		say(s->cl[ci].fd, "warning %s", ns_grant_argv_only); /* as a one-shot run warns */
	if (plan) {
		if (ci >= 0)
			send_plan(s, ci, &q);
		if (gfd >= 0)
			close(gfd);
		ns_grant_request_end(&q);
		free(env);
		return;
	}
	if (q.kind == SBX_GRANT_KIND_PLAN) {
		/* The command's process executes only this file (grant.c). */
		if (!q.prog.found)
			NO(SBX_EXIT_NOTFOUND, "unable to find %s", argv[0]);
		w.flags |= NS_RUN_PROG;
		w.prog_dev = (uint64_t)q.prog.dev;
		w.prog_ino = (uint64_t)q.prog.ino;
		w.prog_size = (int64_t)q.prog.size;
		w.prog_mtime[0] = (int64_t)q.prog.mtime.tv_sec;
		w.prog_mtime[1] = (int64_t)q.prog.mtime.tv_nsec;
		w.prog_ctime[0] = (int64_t)q.prog.ctime.tv_sec;
		w.prog_ctime[1] = (int64_t)q.prog.ctime.tv_nsec;
		memcpy(w.prog_sha, q.prog.sha, sizeof w.prog_sha);
		len += strlen(q.prog.path) + 1;
		if (len > NS_WIRE_MAX)
			NO(SBX_EXIT_USAGE, "request too large (at most %d bytes)", NS_WIRE_MAX);
	}
#undef NO
	buf = sbx_need(malloc(len));
	{
		size_t k = 0;
#define PUT(str) do { size_t l_ = strlen(str) + 1; memcpy(buf + k, (str), l_); k += l_; } while (0)
		PUT(cwd);
		for (i = 0; i < nargv; i++)
			PUT(argv[i]);
		PUT("");
		for (i = 0; i < nenv; i++)
			PUT(env[i]);
		PUT("");
		if (out) {
			PUT(out);
			PUT(err);
		}
		if (w.flags & NS_RUN_PROG)
			PUT(q.prog.path);
#undef PUT
	}
	memset(j, 0, sizeof *j);
	j->state = J_STARTING;
	j->id = w.id = s->next_id++;
	j->grant = q.kind;
	r->x.serve_next_id = s->next_id;
	memcpy(all, fds, nfds * sizeof *fds);
	if (gfd >= 0)
		all[0] = gfd;
	if (memory || pids || cpu) {
		char why[300];
		int c = ns_cg_command(r, j->id, memory, pids, cpu, why, sizeof why);
		if (c < 0) {
			j->state = J_FREE;
			free(buf);
			free(env);
			if (gfd >= 0)
				close(gfd);
			ns_grant_request_end(&q);
			if (ci >= 0)
				refuse(s, ci, SBX_EXIT_SYS, "%s", why);
			return;
		}
		all[nfds++] = c;
		w.flags |= NS_RUN_CGROUP;
		j->cg = 1;
	}
	j->client = detach ? -1 : ci;
	j->detached = detach || ci < 0; /* the first program has no client to lose */
	j->deadline = timeout ? sbx_now_ms() + timeout : 0;
	show_argv(j->show, sizeof j->show, argv, nargv);
	w.nargv = (uint32_t)nargv;
	w.nenv = (uint32_t)nenv;
	to_pid1(r, &w, buf, len, all, nfds);
	if (j->cg)
		close(all[nfds - 1]);
	if (gfd >= 0)
		close(gfd);
	ns_grant_request_end(&q);
	free(buf);
	free(env);
	if (ci >= 0) {
		if (detach) {
			say(s->cl[ci].fd, "job %u", j->id);
			drop_client(s, ci);
		} else {
			s->cl[ci].job = j->id;
		}
	} else {
		s->init_id = (int)j->id;
	}
}

/* A command's command-exit line; why, if any, a key that is true. */
static void exit_line(const struct ns_run *r, const struct job *j, const char *why)
{
	struct sbx_json js;

	if (r->a->status_fd < 0)
		return;
	sbx_json_begin(&js, NS_PROG, "command-exit");
	sbx_json_uint(&js, "id", j->id);
	sbx_json_int(&js, "pid", j->pid);
	sbx_json_int(&js, "code", j->code);
	if (why)
		sbx_json_bool(&js, why, 1);
	sbx_json_write(&js, r->a->status_fd);
}

/* The outcome of an ended job, as its client gets it. */
static void job_ended(struct ns_run *r, struct job *j, int st)
{
	struct ns_serve *s = r->x.serve;
	int sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;

	int oom = 0, pids_hit = 0;

	j->state = J_ENDED;
	j->status = st;
	j->code = j->timed_out ? SBX_EXIT_TIMEOUT : sbx_wait_code(st);
	if (j->cg) {
		ns_cg_command_end(r, j->id, &oom, &pids_hit);
		if (oom)
			j->code = SBX_EXIT_OOM;
		else if (pids_hit)
			j->code = SBX_EXIT_LOST;
		j->cg = 0;
	}
	/* The deny-write check after every command: a protected path the
	 * command (or anything still running) made live fails this command. */
	if (ns_deny_between(r) < 0)
		j->code = SBX_EXIT_POLICY;
	exit_line(r, j, oom ? "oom" : pids_hit ? "pids_limit" : NULL);
	if (j->client >= 0) {
		struct client *c = &s->cl[j->client];
		say(c->fd, "exit %d %d%s", j->code, j->timed_out ? SIGKILL : sig,
		    oom ? " its cgroup ran out of memory (--memory): the OOM killer ended it" :
		    pids_hit ? " it reached its cgroup's process limit (--pids): killed with what it started" :
		    j->timed_out ? " its --timeout expired: killed with its process group" : "");
		drop_client(s, j->client);
	}
	if ((int)j->id == s->init_id && !s->stopping && j->code != 0) {
		sbx_warn("the first program (%s) exited %d: the sandbox stops", j->show, j->code);
		s->stopping = 1;
		s->stop_code = j->code;
	}
}

static int from_pid1(struct ns_run *r)
{
	struct ns_serve *s = r->x.serve;
	struct ns_wire w;
	int fds[SBX_FDPASS_MAX + 1], cut;
	size_t nfds;
	ssize_t got = sbx_recv_fds(s->chan, &w, sizeof w, MSG_DONTWAIT, fds, 2, &nfds, &cut);
	struct job *j;
	int fd = nfds == 1 ? fds[0] : -1;

	if (got < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (got != (ssize_t)sizeof w) {
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		if (got <= 0)
			s->pid1_gone = 1;
		return got <= 0 ? -1 : 0;
	}
	if (w.kind == 'S' && w.id == 0) {
		struct sbx_json js;
		s->up = 1;
		if (r->a->status_fd >= 0) {
			sbx_json_begin(&js, NS_PROG, "started");
			if (r->p->landlock_abi > 0)
				sbx_json_int(&js, "landlock", r->p->landlock_abi);
			else
				sbx_json_str(&js, "landlock", "none");
			sbx_json_bool(&js, "seccomp", 1);
			ns_net_status(&js, r->p, "handed to the broker");
			sbx_json_bool(&js, "hidepid", w.value);
			sbx_json_str(&js, "mounts", sbx_mnt_api_name(r->p->mnt_api));
			sbx_json_str(&js, "userns", "blocked");
			sbx_json_uint(&js, "uid", r->p->uid);
			sbx_json_uint(&js, "gid", r->p->gid);
			sbx_json_str(&js, "serve", s->path);
			sbx_json_write(&js, r->a->status_fd);
		}
	} else if (w.kind == 'c' && w.id == 0) {
		/* the readiness probe */
		if (w.value == 0) {
			s->ready = 1;
		} else {
			s->ready_asked = 0;
			s->ready_retry = sbx_now_ms() + READY_RETRY_MS;
		}
	} else if ((j = find_job(s, w.id))) {
		if (w.kind == 'S' && j->state == J_STARTING) {
			j->state = J_RUNNING;
			j->pid = w.value;
			status_line(r, "command", j, -1);
			if (j->client >= 0) {
				sbx_send_fds(s->cl[j->client].fd, "started", 7, &fd, fd >= 0 ? 1 : 0);
			} else if (!j->detached) {
				/* its client went away while it was starting */
				struct ns_wire k = { .kind = 'K', .id = j->id, .value = SIGKILL };
				to_pid1(r, &k, NULL, 0, NULL, 0);
			}
		} else if (w.kind == 'E' && j->state == J_STARTING) {
			j->state = J_ENDED;
			j->code = SBX_EXIT_SYS;
			if (j->client >= 0)
				refuse(s, j->client, SBX_EXIT_SYS, "unable to start the command in the sandbox: %s",
				       strerror(w.value));
			if ((int)j->id == s->init_id && !s->stopping) {
				s->stopping = 1;
				s->stop_code = SBX_EXIT_SYS;
			}
		} else if (w.kind == 'X' && j->state != J_ENDED) {
			job_ended(r, j, w.value);
		} else if (w.kind == 'c' && j->state == J_STARTING) {
			int ci = j->client;
			j->state = J_FREE;
			if (ci >= 0 && w.value == 0 && fd >= 0)
				sbx_send_fds(s->cl[ci].fd, "conn", 4, &fd, 1);
			else if (ci >= 0)
				say(s->cl[ci].fd, "error %d unable to connect to 127.0.0.1:%d in the sandbox: %s",
				    SBX_EXIT_SYS, j->pid, strerror(w.value ? w.value : EPROTO));
			if (ci >= 0)
				drop_client(s, ci);
		}
	}
	for (size_t i = 0; i < nfds; i++)
		close(fds[i]);
	return 0;
}

static void list_jobs(struct ns_serve *s, int ci)
{
	static const char *const names[] = { "free", "starting", "running", "ended" };
	static char buf[NS_SERVE_JOBS * (JOB_SHOW + 48)];
	size_t k = (size_t)snprintf(buf, sizeof buf, "jobs\n");

	for (size_t i = 0; i < NS_SERVE_JOBS; i++) {
		const struct job *j = &s->jobs[i];
		if (j->state == J_FREE || j->state == J_STARTING)
			continue;
		if (j->state == J_ENDED)
			k += (size_t)snprintf(buf + k, sizeof buf - k, "%u %s %d %s\n", j->id, names[j->state], j->code, j->show);
		else
			k += (size_t)snprintf(buf + k, sizeof buf - k, "%u %s - %s\n", j->id, names[j->state], j->show);
	}
	send(s->cl[ci].fd, buf, k, MSG_NOSIGNAL | MSG_DONTWAIT);
	drop_client(s, ci);
}

static struct job *named_job(struct ns_serve *s, int ci, char **words, size_t nw)
{
	const char *v = NULL;
	uint64_t id;
	struct job *j;

	for (size_t i = 0; i < nw; i++)
		if (key(words[i], "job"))
			v = key(words[i], "job");
	if (!v || sbx_parse_u64(v, 1, UINT32_MAX, &id)) {
		refuse(s, ci, SBX_EXIT_USAGE, "invalid job id '%.20s'", v ? v : "");
		return NULL;
	}
	if (!(j = find_job(s, (uint32_t)id)) || j->state == J_STARTING) {
		refuse(s, ci, SBX_EXIT_USAGE, "no job %u in this sandbox (sbx-ns --join PATH --jobs lists them)",
		       (unsigned)id);
		return NULL;
	}
	return j;
}

/* One request from client ci: words[0] is the verb. */
static void request(struct ns_run *r, int ci, char **words, size_t nw, const int *fds, size_t nfds)
{
	struct ns_serve *s = r->x.serve;
	struct job *j;
	uint64_t n;
	const char *v = NULL;

	if (s->stopping) {
		refuse(s, ci, SBX_EXIT_LOST, "the sandbox is stopping");
		return;
	}
	if (strcmp(words[0], "run") && strcmp(words[0], "plan") && nfds) {
		refuse(s, ci, SBX_EXIT_USAGE, "invalid request: fds with %.10s", words[0]);
		return;
	}
	if (!strcmp(words[0], "run") || !strcmp(words[0], "plan")) {
		start(r, ci, words + 1, nw - 1, fds, nfds, words[0][0] == 'p');
	} else if (!strcmp(words[0], "jobs")) {
		list_jobs(s, ci);
	} else if (!strcmp(words[0], "stop")) {
		s->stopping = 1;
		s->cl[ci].stop = 1;
	} else if (!strcmp(words[0], "wait")) {
		if (!(j = named_job(s, ci, words + 1, nw - 1)))
			return;
		if (j->state == J_ENDED) {
			say(s->cl[ci].fd, "exit %d %d", j->code, WIFSIGNALED(j->status) ? WTERMSIG(j->status) : 0);
			drop_client(s, ci);
		} else if (j->client >= 0) {
			refuse(s, ci, SBX_EXIT_USAGE, "job %u has a client already", j->id);
		} else {
			j->client = ci;
			s->cl[ci].job = j->id;
		}
	} else if (!strcmp(words[0], "kill")) {
		struct ns_wire w = { .kind = 'K', .value = SIGTERM };
		if (!(j = named_job(s, ci, words + 1, nw - 1)))
			return;
		for (size_t i = 1; i < nw; i++)
			if (key(words[i], "signal"))
				v = key(words[i], "signal");
		if (v && sbx_parse_u64(v, 1, 64, &n)) {
			refuse(s, ci, SBX_EXIT_USAGE, "invalid signal '%.20s'", v);
			return;
		}
		if (v)
			w.value = (int32_t)n;
		w.id = j->id;
		if (j->state == J_RUNNING)
			to_pid1(r, &w, NULL, 0, NULL, 0);
		say(s->cl[ci].fd, "exit 0 0");
		drop_client(s, ci);
	} else if (!strcmp(words[0], "connect")) {
		struct ns_wire w = { .kind = 'C' };
		for (size_t i = 1; i < nw; i++)
			if (key(words[i], "port"))
				v = key(words[i], "port");
		if (!v || sbx_parse_u64(v, 1, 65535, &n)) {
			refuse(s, ci, SBX_EXIT_USAGE, "--connect: invalid port '%.20s'", v ? v : "");
			return;
		}
		if (r->p->net != NET_LOOPBACK && r->p->net != NET_BROKER) {
			refuse(s, ci, SBX_EXIT_USAGE, "--connect needs a sandbox with its own loopback "
			       "(--net loopback or --net broker)");
			return;
		}
		if (!(j = new_job(s))) {
			refuse(s, ci, SBX_EXIT_SYS, "the sandbox is busy: wait for a command to end");
			return;
		}
		/* A connection is a job slot of its own while pid 1 dials. */
		memset(j, 0, sizeof *j);
		j->state = J_STARTING;
		j->id = w.id = NS_CONN_ID | s->next_conn++;
		j->client = ci;
		j->pid = (pid_t)n;
		snprintf(j->show, sizeof j->show, "connect %u", (unsigned)n);
		s->cl[ci].job = j->id;
		w.value = (int32_t)n;
		to_pid1(r, &w, NULL, 0, NULL, 0);
	} else {
		refuse(s, ci, SBX_EXIT_USAGE, "invalid request: unknown verb '%.20s'", words[0]);
	}
}

/* Client ci sent something: a request, a signal for its command, or EOF. */
static void from_client(struct ns_run *r, int ci)
{
	static char msg[NS_WIRE_MAX + 1];
	struct ns_serve *s = r->x.serve;
	struct client *c = &s->cl[ci];
	int fds[SBX_FDPASS_MAX + 1], cut;
	size_t nfds, nw = 0;
	ssize_t got = sbx_recv_fds(c->fd, msg, sizeof msg - 1, MSG_DONTWAIT, fds, 4, &nfds, &cut);
	char **words;
	struct job *j = c->job ? find_job(s, c->job) : NULL;

	if (got < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (got <= 0) {
		/* The client is gone: so is its command. */
		if (j && j->state == J_RUNNING && !j->detached) {
			struct ns_wire w = { .kind = 'K', .id = j->id, .value = SIGKILL };
			to_pid1(r, &w, NULL, 0, NULL, 0);
		}
		drop_client(s, ci);
		return;
	}
	msg[got] = '\0';
	if (c->refused) {
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		refuse(s, ci, SBX_EXIT_POLICY, "only uid %u and root may join this sandbox", (unsigned)r->p->caller_uid);
		return;
	}
	if (j) {
		/* Attached: only "signal N" for its command. */
		uint64_t sig;
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		if (j->state == J_RUNNING && !strncmp(msg, "signal ", 7) && !sbx_parse_u64(msg + 7, 1, 64, &sig)) {
			struct ns_wire w = { .kind = 'K', .id = j->id, .value = (int32_t)sig };
			to_pid1(r, &w, NULL, 0, NULL, 0);
		}
		return;
	}
	if (cut || (size_t)got >= sizeof msg - 1 || msg[got - 1] != '\0') {
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		refuse(s, ci, SBX_EXIT_USAGE, cut ? "invalid request: too many fds" :
		       (size_t)got >= sizeof msg - 1 ? "request too large" : "invalid request: not NUL-terminated words");
		return;
	}
	/* (one more: argv ends with a NULL) */
	words = sbx_need(calloc(NS_WIRE_ARGS * 2 + 16 + 1, sizeof *words));
	for (char *p = msg; p < msg + got; p += strlen(p) + 1) {
		if (nw >= NS_WIRE_ARGS * 2 + 16) {
			refuse(s, ci, SBX_EXIT_USAGE, "invalid request: too many words");
			goto out;
		}
		words[nw++] = p;
	}
	request(r, ci, words, nw, fds, nfds);
out:
	free(words);
	for (size_t i = 0; i < nfds; i++)
		close(fds[i]);
}

static void accept_client(struct ns_run *r)
{
	struct ns_serve *s = r->x.serve;
	struct ucred cr;
	socklen_t crlen = sizeof cr;
	int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	size_t i;

	if (fd < 0)
		return;
	int other = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0 ||
		    (cr.uid != r->p->caller_uid && cr.uid != 0);

	if (other)
		sbx_warn("refused a client of uid %d on %s: only uid %u and root may join this sandbox",
			 crlen == sizeof cr ? (int)cr.uid : -1, s->path, (unsigned)r->p->caller_uid);
	/* The loop accepts only while a slot is free (the rest wait in the
	 * listen backlog, then in connect): never reached full. */
	for (i = 0; i < NS_SERVE_CLIENTS && s->cl[i].fd >= 0; i++)
		;
	if (i == NS_SERVE_CLIENTS) {
		close(fd);
		return;
	}
	/* The refusal answers its request (closing on an unread request
	 * would reset the connection before the client reads why). */
	s->cl[i].refused = other;
	s->cl[i].fd = fd;
	s->cl[i].uid = cr.uid;
	s->cl[i].job = 0;
	s->cl[i].stop = 0;
}

/* The first program, with the outer's own stdio. */
static void start_init(struct ns_run *r)
{
	static const int stdio[3] = { 0, 1, 2 };
	size_t n = 0;
	char **words;

	while (r->a->cmd[n])
		n++;
	words = sbx_need(calloc(n + 2, sizeof *words));
	words[0] = "--";
	memcpy(words + 1, r->a->cmd, n * sizeof *words);
	start(r, -1, words, n + 1, stdio, 3, 0);
	free(words);
}

/* The serving outer's loop, until the stop; returns the exit code. */
int ns_serve_outer(struct ns_run *r, pid_t pid)
{
	struct ns_serve *s = r->x.serve;
	struct pollfd pf[4 + NS_SERVE_CLIENTS + NS_SERVE_LIVE + 2];
	int cmap[NS_SERVE_CLIENTS];
	struct signalfd_siginfo si;
	sigset_t set;
	int sfd, st = 0, code, deny_live, ready_said = 0, pid1_dead = 0;
	uint64_t life = r->a->timeout_ms ? sbx_now_ms() + r->a->timeout_ms : 0;
	char fatal[256] = "";

	s->ready_deadline = sbx_now_ms() + (r->a->ready_ms ? r->a->ready_ms : 30000);
	ns_wait_signals(&set);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0) {
		kill(pid, SIGKILL);
		sbx_die_errno(SBX_EXIT_SYS, "unable to create signalfd");
	}
	if (r->a->cmd && r->a->cmd[0])
		start_init(r);
	while (!s->stopping && !pid1_dead) {
		size_t n = 0, nc = 0, nn;
		int wait_ms = 1000, rc;
		uint64_t now = sbx_now_ms();

		ns_deny_heartbeat(r);
		/* Ready: the first program ended well, then the port answers. */
		if (!s->ready && s->up && (!s->init_id || (find_job(s, (uint32_t)s->init_id) &&
						   find_job(s, (uint32_t)s->init_id)->state == J_ENDED))) {
			if (!r->a->ready_port) {
				s->ready = 1;
			} else if (!s->ready_asked && now >= s->ready_retry) {
				struct ns_wire w = { .kind = 'C', .id = 0, .value = (int32_t)r->a->ready_port };
				to_pid1(r, &w, NULL, 0, NULL, 0);
				s->ready_asked = 1;
			}
		}
		if (!s->ready && now >= s->ready_deadline) {
			s->stopping = 1;
			s->stop_code = SBX_EXIT_LOST;
			double secs = (double)(r->a->ready_ms ? r->a->ready_ms : 30000) / 1000;
			if (r->a->ready_port)
				snprintf(fatal, sizeof fatal, "the sandbox did not become ready within %.3f s: nothing "
					 "accepted a connection on its 127.0.0.1:%u (--ready-port, --ready-timeout)", secs,
					 r->a->ready_port);
			else
				snprintf(fatal, sizeof fatal, "the sandbox did not become ready within %.3f s: the first "
					 "program did not end (--ready-timeout)", secs);
			break;
		}
		if (s->ready && !ready_said) {
			ready_said = 1;
			status_line(r, "ready", NULL, -1);
			if (r->a->ready_fd >= 0) {
				sbx_ready_fd(r->a->ready_fd);
			}
		}
		if (life && now >= life) {
			s->stopping = 1;
			s->stop_code = SBX_EXIT_TIMEOUT;
			snprintf(fatal, sizeof fatal, "the sandbox's --timeout expired: every command was stopped");
			break;
		}
		for (size_t i = 0; i < NS_SERVE_JOBS; i++) {
			struct job *j = &s->jobs[i];
			if (j->state != J_RUNNING || !j->deadline || j->timed_out)
				continue;
			if (now >= j->deadline) {
				struct ns_wire w = { .kind = 'K', .id = j->id, .value = SIGKILL };
				j->timed_out = 1;
				to_pid1(r, &w, NULL, 0, NULL, 0);
			} else if (j->deadline - now < (uint64_t)wait_ms) {
				wait_ms = (int)(j->deadline - now);
			}
		}
		/* Wake for whichever deadline comes first. */
		if (!s->ready && s->ready_retry > now && s->ready_retry - now < (uint64_t)wait_ms)
			wait_ms = (int)(s->ready_retry - now);
		if (!s->ready && s->ready_deadline - now < (uint64_t)wait_ms)
			wait_ms = (int)(s->ready_deadline - now);
		if (life && life - now < (uint64_t)wait_ms)
			wait_ms = (int)(life - now);
		pf[n++] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		pf[n++] = (struct pollfd){ .fd = s->chan, .events = POLLIN };
		pf[n++] = (struct pollfd){ .fd = -1, .events = POLLIN };
		pf[n++] = (struct pollfd){ .fd = ns_net_fd(r), .events = POLLIN };
		for (size_t i = 0; i < NS_SERVE_CLIENTS; i++)
			if (s->cl[i].fd >= 0) {
				cmap[nc++] = (int)i;
				pf[n++] = (struct pollfd){ .fd = s->cl[i].fd, .events = POLLIN };
			}
		/* New clients while a slot is free; the rest wait in connect. */
		if (s->ready && nc < NS_SERVE_CLIENTS)
			pf[2].fd = s->lfd;
		nn = ns_notify_fds(r, pf + n, sizeof pf / sizeof pf[0] - n);
		rc = poll(pf, n + nn, wait_ms);
		if (rc < 0) {
			if (errno == EINTR)
				continue;
			kill(pid, SIGKILL);
			sbx_die_errno(SBX_EXIT_SYS, "unable to poll");
		}
		for (size_t i = 0; i < nn; i++)
			if (pf[n + i].revents)
				ns_notify_handle(r, pf[n + i].fd, pf[n + i].revents);
		if (pf[1].revents)
			from_pid1(r);
		if (pf[3].revents)
			ns_net_handle(r);
		for (size_t i = 0; i < nc; i++)
			if (pf[4 + i].revents && s->cl[cmap[i]].fd == pf[4 + i].fd)
				from_client(r, cmap[i]);
		if (pf[2].revents)
			accept_client(r);
		if (s->pid1_gone)
			pid1_dead = 1;
		if (pf[0].revents & POLLIN && read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
			if (si.ssi_signo == SIGCHLD) {
				if (waitpid(pid, &st, WNOHANG) == pid)
					pid1_dead = 2;
			} else {
				/* SIGTERM, SIGINT, SIGHUP, SIGQUIT: stop. */
				s->stopping = 1;
			}
		}
	}
	/* The stop: every command and job ends with pid 1 (its pid
	 * namespace goes with it), then the end check, then the socket. */
	if (s->lfd >= 0) {
		close(s->lfd);
		s->lfd = -1;
	}
	if (pid1_dead != 2) {
		kill(pid, SIGKILL);
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	/* Collect the ends pid 1 reported before it went. */
	for (int k = 0; k < 4 * NS_SERVE_LIVE; k++) {
		struct pollfd q = { .fd = s->chan, .events = POLLIN };
		if (poll(&q, 1, 0) != 1 || !(q.revents & POLLIN) || from_pid1(r) < 0)
			break;
	}
	close(sfd);
	/* Every command the stop ended: its line too. */
	for (size_t i = 0; i < NS_SERVE_JOBS; i++) {
		struct job *j = &s->jobs[i];
		if (j->state != J_RUNNING || j->id & NS_CONN_ID)
			continue;
		j->state = J_ENDED;
		j->code = SBX_EXIT_LOST;
		exit_line(r, j, pid1_dead && !s->stopping ? "lost" : "stopped");
	}
	ns_cg_teardown(r);
	ns_notify_end(r);
	deny_live = ns_deny_end(r) < 0;
	ns_net_finish(r);
	ns_serve_cleanup(r);
	if (pid1_dead && !s->stopping) {
		s->stop_code = SBX_EXIT_LOST;
		snprintf(fatal, sizeof fatal, "the sandbox was lost: its pid 1 ended (%s)",
			 WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "exited");
	}
	code = deny_live ? SBX_EXIT_POLICY : s->stop_code;
	for (size_t i = 0; i < NS_SERVE_CLIENTS; i++) {
		struct client *c = &s->cl[i];
		if (c->fd < 0)
			continue;
		if (c->stop)
			say(c->fd, "stopped %d", code);
		else if (c->job)
			say(c->fd, "error %d the sandbox %s while the command ran", SBX_EXIT_LOST,
			    pid1_dead && !s->stopping ? "was lost" : "stopped");
		drop_client(s, (int)i);
	}
	if (r->a->status_fd >= 0) {
		struct sbx_json js;
		sbx_json_begin(&js, NS_PROG, "exit");
		sbx_json_int(&js, "code", code);
		if (!ready_said) {
			struct job *ij = s->init_id ? find_job(s, (uint32_t)s->init_id) : NULL;
			/* set up, but the first program or readiness failed */
			sbx_json_str(&js, "stage", !s->up ? "setup" : ij && ij->state == J_ENDED && ij->code ? "init" : "ready");
		}
		if (deny_live)
			sbx_json_str(&js, "error", "deny-write: a protected path is live under its real name");
		else if (*fatal)
			sbx_json_str(&js, "error", fatal);
		sbx_json_write(&js, r->a->status_fd);
	}
	/* The message last, once everything is cleaned up (its exit line
	 * is out already). */
	if (*fatal)
		sbx_die(code, "%s", fatal);
	return code;
}

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
 * This file is the server's life (the path's checks, the socket, the
 * loop, pid 1's reports, the ends of commands, the stop); servereq.c
 * answers the requests; serve.h is what they share.
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
#include "mark.h"
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
#include "serve.h"

int srv_say(int fd, const char *fmt, ...)
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

void srv_status_line(const struct ns_run *r, const char *event, const struct job *j, int code)
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

struct job *srv_find_job(struct ns_serve *s, uint32_t id)
{
	for (size_t i = 0; i < NS_SERVE_JOBS; i++)
		if (s->jobs[i].state != J_FREE && s->jobs[i].id == id)
			return &s->jobs[i];
	return NULL;
}

/* A slot for a new job: a free one, else the oldest ended one nobody waits for. */
struct job *srv_new_job(struct ns_serve *s)
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

void srv_drop_client(struct ns_serve *s, int ci)
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

void srv_to_pid1(struct ns_run *r, const struct ns_wire *w, const char *strs, size_t len, const int *fds,
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


void srv_refuse(struct ns_serve *s, int ci, int code, const char *fmt, ...)
{
	char buf[SBX_GRANT_WHY_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	srv_say(s->cl[ci].fd, "error %d %s", code, buf);
	srv_drop_client(s, ci);
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
	const char *killed = "";

	SBX_MARK("s-ended");
	j->state = J_ENDED;
	j->status = st;
	j->code = j->timed_out ? SBX_EXIT_TIMEOUT : sbx_wait_code(st);
	if (j->cg) {
		ns_cg_command_end(r, j->id, &oom, &pids_hit);
		if (oom == NS_OOM_OWN)
			j->code = SBX_EXIT_OOM;
		else if (pids_hit)
			j->code = SBX_EXIT_LOST;
		j->cg = 0;
	}
	if (oom == NS_OOM_OWN)
		killed = " its cgroup ran out of memory (--memory): the OOM killer ended it";
	else if (pids_hit)
		killed = " it reached its cgroup's process limit (--pids): killed with what it started";
	else if (j->timed_out)
		killed = " its --timeout expired: killed with its process group";
	else if (oom)
		killed = " the OOM killer ended it at a memory limit above its own --memory "
			 "(the sandbox's total, or the host's)";
	/* The deny-write check after every command: a protected path the
	 * command (or anything still running) made live fails this command. */
	if (ns_deny_between(r) < 0)
		j->code = SBX_EXIT_POLICY;
	SBX_MARK("s-deny");
	exit_line(r, j, oom == NS_OOM_OWN ? "oom" : pids_hit ? "pids_limit" : NULL);
	if (j->client >= 0) {
		struct client *c = &s->cl[j->client];
		srv_say(c->fd, "exit %d %d%s", j->code, j->timed_out ? SIGKILL : sig, killed);
		srv_drop_client(s, j->client);
		SBX_MARK("s-replied");
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
		/* The sandbox's root, where every plan's program is looked up
		 * (program.c): kept for the server's life. */
		if (fd >= 0 && r->x.sandbox_root < 0) {
			r->x.sandbox_root = fd;
			nfds = 0;
		}
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
	} else if ((j = srv_find_job(s, w.id))) {
		if (w.kind == 'S' && j->state == J_STARTING) {
			SBX_MARK("s-started");
			j->state = J_RUNNING;
			j->pid = w.value;
			srv_status_line(r, "command", j, -1);
			if (j->client >= 0 && j->detached) {
				/* --detach: its id, now that it runs; the job is
				 * tied to no client from here on */
				srv_say(s->cl[j->client].fd, "job %u", j->id);
				srv_drop_client(s, j->client);
			} else if (j->client >= 0) {
				sbx_send_fds(s->cl[j->client].fd, "started", 7, &fd, fd >= 0 ? 1 : 0);
			} else if (!j->detached) {
				/* its client went away while it was starting */
				struct ns_wire k = { .kind = 'K', .id = j->id, .value = SIGKILL };
				srv_to_pid1(r, &k, NULL, 0, NULL, 0);
			}
		} else if (w.kind == 'E' && j->state == J_STARTING) {
			j->state = J_ENDED;
			j->code = SBX_EXIT_SYS;
			if (j->client >= 0)
				srv_refuse(s, j->client, SBX_EXIT_SYS, "unable to start the command in the sandbox: %s",
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
				srv_say(s->cl[ci].fd, "error %d unable to connect to 127.0.0.1:%d in the sandbox: %s",
				    SBX_EXIT_SYS, j->pid, strerror(w.value ? w.value : EPROTO));
			if (ci >= 0)
				srv_drop_client(s, ci);
		}
	}
	for (size_t i = 0; i < nfds; i++)
		close(fds[i]);
	return 0;
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
	srv_start(r, -1, words, n + 1, stdio, 3, 0);
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
		if (!s->ready && s->up && (!s->init_id || (srv_find_job(s, (uint32_t)s->init_id) &&
						   srv_find_job(s, (uint32_t)s->init_id)->state == J_ENDED))) {
			if (!r->a->ready_port) {
				s->ready = 1;
			} else if (!s->ready_asked && now >= s->ready_retry) {
				struct ns_wire w = { .kind = 'C', .id = 0, .value = (int32_t)r->a->ready_port };
				srv_to_pid1(r, &w, NULL, 0, NULL, 0);
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
			srv_status_line(r, "ready", NULL, -1);
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
				srv_to_pid1(r, &w, NULL, 0, NULL, 0);
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
		wait_ms = ns_net_tick(r, wait_ms);
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
				srv_from_client(r, cmap[i]);
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
	ns_observe_finish(r);
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
			srv_say(c->fd, "stopped %d", code);
		else if (c->job)
			srv_say(c->fd, "error %d the sandbox %s while the command ran", SBX_EXIT_LOST,
			    pid1_dead && !s->stopping ? "was lost" : "stopped");
		srv_drop_client(s, (int)i);
	}
	if (r->a->status_fd >= 0) {
		struct sbx_json js;
		sbx_json_begin(&js, NS_PROG, "exit");
		sbx_json_int(&js, "code", code);
		if (!ready_said) {
			struct job *ij = s->init_id ? srv_find_job(s, (uint32_t)s->init_id) : NULL;
			/* set up, but the first program or readiness failed */
			sbx_json_str(&js, "stage", !s->up ? "setup" : ij && ij->state == J_ENDED && ij->code ? "init" : "ready");
		}
		if (deny_live)
			sbx_json_str(&js, "error", "deny-write: a protected path is live under its real name");
		else if (*fatal)
			sbx_json_str(&js, "error", fatal);
		sbx_json_write(&js, r->a->status_fd);
	}
	ns_observe_end(r, code);
	/* The message last, once everything is cleaned up (its exit line
	 * is out already). */
	if (*fatal)
		sbx_die(code, "%s", fatal);
	return code;
}

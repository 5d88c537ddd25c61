/* What the clients of a living sandbox ask (serve.c has the protocol and
 * the server's life): a command to run (checked: the environment by
 * --setenv's rules, bounds, no terminal fd, the grant; its own cgroup),
 * the plan a grant is issued from, the job list, a wait, a signal, a
 * connection to a port inside, the stop. */
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

/* One value after KEY= of a request word, or NULL. */
const char *srv_key(const char *word, const char *k)
{
	size_t n = strlen(k);

	return !strncmp(word, k, n) && word[n] == '=' ? word + n + 1 : NULL;
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
	if ((uint64_t)st.st_size > SBX_GRANT_STDIN_MAX || (m = sbx_grant_stdin(fd, SBX_GRANT_STDIN_MAX, sha)) < 0) {
		if ((uint64_t)st.st_size > SBX_GRANT_STDIN_MAX || errno == EFBIG)
			return snprintf(why, n, "%s", SBX_GRANT_STDIN_BIG), -1;
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
		srv_refuse(s, ci, SBX_EXIT_SYS, "unable to write the plan: %s", strerror(errno));
	} else {
		sbx_send_fds(s->cl[ci].fd, "plan", 4, &m, 1);
		srv_drop_client(s, ci);
	}
	if (m >= 0)
		close(m);
}

/* Start a command: from a client (ci >= 0) or the first program (ci < 0,
 * the outer's own stdio); or, plan, only show its plan (--join --dry-run). */
void srv_start(struct ns_run *r, int ci, char **words, size_t nw, const int *fds, size_t nfds, int plan)
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
#define BAD(...) do { if (ci >= 0) srv_refuse(s, ci, SBX_EXIT_USAGE, __VA_ARGS__); free(env); return; } while (0)
	for (char **e = r->p->env; *e; e++)
		nenv++;
	nbase = nenv;
	env = sbx_need(calloc(nenv + NS_WIRE_ARGS + 1, sizeof *env));
	memcpy(env, r->p->env, nenv * sizeof *env);
	for (i = 0; i < nw && strcmp(words[i], "--"); i++) {
		if ((v = srv_key(words[i], "cwd"))) {
			if (*v != '/')
				BAD("--cwd: invalid path '%s': not absolute", v);
			cwd = v;
		} else if ((v = srv_key(words[i], "env"))) {
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
		} else if ((v = srv_key(words[i], "timeout"))) {
			const char *why = sbx_parse_u64(v, 1, 7ULL * 24 * 3600 * 1000, &timeout);
			if (why)
				BAD("--timeout: invalid value '%s': %s", v, why);
		} else if ((v = srv_key(words[i], "pty"))) {
			unsigned rows = 0, cols = 0;
			if (sscanf(v, "%5ux%5u", &rows, &cols) != 2 || rows > 9999 || cols > 9999)
				BAD("--pty: invalid window '%s'", v);
			w.flags |= NS_RUN_PTY;
			w.rows = (uint16_t)rows;
			w.cols = (uint16_t)cols;
		} else if ((v = srv_key(words[i], "memory"))) {
			const char *why = sbx_parse_size(v, 1ULL << 50, &memory);
			if (why)
				BAD("--memory: invalid size '%s': %s", v, why);
		} else if ((v = srv_key(words[i], "pids"))) {
			const char *why = sbx_parse_u64(v, 1, 4194304, &pids);
			if (why)
				BAD("--pids: invalid value '%s': %s", v, why);
		} else if ((v = srv_key(words[i], "cpu"))) {
			const char *why = sbx_parse_percent(v, 102400, &cpu);
			if (why)
				BAD("--cpu: invalid value '%s': %s", v, why);
		} else if ((v = srv_key(words[i], "detach"))) {
			detach = 1;
		} else if ((v = srv_key(words[i], "out"))) {
			out = v;
		} else if ((v = srv_key(words[i], "err"))) {
			err = v;
		} else if ((v = srv_key(words[i], "grant"))) {
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
	if (!plan && !(j = srv_new_job(s))) {
		if (ci >= 0)
			srv_refuse(s, ci, SBX_EXIT_SYS, "the sandbox runs %d commands already: wait for one to end",
			       NS_SERVE_LIVE);
		free(env);
		return;
	}
#undef BAD
#define NO(code_, ...) do { \
		if (ci >= 0) \
			srv_refuse(s, ci, (code_), __VA_ARGS__); \
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
		srv_say(s->cl[ci].fd, "warning %s", ns_grant_argv_only); /* as a one-shot run warns */
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
		w.flags |= NS_RUN_PROG | (q.prog.still ? NS_RUN_STILL : 0);
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
				srv_refuse(s, ci, SBX_EXIT_SYS, "%s", why);
			return;
		}
		all[nfds++] = c;
		w.flags |= NS_RUN_CGROUP;
		j->cg = 1;
	}
	/* A detached job's client stays until pid 1 has started the job: the
	 * id it prints must be one that --wait-job and --kill-job find. */
	j->client = ci;
	j->detached = detach || ci < 0; /* the first program has no client to lose */
	j->deadline = timeout ? sbx_now_ms() + timeout : 0;
	show_argv(j->show, sizeof j->show, argv, nargv);
	w.nargv = (uint32_t)nargv;
	w.nenv = (uint32_t)nenv;
	SBX_MARK("s-checked");
	srv_to_pid1(r, &w, buf, len, all, nfds);
	if (j->cg)
		close(all[nfds - 1]);
	if (gfd >= 0)
		close(gfd);
	ns_grant_request_end(&q);
	free(buf);
	free(env);
	if (ci >= 0) {
		s->cl[ci].job = j->id;
	} else {
		s->init_id = (int)j->id;
	}
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
	srv_drop_client(s, ci);
}

static struct job *named_job(struct ns_serve *s, int ci, char **words, size_t nw)
{
	const char *v = NULL;
	uint64_t id;
	struct job *j;

	for (size_t i = 0; i < nw; i++)
		if (srv_key(words[i], "job"))
			v = srv_key(words[i], "job");
	if (!v || sbx_parse_u64(v, 1, UINT32_MAX, &id)) {
		srv_refuse(s, ci, SBX_EXIT_USAGE, "invalid job id '%.20s'", v ? v : "");
		return NULL;
	}
	if (!(j = srv_find_job(s, (uint32_t)id)) || j->state == J_STARTING) {
		srv_refuse(s, ci, SBX_EXIT_USAGE, "no job %u in this sandbox (sbx-ns --join PATH --jobs lists them)",
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
		srv_refuse(s, ci, SBX_EXIT_LOST, "the sandbox is stopping");
		return;
	}
	if (strcmp(words[0], "run") && strcmp(words[0], "plan") && nfds) {
		srv_refuse(s, ci, SBX_EXIT_USAGE, "invalid request: fds with %.10s", words[0]);
		return;
	}
	if (!strcmp(words[0], "run") || !strcmp(words[0], "plan")) {
		srv_start(r, ci, words + 1, nw - 1, fds, nfds, words[0][0] == 'p');
	} else if (!strcmp(words[0], "jobs")) {
		list_jobs(s, ci);
	} else if (!strcmp(words[0], "stop")) {
		s->stopping = 1;
		s->cl[ci].stop = 1;
	} else if (!strcmp(words[0], "wait")) {
		if (!(j = named_job(s, ci, words + 1, nw - 1)))
			return;
		if (j->state == J_ENDED) {
			srv_say(s->cl[ci].fd, "exit %d %d", j->code, WIFSIGNALED(j->status) ? WTERMSIG(j->status) : 0);
			srv_drop_client(s, ci);
		} else if (j->client >= 0) {
			srv_refuse(s, ci, SBX_EXIT_USAGE, "job %u has a client already", j->id);
		} else {
			j->client = ci;
			s->cl[ci].job = j->id;
		}
	} else if (!strcmp(words[0], "kill")) {
		struct ns_wire w = { .kind = 'K', .value = SIGTERM };
		if (!(j = named_job(s, ci, words + 1, nw - 1)))
			return;
		for (size_t i = 1; i < nw; i++)
			if (srv_key(words[i], "signal"))
				v = srv_key(words[i], "signal");
		if (v && sbx_parse_u64(v, 1, 64, &n)) {
			srv_refuse(s, ci, SBX_EXIT_USAGE, "invalid signal '%.20s'", v);
			return;
		}
		if (v)
			w.value = (int32_t)n;
		w.id = j->id;
		if (j->state == J_RUNNING)
			srv_to_pid1(r, &w, NULL, 0, NULL, 0);
		srv_say(s->cl[ci].fd, "exit 0 0");
		srv_drop_client(s, ci);
	} else if (!strcmp(words[0], "connect")) {
		struct ns_wire w = { .kind = 'C' };
		for (size_t i = 1; i < nw; i++)
			if (srv_key(words[i], "port"))
				v = srv_key(words[i], "port");
		if (!v || sbx_parse_u64(v, 1, 65535, &n)) {
			srv_refuse(s, ci, SBX_EXIT_USAGE, "--connect: invalid port '%.20s'", v ? v : "");
			return;
		}
		if (r->p->net != NET_LOOPBACK && r->p->net != NET_BROKER) {
			srv_refuse(s, ci, SBX_EXIT_USAGE, "--connect needs a sandbox with its own loopback "
			       "(--net loopback or --net broker)");
			return;
		}
		if (!(j = srv_new_job(s))) {
			srv_refuse(s, ci, SBX_EXIT_SYS, "the sandbox is busy: wait for a command to end");
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
		srv_to_pid1(r, &w, NULL, 0, NULL, 0);
	} else {
		srv_refuse(s, ci, SBX_EXIT_USAGE, "invalid request: unknown verb '%.20s'", words[0]);
	}
}

/* Client ci sent something: a request, a signal for its command, or EOF. */
void srv_from_client(struct ns_run *r, int ci)
{
	static char msg[NS_WIRE_MAX + 1];
	struct ns_serve *s = r->x.serve;
	struct client *c = &s->cl[ci];
	int fds[SBX_FDPASS_MAX + 1], cut;
	size_t nfds, nw = 0;
	ssize_t got = sbx_recv_fds(c->fd, msg, sizeof msg - 1, MSG_DONTWAIT, fds, 4, &nfds, &cut);
	char **words;
	struct job *j = c->job ? srv_find_job(s, c->job) : NULL;

	SBX_MARK("s-request");
	if (got < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (got <= 0) {
		/* The client is gone: so is its command. */
		if (j && j->state == J_RUNNING && !j->detached) {
			struct ns_wire w = { .kind = 'K', .id = j->id, .value = SIGKILL };
			srv_to_pid1(r, &w, NULL, 0, NULL, 0);
		}
		srv_drop_client(s, ci);
		return;
	}
	msg[got] = '\0';
	if (c->refused) {
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		srv_refuse(s, ci, SBX_EXIT_POLICY, "only uid %u and root may join this sandbox", (unsigned)r->p->caller_uid);
		return;
	}
	if (j) {
		/* Attached: only "signal N" for its command. */
		uint64_t sig;
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		if (j->state == J_RUNNING && !strncmp(msg, "signal ", 7) && !sbx_parse_u64(msg + 7, 1, 64, &sig)) {
			struct ns_wire w = { .kind = 'K', .id = j->id, .value = (int32_t)sig };
			srv_to_pid1(r, &w, NULL, 0, NULL, 0);
		}
		return;
	}
	if (cut || (size_t)got >= sizeof msg - 1 || msg[got - 1] != '\0') {
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		srv_refuse(s, ci, SBX_EXIT_USAGE, cut ? "invalid request: too many fds" :
		       (size_t)got >= sizeof msg - 1 ? "request too large" : "invalid request: not NUL-terminated words");
		return;
	}
	/* (one more: argv ends with a NULL) */
	words = sbx_need(calloc(NS_WIRE_ARGS * 2 + 16 + 1, sizeof *words));
	for (char *p = msg; p < msg + got; p += strlen(p) + 1) {
		if (nw >= NS_WIRE_ARGS * 2 + 16) {
			srv_refuse(s, ci, SBX_EXIT_USAGE, "invalid request: too many words");
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

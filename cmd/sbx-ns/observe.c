/* --observe FILE: what a run did, recorded while everything stays
 * enforced exactly as without it. The record is what `sbx-check policy
 * narrow` derives a narrower policy from (sbx-check(1), docs/): JSON lines,
 *
 *   start      written before the sandbox exists: the run's identity, its
 *              workspace, the digest of each part of its plan (the grant's
 *              fields: argv, cwd, env, timeout and the plan's groups), the
 *              digest of the baseline and the effective policy;
 *   net        per destination and outcome, what the broker decided
 *              (netlog.c hands each of its lines over);
 *   exec       per file the command's processes asked to execute: the name,
 *              the device and inode it resolved to, its SHA-256, the count
 *              (obsexec.c: the supervisor sees every execve and execveat);
 *   write      each path of the workspace (or of the change set) whose
 *              status changed during the run (ctime), at most OBS_WRITES;
 *   denied     the seccomp denials, as the status fd counted them;
 *   resources  peak memory and processes of the run's own cgroup where it
 *              has one (obspeak.c), its CPU time and wall time;
 *   end        the exit code, the number of lines before it and the
 *              SHA-256 of every byte before it: a record cut short has no
 *              end, an edited one another digest.
 *
 * Nothing here decides anything: the record is written after the fact
 * from what the enforcing parts saw. Nothing observed is trusted either:
 * every string came from the sandbox's requests and is escaped as JSON. */
#include "ns.h"

#include "clock.h"
#include "die.h"
#include "digest.h"
#include "exitcodes.h"
#include "fd.h"
#include "json.h"
#include "quote.h"
#include "walk.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define OBS_NET 256        /* distinct destinations and outcomes */
#define OBS_WRITES 4096    /* paths written, listed */
#define OBS_DENIED 80
#define STATX_CTIME_BIT 0x0080U   /* statx(2)'s STATX_CTIME */

struct obs_net {
	char decision[16], host[256], method[16], service[64], path[80], reason[256];
	unsigned port;
	uint64_t count;
};

struct obs_denied {
	char syscall[40], family[24];
	uint64_t count;
};

struct ns_observe {
	int fd;                  /* the record; -1 when only a shadow policy needs the facts */
	struct sbx_sha256 sum;   /* of every byte written to it */
	uint64_t lines;
	int64_t start_ns;        /* CLOCK_REALTIME: a later ctime is a write of this run */
	uint64_t start_ms;       /* monotonic */
	struct ns_peak peak;
	int peak_read;
	struct obs_net net[OBS_NET];
	size_t nnet;
	uint64_t net_other, unreported;
	struct obs_denied denied[OBS_DENIED];
	size_t ndenied;
};

int ns_observe_exec_on(const struct ns_args *a)
{
	return a->observe != NULL;
}

/* Plan time: the file is new, and outside every root the command may
 * write (it could rewrite its own record otherwise). */
void ns_observe_check(const struct ns_args *a, const struct ns_plan *p)
{
	const struct mount_op *op;
	char q[1100], dir[4096], *slash;
	struct stat st;

	if (!a->observe)
		return;
	sbx_quote(q, sizeof q, a->observe, strlen(a->observe), 1024, 0);
	if (lstat(a->observe, &st) == 0)
		sbx_die_usage("--observe: %s exists: a record is never overwritten; name a new file", q);
	snprintf(dir, sizeof dir, "%s", a->observe);
	slash = strrchr(dir, '/');
	*(slash == dir ? slash + 1 : slash) = '\0';
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		sbx_die_usage("--observe: invalid path '%s': its directory does not exist", q);
	if ((op = ns_root_holding(p, a->observe, 1)))
		sbx_die_usage("--observe: %s lies within the writable root %s (%s): the command could rewrite "
			      "its own record; keep it where only the caller writes", q, op->src, op->opt);
}

static void put(void *ctx, struct sbx_json *j)
{
	struct ns_observe *o = ctx;
	size_t len;
	const char *line = sbx_json_end(j, &len);

	if (o->fd >= 0 && line) {
		if (sbx_write_all(o->fd, line, len) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to write the observation record");
		sbx_sha256_update(&o->sum, line, len);
		o->lines++;
	}
	sbx_json_free(j);
}

static void hexkey(struct sbx_json *j, const char *k, const unsigned char *d)
{
	char hex[SBX_SHA256_HEX];

	sbx_digest_hex(d, SBX_SHA256_LEN, hex);
	sbx_json_str(j, k, hex);
}

/* The plan's digests: the grant's fields of this very plan (grant.c and
 * lib/policy/grant_doc.c say what each covers), stdin excepted, which a
 * run that is observed does not read ahead. */
static void plan_digests(const struct ns_run *r, struct sbx_json *out)
{
	static const int fields[] = { SBX_GRANT_ARGV, SBX_GRANT_CWD, SBX_GRANT_ENV, SBX_GRANT_TIMEOUT };
	char *const none[] = { NULL };
	struct sbx_grant_input in = {
		.argv = r->a->cmd ? r->a->cmd : none, .cwd = r->p->ops[r->p->ws].dest, .envp = r->p->env,
		.timeout_ms = r->a->timeout_ms, .have_plan = 1,
	};
	struct sbx_grant g;
	struct sbx_json j;
	const char *doc, *why = "out of memory";
	size_t len;

	ns_plan_json(r, &j);
	doc = sbx_json_end(&j, &len);
	if (!doc || sbx_grant_plan_text(doc, len, in.plan, &why) < 0)
		sbx_die(SBX_EXIT_SYS, "unable to hash the plan for --observe: %s", why);
	sbx_json_free(&j);
	sbx_grant_fields(&in, &g);
	sbx_json_open_obj(out, "plan");
	for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
		const unsigned char *d = fields[i] == SBX_GRANT_ARGV ? g.argv : fields[i] == SBX_GRANT_CWD ? g.cwd
					 : fields[i] == SBX_GRANT_ENV ? g.env : NULL;
		unsigned char t[SBX_SHA256_LEN];
		if (!d) {
			/* the timeout is a number: its own digest, like the others */
			struct sbx_sha256 c;
			char ms[32];
			snprintf(ms, sizeof ms, "timeout %llu", (unsigned long long)g.timeout_ms);
			sbx_sha256_init(&c);
			sbx_sha256_update(&c, ms, strlen(ms));
			sbx_sha256_final(&c, t);
			d = t;
		}
		hexkey(out, sbx_grant_field_name(fields[i]), d);
	}
	for (int g_i = 0; g_i < SBX_GRANT_NGROUPS; g_i++)
		hexkey(out, sbx_grant_field_name(SBX_GRANT_IDENTITY << g_i), g.plan[g_i]);
	sbx_json_close_obj(out);
}

/* A policy as one compact line of its own serializer's JSON. */
static char *policy_line(const struct sbx_policy *p, unsigned scope, unsigned char sha[SBX_SHA256_LEN])
{
	char *text = sbx_need(sbx_policy_to_json(p, scope)), *line;
	json_t *t = json_loads(text, 0, NULL);

	if (sha) {
		struct sbx_sha256 c;
		sbx_sha256_init(&c);
		sbx_sha256_update(&c, text, strlen(text));
		sbx_sha256_final(&c, sha);
	}
	line = t ? json_dumps(t, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(t);
	free(text);
	return sbx_need(line);
}

static void header(struct ns_run *r)
{
	struct ns_observe *o = r->x.obs;
	unsigned char id[16], sha[SBX_SHA256_LEN];
	char hex[40];
	struct sbx_json j;

	if (getrandom(id, sizeof id, 0) != (ssize_t)sizeof id)
		sbx_die_errno(SBX_EXIT_SYS, "unable to draw the observation's run id");
	sbx_digest_hex(id, sizeof id, hex);
	sbx_json_begin(&j, NS_PROG, "observe");
	sbx_json_str(&j, "record", "sbx-observe-v1");
	sbx_json_str(&j, "run", hex);
	sbx_json_bool(&j, "serve", r->a->serve != NULL);
	sbx_json_uint(&j, "time", (uint64_t)(o->start_ns / 1000000000));
	sbx_json_open_obj(&j, "caller");
	sbx_json_uint(&j, "uid", r->p->caller_uid);
	sbx_json_uint(&j, "gid", r->p->caller_gid);
	sbx_json_close_obj(&j);
	sbx_json_uint(&j, "uid", r->p->uid);
	sbx_json_uint(&j, "gid", r->p->gid);
	sbx_json_str(&j, "workspace", r->p->ops[r->p->ws].src);
	plan_digests(r, &j);
	if (sbx_policy_opts_baseline(&r->a->pol)) {
		char *b = policy_line(&r->p->base, SBX_PSCOPE_ALL, sha);
		free(b);
		hexkey(&j, "baseline_sha256", sha);
	} else {
		sbx_json_null(&j, "baseline_sha256");
	}
	if (r->p->pol_on) {
		char *pol = policy_line(&r->p->eff, SBX_PSCOPE_NS, NULL);
		sbx_json_raw(&j, "policy", pol);
		free(pol);
	} else {
		sbx_json_null(&j, "policy");
	}
	put(o, &j);
}

/* Before the clone: the record made, its first line written, the
 * cgroup's peaks and the clocks taken. */
void ns_observe_start(struct ns_run *r)
{
	struct ns_observe *o;
	struct timespec ts;

	if (!r->a->observe && !r->a->shadow)
		return;
	o = r->x.obs = sbx_need(calloc(1, sizeof *o));
	o->fd = -1;
	clock_gettime(CLOCK_REALTIME, &ts);
	o->start_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	o->start_ms = sbx_now_ms();
	ns_peak_start(r, &o->peak);
	r->x.shadow = ns_shadow_run_new(r->p);
	if (!r->a->observe)
		return;
	r->x.execs = ns_exec_log_new();
	sbx_sha256_init(&o->sum);
	o->fd = open(r->a->observe, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (o->fd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create the observation record %s", r->a->observe);
	header(r);
}

static void copy(char *dst, size_t sz, json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	snprintf(dst, sz, "%s", v ? v : "");
}

/* One line of the broker's (netlog.c): counted by destination and outcome,
 * and an allowed destination shown to the shadow policy. */
void ns_observe_conn(const struct ns_run *r, json_t *line)
{
	struct ns_observe *o = r->x.obs;
	const char *ev = json_string_value(json_object_get(line, "event"));
	json_int_t n = json_integer_value(json_object_get(line, "count"));
	struct obs_net k = { .count = 0 }, *e = NULL;

	if (!o || !ev)
		return;
	if (!strcmp(ev, "unreported")) {
		o->unreported += n > 0 ? (uint64_t)n : 0;
		return;
	}
	if (strcmp(ev, "connection"))
		return;
	copy(k.decision, sizeof k.decision, line, "decision");
	copy(k.host, sizeof k.host, line, "host");
	copy(k.method, sizeof k.method, line, "method");
	copy(k.service, sizeof k.service, line, "service");
	copy(k.path, sizeof k.path, line, "path");
	copy(k.reason, sizeof k.reason, line, "reason");
	n = json_integer_value(json_object_get(line, "port"));
	k.port = n > 0 && n < 65536 ? (unsigned)n : 0;
	/* An allowed name is what a narrowed allowlist admits; a refusal is
	 * a denial, and what refused it is the reason. */
	if (strcmp(k.decision, "allowed"))
		k.method[0] = k.service[0] = k.path[0] = '\0';
	else
		k.reason[0] = '\0';
	for (size_t i = 0; i < o->nnet && !e; i++)
		if (!strcmp(o->net[i].decision, k.decision) && !strcmp(o->net[i].host, k.host) &&
		    o->net[i].port == k.port && !strcmp(o->net[i].method, k.method) &&
		    !strcmp(o->net[i].service, k.service) && !strcmp(o->net[i].path, k.path) &&
		    !strcmp(o->net[i].reason, k.reason))
			e = &o->net[i];
	if (!e && o->nnet < OBS_NET) {
		e = &o->net[o->nnet++];
		*e = k;
	}
	if (e)
		e->count++;
	else
		o->net_other++;
	/* DNS answers come before the connection, and a route is the
	 * broker's own, not an allowed host. */
	if (!strcmp(k.decision, "allowed") && strcmp(k.method, "DNS") && !k.service[0] && k.host[0])
		ns_shadow_conn(r, k.host, k.port, 1);
}

void ns_observe_denied(const struct ns_run *r, const char *syscall, const char *family, uint64_t count)
{
	struct ns_observe *o = r->x.obs;
	struct obs_denied *d;

	if (!o || o->ndenied == OBS_DENIED)
		return;
	d = &o->denied[o->ndenied++];
	snprintf(d->syscall, sizeof d->syscall, "%s", syscall);
	snprintf(d->family, sizeof d->family, "%s", family ? family : "");
	d->count = count;
}

/* The run ended without the sandbox the record describes: neither the
 * Landlock tier nor the unsafe host process has the supervisor that
 * sees the command's execs, nor the broker's channel. */
void ns_observe_no_fallback(struct ns_run *r, const char *what, int err)
{
	const struct ns_args *a = r->a;
	struct ns_observe *o = r->x.obs;
	struct stat fs, ps;

	if (!a->observe && !a->shadow)
		return;
	/* Nothing ran: the record begun is taken back, if it is still ours. */
	if (o && o->fd >= 0 && fstat(o->fd, &fs) == 0 && lstat(a->observe, &ps) == 0 &&
	    fs.st_dev == ps.st_dev && fs.st_ino == ps.st_ino)
		unlink(a->observe);
	sbx_die(SBX_EXIT_NOISOLATION, "unable to create namespaces (%s): %s would run the command "
		"without the supervisor and the broker's channel that %s needs", strerror(err), what,
		a->observe ? "--observe" : "--shadow-policy");
}

/* Once the sandbox is over, before the exit line: the peaks (the
 * cgroup is empty now), and what the shadow policy would have refused. */
void ns_observe_finish(struct ns_run *r)
{
	struct ns_observe *o = r->x.obs;

	if (!o || o->peak_read)
		return;
	ns_peak_read(&o->peak);
	o->peak_read = 1;
	ns_shadow_end(r, &o->peak);
}

/* ---- the end ---- */

struct wctx {
	struct ns_observe *o;
	uint64_t shown, more;
};

static int wrote(void *ctx, const struct sbx_walk_entry *e)
{
	struct wctx *w = ctx;
	int64_t c = e->st->stx_ctime.tv_sec * 1000000000 + e->st->stx_ctime.tv_nsec;
	struct sbx_json j;

	if ((e->st->stx_mode & S_IFMT) == S_IFDIR || c < w->o->start_ns)
		return 0;
	if (w->shown == OBS_WRITES) {
		w->more++;
		return 0;
	}
	sbx_json_begin(&j, NULL, "write");
	sbx_json_strn(&j, "path", e->path, e->pathlen);
	put(w->o, &j);
	w->shown++;
	return 0;
}

/* What the run wrote: the change set's upper layer holds every path it
 * changed, the workspace otherwise; a path counts when its status changed
 * after the start (a write, a chmod, a new link: the kernel sets ctime
 * and no call sets it back). */
static void writes(const struct ns_run *r)
{
	struct wctx w = { .o = r->x.obs };
	struct sbx_walk_err err;
	struct sbx_json j;
	int fd, rc;

	if (r->p->chg && r->p->chg_fd >= 0)
		fd = openat(r->p->chg_fd, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	else
		fd = openat(r->p->wsfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	rc = fd < 0 ? SBX_WALK_ESYS : sbx_walk(fd, STATX_CTIME_BIT, wrote, &w, &err);
	if (fd < 0)
		err.err = errno, err.step = "open", err.path[0] = '\0', err.pathlen = 0;
	if (fd >= 0)
		close(fd);
	if (w.more || rc) {
		sbx_json_begin(&j, NULL, "write");
		sbx_json_uint(&j, "more", w.more);
		if (rc) {
			/* Not every path was seen: the list is not the whole. */
			char why[4200];
			snprintf(why, sizeof why, "unable to %s %.*s: %s", err.step, (int)err.pathlen, err.path,
				 rc == SBX_WALK_ETOODEEP ? "too deep" : strerror(err.err));
			sbx_json_str(&j, "error", why);
		}
		put(w.o, &j);
	}
}

static void net_lines(struct ns_observe *o)
{
	struct sbx_json j;

	for (size_t i = 0; i < o->nnet; i++) {
		const struct obs_net *e = &o->net[i];
		sbx_json_begin(&j, NULL, "net");
		sbx_json_str(&j, "decision", e->decision);
		sbx_json_str(&j, "host", e->host[0] ? e->host : NULL);
		if (e->port)
			sbx_json_uint(&j, "port", e->port);
		else
			sbx_json_null(&j, "port");
		if (e->method[0])
			sbx_json_str(&j, "method", e->method);
		if (e->service[0])
			sbx_json_str(&j, "service", e->service);
		if (e->path[0])
			sbx_json_str(&j, "path", e->path);
		if (e->reason[0])
			sbx_json_str(&j, "reason", e->reason);
		sbx_json_uint(&j, "count", e->count);
		put(o, &j);
	}
	/* What the record cannot name: narrowing refuses to learn from it. */
	if (o->net_other || o->unreported) {
		sbx_json_begin(&j, NULL, "net");
		sbx_json_str(&j, "decision", o->unreported ? "unreported" : "other");
		sbx_json_uint(&j, "count", o->net_other + o->unreported);
		put(o, &j);
	}
}

static void resources(const struct ns_run *r)
{
	struct ns_observe *o = r->x.obs;
	const struct ns_peak *pk = &o->peak;
	struct rusage ru;
	struct sbx_json j;

	sbx_json_begin(&j, NULL, "resources");
	sbx_json_bool(&j, "cgroup", pk->fd >= 0);
	if (pk->have_mem)
		sbx_json_uint(&j, "memory_peak", pk->mem);
	else
		sbx_json_null(&j, "memory_peak");
	if (pk->have_pids)
		sbx_json_uint(&j, "pids_peak", pk->pids);
	else
		sbx_json_null(&j, "pids_peak");
	/* Without a cgroup, the CPU time of every process the sandbox's pid 1
	 * reaped, which is all of them. */
	if (pk->have_cpu) {
		sbx_json_uint(&j, "cpu_usec", pk->cpu_usec);
		sbx_json_str(&j, "cpu_from", "cgroup");
	} else if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
		sbx_json_uint(&j, "cpu_usec", (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
						(uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec));
		sbx_json_str(&j, "cpu_from", "rusage");
	}
	sbx_json_uint(&j, "wall_ms", sbx_now_ms() - o->start_ms);
	if (pk->why[0])
		sbx_json_str(&j, "why", pk->why);
	put(o, &j);
}

/* After the exit line: the record's body and its end. */
void ns_observe_end(struct ns_run *r, int code)
{
	struct ns_observe *o = r->x.obs;
	unsigned char d[SBX_SHA256_LEN];
	struct sbx_json j;

	if (!o)
		return;
	ns_observe_finish(r);
	if (o->fd >= 0) {
		net_lines(o);
		ns_exec_log_lines(r->x.execs, put, o);
		writes(r);
		for (size_t i = 0; i < o->ndenied; i++) {
			sbx_json_begin(&j, NULL, "denied");
			sbx_json_str(&j, "syscall", o->denied[i].syscall);
			if (o->denied[i].family[0])
				sbx_json_str(&j, "family", o->denied[i].family);
			sbx_json_uint(&j, "count", o->denied[i].count);
			put(o, &j);
		}
		resources(r);
		sbx_json_begin(&j, NULL, "end");
		sbx_json_int(&j, "code", code);
		sbx_json_uint(&j, "lines", o->lines);
		sbx_sha256_final(&o->sum, d);
		hexkey(&j, "sha256", d);
		put(o, &j);
		if (close(o->fd) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to write the observation record %s", r->a->observe);
	}
	if (o->peak.fd >= 0)
		close(o->peak.fd);
	ns_exec_log_free(r->x.execs);
	r->x.execs = NULL;
	free(o);
	r->x.obs = NULL;
}

/* Grants in sbx-ns (lib/policy/grant.h): the run a grant is checked
 * against is the run's own plan, the document --dry-run prints (plan.c),
 * built once the plan is final and before anything of the sandbox exists.
 *
 *   the program: the file argv[0] resolves to, opened, hashed (SHA-256)
 *     and its identity kept, so the plan names the very file that will run;
 *   the check: stdin into a sealed copy, the plan's digests, the grant
 *     verified against them (kind, expiry, every field, then the nonce);
 *   the exec: in the command's process, the name looked up in the
 *     sandbox must lead to that same file (device, inode, size and
 *     modification and change times as hashed), and exactly the opened
 *     file is executed (execveat), never the name again.
 *
 * A plan grant also refuses every fallback (the Landlock tier, the unsafe
 * host process): what it grants is the namespace sandbox of its plan.
 *
 * A living sandbox (--serve --grant-key) checks a grant per command the
 * same way (ns_grant_request, verify): the plan is the sandbox's with the
 * command's argv, environment, directory, timeout and program, found with
 * the command's own PATH; the nonce directory is checked once, at the
 * start, and held open. */
#include "ns.h"

#include "die.h"
#include "digest.h"
#include "exec.h"
#include "exitcodes.h"
#include "fd.h"
#include "json.h"
#include "cmdpath.h"
#include "parse.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif

static int same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* The file as hashed: any change of it after the hash shows here. */
static int same_file(const struct ns_program *g, const struct stat *st)
{
	return st->st_dev == g->dev && st->st_ino == g->ino && st->st_size == g->size &&
	       same_time(&st->st_mtim, &g->mtime) && same_time(&st->st_ctim, &g->ctime);
}

/* The file name resolves to with search (PATH) from the directory base
 * (inside, the same path on the host), hashed, its identity kept: 0 (g
 * found or not), or the exit code and the message in why. */
static int find_program(const char *name, const char *search, const char *base, const struct sbx_allowexec *allow,
			struct ns_program *g, char *why, size_t n)
{
	char path[PATH_MAX];
	struct stat st, after;
	int fd, e;

	memset(g, 0, sizeof *g);
	if (sbx_exec_find(name, search, path, sizeof path) < 0)
		return 0;
	if (path[0] != '/') {
		char *full = sbx_needf("%s/%s", base, path);
		int toolong = strlen(full) >= sizeof path;
		if (!toolong)
			strcpy(path, full);
		free(full);
		if (toolong)
			return snprintf(why, n, "unable to exec %s: name too long", name), SBX_EXIT_EXEC;
	}
	fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return 0;
#define FAIL(code, ...) do { e = errno; if (fd >= 0) close(fd); errno = e; \
			     snprintf(why, n, __VA_ARGS__); return code; } while (0)
	if (fd < 0)
		FAIL(SBX_EXIT_EXEC, "unable to read the program %s to hash it for the plan: %s", path, strerror(e));
	if (fstat(fd, &st) < 0)
		FAIL(SBX_EXIT_SYS, "unable to stat the program %s: %s", path, strerror(e));
	if (!S_ISREG(st.st_mode))
		FAIL(SBX_EXIT_EXEC, "unable to exec %s: not a regular file", path);
	if (sbx_sha256_fd(fd, g->sha) < 0)
		FAIL(SBX_EXIT_SYS, "unable to read the program %s to hash it for the plan: %s", path, strerror(e));
	if (fstat(fd, &after) < 0)
		FAIL(SBX_EXIT_SYS, "unable to stat the program %s: %s", path, strerror(e));
#undef FAIL
	close(fd);
	g->dev = st.st_dev;
	g->ino = st.st_ino;
	g->size = st.st_size;
	g->mtime = st.st_mtim;
	g->ctime = st.st_ctim;
	if (!same_file(g, &after))
		return snprintf(why, n, "refusing to start: the program %s changed while it was hashed", path),
		       SBX_EXIT_POLICY;
	g->path = sbx_need(strdup(path));
	g->found = 1;
	for (size_t i = 0; i < allow->n; i++)
		if (allow->v[i].dev == st.st_dev && allow->v[i].ino == st.st_ino)
			g->allow = allow->v[i].path;
	return 0;
}

/* Where the sandbox will find argv[0]: the workspace, the runtime and
 * --ro/--rw show host paths at their own names, so the host's lookup is
 * the sandbox's; anything else (a --bind shadowing it) makes the
 * command's process find another file, and the run is refused there.
 * A living sandbox has no one program: each request's is found as it
 * comes (ns_grant_request). */
void ns_plan_program(const struct ns_args *a, struct ns_plan *p)
{
	char why[PATH_MAX + 128];
	int code;

	if (!a->cmd || !a->cmd[0] || (a->serve && !a->dry_run))
		return;
	p->have_prog = 1;
	code = find_program(a->cmd[0], p->search, p->ops[p->ws].dest, &a->allow, &p->prog, why, sizeof why);
	if (code)
		sbx_die(code, "%s", why);
}

/* The program as the plan document shows it. */
void ns_program_json(struct sbx_json *j, const struct ns_plan *p)
{
	char hex[SBX_SHA256_HEX];

	if (!p->have_prog)
		return;
	sbx_json_open_obj(j, "program");
	if (!p->prog.found) {
		sbx_json_null(j, "path");
		sbx_json_close_obj(j);
		return;
	}
	sbx_json_str(j, "path", p->prog.path);
	sbx_json_uint(j, "dev", (uint64_t)p->prog.dev);
	sbx_json_uint(j, "ino", (uint64_t)p->prog.ino);
	sbx_json_uint(j, "size", (uint64_t)p->prog.size);
	sbx_digest_hex(p->prog.sha, SBX_SHA256_LEN, hex);
	sbx_json_str(j, "sha256", hex);
	if (p->prog.allow)
		sbx_json_str(j, "allow_exec", p->prog.allow);
	sbx_json_close_obj(j);
}

/* --grant-nonce-dir DIR: where single-use grants are recorded. Checked as
 * every trusted directory: absolute and canonical (parse time), opened one
 * component at a time from / without following a symbolic link, each
 * directory on the way owned by root or the caller and not writable by
 * group or others unless sticky (/var/tmp), DIR itself owned by root or
 * the caller and not writable by group or others at all, and, once the
 * plan is known, outside every writable root. */
static int nonce_dir(const struct ns_plan *p)
{
	const char *dir = p->nonce_dir;
	struct sbx_protect prot = { 0 };
	const struct mount_op *op;
	char *copy, *c, *next;
	struct stat st;
	int fd;

	if (!dir)
		return -1;
	copy = sbx_need(strdup(dir));
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open /");
	for (c = copy + 1; c && *c; c = next) {
		int last, nfd;

		next = strchr(c, '/');
		if (next)
			*next++ = '\0';
		last = !next || !*next;
		nfd = openat(fd, c, (last ? O_RDONLY : O_PATH) | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0 && (errno == ELOOP || (errno == ENOTDIR && fstatat(fd, c, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
						      S_ISLNK(st.st_mode))))
			sbx_die(SBX_EXIT_POLICY, "grant nonce directory %s is unsafe: %.*s is a symbolic link",
				dir, (int)(c - copy + strlen(c)), dir);
		if (nfd < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to open the grant nonce directory %s (at %.*s)", dir,
				      (int)(c - copy + strlen(c)), dir);
		close(fd);
		fd = nfd;
		if (fstat(fd, &st) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to stat the grant nonce directory %s", dir);
		if (st.st_uid != 0 && st.st_uid != p->caller_uid)
			sbx_die(SBX_EXIT_POLICY, "grant nonce directory %s is unsafe: %.*s is owned by uid %u "
				"(not root or the caller)", dir, (int)(c - copy + strlen(c)), dir,
				(unsigned)st.st_uid);
		if ((st.st_mode & 022) && (last || !(st.st_mode & S_ISVTX)))
			sbx_die(SBX_EXIT_POLICY, "grant nonce directory %s is unsafe: %.*s has mode %04o, "
				"writable by group or others: chmod go-w %.*s", dir, (int)(c - copy + strlen(c)),
				dir, (unsigned)(st.st_mode & 07777), (int)(c - copy + strlen(c)), dir);
	}
	free(copy);
	/* The command must not be able to delete what records its grant. */
	sbx_protect_add(&prot, "--grant-nonce-dir", dir);
	for (size_t it = 0; (op = ns_next_writable(p, &it)); ) {
		struct sbx_protect_root root = { op->src, op->dev, op->ino };
		if (sbx_protect_exposed(&prot, &root) >= 0)
			sbx_die(SBX_EXIT_POLICY, "grant nonce directory %s is unsafe: the sandbox's writable "
				"root %s %s is, contains or lies inside it; choose a directory outside "
				"every writable root", dir, op->opt, op->src);
	}
	free(prot.v[0].path);
	free(prot.v);
	return fd;
}

/* --grant-nonce-dir at parse time: the one spelling of an absolute path. */
const char *ns_opt_nonce_dir(const char *arg)
{
	const char *bad;

	sbx_opt_abspath("--grant-nonce-dir", arg);
	bad = sbx_path_shape(arg, strlen(arg));
	if (!bad && !strcmp(arg, "/"))
		bad = "the whole file system";
	if (bad)
		sbx_die_usage("--grant-nonce-dir: invalid path '%s': %s", arg, bad);
	return arg;
}

static uint64_t now_s(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_REALTIME, &ts) < 0 || ts.tv_sec < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read the clock");
	return (uint64_t)ts.tv_sec;
}

const char ns_grant_argv_only[] =
	"the grant is argv-only: it binds the command (argv, cwd, env, stdin, timeout), not the sandbox "
	"(mounts, network, identity, filters, program); a plan grant binds both: sbx-check grant --plan";

/* The plan document of run r, parsed: what --dry-run prints, from this
 * very plan (plan.c); cwd (not NULL) names the command's directory when it
 * is not the workspace (a living sandbox's request). NULL: out of memory. */
static json_t *plan_doc(const struct ns_run *r, const char *cwd)
{
	struct sbx_json j, c;
	const char *doc, *one;
	json_t *d, *cd;
	size_t len;

	ns_plan_json(r, &j);
	doc = sbx_json_end(&j, &len);
	d = doc ? json_loadb(doc, len, JSON_REJECT_DUPLICATES, NULL) : NULL;
	sbx_json_free(&j);
	if (!d || !cwd)
		return d;
	/* The value as every other string of the document is escaped. */
	sbx_json_begin(&c, NULL, NULL);
	sbx_json_str(&c, "cwd", cwd);
	one = sbx_json_end(&c, &len);
	cd = one ? json_loadb(one, len, 0, NULL) : NULL;
	sbx_json_free(&c);
	if (!cd || json_object_set(d, "cwd", json_object_get(cd, "cwd")) < 0) {
		json_decref(cd);
		json_decref(d);
		return NULL;
	}
	json_decref(cd);
	return d;
}

/* The one check of a grant, for a one-shot run and for each command of a
 * living sandbox alike: run r is the command (r->a->cmd, r->p->env,
 * r->a->timeout_ms, r->p->prog) in its sandbox (the rest of r->p); doc is
 * its plan document (plan_doc), cwd its directory, stdin_sha the digest
 * of the bytes it reads. The kind, or 0 with the refusal in *no. */
static int verify(const struct ns_run *r, json_t *doc, const char *cwd, const unsigned char *stdin_sha,
		  const char *text, size_t len, const struct sbx_grant_use *use, struct sbx_grant_refusal *no)
{
	struct sbx_grant_input in = {
		.argv = r->a->cmd, .cwd = cwd, .envp = r->p->env, .timeout_ms = r->a->timeout_ms, .have_plan = 1,
	};
	const char *why = "out of memory";

	memcpy(in.stdin_sha, stdin_sha, sizeof in.stdin_sha);
	if (!doc || sbx_grant_plan_groups(doc, in.plan, &why) < 0) {
		no->code = SBX_EXIT_SYS;
		snprintf(no->msg, sizeof no->msg, "unable to hash the plan for the grant: %s", why);
		return 0;
	}
	return sbx_grant_check(text, len, r->p->grant_key, &in, use, now_s(), no);
}

/* A living sandbox (--serve): no grant of its own, and no first program
 * with --grant-key (every command it runs would need a grant but that
 * one); the nonce directory is checked now and held open for its life.
 * The key stays in the outer: pid 1 wipes its copy (serve1.c). */
static int serve_nonce = -1;

static void serve_grants(const struct ns_args *a, struct ns_plan *p)
{
	if (p->grant_fd >= 0)
		sbx_die_usage("--serve: a living sandbox takes no --grant-fd: it runs no one program; with "
			      "--grant-key FILE each command needs a grant of its own (sbx-ns --join PATH "
			      "--grant-fd FD -- prog args)");
	if (!p->grant_key)
		return;
	if (a->cmd && a->cmd[0])
		sbx_die_usage("--serve with --grant-key takes no first program: every command of a granted "
			      "sandbox runs under a grant of its own; run it with sbx-ns --join PATH --grant-fd FD "
			      "once the sandbox is ready");
	serve_nonce = nonce_dir(p);
}

void ns_check_grant(const struct ns_args *a, struct ns_plan *p)
{
	struct ns_run r = { .a = a, .p = p };
	struct sbx_grant_use use = { .nonce_dirfd = -1, .nonce_dir = p->nonce_dir, .record = !a->dry_run };
	struct sbx_grant_refusal no;
	unsigned char sha[SBX_SHA256_LEN];
	char text[SBX_GRANT_MAX + 1];
	size_t len;
	json_t *doc;
	int mfd, kind;

	if (a->serve) {
		serve_grants(a, p);
		return;
	}
	if (!p->grant_key)
		return;
	use.nonce_dirfd = nonce_dir(p);
	mfd = sbx_grant_stdin(0, UINT64_MAX, sha);
	if (mfd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read stdin");
	len = sbx_grant_read(p->grant_fd, text);
	doc = plan_doc(&r, NULL);
	kind = verify(&r, doc, p->ops[p->ws].dest, sha, text, len, &use, &no);
	json_decref(doc);
	if (!kind)
		sbx_die(no.code, "%s", no.msg);
	p->grant_kind = (enum sbx_grant_kind)kind;
	p->grant_checked = 1;
	sbx_grant_key_wipe(p->grant_key);
	free(p->grant_key);
	p->grant_key = NULL;
	p->grant_fd = -1;
	if (use.nonce_dirfd >= 0)
		close(use.nonce_dirfd);
	if (dup2(mfd, 0) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to pass stdin");
	close(mfd);
	if (p->grant_kind == SBX_GRANT_KIND_ARGV)
		sbx_warn("%s", ns_grant_argv_only);
}

const char *ns_env_search(char *const *env)
{
	const char *search = "/usr/local/bin:/usr/bin:/bin";

	for (char *const *e = env; *e; e++)
		if (!strncmp(*e, "PATH=", 5))
			search = *e + 5;
	return search;
}

/* One command of a living sandbox (serve.c), checked as a one-shot run's:
 * its plan is the sandbox's with this command's argv, environment,
 * directory, timeout and program (argv[0] found with the command's PATH),
 * and the grant is verified against it by the same function. */
int ns_grant_request(const struct ns_run *r, struct ns_grant_req *q, char *why, size_t n)
{
	struct ns_args qa = *r->a;
	struct ns_plan qp = *r->p;
	struct ns_run qr = { .a = &qa, .p = &qp };   /* no execution state: as the one-shot's check */
	struct sbx_grant_use use = { .nonce_dirfd = serve_nonce, .nonce_dir = r->p->nonce_dir,
				     .record = !q->dry_run };
	struct sbx_grant_refusal no;
	const char *cwd = q->cwd ? q->cwd : r->p->ops[r->p->ws].dest;
	json_t *doc;
	int code;

	q->kind = 0;
	q->doc = NULL;
	memset(&q->prog, 0, sizeof q->prog);
	if (q->text && !r->p->grant_key)
		return snprintf(why, n, "--grant-fd: this sandbox checks no grants (it was started without "
				"--grant-key)"), SBX_EXIT_USAGE;
	if (!q->text && r->p->grant_key && !q->dry_run)
		return snprintf(why, n, "grant refused: this sandbox runs only granted commands (it was started "
				"with --grant-key): give one with sbx-ns --join PATH --grant-fd FD"), SBX_EXIT_POLICY;
	if (!q->text && !q->dry_run)
		return 0;
	qa.cmd = q->argv;
	qa.timeout_ms = q->timeout_ms;
	qp.env = q->env;
	qp.search = q->search;
	qp.hint = NULL;
	qp.grant_checked = 0;
	qp.have_prog = 1;
	code = find_program(q->argv[0], q->search, cwd, &r->a->allow, &qp.prog, why, n);
	if (code)
		return code;
	doc = plan_doc(&qr, cwd);
	if (q->text) {
		q->kind = verify(&qr, doc, cwd, q->stdin_sha, q->text, q->len, &use, &no);
		if (!q->kind) {
			json_decref(doc);
			free(qp.prog.path);
			snprintf(why, n, "%s", no.msg);
			return no.code;
		}
	}
	if (q->dry_run) {
		q->doc = doc ? json_dumps(doc, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
		if (!q->doc) {
			json_decref(doc);
			free(qp.prog.path);
			return snprintf(why, n, "unable to print the plan: out of memory"), SBX_EXIT_SYS;
		}
		q->doclen = strlen(q->doc);
	}
	json_decref(doc);
	q->prog = qp.prog;
	return 0;
}

void ns_grant_request_end(struct ns_grant_req *q)
{
	free(q->prog.path);
	q->prog.path = NULL;
	free(q->doc);
	q->doc = NULL;
}

const char *ns_grant_name(const struct ns_plan *p)
{
	if (!p->grant_checked)
		return NULL;
	return p->grant_kind == SBX_GRANT_KIND_PLAN ? "plan" : "argv-only";
}

void ns_grant_no_fallback(const struct ns_plan *p, const char *what, int err)
{
	if (p->grant_checked && p->grant_kind == SBX_GRANT_KIND_PLAN)
		sbx_die(SBX_EXIT_NOISOLATION, "unable to create the sandbox the grant is for (%s); a plan "
			"grant does not allow %s", strerror(err), what);
}

/* In the command's process, before it reports "started": the lookup the
 * sandbox makes must lead to the file the plan hashed. Returns an O_PATH
 * fd on it, or -1 when no plan grant is in force. */
int ns_grant_open(const struct ns_run *r, const struct ns_cmd *c)
{
	const struct ns_program *g = c->prog;
	char *const *argv = c->argv;
	char path[PATH_MAX];
	struct stat st;
	int fd;

	if (!g)
		return -1;
	if (!g->found || sbx_exec_find(argv[0], c->search, path, sizeof path) < 0)
		sbx_die(SBX_EXIT_NOTFOUND, "unable to find %s", argv[0]);
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		sbx_die(SBX_EXIT_NOTFOUND, "unable to find %s", argv[0]);
	if (fd < 0 || fstat(fd, &st) < 0)
		sbx_die_errno(SBX_EXIT_EXEC, "unable to exec %s", argv[0]);
	if (!same_file(g, &st))
		sbx_die(SBX_EXIT_POLICY, "grant refused: program differs from the grant (%s in the sandbox "
			"is not the file %s that was hashed, or it changed since)", path, g->path);
	if (r->a->allow.n && !sbx_allowexec_has(&r->a->allow, st.st_dev, st.st_ino))
		sbx_die(SBX_EXIT_POLICY, "refusing to run %s: not one of the --allow-exec files", argv[0]);
	return fd;
}

/* Last: exactly the checked file runs, never the name again. */
void ns_grant_exec(const struct ns_cmd *c, int fd)
{
	char *const *argv = c->argv;

	if (fd < 0)
		return;
	syscall(SYS_execveat, fd, "", argv, c->env, AT_EMPTY_PATH);
	/* A script's interpreter is handed /dev/fd/N: keep it open then. */
	if (errno == ENOENT && fcntl(fd, F_SETFD, 0) == 0)
		syscall(SYS_execveat, fd, "", argv, c->env, AT_EMPTY_PATH);
	if (errno == ENOENT)
		sbx_die_errno(SBX_EXIT_NOTFOUND, "unable to exec %s", argv[0]);
	sbx_die_errno(SBX_EXIT_EXEC, "unable to exec %s", argv[0]);
}

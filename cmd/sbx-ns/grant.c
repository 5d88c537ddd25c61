/* Grants in sbx-ns (lib/policy/grant.h): the run a grant is checked
 * against is the run's own plan, the document --dry-run prints (plan.c),
 * built once the plan is final and before anything of the sandbox exists.
 *
 *   the program: the file argv[0] resolves to in the sandbox, hashed, and
 *     in the command's process exactly that file executed (program.c);
 *   the check: stdin into a sealed copy, the plan's digests, the grant
 *     verified against them (kind, expiry, every field, then the nonce).
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
#include <time.h>
#include <unistd.h>


/* --grant-nonce-dir DIR: where single-use grants are recorded. Checked as
 * every trusted directory (sbx_grant_nonce_open: the walk from /, owners
 * and modes; absolute and canonical at parse time) and, once the plan is
 * known, outside every writable root. */
static int nonce_dir(const struct ns_plan *p)
{
	const char *dir = p->nonce_dir;
	struct sbx_protect prot = { 0 };
	const struct mount_op *op;
	int fd;

	if (!dir)
		return -1;
	fd = sbx_grant_nonce_open(dir, p->caller_uid);
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
	return sbx_grant_nonce_path("--grant-nonce-dir", arg);
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
	mfd = sbx_grant_stdin(0, SBX_GRANT_STDIN_MAX, sha);
	if (mfd < 0 && errno == EFBIG)
		sbx_die_usage("%s", SBX_GRANT_STDIN_BIG);
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
	struct ns_view view;
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
	/* in the sandbox's own root, which pid 1 showed once it was up */
	if (r->x.sandbox_root < 0)
		return snprintf(why, n, "unable to look up %s: the sandbox's root is not open", q->argv[0]),
		       SBX_EXIT_SYS;
	ns_view_living(&view, r->x.sandbox_root);
	code = ns_find_program(r->p, &view, q->argv[0], q->search, cwd, &r->a->allow, &qp.prog, why, n);
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

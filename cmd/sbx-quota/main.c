/* sbx-quota: prove that a workspace directory sits under an enforced XFS or
 * ext4 project quota no looser than asked, then run the rest of argv with
 * the verified directory handed on as an fd; or, as an administrator,
 * prepare such a quota; or report what is set.
 *
 * Trust: the administrator's quota setup is trusted, the workspace contents
 * are not. Everything is read through fds: the workspace is opened once
 * (O_NOFOLLOW) and that open directory is what gets checked and passed on. */
#include "capdrop.h"
#include "changeset.h"
#include "die.h"
#include "exec.h"
#include "exitcodes.h"
#include "status.h"
#include "fd.h"
#include "json.h"
#include "opts.h"
#include "parse.h"
#include "policy.h"
#include "quota.h"
#include "quota_tree.h"
#include "walk.h"
#include "quote.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>

#define TOOL "sbx-quota"
#define MAX_BYTES (1ULL << 60)
#define MAX_INODES (1ULL << 48)

static const char usage_text[] =
	"usage: sbx-quota verify --workspace DIR [OPTION]... [--] [PROG [ARG]...]\n"
	"       sbx-quota prepare --workspace DIR --project ID --disk SIZE [OPTION]...\n"
	"       sbx-quota report --workspace DIR [--json]\n"
	"Prove that a workspace sits under an enforced project quota, then run PROG;\n"
	"prepare such a quota; or report it.\n"
	"\n"
	"  --workspace DIR        the workspace directory; absolute\n"
	"  --changes DIR          its change set (sbx-ns --changes): the same project\n"
	"\n"
	"verify:\n"
	"  --disk SIZE            the most the quota may allow; K, M, G or T\n"
	"  --inodes N             the most inodes the quota may allow\n"
	"  --max-file SIZE        RLIMIT_FSIZE for PROG and what it starts\n"
	"  --baseline FILE        the administrator's baseline policy (JSON)\n"
	"  --baseline-fd FD       the baseline from an open fd (consumed)\n"
	"  --policy-fd FD         the limits as a JSON policy\n"
	"  --clamp                narrow limits wider than the baseline to it\n"
	"  --pass-fd N            leave the verified directory open as fd N for PROG\n"
	"  --status-fd FD         write JSON status lines to FD\n"
	"\n"
	"prepare (--disk and --inodes are the limits it sets):\n"
	"  --project ID           the project id to give the workspace\n"
	"  --replace              let it raise the limits already set\n"
	"\n"
	"report:\n"
	"  --json                 one JSON line instead of text\n";

enum { O_WORKSPACE = 1, O_DISK, O_INODES, O_MAXFILE, O_PASSFD, O_STATUSFD,
       O_PROJECT, O_REPLACE, O_JSON, O_HELP, O_BASELINE, O_BASELINE_FD, O_POLICY_FD,
       O_CLAMP, O_CHANGES };

struct opts {
	const char *workspace;
	const char *changes;         /* verify, prepare: --changes DIR */
	uint64_t disk, inodes, max_file, project;
	int pass_fd, status_fd, replace, json;
	int statfs_ok;               /* the baseline accepts statfs's figures (verify) */
	struct sbx_policy_opts pol;  /* verify: --baseline, --baseline-fd, --policy-fd, --clamp */
	char **prog;
};

/* The opened workspace and what the filesystem says about it. */
struct ws {
	char name[1024];          /* the path given, escaped for messages */
	const char *path;
	int fd;
	struct sbx_statx stx;
	struct statfs sfs;
	enum sbx_qfs kind;
	const char *fsname;
	unsigned long dev;
	uint64_t mnt_id;
	int64_t born_sec;         /* statx btime, 0 when the filesystem has none */
	uint32_t born_nsec;
	uint32_t projid;
	int inherit;
};

static noreturn void usage_ok(void);

static void parse(int argc, char **argv, int verb, struct opts *o);
static int verify(const struct opts *o);
static int prepare(const struct opts *o);
static int report(const struct opts *o);

int main(int argc, char **argv)
{
	struct opts o = { .pass_fd = -1, .status_fd = -1, .pol = { NULL, -1, -1, 0 } };
	const char *verb = argc > 1 ? argv[1] : NULL;

	sbx_setprog(TOOL);
	sbx_opt_version(argc, argv);
	if (!verb)
		sbx_die_usage("missing subcommand (verify, prepare or report)");
	if (verb[0] == '-') {
		/* Options before the subcommand: only --help; the parser says
		 * the rest in the words every tool uses. */
		static const struct sbx_opt tab[] = { { "help", SBX_NOARG, SBX_ONCE, O_HELP }, { 0, 0, 0, 0 } };
		struct sbx_optstate st;
		const char *arg;
		sbx_opt_init(&st, 1);
		if (sbx_opt_next(&st, tab, argc, argv, &arg) == O_HELP)
			usage_ok();
		sbx_die_usage("missing subcommand (verify, prepare or report)");
	}
	if (!strcmp(verb, "verify")) {
		parse(argc, argv, 'v', &o);
		return verify(&o);
	}
	if (!strcmp(verb, "prepare")) {
		parse(argc, argv, 'p', &o);
		return prepare(&o);
	}
	if (!strcmp(verb, "report")) {
		parse(argc, argv, 'r', &o);
		return report(&o);
	}
	sbx_die_usage("unknown subcommand '%s' (verify, prepare or report)", verb);
}

static noreturn void usage_ok(void)
{
	sbx_opt_help(usage_text);
}

static int parse_pass_fd(const char *s)
{
	uint64_t v = 0;
	const char *why = sbx_parse_u64(s, 0, 1U << 20, &v);

	if (!why && v <= 2)
		why = "0, 1 and 2 are stdio";
	/* An open fd there belongs to someone (the status fd, a later
	 * tool's): never replace it silently. */
	if (!why && fcntl((int)v, F_GETFD) >= 0)
		why = "already open";
	if (why)
		sbx_die_usage("--pass-fd: invalid fd '%s': %s", s, why);
	return (int)v;
}

/* verify: the disk and inode limits become the effective policy's (the
 * request, --disk/--inodes or the JSON on --policy-fd, merged with the
 * baseline): the smaller wins, a request never raises one. With a policy
 * the limits may come from it alone, so --disk is then optional. */
static void apply_policy(struct opts *o)
{
	struct sbx_policy req, eff;
	struct sbx_err e;

	if (!sbx_policy_opts_used(&o->pol))
		return;
	sbx_policy_init(&req, "argv");
	if ((o->disk && sbx_policy_set_u64(&req, &req.disk, o->disk, "--disk", &e) < 0) ||
	    (o->inodes && sbx_policy_set_u64(&req, &req.inodes, o->inodes, "--inodes", &e) < 0))
		sbx_err_die(&e);
	sbx_policy_effective(&o->pol, &req, SBX_PSCOPE_QUOTA, NULL, TOOL, o->status_fd, &eff);
	o->disk = eff.disk.set ? eff.disk.v : 0;
	o->inodes = eff.inodes.set ? eff.inodes.v : 0;
	o->statfs_ok = eff.statfs_ok.set && eff.statfs_ok.v;
	sbx_policy_free(&eff);
	sbx_policy_free(&req);
}

/* What verify and prepare both take: the workspace, the changes directory
 * and the two limits. */
#define LIMIT_OPTS \
	{ "workspace", SBX_ARG, SBX_ONCE, O_WORKSPACE }, \
	{ "changes", SBX_ARG, SBX_ONCE, O_CHANGES }, \
	{ "disk", SBX_ARG, SBX_ONCE, O_DISK }, \
	{ "inodes", SBX_ARG, SBX_ONCE, O_INODES }

static void parse(int argc, char **argv, int verb, struct opts *o)
{
	static const struct sbx_opt verify_tab[] = {
		LIMIT_OPTS,
		{ "max-file", SBX_ARG, SBX_ONCE, O_MAXFILE },
		{ "pass-fd", SBX_ARG, SBX_ONCE, O_PASSFD },
		{ "status-fd", SBX_ARG, SBX_ONCE, O_STATUSFD },
		{ "baseline", SBX_ARG, SBX_ONCE, O_BASELINE },
		{ "baseline-fd", SBX_ARG, SBX_ONCE, O_BASELINE_FD },
		{ "policy-fd", SBX_ARG, SBX_ONCE, O_POLICY_FD },
		{ "clamp", SBX_NOARG, SBX_ONCE, O_CLAMP },
		{ "help", SBX_NOARG, SBX_ONCE, O_HELP },
		{ 0, 0, 0, 0 },
	};
	static const struct sbx_opt prepare_tab[] = {
		LIMIT_OPTS,
		{ "project", SBX_ARG, SBX_ONCE, O_PROJECT },
		{ "replace", SBX_NOARG, SBX_ONCE, O_REPLACE },
		{ "help", SBX_NOARG, SBX_ONCE, O_HELP },
		{ 0, 0, 0, 0 },
	};
	static const struct sbx_opt report_tab[] = {
		{ "workspace", SBX_ARG, SBX_ONCE, O_WORKSPACE },
		{ "json", SBX_NOARG, SBX_ONCE, O_JSON },
		{ "help", SBX_NOARG, SBX_ONCE, O_HELP },
		{ 0, 0, 0, 0 },
	};
	const struct sbx_opt *tab = verb == 'v' ? verify_tab : verb == 'p' ? prepare_tab : report_tab;
	struct sbx_optstate st;
	const char *arg, *disk_arg = NULL;
	int id;

	sbx_opt_init(&st, 2);
	while ((id = sbx_opt_next(&st, tab, argc, argv, &arg))) {
		switch (id) {
		case O_WORKSPACE: o->workspace = sbx_opt_abspath("--workspace", arg); break;
		case O_CHANGES: o->changes = sbx_opt_canon_dir("--changes", arg); break;
		case O_DISK: o->disk = sbx_opt_size("--disk", arg, MAX_BYTES); disk_arg = arg; break;
		case O_INODES: o->inodes = sbx_opt_u64("--inodes", arg, 1, MAX_INODES); break;
		case O_MAXFILE: o->max_file = sbx_opt_size("--max-file", arg, MAX_BYTES); break;
		case O_PASSFD: o->pass_fd = parse_pass_fd(arg); break;
		case O_STATUSFD: o->status_fd = sbx_status_opt(arg); break;
		case O_PROJECT: o->project = sbx_opt_u64("--project", arg, 1, 4294967294ULL); break;
		case O_REPLACE: o->replace = 1; break;
		case O_JSON: o->json = 1; break;
		case O_BASELINE: sbx_policy_opt_baseline(&o->pol, arg); break;
		case O_BASELINE_FD: sbx_policy_opt_baseline_fd(&o->pol, arg); break;
		case O_POLICY_FD: sbx_policy_opt_policy_fd(&o->pol, arg); break;
		case O_CLAMP: o->pol.clamp = 1; break;
		case O_HELP: usage_ok();
		}
	}
	if (!o->workspace)
		sbx_die_usage("missing --workspace");
	if (verb == 'v')
		apply_policy(o);
	if (verb != 'r' && !o->disk)
		sbx_die_usage("missing --disk");
	if (verb == 'p' && !o->project)
		sbx_die_usage("missing --project");
	/* The inode limit may be at most one per 4 KiB of disk: below that
	 * no inode at all would be allowed. */
	if (disk_arg && o->disk < 4096)
		sbx_die_usage("--disk: invalid size '%s': below 4096 bytes", disk_arg);
	if (o->disk && o->disk < 4096)   /* a policy's disk_bytes */
		sbx_die_usage("policy: disk limit of %llu bytes is below 4096 bytes",
			      (unsigned long long)o->disk);
	if (verb == 'p' && o->inodes && o->inodes > o->disk / 4096)
		sbx_die_usage("--inodes: %llu is more than --disk / 4096 = %llu",
			      (unsigned long long)o->inodes, (unsigned long long)(o->disk / 4096));
	if (st.ind < argc) {
		if (verb != 'v')
			sbx_die_usage("unexpected argument '%s'", argv[st.ind]);
		o->prog = argv + st.ind;
	}
}

/* Open the workspace once; everything after works on this fd. */
static void ws_open(struct ws *w, const char *path)
{
	memset(w, 0, sizeof *w);
	w->path = path;
	sbx_quote(w->name, sizeof w->name, path, strlen(path), SIZE_MAX, SBX_QUOTE_NAME);
	w->fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (w->fd < 0) {
		struct stat sb;
		/* O_DIRECTORY|O_NOFOLLOW on a link says ENOTDIR, like a file. */
		if (errno == ELOOP || (errno == ENOTDIR && lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode)))
			sbx_die_usage("--workspace: invalid path '%s': a symbolic link", w->name);
		if (errno == ENOTDIR)
			sbx_die_usage("--workspace: invalid path '%s': not a directory", w->name);
		sbx_die(SBX_EXIT_SYS, "unable to open workspace %s: %s", w->name, strerror(errno));
	}
	if (sbx_statx(w->fd, "", AT_EMPTY_PATH, SBX_STATX_TYPE | SBX_STATX_MNT_ID | SBX_STATX_BTIME,
		      &w->stx) < 0)
		sbx_die(SBX_EXIT_SYS, "unable to stat workspace %s: %s", w->name, strerror(errno));
	if (fstatfs(w->fd, &w->sfs) < 0)
		sbx_die(SBX_EXIT_SYS, "unable to statfs workspace %s: %s", w->name, strerror(errno));
	w->dev = makedev(w->stx.stx_dev_major, w->stx.stx_dev_minor);
	if (w->stx.stx_mask & SBX_STATX_BTIME) {
		w->born_sec = w->stx.stx_btime.tv_sec;
		w->born_nsec = w->stx.stx_btime.tv_nsec;
	}
	w->mnt_id = (w->stx.stx_mask & SBX_STATX_MNT_ID) ? w->stx.stx_mnt_id : 0;
	w->kind = sbx_quota_fs_kind((unsigned long)w->sfs.f_type);
	w->fsname = sbx_quota_fs_name((unsigned long)w->sfs.f_type);
}

static void require_xfs_or_ext4(const struct ws *w)
{
	if (w->kind != SBX_QFS_OTHER)
		return;
	if (w->fsname)
		sbx_die(SBX_EXIT_UNSUPPORTED,
		     "hard limits unsupported: %s is on %s, not XFS or ext4", w->name, w->fsname);
	sbx_die(SBX_EXIT_UNSUPPORTED,
	     "hard limits unsupported: %s is on a filesystem with magic 0x%lx, not XFS or ext4",
	     w->name, (unsigned long)w->sfs.f_type);
}

/* errno values meaning "this filesystem or kernel has no quota for us". */
static int quota_absent(int e)
{
	return e == ENOSYS || e == EOPNOTSUPP || e == ENOTTY || e == EINVAL ||
	       e == ENOENT || e == ENODEV || e == ENOTBLK || e == ESRCH;
}

/* Accounting and enforcement of project quotas, or 101. */
static void require_enforced(const struct ws *w)
{
	struct sbx_qstate qs;

	if (sbx_quota_state(w->fd, w->mnt_id, w->dev, &qs) < 0) {
		if (quota_absent(errno))
			sbx_die(SBX_EXIT_UNSUPPORTED,
			     "hard limits unsupported: %s (%s): the kernel offers no quota control for it: %s",
			     w->name, w->fsname, strerror(errno));
		sbx_die(SBX_EXIT_SYS, "unable to read the quota state of %s: %s",
		     w->name, strerror(errno));
	}
	if (!qs.accounting)
		sbx_die(SBX_EXIT_UNSUPPORTED,
		     "hard limits unsupported: %s (%s): project quota accounting is off (mount option prjquota)",
		     w->name, w->fsname);
	if (!qs.enforcing)
		sbx_die(SBX_EXIT_UNSUPPORTED,
		     "hard limits unsupported: %s (%s): project quota enforcement is off",
		     w->name, w->fsname);
}

static void read_root_attr(struct ws *w)
{
	if (sbx_quota_getattr(w->fd, &w->projid, &w->inherit) < 0)
		sbx_die(SBX_EXIT_SYS, "unable to read the project id of workspace %s: %s",
		     w->name, strerror(errno));
}

/* The project's limits: Q_XGETQUOTA when allowed (root), else statfs,
 * whose figures are the smaller of the soft and hard limits (held in
 * bhard/ihard all the same: see sbx_quota_statfs). Returns the source's
 * name. */
static const char *read_limits(const struct ws *w, uint32_t projid, struct sbx_qlimits *q)
{
	if (sbx_quota_get(w->fd, w->mnt_id, w->dev, projid, q) == 0)
		return "quotactl";
	if (errno != EPERM && errno != EACCES)
		sbx_die(SBX_EXIT_SYS, "unable to read the quota of project %u on %s: %s",
		     projid, w->name, strerror(errno));
	if (sbx_quota_statfs(w->fd, q) < 0)
		sbx_die(SBX_EXIT_SYS, "unable to statfs workspace %s: %s", w->name, strerror(errno));
	return "statfs";
}

static void json_identity(struct sbx_json *j, const struct ws *w)
{
	char buf[64];
	unsigned fsid[2];

	sbx_json_str(j, "workspace", w->path);
	sbx_json_str(j, "fs", w->kind == SBX_QFS_XFS ? "xfs" : w->kind == SBX_QFS_EXT4 ? "ext4" :
		     w->fsname ? w->fsname : "other");
	snprintf(buf, sizeof buf, "%u:%u", w->stx.stx_dev_major, w->stx.stx_dev_minor);
	sbx_json_str(j, "dev", buf);
	memcpy(fsid, &w->sfs.f_fsid, sizeof fsid);
	snprintf(buf, sizeof buf, "%08x%08x", fsid[0], fsid[1]);
	sbx_json_str(j, "fsid", buf);
	if (w->mnt_id)
		sbx_json_uint(j, "mount_id", w->mnt_id);
	else
		sbx_json_null(j, "mount_id");
	sbx_json_uint(j, "project", w->projid);
}

static uint64_t min_not_zero(uint64_t a, uint64_t b)
{
	return !a ? b : !b ? a : a < b ? a : b;
}

/* What the limits are and how far they are known to be hard. statfs's
 * figures are never called hard: "block_limit" is the soft limit when one
 * is set, and only a record of prepare's (assurance "record") or the
 * baseline (assurance "statfs") vouches for them. */
static void json_limits(struct sbx_json *j, const char *src, const struct sbx_qlimits *q,
			const char *assurance)
{
	sbx_json_str(j, "limits_from", src);
	if (!strcmp(src, "statfs") && !strcmp(assurance, "record")) {
		sbx_json_uint(j, "block_limit", min_not_zero(q->bsoft, q->bhard));
		sbx_json_uint(j, "inode_limit", min_not_zero(q->isoft, q->ihard));
		sbx_json_uint(j, "block_hard", q->bhard);
		sbx_json_uint(j, "inode_hard", q->ihard);
	} else if (!strcmp(src, "statfs")) {
		sbx_json_uint(j, "block_limit", q->bhard);
		sbx_json_uint(j, "inode_limit", q->ihard);
	} else {
		sbx_json_uint(j, "block_hard", q->bhard);
		sbx_json_uint(j, "block_soft", q->bsoft);
		sbx_json_uint(j, "inode_hard", q->ihard);
		sbx_json_uint(j, "inode_soft", q->isoft);
	}
	sbx_json_uint(j, "bytes_used", q->bused);
	sbx_json_uint(j, "inodes_used", q->iused);
	sbx_json_str(j, "assurance", assurance);
}

/* Whether statfs's figures q may be taken for the limits prepare recorded
 * on the root: NULL when they are exactly what the record implies (the
 * smaller of its soft and hard limits; r then holds the record), else the
 * reason they may not, in why. prepare sets a soft limit one block (one
 * inode) below the hard one, so the figure statfs then shows is not the
 * round one an administrator gives another tool: a soft limit set later
 * at the requested size, to hide a looser hard one, shows as a mismatch. */
static const char *record_disagrees(const struct ws *w, const struct sbx_qlimits *q,
				    struct sbx_qrecord *rec, char *why, size_t sz)
{
	struct sbx_qrecord r;
	char rwhy[400];
	int n = sbx_quota_record_read(w->stx.stx_dev_major, w->stx.stx_dev_minor, w->stx.stx_ino,
				      &r, rwhy, sizeof rwhy);
	uint64_t bshow = 0, ishow = 0;

	if (n > 0) {
		bshow = min_not_zero(r.bsoft, r.bhard);
		ishow = min_not_zero(r.isoft, r.ihard);
	}

	if (n < 0)
		snprintf(why, sz, "%s", rwhy);
	else if (n == 0 || r.born_sec != w->born_sec || r.born_nsec != w->born_nsec)
		snprintf(why, sz, "it has no record of sbx-quota prepare%s",
			 n ? " (only one of an earlier directory with its inode number)" : "");
	else if (r.projid != w->projid)
		snprintf(why, sz, "its record is for project %u", r.projid);
	else if (bshow != q->bhard)
		snprintf(why, sz, "its record implies a block limit of %llu, statfs shows %llu",
			 (unsigned long long)bshow, (unsigned long long)q->bhard);
	else if (ishow != q->ihard)
		snprintf(why, sz, "its record implies an inode limit of %llu, statfs shows %llu",
			 (unsigned long long)ishow, (unsigned long long)q->ihard);
	else {
		*rec = r;
		return NULL;
	}
	return why;
}

/* The assurance of the limits just checked: "quotactl" (read as they
 * are), "record" (statfs agrees with prepare's record), "statfs" (the
 * baseline accepts statfs's figures, announced on stderr). Else 102: a
 * soft limit would hide a looser hard one. */
static const char *assurance(const struct ws *w, const struct opts *o, const char *src,
			     struct sbx_qlimits *q)
{
	struct sbx_qrecord r;
	char why[512];

	if (strcmp(src, "statfs"))
		return src;
	if (!record_disagrees(w, q, &r, why, sizeof why)) {
		/* The recorded limits stand; statfs's use stays. */
		q->bhard = r.bhard;
		q->bsoft = r.bsoft;
		q->ihard = r.ihard;
		q->isoft = r.isoft;
		return "record";
	}
	if (o->statfs_ok) {
		sbx_warn("workspace %s: taking statfs's limits of project %u as hard, as the baseline "
			 "accepts (accept_statfs_quota): %s, and a soft limit would hide a looser hard one",
			 w->name, w->projid, why);
		return "statfs";
	}
	sbx_die(SBX_EXIT_POLICY,
	     "refusing workspace %s: statfs shows the soft limit of project %u when one is set, "
	     "its hard limits need CAP_SYS_ADMIN to read, and %s; to fix: run sbx-quota prepare "
	     "on it as root, or set accept_statfs_quota in the baseline", w->name, w->projid, why);
}

/* The project's use once deleted inodes are released. XFS frees them in
 * the background, so for a moment after an unlink they are still charged:
 * before taking a count above want as a sharing tree, flush the
 * filesystem and read again, a bounded number of times (about a second).
 * An inode another tree holds stays charged and is still reported. */
static void settle_use(const struct ws *w, uint32_t projid, const char *src, uint64_t want,
		       struct sbx_qlimits *q)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	struct sbx_qlimits now;

	for (int i = 0; i < 50 && q->iused > want; i++) {
		if (syncfs(w->fd) < 0)
			sbx_die(SBX_EXIT_SYS, "unable to sync the filesystem of workspace %s: %s",
			     w->name, strerror(errno));
		if (i)
			nanosleep(&ts, NULL);
		if (!strcmp(src, "statfs") ? sbx_quota_statfs(w->fd, &now) < 0 :
		    sbx_quota_get(w->fd, w->mnt_id, w->dev, projid, &now) < 0)
			sbx_die(SBX_EXIT_SYS, "unable to read the quota of project %u on %s: %s",
			     projid, w->name, strerror(errno));
		/* Only the use: the limits were checked already. */
		q->bused = now.bused;
		q->iused = now.iused;
	}
}

/* sbx-quota must not run a command its quota does not bind: ext4 exempts
 * CAP_SYS_RESOURCE from hard limits (XFS does not). Dropped on both, one
 * rule: from every set, the bounding one included. */
static void drop_quota_exemption(const struct ws *w)
{
	const char *step = "";
	int nnp;

	if (sbx_cap_drop(CAP_SYS_RESOURCE, &step, &nnp) < 0)
		sbx_die(SBX_EXIT_SYS, "unable to drop CAP_SYS_RESOURCE (which exempts from quotas) before exec: %s: %s",
		     step, strerror(errno));
}

/* --- verify ------------------------------------------------------------ */

static void check_limits(const struct ws *w, const struct opts *o, const char *src,
			 const struct sbx_qlimits *q)
{
	int viastatfs = !strcmp(src, "statfs"), viarecord = !strcmp(src, "record");
	const char *b = viastatfs ? "block limit (statfs)" :
			viarecord ? "block hard limit (recorded)" : "block hard limit";
	const char *i = viastatfs ? "inode limit (statfs)" :
			viarecord ? "inode hard limit (recorded)" : "inode hard limit";
	unsigned long long per4k = o->disk / 4096;

	if (!q->bhard)
		sbx_die(SBX_EXIT_POLICY, "refusing workspace %s: project %u has no %s",
		     w->name, w->projid, b);
	if (q->bhard > o->disk)
		sbx_die(SBX_EXIT_POLICY, "refusing workspace %s: project %u %s %llu exceeds --disk %llu",
		     w->name, w->projid, b, (unsigned long long)q->bhard, (unsigned long long)o->disk);
	if (!q->ihard)
		sbx_die(SBX_EXIT_POLICY, "refusing workspace %s: project %u has no %s",
		     w->name, w->projid, i);
	if (q->ihard > per4k)
		sbx_die(SBX_EXIT_POLICY,
		     "refusing workspace %s: project %u %s %llu exceeds --disk / 4096 = %llu",
		     w->name, w->projid, i, (unsigned long long)q->ihard, per4k);
	if (o->inodes && q->ihard > o->inodes)
		sbx_die(SBX_EXIT_POLICY, "refusing workspace %s: project %u %s %llu exceeds --inodes %llu",
		     w->name, w->projid, i, (unsigned long long)q->ihard, (unsigned long long)o->inodes);
}

/* What verify and prepare open first, in this order: the workspace, the
 * changes directory if named, the filesystem's kind and enforcement, the
 * root's project attributes. */
static void open_enforced(struct ws *w, struct qchg *c, const struct opts *o)
{
	ws_open(w, o->workspace);
	if (o->changes)
		qchg_open(c, o->changes, w->fd, w->name);
	require_xfs_or_ext4(w);
	require_enforced(w);
	read_root_attr(w);
}

static int verify(const struct opts *o)
{
	struct ws w;
	struct sbx_qlimits q;
	struct sbx_qtree t = { .mode = SBX_QTREE_CHECK };
	struct qchg c = { .fd = -1 };
	const char *src, *how;
	uint64_t held;
	int r;

	open_enforced(&w, &c, o);
	if (!w.projid)
		sbx_die(SBX_EXIT_POLICY, "refusing workspace %s: it has no project id", w.name);
	if (!w.inherit)
		sbx_die(SBX_EXIT_POLICY, "refusing workspace %s: its root lacks PROJINHERIT", w.name);
	src = read_limits(&w, w.projid, &q);
	check_limits(&w, o, src, &q);

	t.projid = w.projid;
	r = sbx_qtree_run(w.fd, &t);
	if (r)
		sbx_err_die(&t.err);
	held = t.entries + 1;
	if (o->changes) {
		qchg_verify(&c, w.projid, w.name);
		held += c.inodes;
	}
	how = assurance(&w, o, src, &q);
	if (!strcmp(how, "record"))   /* the hard limits behind what statfs showed */
		check_limits(&w, o, how, &q);
	settle_use(&w, w.projid, src, held, &q);
	/* The filesystem charges the project with every inode that has its
	 * id; the tree holds entries + 1 (its root), its change set c.inodes.
	 * More charged than held means some other tree uses the project and
	 * shares its limits. */
	if (q.iused > held)
		sbx_die(SBX_EXIT_POLICY,
		     "refusing workspace %s: project %u is shared: %llu inodes are charged to it, the workspace has %llu%s",
		     w.name, w.projid, (unsigned long long)q.iused, (unsigned long long)held,
		     o->changes ? " with its change set" : "");
	if (c.fd >= 0)
		close(c.fd);

	if (o->max_file) {
		struct rlimit rl;
		if (getrlimit(RLIMIT_FSIZE, &rl) < 0)
			sbx_die(SBX_EXIT_SYS, "unable to read RLIMIT_FSIZE: %s", strerror(errno));
		/* Never loosen an inherited limit: take the smaller. */
		if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > o->max_file)
			rl.rlim_max = o->max_file;
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
			sbx_die(SBX_EXIT_SYS, "unable to set RLIMIT_FSIZE: %s", strerror(errno));
	}
	if (o->pass_fd >= 0) {
		/* The workspace may already be open as that very fd (open(2)
		 * takes the lowest free one): then only close-on-exec goes. */
		if (w.fd == o->pass_fd ? sbx_fd_cloexec(w.fd, 0) < 0 : dup2(w.fd, o->pass_fd) < 0)
			sbx_die(SBX_EXIT_SYS, "unable to pass the workspace as fd %d: %s",
			     o->pass_fd, strerror(errno));
	}
	if (o->status_fd >= 0) {
		struct sbx_json j;
		sbx_json_begin(&j, TOOL, "verified");
		json_identity(&j, &w);
		json_limits(&j, src, &q, how);
		sbx_json_uint(&j, "entries", t.entries + 1);
		if (o->changes) {
			sbx_json_str(&j, "changes", o->changes);
			sbx_json_uint(&j, "changes_entries", c.inodes);
		}
		if (o->max_file)
			sbx_json_uint(&j, "max_file", o->max_file);
		if (o->pass_fd >= 0)
			sbx_json_int(&j, "pass_fd", o->pass_fd);
		sbx_json_write(&j, o->status_fd);
		if (!o->prog) {
			sbx_json_begin(&j, TOOL, "exit");
			sbx_json_int(&j, "code", 0);
			sbx_json_write(&j, o->status_fd);
		}
	}
	if (w.fd != o->pass_fd)
		close(w.fd);
	if (!o->prog)
		return SBX_EXIT_OK;
	drop_quota_exemption(&w);
	sbx_exec(o->prog, NULL, NULL);
}

/* --- prepare ----------------------------------------------------------- */

static int prepare(const struct opts *o)
{
	struct ws w;
	struct sbx_qlimits q, back, set;
	struct sbx_qrecord rec;
	struct sbx_qtree t = { .mode = SBX_QTREE_SCAN };
	struct qchg c = { .fd = -1 };
	char path[128];
	const char *step = "";
	uint32_t id = (uint32_t)o->project;
	uint64_t bsize, bhard, ihard, held;
	int r;

	open_enforced(&w, &c, o);
	if (sbx_quota_get(w.fd, w.mnt_id, w.dev, id, &q) < 0)
		sbx_die(SBX_EXIT_SYS, "unable to read the quota of project %u on %s: %s",
		     id, w.name, strerror(errno));

	/* Limits the filesystem can hold exactly: XFS rounds a block limit up
	 * to its block size and ext4's quota file to 1 KiB, either of which
	 * would make a limit just above the request. */
	bsize = w.sfs.f_bsize >= 1024 ? (uint64_t)w.sfs.f_bsize : 1024;
	bhard = o->disk / bsize * bsize;
	ihard = o->inodes ? o->inodes : o->disk / 4096;
	if (!bhard)
		sbx_die_usage("--disk: %llu is below the block size %llu",
			      (unsigned long long)o->disk, (unsigned long long)bsize);

	/* First pass, read-only: the tree's shape, and how many of its inodes
	 * already have the id. */
	t.projid = id;
	r = sbx_qtree_run(w.fd, &t);
	if (r)
		sbx_err_die(&t.err);
	held = t.in_project + (w.projid == id);
	if (o->changes) {
		qchg_scan(&c, id);
		held += c.in_project;
	}
	settle_use(&w, id, "quotactl", held, &q);
	if (q.iused > held)
		sbx_die(SBX_EXIT_POLICY,
		     "refusing to prepare %s: project %u is in use by %llu inodes outside the workspace%s",
		     w.name, id, (unsigned long long)(q.iused - held),
		     o->changes ? " and its change set" : "");
	if (!o->replace && q.bhard && bhard > q.bhard)
		sbx_die(SBX_EXIT_POLICY,
		     "refusing to prepare %s: project %u has a block hard limit of %llu; raising it to %llu needs --replace",
		     w.name, id, (unsigned long long)q.bhard, (unsigned long long)bhard);
	if (!o->replace && q.ihard && ihard > q.ihard)
		sbx_die(SBX_EXIT_POLICY,
		     "refusing to prepare %s: project %u has an inode hard limit of %llu; raising it to %llu needs --replace",
		     w.name, id, (unsigned long long)q.ihard, (unsigned long long)ihard);

	/* An old record must not outlive a failure below. */
	sbx_quota_record_path(path, sizeof path, w.stx.stx_dev_major, w.stx.stx_dev_minor, w.stx.stx_ino);
	if (sbx_quota_record_remove(w.stx.stx_dev_major, w.stx.stx_dev_minor, w.stx.stx_ino) < 0)
		sbx_die(SBX_EXIT_SYS, "unable to remove the old record %s of workspace %s: %s",
		     path, w.name, strerror(errno));
	/* Limits before ids: every inode is limited the moment it joins.
	 * The soft limits sit one block and one inode below (see
	 * record_disagrees); past them writes go on until the hard limit for
	 * the filesystem's grace period (a week by default), then stop there. */
	memset(&set, 0, sizeof set);
	set.bhard = bhard;
	set.bsoft = bhard > bsize ? bhard - bsize : 0;
	set.ihard = ihard;
	set.isoft = ihard - 1;
	if (sbx_quota_set(w.fd, w.mnt_id, w.dev, id, &set) < 0)
		sbx_die(SBX_EXIT_SYS, "unable to set the limits of project %u on %s: %s",
		     id, w.name, strerror(errno));
	if (sbx_quota_setattr(w.fd, id, 1) < 0)
		sbx_die(SBX_EXIT_SYS, "unable to set the project id of workspace %s: %s",
		     w.name, strerror(errno));
	t.mode = SBX_QTREE_APPLY;
	r = sbx_qtree_run(w.fd, &t);
	if (r)
		sbx_err_die(&t.err);
	if (o->changes) {
		qchg_apply(&c, id);
		close(c.fd);
	}
	if (sbx_quota_get(w.fd, w.mnt_id, w.dev, id, &back) < 0)
		sbx_die(SBX_EXIT_SYS, "unable to read the quota of project %u on %s: %s",
		     id, w.name, strerror(errno));
	if (back.bhard != set.bhard || back.ihard != set.ihard || back.bsoft != set.bsoft ||
	    back.isoft != set.isoft)
		sbx_die(SBX_EXIT_SYS,
		     "unable to set the limits of project %u on %s: read back %llu bytes (soft %llu), %llu inodes (soft %llu)",
		     id, w.name, (unsigned long long)back.bhard, (unsigned long long)back.bsoft,
		     (unsigned long long)back.ihard, (unsigned long long)back.isoft);
	/* Last: a record stands only for limits that were set and read back. */
	rec.projid = id;
	rec.ino = w.stx.stx_ino;
	rec.born_sec = w.born_sec;
	rec.born_nsec = w.born_nsec;
	rec.bhard = set.bhard;
	rec.bsoft = set.bsoft;
	rec.ihard = set.ihard;
	rec.isoft = set.isoft;
	if (sbx_quota_record_write(w.stx.stx_dev_major, w.stx.stx_dev_minor, &rec, &step) < 0)
		sbx_die(SBX_EXIT_SYS, "unable to record the limits of workspace %s in %s: %s: %s",
		     w.name, path, step, strerror(errno));
	close(w.fd);
	return SBX_EXIT_OK;
}

/* --- report ------------------------------------------------------------ */

static int report(const struct opts *o)
{
	struct ws w;
	struct sbx_qstate qs;
	struct sbx_qlimits q;
	const char *src = "none", *state = "on", *how = "none", *why = NULL;
	struct sbx_qrecord r;
	char whybuf[512];
	int have_q = 0;

	ws_open(&w, o->workspace);
	require_xfs_or_ext4(&w);
	read_root_attr(&w);
	if (sbx_quota_state(w.fd, w.mnt_id, w.dev, &qs) < 0) {
		if (!quota_absent(errno))
			sbx_die(SBX_EXIT_SYS, "unable to read the quota state of %s: %s",
			     w.name, strerror(errno));
		memset(&qs, 0, sizeof qs);
		state = "unavailable";
	}
	memset(&q, 0, sizeof q);
	if (qs.accounting && w.projid) {
		src = read_limits(&w, w.projid, &q);
		have_q = 1;
		how = src;
		if (!strcmp(src, "statfs")) {
			why = record_disagrees(&w, &q, &r, whybuf, sizeof whybuf);
			how = why ? "none" : "record";
			if (!why) {
				q.bhard = r.bhard;
				q.bsoft = r.bsoft;
				q.ihard = r.ihard;
				q.isoft = r.isoft;
			}
		}
	}
	if (o->json) {
		struct sbx_json j;
		sbx_json_begin(&j, TOOL, "report");
		json_identity(&j, &w);
		sbx_json_bool(&j, "projinherit", w.inherit);
		sbx_json_str(&j, "quota_control", state);
		sbx_json_bool(&j, "accounting", qs.accounting);
		sbx_json_bool(&j, "enforcing", qs.enforcing);
		if (have_q)
			json_limits(&j, src, &q, how);
		if (sbx_json_write(&j, 1) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to write to stdout");
	} else {
		unsigned fsid[2];
		memcpy(fsid, &w.sfs.f_fsid, sizeof fsid);
		printf("workspace: %s\nfilesystem: %s\ndevice: %u:%u\nfsid: %08x%08x\n",
		       w.name, w.kind == SBX_QFS_XFS ? "xfs" : "ext4",
		       w.stx.stx_dev_major, w.stx.stx_dev_minor, fsid[0], fsid[1]);
		if (w.mnt_id)
			printf("mount id: %llu\n", (unsigned long long)w.mnt_id);
		printf("quota control: %s\naccounting: %s\nenforcement: %s\n"
		       "project id: %u\nprojinherit: %s\n",
		       state, qs.accounting ? "on" : "off", qs.enforcing ? "on" : "off",
		       w.projid, w.inherit ? "on" : "off");
		if (have_q && (strcmp(src, "statfs") || !why))
			printf("limits from: %s\nblock hard limit: %llu\nblock soft limit: %llu\n"
			       "inode hard limit: %llu\ninode soft limit: %llu\n",
			       why || strcmp(src, "statfs") ? src : "record of sbx-quota prepare (statfs agrees)",
			       (unsigned long long)q.bhard, (unsigned long long)q.bsoft,
			       (unsigned long long)q.ihard, (unsigned long long)q.isoft);
		else if (have_q)
			/* statfs: the soft limit when one is set, else the hard one. */
			printf("limits from: statfs (the soft limit if set, else the hard one)\n"
			       "block limit: %llu\ninode limit: %llu\n",
			       (unsigned long long)q.bhard, (unsigned long long)q.ihard);
		if (have_q)
			printf("bytes used: %llu\ninodes used: %llu\n",
			       (unsigned long long)q.bused, (unsigned long long)q.iused);
		if (why)
			printf("hard limits unproven: %s\n", why);
		if (fflush(stdout) == EOF || ferror(stdout))
			sbx_die_errno(SBX_EXIT_SYS, "unable to write to stdout");
	}
	close(w.fd);
	return SBX_EXIT_OK;
}

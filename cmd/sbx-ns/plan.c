/* --dry-run: the run as sbx-ns would make it, as one JSON document on
 * stdout, after every check the outer makes before the clone and before
 * anything is created or recorded: the root's steps (steps.c), the very
 * list pid 1 executes (root.c), with the identity each bind source was
 * checked to have, the deny-write globs and operations, the command's argv, environment and directory,
 * its identity, the network, the filters and the limits. Nothing runs. */
#include "ns.h"

#include "die.h"
#include "digest.h"
#include "exitcodes.h"
#include "fd.h"
#include "json.h"
#include "mount.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

static const char *kind_name(enum mount_kind k)
{
	switch (k) {
	case MNT_RUNTIME: return "runtime";
	case MNT_RO: return "ro";
	case MNT_RW: return "rw";
	case MNT_WORKSPACE: return "workspace";
	case MNT_SCRATCH: return "scratch";
	case MNT_SYMLINK: return "symlink";
	case MNT_BIND: return "bind";
	case MNT_CA: return "ca";
	}
	return "?";
}

static void bind(struct sbx_json *j, const struct ns_plan *p, const struct mount_op *op)
{
	sbx_json_open_obj(j, NULL);
	sbx_json_str(j, "kind", kind_name(op->kind));
	sbx_json_str(j, "option", op->opt);
	sbx_json_str(j, "source", op->src);
	sbx_json_str(j, "destination", op->dest);
	if (op->kind == MNT_SYMLINK) {
		sbx_json_close_obj(j);
		return;
	}
	sbx_json_str(j, "flags", op->ro ? "ro,nosuid,nodev" : "rw,nosuid,nodev");
	if (op->fd >= 0)
		sbx_json_int(j, "fd", op->fd);
	if (op->create) {
		/* --tmp-in-workspace: made by the run, owned by the command's uid */
		sbx_json_bool(j, "create", 1);
	} else {
		sbx_json_uint(j, "dev", (uint64_t)op->dev);
		sbx_json_uint(j, "ino", (uint64_t)op->ino);
	}
	if (p->chg && op == &p->ops[p->ws]) {
		/* --changes: the workspace is the lower layer of an overlay */
		sbx_json_open_obj(j, "overlay");
		sbx_json_str(j, "changes", p->chg);
		sbx_json_uint(j, "dev", (uint64_t)p->chg_dev);
		sbx_json_uint(j, "ino", (uint64_t)p->chg_ino);
		sbx_json_str(j, "upper", sbx_needf("%s/upper", p->chg));
		sbx_json_str(j, "work", sbx_needf("%s/work", p->chg));
		sbx_json_str(j, "options", "userxattr");
		sbx_json_close_obj(j);
	}
	sbx_json_close_obj(j);
}

/* The flags of a step as mount(8) spells them, then its data. */
static void flags(struct sbx_json *j, unsigned long f, const char *data)
{
	static const struct { unsigned long bit; const char *name; } names[] = {
		{ MS_BIND, "bind" }, { MS_RDONLY, "ro" }, { MS_NOSUID, "nosuid" },
		{ MS_NODEV, "nodev" }, { MS_NOEXEC, "noexec" },
	};
	char buf[256];
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (f & names[i].bit)
			n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", n ? "," : "", names[i].name);
	if (data)
		snprintf(buf + n, sizeof buf - n, "%s%s", n ? "," : "", data);
	sbx_json_str(j, "flags", buf);
}

static void mode(struct sbx_json *j, mode_t m)
{
	char buf[8];

	snprintf(buf, sizeof buf, "%04o", (unsigned)m);
	sbx_json_str(j, "mode", buf);
}

static const char *const step_names[] = {
	[STEP_ROOT] = "tmpfs", [STEP_DIR] = "dir", [STEP_TMPFS] = "tmpfs", [STEP_PROC] = "proc",
	[STEP_DEVPTS] = "devpts", [STEP_DEVICE] = "device", [STEP_LINK] = "symlink",
	[STEP_RESOLV] = "resolv.conf", [STEP_DENY] = "deny-write", [STEP_HOME] = "home",
	[STEP_READONLY] = "remount",
};

/* One step of the root (steps.c), as pid 1 takes it (root.c). */
static void step(struct sbx_json *j, const struct ns_run *r, const struct ns_step *s)
{
	const struct deny_op *d;

	if (s->kind == STEP_BIND) {
		bind(j, r->p, &r->p->ops[s->idx]);
		return;
	}
	sbx_json_open_obj(j, NULL);
	sbx_json_str(j, "kind", step_names[s->kind]);
	if (s->src)
		sbx_json_str(j, "source", s->src);
	sbx_json_str(j, "destination", s->dest);
	switch (s->kind) {
	case STEP_DIR:
		mode(j, s->mode);
		break;
	case STEP_PROC:
		/* tried in order, the first the kernel takes ("": none) */
		flags(j, s->flags, NULL);
		sbx_json_open_arr(j, "data");
		for (size_t i = 0; i < s->ndata; i++)
			sbx_json_str(j, NULL, s->data[i] ? s->data[i] : "");
		sbx_json_close_arr(j);
		break;
	case STEP_LINK:
		break;
	case STEP_DENY:
		d = &r->p->dops[s->idx];
		sbx_json_str(j, "op", d->kind == DENY_PROTECT ? "read-only" : "pin");
		flags(j, s->flags | MS_BIND, NULL);
		sbx_json_uint(j, "dev", (uint64_t)d->dev);
		sbx_json_uint(j, "ino", (uint64_t)d->ino);
		break;
	case STEP_HOME:
		mode(j, s->mode);
		sbx_json_uint(j, "uid", r->p->uid);
		sbx_json_uint(j, "gid", r->p->gid);
		break;
	default:
		flags(j, s->flags, s->ndata ? s->data[0] : NULL);
		break;
	}
	sbx_json_close_obj(j);
}

static void mounts(struct sbx_json *j, const struct ns_run *r)
{
	sbx_json_open_arr(j, "mounts");
	for (size_t i = 0; i < r->p->nsteps; i++)
		step(j, r, &r->p->steps[i]);
	sbx_json_close_arr(j);
}

static void deny(struct sbx_json *j, const struct ns_run *r)
{
	size_t n;
	const char *const *globs = ns_deny_globs(r->p, &n);

	sbx_json_open_obj(j, "deny_write");
	sbx_json_open_arr(j, "globs");
	for (size_t i = 0; i < n; i++)
		sbx_json_str(j, NULL, globs[i]);
	sbx_json_close_arr(j);
	/* The deny-write steps of the root, in path order. */
	sbx_json_open_arr(j, "operations");
	for (size_t i = 0; i < r->p->nsteps; i++) {
		const struct ns_step *s = &r->p->steps[i];
		const struct deny_op *d = &r->p->dops[s->idx];

		if (s->kind != STEP_DENY)
			continue;
		sbx_json_open_obj(j, NULL);
		sbx_json_str(j, "op", d->kind == DENY_PROTECT ? "read-only" : "pin");
		sbx_json_str(j, "path", s->dest);
		sbx_json_uint(j, "dev", (uint64_t)d->dev);
		sbx_json_uint(j, "ino", (uint64_t)d->ino);
		sbx_json_close_obj(j);
	}
	sbx_json_close_arr(j);
	sbx_json_close_obj(j);
}

static void command(struct sbx_json *j, const struct ns_run *r)
{
	sbx_json_open_arr(j, "argv");
	for (char **a = r->a->cmd; *a; a++)
		sbx_json_str(j, NULL, *a);
	sbx_json_close_arr(j);
	sbx_json_str(j, "cwd", r->p->ops[r->p->ws].dest);
	sbx_json_open_arr(j, "env");
	for (char **e = r->p->env; *e; e++)
		sbx_json_str(j, NULL, *e);
	sbx_json_close_arr(j);
	sbx_json_uint(j, "uid", r->p->uid);
	sbx_json_uint(j, "gid", r->p->gid);
	if (r->p->hint)
		sbx_json_str(j, "hint", r->p->hint);
}

/* The plan of r as one JSON object, built in out (pure: reads r only;
 * sbx_json_end gives the line). */
void ns_plan_json(const struct ns_run *r, struct sbx_json *out)
{
	struct sbx_json j;

	sbx_json_begin(&j, NS_PROG, "plan");
	command(&j, r);
	mounts(&j, r);
	deny(&j, r);
	sbx_json_open_obj(&j, "net");
	sbx_json_str(&j, "mode", ns_net_name(r->p));
	if (r->p->net == NET_BROKER) {
		char proxy[40];
		snprintf(proxy, sizeof proxy, "http://127.0.0.1:%u", r->p->port);
		sbx_json_uint(&j, "port", r->p->port);
		sbx_json_str(&j, "proxy", proxy);
		if (r->p->broker_real)
			sbx_json_str(&j, "broker", r->p->broker_real);
		if (r->p->transparent) {
			/* DNS answered by the broker, these ports captured */
			sbx_json_open_arr(&j, "capture_ports");
			for (size_t i = 0; i < r->p->ncap; i++)
				sbx_json_uint(&j, NULL, r->p->cap_ports[i]);
			sbx_json_close_arr(&j);
		}
	}
	sbx_json_close_obj(&j);
	sbx_json_open_obj(&j, "seccomp");
	sbx_json_str(&j, "filter", ns_filter_name(r->p, &r->x));
	sbx_json_str(&j, "denials", r->a->quiet_denials ? "errno" : "notify");
	if (ns_observe_exec_on(r->a))
		sbx_json_str(&j, "exec", "notify"); /* --observe: execve and execveat seen, then let go */
	sbx_json_close_obj(&j);
	sbx_json_open_obj(&j, "landlock");
	sbx_json_int(&j, "abi", r->p->landlock_abi);
	sbx_json_bool(&j, "required", r->a->require_landlock);
	sbx_json_close_obj(&j);
	sbx_json_str(&j, "mount_api", sbx_mnt_api_name(r->p->mnt_api));
	sbx_json_uint(&j, "timeout_ms", r->a->timeout_ms);
	sbx_json_bool(&j, "grant_checked", r->p->grant_checked);
	sbx_json_bool(&j, "policy", r->p->pol_on);
	if (r->p->pol_on) {
		/* the effective policy whole: its fallbacks are bound too */
		char *pol = sbx_policy_to_json(&r->p->eff, SBX_PSCOPE_NS), hex[SBX_SHA256_HEX];
		unsigned char d[SBX_SHA256_LEN];
		struct sbx_sha256 c;

		if (!pol)
			sbx_need(NULL);
		sbx_sha256_init(&c);
		sbx_sha256_update(&c, pol, strlen(pol));
		sbx_sha256_final(&c, d);
		sbx_digest_hex(d, SBX_SHA256_LEN, hex);
		sbx_json_str(&j, "policy_sha256", hex);
		free(pol);
	}
	ns_program_json(&j, r->p);
	*out = j;
}

noreturn void ns_dry_run(struct ns_run *r)
{
	struct sbx_json j;
	const char *out;
	size_t len;

	ns_plan_json(r, &j);
	out = sbx_json_end(&j, &len);
	if (!out || sbx_write_all(1, out, len) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to write the plan");
	sbx_json_free(&j);
	if (r->a->status_fd >= 0) {
		sbx_json_begin(&j, NS_PROG, "exit");
		sbx_json_int(&j, "code", SBX_EXIT_OK);
		sbx_json_bool(&j, "dry_run", 1);
		sbx_json_write(&j, r->a->status_fd);
	}
	exit(SBX_EXIT_OK);
}

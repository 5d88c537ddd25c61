/* The Landlock tier: where no user namespace can be had (a container, a
 * sysctl, a seccomp profile), or a container masks /proc so that the
 * sandbox's pid 1 cannot mount a fresh one (it reports 'F' and exits before
 * the command exists), and the administrator's baseline says
 * "fallback": "landlock", the command runs as a host process under every
 * Landlock right of the kernel's ABI (reads below the readable roots and
 * the runtime set, writes below the writable roots and a private TMPDIR),
 * the same seccomp base filter, no_new_privs, no capabilities, a new
 * session, closed fds and a clean environment. What it cannot give is
 * refused, never dropped: loopback or host networking (no private
 * loopback without a network namespace; broker mode reaches the broker on
 * the host's loopback, see tiernet.c), binds to another place or /tmp
 * in the workspace (no mount namespace), deny-write globs, which apply
 * inside the writable workspace (Landlock grants by hierarchy and cannot
 * exclude what they match). Every run says so on stderr (WARNING) and in
 * the status. */
#include "ns.h"

#include "container.h"
#include "die.h"
#include "exitcodes.h"
#include "fd.h"
#include "json.h"
#include "policy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ns_tier_allowed(const struct ns_plan *p)
{
	return p->pol_on && p->eff.fallback.set && p->eff.fallback.v == SBX_PFB_LANDLOCK;
}

/* Where this runs, for the messages of the masked-/proc case. */
static const char *ctr_name(char *buf, size_t sz)
{
	if (sbx_container(buf, sz) == SBX_CTR_NONE)
		snprintf(buf, sz, "not in a known container");
	return buf;
}

/* Why there is no full sandbox, for the WARNING: clone refused the
 * namespaces, or (tier_proc) a container masks /proc. */
static const char *no_sandbox(const struct ns_exec *x, int err, char *buf, size_t sz)
{
	char ctr[320];

	if (!x->tier_proc)
		snprintf(buf, sz, "no user namespaces here (%s)", strerror(err));
	else
		snprintf(buf, sz, "no fresh /proc here (%s; %s)", strerror(err), ctr_name(ctr, sizeof ctr));
	return buf;
}

noreturn static void refuse(struct ns_run *r, int err, const char *why)
{
	char ctr[320];

	ns_deny_forget(r);
	if (r->x.tier_proc)
		sbx_die(SBX_EXIT_NOISOLATION, "unable to mount proc on /proc: %s (%s); %s; and unable to "
			"use the landlock tier the baseline allows: %s", strerror(err), ctr_name(ctr, sizeof ctr),
			sbx_fix_ctr_proc, why);
	sbx_die(SBX_EXIT_NOISOLATION, "unable to create namespaces (%s) and unable to use the landlock "
		"tier the baseline allows: %s", strerror(err), why);
}

static void check(struct ns_run *r, int err)
{
	const char *const *globs;
	char why[512];
	size_t n;
	int code;

	if (r->p->landlock_abi <= 0)
		refuse(r, err, "this kernel has no Landlock");
	code = ns_tier_net(r->p, why, sizeof why);
	if (code == SBX_EXIT_NOISOLATION)
		refuse(r, err, why);
	if (code) {
		ns_deny_forget(r);
		sbx_die(code, "%s", why);
	}
	for (size_t i = 0; i < r->p->nops; i++)
		if (r->p->ops[i].kind == MNT_BIND || r->p->ops[i].kind == MNT_SCRATCH) {
			snprintf(why, sizeof why, "%s needs a mount namespace", r->p->ops[i].opt);
			refuse(r, err, why);
		}
	globs = ns_deny_globs(r->p, &n);
	if (n && ns_tier_deny_unenforced(r->p)) {
		r->x.tier_deny_off = 1;
	} else if (n) {
		snprintf(why, sizeof why, "the deny-write glob %s applies inside the writable workspace "
			 "and Landlock cannot keep what it matches read-only (only an empty denyWrite in "
			 "both the baseline and the request, or the baseline's \"tierDenyWrite\": "
			 "\"unenforced\", gives deny-write up)", globs[0]);
		refuse(r, err, why);
	}
}

/* The defaults of the full sandbox's environment that name its private
 * /tmp, and where they point in the tier's scratch directory instead;
 * a value the caller gave (--setenv, --keep-env) is left alone. */
static const struct {
	const char *full, *name, *sub;
} moved[] = {
	{ "TMPDIR=/tmp", "TMPDIR", "" },
	{ "HOME=" NS_HOME, "HOME", "/home" },
	{ "XDG_CACHE_HOME=" NS_HOME "/.cache", "XDG_CACHE_HOME", "/home/.cache" },
	{ "XDG_CONFIG_HOME=" NS_HOME "/.config", "XDG_CONFIG_HOME", "/home/.config" },
};

/* TMPDIR and HOME: a fresh directory only the command's identity may use,
 * and an empty home in it (the host has no /tmp/home of the command's). */
static void scratch(struct ns_run *r)
{
	char tmpl[] = "/tmp/sbx-landlock.XXXXXX", home[sizeof tmpl + 8];
	char **e;
	int tries = 0;

	/* What killed tier runs left, then this run's, recorded. */
	r->x.tier_rec = -1;
	ns_tier_leftovers(r);
	for (;;) {
		memcpy(tmpl + sizeof tmpl - 7, "XXXXXX", 6);
		if (!mkdtemp(tmpl))
			sbx_die_errno(SBX_EXIT_SYS, "unable to create the landlock tier's TMPDIR under /tmp");
		if (ns_tier_record(r, tmpl) == 0)
			break;
		rmdir(tmpl);
		if (++tries == 16)
			sbx_die(SBX_EXIT_SYS, "unable to record the landlock tier's TMPDIR: every name taken");
	}
	r->x.tier_tmp = sbx_need(strdup(tmpl));
	if ((r->p->root && chown(tmpl, r->p->uid, r->p->gid) < 0))
		sbx_die_errno(SBX_EXIT_SYS, "unable to prepare %s", tmpl);
	snprintf(home, sizeof home, "%s/home", tmpl);
	if (mkdir(home, 0700) < 0 || (r->p->root && chown(home, r->p->uid, r->p->gid) < 0))
		sbx_die_errno(SBX_EXIT_SYS, "unable to prepare %s", home);
	for (e = r->p->env; *e; e++)
		for (size_t i = 0; i < sizeof moved / sizeof moved[0]; i++)
			if (!strcmp(*e, moved[i].full))
				*e = sbx_needf("%s=%s%s", moved[i].name, tmpl, moved[i].sub);
}

int ns_tier_deny_unenforced(const struct ns_plan *p)
{
	return p->pol_on && p->eff.tier_deny.set && p->eff.tier_deny.v == SBX_PTDW_UNENFORCED;
}

/* What an older Landlock ABI cannot restrict in this tier, newest first.
 * Abstract Unix sockets are not among them: the seccomp filter allows no
 * Unix socket in the modes the tier runs (none, broker). */
static const struct {
	int abi;                /* the first ABI that restricts it */
	const char *key, *text;
} lost[] = {
	{ 6, "signal", "signalling processes of its user outside" },
	{ 5, "device-ioctl", "ioctls on the devices it may open" },
	{ 3, "truncate", "truncating files of its user outside the writable roots (truncate(2))" },
};

static void warn_and_report(const struct ns_run *r, int err)
{
	struct sbx_json j;
	char line[1024], why[512] = "", what[400];
	size_t w = 0;
	int n;

	for (size_t i = 0; i < sizeof lost / sizeof lost[0]; i++)
		if (r->p->landlock_abi < lost[i].abi && w < sizeof why) {
			n = snprintf(why + w, sizeof why - w, "%s%s", w ? ", " : "", lost[i].text);
			w += n > 0 ? (size_t)n : 0;
		}
	/* Not through sbx_warn: this line must stand out, and says WARNING. */
	n = snprintf(line, sizeof line,
		     "%s: WARNING: %s: the command runs in the landlock tier: "
		     "Landlock ABI %d and seccomp, but no pid, mount or network namespace; other "
		     "processes of the same user are visible; no fresh /proc%s%s\n", NS_PROG,
		     no_sandbox(&r->x, err, what, sizeof what),
		     r->p->landlock_abi, w ? "; below Landlock ABI 6 nothing stops " : "", why);
	if (n > 0)
		sbx_write_all(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
	if (r->x.tier_deny_off) {
		size_t ng;
		const char *const *g = ns_deny_globs(r->p, &ng);
		n = snprintf(line, sizeof line, "%s: WARNING: deny-write is not enforced in the landlock tier "
			     "(the baseline says \"tierDenyWrite\": \"unenforced\"): the command may write "
			     "%s%s inside the writable roots\n", NS_PROG, g[0], ng > 1 ? " and what the other "
			     "deny-write globs match" : "");
		if (n > 0)
			sbx_write_all(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
	}
	if (r->a->status_fd < 0)
		return;
	sbx_json_begin(&j, NS_PROG, "started");
	sbx_json_str(&j, "isolation", "landlock");
	if (r->x.tier_proc) {
		char reason[128];
		snprintf(reason, sizeof reason, "no fresh /proc: %s", strerror(err));
		sbx_json_str(&j, "reason", reason);
	} else {
		sbx_json_str(&j, "reason", strerror(err));
	}
	sbx_json_int(&j, "landlock", r->p->landlock_abi);
	sbx_json_bool(&j, "landlock_net", r->p->landlock_abi >= 4);
	sbx_json_bool(&j, "landlock_scoped", r->p->landlock_abi >= 6);
	sbx_json_open_arr(&j, "landlock_lost");
	for (size_t i = 0; i < sizeof lost / sizeof lost[0]; i++)
		if (r->p->landlock_abi < lost[i].abi)
			sbx_json_str(&j, NULL, lost[i].key);
	sbx_json_close_arr(&j);
	sbx_json_bool(&j, "seccomp", 1);
	ns_net_status(&j, r->p, "the host's loopback port");
	sbx_json_str(&j, "deny_write", r->x.tier_deny_off ? "unenforced" : "none");
	sbx_json_str(&j, "tmpdir", r->x.tier_tmp);
	sbx_json_uint(&j, "uid", r->p->uid);
	sbx_json_uint(&j, "gid", r->p->gid);
	sbx_json_write(&j, r->a->status_fd);
}

/* In the command's process, after its identity is dropped. */
static void confine(struct ns_run *r)
{
	if (setsid() < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to start a new session");
	if (ns_clear_caps() < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to drop capabilities");
	ns_landlock(r->p, &r->x);
	r->x.notify_sock[1] = -1;   /* plain EPERM: no supervisor outside a namespace */
	ns_load_filter(r);
}

noreturn void ns_landlock_tier(struct ns_run *r, int err)
{
	check(r, err);
	scratch(r);
	warn_and_report(r, err);
	ns_host_run(r, confine, "landlock");
}

/* Remove the private TMPDIR and what the command left there, never
 * following a link (the command owned it). */
static void remove_at(int dfd, const char *name, int depth)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;
	struct dirent *de;

	if (fd >= 0 && depth < 256 && (d = fdopendir(fd))) {
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				remove_at(dirfd(d), de->d_name, depth + 1);
		closedir(d);
	} else if (fd >= 0) {
		close(fd);
	}
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno == ENOTDIR)
		unlinkat(dfd, name, 0);
}

void ns_tier_remove(const char *path)
{
	remove_at(AT_FDCWD, path, 0);
}

void ns_tier_end(struct ns_run *r)
{
	if (r->x.tier_tmp)
		remove_at(AT_FDCWD, r->x.tier_tmp, 0);
}

/* --delegate DIR --user U: what an administrator does once so that U can
 * run sbx-cgroup without root (cgroup-v2.rst, "Delegation"): make DIR with
 * the controllers enabled for its children, and give U the directory and
 * the three files a delegatee writes. Limits on DIR itself stay root's. */
#include "sbx-cgroup.h"

#include "cgroup.h"
#include "die.h"
#include "exitcodes.h"
#include "json.h"
#include "parse.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Delegated controllers: everything sbx-cgroup can limit. */
static const struct limits every = { .cpu_pct = 1, .memory = 1, .pids = 1 };

static void lookup_user(const char *s, uid_t *uid, gid_t *gid)
{
	struct passwd *pw;
	uint64_t v;

	if (*s >= '0' && *s <= '9') {
		const char *why = sbx_parse_u64(s, 0, 0xfffffffeULL, &v);
		if (why)
			sbx_die_usage("--user: invalid user '%s': %s", s, why);
		*uid = (uid_t)v;
		pw = getpwuid(*uid);
		*gid = pw ? pw->pw_gid : (gid_t)v;
	} else {
		pw = getpwnam(s);
		if (!pw)
			sbx_die_usage("--user: invalid user '%s': unknown", s);
		*uid = pw->pw_uid;
		*gid = pw->pw_gid;
	}
	if (*uid == 0)
		sbx_die_usage("--user: invalid user '%s': root needs no delegation", s);
}

/* A failure of --delegate, with what to do about it, on one line. */
static _Noreturn void die_fix(struct sbx_err *f, const char *fix)
{
	f->fix = fix;
	sbx_err_die(f);
}

static void report(const struct opts *o, const char *path, uid_t uid)
{
	struct sbx_json j;

	if (o->status_fd < 0)
		return;
	sbx_json_begin(&j, TOOL, "exit");
	sbx_json_int(&j, "code", SBX_EXIT_OK);
	sbx_json_str(&j, "delegated", path);
	sbx_json_uint(&j, "uid", uid);
	sbx_json_write(&j, o->status_fd);
}

int mode_delegate(const struct opts *o)
{
	static const char *const files[] = {
		"cgroup.procs", "cgroup.threads", "cgroup.subtree_control",
	};
	char dir[PATH_MAX];
	const char *why, *bad;
	char *name;
	struct cg parent, cg;
	struct sbx_err f;
	uid_t uid;
	gid_t gid;
	size_t len = strlen(o->delegate);

	while (len > 1 && o->delegate[len - 1] == '/')
		len--;
	if (len >= sizeof dir)
		sbx_die_usage("--delegate: invalid path '%s': too long", o->delegate);
	memcpy(dir, o->delegate, len);
	dir[len] = '\0';
	name = strrchr(dir, '/') + 1;
	if ((why = sbx_cg_name_invalid(name)))
		sbx_die_usage("--delegate: invalid path '%s': %s", o->delegate, why);
	lookup_user(o->user, &uid, &gid);
	if (geteuid() != 0)
		sbx_die(SBX_EXIT_POLICY, "refusing to delegate: only root can; to fix: run "
			"sbx-cgroup --delegate as root, once, for uid %u", (unsigned)uid);

	name[-1] = '\0';
	cg_open_root(&parent, *dir ? dir : "/", "--delegate");
	if (cg_need_controllers(&parent, &every, &f) < 0)
		die_fix(&f, "enable cpu, memory and pids in cgroup.subtree_control of every cgroup "
			"above it, from the top");
	if (cg_enable_controllers(&parent, &every, &f) < 0)
		die_fix(&f, "a cgroup with processes of its own cannot enable controllers for its "
			"children: move them into a leaf cgroup first, or delegate below another parent");
	if (mkdirat(parent.fd, name, 0755) < 0) {
		if (errno == EEXIST)
			sbx_die(SBX_EXIT_POLICY, "refusing to delegate %s/%s: it exists already; to fix: "
				"pick another name, or rmdir it once nothing runs in it", parent.path, name);
		sbx_err_errno(&f, SBX_EXIT_SYS, errno, "unable to create %s/%s", parent.path, name);
		die_fix(&f, "give --delegate a path inside the cgroup2 mount, on a cgroup2 mounted read-write");
	}
	if (cg_open_child(&parent, name, &cg, O_PATH) < 0) {
		sbx_err_errno(&f, SBX_EXIT_SYS, errno, "unable to open %s", cg.path);
		goto undo;
	}
	if (cg_enable_controllers(&cg, &every, &f) < 0)
		goto undo;
	if (fchownat(cg.fd, "", uid, gid, AT_EMPTY_PATH) < 0) {
		sbx_err_errno(&f, SBX_EXIT_SYS, errno, "unable to chown %s", cg.path);
		goto undo;
	}
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		if (fchownat(cg.fd, files[i], uid, gid, AT_SYMLINK_NOFOLLOW) < 0) {
			sbx_err_errno(&f, SBX_EXIT_SYS, errno, "unable to chown %s/%s", cg.path, files[i]);
			goto undo;
		}
	}
	if ((bad = sbx_cg_not_delegated(cg.fd, uid))) {
		sbx_err_set(&f, SBX_EXIT_POLICY, "verification failed: %s/%s is not owned by uid %u",
		      cg.path, bad, (unsigned)uid);
		goto undo;
	}
	report(o, cg.path, uid);
	return SBX_EXIT_OK;
undo:
	cg_remove(&parent, name);
	die_fix(&f, "nothing was left behind; check that the cgroup2 mount is read-write and the "
		"user exists, then run it again");
}

/* `sbx-check proof`, the limit lines: a fork bomb and a memory hog under
 * sbx-cgroup, a disk filler under sbx-quota, each judged on the kernel's
 * own evidence. */
#include "proof.h"
#include "die.h"
#include "exitcodes.h"
#include "fd.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The kernel's own account of a run, as sbx-cgroup read it from the
 * cgroup (pids.events, memory.events, memory.peak) just before removing
 * it: its "exit" status line. 0 when a key is missing or null. */
static int evidence(const char *status, const char *key, unsigned long long *v)
{
	char buf[4096], pat[64];
	const char *line, *at;

	if (sbx_read_small(status, O_NOFOLLOW, buf, sizeof buf) <= 0)
		return 0;
	line = strstr(buf, "{\"tool\":\"sbx-cgroup\",\"event\":\"exit\",");
	snprintf(pat, sizeof pat, "\"%s\":", key);
	if (!line || !(at = strstr(line, pat)) || strchr(line, '\n') < at)
		return 0;
	at += strlen(pat);
	if (*at < '0' || *at > '9')
		return 0;
	*v = strtoull(at, NULL, 10);
	return 1;
}

/* A fork bomb is stopped by pids.max only if the kernel counted the
 * refusals in pids.events and the bomb stayed below the limit. */
static void judge_pids(struct chk_report *r, const struct run *res, const char *status)
{
	unsigned long long hits = 0;
	const char *f = strstr(res->out, "forked ");
	unsigned long forked = f ? strtoul(f + 7, NULL, 10) : 0;

	if (res->code != 1 || !f) {
		pr_judge(r, CLS_LIMITS, "pids-limit", 0, res, 1, "");
		return;
	}
	if (!evidence(status, "pids_max_hits", &hits) || !hits) {
		chk_add(r, CLS_LIMITS, "pids-limit", CHK_FAIL,
			"fork failed, but pids.events counts no refusal at pids.max (%s): %s",
			hits ? "" : "max 0 or no exit line from sbx-cgroup", res->out);
		return;
	}
	if (forked + 1 > 16) {
		chk_add(r, CLS_LIMITS, "pids-limit", CHK_FAIL,
			"%lu processes ran under --pids 16: %s", forked + 1, res->out);
		return;
	}
	chk_add(r, CLS_LIMITS, "pids-limit", CHK_OK, "denied: %s (pids.events max %llu)", res->out,
		hits);
}

/* A memory hog is stopped by memory.max only if the cgroup's OOM killer
 * killed it (memory.events oom_kill) and the cgroup never held more than
 * the limit (memory.peak). */
static void judge_memory(struct chk_report *r, const struct run *res, const char *status)
{
	unsigned long long oom = 0, peak = 0;
	int have_oom = evidence(status, "oom_kill", &oom), have_peak = evidence(status, "memory_peak", &peak);

	if (res->code != SBX_EXIT_OOM && res->code != 128 + SIGKILL && res->code != 1) {
		pr_judge(r, CLS_LIMITS, "memory-limit", 0, res, 1, "");
		return;
	}
	if (!have_oom || !oom) {
		chk_add(r, CLS_LIMITS, "memory-limit", CHK_FAIL,
			"the hog was stopped (exit %d), but memory.events counts no OOM kill: %s",
			res->code, res->out[0] ? res->out : "no output");
		return;
	}
	if (have_peak && peak > 32ULL << 20) {
		chk_add(r, CLS_LIMITS, "memory-limit", CHK_FAIL,
			"OOM-killed, but memory.peak above 32 MiB is not within --memory 32M: %s",
			res->out);
		return;
	}
	/* Before Linux 5.19 there is no memory.peak (sbx-cgroup reports null):
	 * the OOM kill counted in the cgroup's own memory.events is the proof. */
	if (!have_peak) {
		chk_add(r, CLS_LIMITS, "memory-limit", CHK_OK,
			"a 256 MiB hog under --memory 32M was OOM-killed (exit %d, oom_kill %llu; no "
			"memory.peak on this kernel, it came in Linux 5.19)%s%s",
			res->code, oom, res->out[0] ? ": " : "", res->out);
		return;
	}
	chk_add(r, CLS_LIMITS, "memory-limit", CHK_OK,
		"a 256 MiB hog under --memory 32M was OOM-killed (exit %d, oom_kill %llu, peak %llu bytes)%s%s",
		res->code, oom, peak, res->out[0] ? ": " : "", res->out);
}

void pr_cgroup_proof(struct chk_report *r, struct chain *c, const struct scratch *s,
		     const char *root)
{
	static const struct { const char *name, *opt, *val, *probe, *arg; } t[] = {
		{ "pids-limit", "--pids", "16", "forkbomb", "256" },
		{ "memory-limit", "--memory", "32M", "memhog", "256" },
	};
	struct chk_item *it;
	char cgname[64], status[PATH_MAX];

	pr_join(status, sizeof status, s->base, "cgroup-status");
	for (size_t i = 0; i < 2; i++) {
		struct argv_b a = { .n = 0 };
		struct run res;

		if (!root) {
			it = chk_add(r, CLS_LIMITS, t[i].name, CHK_NOTCONF, "not proven");
			chk_fix(it, "pass --cgroup-root DIR");
			continue;
		}
		if (!c->have_cgroup) {
			chk_add(r, CLS_LIMITS, t[i].name, CHK_UNSUPPORTED,
				"sbx-cgroup is not installed beside sbx-check");
			continue;
		}
		snprintf(cgname, sizeof cgname, "sbx-check-%ld-%zu", (long)getpid(), i);
		pr_add(&a, c->cgroup);
		pr_add(&a, "--root");
		pr_add(&a, root);
		pr_add(&a, "--name");
		pr_add(&a, cgname);
		pr_add(&a, t[i].opt);
		pr_add(&a, t[i].val);
		pr_add(&a, "--status-fd");
		pr_add(&a, "3");
		pr_add(&a, "--");
		pr_add_ns(&a, c, NULL, s->ws, s->probe);
		pr_add(&a, t[i].probe);
		pr_add(&a, t[i].arg);
		unlink(status);
		pr_run_st(c, a.v, status, &res);
		if (res.code == SBX_EXIT_UNSUPPORTED) {
			it = chk_add(r, CLS_LIMITS, t[i].name, CHK_UNSUPPORTED,
				     "sbx-cgroup refused, fail-closed (exit 101): %s", res.out);
			chk_fix(it, "see `sbx-check host --cgroup-root %s`", root);
		} else if (i == 0) {
			judge_pids(r, &res, status);
		} else {
			judge_memory(r, &res, status);
		}
	}
	unlink(status);
}

void pr_quota_proof(struct chk_report *r, struct chain *c, const char *qws)
{
	char dir[PATH_MAX], probe[PATH_MAX + 8], fill[PATH_MAX + 8];
	struct argv_b a = { .n = 0 };
	struct chk_item *it;
	struct run res;

	if (!qws) {
		it = chk_add(r, CLS_LIMITS, "quota-limit", CHK_NOTCONF, "not proven");
		chk_fix(it, "pass --quota-workspace DIR");
		return;
	}
	if (!c->have_quota) {
		chk_add(r, CLS_LIMITS, "quota-limit", CHK_UNSUPPORTED,
			"sbx-quota is not installed beside sbx-check");
		return;
	}
	/* The command runs in a directory of the quota workspace that it owns
	 * (nobody when the caller is root): the project's quota covers it, and
	 * the command's uid can write its workspace. */
	snprintf(dir, sizeof dir, "%s/.sbx-check-ws.%ld", qws, (long)getpid());
	snprintf(probe, sizeof probe, "%s/probe", dir);
	snprintf(fill, sizeof fill, "%s/fill", dir);
	if (mkdir(dir, 0755) < 0 || (getuid() == 0 && chown(dir, PROOF_ID, PROOF_ID) < 0))
		sbx_die_errno(SBX_EXIT_SYS, "unable to create %s", dir);
	pr_copy_self(probe);
	pr_add(&a, c->quota);
	pr_add(&a, "verify");
	pr_add(&a, "--workspace");
	pr_add(&a, qws);
	/* The limit must be at most 1 GiB, so that writing 1040 MiB meets it. */
	pr_add(&a, "--disk");
	pr_add(&a, "1G");
	pr_add(&a, "--");
	pr_add_ns(&a, c, NULL, dir, probe);
	pr_add(&a, "fill");
	pr_add(&a, fill);
	pr_add(&a, "1040");
	pr_run(c, a.v, &res);
	unlink(probe);
	unlink(fill);
	rmdir(dir);
	if (res.code == SBX_EXIT_UNSUPPORTED || res.code == SBX_EXIT_POLICY) {
		it = chk_add(r, CLS_LIMITS, "quota-limit", CHK_UNSUPPORTED,
			     "sbx-quota refused, fail-closed (exit %d): %s", res.code, res.out);
		chk_fix(it, "see `sbx-check host --quota-workspace %s`", qws);
	} else if (res.code == 1 && !strstr(res.out, strerror(EDQUOT)) &&
		   !strstr(res.out, strerror(ENOSPC))) {
		/* XFS answers an exhausted project quota with ENOSPC, ext4 with EDQUOT. */
		chk_add(r, CLS_LIMITS, "quota-limit", CHK_FAIL, "stopped, but not by the quota: %s",
			res.out);
	} else {
		pr_judge(r, CLS_LIMITS, "quota-limit", 0, &res, 1, "");
	}
}

/* Without sbx-ns no limit can be shown on a sandboxed command. */
void pr_limits_without_ns(struct chk_report *r, const struct chk_opts *o)
{
	static const char *const names[] = { "pids-limit", "memory-limit", "quota-limit" };
	struct chk_item *it;

	for (size_t i = 0; i < 3; i++) {
		const char *conf = i < 2 ? o->cgroup_root : o->quota_ws;
		if (conf) {
			chk_add(r, CLS_LIMITS, names[i], CHK_UNSUPPORTED,
				"not proven: sbx-ns is not installed");
		} else {
			it = chk_add(r, CLS_LIMITS, names[i], CHK_NOTCONF, "not proven");
			chk_fix(it, "pass %s DIR", i < 2 ? "--cgroup-root" : "--quota-workspace");
		}
	}
}

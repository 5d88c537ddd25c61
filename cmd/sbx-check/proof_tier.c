/* `sbx-check proof --tier landlock`: the Landlock tier's claims, proven as
 * the full sandbox's are, by attempts judged both on what the probe says
 * and on what the host sees: workspace read and write; a sibling secret,
 * writes outside the workspace and in the host's /tmp denied; no network;
 * no signal to a process of the command's uid outside and no connection to
 * an abstract Unix socket outside (Landlock ABI 6 scoping: below it, what
 * is lost is said, never passed). Every run gets a baseline saying
 * "fallback": "landlock", and counts only if sbx-ns's status says it ran
 * the command in the tier. Where this host refuses user namespaces, sbx-ns
 * meets that refusal itself; where it would give them, the proof takes
 * them away from the chain with the seccomp filter a container's profile
 * would have (lib/nouserns.c), and says so. */
#include "proof.h"
#include "die.h"
#include "exitcodes.h"
#include "fd.h"
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* The baseline allows the tier and gives deny-write up; the request (fd 4,
 * used once sbx-ns has refused deny-write in the tier) gives it up too. */
static const char baseline_json[] =
	"{\"sandbox\":{\"fallback\":\"landlock\",\"denyWrite\":[],\"readableRoots\":[\".\"],"
	"\"writableRoots\":[\".\"]}}\n";
static const char request_json[] = "{\"sandbox\":{\"denyWrite\":[]}}\n";

/* 1 when sbx-ns's status (this run's) says the command ran in the tier;
 * the Landlock ABI it used in *abi. */
static int in_tier(const struct chain *c, int *abi)
{
	static const char started[] = "\"event\":\"started\",\"isolation\":\"landlock\",";
	char buf[8192];
	const char *at, *ll, *nl;

	*abi = 0;
	if (sbx_read_small(c->status, O_NOFOLLOW, buf, sizeof buf) <= 0 ||
	    !(at = strstr(buf, started)) || !(ll = strstr(at, "\"landlock\":")) ||
	    ((nl = strchr(at, '\n')) && nl < ll))
		return 0;
	*abi = atoi(ll + strlen("\"landlock\":"));
	return *abi > 0;
}

void pr_tier_judge(struct chk_report *r, const struct chain *c, const char *name, int want_ok,
		   int scoped, const struct run *res, int host_ok, const char *host_says)
{
	int abi, in = in_tier(c, &abi);
	int right = (res->code == 0) == want_ok && host_ok;
	struct chk_item *it;

	if (res->code == 0 || res->code == 1) {
		if (!in && right) {
			chk_add(r, CLS_ISOLATION, name, CHK_FAIL, "not in the landlock tier (no "
				"\"isolation\":\"landlock\" on sbx-ns's status fd): %s", res->out);
			return;
		}
		/* What this kernel offers decides, not what sbx-ns claims to use. */
		if (in && scoped && c->kernel_abi < 6 && !right) {
			it = chk_add(r, CLS_EXTRA, name, CHK_UNSUPPORTED, "lost below Landlock ABI 6 "
				     "(ABI %d here): %s%s%s", c->kernel_abi, res->out, host_ok ? "" :
				     "; on the host: ", host_ok ? "" : host_says);
			chk_fix(it, "Linux 6.12 or later: Landlock ABI 6 scopes signals and abstract "
				"Unix sockets");
			return;
		}
	}
	pr_judge(r, CLS_ISOLATION, name, want_ok, res, host_ok, host_says);
}

void pr_tier_no_deny(struct chk_report *r, const char *name)
{
	struct chk_item *it;

	it = chk_add(r, CLS_EXTRA, name, CHK_UNSUPPORTED, "not kept in the landlock tier: sbx-ns "
		     "runs it only with deny-write given up (\"denyWrite\": [] in the baseline and "
		     "the request), as this proof does");
	chk_fix(it, "the full sandbox keeps it");
}

/* A process of the command's uid outside the sandbox, SIGUSR1 blocked so
 * that a signal that reached it stays pending for the host to see. */
static void start_outside(struct aims *x)
{
	pid_t parent = getpid();
	int p[2];
	char ok;

	if (pipe2(p, O_CLOEXEC) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create a pipe");
	x->outside = pr_fork();
	if (x->outside == 0) {
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		close(p[0]);
		/* The death signal after the uid change, which clears it. */
		if (sigprocmask(SIG_BLOCK, &set, NULL) < 0 ||
		    (getuid() == 0 && (setgroups(0, NULL) < 0 || setgid(PROOF_ID) < 0 ||
				       setuid(PROOF_ID) < 0)) ||
		    prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent ||
		    write(p[1], "k", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	if (read(p[0], &ok, 1) != 1)
		sbx_die(SBX_EXIT_SYS, "unable to start a process as uid %u outside the sandbox",
			getuid() == 0 ? PROOF_ID : (unsigned)getuid());
	close(p[0]);
}

int pr_outside_signalled(const struct aims *x)
{
	char path[64], buf[4096];
	unsigned long long sig = 0, shd = 0;
	const char *a, *b;

	snprintf(path, sizeof path, "/proc/%ld/status", (long)x->outside);
	/* Unreadable: the process is gone, and that counts against the sandbox. */
	if (sbx_read_small(path, 0, buf, sizeof buf) <= 0 || !(a = strstr(buf, "\nSigPnd:")) ||
	    !(b = strstr(buf, "\nShdPnd:")))
		return 1;
	sig = strtoull(a + 8, NULL, 16);
	shd = strtoull(b + 8, NULL, 16);
	return (int)(((sig | shd) >> (SIGUSR1 - 1)) & 1);
}

/* An abstract Unix socket outside, named after the scratch directory. */
static void listen_abstract(struct aims *x, const struct scratch *s)
{
	struct sockaddr_un a;
	size_t n;

	snprintf(x->abstract, sizeof x->abstract, "sbx-check-%ld-%s", (long)getpid(),
		 strrchr(s->base, '.') + 1);
	n = strlen(x->abstract);
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	memcpy(a.sun_path + 1, x->abstract, n);
	x->abstract_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (x->abstract_fd < 0 ||
	    bind(x->abstract_fd, (struct sockaddr *)&a,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) < 0 ||
	    listen(x->abstract_fd, 4) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to listen on the abstract socket @%s", x->abstract);
}

int pr_outside_connected(const struct aims *x)
{
	int t = accept4(x->abstract_fd, NULL, NULL, SOCK_CLOEXEC);

	if (t < 0)
		return errno != EAGAIN && errno != EWOULDBLOCK;
	close(t);
	return 1;
}

/* The first line: did sbx-ns run the command in the tier, with which ABI,
 * and how the tier was reached here. */
static void tier_line(struct chk_report *r, struct chain *c, const struct scratch *s,
		      const char *how)
{
	char readme[PATH_MAX];
	struct argv_b a = { .n = 0 };
	struct chk_item *it;
	struct run res;
	int abi;

	pr_join(readme, sizeof readme, s->ws, "readme");
	pr_add_ns(&a, c, NULL, s->ws, s->probe);
	pr_add(&a, "read");
	pr_add(&a, readme);
	pr_run(c, a.v, &res);
	if (res.code == SBX_EXIT_NOISOLATION) {
		it = chk_add(r, CLS_ISOLATION, "landlock-tier", CHK_UNSUPPORTED,
			     "sbx-ns refused the tier (exit 106): %s", res.out);
		chk_fix(it, "see `sbx-check host` (tiers)");
	} else if (!in_tier(c, &abi)) {
		chk_add(r, CLS_ISOLATION, "landlock-tier", CHK_FAIL, "sbx-ns did not say it ran the "
			"command in the landlock tier (no \"isolation\":\"landlock\" on its status "
			"fd; exit %d): %s", res.code, res.out);
	} else if (abi != c->kernel_abi) {
		chk_add(r, CLS_ISOLATION, "landlock-tier", CHK_FAIL, "sbx-ns says it used Landlock ABI "
			"%d, but this kernel offers ABI %d: %s", abi, c->kernel_abi, res.out);
	} else if (!res.warned || res.code != 0) {
		chk_add(r, CLS_ISOLATION, "landlock-tier", CHK_FAIL, "sbx-ns ran the command in the "
			"landlock tier %s (exit %d): %s", res.warned ? "but the probe failed" :
			"without its WARNING line on stderr", res.code, res.out);
	} else {
		it = chk_add(r, CLS_ISOLATION, "landlock-tier", CHK_OK, "sbx-ns ran the command in "
			     "the landlock tier and said so (WARNING), Landlock ABI %d (%s), seccomp, "
			     "no namespaces; %s", abi,
			     abi >= 6 ? "TCP rules, signals and abstract sockets scoped" :
			     abi >= 4 ? "TCP rules; no scoping of signals and abstract sockets before ABI 6" :
			     "no TCP rules before ABI 4, no scoping of signals and abstract sockets "
			     "before ABI 6", how);
		chk_field(it, "abi", 1, "%d", abi);
	}
}

void pr_tier_proof(struct chk_report *r, struct chain *c, const struct scratch *s)
{
	struct aims x = { .outside = -1, .abstract_fd = -1 };
	enum sbx_userns_step step;
	char how[400], readme[PATH_MAX];
	struct argv_b a = { .n = 0 };
	struct run res;
	unsigned port;
	int l, e;

	c->tier = 1;
	pr_join(c->baseline, sizeof c->baseline, s->base, "tier-baseline.json");
	pr_join(c->request, sizeof c->request, s->base, "tier-request.json");
	pr_join(c->status, sizeof c->status, s->base, "tier-status");
	pr_join(c->errors, sizeof c->errors, s->base, "tier-stderr");
	pr_put_file(c->baseline, baseline_json, 0644);
	pr_put_file(c->request, request_json, 0644);
	if (sbx_probe_landlock(&c->kernel_abi) != 0)
		c->kernel_abi = 0;
	/* sbx-ns chooses the tier only where clone refuses the user namespace;
	 * wherever one can be created, the proof takes them away itself. */
	e = sbx_probe_userns(&step);
	c->refuse_userns = e == 0 || step != SBX_USERNS_UNSHARE;
	if (!c->refuse_userns)
		snprintf(how, sizeof how, "this host refuses user namespaces (%s)", strerror(e));
	else
		snprintf(how, sizeof how, "user namespaces can be created here%s%s%s%s, so sbx-ns "
			 "would not choose this tier by itself: the proof took them away from it with "
			 "a seccomp filter, as a container's profile does", e ? " (but " : "",
			 !e ? "" : step == SBX_USERNS_MAP ? "mapping the ids fails: " :
			 "a mount namespace inside fails: ", e ? strerror(e) : "", e ? ")" : "");

	/* Deny-write first: kept in the tier, or refused and then given up. */
	pr_join(readme, sizeof readme, s->ws, "readme");
	pr_add_ns(&a, c, NULL, s->ws, s->probe);
	pr_add(&a, "read");
	pr_add(&a, readme);
	pr_run(c, a.v, &res);
	c->give_up_deny = res.code == SBX_EXIT_NOISOLATION && strstr(res.out, "deny-write");

	tier_line(r, c, s, how);
	start_outside(&x);
	listen_abstract(&x, s);
	l = pr_host_listener(&port);
	snprintf(x.port, sizeof x.port, "%u", port);
	snprintf(x.tmp, sizeof x.tmp, "/tmp/%s-escaped", strrchr(s->base, '/') + 1);
	pr_attempts(r, c, s, &x);
	if (unlink(x.tmp) < 0 && errno != ENOENT)
		sbx_warn_errno("unable to remove %s", x.tmp);
	close(l);
	close(x.abstract_fd);
	kill(x.outside, SIGKILL);
	waitpid(x.outside, NULL, 0);
}

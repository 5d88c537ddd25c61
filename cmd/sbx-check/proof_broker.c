/* `sbx-check proof`, the broker lines: an allowlisted name fetched through
 * sbx-ns --net broker and sbx-broker, a name off the list refused, each
 * judged by what the test origin saw. */
#include "proof.h"
#include "die.h"
#include "exitcodes.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void broker_unsupported(struct chk_report *r, const char *fix, const char *why)
{
	static const char *const names[] = { "broker-allowed", "broker-denied" };

	for (size_t i = 0; i < 2; i++) {
		struct chk_item *it = chk_add(r, CLS_EXTRA, names[i], CHK_UNSUPPORTED, "%s", why);
		chk_fix(it, "%s", fix);
	}
}

/* An allowlisted name reaches the test origin through sbx-ns --net broker
 * and sbx-broker; a name not on the list, mapped to the same origin, is
 * refused by the broker (403) and the origin sees no request. */
static void fetch(struct chk_report *r, struct chain *c, const struct scratch *s,
		  struct testnet *t, const char *net, int allowed)
{
	const char *line = allowed ? "broker-allowed" : "broker-denied";
	struct argv_b a = { .n = 0 };
	struct run res;
	int before = pr_origin_requests(t);

	pr_add_ns(&a, c, net, s->ws, s->probe);
	pr_add(&a, "fetch");
	pr_add(&a, allowed ? ALLOWED_NAME : DENIED_NAME);
	pr_run(c, a.v, &res);
	if (res.code == SBX_EXIT_USAGE) {
		struct chk_item *it = chk_add(r, CLS_EXTRA, line, CHK_UNSUPPORTED,
					      "this sbx-ns refuses --net broker: %s", res.out);
		chk_fix(it, "an sbx-ns with network modes");
	} else if (!allowed && res.code == 1 && !strstr(res.out, ": HTTP 403")) {
		/* Only the broker's refusal counts: a missing proxy proves nothing. */
		chk_add(r, CLS_EXTRA, line, CHK_FAIL, "not refused by the broker: %s", res.out);
	} else {
		pr_judge(r, CLS_EXTRA, line, allowed, &res, pr_origin_requests(t) == before + allowed,
			 allowed ? "the origin did not see exactly one request" : "the origin saw the request");
	}
}

/* Without root or ip(8): the denial alone, in namespaces of the caller's
 * own (see userns_main). */
static void broker_denial_only(struct chk_report *r, struct chain *c, const struct scratch *s,
			       const char *broker, const char *whynot)
{
	char net[PATH_MAX + 16], why[1200];
	struct chk_item *it;
	struct testnet t;

	memset(&t, 0, sizeof t);
	t.count_fd = -1;
	pr_join(t.sock, sizeof t.sock, s->base, "broker.sock");
	pr_join(t.hosts, sizeof t.hosts, s->base, "hosts");
	pr_put_file(t.hosts, "127.0.0.1 " ALLOWED_NAME "\n127.0.0.1 " DENIED_NAME "\n", 0644);
	it = chk_add(r, CLS_EXTRA, "broker-allowed", CHK_UNSUPPORTED,
		     "not proven: %s, and the broker refuses loopback and the host's own addresses",
		     whynot);
	chk_fix(it, "run sbx-check proof as root with iproute2's ip(8) installed");
	if ((t.broker = pr_start_helper(c, &t, broker, 1, why, sizeof why)) < 0) {
		it = chk_add(r, CLS_EXTRA, "broker-denied", CHK_UNSUPPORTED,
			     "the test origin and broker could not be started: %s", why);
		chk_fix(it, "see `sbx-check host` (user namespaces)");
	} else if (chmod(t.sock, 0666) < 0) {
		sbx_die_errno(SBX_EXIT_SYS, "unable to chmod %s", t.sock);
	} else {
		snprintf(net, sizeof net, "broker:%s", t.sock);
		fetch(r, c, s, &t, net, 0);
	}
	pr_testnet_down(c, &t);
}

void pr_broker_proof(struct chk_report *r, struct chain *c, const struct scratch *s)
{
	char broker[PATH_MAX + 16], bdir[PATH_MAX], net[PATH_MAX + 16], why[1200];
	const char *ip = pr_find_ip();
	struct testnet t;

	if (c->stop)
		return;
	chk_bindir(bdir, sizeof bdir);
	pr_join(broker, sizeof broker, bdir, "sbx-broker");
	if (!c->have_broker) {
		broker_unsupported(r, "install sbx-broker",
				   "sbx-broker is not installed beside sbx-check: the sandbox is offline only");
		return;
	}
	if (getuid() != 0) {
		broker_denial_only(r, c, s, broker,
				   "a test origin outside the broker's namespace needs a veth pair, "
				   "which only root can build");
		return;
	}
	if (!ip) {
		broker_denial_only(r, c, s, broker, "ip(8) is not installed to build a veth pair");
		return;
	}
	if (!pr_is_iproute2(c, ip)) {
		char msg[PATH_MAX + 96];
		snprintf(msg, sizeof msg, "%s is not iproute2's ip (busybox's?): the veth pair "
			 "needs iproute2", ip);
		broker_denial_only(r, c, s, broker, msg);
		return;
	}
	memset(&t, 0, sizeof t);
	t.count_fd = -1;
	snprintf(t.ip, sizeof t.ip, "%s", ip);
	if (pr_testnet_up(c, &t, s, broker, why, sizeof why) < 0) {
		char msg[1300];
		pr_testnet_down(c, &t);
		snprintf(msg, sizeof msg, "the test network could not be built: %s", why);
		broker_unsupported(r, "see the reason", msg);
		return;
	}
	snprintf(net, sizeof net, "broker:%s", t.sock);
	fetch(r, c, s, &t, net, 1);
	fetch(r, c, s, &t, net, 0);
	pr_testnet_down(c, &t);
}

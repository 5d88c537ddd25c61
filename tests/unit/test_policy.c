#include "unit.h"
#include "exitcodes.h"
#include "policy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define MIB (1ULL << 20)

/* Parse text as a policy labelled src; returns the exit code (0 ok) and
 * leaves the message in e. */
static int load(struct sbx_policy *p, const char *src, const char *text, struct sbx_err *e)
{
	sbx_policy_init(p, src);
	e->code = 0;
	e->msg[0] = '\0';
	if (sbx_policy_parse(p, text, strlen(text), e) < 0)
		return e->code;
	if (sbx_policy_resolve_roots(p, "/srv/ws", e) < 0)
		return e->code;
	return 0;
}

static const char *load_err(const char *text)
{
	static char msg[sizeof ((struct sbx_err *)0)->msg + 16];
	struct sbx_policy p;
	struct sbx_err e;

	if (!load(&p, "t", text, &e))
		snprintf(msg, sizeof msg, "(loaded)");
	else
		snprintf(msg, sizeof msg, "%d %s", e.code, e.msg);
	sbx_policy_free(&p);
	return msg;
}

/* Merge base (NULL text: no baseline) and req; the effective policy as
 * JSON or "CODE message". */
static const char *merge(const char *base, const char *req, unsigned scope, int clamp,
			 char *clamped)
{
	static char out[8192];
	struct sbx_policy b, r, eff;
	struct sbx_pol_clamped cl;
	struct sbx_err e;
	char *j;

	if (load(&r, "req", req, &e)) {
		snprintf(out, sizeof out, "%d %s", e.code, e.msg);
		sbx_policy_free(&r);
		return out;
	}
	if (base && load(&b, "base", base, &e)) {
		snprintf(out, sizeof out, "%d %s", e.code, e.msg);
		sbx_policy_free(&r);
		sbx_policy_free(&b);
		return out;
	}
	if (sbx_policy_merge(base ? &b : NULL, &r, scope, clamp, &eff, &cl, &e) < 0) {
		snprintf(out, sizeof out, "%d %s", e.code, e.msg);
	} else {
		j = sbx_policy_to_json(&eff, scope);
		snprintf(out, sizeof out, "%s", j ? j : "(null)");
		out[strcspn(out, "\n")] = '\0';
		free(j);
	}
	if (clamped) {
		clamped[0] = '\0';
		for (size_t i = 0; i < cl.n && !e.code; i++)
			sprintf(clamped + strlen(clamped), "%s%s", i ? "," : "", cl.field[i]);
	}
	sbx_policy_free(&eff);
	sbx_policy_free(&r);
	if (base)
		sbx_policy_free(&b);
	return out;
}

#define RES(x) "{\"resources\":{" x "}}"
#define SB(x) "{\"sandbox\":{" x "}}"

TEST(policy_spec_blocks_load)
{
	struct sbx_policy p;
	struct sbx_err e;

	CHECK(!load(&p, "t", SB("\"mode\":\"native\",\"network\":{\"mode\":\"none\",\"allowlist\":[]},"
				"\"readableRoots\":[\".\"],\"writableRoots\":[\".\"],"
				"\"denyWrite\":[\".env\",\".env.*\",\".git/config\",\".git/config.worktree\",\".git/hooks/**\",\".git/worktrees/*/config.worktree\",\".git/modules/**/config\",\".git/modules/**/hooks/**\"],"
				"\"fallback\":\"fail-closed\",\"unsafeAllowHostProcess\":false"), &e));
	CHECK(p.mode.v == SBX_PMODE_NATIVE && p.net.v == SBX_PNET_NONE);
	CHECK_STR(p.ro.it[0].val, "/srv/ws");
	CHECK(p.deny.n == 8);
	CHECK(!sbx_policy_unsafe_fallback(&p));
	sbx_policy_free(&p);

	CHECK(!load(&p, "t", "{\"cpu_percent\":100,\"memory_mb\":1024,\"disk_mb\":4096,"
			     "\"max_processes\":64,\"require_hard_limits\":true}", &e));
	CHECK_U64(p.cpu.v, 100);
	CHECK_U64(p.memory.v, 1024 * MIB);
	CHECK_U64(p.disk.v, 4096 * MIB);
	CHECK_U64(p.pids.v, 64);
	CHECK(p.hard.set && p.hard.v);
	CHECK(!sbx_policy_has_sandbox(&p));
	sbx_policy_free(&p);

	CHECK(!load(&p, "t", SB("\"mode\":\"native\",\"fallback\":\"unsafe-host-process\","
				"\"unsafeAllowHostProcess\":true"), &e));
	CHECK(sbx_policy_unsafe_fallback(&p));
	sbx_policy_free(&p);
}

TEST(policy_defaults_of_a_sandbox_block)
{
	struct sbx_policy p;
	struct sbx_err e;

	CHECK(!load(&p, "t", SB(""), &e));
	CHECK(p.mode.set && p.mode.v == SBX_PMODE_NATIVE);
	CHECK(p.net.set && p.net.v == SBX_PNET_NONE);
	CHECK(p.allow.set && p.allow.n == 0);
	CHECK(p.ro.n == 1 && p.rw.n == 1);
	CHECK(p.deny.n == 8);
	CHECK(p.fallback.v == SBX_PFB_FAIL_CLOSED && p.unsafe.set && !p.unsafe.v);
	CHECK(!sbx_policy_has_resources(&p));
	sbx_policy_free(&p);

	/* resources without require_hard_limits: hard, as the protocol says */
	CHECK(!load(&p, "t", RES("\"memory_mb\":1"), &e));
	CHECK(p.hard.set && p.hard.v);
	sbx_policy_free(&p);
	CHECK(!load(&p, "t", "{}", &e));
	CHECK(!sbx_policy_has_sandbox(&p) && !sbx_policy_has_resources(&p));
	sbx_policy_free(&p);
}

TEST(policy_malformed_shapes_name_the_path)
{
	char deep[3000];

	CHECK_STR(load_err(SB("\"network\":{\"mode\":\"wide\"}")),
		  "100 t: $.sandbox.network.mode: unknown value \"wide\" (none, localhost, allowlist, all)");
	CHECK_STR(load_err(SB("\"netwrok\":{}")), "100 t: $.sandbox.netwrok: unknown key");
	CHECK_STR(load_err("{\"x\":1}"), "100 t: $.x: unknown key");
	CHECK_STR(load_err(RES("\"memory\":1")), "100 t: $.resources.memory: unknown key");
	CHECK_STR(load_err(SB("\"network\":{\"mode\":\"none\",\"proxy\":1}")),
		  "100 t: $.sandbox.network.proxy: unknown key");
	CHECK_STR(load_err("{\"a b\":1}"), "100 t: $[\"a b\"]: unknown key");
	CHECK_STR(load_err(SB("\"mode\":1")), "100 t: $.sandbox.mode: expected a string, got an integer");
	CHECK_STR(load_err(SB("\"readableRoots\":\".\"")),
		  "100 t: $.sandbox.readableRoots: expected an array of strings, got a string");
	CHECK_STR(load_err(SB("\"denyWrite\":[\".env\",null]")),
		  "100 t: $.sandbox.denyWrite[1]: expected a string, got null");
	CHECK_STR(load_err(SB("\"unsafeAllowHostProcess\":\"yes\"")),
		  "100 t: $.sandbox.unsafeAllowHostProcess: expected a boolean, got a string");
	CHECK_STR(load_err(SB("\"network\":[]")), "100 t: $.sandbox.network: expected an object, got an array");
	CHECK_STR(load_err("[]"), "100 t: $: expected an object, got an array");
	CHECK_STR(load_err(RES("\"memory_mb\":1.5")),
		  "100 t: $.resources.memory_mb: expected an integer, got a real number");
	CHECK_STR(load_err(RES("\"cpu_percent\":100.0")),
		  "100 t: $.resources.cpu_percent: expected an integer, got a real number");
	CHECK_STR(load_err(RES("\"max_processes\":0")), "100 t: $.resources.max_processes: zero is not a limit");
	CHECK_STR(load_err(RES("\"disk_mb\":-4")), "100 t: $.resources.disk_mb: negative");
	CHECK_STR(load_err(RES("\"cpu_percent\":100001")),
		  "100 t: $.resources.cpu_percent: 100001 is above the maximum 100000");
	CHECK_STR(load_err(RES("\"memory_mb\":1073741825")),
		  "100 t: $.resources.memory_mb: 1073741825 is above the maximum 1073741824");
	CHECK_STR(load_err(RES("\"memory_mb\":99999999999999999999")),
		  "100 t: $.resources.memory_mb: invalid JSON at line 1, column 46: too big integer near '99999999999999999999'");
	CHECK_STR(load_err(RES("\"memory_mb\":1e400")),
		  "100 t: $.resources.memory_mb: invalid JSON at line 1, column 31: real number overflow near '1e400'");
	CHECK_STR(load_err(RES("\"memory_mb\":NaN")),
		  "100 t: $.resources.memory_mb: invalid JSON at line 1, column 29: invalid token near 'NaN'");
	CHECK_STR(load_err(RES("\"memory_mb\":Infinity")),
		  "100 t: $.resources.memory_mb: invalid JSON at line 1, column 34: invalid token near 'Infinity'");
	CHECK_STR(load_err(SB("\"network\":{\"mode\":\"none\",\"mode\":\"all\"}")),
		  "100 t: $.sandbox.network.mode: invalid JSON at line 1, column 43: duplicate object key near '\"mode\"'");
	CHECK_STR(load_err("{\"sandbox\":{},\"sandbox\":{}}"),
		  "100 t: $.sandbox: invalid JSON at line 1, column 23: duplicate object key near '\"sandbox\"'");
	CHECK_STR(load_err(SB("\"denyWrite\":[\".env\",]")),
		  "100 t: $.sandbox.denyWrite[1]: invalid JSON at line 1, column 33: unexpected token near ']'");
	CHECK_STR(load_err(SB("\"mode\":\"native\",")),
		  "100 t: $.sandbox: invalid JSON at line 1, column 29: string or '}' expected near '}'");
	CHECK_STR(load_err("{} x"), "100 t: $: invalid JSON at line 1, column 4: end of file expected near 'x'");
	CHECK_STR(load_err("{}{}"), "100 t: $: invalid JSON at line 1, column 3: end of file expected near '{'");
	CHECK_STR(load_err("\xef\xbb\xbf{}"),
		  "100 t: $: invalid JSON at line 1, column 1: a byte order mark is not allowed");
	CHECK_STR(load_err(""), "100 t: $: invalid JSON at line 1, column 0: '[' or '{' expected near end of file");
	CHECK_STR(load_err(SB("\"readableRoots\":[\"a\\u0000b\"]")),
		  "100 t: $.sandbox.readableRoots[0]: invalid JSON at line 1, column 39: \\u0000 is not allowed without JSON_ALLOW_NUL near '\"a\\u0000b\"'");
	CHECK_STR(load_err("{\"sandbox\":{\"mode\":\"\xff\"}}"),
		  "100 t: $.sandbox.mode: invalid JSON at line 1, column 20: unable to decode byte 0xff near '\"'");
	/* A key of control bytes is shown escaped, not raw. */
	CHECK_STR(load_err("{\"\\u0001\\n\":1}"), "100 t: $[\"\\x01\\x0a\"]: unknown key");

	/* Nesting beyond jansson's limit: refused at the limit, the path
	 * shortened. */
	memset(deep, '[', sizeof deep - 1);
	deep[sizeof deep - 1] = '\0';
	CHECK_STR(load_err(deep),
		  "100 t: $[0][0][0][0][0][0][0][0][0][0][0][0]...(2024 levels)...[0][0][0][0][0][0][0][0][0][0][0][0]: "
		  "invalid JSON at line 1, column 2049: maximum parsing depth reached near '['");
}

TEST(policy_values_refused)
{
	CHECK_STR(load_err(SB("\"readableRoots\":[\"../etc\"]")),
		  "100 t: $.sandbox.readableRoots[0]: invalid path \"../etc\": '..' is not allowed");
	CHECK_STR(load_err(SB("\"writableRoots\":[\"/a/../b\"]")),
		  "100 t: $.sandbox.writableRoots[0]: invalid path \"/a/../b\": '..' is not allowed");
	CHECK_STR(load_err(SB("\"writableRoots\":[\"\"]")),
		  "100 t: $.sandbox.writableRoots[0]: invalid path \"\": empty");
	CHECK_STR(load_err(SB("\"denyWrite\":[\"/etc/passwd\"]")),
		  "100 t: $.sandbox.denyWrite[0]: invalid glob \"/etc/passwd\": absolute (globs are relative to the workspace)");
	CHECK_STR(load_err(SB("\"denyWrite\":[\"a/**/**/b\"]")),
		  "100 t: $.sandbox.denyWrite[0]: invalid glob \"a/**/**/b\": '**/**'");
	CHECK_STR(load_err(SB("\"denyWrite\":[\"a/x**/b\"]")),
		  "100 t: $.sandbox.denyWrite[0]: invalid glob \"a/x**/b\": '**' must be a whole component");
	CHECK_STR(load_err(SB("\"denyWrite\":[\"a//b\"]")),
		  "100 t: $.sandbox.denyWrite[0]: invalid glob \"a//b\": empty component");
	CHECK_STR(load_err(SB("\"network\":{\"allowlist\":[\"*\"]}")),
		  "100 t: $.sandbox.network.allowlist[0]: invalid host pattern \"*\": a bare * would allow every name");
	CHECK_STR(load_err(SB("\"network\":{\"allowlist\":[\"::1\"]}")),
		  "100 t: $.sandbox.network.allowlist[0]: invalid host pattern \"::1\": ports and IPv6 literals not allowed");
	CHECK_STR(load_err(SB("\"network\":{\"allowlist\":[\"a.com:443\"]}")),
		  "100 t: $.sandbox.network.allowlist[0]: invalid host pattern \"a.com:443\": ports and IPv6 literals not allowed");
	CHECK_STR(load_err(SB("\"network\":{\"allowlist\":[\"a .com\"]}")),
		  "100 t: $.sandbox.network.allowlist[0]: invalid host pattern \"a .com\": whitespace not allowed");
	CHECK_STR(load_err(SB("\"fallback\":\"unsafe-host-process\"")),
		  "100 t: $.sandbox.fallback: \"unsafe-host-process\" needs \"unsafeAllowHostProcess\": true as well");
	CHECK_STR(load_err(SB("\"unsafeAllowHostProcess\":true")),
		  "100 t: $.sandbox.unsafeAllowHostProcess: true needs \"fallback\": \"unsafe-host-process\" as well");
	CHECK_STR(load_err(SB("\"fallback\":\"open\"")),
		  "100 t: $.sandbox.fallback: unknown value \"open\" (fail-closed, landlock, unsafe-host-process)");
	CHECK_STR(load_err(SB("\"mode\":\"srt\"")), "100 t: $.sandbox.mode: unknown value \"srt\" (native, off)");
	CHECK_STR(load_err("{\"memory_mb\":1,\"resources\":{}}"),
		  "100 t: $.resources: resource fields given at the top level as well");
	CHECK_STR(load_err("{\"resources\":{},\"memory_mb\":1}"), "100 t: $.memory_mb: given in $.resources as well");
	CHECK_STR(load_err(RES("\"memory_mb\":1,\"memory_bytes\":1")),
		  "100 t: $.resources.memory_bytes: memory_mb and memory_bytes are exclusive");
}

TEST(policy_roots_are_lexically_normal)
{
	struct sbx_policy p;
	struct sbx_err e;

	CHECK(!load(&p, "t", SB("\"readableRoots\":[\"./src/\",\"/opt//tools/.\",\".\",\"/srv/ws\"],"
				"\"writableRoots\":[]"), &e));
	CHECK(p.ro.n == 3);
	CHECK_STR(p.ro.it[0].val, "/srv/ws/src");
	CHECK_STR(p.ro.it[1].val, "/opt/tools");
	CHECK_STR(p.ro.it[2].val, "/srv/ws");
	CHECK(p.rw.set && p.rw.n == 0);
	sbx_policy_free(&p);

	sbx_policy_init(&p, "t");
	CHECK(sbx_policy_parse(&p, "{\"sandbox\":{}}", 14, &e) == 0);
	CHECK(sbx_policy_resolve_roots(&p, NULL, &e) < 0);
	CHECK_STR(e.msg, "t: default: relative root \".\" needs a workspace");
	CHECK(sbx_policy_resolve_roots(&p, "srv", &e) < 0);
	CHECK_STR(e.msg, "workspace \"srv\": not absolute");
	CHECK(sbx_policy_resolve_roots(&p, "/srv/", &e) < 0);
	CHECK_STR(e.msg, "workspace \"/srv/\": not in normal form");
	sbx_policy_free(&p);

	CHECK(sbx_path_within("/a/b", "/a"));
	CHECK(sbx_path_within("/a", "/a"));
	CHECK(!sbx_path_within("/ab", "/a"));
	CHECK(!sbx_path_within("/a", "/a/b"));
	CHECK(sbx_path_within("/anything", "/"));
	/* Relative paths (deny-write's, under the workspace) the same way. */
	CHECK(sbx_path_within(".git/hooks/x", ".git/hooks"));
	CHECK(sbx_path_within(".git", ".git"));
	CHECK(!sbx_path_within(".gitx", ".git"));
}

/* The merge table: each field, both directions, with and without a
 * baseline, refused and clamped. */
TEST(policy_merge_resources)
{
	char cl[512];
	const char *base = RES("\"cpu_percent\":200,\"memory_mb\":1024,\"disk_mb\":4096,"
			       "\"max_processes\":64,\"max_inodes\":1000,\"require_hard_limits\":true");

	/* no baseline: the request as it is */
	CHECK_STR(merge(NULL, RES("\"memory_mb\":99999"), SBX_PSCOPE_ALL, 0, cl),
		  "{\"resources\":{\"memory_mb\":99999,\"require_hard_limits\":true}}");
	/* request narrower: it wins; absent: the baseline's */
	CHECK_STR(merge(base, RES("\"cpu_percent\":50,\"memory_mb\":512,\"disk_mb\":10,"
				  "\"max_processes\":8,\"max_inodes\":7"), SBX_PSCOPE_ALL, 0, cl),
		  "{\"resources\":{\"cpu_percent\":50,\"memory_mb\":512,\"disk_mb\":10,\"max_processes\":8,"
		  "\"max_inodes\":7,\"require_hard_limits\":true}}");
	CHECK_STR(merge(base, "{}", SBX_PSCOPE_ALL, 0, cl),
		  "{\"resources\":{\"cpu_percent\":200,\"memory_mb\":1024,\"disk_mb\":4096,\"max_processes\":64,"
		  "\"max_inodes\":1000,\"require_hard_limits\":true}}");
	/* equal is not more */
	CHECK_STR(merge(base, RES("\"memory_mb\":1024"), SBX_PSCOPE_CGROUP, 0, cl),
		  "{\"resources\":{\"cpu_percent\":200,\"memory_mb\":1024,\"max_processes\":64,\"require_hard_limits\":true}}");
	/* each field wider: refused naming both sides */
	CHECK_STR(merge(base, RES("\"cpu_percent\":201"), SBX_PSCOPE_ALL, 0, cl),
		  "102 policy refused: req: $.resources.cpu_percent: 201% is more than the baseline's 200% (base: $.resources.cpu_percent)");
	CHECK_STR(merge(base, RES("\"memory_mb\":1025"), SBX_PSCOPE_ALL, 0, cl),
		  "102 policy refused: req: $.resources.memory_mb: 1025 MiB is more than the baseline's 1024 MiB (base: $.resources.memory_mb)");
	CHECK_STR(merge(base, RES("\"memory_bytes\":1073741825"), SBX_PSCOPE_ALL, 0, cl),
		  "102 policy refused: req: $.resources.memory_bytes: 1073741825 bytes is more than the baseline's 1024 MiB (base: $.resources.memory_mb)");
	CHECK_STR(merge(base, RES("\"disk_mb\":4097"), SBX_PSCOPE_ALL, 0, cl),
		  "102 policy refused: req: $.resources.disk_mb: 4097 MiB is more than the baseline's 4096 MiB (base: $.resources.disk_mb)");
	CHECK_STR(merge(base, RES("\"max_processes\":65"), SBX_PSCOPE_ALL, 0, cl),
		  "102 policy refused: req: $.resources.max_processes: 65 processes is more than the baseline's 64 processes (base: $.resources.max_processes)");
	CHECK_STR(merge(base, RES("\"max_inodes\":1001"), SBX_PSCOPE_ALL, 0, cl),
		  "102 policy refused: req: $.resources.max_inodes: 1001 inodes is more than the baseline's 1000 inodes (base: $.resources.max_inodes)");
	CHECK_STR(merge(base, RES("\"require_hard_limits\":false"), SBX_PSCOPE_ALL, 0, cl),
		  "102 policy refused: req: $.resources.require_hard_limits: false is wider than the baseline's true (base: $.resources.require_hard_limits)");
	/* the other way round: a soft baseline, a hard request */
	CHECK_STR(merge(RES("\"require_hard_limits\":false"), RES("\"require_hard_limits\":true"),
			SBX_PSCOPE_QUOTA, 0, cl),
		  "{\"resources\":{\"require_hard_limits\":true}}");
	/* clamped: narrowed to the baseline and listed */
	CHECK_STR(merge(base, RES("\"cpu_percent\":400,\"memory_mb\":2048,\"disk_mb\":5000,"
				  "\"max_processes\":100,\"max_inodes\":2000,\"require_hard_limits\":false"),
			SBX_PSCOPE_ALL, 1, cl),
		  "{\"resources\":{\"cpu_percent\":200,\"memory_mb\":1024,\"disk_mb\":4096,\"max_processes\":64,"
		  "\"max_inodes\":1000,\"require_hard_limits\":true}}");
	CHECK_STR(cl, "resources.cpu_percent,resources.memory_mb,resources.max_processes,resources.disk_mb,"
		      "resources.max_inodes,resources.require_hard_limits");
	CHECK_STR(merge(base, RES("\"memory_mb\":10"), SBX_PSCOPE_ALL, 1, cl),
		  "{\"resources\":{\"cpu_percent\":200,\"memory_mb\":10,\"disk_mb\":4096,\"max_processes\":64,"
		  "\"max_inodes\":1000,\"require_hard_limits\":true}}");
	CHECK_STR(cl, "");
	/* scope: a tool never refuses what it does not enforce */
	CHECK_STR(merge(base, RES("\"disk_mb\":9999"), SBX_PSCOPE_CGROUP, 0, cl),
		  "{\"resources\":{\"cpu_percent\":200,\"memory_mb\":1024,\"max_processes\":64,\"require_hard_limits\":true}}");
	CHECK_STR(merge(base, RES("\"memory_mb\":9999"), SBX_PSCOPE_QUOTA, 0, cl),
		  "{\"resources\":{\"disk_mb\":4096,\"max_inodes\":1000,\"require_hard_limits\":true}}");
	CHECK_STR(merge(base, SB("\"network\":{\"mode\":\"all\"}"), SBX_PSCOPE_CGROUP, 0, cl),
		  "{\"resources\":{\"cpu_percent\":200,\"memory_mb\":1024,\"max_processes\":64,\"require_hard_limits\":true}}");
	/* a byte-exact request below a MiB baseline is printed in bytes */
	CHECK_STR(merge(base, RES("\"memory_bytes\":1536"), SBX_PSCOPE_CGROUP, 0, cl),
		  "{\"resources\":{\"cpu_percent\":200,\"memory_bytes\":1536,\"max_processes\":64,\"require_hard_limits\":true}}");
}

#define SBX_ALL_DEFAULTS "\"denyWrite\":[\".env\",\".env.*\",\".git/config\",\".git/config.worktree\",\".git/hooks/**\",\".git/worktrees/*/config.worktree\",\".git/modules/**/config\",\".git/modules/**/hooks/**\"]," \
	"\"fallback\":\"fail-closed\",\"unsafeAllowHostProcess\":false"

TEST(policy_merge_network)
{
	char cl[512];
	const char *allow = SB("\"network\":{\"mode\":\"allowlist\",\"allowlist\":[\"*.example.org\",\"pypi.org\"]}");
	const char *m;

	/* no baseline */
	m = merge(NULL, SB("\"network\":{\"mode\":\"all\"}"), SBX_PSCOPE_NS, 0, cl);
	CHECK(strstr(m, "\"network\":{\"mode\":\"all\",\"allowlist\":[]}") != NULL);
	/* narrower request: wins */
	m = merge(allow, SB("\"network\":{\"mode\":\"localhost\"}"), SBX_PSCOPE_NS, 0, cl);
	CHECK(strstr(m, "\"network\":{\"mode\":\"localhost\",\"allowlist\":[]}") != NULL);
	m = merge(SB("\"network\":{\"mode\":\"localhost\"}"), SB("\"network\":{\"mode\":\"none\"}"), SBX_PSCOPE_NS, 0, cl);
	CHECK(strstr(m, "\"network\":{\"mode\":\"none\",\"allowlist\":[]}") != NULL);
	/* wider: refused, each step */
	CHECK_STR(merge(SB("\"network\":{\"mode\":\"none\"}"), SB("\"network\":{\"mode\":\"localhost\"}"), SBX_PSCOPE_NS, 0, cl),
		  "102 policy refused: req: $.sandbox.network.mode: localhost (loopback) is wider than the baseline's none (base: $.sandbox.network.mode)");
	CHECK_STR(merge(SB("\"network\":{\"mode\":\"localhost\"}"), allow, SBX_PSCOPE_NS, 0, cl),
		  "102 policy refused: req: $.sandbox.network.mode: allowlist (broker) is wider than the baseline's localhost (loopback) (base: $.sandbox.network.mode)");
	CHECK_STR(merge(allow, SB("\"network\":{\"mode\":\"all\"}"), SBX_PSCOPE_NS, 0, cl),
		  "102 policy refused: req: $.sandbox.network.mode: all (host) is wider than the baseline's allowlist (broker) (base: $.sandbox.network.mode)");
	/* a request without a sandbox block takes the baseline's */
	m = merge(allow, "{}", SBX_PSCOPE_NS, 0, cl);
	CHECK(strstr(m, "\"network\":{\"mode\":\"allowlist\",\"allowlist\":[\"*.example.org\",\"pypi.org\"]}") != NULL);
	/* hosts intersected */
	m = merge(allow, SB("\"network\":{\"mode\":\"allowlist\",\"allowlist\":[\"api.example.org\",\"*.cdn.example.org\",\"*.example.org\",\"pypi.org\"]}"),
		  SBX_PSCOPE_NS, 0, cl);
	CHECK(strstr(m, "\"allowlist\":[\"api.example.org\",\"*.cdn.example.org\",\"*.example.org\",\"pypi.org\"]") != NULL);
	CHECK_STR(merge(allow, SB("\"network\":{\"mode\":\"allowlist\",\"allowlist\":[\"example.org\"]}"), SBX_PSCOPE_NS, 0, cl),
		  "102 policy refused: req: $.sandbox.network.allowlist[0]: example.org is not within the baseline's allowlist (base: $.sandbox.network.allowlist)");
	CHECK_STR(merge(allow, SB("\"network\":{\"mode\":\"allowlist\",\"allowlist\":[\"*.pypi.org\"]}"), SBX_PSCOPE_NS, 0, cl),
		  "102 policy refused: req: $.sandbox.network.allowlist[0]: *.pypi.org is not within the baseline's allowlist (base: $.sandbox.network.allowlist)");
	CHECK_STR(merge(SB("\"network\":{\"mode\":\"allowlist\",\"allowlist\":[\"a.example.org\"]}"),
			SB("\"network\":{\"mode\":\"allowlist\",\"allowlist\":[\"*.example.org\"]}"), SBX_PSCOPE_NS, 0, cl),
		  "102 policy refused: req: $.sandbox.network.allowlist[0]: *.example.org is not within the baseline's allowlist (base: $.sandbox.network.allowlist)");
	/* clamped hosts: a wider pattern becomes the baseline's inside it */
	m = merge(SB("\"network\":{\"mode\":\"allowlist\",\"allowlist\":[\"a.example.org\",\"*.b.example.org\",\"pypi.org\"]}"),
		  SB("\"network\":{\"mode\":\"allowlist\",\"allowlist\":[\"*.example.org\",\"evil.com\"]}"), SBX_PSCOPE_NS, 1, cl);
	CHECK(strstr(m, "\"allowlist\":[\"a.example.org\",\"*.b.example.org\"]") != NULL);
	CHECK_STR(cl, "sandbox.network.allowlist");
	/* "all" clamped to the baseline's allowlist gets its hosts */
	m = merge(allow, SB("\"network\":{\"mode\":\"all\"}"), SBX_PSCOPE_NS, 1, cl);
	CHECK(strstr(m, "\"network\":{\"mode\":\"allowlist\",\"allowlist\":[\"*.example.org\",\"pypi.org\"]}") != NULL);
	CHECK_STR(cl, "sandbox.network.mode");
	/* a baseline of "all": the request's list stands */
	m = merge(SB("\"network\":{\"mode\":\"all\"}"), SB("\"network\":{\"mode\":\"allowlist\",\"allowlist\":[\"x.com\"]}"),
		  SBX_PSCOPE_NS, 0, cl);
	CHECK(strstr(m, "\"network\":{\"mode\":\"allowlist\",\"allowlist\":[\"x.com\"]}") != NULL);
	/* below allowlist the hosts do not matter */
	m = merge(allow, SB("\"network\":{\"mode\":\"none\",\"allowlist\":[\"evil.com\"]}"), SBX_PSCOPE_NS, 0, cl);
	CHECK(strstr(m, "\"network\":{\"mode\":\"none\",\"allowlist\":[]}") != NULL);
}

TEST(policy_merge_roots_deny_fallback)
{
	char cl[512];
	const char *base = SB("\"readableRoots\":[\".\",\"/opt/tools\"],\"writableRoots\":[\".\",\"/srv/data/tmp\"],"
			      "\"denyWrite\":[\".env\",\"secrets/**\"]");
	const char *m;

	m = merge(base, SB("\"readableRoots\":[\"/opt/tools/bin\",\"/srv/data/tmp/x\",\"src\"],\"writableRoots\":[\"out\"]"),
		  SBX_PSCOPE_NS, 0, cl);
	CHECK(strstr(m, "\"readableRoots\":[\"/opt/tools/bin\",\"/srv/data/tmp/x\",\"/srv/ws/src\"],"
			"\"writableRoots\":[\"/srv/ws/out\"]") != NULL);
	/* deny-write unioned: the request's and the baseline's */
	CHECK(strstr(m, "\"denyWrite\":[\".env\",\".env.*\",\".git/config\",\".git/config.worktree\",\".git/hooks/**\",\".git/worktrees/*/config.worktree\",\".git/modules/**/config\",\".git/modules/**/hooks/**\",\"secrets/**\"]") != NULL);
	CHECK_STR(merge(base, SB("\"readableRoots\":[\"/opt\"]"), SBX_PSCOPE_NS, 0, cl),
		  "102 policy refused: req: $.sandbox.readableRoots[0]: /opt is not within the baseline's readable roots (base: $.sandbox.readableRoots)");
	CHECK_STR(merge(base, SB("\"readableRoots\":[\"/opt/toolsX\"]"), SBX_PSCOPE_NS, 0, cl),
		  "102 policy refused: req: $.sandbox.readableRoots[0]: /opt/toolsX is not within the baseline's readable roots (base: $.sandbox.readableRoots)");
	/* a readable root is not a writable one */
	CHECK_STR(merge(base, SB("\"writableRoots\":[\"/opt/tools\"]"), SBX_PSCOPE_NS, 0, cl),
		  "102 policy refused: req: $.sandbox.writableRoots[0]: /opt/tools is not within the baseline's writable roots (base: $.sandbox.writableRoots)");
	CHECK_STR(merge(base, SB("\"writableRoots\":[\"/srv\"]"), SBX_PSCOPE_NS, 0, cl),
		  "102 policy refused: req: $.sandbox.writableRoots[0]: /srv is not within the baseline's writable roots (base: $.sandbox.writableRoots)");
	/* clamped: /srv becomes what the baseline allows under it */
	m = merge(base, SB("\"readableRoots\":[\"/\"],\"writableRoots\":[\"/srv\"]"), SBX_PSCOPE_NS, 1, cl);
	CHECK(strstr(m, "\"readableRoots\":[\"/srv/ws\",\"/opt/tools\",\"/srv/data/tmp\"],"
			"\"writableRoots\":[\"/srv/ws\",\"/srv/data/tmp\"]") != NULL);
	CHECK_STR(cl, "sandbox.readableRoots,sandbox.writableRoots");
	/* clamped to nothing */
	m = merge(base, SB("\"writableRoots\":[\"/etc\"]"), SBX_PSCOPE_NS, 1, cl);
	CHECK(strstr(m, "\"writableRoots\":[]") != NULL);
	/* no baseline: any roots */
	m = merge(NULL, SB("\"writableRoots\":[\"/etc\"]"), SBX_PSCOPE_NS, 0, cl);
	CHECK(strstr(m, "\"writableRoots\":[\"/etc\"]") != NULL);

	/* mode */
	CHECK_STR(merge(SB("\"mode\":\"native\""), SB("\"mode\":\"off\""), SBX_PSCOPE_NS, 0, cl),
		  "102 policy refused: req: $.sandbox.mode: off is wider than the baseline's native (base: $.sandbox.mode)");
	m = merge(SB("\"mode\":\"off\""), SB("\"mode\":\"native\""), SBX_PSCOPE_NS, 0, cl);
	CHECK(strstr(m, "\"mode\":\"native\"") != NULL);

	/* fallback and unsafeAllowHostProcess */
	const char *unsafe = SB("\"fallback\":\"unsafe-host-process\",\"unsafeAllowHostProcess\":true");
	CHECK_STR(merge(SB(""), unsafe, SBX_PSCOPE_NS, 0, cl),
		  "102 policy refused: req: $.sandbox.fallback: unsafe-host-process is wider than the baseline's fail-closed (base: default)");
	m = merge(SB(""), unsafe, SBX_PSCOPE_NS, 1, cl);
	CHECK(strstr(m, "\"fallback\":\"fail-closed\",\"unsafeAllowHostProcess\":false") != NULL);
	CHECK_STR(cl, "sandbox.fallback,sandbox.unsafeAllowHostProcess");
	m = merge(unsafe, SB(""), SBX_PSCOPE_NS, 0, cl);
	CHECK(strstr(m, "\"fallback\":\"fail-closed\",\"unsafeAllowHostProcess\":false") != NULL);
	m = merge(unsafe, unsafe, SBX_PSCOPE_NS, 0, cl);
	CHECK(strstr(m, "\"fallback\":\"unsafe-host-process\",\"unsafeAllowHostProcess\":true") != NULL);
	m = merge(NULL, unsafe, SBX_PSCOPE_NS, 0, cl);
	CHECK(strstr(m, "\"fallback\":\"unsafe-host-process\",\"unsafeAllowHostProcess\":true") != NULL);
	m = merge(unsafe, "{}", SBX_PSCOPE_NS, 0, cl);
	CHECK(strstr(m, "\"fallback\":\"unsafe-host-process\",\"unsafeAllowHostProcess\":true") != NULL);
	/* landlock: only from the baseline; a request keeps it or narrows it */
	const char *ll = SB("\"fallback\":\"landlock\"");
	m = merge(ll, "{}", SBX_PSCOPE_NS, 0, cl);
	CHECK(strstr(m, "\"fallback\":\"landlock\"") != NULL);
	m = merge(ll, SB(""), SBX_PSCOPE_NS, 0, cl);
	CHECK(strstr(m, "\"fallback\":\"landlock\"") != NULL);
	m = merge(ll, ll, SBX_PSCOPE_NS, 0, cl);
	CHECK(strstr(m, "\"fallback\":\"landlock\"") != NULL);
	m = merge(ll, SB("\"fallback\":\"fail-closed\""), SBX_PSCOPE_NS, 0, cl);
	CHECK(strstr(m, "\"fallback\":\"fail-closed\"") != NULL);
	CHECK_STR(merge(ll, unsafe, SBX_PSCOPE_NS, 0, cl),
		  "102 policy refused: req: $.sandbox.fallback: unsafe-host-process is wider than the baseline's landlock (base: $.sandbox.fallback)");
	CHECK_STR(merge(SB(""), ll, SBX_PSCOPE_NS, 0, cl),
		  "102 policy refused: req: $.sandbox.fallback: landlock comes only from the baseline, which says fail-closed (base: default)");
	CHECK_STR(merge(unsafe, ll, SBX_PSCOPE_NS, 0, cl),
		  "102 policy refused: req: $.sandbox.fallback: landlock comes only from the baseline, which says unsafe-host-process (base: $.sandbox.fallback)");
	CHECK_STR(merge(NULL, ll, SBX_PSCOPE_NS, 0, cl),
		  "102 policy refused: req: $.sandbox.fallback: landlock comes only from a baseline");
	m = merge(unsafe, ll, SBX_PSCOPE_NS, 1, cl);
	CHECK(strstr(m, "\"fallback\":\"fail-closed\"") != NULL);
	CHECK_STR(cl, "sandbox.fallback");
}

TEST(policy_argv_request)
{
	struct sbx_policy b, r, eff;
	struct sbx_err e;
	struct sbx_pol_clamped cl;

	CHECK(!load(&b, "--baseline-fd 3", "{\"sandbox\":{\"writableRoots\":[\".\"]},\"memory_mb\":100}", &e));
	sbx_policy_init(&r, "argv");
	CHECK(sbx_policy_add_root(&r, &r.rw, "/srv/ws", "--workspace", &e) == 0);
	CHECK(sbx_policy_add_root(&r, &r.ro, "/srv/ws/lib", "--ro", &e) == 0);
	CHECK(sbx_policy_set_u64(&r, &r.memory, 200 * MIB, "--memory", &e) == 0);
	CHECK(sbx_policy_set_u64(&r, &r.memory, 1, "--memory", &e) < 0);
	CHECK_STR(e.msg, "--memory: given twice");
	CHECK(sbx_policy_set_u64(&r, &r.pids, 0, "--pids", &e) < 0);
	CHECK_STR(e.msg, "--pids: zero is not a limit");
	CHECK(sbx_policy_set_u64(&r, &r.cpu, 100001, "--cpu", &e) < 0);
	CHECK_STR(e.msg, "--cpu: 100001 is above the maximum 100000");
	CHECK(sbx_policy_add_host(&r, "Example.COM.", "--allow-host", &e) == 0);
	CHECK_STR(r.allow.it[0].val, "example.com");
	CHECK(sbx_policy_add_glob(&r, "", "--deny-write", &e) < 0);
	CHECK_STR(e.msg, "--deny-write: invalid glob \"\": empty");
	sbx_policy_sandbox_defaults(&r);
	CHECK(sbx_policy_check(&r, &e) == 0);
	CHECK(sbx_policy_merge(&b, &r, SBX_PSCOPE_ALL, 0, &eff, &cl, &e) < 0);
	CHECK_STR(e.msg, "policy refused: --memory: 200 MiB is more than the baseline's 100 MiB (--baseline-fd 3: $.memory_mb)");
	CHECK(e.code == SBX_EXIT_POLICY);
	sbx_policy_free(&eff);
	CHECK(sbx_policy_merge(&b, &r, SBX_PSCOPE_NS, 0, &eff, &cl, &e) == 0);
	CHECK_STR(eff.ro.it[0].val, "/srv/ws/lib");
	CHECK_STR(eff.rw.it[0].val, "/srv/ws");
	sbx_policy_free(&eff);
	sbx_policy_free(&r);
	sbx_policy_free(&b);
}

TEST(policy_effective_json_loads_again)
{
	struct sbx_policy p, q;
	struct sbx_err e;
	char *a, *b;

	CHECK(!load(&p, "t", "{\"sandbox\":{\"network\":{\"mode\":\"allowlist\",\"allowlist\":[\"*.a.org\"]},"
			     "\"readableRoots\":[\"/x\"],\"fallback\":\"unsafe-host-process\","
			     "\"unsafeAllowHostProcess\":true},\"resources\":{\"cpu_percent\":5,\"memory_bytes\":1000,"
			     "\"disk_mb\":3,\"max_processes\":2,\"max_inodes\":9,\"require_hard_limits\":false}}", &e));
	a = sbx_policy_to_json(&p, SBX_PSCOPE_ALL);
	CHECK(a != NULL);
	CHECK(!load(&q, "t", a, &e));
	b = sbx_policy_to_json(&q, SBX_PSCOPE_ALL);
	CHECK_STR(a, b);
	free(a);
	free(b);
	sbx_policy_free(&p);
	sbx_policy_free(&q);
}

static const char *file_err(const char *path)
{
	static char msg[sizeof ((struct sbx_err *)0)->msg + 16];
	struct sbx_policy p;
	struct sbx_err e;

	sbx_policy_init(&p, "--baseline");
	if (sbx_policy_load_file(&p, path, &e) == 0)
		snprintf(msg, sizeof msg, "(loaded)");
	else
		snprintf(msg, sizeof msg, "%d %s", e.code, e.msg);
	sbx_policy_free(&p);
	return msg;
}

TEST(policy_baseline_file_checks)
{
	char dir[] = "/tmp/sbx-policy-XXXXXX", f[128], l[128], sub[128], fifo[128];
	int fd;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(f, sizeof f, "%s/b.json", dir);
	snprintf(l, sizeof l, "%s/link.json", dir);
	snprintf(sub, sizeof sub, "%s/sub", dir);
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	fd = open(f, O_WRONLY | O_CREAT | O_EXCL, 0644);
	CHECK(fd >= 0);
	CHECK(write(fd, "{\"memory_mb\":1}", 15) == 15);
	close(fd);
	CHECK_STR(file_err(f), "(loaded)");
	CHECK_STR(file_err("b.json"), "100 --baseline: invalid path 'b.json': not absolute");
	CHECK_STR(file_err(""), "100 --baseline: invalid path '': empty");
	CHECK_STR(file_err("/nonexistent/b.json"), "100 --baseline: invalid path '/nonexistent/b.json': does not exist");
	CHECK_STR(file_err(dir), "102 --baseline: refused: not a regular file");

	chmod(f, 0664);
	CHECK_STR(file_err(f), "102 --baseline: refused: writable by group or others (mode 0664)");
	chmod(f, 0646);
	CHECK_STR(file_err(f), "102 --baseline: refused: writable by group or others (mode 0646)");
	chmod(f, 0600);
	CHECK_STR(file_err(f), "(loaded)");

	CHECK(symlink(f, l) == 0);
	CHECK_STR(file_err(l), "102 --baseline: refused: a symbolic link");
	CHECK(mkfifo(fifo, 0600) == 0);
	CHECK_STR(file_err(fifo), "102 --baseline: refused: not a regular file");

	/* a directory others may write on the way */
	CHECK(mkdir(sub, 0755) == 0);
	{
		char g[160];
		snprintf(g, sizeof g, "%s/b.json", sub);
		fd = open(g, O_WRONLY | O_CREAT | O_EXCL, 0644);
		CHECK(fd >= 0 && write(fd, "{}", 2) == 2);
		close(fd);
		CHECK_STR(file_err(g), "(loaded)");
		chmod(sub, 0777);
		CHECK_STR(file_err(g), "102 --baseline: refused: a directory on its path is writable by group or others (mode 0777)");
		chmod(sub, 0755);
		unlink(g);
	}
	rmdir(sub);
	unlink(fifo);
	unlink(l);
	unlink(f);
	rmdir(dir);
}

static void notice(void *arg)
{
	(void)arg;
	sbx_policy_unsafe_notice(-1, "sbx-ns", ENOSPC);
	_exit(0);
}

TEST(policy_unsafe_notice_and_status)
{
	char err[1024];
	int p[2];
	struct sbx_policy eff;
	struct sbx_pol_clamped cl = { .field = { "resources.memory_mb" }, .n = 1 };
	ssize_t n;

	CHECK(unit_capture(notice, NULL, err, sizeof err) == 0);
	CHECK_STR(err, "sbx-ns: WARNING: the sandbox cannot be set up (No space left on device) and the policy "
		       "allows the unsafe host-process fallback: the command runs unconfined, with no root, "
		       "deny-write, network or seccomp restriction\n");
	CHECK(pipe(p) == 0);
	sbx_policy_init(&eff, "effective");
	CHECK(sbx_policy_status(p[1], "sbx-cgroup", 1, &eff, &cl) == 0);
	n = read(p[0], err, sizeof err - 1);
	CHECK(n > 0);
	err[n > 0 ? n : 0] = '\0';
	CHECK_STR(err, "{\"tool\":\"sbx-cgroup\",\"event\":\"policy\",\"baseline\":true,"
		       "\"clamped\":[\"resources.memory_mb\"],\"unsafe_fallback\":false}\n");
	close(p[0]);
	close(p[1]);
	sbx_policy_free(&eff);
}

TEST(policy_lists_are_bounded_and_messages_escaped)
{
	struct sbx_policy p, b, eff;
	struct sbx_err e;
	char path[64];

	sbx_policy_init(&p, "argv");
	for (int i = 0; i < SBX_POL_MAX_ITEMS; i++) {
		snprintf(path, sizeof path, "/r/%d", i);
		CHECK(sbx_policy_add_root(&p, &p.ro, path, "--ro", &e) == 0);
	}
	CHECK(sbx_policy_add_root(&p, &p.ro, "/r/0", "--ro", &e) == 0);   /* a duplicate is no entry */
	CHECK(sbx_policy_add_root(&p, &p.ro, "/r/x", "--ro", &e) < 0);
	CHECK_STR(e.msg, "--ro: more than 4096 entries");
	/* clamped against a baseline of as many other roots: the result may
	 * hold both sets */
	sbx_policy_init(&b, "base");
	for (int i = 0; i < SBX_POL_MAX_ITEMS; i++) {
		snprintf(path, sizeof path, "/r/%d/in", i);
		CHECK(sbx_policy_add_root(&b, &b.ro, path, "--ro", &e) == 0);
	}
	CHECK(sbx_policy_add_root(&p, &p.rw, "/a\nb", "--rw", &e) == 0);
	CHECK(sbx_policy_merge(&b, &p, SBX_PSCOPE_NS, 1, &eff, NULL, &e) == 0);
	CHECK(eff.ro.n == SBX_POL_MAX_ITEMS);
	sbx_policy_free(&eff);
	CHECK(sbx_policy_add_root(&b, &b.rw, "/w", "--rw", &e) == 0);
	CHECK(sbx_policy_merge(&b, &p, SBX_PSCOPE_NS, 0, &eff, NULL, &e) < 0);
	CHECK_STR(e.msg, "policy refused: --ro: /r/0 is not within the baseline's readable roots (--ro)");
	sbx_policy_free(&eff);
	sbx_policy_free(&p);
	sbx_policy_init(&p, "argv");
	CHECK(sbx_policy_add_root(&p, &p.rw, "/a\nb\x1b[2J", "--rw", &e) == 0);
	CHECK(sbx_policy_merge(&b, &p, SBX_PSCOPE_NS, 0, &eff, NULL, &e) < 0);
	CHECK_STR(e.msg, "policy refused: --rw: /a\\x0ab\\x1b[2J is not within the baseline's writable roots (--rw)");
	CHECK(sbx_policy_add_root(&p, &p.rw, "/x/../\x01", "--rw", &e) < 0);
	CHECK_STR(e.msg, "--rw: invalid path \"/x/../\\x01\": '..' is not allowed");
	sbx_policy_free(&eff);
	sbx_policy_free(&p);
	sbx_policy_free(&b);
}

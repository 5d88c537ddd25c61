/* sbx-ns's plan (cmd/sbx-ns/plan.c) without namespaces: a run made by hand,
 * its JSON compared byte for byte. */
#include "unit.h"

#include "json.h"
#include "ns.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void op(struct ns_plan *p, enum mount_kind kind, int ro, const char *opt, const char *src,
	       const char *dest, dev_t dev, ino_t ino)
{
	struct mount_op *o = ns_push_op(p);

	o->kind = kind;
	o->ro = ro;
	o->opt = opt;
	o->src = (char *)src;
	o->dest = (char *)dest;
	o->dev = dev;
	o->ino = ino;
	o->isdir = 1;
}

/* The root's steps made from the plan p of r (steps.c), then the plan
 * printed. */
static char *plan_of(struct ns_run *r, struct ns_plan *p)
{
	struct sbx_json j;
	const char *line;
	size_t len;
	char *s;

	ns_plan_root(r->a, p);
	ns_plan_json(r, &j);
	line = sbx_json_end(&j, &len);
	s = line ? strndup(line, len) : NULL;
	sbx_json_free(&j);
	return s;
}

/* A run as main() starts it, before parsing. */
static void base_run(struct ns_run *r, struct ns_args *a, struct ns_plan *p)
{
	memset(a, 0, sizeof *a);
	memset(p, 0, sizeof *p);
	memset(r, 0, sizeof *r);
	r->a = a;
	r->p = p;
	a->status_fd = a->ready_fd = p->wsfd = p->grant_fd = p->broker_fd = -1;
	p->net = NET_NONE;
	p->uid = getuid();
	p->gid = getgid();
}

static void base(struct ns_run *r, struct ns_args *a, struct ns_plan *p, char **cmd,
		 char **env)
{
	memset(a, 0, sizeof *a);
	memset(p, 0, sizeof *p);
	memset(r, 0, sizeof *r);
	r->a = a;
	r->p = p;
	p->wsfd = -1;
	p->net = NET_NONE;
	a->cmd = cmd;
	p->env = env;
	p->uid = 1000;
	p->gid = 1001;
}

TEST(nsplan_every_writable_option_and_order)
{
	static char *cmd[] = { "make", "-j2", NULL };
	static char *env[] = { "PATH=/usr/bin", "HOME=/tmp/home", "A=\x1b[31m", NULL };
	struct deny_op d[] = { { DENY_PROTECT, ".env", 7, 70 }, { DENY_ANCESTOR, ".git", 7, 71 },
			       { DENY_PROTECT, ".git/hooks", 7, 72 } };
	struct ns_args args;
	struct ns_plan plan;
	struct ns_run r;
	char *s;

	base(&r, &args, &plan, cmd, env);
	plan.ws = 0;
	op(&plan, MNT_WORKSPACE, 0, "--workspace", "/w", "/w", 7, 2);
	op(&plan, MNT_RW, 0, "--rw", "/data", "/data", 7, 3);
	op(&plan, MNT_RW, 0, "--home", "/h", "/h", 7, 4);
	op(&plan, MNT_BIND, 0, "--bind", "/s", "/shared", 7, 5);
	op(&plan, MNT_BIND, 1, "--ro-bind-fd", "/t", "/tools", 7, 6);
	plan.ops[4].fd = 5;
	op(&plan, MNT_RO, 1, "--baseline", "/opt", "/opt", 8, 9);
	/* --tmp-in-workspace: listed first, whatever its place; one to make */
	op(&plan, MNT_SCRATCH, 0, "--tmp-in-workspace", "/w/.sbx-tmp/tmp", "/tmp", 7, 10);
	op(&plan, MNT_SCRATCH, 0, "--tmp-in-workspace", "/w/.sbx-tmp/shm", "/dev/shm", 0, 0);
	plan.ops[7].create = 1;
	args.tmp_in_ws = 1;
	plan.deny = (const char **)(const char *[]){ ".env", ".git/hooks/**" };
	plan.ndeny = 2;
	plan.dops = d;
	plan.ndops = 3;
	plan.landlock_abi = 6;
	args.timeout_ms = 1500;
	s = plan_of(&r, &plan);
	CHECK_STR(s,
		"{\"tool\":\"sbx-ns\",\"event\":\"plan\",\"argv\":[\"make\",\"-j2\"],\"cwd\":\"/w\","
		"\"env\":[\"PATH=/usr/bin\",\"HOME=/tmp/home\",\"A=\\u001b[31m\"],\"uid\":1000,\"gid\":1001,"
		"\"mounts\":["
		"{\"kind\":\"tmpfs\",\"destination\":\"/\",\"flags\":\"nosuid,nodev,mode=0755\"},"
		"{\"kind\":\"dir\",\"destination\":\"/proc\",\"mode\":\"0555\"},"
		"{\"kind\":\"dir\",\"destination\":\"/dev\",\"mode\":\"0755\"},"
		"{\"kind\":\"dir\",\"destination\":\"/tmp\",\"mode\":\"1777\"},"
		"{\"kind\":\"proc\",\"destination\":\"/proc\",\"flags\":\"nosuid,nodev,noexec\","
		"\"data\":[\"hidepid=invisible\",\"hidepid=2\",\"\"]},"
		"{\"kind\":\"tmpfs\",\"destination\":\"/dev\",\"flags\":\"nosuid,noexec,mode=0755\"},"
		"{\"kind\":\"device\",\"source\":\"/dev/null\",\"destination\":\"/dev/null\",\"flags\":\"bind\"},"
		"{\"kind\":\"device\",\"source\":\"/dev/zero\",\"destination\":\"/dev/zero\",\"flags\":\"bind\"},"
		"{\"kind\":\"device\",\"source\":\"/dev/full\",\"destination\":\"/dev/full\",\"flags\":\"bind\"},"
		"{\"kind\":\"device\",\"source\":\"/dev/random\",\"destination\":\"/dev/random\",\"flags\":\"bind\"},"
		"{\"kind\":\"device\",\"source\":\"/dev/urandom\",\"destination\":\"/dev/urandom\",\"flags\":\"bind\"},"
		"{\"kind\":\"device\",\"source\":\"/dev/tty\",\"destination\":\"/dev/tty\",\"flags\":\"bind\"},"
		"{\"kind\":\"dir\",\"destination\":\"/dev/pts\",\"mode\":\"0755\"},"
		"{\"kind\":\"dir\",\"destination\":\"/dev/shm\",\"mode\":\"1777\"},"
		"{\"kind\":\"devpts\",\"destination\":\"/dev/pts\",\"flags\":\"nosuid,noexec,newinstance,ptmxmode=0666,mode=620\"},"
		"{\"kind\":\"symlink\",\"source\":\"pts/ptmx\",\"destination\":\"/dev/ptmx\"},"
		"{\"kind\":\"symlink\",\"source\":\"/proc/self/fd\",\"destination\":\"/dev/fd\"},"
		"{\"kind\":\"symlink\",\"source\":\"/proc/self/fd/0\",\"destination\":\"/dev/stdin\"},"
		"{\"kind\":\"symlink\",\"source\":\"/proc/self/fd/1\",\"destination\":\"/dev/stdout\"},"
		"{\"kind\":\"symlink\",\"source\":\"/proc/self/fd/2\",\"destination\":\"/dev/stderr\"},"
		"{\"kind\":\"scratch\",\"option\":\"--tmp-in-workspace\",\"source\":\"/w/.sbx-tmp/tmp\",\"destination\":\"/tmp\",\"flags\":\"rw,nosuid,nodev\",\"dev\":7,\"ino\":10},"
		"{\"kind\":\"scratch\",\"option\":\"--tmp-in-workspace\",\"source\":\"/w/.sbx-tmp/shm\",\"destination\":\"/dev/shm\",\"flags\":\"rw,nosuid,nodev\",\"create\":true},"
		"{\"kind\":\"workspace\",\"option\":\"--workspace\",\"source\":\"/w\",\"destination\":\"/w\",\"flags\":\"rw,nosuid,nodev\",\"dev\":7,\"ino\":2},"
		"{\"kind\":\"rw\",\"option\":\"--rw\",\"source\":\"/data\",\"destination\":\"/data\",\"flags\":\"rw,nosuid,nodev\",\"dev\":7,\"ino\":3},"
		"{\"kind\":\"rw\",\"option\":\"--home\",\"source\":\"/h\",\"destination\":\"/h\",\"flags\":\"rw,nosuid,nodev\",\"dev\":7,\"ino\":4},"
		"{\"kind\":\"bind\",\"option\":\"--bind\",\"source\":\"/s\",\"destination\":\"/shared\",\"flags\":\"rw,nosuid,nodev\",\"dev\":7,\"ino\":5},"
		"{\"kind\":\"bind\",\"option\":\"--ro-bind-fd\",\"source\":\"/t\",\"destination\":\"/tools\",\"flags\":\"ro,nosuid,nodev\",\"fd\":5,\"dev\":7,\"ino\":6},"
		"{\"kind\":\"ro\",\"option\":\"--baseline\",\"source\":\"/opt\",\"destination\":\"/opt\",\"flags\":\"ro,nosuid,nodev\",\"dev\":8,\"ino\":9},"
		"{\"kind\":\"deny-write\",\"destination\":\"/w/.env\",\"op\":\"read-only\",\"flags\":\"bind,ro,nosuid,nodev\",\"dev\":7,\"ino\":70},"
		"{\"kind\":\"deny-write\",\"destination\":\"/w/.git\",\"op\":\"pin\",\"flags\":\"bind\",\"dev\":7,\"ino\":71},"
		"{\"kind\":\"deny-write\",\"destination\":\"/w/.git/hooks\",\"op\":\"read-only\",\"flags\":\"bind,ro,nosuid,nodev\",\"dev\":7,\"ino\":72},"
		"{\"kind\":\"home\",\"destination\":\"/tmp/home\",\"mode\":\"0700\",\"uid\":1000,\"gid\":1001},"
		"{\"kind\":\"remount\",\"destination\":\"/dev\",\"flags\":\"ro\"},"
		"{\"kind\":\"remount\",\"destination\":\"/\",\"flags\":\"ro\"}],"
		"\"deny_write\":{\"globs\":[\".env\",\".git/hooks/**\"],\"operations\":["
		"{\"op\":\"read-only\",\"path\":\"/w/.env\",\"dev\":7,\"ino\":70},"
		"{\"op\":\"pin\",\"path\":\"/w/.git\",\"dev\":7,\"ino\":71},"
		"{\"op\":\"read-only\",\"path\":\"/w/.git/hooks\",\"dev\":7,\"ino\":72}]},"
		"\"net\":{\"mode\":\"none\"},\"seccomp\":{\"filter\":\"offline\",\"denials\":\"notify\"},"
		"\"landlock\":{\"abi\":6,\"required\":false},\"mount_api\":\"classic\",\"timeout_ms\":1500,"
		"\"grant_checked\":false,\"policy\":false}\n");
	free(s);
	free(plan.ops);
}

TEST(nsplan_network_filters_and_the_whole_workspace)
{
	static char *cmd[] = { "curl", NULL };
	static char *env[] = { "HTTP_PROXY=http://127.0.0.1:3130", NULL };
	struct deny_op d[] = { { DENY_PROTECT, ".", 7, 2 } };
	static const struct { enum net_mode m; const char *net, *filter; } want[] = {
		{ NET_NONE, "{\"mode\":\"none\"}", "offline" },
		{ NET_LOOPBACK, "{\"mode\":\"loopback\"}", "open" },
		{ NET_BROKER, "{\"mode\":\"broker\",\"port\":3130,\"proxy\":\"http://127.0.0.1:3130\",\"broker\":\"/run/b.sock\"}", "broker" },
		{ NET_HOST, "{\"mode\":\"host (unrestricted)\"}", "host" },
	};
	struct ns_args args;
	struct ns_plan plan;
	struct ns_run r;
	char *s, exp[512];

	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		base(&r, &args, &plan, cmd, env);
		op(&plan, MNT_WORKSPACE, 0, "--workspace-fd", "/w", "/w", 7, 2);
		plan.ops[0].fd = 4;
		plan.dops = d;
		plan.ndops = 1;
		plan.net = want[i].m;
		plan.port = 3130;
		plan.broker_real = "/run/b.sock";
		args.quiet_denials = 1;
		args.require_landlock = 1;
		plan.grant_checked = 1;
		args.home = "/h";
		s = plan_of(&r, &plan);
		snprintf(exp, sizeof exp, "\"net\":%s,\"seccomp\":{\"filter\":\"%s\",\"denials\":\"errno\"},"
			 "\"landlock\":{\"abi\":0,\"required\":true}", want[i].net, want[i].filter);
		CHECK(s && strstr(s, exp));
		CHECK(s && strstr(s, "\"operations\":[{\"op\":\"read-only\",\"path\":\"/w\",\"dev\":7,\"ino\":2}]"));
		CHECK(s && strstr(s, "\"fd\":4,"));
		CHECK(s && strstr(s, "\"grant_checked\":true"));
		/* the sandbox's own /tmp and /dev/shm without --tmp-in-workspace */
		CHECK(s && strstr(s, "{\"kind\":\"tmpfs\",\"destination\":\"/tmp\""));
		/* --home: the command's HOME is that root, nothing is made */
		CHECK(s && !strstr(s, "\"kind\":\"home\""));
		CHECK(s && !strstr(s, "resolv.conf"));
		if (s && !strstr(s, exp))
			fprintf(stderr, "  %s\n  want %s\n", s, exp);
		free(s);
		free(plan.ops);
	}
	/* transparent: DNS by the broker, the ports it captures, its own filter */
	base(&r, &args, &plan, cmd, env);
	op(&plan, MNT_WORKSPACE, 0, "--workspace", "/w", "/w", 7, 2);
	plan.net = NET_BROKER;
	plan.transparent = 1;
	plan.port = 3128;
	plan.cap_ports[0] = 80;
	plan.cap_ports[1] = 443;
	plan.ncap = 2;
	s = plan_of(&r, &plan);
	CHECK(s && strstr(s, "\"net\":{\"mode\":\"broker, transparent\",\"port\":3128,"
			  "\"proxy\":\"http://127.0.0.1:3128\",\"capture_ports\":[80,443]},"
			  "\"seccomp\":{\"filter\":\"transparent\","));
	/* after the roots, before deny-write: the broker answers DNS */
	CHECK(s && strstr(s, "\"flags\":\"rw,nosuid,nodev\",\"dev\":7,\"ino\":2},"
			  "{\"kind\":\"resolv.conf\",\"destination\":\"/etc/resolv.conf\","
			  "\"flags\":\"ro,nosuid,nodev\"},{\"kind\":\"home\","));
	free(s);
	free(plan.ops);
}

/* A directory made for one test, canonical (no symlink on the way). */
static char *dir_in(const char *base, const char *name)
{
	char *p = NULL;

	if (asprintf(&p, "%s/%s", base, name) < 0 || mkdir(p, 0700) < 0)
		return NULL;
	return p;
}

static const char *fd_arg(const char *path, char *buf, size_t sz)
{
	snprintf(buf, sz, "%d", open(path, O_PATH | O_DIRECTORY | O_CLOEXEC));
	return buf;
}

/* Every option that makes a writable mount, made by the functions argv
 * and the policy use: the iterator every writable-root check runs on
 * returns each one, in order, and nothing read-only. */
TEST(nsplan_every_writable_option_is_a_writable_entry)
{
	static const char *const want[] = {
		"--workspace", "--rw", "--rw-fd", "--home", "--bind", "--bind-fd", "--baseline",
		"--policy-fd", "--tmp-in-workspace", "--tmp-in-workspace", NULL,
	};
	char tmpl[] = "/var/tmp/sbx-unit-nsplan.XXXXXX", fd1[16], fd2[16], fd3[16], fd4[16];
	const char *base = mkdtemp(tmpl);
	char *d[12];
	const struct mount_op *op;
	struct ns_args args;
	struct ns_plan plan;
	struct ns_run r;
	size_t k = 0;

	CHECK(base != NULL);
	if (!base)
		return;
	for (int i = 0; i < 12; i++) {
		char name[8];
		snprintf(name, sizeof name, "d%d", i);
		d[i] = dir_in(base, name);
		CHECK(d[i] != NULL);
		if (!d[i])
			return;
	}
	base_run(&r, &args, &plan);
	ns_add_path(&plan, MNT_WORKSPACE, 0, "--workspace", d[0]);
	ns_add_path(&plan, MNT_RW, 0, "--rw", d[1]);
	ns_add_fd(&plan, MNT_RW, 0, "--rw-fd", fd_arg(d[2], fd1, sizeof fd1));
	ns_add_path(&plan, MNT_RW, 0, "--home", d[3]);
	ns_add_bind(&plan, 0, 0, "--bind", d[4], "/shared");
	ns_add_bind(&plan, 0, 1, "--bind-fd", fd_arg(d[5], fd2, sizeof fd2), "/shared2");
	/* a policy's writable roots (policy.c's add_missing) */
	ns_add_path(&plan, MNT_RW, 0, "--baseline", d[6]);
	ns_add_path(&plan, MNT_RW, 0, "--policy-fd", d[7]);
	/* and what is never writable */
	ns_add_path(&plan, MNT_RO, 1, "--ro", d[8]);
	ns_add_fd(&plan, MNT_RO, 1, "--ro-fd", fd_arg(d[9], fd3, sizeof fd3));
	ns_add_bind(&plan, 1, 0, "--ro-bind", d[10], "/tools");
	ns_add_bind(&plan, 1, 1, "--ro-bind-fd", fd_arg(d[11], fd4, sizeof fd4), "/tools2");
	ns_add_runtime(r.a, &plan); /* the default set, read-only, and its symlinks */
	/* --tmp-in-workspace as a dry run plans it: to be made */
	args.tmp_in_ws = 1;
	args.dry_run = 1;
	ns_plan_scratch(r.a, &plan);
	for (size_t it = 0; (op = ns_next_writable(&plan, &it)); k++) {
		CHECK(want[k] != NULL);
		if (!want[k])
			break;
		CHECK_STR(op->opt, want[k]);
		CHECK(!op->ro && op->kind != MNT_SYMLINK);
	}
	CHECK(want[k] == NULL);
	/* --workspace-fd */
	base_run(&r, &args, &plan);
	ns_add_fd(&plan, MNT_WORKSPACE, 0, "--workspace-fd", fd_arg(d[0], fd1, sizeof fd1));
	ns_add_path(&plan, MNT_RO, 1, "--ro", d[8]);
	k = 0;
	for (size_t it = 0; (op = ns_next_writable(&plan, &it)); k++)
		CHECK_STR(op->opt, "--workspace-fd");
	CHECK(k == 1);
	for (int i = 11; i >= 0; i--)
		rmdir(d[i]);
	rmdir(base);
}

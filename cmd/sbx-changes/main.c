/* sbx-changes: one job, the change set's: list and diff what a sandboxed
 * command wrote into DIR (sbx-ns --changes DIR), apply the reviewed bytes
 * into the workspace the sandbox never wrote, or discard DIR. */
#include "changes.h"

#include "die.h"
#include "exitcodes.h"
#include "json.h"
#include "opts.h"
#include "parse.h"
#include "policy.h"
#include "quote.h"
#include "sys.h"

#include <errno.h>
#include <stdnoreturn.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: sbx-changes list --workspace WS [--deny-write GLOB]... DIR\n"
	"       sbx-changes diff --workspace WS [--deny-write GLOB]... DIR\n"
	"       sbx-changes apply --workspace WS [OPTION]... DIR\n"
	"       sbx-changes discard DIR\n"
	"Review, apply or discard the change set DIR that sbx-ns --changes left.\n"
	"\n"
	"  --workspace WS         the workspace DIR is a change set of; absolute\n"
	"  --deny-write GLOB      a protected path, as sbx-ns's; replaces the defaults\n"
	"  --skip-refused         apply: apply what is not refused, list the rest\n";

enum { O_WORKSPACE = 1, O_DENY, O_SKIP, O_HELP };

#define RESOLVE (RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

static char qbuf[3][4 * 8192 + 16];

/* A name, whole (up to 8192 bytes), by the one rule (sbx_quote), between
 * single quotes; bare (a diff's header, as git's) when nothing in it is
 * escaped and it holds no space. */
static const char *quote(char *b, const char *s, int bare)
{
	size_t n = strlen(s);

	sbx_quote(b + 1, sizeof qbuf[0] - 2, s, n, 8192, SBX_QUOTE_NAME | SBX_QUOTE_UTF8);
	if (bare && !strcmp(b + 1, s) && !strchr(s, ' '))
		return b + 1;
	b[0] = '\'';
	strcat(b, "'");
	return b;
}

/* A directory named on the command line that could not be opened: a
 * symlink on its path is a refusal with the fix, anything else the
 * system's error. errno is open's. */
void cs_die_open(const char *what, const char *path)
{
	if (errno == ELOOP)
		sbx_die(SBX_EXIT_POLICY, "unable to open %s %s: a symlink on its path (name the real directory)",
			what, cs_q(path));
	sbx_die_errno(SBX_EXIT_SYS, "unable to open %s %s", what, cs_q(path));
}

const char *cs_q(const char *s)
{
	return quote(qbuf[0], s, 0);
}

const char *cs_q2(const char *s)
{
	return quote(qbuf[1], s, 0);
}

/* DIR/name, quoted. */
const char *cs_qf(const char *dir, const char *name)
{
	char *p = sbx_needf("%s/%s", dir, name);
	const char *r = cs_q(p);

	free(p);
	return r;
}

const char *cs_q3(const char *s)
{
	return quote(qbuf[2], s, 0);
}

const char *cs_qd(const char *s, int which)
{
	return quote(qbuf[which ? 1 : 2], s, 1);
}

static int open_abs(const char *p, uint64_t flags)
{
	return sbx_openat2(AT_FDCWD, p, flags | O_CLOEXEC, RESOLVE);
}

/* A relative path of plain names: no empty, "." or ".." part. */
static int plain(const char *p)
{
	for (;;) {
		size_t l = strcspn(p, "/");
		if (!l || (l == 1 && p[0] == '.') || (l == 2 && p[0] == '.' && p[1] == '.'))
			return 0;
		if (!p[l])
			return 1;
		p += l + 1;
	}
}

static int cmp_base(const void *a, const void *b)
{
	return strcmp(((const struct base *)a)->path, ((const struct base *)b)->path);
}

static const char *const base_types[] = { "none", "file", "dir", "symlink", "other", "changed", NULL };

static void read_base(struct cs *c)
{
	int fd = openat(c->dirfd, "base.jsonl", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	FILE *f;
	char *line = NULL;
	size_t cap = 0, lineno = 0, n = 0;
	ssize_t len;

	if (fd < 0) {
		if (errno == ENOENT)
			return;
		sbx_die_errno(SBX_EXIT_POLICY, "unable to open %s", cs_qf(c->dir, "base.jsonl"));
	}
	f = sbx_need(fdopen(fd, "r"));
	while ((len = getline(&line, &cap, f)) > 0) {
		json_error_t je;
		json_t *o = json_loadb(line, len, 0, &je), *v;
		struct base b = { 0 };
		const char *t;
		int i;

		lineno++;
		if (!o || !json_is_object(o) || !json_is_string(v = json_object_get(o, "path")))
			goto bad;
		b.path = sbx_need(strdup(json_string_value(v)));
		if (!plain(b.path) || strlen(b.path) != json_string_length(v))
			goto bad;
		if (!json_is_string(v = json_object_get(o, "type")))
			goto bad;
		t = json_string_value(v);
		for (i = 0; base_types[i] && strcmp(base_types[i], t); i++)
			;
		if (!base_types[i])
			goto bad;
		b.type = i;
		if (b.type != B_NONE && b.type != B_CHANGED) {
			json_t *d = json_object_get(o, "dev"), *in = json_object_get(o, "ino"),
			       *s = json_object_get(o, "size"), *m = json_object_get(o, "mtime_ns"),
			       *ct = json_object_get(o, "ctime_ns");
			if (!json_is_integer(d) || !json_is_integer(in) || !json_is_integer(s) ||
			    !json_is_integer(m) || !json_is_integer(ct))
				goto bad;
			b.dev = json_integer_value(d);
			b.ino = json_integer_value(in);
			b.size = json_integer_value(s);
			b.mtime_ns = json_integer_value(m);
			b.ctime_ns = json_integer_value(ct);
		}
		json_decref(o);
		if (n == c->nbase) {
			n = n ? 2 * n : 256;
			c->base = sbx_need(realloc(c->base, n * sizeof *c->base));
		}
		c->base[c->nbase++] = b;
		continue;
bad:
		sbx_die(SBX_EXIT_POLICY, "unable to read %s: line %zu is not a base line; "
			"to fix: discard the change set, it was not written by sbx-ns", cs_qf(c->dir, "base.jsonl"), lineno);
	}
	free(line);
	fclose(f);
	qsort(c->base, c->nbase, sizeof *c->base, cmp_base);
}

void cs_open(struct cs *c, const char *dir, const char *ws, int excl)
{
	char buf[8192];
	struct stat st;
	json_t *o, *p, *d, *i;
	json_error_t je;
	long n;
	int fd;

	c->dir = dir;
	c->ws = ws;
	c->dirfd = open_abs(dir, O_RDONLY | O_DIRECTORY);
	if (c->dirfd < 0)
		cs_die_open("change set", dir);
	if (fstat(c->dirfd, &st))
		sbx_die_errno(SBX_EXIT_SYS, "unable to stat change set %s", cs_q(dir));
	/* another user's change set is theirs to apply (root may apply any) */
	if ((st.st_uid != getuid() && getuid() != 0) || (st.st_mode & 022))
		sbx_die(SBX_EXIT_POLICY, "change set %s is %s; to fix: use a change set of your own, "
			"mode 0700", cs_q(dir), st.st_mode & 022 ? "writable by others" : "owned by another user");
	fd = openat(c->dirfd, "changeset", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode))
		sbx_die(SBX_EXIT_POLICY, "%s is not a change set (no changeset file); "
			"to fix: name a directory sbx-ns --changes wrote", cs_q(dir));
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	o = n > 0 ? json_loadb(buf, n, 0, &je) : NULL;
	if (!o || !json_is_string(p = json_object_get(o, "workspace")) ||
	    !json_is_integer(d = json_object_get(o, "dev")) || !json_is_integer(i = json_object_get(o, "ino")) ||
	    json_integer_value(json_object_get(o, "version")) != 1)
		sbx_die(SBX_EXIT_POLICY, "%s is not a change set's identity line; "
			"to fix: discard the change set", cs_qf(dir, "changeset"));
	c->lockfd = openat(c->dirfd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (c->lockfd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open %s", cs_qf(dir, "lock"));
	if (flock(c->lockfd, (excl ? LOCK_EX : LOCK_SH) | LOCK_NB)) {
		if (errno == EWOULDBLOCK)
			sbx_die(SBX_EXIT_POLICY, "%s is in use by a running sandbox; "
				"to fix: wait for it to end", cs_q(dir));
		sbx_die_errno(SBX_EXIT_SYS, "unable to lock %s", cs_qf(dir, "lock"));
	}
	if (ws) {
		c->wsfd = open_abs(ws, O_RDONLY | O_DIRECTORY);
		if (c->wsfd < 0)
			cs_die_open("workspace", ws);
		if (fstat(c->wsfd, &st))
			sbx_die_errno(SBX_EXIT_SYS, "unable to stat workspace %s", cs_q(ws));
		if (strcmp(json_string_value(p), ws) || (uint64_t)json_integer_value(d) != st.st_dev ||
		    (uint64_t)json_integer_value(i) != st.st_ino)
			sbx_die(SBX_EXIT_POLICY, "%s is a change set of workspace %s, not of %s; "
				"to fix: name its own workspace", cs_q(dir), cs_q2(json_string_value(p)), cs_q3(ws));
		c->upfd = openat(c->dirfd, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (c->upfd < 0)
			sbx_die_errno(SBX_EXIT_POLICY, "unable to open %s", cs_qf(dir, "upper"));
		read_base(c);
	}
	json_decref(o);
}

static void list(struct cs *c)
{
	static const char *const bt[] = { "none", "file", "dir", "symlink", "other", "changed" };

	for (size_t k = 0; k < c->n; k++) {
		const struct change *e = &c->v[k];
		struct sbx_json j;
		char mode[8];

		sbx_json_begin(&j, NULL, NULL);
		sbx_json_str(&j, "path", e->path);
		sbx_json_str(&j, "change", cs_kind(e->kind));
		if (e->mode) {
			snprintf(mode, sizeof mode, "%04o", (unsigned)(e->mode & 07777));
			sbx_json_str(&j, "type", S_ISDIR(e->mode) ? "dir" : S_ISLNK(e->mode) ? "symlink" :
				     S_ISREG(e->mode) ? "file" : "other");
			sbx_json_str(&j, "mode", mode);
			sbx_json_uint(&j, "size", e->size);
		}
		if (e->sha[0])
			sbx_json_str(&j, "sha256", e->sha);
		if (e->target)
			sbx_json_str(&j, "target", e->target);
		if (e->base && !e->opaque_child) {
			sbx_json_open_obj(&j, "base");
			sbx_json_str(&j, "type", bt[e->base->type]);
			if (e->base->type != B_NONE && e->base->type != B_CHANGED) {
				sbx_json_uint(&j, "dev", e->base->dev);
				sbx_json_uint(&j, "ino", e->base->ino);
				sbx_json_uint(&j, "size", e->base->size);
				sbx_json_int(&j, "mtime_ns", e->base->mtime_ns);
				sbx_json_int(&j, "ctime_ns", e->base->ctime_ns);
			}
			sbx_json_close_obj(&j);
		} else if (!e->base) {
			sbx_json_null(&j, "base");
		}
		if (e->done)
			sbx_json_bool(&j, "applied", 1);
		if (e->refused)
			sbx_json_str(&j, "refused", e->refused);
		if (e->prot) {
			sbx_json_str(&j, "protected", e->prot);
			if (e->prot_after)
				sbx_json_bool(&j, "after_apply", 1);
		}
		if (sbx_json_write(&j, 1))
			sbx_die_errno(SBX_EXIT_SYS, "unable to write the list to stdout");
	}
}

static noreturn void usage_ok(void)
{
	sbx_opt_help(usage_text);
}

int main(int argc, char **argv)
{
	static const struct sbx_opt tab[] = {
		{ "workspace", SBX_ARG, SBX_ONCE, O_WORKSPACE },
		{ "deny-write", SBX_ARG, SBX_MANY, O_DENY },
		{ "skip-refused", SBX_NOARG, SBX_ONCE, O_SKIP },
		{ "help", SBX_NOARG, SBX_ONCE, O_HELP },
		{ 0, 0, 0, 0 }
	};
	const char *verb = argc > 1 ? argv[1] : NULL, *ws = NULL, *arg, *dir, *why;
	struct sbx_optstate st;
	struct cs c = { .dirfd = -1, .wsfd = -1, .upfd = -1, .lockfd = -1 };
	int id, skip = 0, v;

	sbx_setprog(TOOL);
	sbx_opt_version(argc, argv);
	if (!verb)
		sbx_die_usage("missing subcommand (list, diff, apply or discard)");
	if (verb[0] == '-') {
		static const struct sbx_opt htab[] = { { "help", SBX_NOARG, SBX_ONCE, O_HELP }, { 0, 0, 0, 0 } };
		sbx_opt_init(&st, 1);
		if (sbx_opt_next(&st, htab, argc, argv, &arg) == O_HELP)
			usage_ok();
		sbx_die_usage("missing subcommand (list, diff, apply or discard)");
	}
	v = !strcmp(verb, "list") ? 'l' : !strcmp(verb, "diff") ? 'd' : !strcmp(verb, "apply") ? 'a' :
	    !strcmp(verb, "discard") ? 'x' : 0;
	if (!v)
		sbx_die_usage("unknown subcommand '%s' (list, diff, apply or discard)", verb);
	sbx_opt_init(&st, 2);
	while ((id = sbx_opt_next(&st, tab, argc, argv, &arg))) {
		switch (id) {
		case O_HELP:
			usage_ok();
		case O_WORKSPACE:
			if (v == 'x')
				sbx_die_usage("discard: --workspace is not an option of discard");
			ws = sbx_opt_path("--workspace", arg);
			break;
		case O_DENY:
			if (v == 'x')
				sbx_die_usage("discard: --deny-write is not an option of discard");
			arg = sbx_path_squash(arg);
			for (const char *p = arg; *p; p++)
				if ((unsigned char)*p < 0x20 || *p == 0x7f)
					sbx_die_usage("--deny-write: invalid glob %s: control character", cs_q(arg));
			if ((why = sbx_policy_glob_invalid(arg)))
				sbx_die_usage("--deny-write: invalid glob %s: %s", cs_q(arg), why);
			c.globs = sbx_need(realloc(c.globs, (c.nglobs + 1) * sizeof *c.globs));
			c.globs[c.nglobs++] = arg;
			break;
		case O_SKIP:
			if (v != 'a')
				sbx_die_usage("%s: --skip-refused is an option of apply only", verb);
			skip = 1;
			break;
		}
	}
	if (st.ind >= argc)
		sbx_die_usage("%s: missing the change set DIR", verb);
	if (st.ind + 1 < argc)
		sbx_die_usage("%s: one change set DIR only, not also '%s'", verb, argv[st.ind + 1]);
	dir = sbx_opt_path("DIR", argv[st.ind]);
	if (!plain(dir + 1) && strcmp(dir, "/"))
		sbx_die_usage("DIR: invalid path %s: '.' or '..' component", cs_q(dir));
	if (ws && !plain(ws + 1) && strcmp(ws, "/"))
		sbx_die_usage("--workspace: invalid path %s: '.' or '..' component", cs_q(ws));
	if (v == 'x')
		return cs_discard(dir);
	if (!ws)
		sbx_die_usage("%s: missing --workspace WS", verb);
	if (!strcmp(ws, "/") || !strcmp(dir, "/"))
		sbx_die_usage("%s: the whole file system is neither a workspace nor a change set", verb);
	cs_open(&c, dir, ws, v == 'a');
	c.lazy_sha = v == 'a';
	cs_scan(&c);
	cs_check(&c);
	if (v == 'l') {
		list(&c);
		return 0;
	}
	if (v == 'd')
		return cs_diff(&c);
	return cs_apply(&c, skip);
}

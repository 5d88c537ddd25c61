/* Diff: the change set for a person, unified like `git diff --no-index`
 * (three lines of context), names quoted by the one rule (sbx_quote), a
 * binary file (a NUL in its first 8000 bytes, git's test) named, not
 * shown. A text is what a terminal shows, never what it acts on: a file
 * (or a link's target) with a byte the rule escapes is shown escaped
 * whole, its backslashes too, under a line that says so; one without is
 * shown as it is, so a literal "\x1b" in it is the text it reads as. */
#include "changes.h"

#include "die.h"
#include "exitcodes.h"
#include "quote.h"
#include "walk.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CTX 3
#define MAX_D 4096
/* what a text keeps: tab, newline, printable UTF-8; escaped, the backslash too */
#define TEXT (SBX_QUOTE_TEXT | SBX_QUOTE_LINES)
#define ESCAPED (TEXT | SBX_QUOTE_BACKSLASH)

struct text {
	char *buf;
	size_t len, n;
	const char **line;
	size_t *llen;
};

static int load(int dirfd, const char *path, struct text *t)
{
	int fd = cs_open_below(dirfd, path, O_RDONLY | O_NONBLOCK);
	struct stat st;
	size_t cap = 0;

	memset(t, 0, sizeof *t);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	for (;;) {
		ssize_t n;
		if (t->len == cap) {
			cap = cap ? 2 * cap : 65536;
			t->buf = sbx_need(realloc(t->buf, cap));
		}
		n = read(fd, t->buf + t->len, cap - t->len);
		if (n < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to read %s", cs_q(path));
		if (!n)
			break;
		t->len += n;
	}
	close(fd);
	return 1;
}

static int binary(const struct text *t)
{
	return memchr(t->buf, '\0', t->len < 8000 ? t->len : 8000) != NULL;
}

static void split(struct text *t)
{
	size_t cap = 0;

	for (size_t i = 0; i < t->len; ) {
		const char *e = memchr(t->buf + i, '\n', t->len - i);
		size_t l = e ? (size_t)(e - (t->buf + i)) + 1 : t->len - i;
		if (t->n == cap) {
			cap = cap ? 2 * cap : 256;
			t->line = sbx_need(realloc(t->line, cap * sizeof *t->line));
			t->llen = sbx_need(realloc(t->llen, cap * sizeof *t->llen));
		}
		t->line[t->n] = t->buf + i;
		t->llen[t->n++] = l;
		i += l;
	}
}

static int eq(const struct text *a, size_t i, const struct text *b, size_t j)
{
	return a->llen[i] == b->llen[j] && !memcmp(a->line[i], b->line[j], a->llen[i]);
}

/* ops for a's lines [a0, a0+n) against b's [b0, b0+m) into op, their
 * count returned: Myers' greedy walk, each step d's frontier (its 2d+1
 * diagonals) kept to trace the path back, so up to MAX_D steps hold
 * 8 * MAX_D^2 bytes at most, however long the files; farther apart, all of
 * a's lines out and all of b's in. */
static size_t walk(const struct text *a, long a0, long n, const struct text *b, long b0, long m, char *op)
{
	long max = n + m, lim = max < MAX_D ? max : MAX_D, off = lim + 1, d, k, x, y;
	long **trace, *v;
	size_t o = 0;

	if (!n || !m)
		goto apart;
	trace = sbx_need(calloc(lim + 1, sizeof *trace));
	v = sbx_need(calloc(2 * lim + 3, sizeof *v));
	for (d = 0; d <= lim; d++) {
		for (k = -d; k <= d; k += 2) {
			x = (k == -d || (k != d && v[off + k - 1] < v[off + k + 1])) ? v[off + k + 1] : v[off + k - 1] + 1;
			y = x - k;
			while (x < n && y < m && eq(a, a0 + x, b, b0 + y))
				x++, y++;
			v[off + k] = x;
			if (x >= n && y >= m)
				goto found;
		}
		trace[d] = sbx_need(malloc((2 * d + 1) * sizeof *v));
		memcpy(trace[d], v + off - d, (2 * d + 1) * sizeof *v);
	}
	for (d = 0; d <= lim; d++)
		free(trace[d]);
	free(trace);
	free(v);
apart:
	memset(op, '-', n);
	memset(op + n, '+', m);
	return n + m;
found:
	x = n;
	y = m;
	for (; d > 0; d--) {
		long *pv = trace[d - 1] + (d - 1), pk, px, py; /* pv[k], k in [1-d, d-1] */
		k = x - y;
		pk = (k == -d || (k != d && pv[k - 1] < pv[k + 1])) ? k + 1 : k - 1;
		px = pv[pk];
		py = px - pk;
		while (x > px && y > py)
			op[o++] = ' ', x--, y--;
		op[o++] = x == px ? '+' : '-';
		x = px;
		y = py;
	}
	while (x > 0 && y > 0)
		op[o++] = ' ', x--, y--;
	for (size_t i = 0; i < o / 2; i++) {
		char t = op[i];
		op[i] = op[o - 1 - i];
		op[o - 1 - i] = t;
	}
	for (d = 0; d <= lim; d++)
		free(trace[d]);
	free(trace);
	free(v);
	return o;
}

/* op[k]: ' ' kept, '-' from a, '+' from b, in order. The lines both ends
 * share are kept without a search (a new or a deleted file has no
 * search at all); the walk is between them. */
static char *script(const struct text *a, const struct text *b, size_t *nop)
{
	long n = a->n, m = b->n, pre = 0, suf = 0;
	char *op = sbx_need(malloc(n + m + 1));
	size_t o;

	while (pre < n && pre < m && eq(a, pre, b, pre))
		pre++;
	while (suf < n - pre && suf < m - pre && eq(a, n - 1 - suf, b, m - 1 - suf))
		suf++;
	memset(op, ' ', pre);
	o = pre + walk(a, pre, n - pre - suf, b, pre, m - pre - suf, op + pre);
	memset(op + o, ' ', suf);
	*nop = o + suf;
	return op;
}

static void line(char c, const char *s, size_t l, int esc)
{
	putchar(c);
	if (esc)
		sbx_quote_put(stdout, s, l, ESCAPED);
	else
		fwrite(s, 1, l, stdout);
	if (!l || s[l - 1] != '\n')
		fputs("\n\\ No newline at end of file\n", stdout);
}

static void hunks(const struct text *a, const struct text *b, int esc)
{
	size_t no, i = 0;
	char *op = script(a, b, &no);

	while (i < no) {
		size_t s, e, ai = 0, bi = 0, an = 0, bn = 0, last;
		while (i < no && op[i] == ' ')
			i++;
		if (i == no)
			break;
		s = i >= CTX ? i - CTX : 0;
		/* the hunk ends CTX lines after a change not followed by another within 2*CTX */
		last = i;
		for (e = i; e < no; e++) {
			if (op[e] != ' ')
				last = e;
			else if (e - last > 2 * CTX)
				break;
		}
		e = last + 1 + CTX < no ? last + 1 + CTX : no;
		for (size_t k = 0; k < s; k++) {
			ai += op[k] != '+';
			bi += op[k] != '-';
		}
		for (size_t k = s; k < e; k++) {
			an += op[k] != '+';
			bi += 0;
			bn += op[k] != '-';
		}
		/* a range of one line is its number alone, as git writes it */
		printf("@@ -%zu", an ? ai + 1 : ai);
		if (an != 1)
			printf(",%zu", an);
		printf(" +%zu", bn ? bi + 1 : bi);
		if (bn != 1)
			printf(",%zu", bn);
		printf(" @@\n");
		for (size_t k = s, x = ai, y = bi; k < e; k++) {
			if (op[k] == ' ')
				line(' ', a->line[x], a->llen[x], esc), x++, y++;
			else if (op[k] == '-')
				line('-', a->line[x], a->llen[x], esc), x++;
			else
				line('+', b->line[y], b->llen[y], esc), y++;
		}
		i = e;
	}
	free(op);
}

static void text_free(struct text *t)
{
	free(t->buf);
	free(t->line);
	free(t->llen);
}

static unsigned gitmode(mode_t m)
{
	return S_ISLNK(m) ? 0120000 : S_ISDIR(m) ? 040000 : (m & 0100) ? 0100755 : 0100644;
}

static void one(struct cs *c, const struct change *e)
{
	struct text a = { 0 }, b = { 0 };
	struct stat ls;
	const char *name;
	/* the workspace's side, looked up as apply does: no link followed */
	int pfd = cs_ws_parent(c, e->path, &name);
	int have_old = pfd >= 0 && !fstatat(pfd, name, &ls, AT_SYMLINK_NOFOLLOW) && !S_ISDIR(ls.st_mode);
	int have_new = e->kind != K_DELETED && !S_ISDIR(e->mode);
	char qa[4 * 4096 + 32], qb[4 * 4096 + 32];

	snprintf(qa, sizeof qa, "a/%s", e->path);
	snprintf(qb, sizeof qb, "b/%s", e->path);
	printf("diff --git %s %s\n", cs_qd(qa, 0), cs_qd(qb, 1));
	if (S_ISDIR(e->mode) || (e->kind == K_DELETED && !have_old)) {
		printf("%s directory%s\n", e->kind == K_DELETED ? "deleted" : e->kind == K_ADDED ? "new" : "changed",
		       e->kind == K_MODE ? " mode" : "");
		goto out;
	}
	if (e->kind == K_MODE) {
		printf("old mode %o\nnew mode %o\n", gitmode(ls.st_mode), gitmode(e->mode));
		goto out;
	}
	if (!have_old)
		printf("new file mode %o\n", gitmode(e->mode));
	else if (!have_new)
		printf("deleted file mode %o\n", gitmode(ls.st_mode));
	else if (gitmode(ls.st_mode) != gitmode(e->mode))
		printf("old mode %o\nnew mode %o\n", gitmode(ls.st_mode), gitmode(e->mode));
	if (have_old) {
		if (S_ISLNK(ls.st_mode)) {
			char t[4096];
			ssize_t n = readlinkat(pfd, name, t, sizeof t);
			a.buf = sbx_need(malloc(n > 0 ? n : 1));
			memcpy(a.buf, t, n > 0 ? n : 0);
			a.len = n > 0 ? n : 0;
		} else {
			load(pfd, name, &a);
		}
	}
	if (have_new) {
		if (e->target) {
			b.buf = sbx_need(strdup(e->target));
			b.len = strlen(e->target);
		} else {
			load(c->upfd, e->path, &b);
		}
	}
	if ((a.buf && binary(&a)) || (b.buf && binary(&b))) {
		printf("Binary files %s and %s differ\n", have_old ? cs_qd(qa, 0) : "/dev/null",
		       have_new ? cs_qd(qb, 1) : "/dev/null");
	} else {
		/* both sides by one form, so that a kept line reads the same */
		int esc = sbx_quote_needed(a.buf, a.len, TEXT) || sbx_quote_needed(b.buf, b.len, TEXT);
		if (esc)
			printf("escaped text: controls, invalid UTF-8 and backslashes as \\xNN\n");
		printf("--- %s\n+++ %s\n", have_old ? cs_qd(qa, 0) : "/dev/null", have_new ? cs_qd(qb, 1) : "/dev/null");
		split(&a);
		split(&b);
		hunks(&a, &b, esc);
	}
	text_free(&a);
	text_free(&b);
out:
	if (pfd >= 0)
		close(pfd);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A deleted directory of the workspace: each file in it, deleted, as git
 * shows it (git has no directories), in name order, no link followed. */
static void deleted_tree(struct cs *c, const char *path)
{
	int fd = cs_open_below(c->wsfd, path, O_RDONLY | O_DIRECTORY);
	char *buf, **v = NULL;
	size_t len = 0, pos = 0, n = 0, cap = 0;
	const struct sbx_dirent64 *d;

	if (fd < 0)
		return;
	buf = sbx_need(malloc(SBX_DIRBUF));
	while ((d = sbx_dirent_next(fd, buf, &len, &pos))) {
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			v = sbx_need(realloc(v, cap * sizeof *v));
		}
		v[n++] = sbx_needf("%s/%s", path, d->d_name);
	}
	free(buf);
	close(fd);
	if (n)
		qsort(v, n, sizeof *v, cmp_str);
	for (size_t i = 0; i < n; i++) {
		struct change e = { .path = v[i], .kind = K_DELETED };
		struct stat st;
		const char *name;
		int pfd = cs_ws_parent(c, v[i], &name);
		int dir = pfd >= 0 && !fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode);
		if (pfd >= 0)
			close(pfd);
		if (dir)
			deleted_tree(c, v[i]);
		else
			one(c, &e);
		free(v[i]);
	}
	free(v);
}

int cs_diff(struct cs *c)
{
	for (size_t i = 0; i < c->n; i++) {
		const struct change *e = &c->v[i];
		const char *name;
		struct stat st;
		int pfd = e->kind == K_DELETED ? cs_ws_parent(c, e->path, &name) : -1;
		int dir = pfd >= 0 && !fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode);
		if (pfd >= 0)
			close(pfd);
		if (dir)
			deleted_tree(c, e->path);
		else
			one(c, e);
	}
	if (fflush(stdout) || ferror(stdout))
		sbx_die_errno(SBX_EXIT_SYS, "unable to write the diff to stdout");
	return 0;
}

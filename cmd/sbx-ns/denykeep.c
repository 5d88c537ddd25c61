/* Deny-write's kept tree: the end walk's directories (denytree.c) are
 * kept in the caller's record directory (denyend.c: the command can
 * neither see nor forge it), so that the next run's start walk reads again
 * only what changed since (the same ctime rule). A file that does not parse, is of another workspace (key: its
 * device, inode and birth time, and the deny-write list) or too big is
 * not used: the walk then reads everything. */
#include "ns.h"

#include "die.h"
#include "procstat.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TREE_MAGIC "sbx-ns deny-write tree 1"
#define TREE_MAX (64U << 20)

static void hexs(FILE *f, const char *s)
{
	if (!*s)
		fputc('-', f);
	for (; *s; s++)
		fprintf(f, "%02x", (unsigned char)*s);
}

void ns_deny_tree_save(int dirfd, const char *name, const char *key, const struct deny_tree *t)
{
	char tmp[160], proc[40];
	struct sbx_proc_stat ps;
	int fd = openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	FILE *f;

	if (t->overflow) {
		if (fd >= 0)
			close(fd);
		return;
	}
	if (fd < 0)
		return; /* only a cost: the next run reads everything */
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return;
	}
	fprintf(f, "%s\n%s\nread %lld\n", TREE_MAGIC, key, (long long)t->read_ns);
	for (size_t i = 0; i < t->n; i++) {
		const struct deny_dir *d = &t->v[i];
		fprintf(f, "d %u %u %llx %llx %lld ", d->depth, d->flags, (unsigned long long)d->dev,
			(unsigned long long)d->ino, (long long)d->ctime);
		hexs(f, d->rel);
		fputc('\n', f);
	}
	fputs("end\n", f);
	/* Named NAME.PID-START while it is put in place: a name a killed
	 * writer leaves is known for its own (denyend.c removes it). */
	if (fflush(f) == 0 && sbx_proc_stat("self", &ps) == 0) {
		snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
		snprintf(tmp, sizeof tmp, "%s.%ld-%llx", name, (long)getpid(), ps.start);
		if (linkat(AT_FDCWD, proc, dirfd, tmp, AT_SYMLINK_FOLLOW) == 0 &&
		    renameat(dirfd, tmp, dirfd, name) < 0)
			unlinkat(dirfd, tmp, 0);
	}
	fclose(f);
}

static int nibble(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int unhexs(const char *s, char *out, size_t cap)
{
	size_t n = 0;

	if (!strcmp(s, "-")) {
		out[0] = '\0';
		return 0;
	}
	for (; s[0] && s[1]; s += 2) {
		int hi = nibble(s[0]), lo = nibble(s[1]);
		if (hi < 0 || lo < 0 || n + 1 >= cap)
			return -1;
		out[n++] = (char)(hi << 4 | lo);
	}
	out[n] = '\0';
	return *s || !n || memchr(out, '\0', n) ? -1 : 0;
}

/* rel is a direct subdirectory of dir (both relative to the workspace). */
static int child_of(const char *dir, const char *rel)
{
	size_t n = strlen(dir);

	if (!n)
		return *rel && !strchr(rel, '/');
	return !strncmp(rel, dir, n) && rel[n] == '/' && rel[n + 1] && !strchr(rel + n + 1, '/');
}

int ns_deny_tree_load(int dirfd, const char *name, const char *key, struct deny_tree *t)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	char *buf = NULL, *line, *save = NULL;
	size_t klen = strlen(key);
	int ok = 0, done = 0;
	struct stat st;
	long long rd;

	memset(t, 0, sizeof *t);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && (size_t)st.st_size < TREE_MAX &&
	    st.st_uid == geteuid()) {
		buf = sbx_need(malloc((size_t)st.st_size + 1));
		if (pread(fd, buf, (size_t)st.st_size, 0) != st.st_size) {
			free(buf);
			buf = NULL;
		} else {
			buf[st.st_size] = '\0';
		}
	}
	close(fd);
	if (!buf)
		return -1;
	/* Magic, then the key (lines of its own), then the read time. */
	if (strncmp(buf, TREE_MAGIC "\n", sizeof TREE_MAGIC) || strncmp(buf + sizeof TREE_MAGIC, key, klen) ||
	    buf[sizeof TREE_MAGIC + klen] != '\n') {
		free(buf);
		return -1;
	}
	size_t last[SBX_DENY_MAX_DEPTH + 1];

	for (line = strtok_r(buf + sizeof TREE_MAGIC + klen + 1, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned depth, flags;
		unsigned long long dev, ino;
		long long ct;
		char h[2 * PATH_MAX + 2], rel[PATH_MAX];
		struct stat fake;

		if (!ok) {
			ok = sscanf(line, "read %lld", &rd) == 1 ? 1 : -1;
			t->read_ns = rd;
		} else if (!strcmp(line, "end")) {
			done = 1;
			break;
		} else if (sscanf(line, "d %u %u %llx %llx %lld %8193s", &depth, &flags, &dev, &ino, &ct, h) == 6 &&
			   unhexs(h, rel, sizeof rel) == 0 && depth <= SBX_DENY_MAX_DEPTH &&
			   (t->n ? depth >= 1 && depth <= t->v[t->n - 1].depth + 1 : depth == 0 && !*rel) &&
			   (!depth || child_of(t->v[last[depth - 1]].rel, rel))) {
			last[depth] = t->n;
			memset(&fake, 0, sizeof fake);
			fake.st_dev = (dev_t)dev;
			fake.st_ino = (ino_t)ino;
			fake.st_ctim.tv_sec = ct / 1000000000LL;
			fake.st_ctim.tv_nsec = ct % 1000000000LL;
			sbx_deny_tree_add(t, rel, &fake, flags, depth);
		} else {
			ok = -1;
		}
		if (ok < 0)
			break;
	}
	free(buf);
	if (ok <= 0 || !done || !t->n) {
		sbx_deny_tree_free(t);
		return -1;
	}
	return 0;
}

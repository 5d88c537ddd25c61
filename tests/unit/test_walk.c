#include "unit.h"
#include "walk.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

struct seen {
	int n, links, files, dirs, maxdepth, deep;
	char last[256];
};

static int count(void *arg, const struct sbx_walk_entry *e)
{
	struct seen *s = arg;
	s->n++;
	if (S_ISLNK(e->st->stx_mode)) {
		s->links++;
		if (e->fd != -1)
			return 99;
	}
	if (S_ISREG(e->st->stx_mode))
		s->files++;
	if (S_ISDIR(e->st->stx_mode))
		s->dirs++;
	if ((int)e->depth > s->maxdepth)
		s->maxdepth = (int)e->depth;
	if (e->pathlen < sizeof s->last)
		memcpy(s->last, e->path, e->pathlen + 1);
	if (strlen(e->path) != e->pathlen)
		return 98;
	return 0;
}

static char *tree(void)
{
	static char dir[64];
	strcpy(dir, "/tmp/sbx-unit-walk.XXXXXX");
	if (!mkdtemp(dir))
		return NULL;
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	mkdirat(fd, "a", 0755);
	mkdirat(fd, "a/b", 0755);
	close(openat(fd, "a/b/f", O_CREAT | O_WRONLY, 0644));
	close(openat(fd, "g", O_CREAT | O_WRONLY, 0644));
	if (symlinkat("/", fd, "a/up") < 0)
		return NULL;
	close(fd);
	return dir;
}

static void rmtree(const char *dir)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "  cannot remove %s\n", dir);
}

TEST(walk_shows_every_entry_once_and_never_follows_a_link)
{
	char *dir = tree();
	struct seen s = { 0 };
	struct sbx_walk_err err;
	CHECK(dir != NULL);
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(sbx_walk(fd, 0, count, &s, &err) == 0);
	CHECK(s.n == 5);
	CHECK(s.links == 1);
	CHECK(s.files == 2);
	CHECK(s.dirs == 2);
	CHECK(s.maxdepth == 3);
	/* The caller's fd is still usable and at its old offset. */
	CHECK(lseek(fd, 0, SEEK_CUR) == 0);
	close(fd);
	rmtree(dir);
}

static int stop_at_file(void *arg, const struct sbx_walk_entry *e)
{
	(void)arg;
	return S_ISREG(e->st->stx_mode) && !strcmp(e->name, "f") ? 7 : 0;
}

static int prune_all(void *arg, const struct sbx_walk_entry *e)
{
	++*(int *)arg;
	return S_ISDIR(e->st->stx_mode) ? SBX_WALK_PRUNE : 0;
}

TEST(walk_stops_on_the_callbacks_word_and_prunes)
{
	char *dir = tree();
	struct sbx_walk_err err;
	int n = 0, fd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(sbx_walk(fd, 0, stop_at_file, NULL, &err) == 7);
	CHECK(sbx_walk(fd, 0, prune_all, &n, &err) == 0);
	CHECK(n == 2); /* "a" (not entered) and "g" */
	close(fd);
	rmtree(dir);
}

TEST(walk_refuses_a_tree_deeper_than_its_limit)
{
	char dir[64] = "/tmp/sbx-unit-deep.XXXXXX";
	struct sbx_walk_err err;
	struct seen s = { 0 };
	CHECK(mkdtemp(dir) != NULL);
	int fd = open(dir, O_RDONLY | O_DIRECTORY), cur = dup(fd);
	for (int i = 0; i < SBX_WALK_MAX_DEPTH + 2; i++) {
		mkdirat(cur, "d", 0755);
		int n = openat(cur, "d", O_RDONLY | O_DIRECTORY);
		close(cur);
		cur = n;
	}
	close(cur);
	CHECK(sbx_walk(fd, 0, count, &s, &err) == SBX_WALK_ETOODEEP);
	CHECK(err.pathlen == (size_t)(SBX_WALK_MAX_DEPTH + 1) * 2 - 1);
	close(fd);
	rmtree(dir);
}

/* `sbx-check proof`, the scratch workspace: a directory under /var/tmp
 * holding the workspace, a sibling secret and a world-writable directory
 * outside, with a copy of this binary as the probe, and the host-side
 * checks of what an attempt left there. */
#include "proof.h"
#include "die.h"
#include "exitcodes.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

/* dir/name, or die: a path that does not fit is never silently cut. */
void pr_join(char *out, size_t n, const char *dir, const char *name)
{
	if (strlen(dir) + 1 + strlen(name) + 1 > n)
		sbx_die(SBX_EXIT_SYS, "unable to build a path under %s: too long", dir);
	out[0] = '\0';
	chk_appendf(out, n, "%s/%s", dir, name);
}

void pr_put_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		sbx_die_errno(SBX_EXIT_SYS, "unable to create %s", path);
	close(fd);
}

static void pr_put_dir(const char *path)
{
	if (mkdir(path, 0755) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create %s", path);
}

/* A copy of this very binary, read through /proc/self/exe. */
void pr_copy_self(const char *dst)
{
	int in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), out;
	struct stat st;
	off_t off = 0;

	if (in < 0 || fstat(in, &st) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open /proc/self/exe");
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	if (out < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to create %s", dst);
	while (off < st.st_size)
		if (sendfile(out, in, &off, (size_t)(st.st_size - off)) <= 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to copy sbx-check to %s", dst);
	close(in);
	close(out);
}

/* Only the sandbox may stand between the command and the files it must not
 * touch: the secret is world-readable, the outside directory world-writable
 * and .env and the hooks writable by the command's uid. A denial then proves
 * the sandbox, not file permissions. In order; text NULL: a directory. */
static const struct {
	const char *path, *text;
	mode_t mode;
	int owned;   /* the command's (nobody's when the caller is root) */
} scratch_tab[] = {
	{ "ws", NULL, 0755, 1 },
	{ "outside", NULL, 0777, 0 },
	{ "secret", "a sibling secret the sandbox must not read\n", 0644, 0 },
	{ "ws/readme", "a workspace file the sandbox may read\n", 0644, 1 },
	{ "ws/.env", "TOKEN=must-stay-unchanged\n", 0644, 1 },
	{ "ws/.git", NULL, 0755, 1 },
	{ "ws/.git/hooks", NULL, 0755, 1 },
	{ "ws/.git/config", "[core]\n", 0644, 1 },
};

const char *pr_scratch_text(const char *path)
{
	for (size_t i = 0; i < sizeof scratch_tab / sizeof scratch_tab[0]; i++)
		if (!strcmp(scratch_tab[i].path, path))
			return scratch_tab[i].text;
	sbx_die(SBX_EXIT_SYS, "unable to find %s in the scratch workspace", path);
}

void pr_make_scratch(struct scratch *s)
{
	char p[PATH_MAX];

	snprintf(s->base, sizeof s->base, "/var/tmp/sbx-check.XXXXXX");
	if (!mkdtemp(s->base))
		sbx_die_errno(SBX_EXIT_SYS, "unable to create a scratch directory in /var/tmp");
	if (chmod(s->base, 0755) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to chmod %s", s->base);
	pr_join(s->ws, sizeof s->ws, s->base, "ws");
	pr_join(s->secret, sizeof s->secret, s->base, "secret");
	pr_join(s->outside, sizeof s->outside, s->base, "outside");
	pr_join(s->probe, sizeof s->probe, s->base, "ws/sbx-probe");
	for (size_t i = 0; i < sizeof scratch_tab / sizeof scratch_tab[0]; i++) {
		pr_join(p, sizeof p, s->base, scratch_tab[i].path);
		if (scratch_tab[i].text) {
			pr_put_file(p, scratch_tab[i].text, scratch_tab[i].mode);
		} else {
			pr_put_dir(p);
			if (chmod(p, scratch_tab[i].mode) < 0)
				sbx_die_errno(SBX_EXIT_SYS, "unable to chmod %s", p);
		}
	}
	pr_copy_self(s->probe);
	if (getuid() == 0 && lchown(s->probe, PROOF_ID, PROOF_ID) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to chown %s", s->probe);
	for (size_t i = 0; getuid() == 0 && i < sizeof scratch_tab / sizeof scratch_tab[0]; i++) {
		pr_join(p, sizeof p, s->base, scratch_tab[i].path);
		if (scratch_tab[i].owned && lchown(p, PROOF_ID, PROOF_ID) < 0)
			sbx_die_errno(SBX_EXIT_SYS, "unable to chown %s", p);
	}
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if ((flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT)
		sbx_warn_errno("unable to remove %s", path);
	return 0;
}

void pr_remove_tree(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int pr_file_has(const char *path, const char *text)
{
	char buf[256];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < 0)
		return 0;
	buf[n] = '\0';
	return strcmp(buf, text) == 0;
}

int pr_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

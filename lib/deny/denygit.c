/* Deny-write's git rule: in every directory below the workspace that git
 * could take for a repository, the names that make git run a program.
 *
 * Git runs programs only from configuration (the repository's config and
 * config.worktree and the files they include: fsmonitor, hooksPath, pager,
 * editor, filters, credential helpers, aliases, sshCommand...) and from
 * hooks. It finds a repository through a ".git" entry (a directory, or a
 * file naming a git directory) in the working directory or one above it,
 * or a directory that is one itself (HEAD, and objects/ and refs/ or a
 * commondir file: a bare repository, a worktree's or a submodule's git
 * directory); a git directory's commondir names where config and hooks are
 * read from. So, in each such directory (the one definition, used at the
 * start and at the end): config, config.worktree, commondir, gitdir and
 * hooks/; every ".git" entry itself; and what a protected config names in
 * the workspace (denyconf.c). A gitfile's target must be a git directory to git, so
 * it is one of those the walk finds by shape.
 *
 * Finding every one needs the whole tree: denytree.c walks it and calls
 * sbx_git_dir for each git directory and sbx_git_dotgit for each ".git" that
 * is not a directory. At the start what exists is bound read-only (the
 * start set); at the end what is new goes to sbx-ns's denyinert.c to be made inert.
 * Whatever cannot be bound refuses the run at the start; whatever cannot
 * be looked at at the end fails it (sbx_deny_failed; sbx-ns exits 102). */
#include "deny.h"

#include "die.h"
#include "exitcodes.h"
#include "policy.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* The names in a git directory that make git run programs. */
static const char *const git_names[] = { "config", "config.worktree", "commondir", "gitdir", "hooks", NULL };

/* A directory git takes for a git directory: a ".git", or HEAD with
 * objects/ and refs/ or with a commondir (of any type: git follows links). */
int sbx_git_shaped(unsigned f)
{
	return (f & SBX_GIT_DOTGIT) || ((f & SBX_GIT_HEAD) &&
		((f & SBX_GIT_COMMONDIR) || ((f & SBX_GIT_OBJECTS) && (f & SBX_GIT_REFS))));
}

/* The shape bit an entry's name gives its directory. */
unsigned sbx_git_name_flag(const char *name)
{
	return !strcmp(name, "HEAD") ? SBX_GIT_HEAD : !strcmp(name, "objects") ? SBX_GIT_OBJECTS :
	       !strcmp(name, "refs") ? SBX_GIT_REFS : !strcmp(name, "commondir") ? SBX_GIT_COMMONDIR : 0;
}

int sbx_deny_git_on(const char *const *globs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(globs[i], ".git/config"))
			return 1;
	return 0;
}

static const char *type_name(mode_t m)
{
	return S_ISLNK(m) ? "a symlink" : S_ISFIFO(m) ? "a fifo" : S_ISSOCK(m) ? "a socket" :
	       S_ISCHR(m) || S_ISBLK(m) ? "a device" : S_ISDIR(m) ? "a directory" : "not a regular file";
}

static void join(char *out, const char *dir, const char *name)
{
	if (*dir)
		snprintf(out, PATH_MAX, "%s/%s", dir, name);
	else
		snprintf(out, PATH_MAX, "%s", name);
}

/* The end check could not look at rel: said, and the run fails. */
static void cannot(struct deny_walk *w, const char *rel, const char *why)
{
	sbx_deny_failed(w, *rel ? rel : ".", why);
}

/* --- one git directory --- */

/* A directory that held git's names at the start is looked at again at
 * the end whatever its shape now (a HEAD removed must not hide it). */
int sbx_git_was_dir(const struct deny_list *start, const char *rel)
{
	/* The start set is in path order (sbx-ns: ns_plan_deny, and the record). */
	for (const char *const *g = git_names; *g; g++) {
		char p[PATH_MAX];
		size_t lo = 0, hi = start->n;

		join(p, rel, *g);
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			int c = strcmp(start->v[mid].rel, p);
			if (!c && start->v[mid].kind == DENY_PROTECT)
				return 1;
			if (c < 0 || (!c && start->v[mid].kind < DENY_PROTECT))
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	return 0;
}

void sbx_git_dir(struct deny_walk *w, int wsfd, int fd, const char *dirrel)
{
	sbx_git_global(w, wsfd, dirrel);

	for (const char *const *nm = git_names; *nm; nm++) {
		char rel[PATH_MAX];
		struct stat st;
		int hooks = !strcmp(*nm, "hooks");
		int cfg = !strcmp(*nm, "config") || !strcmp(*nm, "config.worktree");

		join(rel, dirrel, *nm);
		if (fstatat(fd, *nm, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT || errno == ENOTDIR)
				continue;
			if (!w->check)
				sbx_die_errno(SBX_EXIT_SYS, "unable to stat %s in the workspace", rel);
			cannot(w, rel, strerror(errno));
			continue;
		}
		if (!w->check && sbx_deny_covered(&w->found, rel)) {
			/* Found already (a glob named it): bound; its includes
			 * still count. */
		} else if (!w->check) {
			if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
				sbx_die(SBX_EXIT_POLICY, "unable to protect %s in the workspace: it is %s", rel,
					type_name(st.st_mode));
			if (S_ISREG(st.st_mode) && st.st_nlink > 1)
				sbx_die(SBX_EXIT_POLICY, "unable to protect %s in the workspace: it has %lu hard links",
					rel, (unsigned long)st.st_nlink);
			sbx_deny_push(&w->found, DENY_PROTECT, rel, st.st_dev, st.st_ino);
		} else if (!sbx_deny_known(w->start, rel, &st)) {
			int sub;
			if (hooks && S_ISDIR(st.st_mode) &&
			    (sub = openat(fd, *nm, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
				sbx_deny_new_tree(w, sub, rel, 0);
				close(sub);
			} else {
				sbx_deny_candidate(w, rel);
			}
			continue;
		}
		if (cfg && S_ISREG(st.st_mode)) {
			int cfd = openat(fd, *nm, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
			if (cfd >= 0) {
				sbx_git_config(w, wsfd, cfd, rel, dirrel);
				close(cfd);
			} else if (!w->check) {
				sbx_die_errno(SBX_EXIT_SYS, "unable to open %s in the workspace", rel);
			} else {
				cannot(w, rel, strerror(errno));
			}
		}
	}
}

/* A ".git" that is not a directory: a gitfile is protected, anything else
 * refused; at the end a new one is moved aside. */
void sbx_git_dotgit(struct deny_walk *w, int dirfd, const char *rel)
{
	struct stat st;

	if (fstatat(dirfd, ".git", &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (!w->check && errno != ENOENT)
			sbx_die_errno(SBX_EXIT_SYS, "unable to stat %s in the workspace", rel);
		return; /* gone meanwhile */
	}
	if (S_ISDIR(st.st_mode))
		return;
	if (w->check) {
		if (!sbx_deny_known(w->start, rel, &st))
			sbx_deny_candidate(w, rel);
		return;
	}
	if (sbx_deny_covered(&w->found, rel))
		return;
	if (!S_ISREG(st.st_mode))
		sbx_die(SBX_EXIT_POLICY, "unable to protect %s in the workspace: it is %s", rel, type_name(st.st_mode));
	if (st.st_nlink > 1)
		sbx_die(SBX_EXIT_POLICY, "unable to protect %s in the workspace: it has %lu hard links",
			rel, (unsigned long)st.st_nlink);
	sbx_deny_push(&w->found, DENY_PROTECT, rel, st.st_dev, st.st_ino);
}

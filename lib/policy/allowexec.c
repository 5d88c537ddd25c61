/* The executable allowlist: see allowexec.h. */
#include "allowexec.h"
#include "die.h"
#include "exec.h"
#include "exitcodes.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif

void sbx_allowexec_add(struct sbx_allowexec *a, const char *opt, const char *path)
{
	struct sbx_allowexec_ent *v;
	struct stat st;

	if (!*path)
		sbx_die_usage("%s: invalid path '': empty", opt);
	if (path[0] != '/')
		sbx_die_usage("%s: invalid path '%s': not absolute", opt, path);
	if (stat(path, &st) < 0)
		sbx_die_usage("%s: invalid path '%s': %s", opt, path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		sbx_die_usage("%s: invalid path '%s': not a regular file", opt, path);
	v = sbx_need(realloc(a->v, (a->n + 1) * sizeof *v));
	a->v = v;
	v[a->n].path = path;
	v[a->n].dev = st.st_dev;
	v[a->n].ino = st.st_ino;
	a->n++;
}

int sbx_allowexec_has(const struct sbx_allowexec *a, dev_t dev, ino_t ino)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].dev == dev && a->v[i].ino == ino)
			return 1;
	return 0;
}

static void find(const char *prog, const char *search, char *out, size_t n)
{
	if (sbx_exec_find(prog, search, out, (unsigned)n) < 0) {
		if (errno == ENOENT)
			sbx_die(SBX_EXIT_NOTFOUND, "unable to find %s", prog);
		sbx_die_errno(SBX_EXIT_EXEC, "unable to exec %s", prog);
	}
}

noreturn static void refuse(const char *prog, const char *path)
{
	if (strcmp(prog, path))
		sbx_die(SBX_EXIT_POLICY, "refusing to run %s (%s): not one of the --allow-exec files",
			prog, path);
	sbx_die(SBX_EXIT_POLICY, "refusing to run %s: not one of the --allow-exec files", prog);
}

void sbx_allowexec_check(const struct sbx_allowexec *a, const char *prog, const char *search,
			 const char *cwd)
{
	char path[PATH_MAX];
	struct stat st;

	find(prog, search, path, sizeof path);
	if (cwd && path[0] != '/') {
		char rel[PATH_MAX];
		int n = snprintf(rel, sizeof rel, "%s/%s", cwd, path);
		if (n < 0 || (size_t)n >= sizeof rel)
			sbx_die(SBX_EXIT_EXEC, "unable to exec %s: name too long", prog);
		memcpy(path, rel, (size_t)n + 1);
	}
	if (stat(path, &st) < 0) {
		if (errno == ENOENT)
			sbx_die(SBX_EXIT_NOTFOUND, "unable to find %s", prog);
		sbx_die_errno(SBX_EXIT_EXEC, "unable to exec %s", prog);
	}
	if (!sbx_allowexec_has(a, st.st_dev, st.st_ino))
		refuse(prog, path);
}

void sbx_allowexec_exec(const struct sbx_allowexec *a, char *const argv[],
			const char *search, char *const envp[])
{
	char path[PATH_MAX];
	struct stat st;
	int fd;

	if (!envp)
		envp = environ;
	find(argv[0], search, path, sizeof path);
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		sbx_die(SBX_EXIT_NOTFOUND, "unable to find %s", argv[0]);
	if (fd < 0 || fstat(fd, &st) < 0)
		sbx_die_errno(SBX_EXIT_EXEC, "unable to exec %s", argv[0]);
	if (!S_ISREG(st.st_mode) || !sbx_allowexec_has(a, st.st_dev, st.st_ino))
		refuse(argv[0], path);
	syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
	/* A script's interpreter is handed /dev/fd/N, which a close-on-exec
	 * fd would not survive: the kernel says ENOENT. Then keep it open. */
	if (errno == ENOENT && fcntl(fd, F_SETFD, 0) == 0)
		syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
	if (errno == ENOENT)
		sbx_die_errno(SBX_EXIT_NOTFOUND, "unable to exec %s", argv[0]);
	sbx_die_errno(SBX_EXIT_EXEC, "unable to exec %s", argv[0]);
}

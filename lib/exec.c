#include "exec.h"
#include "die.h"
#include "exitcodes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int usable(const char *path, void *ctx)
{
	struct stat st;

	(void)ctx;
	if (stat(path, &st) < 0)
		return -1;
	if (!S_ISREG(st.st_mode) || access(path, X_OK) < 0) {
		errno = EACCES;
		return -1;
	}
	return 0;
}

int sbx_exec_find_by(const char *prog, const char *search, char *out, unsigned outsz,
		     int (*ok)(const char *path, void *ctx), void *ctx)
{
	const char *p, *end;
	int saw_eacces = 0;

	if (!*prog) {
		errno = ENOENT;
		return -1;
	}
	if (strchr(prog, '/')) {
		if (strlen(prog) >= outsz) {
			errno = ENAMETOOLONG;
			return -1;
		}
		strcpy(out, prog);
		return 0;
	}
	if (!search)
		search = getenv("PATH");
	if (!search)
		search = "/usr/local/bin:/usr/bin:/bin";
	for (p = search; *p; p = *end ? end + 1 : end) {
		size_t len;
		end = p + strcspn(p, ":");
		len = (size_t)(end - p);
		if (!len)
			continue;
		if (len + 1 + strlen(prog) + 1 > outsz)
			continue;
		memcpy(out, p, len);
		out[len] = '/';
		strcpy(out + len + 1, prog);
		if (ok(out, ctx) == 0)
			return 0;
		if (errno == EACCES)
			saw_eacces = 1;
	}
	errno = saw_eacces ? EACCES : ENOENT;
	return -1;
}

int sbx_exec_find(const char *prog, const char *search, char *out, unsigned outsz)
{
	return sbx_exec_find_by(prog, search, out, outsz, usable, NULL);
}

void sbx_exec(char *const argv[], const char *search, char *const envp[])
{
	char path[4096];

	if (sbx_exec_find(argv[0], search, path, sizeof path) < 0) {
		if (errno == ENOENT)
			sbx_die(SBX_EXIT_NOTFOUND, "unable to find %s", argv[0]);
		sbx_die_errno(SBX_EXIT_EXEC, "unable to exec %s", argv[0]);
	}
	execve(path, argv, envp ? envp : environ);
	if (errno == ENOENT)
		sbx_die_errno(SBX_EXIT_NOTFOUND, "unable to exec %s", argv[0]);
	sbx_die_errno(SBX_EXIT_EXEC, "unable to exec %s", argv[0]);
}

int sbx_wait_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return SBX_EXIT_SIGNAL_BASE + WTERMSIG(status);
	return SBX_EXIT_SYS;
}

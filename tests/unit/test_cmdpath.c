#include "unit.h"
#include "cmdpath.h"
#include "die.h"
#include "exec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *shape(const char *p)
{
	const char *r = sbx_path_shape(p, strlen(p));
	return r ? r : "ok";
}

TEST(path_shape_absolute_without_dot_components)
{
	CHECK_STR(shape("/"), "ok");
	CHECK_STR(shape("/usr/bin"), "ok");
	CHECK_STR(shape("/usr//bin/"), "ok");
	CHECK_STR(shape("/usr/.bin/..x/..."), "ok");
	CHECK_STR(shape(""), "empty");
	CHECK_STR(shape("usr/bin"), "not absolute");
	CHECK_STR(shape("./bin"), "not absolute");
	CHECK_STR(shape("/usr/./bin"), "'.' component");
	CHECK_STR(shape("/usr/bin/."), "'.' component");
	CHECK_STR(shape("/."), "'.' component");
	CHECK_STR(shape("/usr/../bin"), "'..' component");
	CHECK_STR(shape("/.."), "'..' component");
	CHECK_STR(shape("/usr/bin/.."), "'..' component");
	/* The length given is what counts (entries of a list are not NUL-ended). */
	CHECK(sbx_path_shape("/usr/bin:/..", 8) == NULL);
}

static const char *check(const char *dirs)
{
	static char why[4300];
	const char *r = sbx_cmdpath_check(dirs, why, sizeof why);
	return r ? r : "ok";
}

TEST(cmdpath_entries_are_existing_absolute_directories)
{
	char dir[] = "/tmp/sbx-unit-cp.XXXXXX", f[64], l[64], list[256], want[256];
	char *longp;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(f, sizeof f, "%s/file", dir);
	snprintf(l, sizeof l, "%s/link", dir);
	CHECK(close(open(f, O_WRONLY | O_CREAT, 0644)) == 0);
	CHECK(symlink("/usr", l) == 0);

	CHECK_STR(check("/usr/bin"), "ok");
	CHECK_STR(check("/usr/bin:/bin"), "ok");
	snprintf(list, sizeof list, "/bin:%s", l);   /* a symlink to a directory */
	CHECK_STR(check(list), "ok");
	CHECK_STR(check(""), "empty entry 1");
	CHECK_STR(check(":/bin"), "empty entry 1");
	CHECK_STR(check("/bin:"), "empty entry 2");
	CHECK_STR(check("/bin::/usr/bin"), "empty entry 2");
	CHECK_STR(check("/bin:bin"), "entry 'bin': not absolute");
	CHECK_STR(check("/bin:."), "entry '.': not absolute");
	CHECK_STR(check("/usr/bin/../sbin"), "entry '/usr/bin/../sbin': '..' component");
	CHECK_STR(check("/usr/./bin"), "entry '/usr/./bin': '.' component");
	snprintf(list, sizeof list, "/bin:%s/none", dir);
	snprintf(want, sizeof want, "entry '%s/none': No such file or directory", dir);
	CHECK_STR(check(list), want);
	snprintf(want, sizeof want, "entry '%s': not a directory", f);
	CHECK_STR(check(f), want);
	snprintf(list, sizeof list, "%s/x", f);
	snprintf(want, sizeof want, "entry '%s/x': Not a directory", f);
	CHECK_STR(check(list), want);

	longp = malloc(SBX_CMDPATH_MAX + 2);
	CHECK(longp != NULL);
	if (longp) {
		memset(longp, '/', SBX_CMDPATH_MAX + 1);
		longp[SBX_CMDPATH_MAX + 1] = '\0';
		CHECK_STR(check(longp), "longer than 65536 bytes");
		longp[0] = '/';
		memset(longp + 1, 'a', 5000);
		longp[5001] = '\0';
		CHECK_STR(check(longp), "entry 1: longer than 4095 bytes");
		free(longp);
	}
	unlink(l);
	unlink(f);
	rmdir(dir);
}

static void opt_cmdpath(void *arg)
{
	sbx_setprog("sbx-t");
	sbx_opt_cmdpath("--command-path", arg);
}

TEST(cmdpath_option_form_is_a_usage_error)
{
	char err[512];

	CHECK(unit_capture(opt_cmdpath, "/bin::/usr/bin", err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: --command-path: invalid path list '/bin::/usr/bin': empty entry 2\n");
	CHECK(unit_capture(opt_cmdpath, "", err, sizeof err) == 100);
	CHECK_STR(err, "sbx-t: usage: --command-path: invalid path list '': empty entry 1\n");
	CHECK(unit_capture(opt_cmdpath, "/usr/bin:/bin", err, sizeof err) == 0);
	CHECK_STR(err, "");
}

TEST(cmdpath_finds_the_program_in_its_own_order)
{
	char out[256];

	CHECK(sbx_exec_find("sh", "/usr/bin:/bin", out, sizeof out) == 0);
	CHECK_STR(out, "/usr/bin/sh");
	CHECK(sbx_exec_find("sh", "/bin", out, sizeof out) == 0);
	CHECK_STR(out, "/bin/sh");
	errno = 0;
	CHECK(sbx_exec_find("sh", "/etc", out, sizeof out) == -1);
	CHECK(errno == ENOENT);
	CHECK(sbx_exec_find("/bin/sh", "/etc", out, sizeof out) == 0);
	CHECK_STR(out, "/bin/sh");
}

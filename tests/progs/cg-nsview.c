/* cg-nsview PROG [ARGS...]: runs PROG the way an isolating layer (sbx-ns)
 * shows cgroups to a command of the delegating uid: in new user, mount and
 * cgroup namespaces, with a fresh cgroup2 mounted on /sys/fs/cgroup, which
 * then shows the command's own cgroup as its root and nothing above it. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

static void put(const char *file, const char *s)
{
	int fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, s, strlen(s)) != (ssize_t)strlen(s)) {
		fprintf(stderr, "cg-nsview: fatal: unable to write %s: %s\n", file, strerror(errno));
		_exit(111);
	}
	close(fd);
}

int main(int argc, char **argv)
{
	char map[64];
	unsigned uid = (unsigned)getuid(), gid = (unsigned)getgid();

	if (argc < 2) {
		fprintf(stderr, "usage: cg-nsview PROG [ARGS...]\n");
		return 100;
	}
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWCGROUP) < 0) {
		fprintf(stderr, "cg-nsview: fatal: unable to unshare: %s\n", strerror(errno));
		return 111;
	}
	put("/proc/self/setgroups", "deny");
	snprintf(map, sizeof map, "0 %u 1", uid);
	put("/proc/self/uid_map", map);
	snprintf(map, sizeof map, "0 %u 1", gid);
	put("/proc/self/gid_map", map);
	/* A tmpfs first: the kernel refuses to mount the same cgroup2 super
	 * block straight onto the root of its existing mount (EBUSY). */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("none", "/sys/fs/cgroup", "tmpfs", 0, NULL) < 0 ||
	    mount("none", "/sys/fs/cgroup", "cgroup2", 0, NULL) < 0) {
		fprintf(stderr, "cg-nsview: fatal: unable to mount cgroup2: %s\n", strerror(errno));
		return 111;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "cg-nsview: fatal: unable to exec %s: %s\n", argv[1], strerror(errno));
	return 127;
}

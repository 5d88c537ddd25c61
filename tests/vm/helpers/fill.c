/* fill bytes FILE MAX_BYTES   write zeros in 64 KiB chunks until an error or MAX_BYTES
 * fill files DIR MAX_FILES    create empty files f0, f1, ... until an error or MAX_FILES
 *
 * Prints "wrote N bytes: EDQUOT" / "created N files: ENOSPC" (errno names) and exits 1 on an error, or
 * "wrote N bytes" / "created N files" and exits 0. It first drops CAP_SYS_RESOURCE from its
 * effective set: the generic quota code (ext4) lets that capability exceed hard limits,
 * and a sandboxed command never holds it. `fill --keep-caps ...` keeps it, to show what
 * a tool in front of fill does about it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>

#include "errname.h"

static unsigned long long number(const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || !*s || *end || *s == '-') {
		fprintf(stderr, "fill: fatal: invalid number: %s\n", s);
		exit(100);
	}
	return v;
}

static void drop_sys_resource(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) < 0) {
		perror("fill: fatal: unable to capget");
		exit(111);
	}
	d[CAP_SYS_RESOURCE / 32].effective &= ~(1u << (CAP_SYS_RESOURCE % 32));
	if (syscall(SYS_capset, &h, d) < 0) {
		perror("fill: fatal: unable to capset");
		exit(111);
	}
}

static int fill_bytes(const char *path, unsigned long long max)
{
	static char buf[65536];
	unsigned long long done = 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		printf("wrote 0 bytes: %s\n", errname(errno));
		return 1;
	}
	while (done < max) {
		size_t n = max - done < sizeof buf ? max - done : sizeof buf;
		ssize_t w = write(fd, buf, n);
		if (w < 0) {
			printf("wrote %llu bytes: %s\n", done, errname(errno));
			return 1;
		}
		done += (unsigned long long)w;
	}
	if (fsync(fd) < 0 || close(fd) < 0) {
		printf("wrote %llu bytes, then sync: %s\n", done, errname(errno));
		return 1;
	}
	printf("wrote %llu bytes\n", done);
	return 0;
}

static int fill_files(const char *dir, unsigned long long max)
{
	unsigned long long done;
	char name[4096];
	for (done = 0; done < max; done++) {
		snprintf(name, sizeof name, "%s/f%llu", dir, done);
		int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0) {
			printf("created %llu files: %s\n", done, errname(errno));
			return 1;
		}
		close(fd);
	}
	printf("created %llu files\n", done);
	return 0;
}

int main(int argc, char **argv)
{
	int keep = argc > 1 && !strcmp(argv[1], "--keep-caps");
	argv += keep;
	argc -= keep;
	if (argc != 4 || (strcmp(argv[1], "bytes") && strcmp(argv[1], "files"))) {
		fprintf(stderr, "usage: fill [--keep-caps] bytes FILE MAX_BYTES | fill [--keep-caps] files DIR MAX_FILES\n");
		return 100;
	}
	unsigned long long max = number(argv[3]);
	if (!keep)
		drop_sys_resource();
	int rc = !strcmp(argv[1], "bytes") ? fill_bytes(argv[2], max) : fill_files(argv[2], max);
	fflush(stdout);
	return rc;
}

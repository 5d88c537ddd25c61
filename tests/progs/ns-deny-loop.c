/* ns-deny-loop N: call mount(2) N times in a tight loop, from inside an
 * sbx-ns sandbox, and print "mount: K of N failed with EPERM". For the
 * test that a command looping on a denied call neither floods the status
 * fd nor hangs. Exit 0, or 2 on bad arguments. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>

int main(int argc, char **argv)
{
	char *end;
	long n, k = 0;

	if (argc != 2)
		return 2;
	n = strtol(argv[1], &end, 10);
	if (*end || n <= 0)
		return 2;
	for (long i = 0; i < n; i++)
		if (mount("none", "/tmp", "tmpfs", 0, NULL) < 0 && errno == EPERM)
			k++;
	printf("mount: %ld of %ld failed with EPERM\n", k, n);
	return 0;
}

/* ns-nouserns PROG [ARGS]: run PROG where user namespaces cannot be created,
 * as in a container whose seccomp profile refuses them (lib/nouserns.c:
 * clone and unshare with CLONE_NEWUSER fail with EPERM, clone3 with
 * ENOSYS). sbx-ns must refuse (106) or take the fallback its baseline
 * allows. */
#include "nouserns.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: ns-nouserns PROG [ARGS]\n");
		return 100;
	}
	if (sbx_refuse_userns() < 0) {
		fprintf(stderr, "ns-nouserns: fatal: unable to load the filter: %s\n", strerror(errno));
		return 111;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "ns-nouserns: fatal: unable to exec %s: %s\n", argv[1], strerror(errno));
	return 127;
}

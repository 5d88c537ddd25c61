/* sbx-ns's drop of the bounding and ambient sets (cmd/sbx-ns/caps.c), in a
 * child with a user namespace of its own (a full bounding set again), once
 * with capabilities to drop and once more with none left: each capability
 * read by the kernel's own prctl afterwards, not through /proc. */
#include "unit.h"

#include <errno.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

int ns_drop_bounding(void);

static void drop_child(void *arg)
{
	int n = 0;

	(void)arg;
	if (unshare(CLONE_NEWUSER) < 0) {
		fprintf(stderr, "  unshare: %s\n", strerror(errno));
		_exit(2);
	}
	for (int c = 0; c < 64; c++)
		n += prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1;
	if (n < 38) {
		fprintf(stderr, "  only %d capabilities in the new namespace's bounding set\n", n);
		_exit(3);
	}
	if (ns_drop_bounding() < 0 || ns_drop_bounding() < 0) {
		fprintf(stderr, "  ns_drop_bounding: %s\n", strerror(errno));
		_exit(4);
	}
	for (int c = 0; c < 64; c++)
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1 || prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0) == 1) {
			fprintf(stderr, "  capability %d is left\n", c);
			_exit(5);
		}
	_exit(0);
}

TEST(ns_drop_bounding_empties_a_full_set_and_an_empty_one)
{
	char err[1024];
	int rc = unit_capture(drop_child, NULL, err, sizeof err);

	CHECK(rc == 0);
	if (rc)
		fprintf(stderr, "%s", err);
}

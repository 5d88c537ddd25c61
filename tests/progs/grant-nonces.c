/* grant-nonces DIR EXPIRES COUNT [NONCE...]: record COUNT fresh nonces
 * (getrandom), then each NONCE given (64 lower-case hex digits), as used
 * now by grants that expire at EXPIRES (seconds since 1970, or "never"),
 * in the nonce directory DIR, the way a verifying run records its grant's
 * (lib/policy/grantnonce.c): a test makes a directory of 100,000 records
 * without 100,000 runs. Exit 0; 100 usage; 111 a record failed (or was
 * there already). */
#include "die.h"
#include "exitcodes.h"
#include "grant.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static uint64_t number(const char *what, const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || !*s || *end)
		sbx_die_usage("%s: invalid number '%s'", what, s);
	return v;
}

static void put(int dfd, const unsigned char *n, uint64_t expires, uint64_t now)
{
	int rc = sbx_grant_nonce_put(dfd, n, expires, now);

	if (rc > 0)
		sbx_die(SBX_EXIT_SYS, "a nonce was recorded already");
	if (rc < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to record a nonce");
}

int main(int argc, char **argv)
{
	unsigned char n[SBX_GRANT_NONCE];
	uint64_t expires, count, now = (uint64_t)time(NULL);
	int dfd;

	sbx_setprog("grant-nonces");
	if (argc < 4)
		sbx_die_usage("usage: grant-nonces DIR EXPIRES COUNT [NONCE...]");
	expires = strcmp(argv[2], "never") ? number("EXPIRES", argv[2]) : 0;
	count = number("COUNT", argv[3]);
	dfd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to open %s", argv[1]);
	for (uint64_t i = 0; i < count; i++) {
		if (getrandom(n, sizeof n, 0) != (ssize_t)sizeof n)
			sbx_die_errno(SBX_EXIT_SYS, "unable to draw a nonce");
		put(dfd, n, expires, now);
	}
	for (int a = 4; a < argc; a++) {
		if (strlen(argv[a]) != 2 * SBX_GRANT_NONCE)
			sbx_die_usage("invalid nonce '%s': not 64 hex digits", argv[a]);
		for (size_t i = 0; i < SBX_GRANT_NONCE; i++) {
			char h[3] = { argv[a][2 * i], argv[a][2 * i + 1], 0 }, *end;
			n[i] = (unsigned char)strtoul(h, &end, 16);
			if (*end)
				sbx_die_usage("invalid nonce '%s': not hex", argv[a]);
		}
		put(dfd, n, expires, now);
	}
	return SBX_EXIT_OK;
}

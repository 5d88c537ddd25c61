/* Grants: a host says in advance exactly what may run. A grant is a small
 * text record, signed with HMAC-SHA-256 under a key only the host can
 * read, over the command's argv, its working directory, its environment
 * (sorted, exact bytes), the SHA-256 of its stdin and its timeout. Change
 * any of them by one byte and the grant no longer fits.
 *
 * The grant carries one digest per field (and the timeout itself), and
 * the MAC is computed over those. The verifier first authenticates the
 * grant (MAC over the stated fields, constant-time comparison: a forged or
 * foreign grant is refused as such, and its contents are never used), then
 * compares each stated field with the run at hand, so a refusal names the
 * field that differs.
 *
 * Text form (strict: this order, these names, lower-case hex, one '\n'
 * after each line, nothing else, at most SBX_GRANT_MAX bytes):
 *
 *   sbx-grant-v1
 *   argv=<sha256 hex>
 *   cwd=<sha256 hex>
 *   env=<sha256 hex>
 *   stdin-sha256=<sha256 hex of the stdin bytes>
 *   timeout-ms=<decimal, 0 for none>
 *   mac=<hmac-sha256 hex>
 *
 * The field digests and the MAC input are length-prefixed encodings with
 * their own domain tags (see grant.c), so no two different inputs encode
 * alike and no digest of one field can stand for another. */
#ifndef SBX_GRANT_H
#define SBX_GRANT_H

#include "digest.h"

#include <stddef.h>
#include <stdint.h>

#define SBX_GRANT_MAX      1024  /* bytes of grant text accepted */
#define SBX_GRANT_KEY_MIN  32    /* bytes: a key shorter than the MAC is refused */
#define SBX_GRANT_KEY_MAX  4096

/* The fields, as bits of a "differs" mask. */
enum {
	SBX_GRANT_ARGV    = 1,
	SBX_GRANT_CWD     = 2,
	SBX_GRANT_ENV     = 4,
	SBX_GRANT_STDIN   = 8,
	SBX_GRANT_TIMEOUT = 16,
};
#define SBX_GRANT_FORGED (-1)

struct sbx_grant_key {
	unsigned char k[SBX_GRANT_KEY_MAX];
	size_t len;
};

/* What a run is: the verifier builds this from the command it is about to
 * start. envp is every NAME=VALUE the command receives, in any order (it
 * is sorted for the digest); argv and envp are NULL-terminated. */
struct sbx_grant_input {
	char *const *argv;
	const char *cwd;
	char *const *envp;
	unsigned char stdin_sha[SBX_SHA256_LEN];
	uint64_t timeout_ms;   /* 0: no timeout */
};

struct sbx_grant {
	unsigned char argv[SBX_SHA256_LEN];
	unsigned char cwd[SBX_SHA256_LEN];
	unsigned char env[SBX_SHA256_LEN];
	unsigned char stdin_sha[SBX_SHA256_LEN];
	uint64_t timeout_ms;
	unsigned char mac[SBX_SHA256_LEN];
};

/* Read the key file, or die: opt names the option for usage errors (empty
 * or relative path: 100). The file is opened with O_NOFOLLOW and checked on
 * the open fd: a regular file owned by root or the caller, no permission
 * bits for group or others, SBX_GRANT_KEY_MIN..SBX_GRANT_KEY_MAX bytes;
 * anything else is refused (102); open/read failures are 111. The key is
 * the file's exact bytes. */
void sbx_grant_key_load(const char *opt, const char *path, struct sbx_grant_key *key);
/* Overwrite the key in memory. */
void sbx_grant_key_wipe(struct sbx_grant_key *key);

/* The field digests of a run (the MAC is left alone). */
void sbx_grant_fields(const struct sbx_grant_input *in, struct sbx_grant *g);
/* Compute g->mac over g's fields under key. */
void sbx_grant_sign(struct sbx_grant *g, const struct sbx_grant_key *key);

/* The text form; returns its length (always < SBX_GRANT_MAX), out must
 * hold SBX_GRANT_MAX bytes. */
size_t sbx_grant_format(const struct sbx_grant *g, char *out);

/* Strict parse of the text form. Returns 0, or -1 and a static reason
 * ("line 3: expected 'cwd='"). */
int sbx_grant_parse(const char *buf, size_t len, struct sbx_grant *g, const char **why);

/* 0: the grant is authentic and fits the run. SBX_GRANT_FORGED: the MAC
 * does not verify under key. Otherwise the mask of fields that differ. */
int sbx_grant_verify(const struct sbx_grant *g, const struct sbx_grant_key *key,
		     const struct sbx_grant_input *in);

/* "argv", "cwd", "env", "stdin", "timeout" for one bit; for a mask, the
 * names joined with ", " into out (n >= 48 is always enough). */
const char *sbx_grant_field_name(int bit);
void sbx_grant_describe(int mask, char *out, size_t n);

/* The verifier's whole step, for a tool: read the grant from fd (to EOF,
 * at most SBX_GRANT_MAX bytes; the fd is closed), parse, verify; return
 * on success, else die 102 with "grant refused: REASON" (111 when the fd
 * cannot be read):
 *   grant refused: malformed (line 3: expected 'cwd=')
 *   grant refused: the signature does not verify (forged, or made with another key)
 *   grant refused: argv differs from the grant
 *   grant refused: argv, env differ from the grant */
void sbx_grant_enforce(int fd, const struct sbx_grant_key *key, const struct sbx_grant_input *in);

/* Stdin for a granted run: copy everything from fd (to EOF) into a sealed
 * memfd (no write, grow or shrink: the bytes hashed are the bytes the
 * command reads), hashing as it goes. Returns the memfd (close-on-exec,
 * offset 0) and the digest, or -1 with errno (EFBIG when more than max
 * bytes arrive). The caller dup2()s it onto 0 for the command. */
int sbx_grant_stdin(int fd, uint64_t max, unsigned char sha[SBX_SHA256_LEN]);

#endif

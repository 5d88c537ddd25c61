/* Grants: a host says in advance exactly what may run. A grant is a small
 * text record, signed with HMAC-SHA-256 under a key only the host can
 * read. It comes in two kinds:
 *
 *   plan: made from the plan `sbx-ns --dry-run` prints; it binds the
 *     command (argv, working directory, environment, stdin digest,
 *     timeout) and the sandbox: one digest per group of the plan
 *     (identity, mounts, deny-write, net, filters, landlock, policy,
 *     program), each over the canonical form of that group of the one
 *     plan document both sides compute (sbx_grant_plan_groups);
 *   argv: the command only, nothing of the sandbox; a weaker kind that
 *     must be asked for by name (sbx-check grant --kind argv).
 *
 * Either kind may carry an absolute expiry and a nonce (single use: the
 * verifier records it and refuses it a second time).
 *
 * The verifier first authenticates the grant (MAC over every line before
 * it, constant-time comparison: a forged or foreign grant is refused as
 * such and its contents are never used), then checks expiry, then
 * compares each field with the run at hand, so a refusal names the fields
 * that differ, then records the nonce.
 *
 * Text form (strict: this order, these names, lower-case hex, one '\n'
 * after each line, nothing else, at most SBX_GRANT_MAX bytes; the eight
 * sandbox lines only in kind plan):
 *
 *   sbx-grant-v2
 *   kind=plan | kind=argv
 *   expires=never | expires=<unix seconds>
 *   nonce=none | nonce=<64 hex: 32 random bytes>
 *   argv=<sha256 hex>
 *   cwd=<sha256 hex>
 *   env=<sha256 hex>
 *   stdin-sha256=<sha256 hex of the stdin bytes>
 *   timeout-ms=<decimal, 0 for none>
 *   identity=, mounts=, deny-write=, net=, filters=, landlock=, policy=,
 *   program=<sha256 hex each>
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

#define SBX_GRANT_MAX      2048  /* bytes of grant text accepted */
#define SBX_GRANT_NONCE    32    /* bytes of a nonce */
/* --expires SEC: at most a year ahead; a grant further ahead is refused
 * (a clock set wrong when it was made). */
#define SBX_GRANT_MAX_EXPIRY (366ULL * 24 * 3600)
#define SBX_GRANT_KEY_MIN  32    /* bytes: a key shorter than the MAC is refused */
#define SBX_GRANT_KEY_MAX  4096

/* The fields, as bits of a "differs" mask. */
enum {
	SBX_GRANT_ARGV    = 1,
	SBX_GRANT_CWD     = 2,
	SBX_GRANT_ENV     = 4,
	SBX_GRANT_STDIN   = 8,
	SBX_GRANT_TIMEOUT = 16,
	/* kind plan: the groups of the plan, in the order of the text form */
	SBX_GRANT_IDENTITY = 32,
	SBX_GRANT_MOUNTS   = 64,
	SBX_GRANT_DENY     = 128,
	SBX_GRANT_NET      = 256,
	SBX_GRANT_FILTERS  = 512,
	SBX_GRANT_LANDLOCK = 1024,
	SBX_GRANT_POLICY   = 2048,
	SBX_GRANT_PROGRAM  = 4096,
	SBX_GRANT_LAST     = SBX_GRANT_PROGRAM,
};
#define SBX_GRANT_NGROUPS 8   /* identity .. program */

enum sbx_grant_kind { SBX_GRANT_KIND_PLAN = 1, SBX_GRANT_KIND_ARGV };
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
	int have_plan;         /* plan: the digests of the run's plan document */
	unsigned char plan[SBX_GRANT_NGROUPS][SBX_SHA256_LEN];
};

struct sbx_grant {
	enum sbx_grant_kind kind;
	uint64_t expires;      /* unix seconds; 0: never */
	int have_nonce;
	unsigned char nonce[SBX_GRANT_NONCE];
	unsigned char argv[SBX_SHA256_LEN];
	unsigned char cwd[SBX_SHA256_LEN];
	unsigned char env[SBX_SHA256_LEN];
	unsigned char stdin_sha[SBX_SHA256_LEN];
	uint64_t timeout_ms;
	unsigned char plan[SBX_GRANT_NGROUPS][SBX_SHA256_LEN]; /* kind plan */
	unsigned char mac[SBX_SHA256_LEN];
};

/* How a verifier uses a grant: where single-use nonces are recorded
 * (nonce_dirfd: an O_DIRECTORY fd the caller checked, -1 none), and
 * whether to record (0: a dry run, which only checks the nonce is
 * unused). */
struct sbx_grant_use {
	int nonce_dirfd;
	const char *nonce_dir; /* for messages */
	int record;
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

/* The field digests of a run (kind, expiry, nonce and MAC left alone);
 * the plan digests too when in->have_plan. */
void sbx_grant_fields(const struct sbx_grant_input *in, struct sbx_grant *g);

/* The one definition of what a plan grant binds (grant_doc.c): doc is the
 * plan document of sbx-ns --dry-run, parsed (jansson). Every top-level
 * key must be known: the eight groups' keys, the command's (argv, cwd,
 * env, timeout_ms, bound by their own fields) or the few that describe
 * the plan rather than the sandbox (tool, event, grant_checked, hint);
 * an unknown key is refused, so nothing the plan says goes unbound. Each
 * group's digest is over its keys as canonical JSON (sorted keys, compact,
 * ASCII), after one normalisation: a --tmp-in-workspace bind ("kind":
 * "scratch") loses dev/ino/create, since a dry run cannot know the
 * identity of a directory the run creates. 0, or -1 and a reason. */
struct json_t;
int sbx_grant_plan_groups(struct json_t *doc, unsigned char out[SBX_GRANT_NGROUPS][SBX_SHA256_LEN],
			  const char **why);
/* The same from the document's text (what sbx-ns builds). */
int sbx_grant_plan_text(const char *doc, size_t len,
			unsigned char out[SBX_GRANT_NGROUPS][SBX_SHA256_LEN], const char **why);
/* Compute g->mac over g's fields under key. */
void sbx_grant_sign(struct sbx_grant *g, const struct sbx_grant_key *key);

/* The text form; returns its length (always < SBX_GRANT_MAX), out must
 * hold SBX_GRANT_MAX bytes. */
size_t sbx_grant_format(const struct sbx_grant *g, char *out);

/* Strict parse of the text form. Returns 0, or -1 and a static reason
 * ("line 3: expected 'cwd='"). */
int sbx_grant_parse(const char *buf, size_t len, struct sbx_grant *g, const char **why);

/* 0: the grant is authentic and fits the run. SBX_GRANT_FORGED: the MAC
 * does not verify under key. Otherwise the mask of fields that differ
 * (a plan grant against a run without a plan: every plan group). */
int sbx_grant_verify(const struct sbx_grant *g, const struct sbx_grant_key *key,
		     const struct sbx_grant_input *in);

/* "argv", "cwd", "env", "stdin", "timeout", "identity", "mounts",
 * "deny-write", "net", "filters", "landlock", "policy", "program" for one
 * bit; for a mask, the names joined with ", " into out (n >= 128 is
 * always enough). */
const char *sbx_grant_field_name(int bit);
void sbx_grant_describe(int mask, char *out, size_t n);

/* The verifier's whole step, for a tool: read the grant from fd (to EOF,
 * at most SBX_GRANT_MAX bytes; the fd is closed), parse, authenticate,
 * check the expiry against now (unix seconds), compare, and record a
 * nonce under use; return its kind, else die 102 with "grant refused:
 * REASON" (111 when the fd or the nonce directory cannot be used):
 *   grant refused: malformed (line 3: expected 'kind=')
 *   grant refused: an sbx-grant-v1 grant ... reissue it: sbx-check grant ...
 *   grant refused: the signature does not verify (forged, or made with another key)
 *   grant refused: expired at 2026-12-02T02:00:00Z ...
 *   grant refused: argv, mounts differ from the grant
 *   grant refused: single-use and no --grant-nonce-dir ...
 *   grant refused: already used ... */
enum sbx_grant_kind sbx_grant_enforce(int fd, const struct sbx_grant_key *key,
				      const struct sbx_grant_input *in,
				      const struct sbx_grant_use *use, uint64_t now);

/* sbx_grant_enforce in its two halves, for a verifier that must not die
 * of a refusal (a living sandbox checks a grant per request):
 *   sbx_grant_read: the grant's text from fd, to EOF, at most
 *     SBX_GRANT_MAX + 1 bytes (one more than a grant: an oversized one is
 *     refused as such, not cut); the fd is closed; dies 100 when the
 *     writer never closes its end (SBX_FD_NO_EOF), 111 when it fails;
 *   sbx_grant_check: every step after it (parse, authenticate, expiry,
 *     compare, nonce) on text[0..len); returns the kind, or 0 with the
 *     exit code (102 refused, 111 the nonce directory failed) and the
 *     message sbx_grant_enforce dies with in *no. */
#define SBX_GRANT_WHY_MAX 4608   /* a refusal's message: it may name a nonce directory */
struct sbx_grant_refusal {
	int code;
	char msg[SBX_GRANT_WHY_MAX];
};
size_t sbx_grant_read(int fd, char buf[SBX_GRANT_MAX + 1]);
int sbx_grant_check(const char *text, size_t len, const struct sbx_grant_key *key,
		    const struct sbx_grant_input *in, const struct sbx_grant_use *use, uint64_t now,
		    struct sbx_grant_refusal *no);

/* t (seconds since 1970) as refusals write it: 2026-12-02T02:00:00Z. */
void sbx_grant_utc(uint64_t t, char *out, size_t n);

/* A fresh nonce for g (getrandom); -1 with errno. */
int sbx_grant_new_nonce(struct sbx_grant *g);

/* Single-use grants' records under a nonce directory (grantnonce.c has
 * the layout): the record of a grant that expires names its expiry and
 * is indexed by the hour it expires in, so that a verifying run removes
 * up to SBX_GRANT_PRUNE_RUN records of grants that expired (bounded work
 * each time, however many there are) and sbx-check grant --prune removes
 * all of them; an hour goes SBX_GRANT_PRUNE_SLACK seconds after its end. */
#define SBX_GRANT_NONCE_HOUR  3600
#define SBX_GRANT_PRUNE_SLACK 3600
#define SBX_GRANT_PRUNE_RUN   16

/* DIR as a nonce directory (--grant-nonce-dir, --prune) at parse time:
 * absolute and canonical, not /; else dies 100 naming opt. */
const char *sbx_grant_nonce_path(const char *opt, const char *arg);
/* Opened from / one component at a time without following a symlink,
 * every directory on the way owned by root or caller_uid and not writable
 * by group or others unless sticky, DIR itself not writable by them at
 * all: its fd (O_RDONLY|O_DIRECTORY), else dies (102 unsafe, 111). */
int sbx_grant_nonce_open(const char *dir, unsigned caller_uid);
/* Record nonce as used now, for a grant expiring at expires (0: never):
 * 0, 1 if it was recorded before, -1 with errno. */
int sbx_grant_nonce_put(int dirfd, const unsigned char nonce[SBX_GRANT_NONCE], uint64_t expires, uint64_t now);
/* The records of every grant expiring at or before *mark may be gone
 * (0: none pruned yet): 0, or -1 with errno (EINVAL: the file that says
 * it is not one line "pruned SECONDS"). */
int sbx_grant_nonce_pruned(int dirfd, uint64_t *mark);
/* How to mend that file (a verifier and sbx-check grant --prune say so). */
#define SBX_GRANT_MARK_FIX "write one line 'pruned SECONDS' there, SECONDS the latest expiry ever " \
	"pruned or later (two hours ago is, on a clock never set back)"
/* Remove the records of grants that expired (their hour ended
 * SBX_GRANT_PRUNE_SLACK before now): at most max index entries looked at,
 * or with all every record of the directory read (the ones the index
 * missed, and the counts of what stays). 0, or -1 with errno and
 * out->bad naming what failed, relative to DIR. */
struct sbx_grant_prune {
	uint64_t removed;
	uint64_t live, never, unknown; /* kept: not expired by upto, never expiring, expiry unreadable */
	uint64_t upto;                 /* records of grants expiring at or before this may go */
	char bad[80];
};
int sbx_grant_nonce_prune(int dirfd, uint64_t now, uint64_t max, int all, struct sbx_grant_prune *out);

/* Stdin for a granted run: copy everything from fd (to EOF) into a sealed
 * memfd (no write, grow or shrink: the bytes hashed are the bytes the
 * command reads), hashing as it goes. Returns the memfd (close-on-exec,
 * offset 0) and the digest, or -1 with errno (EFBIG when more than max
 * bytes arrive). The caller dup2()s it onto 0 for the command. */
int sbx_grant_stdin(int fd, uint64_t max, unsigned char sha[SBX_SHA256_LEN]);

/* The most a granted command's stdin may be, for a one-shot run and for
 * each command of a living sandbox alike (the verifier holds it all in
 * memory before anything runs: an endless stdin must end somewhere), and
 * the refusal (100) each of them gives when more arrives; sbx-check grant
 * refuses a --stdin-file above it (a grant that could never run). */
#define SBX_GRANT_STDIN_MIB 64
#define SBX_GRANT_STDIN_MAX ((uint64_t)SBX_GRANT_STDIN_MIB << 20)
#define SBX_GRANT_STR_(x) #x
#define SBX_GRANT_STR(x) SBX_GRANT_STR_(x)
#define SBX_GRANT_STDIN_WHY "larger than " SBX_GRANT_STR(SBX_GRANT_STDIN_MIB) " MiB, the most sbx-ns " \
	"reads for a granted command (its grant binds every byte): give larger input as a file the command opens"
#define SBX_GRANT_STDIN_BIG "--grant-fd: stdin is " SBX_GRANT_STDIN_WHY

#endif

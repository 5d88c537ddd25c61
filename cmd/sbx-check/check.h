/* sbx-check: one report per run. Every mode collects items (one per
 * capability, tool or proof), then prints them as text lines or as one JSON
 * document; the exit code follows from the worst item (see report.c). */
#ifndef SBX_CHECK_H
#define SBX_CHECK_H

#include <stddef.h>
#include <stdint.h>

enum chk_status {
	CHK_OK,
	CHK_NOTCONF,     /* not asked for: not checked, never counted as ok */
	CHK_ABSENT,      /* a tool that is not installed (and no manifest lists) */
	CHK_MISSING,     /* the host could have it, an administrator must act */
	CHK_UNSUPPORTED, /* this host or tool set cannot do it */
	CHK_FAIL,        /* a proof showed the sandbox did not hold */
	CHK_UNSAFE,      /* a tool's file could be replaced by someone else */
	CHK_CORRUPT,     /* a tool differs from the installed manifest */
};

/* What a missing item costs: it decides the exit code. */
enum chk_class { CLS_ISOLATION, CLS_LIMITS, CLS_EXTRA, CLS_TOOL };

#define CHK_MAXFIELDS 14

struct chk_field {
	const char *key;
	char val[128];
	int num;         /* print without quotes in JSON */
};

struct chk_item {
	char name[32];
	enum chk_class cls;
	enum chk_status st;
	char detail[768];
	char fix[384];
	struct chk_field f[CHK_MAXFIELDS];
	int nf;
};

struct chk_report {
	const char *mode;
	struct chk_item *items;
	size_t n, cap;
};

struct chk_item *chk_add(struct chk_report *r, enum chk_class cls, const char *name,
			 enum chk_status st, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void chk_fix(struct chk_item *it, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void chk_field(struct chk_item *it, const char *key, int num, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Appends to a NUL-terminated buffer, truncating silently: evidence, not data. */
void chk_appendf(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prints the report (text or JSON) and returns the exit code. */
int chk_finish(struct chk_report *r, int json);

struct chk_opts {
	const char *cgroup_root;
	const char *quota_ws;
	const char *ns;        /* proof: the sbx-ns to run (default: beside sbx-check) */
	const char *manifest;  /* tools: the manifest (default: ../share/sbx/manifest) */
	const char *baseline;  /* host: the policy baseline the tools are given */
	int tier;              /* proof: 1 for the Landlock tier (--tier landlock) */
	int json;
};

/* The directory holding this sbx-check binary (readlink /proc/self/exe). */
void chk_bindir(char *out, size_t n);
/* What sbx-check --help prints (main.c). */
extern const char chk_usage[];

void chk_host(struct chk_report *r, const struct chk_opts *o);
/* steps.c: the isolation items (sbx-ns's steps, tried), and the rewrite of
 * host-level fixes into a container's settings when running in one. */
void chk_steps(struct chk_report *r);
void chk_container_fixes(struct chk_report *r);
/* An item for a probed call that failed with e: named as the seccomp
 * filter's refusal when it is one, else with kernel_fix. */
void chk_refused(struct chk_report *r, enum chk_class cls, const char *name, int e,
		 const char *what, const char *kernel_fix);
/* host_mounts.c: the mount steps sbx-ns will take, by the interface it will use. */
void chk_host_mounts(struct chk_report *r);
void chk_host_changes(struct chk_report *r);
/* host_apparmor.c: Ubuntu's AppArmor user namespace restriction and the sbx-ns profile. */
void chk_host_apparmor(struct chk_report *r);
/* host_tiers.c: the isolation tiers this host offers (after userns and mounts). */
void chk_host_tiers(struct chk_report *r);
void chk_tools(struct chk_report *r, const struct chk_opts *o, char **paths, int n);
void chk_proof(struct chk_report *r, const struct chk_opts *o);

/* The line the probe's write action appends. */
#define CHK_PROBE_WRITTEN "written by sbx-check --probe\n"

/* The hidden probe mode run inside the sandbox: `sbx-check --probe ACTION ARG`. */
int chk_probe(int argc, char **argv);

#endif

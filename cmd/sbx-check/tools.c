/* `sbx-check tools`: the identity and safety of each sbx binary. A tool is
 * pinned by path, device and inode, size and SHA-256, all read through one
 * fd so that the answers describe one file; it is unsafe when someone other
 * than root or the caller could replace it (owner, group/world-writable
 * file or directory, a second hard link, a symlink), and corrupt when its
 * hash differs from the manifest: the one `make install` recorded, or a
 * release's SHA256SUMS (`make dist`), whose line for the release tarball
 * (a name ending in .tar.gz) names no tool and is passed over. */
#include "check.h"
#include "die.h"
#include "digest.h"
#include "exitcodes.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static const char *const known[] = {
	"sbx-cgroup", "sbx-quota", "sbx-ns", "sbx-broker", "sbx-seatbelt", "sbx-check",
};
#define NKNOWN (sizeof known / sizeof known[0])
#define MAXMANIFEST 64

struct manifest {
	int loaded;
	size_t n;
	struct { char name[64]; char hex[SBX_SHA256_HEX]; int seen; } e[MAXMANIFEST];
};

/* Safe = a regular file owned by root or the caller, not writable by group
 * or others; problems are appended to why. */
static void owner_mode(const struct stat *st, const char *what, char *why, size_t n)
{

	if (st->st_uid != 0 && st->st_uid != getuid()) {
		chk_appendf(why, n, "%s%s owned by uid %u", why[0] ? ", " : "", what,
			 (unsigned)st->st_uid);
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		chk_appendf(why, n, "%s%s is group/world-writable (mode %04o)", why[0] ? ", " : "",
			 what, (unsigned)(st->st_mode & 07777));
	}
}

static int load_manifest(struct chk_report *r, struct manifest *m, const char *path,
			 int explicit)
{
	char line[512], why[256] = "";
	struct chk_item *it;
	struct stat st;
	FILE *f;
	int fd, ln = 0;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (!explicit && errno == ENOENT) {
			it = chk_add(r, CLS_TOOL, "manifest", CHK_NOTCONF,
				     "no manifest at %s: tools are checked but not pinned", path);
			chk_fix(it, "install with `make install`, which records one");
			return 0;
		}
		chk_add(r, CLS_TOOL, "manifest", CHK_CORRUPT, "cannot open %s: %s", path,
			strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		chk_add(r, CLS_TOOL, "manifest", CHK_CORRUPT, "%s is not a regular file", path);
		close(fd);
		return -1;
	}
	owner_mode(&st, path, why, sizeof why);
	if (why[0]) {
		chk_add(r, CLS_TOOL, "manifest", CHK_UNSAFE, "%s", why);
		close(fd);
		return -1;
	}
	f = fdopen(fd, "r");
	if (!f)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read %s", path);
	while (fgets(line, sizeof line, f)) {
		char *sp = line + 64;
		size_t l = strlen(line), i;
		ln++;
		if (l && line[l - 1] == '\n')
			line[--l] = '\0';
		if (!l)
			continue;
		for (i = 0; i < 64 && ((line[i] >= '0' && line[i] <= '9') ||
				       (line[i] >= 'a' && line[i] <= 'f')); i++)
			;
		if (i != 64 || l < 67 || sp[0] != ' ' || (sp[1] != ' ' && sp[1] != '*') ||
		    strchr(sp + 2, '/') || strlen(sp + 2) >= sizeof m->e[0].name ||
		    m->n == MAXMANIFEST) {
			chk_add(r, CLS_TOOL, "manifest", CHK_CORRUPT,
				"%s line %d is not 'SHA256  NAME'", path, ln);
			fclose(f);
			return -1;
		}
		if (l > 67 + 7 && !strcmp(line + l - 7, ".tar.gz"))
			continue;
		memcpy(m->e[m->n].hex, line, 64);
		m->e[m->n].hex[64] = '\0';
		snprintf(m->e[m->n].name, sizeof m->e[0].name, "%s", sp + 2);
		m->n++;
	}
	fclose(f);
	m->loaded = 1;
	chk_add(r, CLS_TOOL, "manifest", CHK_OK, "%s lists %zu tools", path, m->n);
	return 0;
}

/* In linkage(): where the program-header table of an ELF header of either
 * class lies (off, size, num), or "not ELF" when the header cannot be read
 * or its entries are smaller than the class's. */
#define PH_TABLE(EHDR, PHDR) do {                                              \
		EHDR h;                                                        \
		if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h)           \
			return "not ELF";                                      \
		off = h.e_phoff, size = h.e_phentsize, num = h.e_phnum;        \
		if (size < sizeof(PHDR))                                       \
			return "not ELF";                                      \
	} while (0)

/* "static", "dynamic" or "not ELF", from the program headers: a static
 * binary has neither PT_INTERP nor PT_DYNAMIC. */
static const char *linkage(int fd)
{
	unsigned char id[EI_NIDENT];
	uint64_t off;
	unsigned size, num, i;

	if (pread(fd, id, sizeof id, 0) != (ssize_t)sizeof id || memcmp(id, ELFMAG, SELFMAG))
		return "not ELF";
	if (id[EI_CLASS] == ELFCLASS64)
		PH_TABLE(Elf64_Ehdr, Elf64_Phdr);
	else if (id[EI_CLASS] == ELFCLASS32)
		PH_TABLE(Elf32_Ehdr, Elf32_Phdr);
	else
		return "not ELF";
	if (num > 4096)
		return "not ELF";
	for (i = 0; i < num; i++) {
		uint32_t type;
		/* p_type is the first 32-bit word in both classes. */
		if (pread(fd, &type, sizeof type, (off_t)(off + (uint64_t)i * size)) !=
		    (ssize_t)sizeof type)
			return "not ELF";
		if (type == PT_INTERP || type == PT_DYNAMIC)
			return "dynamic";
	}
	return "static";
}

static void one(struct chk_report *r, const char *name, const char *path, struct manifest *m)
{
	char why[768] = "", hex[SBX_SHA256_HEX], dir[PATH_MAX];
	unsigned char d[SBX_SHA256_LEN];
	struct chk_item *it;
	struct stat ls, st, ds;
	const char *lk;
	size_t k, me = SIZE_MAX;
	int fd;

	for (k = 0; m->loaded && k < m->n; k++)
		if (!strcmp(m->e[k].name, name))
			me = k;
	if (me != SIZE_MAX)
		m->e[me].seen = 1;
	if (lstat(path, &ls) < 0) {
		if (errno == ENOENT && me == SIZE_MAX)
			chk_add(r, CLS_TOOL, name, CHK_ABSENT, "not installed at %s", path);
		else
			chk_add(r, CLS_TOOL, name, me == SIZE_MAX ? CHK_UNSAFE : CHK_CORRUPT,
				"%s: %s%s", path, strerror(errno),
				me == SIZE_MAX ? "" : " (the manifest lists it)");
		return;
	}
	if (S_ISLNK(ls.st_mode)) {
		chk_add(r, CLS_TOOL, name, CHK_UNSAFE, "%s is a symlink", path);
		return;
	}
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0) {
		chk_add(r, CLS_TOOL, name, CHK_UNSAFE, "cannot open %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	if (st.st_dev != ls.st_dev || st.st_ino != ls.st_ino) {
		chk_add(r, CLS_TOOL, name, CHK_UNSAFE, "%s was replaced while being checked", path);
		close(fd);
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		chk_add(r, CLS_TOOL, name, CHK_UNSAFE, "%s is not a regular file", path);
		close(fd);
		return;
	}
	lk = linkage(fd);
	if (sbx_sha256_fd(fd, d) < 0)
		sbx_die_errno(SBX_EXIT_SYS, "unable to read %s", path);
	close(fd);
	sbx_digest_hex(d, sizeof d, hex);

	owner_mode(&st, "file", why, sizeof why);
	if (st.st_nlink != 1) {
		chk_appendf(why, sizeof why, "%s%lu hard links", why[0] ? ", " : "",
			 (unsigned long)st.st_nlink);
	}
	if (st.st_mode & (S_ISUID | S_ISGID)) {
		chk_appendf(why, sizeof why, "%ssetuid/setgid bit set", why[0] ? ", " : "");
	}
	if (!(st.st_mode & S_IXUSR)) {
		chk_appendf(why, sizeof why, "%snot executable", why[0] ? ", " : "");
	}
	if (!strcmp(lk, "not ELF")) {
		chk_appendf(why, sizeof why, "%snot an ELF executable", why[0] ? ", " : "");
	}
	snprintf(dir, sizeof dir, "%s", path);
	if (stat(dirname(dir), &ds) == 0 && (ds.st_mode & (S_IWGRP | S_IWOTH)) &&
	    !(ds.st_mode & S_ISVTX)) {
		chk_appendf(why, sizeof why, "%sdirectory %s is group/world-writable",
			    why[0] ? ", " : "", dir);
	}

	if (me != SIZE_MAX && strcmp(m->e[me].hex, hex))
		it = chk_add(r, CLS_TOOL, name, CHK_CORRUPT, "SHA-256 differs from the manifest (%s)%s%s",
			     m->e[me].hex, why[0] ? "; also " : "", why);
	else if (m->loaded && me == SIZE_MAX)
		it = chk_add(r, CLS_TOOL, name, CHK_CORRUPT, "not listed in the manifest%s%s",
			     why[0] ? "; also " : "", why);
	else if (why[0])
		it = chk_add(r, CLS_TOOL, name, CHK_UNSAFE, "%s", why);
	else
		it = chk_add(r, CLS_TOOL, name, CHK_OK, "%s", "");
	chk_field(it, "path", 0, "%s", path);
	chk_field(it, "dev", 0, "%u:%u", major(st.st_dev), minor(st.st_dev));
	chk_field(it, "ino", 1, "%llu", (unsigned long long)st.st_ino);
	chk_field(it, "size", 1, "%lld", (long long)st.st_size);
	chk_field(it, "sha256", 0, "%s", hex);
	chk_field(it, "linkage", 0, "%s", lk);
	chk_field(it, "links", 1, "%lu", (unsigned long)st.st_nlink);
	chk_field(it, "owner", 1, "%u", (unsigned)st.st_uid);
	chk_field(it, "mode", 0, "%04o", (unsigned)(st.st_mode & 07777));
	chk_field(it, "manifest", 0, "%s", !m->loaded ? "none" : me == SIZE_MAX ? "unlisted" :
		  strcmp(m->e[me].hex, hex) ? "mismatch" : "intact");
}

void chk_tools(struct chk_report *r, const struct chk_opts *o, char **paths, int n)
{
	char bindir[PATH_MAX], p[PATH_MAX + 32], mp[PATH_MAX + 32];
	struct manifest *m = sbx_need(calloc(1, sizeof *m));
	int i;

	chk_bindir(bindir, sizeof bindir);
	if (o->manifest) {
		load_manifest(r, m, o->manifest, 1);
	} else if (!n) {
		snprintf(mp, sizeof mp, "%s/../share/sbx/manifest", bindir);
		load_manifest(r, m, mp, 0);
	}
	if (n) {
		for (i = 0; i < n; i++) {
			char copy[PATH_MAX];
			snprintf(copy, sizeof copy, "%s", paths[i]);
			one(r, basename(copy), paths[i], m);
		}
	} else {
		for (size_t k = 0; k < NKNOWN; k++) {
			snprintf(p, sizeof p, "%s/%s", bindir, known[k]);
			one(r, known[k], p, m);
		}
	}
	/* A listed tool that is not one of the known names is checked too: the
	 * manifest, not this list, says what was installed. */
	for (size_t k = 0; !n && m->loaded && k < m->n; k++)
		if (!m->e[k].seen) {
			snprintf(p, sizeof p, "%s/%s", bindir, m->e[k].name);
			one(r, m->e[k].name, p, m);
		}
	free(m);
}

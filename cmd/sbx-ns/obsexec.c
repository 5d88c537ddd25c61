/* --observe: the programs the command's processes execute.
 *
 * Only when observing, the command's filter gets a prefix of five
 * instructions (ns_exec_filter) that sends execve and execveat of the
 * x86_64 ABI to the supervisor as user notifications; any other call, and
 * any other ABI, goes on into the filter unchanged. A run that is not
 * observed loads the very program it loads today: nothing per system call.
 *
 * The supervisor (the outer sbx-ns) reads the name from the caller's
 * memory, looks it up from outside in the caller's own root as the kernel
 * will (its symlinks followed there, never in the host's; a relative name
 * from its working directory or directory fd; AT_EMPTY_PATH the fd
 * itself), opens what it finds, and lets the call go on
 * (SECCOMP_USER_NOTIF_FLAG_CONTINUE): the kernel decides, this only
 * records. The file opened is then hashed (SHA-256, once per device, inode,
 * size and times). A name that changes between the look and the kernel's
 * own lookup only changes the record; a name that finds nothing, or no
 * executable regular file, is not recorded (the call will fail). Whether
 * the kernel then ran the file (the call can still fail: a bad ELF, a
 * noexec mount) is not seen. A script's interpreter, which the kernel
 * loads itself from the #! line, is recorded too, marked "by":"#!". */
#include "ns.h"

#include "die.h"
#include "digest.h"
#include "json.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXEC_MAX 1024      /* distinct programs recorded */

struct exec_ent {
	char *path;            /* as the caller named it, made absolute in its view */
	int interp;            /* named by a script's #! line */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
	int hashed;            /* 1: sha; -1: unreadable */
	unsigned char sha[SBX_SHA256_LEN];
	uint64_t count;
};

struct ns_exec_log {
	struct exec_ent ent[EXEC_MAX];
	size_t n;
	uint64_t more;         /* executions of programs past EXEC_MAX */
};

size_t ns_exec_filter(const struct ns_args *a, struct sock_filter *out, size_t max)
{
	const struct sock_filter pre[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execve, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execveat, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
	};

	if (!ns_observe_exec_on(a) || max < sizeof pre / sizeof *pre)
		return 0;
	memcpy(out, pre, sizeof pre);
	return sizeof pre / sizeof *pre;
}

int ns_exec_watched(const struct ns_run *r, int nr)
{
	return r->x.execs && (nr == SYS_execve || nr == SYS_execveat);
}

struct ns_exec_log *ns_exec_log_new(void)
{
	return sbx_need(calloc(1, sizeof(struct ns_exec_log)));
}

void ns_exec_log_free(struct ns_exec_log *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->ent[i].path);
	free(l);
}

static int same_file(const struct exec_ent *e, const struct stat *st)
{
	return e->dev == st->st_dev && e->ino == st->st_ino && e->size == st->st_size &&
	       e->mtime.tv_sec == st->st_mtim.tv_sec && e->mtime.tv_nsec == st->st_mtim.tv_nsec &&
	       e->ctime.tv_sec == st->st_ctim.tv_sec && e->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

/* fd (O_PATH) executed under name: counted, and hashed when new. */
static void record(struct ns_exec_log *l, int fd, const char *name, int interp)
{
	struct exec_ent *e = NULL, *hash_of = NULL;
	struct stat st;
	char link[64];
	int rd;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111))
		return;
	for (size_t i = 0; i < l->n; i++) {
		if (!same_file(&l->ent[i], &st))
			continue;
		hash_of = &l->ent[i];
		if (!strcmp(l->ent[i].path, name) && l->ent[i].interp == interp)
			e = &l->ent[i];
	}
	if (!e && l->n == EXEC_MAX) {
		l->more++;
		return;
	}
	if (!e) {
		e = &l->ent[l->n++];
		e->path = sbx_need(strdup(name));
		e->interp = interp;
		e->dev = st.st_dev;
		e->ino = st.st_ino;
		e->size = st.st_size;
		e->mtime = st.st_mtim;
		e->ctime = st.st_ctim;
		if (hash_of) {
			e->hashed = hash_of->hashed;
			memcpy(e->sha, hash_of->sha, sizeof e->sha);
		} else {
			snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
			rd = open(link, O_RDONLY | O_CLOEXEC);
			e->hashed = rd >= 0 && sbx_sha256_fd(rd, e->sha) == 0 ? 1 : -1;
			if (rd >= 0)
				close(rd);
		}
	}
	e->count++;
}

/* The interpreter a script names on its #! line, looked up as the
 * kernel does: the path as written, in the caller's root. */
static void interpreter(struct ns_exec_log *l, struct ns_call_view *v, int fd)
{
	char link[64], head[258], *p, *end;
	ssize_t n;
	int rd, f;

	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	if ((rd = open(link, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	n = pread(rd, head, sizeof head - 1, 0);
	close(rd);
	if (n < 3 || head[0] != '#' || head[1] != '!')
		return;
	head[n] = '\0';
	for (p = head + 2; *p == ' ' || *p == '\t'; p++)
		;
	end = p + strcspn(p, " \t\n");
	if (end == p || !*end)
		return;
	*end = '\0';
	if ((f = ns_call_lookup(v, AT_FDCWD, p, NS_LOOK_FOLLOW)) >= 0) {
		record(l, f, p, 1);
		close(f);
	}
}

void ns_exec_seen(const struct ns_run *r, int fd, const struct seccomp_notif *req)
{
	struct seccomp_notif_resp resp = { .id = req->id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE };
	struct ns_call_view v = { .pid = (pid_t)req->pid, .root = -1 };
	int at = req->data.nr == SYS_execveat, dirfd = at ? (int)req->data.args[0] : AT_FDCWD;
	int flags = at ? (int)req->data.args[4] : 0, f = -1;
	char path[4096], name[8192], link[64];

	if (ns_call_read_str(v.pid, at ? req->data.args[1] : req->data.args[0], path, sizeof path) == 0) {
		snprintf(link, sizeof link, "/proc/%d/root", (int)v.pid);
		v.root = open(link, O_PATH | O_DIRECTORY | O_CLOEXEC);
		/* The caller is still the one that made the call (its pid was
		 * not reused) once its root is held. */
		if (v.root >= 0 && ioctl(fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) == 0) {
			if (!path[0] && (flags & AT_EMPTY_PATH)) {
				snprintf(link, sizeof link, "/proc/%d/fd/%d", (int)v.pid, dirfd);
				f = open(link, O_PATH | O_CLOEXEC);
				ssize_t k = readlink(link, name, sizeof name - 1);
				name[k > 0 ? k : 0] = '\0';
			} else {
				f = ns_call_lookup(&v, dirfd, path,
						   flags & AT_SYMLINK_NOFOLLOW ? NS_LOOK_NAME : NS_LOOK_FOLLOW);
				if (path[0] == '/' || !v.dir[0])
					snprintf(name, sizeof name, "%s", path);
				else
					snprintf(name, sizeof name, "%s%s%s", v.dir, strcmp(v.dir, "/") ? "/" : "", path);
			}
		}
	}
	/* ENOENT here when the caller is gone: nothing to answer. */
	ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	if (f >= 0) {
		record(r->x.execs, f, name, 0);
		interpreter(r->x.execs, &v, f);
		close(f);
	}
	if (v.root >= 0)
		close(v.root);
}

void ns_exec_log_lines(struct ns_exec_log *l, void (*put)(void *ctx, struct sbx_json *j), void *ctx)
{
	char hex[SBX_SHA256_HEX];
	struct sbx_json j;

	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++) {
		const struct exec_ent *e = &l->ent[i];
		sbx_json_begin(&j, NULL, "exec");
		sbx_json_str(&j, "path", e->path);
		if (e->interp)
			sbx_json_str(&j, "by", "#!");
		sbx_json_uint(&j, "dev", (uint64_t)e->dev);
		sbx_json_uint(&j, "ino", (uint64_t)e->ino);
		sbx_json_uint(&j, "size", (uint64_t)e->size);
		if (e->hashed == 1) {
			sbx_digest_hex(e->sha, SBX_SHA256_LEN, hex);
			sbx_json_str(&j, "sha256", hex);
		} else {
			sbx_json_null(&j, "sha256");
		}
		sbx_json_uint(&j, "count", e->count);
		put(ctx, &j);
	}
	if (l->more) {
		sbx_json_begin(&j, NULL, "exec");
		sbx_json_uint(&j, "more", l->more);
		put(ctx, &j);
	}
}

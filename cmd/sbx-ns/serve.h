/* What serve.c (the server's life: its socket, the loop, pid 1's reports,
 * the stop) and servereq.c (what clients ask: run, plan, jobs, wait, kill,
 * connect, stop) share: the jobs, the clients, the server's state. */
#ifndef SBX_NS_SERVE_H
#define SBX_NS_SERVE_H

#include "ns.h"

#ifndef F_GET_SEALS
#define F_GET_SEALS 1034
#endif
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif

#define READY_RETRY_MS 20
#define NS_CONN_ID 0x80000000u    /* a dial's slot, never a job id */
#define JOB_SHOW 120             /* bytes of a job's argv in the list */

enum job_state { J_FREE = 0, J_STARTING, J_RUNNING, J_ENDED };

struct job {
	enum job_state state;
	uint32_t id;
	pid_t pid;               /* in the sandbox's pid namespace */
	int status;              /* wait status once ended */
	int code;                /* sbx's outcome once ended */
	int client;              /* index of the attached client, or -1 */
	int detached;
	int timed_out;
	int cg;                  /* it has a cgroup of its own (servecg.c) */
	uint64_t deadline;       /* 0: none */
	char show[JOB_SHOW];     /* argv, escaped, for the list */
	int grant;               /* the kind of grant it runs under (SBX_GRANT_KIND_*), 0 none */
};

struct client {
	int fd;                  /* -1: free */
	uid_t uid;
	uint32_t job;            /* the job it runs or waits for, 0 none */
	int stop;                /* it asked for the stop */
	int refused;             /* another uid: its first message gets the refusal */
};

struct ns_serve {
	int lfd;                 /* the listening socket, -1 before ready */
	int dirfd;               /* its directory */
	char *path, *name;
	int ready;
	int stopping, stop_code;
	int init_id;             /* the first program's job, 0 none */
	uint64_t ready_deadline, ready_retry;
	int ready_asked;
	struct job jobs[NS_SERVE_JOBS];
	struct client cl[NS_SERVE_CLIENTS];
	uint32_t next_id;        /* jobs: 1, 2, ... */
	uint32_t next_conn;      /* --connect's dials, numbered apart (NS_CONN_ID) */
	int chan;                /* the outer's end of the channel to pid 1 */
	int pid1_gone;
	int up;                  /* pid 1 said the sandbox is set up */
};

/* serve.c */
int srv_say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void srv_refuse(struct ns_serve *s, int ci, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void srv_status_line(const struct ns_run *r, const char *event, const struct job *j, int code);
struct job *srv_find_job(struct ns_serve *s, uint32_t id);
struct job *srv_new_job(struct ns_serve *s);
void srv_drop_client(struct ns_serve *s, int ci);
void srv_to_pid1(struct ns_run *r, const struct ns_wire *w, const char *strs, size_t len, const int *fds,
		 size_t nfds);
/* servereq.c */
const char *srv_key(const char *word, const char *k);
void srv_start(struct ns_run *r, int ci, char **words, size_t nw, const int *fds, size_t nfds, int plan);
void srv_from_client(struct ns_run *r, int ci);

#endif

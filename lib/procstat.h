/* The fields of /proc/PID/stat that sbx reads (Linux). */
#ifndef SBX_PROCSTAT_H
#define SBX_PROCSTAT_H

struct sbx_proc_stat {
	char state;                    /* R, S, D, Z, X, ... */
	int ppid;
	unsigned long long utime, stime; /* clock ticks */
	unsigned long long start;      /* clock ticks after boot */
	long long rss;                 /* pages */
};

/* Reads /proc/PID/stat, pid a number or "self": 0, or -1 when the process
 * is gone or the line cannot be read. The command name may hold spaces and
 * ')': the fields are taken after the last ')'. */
int sbx_proc_stat(const char *pid, struct sbx_proc_stat *st);

/* The number of the line "NAME:\tVALUE" of /proc/self/status, in base
 * (16 for the Cap* sets, 10 for Seccomp): 0, or -1 when there is no such
 * line to read. */
int sbx_proc_status(const char *name, int base, unsigned long long *v);

#endif

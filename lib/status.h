/* The --status-fd contract every tool keeps: once the fd is accepted, the
 * run ends with an "event":"exit" line, also when it is refused before
 * anything started (a usage error after the option, a refused check, a
 * failed system call), and a status line that cannot be written is said
 * once on stderr instead of being dropped silently. */
#ifndef SBX_STATUS_H
#define SBX_STATUS_H

/* Parses --status-fd's argument like every fd option and makes it this
 * process's status fd. Returns the fd. */
int sbx_status_opt(const char *arg);

/* This process's status fd, or -1. */
int sbx_status_fd(void);

/* Called by sbx_msg before a fatal or usage exit: writes the exit line
 * {"tool":PROG,"event":"exit","code":CODE,"stage":"setup","error":MSG}
 * unless this process already wrote one. Only the process that accepted
 * the fd writes: a child that dies before exec is its parent's to report. */
void sbx_status_exit_on_die(int code, const char *msg);

/* In a child created in a new pid namespace, first thing: it and its
 * children never write the exit line. There getpid() may equal the
 * owner's pid (sbx-ns as pid 1 of a container clones its sandbox's pid 1,
 * also pid 1), so the pid check alone would let both write one. */
void sbx_status_disown(void);

/* Called by sbx_json_write before it writes a line to fd: 1 once, for the
 * first line the owner of the status fd writes there (that line carries
 * the version, so every run's first line says which sbx made it), else 0.
 * A child, disowned or merely forked, never: the line it would write is
 * its parent's run, whose first line the parent writes (or already did,
 * which a flag copied at fork could not know). */
int sbx_status_first(int fd);

/* Called by sbx_json_write after every write: notes a written exit line,
 * and reports the first failed write to the status fd on stderr. */
void sbx_status_wrote(int fd, int is_exit, int ok, int err);

#endif

/* The process tree the sampled meter tracks, rediscovered each sample.
 * Linux reads /proc/PID/stat of every process (kernels without
 * CONFIG_PROC_CHILDREN, such as this project's hosts, offer no cheaper way
 * to find children); macOS asks proc_listchildpids and proc_pidinfo. */
#ifndef SBX_METER_TREE_H
#define SBX_METER_TREE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sbx_meter_proc {
	pid_t pid;
	uint64_t start;   /* start time: tells a live member from a reused pid */
	uint64_t cpu_ns;  /* user + system time of the process (all threads) */
	uint64_t rss;     /* bytes */
};

struct sbx_meter_tree {
	struct sbx_meter_proc *v;
	size_t n, cap;
	/* Linux: pids known not to be in the tree, sorted. A process outside
	 * the tree can never join it (re-parenting only moves a process
	 * towards init or a subreaper among its own ancestors), so its stat
	 * need not be read again while its pid stays listed in /proc. A pid
	 * that leaves the listing leaves the cache, so a reused pid is read
	 * afresh unless the whole pid space wraps within one interval. */
	pid_t *foreign;
	size_t nforeign;
};

/* Replace t's members with the current tree below root (root excluded): every
 * descendant of root, plus every member of the previous t that is still
 * alive with the same start time, plus their descendants. Zombies are
 * left out. Returns 0, or -1 with errno. */
int sbx_meter_tree_scan(struct sbx_meter_tree *t, pid_t root);

/* The member of t with pid and start, or NULL. */
const struct sbx_meter_proc *sbx_meter_tree_find(const struct sbx_meter_tree *t,
						 pid_t pid, uint64_t start);

/* Send sig to every member; returns how many were signalled. */
size_t sbx_meter_tree_kill(const struct sbx_meter_tree *t, int sig);

void sbx_meter_tree_free(struct sbx_meter_tree *t);

#endif

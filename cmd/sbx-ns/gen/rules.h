/* The seccomp rules of sbx-ns (libseccomp), used at build time only. */
#ifndef SBX_NS_RULES_H
#define SBX_NS_RULES_H

#include <seccomp.h>

/* One filter per network mode: the base filter, and
 *   OFFLINE  socket() of every family denied (--net none)
 *   OPEN     nothing more (--net loopback: the namespace is private)
 *   BROKER   socket() only for AF_INET/AF_INET6 TCP, listen() denied
 *   TRANSPARENT  as BROKER, and UDP sockets too (the sandbox's own DNS port)
 *   HOST     listen() denied
 * and with tier set, the Landlock tier's variant (no IPC namespace): SysV
 * IPC and POSIX message queues denied too. */
/* The action of the calls the supervisor watches without denying them
 * (rename, renameat, renameat2: deny-write's refused renames are reported,
 * notifyren.c): SECCOMP_RET_TRACE with this data, which no other rule
 * returns and the command's process turns into SECCOMP_RET_USER_NOTIF or
 * SECCOMP_RET_ALLOW before loading the filter (notify.c); were it left,
 * the calls would fail with ENOSYS (no tracer), never pass unseen. */
#define NS_WATCH_DATA 0x5b

enum ns_filter { NS_FILTER_OFFLINE, NS_FILTER_OPEN, NS_FILTER_BROKER, NS_FILTER_TRANSPARENT, NS_FILTER_HOST };

scmp_filter_ctx ns_filter_rules(enum ns_filter mode, int tier);


#endif

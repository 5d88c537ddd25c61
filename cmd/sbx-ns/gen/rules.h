/* The seccomp rules of sbx-ns (libseccomp), used at build time only. */
#ifndef SBX_NS_RULES_H
#define SBX_NS_RULES_H

#include <seccomp.h>

/* One filter per network mode: the base filter, and
 *   OFFLINE  socket() of every family denied (--net none)
 *   OPEN     nothing more (--net loopback: the namespace is private)
 *   BROKER   socket() only for AF_INET/AF_INET6 TCP, listen() denied
 *   HOST     listen() denied */
enum ns_filter { NS_FILTER_OFFLINE, NS_FILTER_OPEN, NS_FILTER_BROKER, NS_FILTER_TRANSPARENT, NS_FILTER_HOST };

scmp_filter_ctx ns_filter_rules(enum ns_filter mode);


#endif

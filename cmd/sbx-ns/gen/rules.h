/* The seccomp rules of sbx-ns (libseccomp), used at build time only. */
#ifndef SBX_NS_RULES_H
#define SBX_NS_RULES_H

#include <seccomp.h>

/* The base filter; offline adds socket() for every family. */
scmp_filter_ctx ns_filter_rules(int offline);

#endif

/* The exit-code contract shared by every sbx tool. A caller must be able to
 * tell "the sandbox refused" (100-110) from "the command failed" (its own
 * code, passed through) and from "the command was killed" (128+N). */
#ifndef SBX_EXITCODES_H
#define SBX_EXITCODES_H

#define SBX_EXIT_OK           0
#define SBX_EXIT_USAGE        100 /* bad argv: the command never ran */
#define SBX_EXIT_UNSUPPORTED  101 /* a requested hard limit cannot be enforced on this host */
#define SBX_EXIT_POLICY       102 /* refused by policy or failed verification */
#define SBX_EXIT_LOST         103 /* the sandbox was lost: a limit was exceeded, it was terminated */
#define SBX_EXIT_TIMEOUT      104 /* killed because --timeout expired */
#define SBX_EXIT_OOM          105 /* killed by the out-of-memory killer inside its cgroup */
#define SBX_EXIT_NOISOLATION  106 /* namespaces (isolation) unavailable for this caller */
#define SBX_EXIT_PROOF        107 /* sbx-check: a functional proof failed */
#define SBX_EXIT_CORRUPT      108 /* sbx-check: an sbx binary is not what it should be */
#define SBX_EXIT_SYS          111 /* a system call failed */
#define SBX_EXIT_NOT_REMOVED  112 /* sbx-changes apply: applied whole, the change set not removed */
#define SBX_EXIT_EXEC         126 /* the command was found but could not be executed */
#define SBX_EXIT_NOTFOUND     127 /* the command was not found */
#define SBX_EXIT_SIGNAL_BASE  128 /* 128+N: the command was killed by signal N */

#endif

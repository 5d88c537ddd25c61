/* Passing file descriptors over a Unix socket (SCM_RIGHTS). */
#ifndef SBX_FDPASS_H
#define SBX_FDPASS_H

#include <stddef.h>
#include <sys/types.h>

#include "handoff.h"

#define SBX_FDPASS_MAX SBX_HANDOFF_FDS

/* One sendmsg(2) of buf[0..len) (len > 0) carrying the nfds descriptors
 * (at most SBX_FDPASS_MAX), without SIGPIPE. sendmsg's result. */
ssize_t sbx_send_fds(int sock, const void *buf, size_t len, const int *fds, size_t nfds);

#endif

/* Passing file descriptors over a Unix socket (SCM_RIGHTS). */
#ifndef SBX_FDPASS_H
#define SBX_FDPASS_H

#include <stddef.h>
#include <sys/types.h>

#include "handoff.h"

#define SBX_FDPASS_MAX SBX_HANDOFF_FDS

/* One sendmsg(2) of buf[0..len) (len > 0) carrying the nfds descriptors
 * (at most SBX_FDPASS_MAX, none for a plain message), without SIGPIPE.
 * sendmsg's result. */
ssize_t sbx_send_fds(int sock, const void *buf, size_t len, const int *fds, size_t nfds);

/* Its other half: one recvmsg(2) into buf[0..len) with MSG_CMSG_CLOEXEC
 * and flags (MSG_DONTWAIT...), retried on EINTR. The descriptors that
 * came with it, in order, go to fds, at most max (at most
 * SBX_FDPASS_MAX + 1, so that one too many is seen); any beyond are
 * closed, never left open unseen, and *truncated is set when some were
 * dropped (here or by the kernel). recvmsg's result; *nfds is set in
 * every case (0 on error). */
ssize_t sbx_recv_fds(int sock, void *buf, size_t len, int flags, int *fds, size_t max,
		     size_t *nfds, int *truncated);

#endif

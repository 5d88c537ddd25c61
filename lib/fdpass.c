#include "fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

ssize_t sbx_send_fds(int sock, const void *buf, size_t len, const int *fds, size_t nfds)
{
	char cbuf[CMSG_SPACE(SBX_FDPASS_MAX * sizeof(int))];
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = CMSG_SPACE(nfds * sizeof(int)) };
	struct cmsghdr *cm;

	if (nfds > SBX_FDPASS_MAX || len == 0) {
		errno = EINVAL;
		return -1;
	}
	if (nfds == 0) {
		m.msg_control = NULL;
		m.msg_controllen = 0;
		return sendmsg(sock, &m, MSG_NOSIGNAL);
	}
	memset(cbuf, 0, sizeof cbuf);
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	return sendmsg(sock, &m, MSG_NOSIGNAL);
}

ssize_t sbx_recv_fds(int sock, void *buf, size_t len, int flags, int *fds, size_t max,
		     size_t *nfds, int *truncated)
{
	char cbuf[CMSG_SPACE((SBX_FDPASS_MAX + 1) * sizeof(int))];
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof cbuf };
	ssize_t r;

	*nfds = 0;
	*truncated = 0;
	do
		r = recvmsg(sock, &m, flags | MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return r;
	*truncated = (m.msg_flags & MSG_CTRUNC) != 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
			if (*nfds < max) {
				fds[(*nfds)++] = fd;
			} else {
				close(fd);
				*truncated = 1;
			}
		}
	}
	return r;
}

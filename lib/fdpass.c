#include "fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

ssize_t sbx_send_fds(int sock, const void *buf, size_t len, const int *fds, size_t nfds)
{
	char cbuf[CMSG_SPACE(SBX_FDPASS_MAX * sizeof(int))];
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = CMSG_SPACE(nfds * sizeof(int)) };
	struct cmsghdr *cm;

	if (nfds == 0 || nfds > SBX_FDPASS_MAX || len == 0) {
		errno = EINVAL;
		return -1;
	}
	memset(cbuf, 0, sizeof cbuf);
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	return sendmsg(sock, &m, MSG_NOSIGNAL);
}

/* Symbolic errno names: the tests assert "EDQUOT", not strerror text, which differs
 * between musl ("Quota exceeded") and glibc ("Disk quota exceeded"). */
#include <errno.h>
#include <stdio.h>

static const char *errname(int e)
{
	static char other[32];
	switch (e) {
	case EDQUOT: return "EDQUOT";
	case ENOSPC: return "ENOSPC";
	case EAGAIN: return "EAGAIN";
	case ENOMEM: return "ENOMEM";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case EEXIST: return "EEXIST";
	case ENOENT: return "ENOENT";
	case EFBIG: return "EFBIG";
	case EROFS: return "EROFS";
	case EINTR: return "EINTR";
	case EIO: return "EIO";
	case EMFILE: return "EMFILE";
	case ENFILE: return "ENFILE";
	}
	snprintf(other, sizeof other, "errno %d", e);
	return other;
}

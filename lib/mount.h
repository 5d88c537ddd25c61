/* Bind mounts of checked objects, by either of the kernel's two interfaces.
 *
 * The new mount API (open_tree, mount_setattr, move_mount; Linux 5.12) clones
 * the very object an fd holds and sets its flags on the whole tree in one
 * step. Where it is missing (mount_setattr came last, in 5.12), the classic
 * calls do the same in more steps: mount(MS_BIND) from /proc/self/fd/N onto
 * /proc/self/fd/M, then the new mount is found again by its path, proven to
 * be a fresh mount of the same object, and remounted (MS_REMOUNT|MS_BIND)
 * through its own fd with the flags asked for added to those it already
 * carries (a user namespace may not clear flags locked by its creator);
 * each submount of a recursive bind the same way, identified by mount id.
 *
 * Which interface a process uses is decided once, by sbx_mnt_probe(): the
 * same answer for every mount of one run, and what `sbx-check host` tests. */
#ifndef SBX_MOUNT_H
#define SBX_MOUNT_H

enum sbx_mnt_api { SBX_MNT_NEW = 1, SBX_MNT_CLASSIC };

/* Flags a bind may add (the values of MOUNT_ATTR_*). */
#define SBX_MNT_RDONLY 0x1U
#define SBX_MNT_NOSUID 0x2U
#define SBX_MNT_NODEV  0x4U

/* SBX_MNT_NEW if open_tree, move_mount and mount_setattr all exist (asked
 * with arguments that can never mount anything), else SBX_MNT_CLASSIC. */
enum sbx_mnt_api sbx_mnt_probe(void);
/* "new" or "classic": the word in sbx-ns's status and sbx-check's report. */
const char *sbx_mnt_api_name(enum sbx_mnt_api api);

/* Outcome of the calls below: 0 done; SBX_MNT_ERR a call failed (errno set,
 * *step names it: "clone mount of", "bind", ...); SBX_MNT_RACE the mount
 * found after binding is not a fresh mount of the object at srcfd. */
#define SBX_MNT_ERR  (-1)
#define SBX_MNT_RACE (-2)

/* Bind the object open at srcfd (O_PATH) onto the mount point open at
 * target (O_PATH), the whole tree below it if recursive, adding attr. The
 * mount point's path relative to dfd (no symlinks, beneath dfd) is how the
 * classic calls find the new mount again; srcfd and target may be one fd
 * (an object bound onto itself). */
int sbx_mnt_bind(enum sbx_mnt_api api, int srcfd, int target, int dfd, const char *path,
		 unsigned attr, int recursive, const char **step);

/* Add attr to the mount whose root is dfd/path (that mount only). */
int sbx_mnt_set(enum sbx_mnt_api api, int dfd, const char *path, unsigned attr,
		const char **step);

#endif

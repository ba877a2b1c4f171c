/* Files root writes in a directory of its own, safe from other users'
 * plants: the directory is opened once without following a link and judged
 * (pm_privdir_judge); every file is created new (O_EXCL, O_NOFOLLOW,
 * O_NONBLOCK: no link, no FIFO is ever opened), chmod'ed through its
 * descriptor and renamed within that directory. Files a user's process
 * writes for the user where others may plant (pm_userfile_create). */
#ifndef PM_SAFEFILE_H
#define PM_SAFEFILE_H

#include <stddef.h>
#include <sys/types.h>

/* The directory at path, created with mode if missing (below the
 * directories above it, once judged), opened (O_DIRECTORY) and judged to be
 * owner's alone (pm_privdir_judge), every directory above it judged from
 * "/" down (pm_privdir_judge_above: root's, a link on the way root's): its
 * descriptor, or -1 with err. The plugin's rule for state_dir and
 * metrics_dir. */
int pm_privdir_open(const char *path, mode_t mode, uid_t owner, char *err, size_t errlen);

/* The same rule, nothing created: 0 (with fd non-NULL, *fd the directory,
 * O_RDONLY); 1 when only the last directory is missing, which
 * pm_privdir_open would make (err says it is missing); -1 with err. With fd
 * NULL, no read permission is needed (check-config as any user). */
int pm_privdir_find(const char *path, uid_t owner, int *fd, char *err, size_t errlen);

/* name in dfd := len bytes of buf, with mode, replaced at once (a reader
 * sees the old file or the new one). A temporary file beside it, unique to
 * this process, is created new: a link, FIFO or file planted under that
 * name is refused, never opened, chmod'ed or removed. 0, or -1 with err. */
int pm_safefile_write(int dfd, const char *name, const void *buf, size_t len, mode_t mode,
		      char *err, size_t errlen);

/* For a user's process writing beside a user's file, where other users may
 * have planted links, FIFOs or their own files under the names it writes
 * (a sweep's journal and results beside its trials file). Nothing planted
 * is ever opened for writing, written, truncated or removed: a name taken
 * by anything but a regular file of this user's is refused with err saying
 * what it is (common/privdir.h's pm_userfile_judge).
 *
 * path created new (O_EXCL, O_NOFOLLOW, O_NONBLOCK), O_WRONLY | flags; a
 * regular file of this user's under that name (an earlier run's) is
 * replaced by the new one, never written through. fd, or -1 with err. */
int pm_userfile_create(const char *path, int flags, mode_t mode, char *err, size_t errlen);
/* path opened to append to, if it is a regular file of this user's (the
 * same run's, left by a lost process); created as above if missing. */
int pm_userfile_append(const char *path, mode_t mode, char *err, size_t errlen);
/* path opened to read, if it is a regular file of this user's; -1 with err
 * (errno ENOENT: none). */
int pm_userfile_read(const char *path, char *err, size_t errlen);
/* A temporary file beside path, made new under a name no one can plant
 * ahead (path.PID.RANDOM.tmp, into tmp): fd, or -1 with err. */
int pm_userfile_temp(const char *path, char *tmp, size_t tmplen, mode_t mode, char *err,
		     size_t errlen);

#endif

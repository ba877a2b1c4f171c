/* Files root writes in a directory of its own, safe from other users'
 * plants: the directory is opened once without following a link and judged
 * (pm_privdir_judge); every file is created new (O_EXCL, O_NOFOLLOW,
 * O_NONBLOCK: no link, no FIFO is ever opened), chmod'ed through its
 * descriptor and renamed within that directory. */
#ifndef PM_SAFEFILE_H
#define PM_SAFEFILE_H

#include <stddef.h>
#include <sys/types.h>

/* The directory at path, created with mode if missing, opened (O_NOFOLLOW,
 * O_DIRECTORY) and judged to be owner's alone: its descriptor, or -1 with
 * err. */
int pm_privdir_open(const char *path, mode_t mode, uid_t owner, char *err, size_t errlen);

/* name in dfd := len bytes of buf, with mode, replaced at once (a reader
 * sees the old file or the new one). A temporary file beside it, unique to
 * this process, is created new: a link, FIFO or file planted under that
 * name is refused, never opened, chmod'ed or removed. 0, or -1 with err. */
int pm_safefile_write(int dfd, const char *name, const void *buf, size_t len, mode_t mode,
		      char *err, size_t errlen);

#endif

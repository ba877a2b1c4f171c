/* Whether a directory root writes in is root's alone: a directory another
 * user may write (or own) lets them plant links and FIFOs where root
 * creates, chmods and renames files; a directory above it that another
 * user may change (or their link on the way) lets them swap in one of
 * their choice. Pure: judges what fstat said. The one rule for state_dir
 * and metrics_dir: the plugin (io/safefile.h's pm_privdir_open) and
 * check-config (pm_privdir_find) both walk a path with these. */
#ifndef PM_PRIVDIR_H
#define PM_PRIVDIR_H

#include <stddef.h>
#include <sys/stat.h>

/* The directory itself: 0 if st is a directory owned by owner that neither
 * group nor others may write; else -1 with err saying what is wrong with
 * path and what is allowed. */
int pm_privdir_judge(const struct stat *st, uid_t owner, const char *path, char *err,
		     size_t errlen);

/* A component above path, named shown (lstat'ed: a link is not followed
 * to judge it): 0 if it is a directory of root's (or owner's) that no one
 * else may write, or only add names to (sticky, like /tmp: the names root
 * made there stay root's); 1 if it is a link of root's, whose target is to
 * be walked the same way; else -1 with err. */
int pm_privdir_judge_above(const struct stat *st, uid_t owner, const char *path,
			   const char *shown, char *err, size_t errlen);

/* A file a user's process finds under a name it writes (a sweep's journal
 * beside its trials file, perhaps in a directory others may write;
 * lstat'ed): 0 if it is a regular file of uid me (an earlier run's: it may
 * be replaced or appended to); else -1 with err saying what it is, that it
 * is not written through, and what to do. */
int pm_userfile_judge(const struct stat *st, uid_t me, const char *path, char *err,
		      size_t errlen);

#endif

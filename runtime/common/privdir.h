/* Whether a directory root writes in is root's alone: a directory another
 * user may write (or own) lets them plant links and FIFOs where root
 * creates, chmods and renames files. Pure: judges what fstat said. */
#ifndef PM_PRIVDIR_H
#define PM_PRIVDIR_H

#include <stddef.h>
#include <sys/stat.h>

/* 0 if st is a directory owned by owner that neither group nor others may
 * write; else -1 with err saying what is wrong with path and what is
 * allowed. */
int pm_privdir_judge(const struct stat *st, uid_t owner, const char *path, char *err,
		     size_t errlen);

#endif

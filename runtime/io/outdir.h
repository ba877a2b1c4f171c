/* --procmgr-output-dir on a node, as the job user: the directory (created
 * if missing) and each rank's files in it. Another user must not be able to
 * plant a link or a FIFO where a rank's output goes, nor replace the files:
 * the directory must be the job user's own, and a file is opened without
 * following a link and without blocking, and kept only if it is a regular
 * file of ours. */
#ifndef PM_OUTDIR_H
#define PM_OUTDIR_H

#include <stddef.h>

/* The directory at path (absolute), created with its missing parents
 * (mode 0755 less the umask), opened and judged: a directory of the
 * calling user's, which it may write. Its descriptor, or -1 with err. */
int pm_outdir_open(const char *path, char *err, size_t errlen);

/* name in the directory dfd, opened to append (created 0644 less the
 * umask): a descriptor that blocks as a file does, or -1 with err. */
int pm_outdir_file(int dfd, const char *name, char *err, size_t errlen);

/* The name of rank's file for stream ("out", "err"): "rank.RANK.out". */
int pm_outdir_name(char *buf, size_t len, int rank, const char *stream);

#endif

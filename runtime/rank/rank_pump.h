/* The command's stderr passes through procmgr-rank, so that its last lines
 * can say why it failed. We never block on our own stderr (a stuck srun
 * would make procmgrd judge us silent): what Slurm cannot take yet waits
 * in a buffer, and meanwhile the pipe is not read, so the command blocks
 * as it did writing to Slurm itself.
 *
 * With --procmgr-output-dir the same pump carries stdout too, and every
 * byte read also goes to the rank's file, written as it comes. srun may be
 * gone with its node (docs/user-guide.md, "Losing the batch host"): then
 * the file is the copy that counts, the pipe is read whatever Slurm takes,
 * and what Slurm has not taken waits up to PM_PUMP_BACKLOG, beyond which
 * it is dropped for Slurm (a line says how much) but never for the file. */
#ifndef PM_RANK_PUMP_H
#define PM_RANK_PUMP_H

#include <stdbool.h>
#include <stddef.h>

#include "common/errinfo.h"
#include "io/loop.h"

struct pm_rank_pump {
	struct pm_loop *loop;
	int err_fd;    /* our end of the pipe; -1: the command has our stderr */
	int child_fd;  /* the command's end: its stderr; -1 if none */
	int out_fd;    /* our stderr */
	struct pm_tail tail;
	char *ob;      /* the command's stderr that ours has not taken */
	size_t olen, ooff, ocap;
	bool out_armed; /* waiting for our stderr; the pipe not read */
	bool out_file;  /* our stderr cannot be waited for (a file) */
	int file_fd;    /* the rank's output file, -1: none */
	size_t dropped; /* bytes the file has and Slurm was not given */
	int file_errno; /* the file's first write error, said once */
	struct pm_watch err_w, out_w;
};

/* On a terminal (srun --pty) the command keeps it: it may ask isatty, and
 * there is no pump (and no file). -1: errno. */
int pm_rank_pump_init(struct pm_rank_pump *p, struct pm_loop *l, int out_fd);
/* Reads what the pipe holds (all of it: final, once the command ended). */
void pm_rank_pump_drain(struct pm_rank_pump *p, bool final);
/* As much as our stderr takes now; block: all of it (at exit). */
void pm_rank_pump_flush(struct pm_rank_pump *p, bool block);
void pm_rank_pump_free(struct pm_rank_pump *p);
/* From now on a copy of all it reads goes to fd (-1: none); the last file
 * is closed. */
void pm_rank_pump_set_file(struct pm_rank_pump *p, int fd);

#define PM_PUMP_BACKLOG (4u << 20)

#endif

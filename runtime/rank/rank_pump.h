/* The command's stderr passes through procmgr-rank, so that its last lines
 * can say why it failed. We never block on our own stderr (a stuck srun
 * would make procmgrd judge us silent): what Slurm cannot take yet waits
 * in a buffer, and meanwhile the pipe is not read, so the command blocks
 * as it did writing to Slurm itself. */
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
	struct pm_watch err_w, out_w;
};

/* On a terminal (srun --pty) the command keeps it: it may ask isatty, and
 * there is no pump. -1: errno. */
int pm_rank_pump_init(struct pm_rank_pump *p, struct pm_loop *l, int out_fd);
/* Reads what the pipe holds (all of it: final, once the command ended). */
void pm_rank_pump_drain(struct pm_rank_pump *p, bool final);
/* As much as our stderr takes now; block: all of it (at exit). */
void pm_rank_pump_flush(struct pm_rank_pump *p, bool block);
void pm_rank_pump_free(struct pm_rank_pump *p);

#endif

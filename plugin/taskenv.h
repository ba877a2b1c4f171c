/* The environment of each task of a supervised step: torchrun's variables,
 * what procmgr-rank needs, and the rank's binding. */
#ifndef PM_TASKENV_H
#define PM_TASKENV_H

#include <stddef.h>
#include <stdint.h>
#include <slurm/spank.h>

struct pm_node;

/* Once per node, in user_init before the tasks fork: they inherit the
 * plan (n->plan, n->step_gpus). 0, or -1 with err. */
int pm_taskenv_plan(spank_t sp, struct pm_node *n, char *err, size_t errlen);
/* In task_init: the environment of global rank rank, local rank lrank,
 * whose command is argv0. 0, or -1 with err naming the rank. */
int pm_taskenv_set(spank_t sp, const struct pm_node *n, uint32_t rank, int lrank,
		   const char *argv0, char *err, size_t errlen);

#endif

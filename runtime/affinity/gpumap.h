/* GPU numbering between the node and a task. With ConstrainDevices=yes
 * Slurm hides the other GPUs and the task sees its own renumbered from 0,
 * in the order of SLURM_STEP_GPUS (node indices). Pure. */
#ifndef PM_GPUMAP_H
#define PM_GPUMAP_H

#include <stdbool.h>
#include <stddef.h>

/* Whether Slurm renumbered: CUDA_VISIBLE_DEVICES is 0..n-1 while
 * SLURM_STEP_GPUS names n other node indices. */
bool pm_gpus_renumbered(const char *step_gpus, const char *visible);
/* Node indices ("4,6") to the task's numbering ("0,2" for step GPUs
 * "4,5,6,7"). -1 if one is not a GPU of the step or out does not fit. */
int pm_gpus_to_task(const char *step_gpus, const char *node_list, char *out,
		    size_t len);

#endif

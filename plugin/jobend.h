/* The job's end on a node (job epilog, as root): state_dir/JOB goes, at
 * once or job_dir_keep later. Never fails (a failing epilog drains). */
#ifndef PM_JOBEND_H
#define PM_JOBEND_H

#include <slurm/spank.h>

int pm_jobend_epilog(spank_t sp, int ac, char **av, const char *plugstack);

#endif

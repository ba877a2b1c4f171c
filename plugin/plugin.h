/* procmgr.so: state shared by the per-context files. */
#ifndef PM_PLUGIN_H
#define PM_PLUGIN_H

#include <stdbool.h>
#include <sys/types.h>
#include <slurm/spank.h>

#include "common/options.h"

#define PM_NAME "procmgr"
/* Options travel from sbatch's batch step to its srun steps, and from srun
 * to slurmstepd, in these variables (see SLURM-NOTES.md). */
#define PM_ENV_JOB_OPTS "PROCMGR_JOB_OPTIONS"
#define PM_ENV_STEP_OPTS "PROCMGR_STEP_OPTIONS"

struct pm_plugin {
	struct pm_site site;
	struct pm_opts flags;    /* this command's own --procmgr-* flags */
	struct pm_opts resolved; /* what applies to this step */
	char plugstack[PATH_MAX];
	/* A problem found where it cannot be reported yet (remote side): told
	 * to the user from task_init, where srun shows it and fails. */
	char error[PM_ERRLEN];
	struct pm_node *node;   /* remote: this node's part of the step */
};

extern struct pm_plugin pm_g;

/* Messages to the user, always prefixed with the plugin's name. */
#define pm_err(...) slurm_error(PM_NAME ": " __VA_ARGS__)
#define pm_info(...) slurm_info(PM_NAME ": " __VA_ARGS__)

int pm_local_init(spank_t sp);
int pm_local_post_opt(spank_t sp);
int pm_remote_post_opt(spank_t sp);
int pm_remote_user_init(spank_t sp);
int pm_remote_task_init(spank_t sp);
int pm_remote_task_exit(spank_t sp);
int pm_remote_exit(spank_t sp);

#endif

/* slurmstepd: one per node per step. Starts this node's procmgrd, turns each
 * task into a supervised rank, and stops everything at step end. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>

#include "plugin.h"

static bool active; /* procmgr supervises this step on this node */

int pm_remote_post_opt(spank_t sp)
{
	char buf[4096], err[PM_ERRLEN];
	uint32_t stepid = 0;
	struct pm_opts step;

	if (spank_get_item(sp, S_JOB_STEPID, &stepid) != ESPANK_SUCCESS)
		return 0;
	if (stepid == SLURM_BATCH_SCRIPT) {
		/* #SBATCH --procmgr-* lines: handed to the script's srun steps. */
		if (pm_g.flags.set && pm_opts_format(&pm_g.flags, buf, sizeof(buf)) == 0 &&
		    spank_setenv(sp, PM_ENV_JOB_OPTS, buf, 1) != ESPANK_SUCCESS)
			pm_err("cannot export %s to the batch script", PM_ENV_JOB_OPTS);
		return 0;
	}
	if (stepid == SLURM_EXTERN_CONT || stepid == SLURM_INTERACTIVE_STEP)
		return 0;
	if (spank_getenv(sp, PM_ENV_STEP_OPTS, buf, sizeof(buf)) != ESPANK_SUCCESS)
		return 0;

	/* The environment is the user's: check it again, site cap included. */
	pm_opts_init(&step);
	if (pm_opts_parse_str(&step, buf, PM_ENV_STEP_OPTS, err, sizeof(err)) ||
	    pm_opts_resolve(&pm_g.resolved, &pm_g.site, NULL, &step, err, sizeof(err))) {
		if (!pm_g.error[0])
			snprintf(pm_g.error, sizeof(pm_g.error), "%s", err);
		pm_err("%s", err);
	}
	active = pm_g.resolved.enabled || pm_g.error[0];
	return 0;
}

int pm_remote_user_init(spank_t sp)
{
	(void)sp;
	return 0;
}

int pm_remote_task_init(spank_t sp)
{
	uint32_t rank = 0;
	char buf[4096];

	if (!active)
		return 0;
	if (pm_g.error[0]) {
		pm_err("%s", pm_g.error);
		return -1;
	}
	spank_get_item(sp, S_TASK_GLOBAL_ID, &rank);
	if (pm_g.resolved.verbose && rank == 0 &&
	    pm_opts_format(&pm_g.resolved, buf, sizeof(buf)) == 0)
		fprintf(stderr, PM_NAME ": rank 0 runs with: %s\n", buf);
	return 0;
}

int pm_remote_task_exit(spank_t sp)
{
	(void)sp;
	return 0;
}

int pm_remote_exit(spank_t sp)
{
	(void)sp;
	return 0;
}
